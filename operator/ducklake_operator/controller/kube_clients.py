"""The operator's Kubernetes API clients, made once (the kubernetes client is imported on
first use, so importing a handler module stays light)."""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from .credentials import kubernetes_core_api


@lru_cache(maxsize=1)
def core_api() -> Any:
    return kubernetes_core_api()


@lru_cache(maxsize=1)
def custom_objects_api() -> Any:
    from kubernetes import client

    core_api()  # loads the configuration
    return client.CustomObjectsApi()


@lru_cache(maxsize=1)
def apiextensions_api() -> Any:
    from kubernetes import client

    core_api()  # loads the configuration
    return client.ApiextensionsV1Api()
