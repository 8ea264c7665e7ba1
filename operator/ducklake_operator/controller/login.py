"""The operator's session with the API server: kopf's own login (the kubernetes client's
configuration: in-cluster, or the kubeconfig), with a bounded connection pool.

kopf's built-in session opens as many connections as requests are in flight (aiohttp's
``limit=0``), each a TLS connection with a read buffer of its own, kept for reuse: 80 runs
of a policy left ~180 of them (24 MB of buffers, by tracemalloc) long after they ended.
Here they are at most ``API_CONNECTIONS``; requests beyond wait for a free one (the API
server serves two cores' worth at a time anyway). The watch streams hold one each for as long
as they run, so the bound leaves room for them: five kinds, the peering, the Secrets.
"""

from __future__ import annotations

from typing import Any

import aiohttp
import kopf

API_CONNECTIONS = 48


@kopf.on.login()
async def login(**kwargs: Any) -> kopf.AiohttpSession | None:
    info = kopf.login_via_client(**kwargs)
    if info is None:
        return None
    session = aiohttp.ClientSession(
        connector=aiohttp.TCPConnector(limit=API_CONNECTIONS, ssl=info.as_ssl_context()),
        headers=info.as_http_headers(),
        proxy=info.proxy_url,
        trust_env=info.trust_env,
    )
    return kopf.AiohttpSession(
        server=info.server,
        priority=info.priority,
        default_namespace=info.default_namespace,
        expiration=info.expiration,
        aiohttp_session=session,
    )
