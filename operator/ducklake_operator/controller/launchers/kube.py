"""The ``Job`` and ``SparkApplication`` launchers: the run's ConfigMap and the object that
runs it, created with the kubernetes client in the DuckLakeJob's namespace.

Creating is idempotent: an object of that name owned by the same DuckLakeJob is the same
attempt (a launch repeated after a crash), found again rather than created twice. Objects
are created with strict field validation, so a field the API server does not know is an
error, not silently dropped. A refusal that retrying cannot cure (RBAC, validation, the
resource not served) is ``LaunchFailed``; anything else (the API server unreachable) is
raised as it is, for the caller to try again.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from functools import lru_cache
from typing import Any

from kubernetes import client
from kubernetes.client.exceptions import ApiException

from ...api.v1alpha1.job import SUCCEEDED
from ...errors import LauncherNotInstalled, LaunchFailed
from .api_errors import server_message
from .observe import observe_job, observe_spark_application, with_pods
from .pods import pod_stopped, read_pods
from .pods import unschedulable_grace as grace_from_env
from .render import render_config_map, render_job, render_spark_application
from .spec import JOB, SPARK_APPLICATION, Launched, LaunchSpec, Observed, attempt_selector

ApiClientFactory = Callable[[], Any]  # -> kubernetes.client.ApiClient
DISCOVERY_CACHE_SECONDS = 30.0  # how long "installed" is believed


@lru_cache(maxsize=1)
def default_api_client() -> Any:
    from ..credentials import kubernetes_core_api  # in-cluster config in a pod, else the kubeconfig

    return kubernetes_core_api().api_client


class KubeLauncher:
    """A launcher whose attempt is one object of ``group/version`` ``plural``, plus its
    ConfigMap; subclasses say which object and how its status reads."""

    kind: str
    group: str
    version: str
    plural: str
    not_installed: str  # the sentence when the cluster does not serve ``plural``

    def __init__(
        self,
        api_client: ApiClientFactory | None = None,
        *,
        cache_seconds: float = DISCOVERY_CACHE_SECONDS,
        clock: Callable[[], float] = time.monotonic,
        wall_clock: Callable[[], float] = time.time,
        unschedulable_grace: float | None = None,
    ) -> None:
        """``unschedulable_grace``: seconds a pod may fit no node before the attempt fails
        (default: ``pods.unschedulable_grace()``, from the operator's environment)."""
        self._api_client = api_client or default_api_client
        self._cache_seconds = cache_seconds
        self._clock, self._wall_clock = clock, wall_clock
        self._grace = grace_from_env() if unschedulable_grace is None else unschedulable_grace
        self._served_at: float | None = None  # when discovery last found ``plural`` served
        self._lock = threading.Lock()

    def render(self, spec: LaunchSpec) -> dict[str, Any]:
        raise NotImplementedError

    def read_status(self, obj: dict[str, Any]) -> Observed:
        raise NotImplementedError

    # ------------------------------------------------------------------ Launcher

    def available(self) -> str | None:
        """None when the cluster serves ``plural`` (API discovery). That it does is believed
        for a while; that it does not is asked afresh each time: a run fails for good on it,
        and a Spark Operator installed a moment ago must not fail the next run."""
        now = self._clock()
        with self._lock:
            if self._served_at is not None and now - self._served_at < self._cache_seconds:
                return None
        try:
            listed = self._custom().get_api_resources(self.group, self.version)
            served = any(r.name == self.plural for r in listed.resources or [])
        except ApiException as exc:
            if exc.status != 404:  # 404: the group/version is not served at all
                raise
            served = False
        with self._lock:
            self._served_at = now if served else None
        return None if served else self.not_installed

    def close(self) -> None:
        """Nothing to stop: what it launched are objects on the API server."""

    def launch(self, spec: LaunchSpec) -> Launched:
        config_map, obj = render_config_map(spec), self.render(spec)  # a bad setting: nothing created
        problem = self.available()
        if problem is not None:
            raise LauncherNotInstalled(problem)
        core, custom, ns = self._core(), self._custom(), spec.namespace
        self._create(
            spec,
            "ConfigMap",
            lambda: core.create_namespaced_config_map(ns, config_map, field_validation="Strict"),
            lambda: self._read_config_map(spec),
        )
        try:
            self._create(
                spec,
                self.kind,
                lambda: custom.create_namespaced_custom_object(
                    self.group, self.version, ns, self.plural, obj, field_validation="Strict"
                ),
                lambda: self._read_object(spec),
            )
        except LaunchFailed:
            _deleted(lambda: core.delete_namespaced_config_map(spec.name, ns))  # nothing half-launched stays
            raise
        return self._launched(spec)

    def leftover(self, spec: LaunchSpec) -> Launched | None:
        """The attempt's ConfigMap or object, when either is there and this run's."""
        for read in (self._read_config_map, self._read_object):
            try:
                found = read(spec)
            except ApiException as exc:
                if exc.status == 404:
                    continue
                raise
            if _owned(found, spec):
                return self._launched(spec)
        return None

    def _read_config_map(self, spec: LaunchSpec) -> dict[str, Any]:
        core = self._core()
        return dict(
            core.api_client.sanitize_for_serialization(core.read_namespaced_config_map(spec.name, spec.namespace))
        )

    def _read_object(self, spec: LaunchSpec) -> dict[str, Any]:
        return dict(
            self._custom().get_namespaced_custom_object(
                self.group, self.version, spec.namespace, self.plural, spec.name
            )
        )

    def _launched(self, spec: LaunchSpec) -> Launched:
        return Launched(self.kind, spec.name, {"namespace": spec.namespace, "pods": attempt_selector(spec)})

    def observe(self, launched: Launched) -> Observed:
        """The object's status, and what its pods say (``observe.with_pods``): a pod that
        cannot run fails the attempt at once, not at its deadline."""
        try:
            obj = self._custom().get_namespaced_custom_object(
                self.group, self.version, launched.detail["namespace"], self.plural, launched.name
            )
        except ApiException as exc:
            if exc.status == 404:
                return Observed("Gone", f"{self.kind} {launched.name} no longer exists")
            raise
        observed = self.read_status(obj)
        if observed.state == SUCCEEDED:
            return observed
        return with_pods(observed, read_pods(self.pods(launched), self._wall_clock(), self._grace))

    def cancel(self, launched: Launched) -> None:
        """Delete the object (its pods go in the background) and its ConfigMap."""
        ns, name = launched.detail["namespace"], launched.name
        custom, core = self._custom(), self._core()
        _deleted(
            lambda: custom.delete_namespaced_custom_object(
                self.group, self.version, ns, self.plural, name, propagation_policy="Background"
            )
        )
        _deleted(lambda: core.delete_namespaced_config_map(name, ns))

    def stopped(self, launched: Launched) -> bool:
        """No pod of the attempt runs: each has ended (Succeeded, Failed), was never scheduled
        to a node (so never ran), or is gone. A pod being deleted runs until its grace
        period ends."""
        return all(pod_stopped(p) for p in self.pods(launched))

    def release(self, launched: Launched) -> None:
        """Nothing to give back: its pods take the cluster's room, not the operator's."""

    def pods(self, launched: Launched) -> list[dict[str, Any]]:
        """The attempt's pods (driver and executors, by its labels) as the API server writes
        them: JSON, not the client's objects, so ``pods.read_pods`` reads Kubernetes' own
        field names."""
        selector = launched.detail.get("pods")
        if not selector:
            return []
        response = self._core().list_namespaced_pod(
            launched.detail["namespace"], label_selector=selector, _preload_content=False
        )
        return list(json.loads(response.data).get("items") or [])

    # ------------------------------------------------------------------ pieces

    def _custom(self) -> Any:
        return client.CustomObjectsApi(self._api_client())

    def _core(self) -> Any:
        return client.CoreV1Api(self._api_client())

    def _create(self, spec: LaunchSpec, kind: str, create: Callable[[], Any], read: Callable[[], Any]) -> None:
        what = f"{kind} {spec.namespace}/{spec.name}"
        try:
            create()
            return
        except ApiException as exc:
            if exc.status != 409:
                raise self._refused(exc, what) from None
        if not _owned(read(), spec):  # AlreadyExists: ours, from an earlier launch of this attempt?
            raise LaunchFailed(f"{what} already exists and does not belong to DuckLakeJob {spec.owner.name}")

    def _refused(self, exc: ApiException, what: str) -> Exception:
        message = _api_message(exc)
        if exc.status == 404 and what.startswith(self.kind):
            with self._lock:
                self._served_at = None  # the resource may have gone since it was checked
            problem = self.available()
            if problem is not None:
                return LauncherNotInstalled(problem)
        if exc.status == 403:
            return LaunchFailed(f"the operator may not create {what}: {message}")
        if exc.status in (400, 404, 422):
            return LaunchFailed(f"the API server refused {what}: {message}")
        return exc  # not the request's fault (the server unreachable or overloaded): try again


class JobLauncher(KubeLauncher):
    kind, group, version, plural = JOB, "batch", "v1", "jobs"
    not_installed = "the cluster does not serve batch/v1 Jobs"

    def render(self, spec: LaunchSpec) -> dict[str, Any]:
        return render_job(spec)

    def read_status(self, obj: dict[str, Any]) -> Observed:
        return observe_job(obj)


class SparkApplicationLauncher(KubeLauncher):
    kind, group, version, plural = SPARK_APPLICATION, "sparkoperator.k8s.io", "v1beta2", "sparkapplications"

    def __init__(
        self, api_client: ApiClientFactory | None = None, *, group: str | None = None, plural: str | None = None,
        **kwargs: Any,
    ) -> None:  # fmt: skip
        """``group``, ``plural``: another name to look for (a test's, for a resource not served)."""
        super().__init__(api_client, **kwargs)
        self.group, self.plural = group or type(self).group, plural or type(self).plural
        self.not_installed = f"the Kubeflow Spark Operator is not installed (no {self.plural}.{self.group})"

    def render(self, spec: LaunchSpec) -> dict[str, Any]:
        return render_spark_application(spec)

    def read_status(self, obj: dict[str, Any]) -> Observed:
        return observe_spark_application(obj)


def _owned(obj: dict[str, Any], spec: LaunchSpec) -> bool:
    """Whether the run of ``spec`` owns ``obj`` (one of its ownerReferences)."""
    return spec.owner.uid in {o.get("uid") for o in obj.get("metadata", {}).get("ownerReferences") or []}


def _deleted(delete: Callable[[], Any]) -> None:
    """Delete; gone already is fine."""
    try:
        delete()
    except ApiException as exc:
        if exc.status != 404:
            raise


def _api_message(exc: ApiException) -> str:
    return server_message(exc) or str(exc.reason)
