"""The one line worth reading in what a JVM prints when it fails: spark-submit's output (a
SparkApplication's ``errorMessage`` holds all of it, stack traces included, ~10 KB), a
Py4J error whose cause is a Java exception. Pure."""

from __future__ import annotations

import re

MAX_LENGTH = 600
# fabric8's KubernetesClientException: "Failure executing: PATCH at: <url>. Message: <the API
# server's words>. Received status: Status(...)"
_API_MESSAGE = re.compile(r"Message: (.+?)\. Received status", re.DOTALL)
# "Caused by: java.net.UnknownHostException: kubernetes.default.svc"; an exception line of its own
_CAUSED_BY = re.compile(r"^Caused by: (?:[\w$]+\.)*([\w$]+): (.+)$")
# also Py4J's form, ": org.apache.spark.SparkException: Job aborted ..."
_EXCEPTION = re.compile(r'^\s*(?::\s*|Exception in thread "[^"]*" )?(?:[\w$]+\.)+([\w$]*(?:Exception|Error)): (.+)$')


def innermost_jvm_error(text: str) -> str | None:
    """What the API server said (a refused request), else the innermost ``Caused by``, else the
    last exception line, as ``SimpleName: message``; None when the text holds none of them."""
    api = _API_MESSAGE.findall(text)
    if api:
        return _cut(f"the API server refused: {' '.join(api[-1].split())}")
    lines = text.splitlines()
    for pattern in (_CAUSED_BY, _EXCEPTION):
        found = [m for m in map(pattern.match, lines) if m]
        if found:
            return _cut(f"{found[-1].group(1)}: {found[-1].group(2).strip()}")
    return None


def _cut(text: str) -> str:
    return text if len(text) <= MAX_LENGTH else text[: MAX_LENGTH - 1] + "…"
