"""The run locks (``controller.locks.Leases``) against the real API server, as the chart's
service account: a Lease is taken once, a second holder is told who holds it, the holder
taking it again (after an operator restart) changes nothing, a Lease whose holder no longer
runs is taken over (and of two takers one wins), only the holder releases it, and a
catalog's slots fill up and free. ``alive`` is the controller's question "does this
DuckLakeJob still run?", answered here by the test."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from kubernetes import client, config
from kubernetes.client.exceptions import ApiException

from ducklake_operator.api.v1alpha1.names import JOB_ANNOTATION
from ducklake_operator.api.v1alpha1.names import LOCK_ANNOTATION as WHAT_ANNOTATION
from ducklake_operator.controller.runs.locks import Holder, Leases, lease_name, slot_names
from support.operator_process import service_account_kubeconfig

A, B, C = Holder("uid-a", "compact-a"), Holder("uid-b", "rewrite-b"), Holder("uid-c", "compact-c")


@pytest.fixture(scope="module")
def api(cluster, chart, tmp_path_factory) -> Callable[[], Any]:
    path = service_account_kubeconfig(cluster, str(tmp_path_factory.mktemp("leases") / "kubeconfig"))
    api_client = config.new_client_from_config(config_file=path)
    return lambda: client.CoordinationV1Api(api_client)


def leases(api: Callable[[], Any], running: set[str]) -> Leases:
    """Leases whose holders run while their uid is in ``running``."""
    return Leases(api, lambda _namespace, _name, uid: uid in running)


def test_a_lease_is_taken_once_and_a_second_holder_is_told_who_holds_it(kube, api) -> None:
    name = lease_name("table", kube.namespace, "lake", "main.orders")
    locks = leases(api, {A.uid, B.uid})
    assert locks.acquire(kube.namespace, name, A, "table main.orders") is None
    lease = api().read_namespaced_lease(name, kube.namespace)
    assert lease.spec.holder_identity == A.uid and lease.spec.acquire_time is not None
    assert lease.metadata.annotations == {JOB_ANNOTATION: A.name, WHAT_ANNOTATION: "table main.orders"}
    assert locks.acquire(kube.namespace, name, B, "table main.orders") == A
    assert (
        api().read_namespaced_lease(name, kube.namespace).metadata.resource_version == lease.metadata.resource_version
    )


def test_the_holder_taking_its_lease_again_changes_nothing(kube, api) -> None:
    """A restarted operator, or a second tick, takes the run's Leases again: they are its already."""
    name = lease_name("table", kube.namespace, "lake", "main.orders")
    locks = leases(api, {A.uid})
    assert locks.acquire(kube.namespace, name, A, "table main.orders") is None
    version = api().read_namespaced_lease(name, kube.namespace).metadata.resource_version
    assert leases(api, {A.uid}).acquire(kube.namespace, name, A, "table main.orders") is None
    assert api().read_namespaced_lease(name, kube.namespace).metadata.resource_version == version


def test_a_lease_whose_holder_ended_is_taken_over(kube, api) -> None:
    name = lease_name("table", kube.namespace, "lake", "main.orders")
    asked: list[tuple[str, str, str]] = []
    assert leases(api, set()).acquire(kube.namespace, name, A, "table main.orders") is None

    def ended(namespace: str, job: str, uid: str) -> bool:  # A's run has ended (or is gone)
        asked.append((namespace, job, uid))
        return False

    locks = Leases(api, ended)
    assert locks.acquire(kube.namespace, name, B, "table main.orders") is None
    assert asked == [(kube.namespace, A.name, A.uid)]
    lease = api().read_namespaced_lease(name, kube.namespace)
    assert lease.spec.holder_identity == B.uid and lease.metadata.annotations[JOB_ANNOTATION] == B.name


def test_of_two_runs_taking_over_a_lease_at_once_one_gets_it(kube, api) -> None:
    """Both read the dead holder's Lease; C writes first; B's write, guarded by the
    resourceVersion it read, is refused, and B is told another run holds it."""
    name = lease_name("table", kube.namespace, "lake", "main.orders")
    assert leases(api, set()).acquire(kube.namespace, name, A, "table main.orders") is None

    def dead_while_c_takes_over(namespace: str, _name: str, uid: str) -> bool:
        assert leases(api, set()).acquire(namespace, name, C, "table main.orders") is None
        return False

    assert Leases(api, dead_while_c_takes_over).acquire(kube.namespace, name, B, "table main.orders") == Holder(
        "", "another run"
    )
    assert api().read_namespaced_lease(name, kube.namespace).spec.holder_identity == C.uid


def test_only_the_holder_releases_its_lease(kube, api) -> None:
    name = lease_name("table", kube.namespace, "lake", "main.orders")
    locks = leases(api, {A.uid})
    assert locks.acquire(kube.namespace, name, A, "table main.orders") is None
    locks.release(kube.namespace, name, B.uid)  # not B's: kept
    assert api().read_namespaced_lease(name, kube.namespace).spec.holder_identity == A.uid
    locks.release(kube.namespace, name, A.uid)
    with pytest.raises(ApiException) as gone:
        api().read_namespaced_lease(name, kube.namespace)
    assert gone.value.status == 404
    locks.release(kube.namespace, name, A.uid)  # gone already: nothing to do
    assert locks.acquire(kube.namespace, name, B, "table main.orders") is None


def test_a_catalogs_slots_fill_up_and_free(kube, api) -> None:
    locks = leases(api, {A.uid, B.uid, C.uid})
    slots = slot_names((kube.namespace, "lake"), 2)
    first = locks.acquire_slot(kube.namespace, slots, A, "catalog lake")
    second = locks.acquire_slot(kube.namespace, slots, B, "catalog lake", taken=[first] if first else [])
    assert first and second and first != second
    assert locks.acquire_slot(kube.namespace, slots, C, "catalog lake") is None  # both held
    assert locks.acquire_slot(kube.namespace, slots, A, "catalog lake") == first  # A's own, again
    locks.release(kube.namespace, first, A.uid)
    assert locks.acquire_slot(kube.namespace, slots, C, "catalog lake", taken=[second]) == first
