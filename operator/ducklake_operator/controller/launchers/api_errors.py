"""What the API server said when it refused a request, in one line: the kubernetes client's
``ApiException`` carries the whole response, whose JSON ``Status`` holds the server's own
message (``metadata.k8s.io/v1 Status.message``: e.g. which admission webhook failed and
why). Pure; no kubernetes import (the exception is read by its attributes)."""

from __future__ import annotations

import json


def server_message(exc: BaseException) -> str | None:
    """The ``message`` of the Status the server answered with; None when there is none."""
    body = getattr(exc, "body", None)
    if isinstance(body, bytes):
        body = body.decode("utf-8", "replace")
    if not isinstance(body, str) or not body.strip():
        return None
    try:
        message = json.loads(body).get("message")
    except (ValueError, AttributeError):
        return body.strip().splitlines()[0][:500]  # not a Status (a proxy's page): its first line
    return str(message) if message else None


def api_error(exc: BaseException) -> str | None:
    """``HTTP 500 Internal Server Error: <the server's message>`` for an API error (anything
    with an int ``status``), else None."""
    status = getattr(exc, "status", None)
    if not isinstance(status, int):
        return None
    head = f"HTTP {status} {getattr(exc, 'reason', '') or ''}".strip()
    message = server_message(exc)
    return f"{head}: {message}" if message else head
