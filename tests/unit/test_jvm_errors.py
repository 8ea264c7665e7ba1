"""The one line worth reading in a JVM's failure output (spark-submit's, as a
SparkApplication's errorMessage carries it; a Py4J error's Java cause)."""

from __future__ import annotations

from ducklake_operator.controller.launchers.observe import observe_spark_application
from ducklake_operator.model.jvm_errors import MAX_LENGTH, innermost_jvm_error

# spark-submit's output as the Spark Operator v2.5.0 put it in errorMessage (a submission a
# Role did not allow; cut short: the real one is ~10 KB of stack traces)
REFUSED = """failed to submit spark application: failed to run spark-submit: failed to run spark-submit: WARNING: Using incubator modules: jdk.incubator.vector
26/11/27 21:40:30 INFO SparkKubernetesClientFactory: Auto-configuring K8S client using current context from users K8S config file
Exception in thread "main" io.fabric8.kubernetes.client.KubernetesClientException: Failure executing: PATCH at: https://10.96.0.1:443/apis/networking.k8s.io/v1/namespaces/p1-3/networkpolicies/compact-sa-b7c44c-1-driver?fieldManager=fabric8&force=true. Message: networkpolicies.networking.k8s.io "compact-sa-b7c44c-1-driver" is forbidden: User "system:serviceaccount:spark-operator:spark-operator-controller" cannot patch resource "networkpolicies" in API group "networking.k8s.io" in the namespace "p1-3". Received status: Status(apiVersion=v1, code=403, details=StatusDetails(causes=[], group=networking.k8s.io, kind=networkpolicies), kind=Status, reason=Forbidden).
\tat io.fabric8.kubernetes.client.KubernetesClientException.copyAsCause(KubernetesClientException.java:205)
\tat java.base/java.lang.Thread.run(Thread.java:840)
"""

UNKNOWN_HOST = """An error occurred while calling None.org.apache.spark.api.java.JavaSparkContext.
: org.apache.spark.SparkException: External scheduler cannot be instantiated
\tat org.apache.spark.SparkContext$.org$apache$spark$SparkContext$$createTaskScheduler(SparkContext.scala:3257)
Caused by: io.fabric8.kubernetes.client.KubernetesClientException: Operation: [get]  for kind: [Pod]  with name: [compact-1]  in namespace: [p1]  failed.
\tat io.fabric8.kubernetes.client.KubernetesClientException.launderThrowable(KubernetesClientException.java:139)
Caused by: java.net.UnknownHostException: kubernetes.default.svc
\tat java.base/java.net.InetAddress$CachedAddresses.get(InetAddress.java:801)
"""


def test_the_api_servers_words_are_what_a_refused_submission_says() -> None:
    said = innermost_jvm_error(REFUSED)
    assert said is not None and said.startswith('the API server refused: networkpolicies.networking.k8s.io "compact')
    assert 'cannot patch resource "networkpolicies"' in said and "Received status" not in said


def test_the_innermost_cause_is_what_a_java_failure_says() -> None:
    assert innermost_jvm_error(UNKNOWN_HOST) == "UnknownHostException: kubernetes.default.svc"
    main = 'Exception in thread "main" java.lang.IllegalStateException: no'
    assert innermost_jvm_error(main) == "IllegalStateException: no"
    assert innermost_jvm_error("java.lang.IllegalStateException: bad\n\tat x") == "IllegalStateException: bad"
    assert innermost_jvm_error("nothing like an exception") is None
    py4j = (
        "An error occurred while calling o58.collectToPython.\n: org.apache.spark.SparkException: Job aborted\n\tat x"
    )
    assert innermost_jvm_error(py4j) == "SparkException: Job aborted"
    assert len(innermost_jvm_error("Caused by: java.io.IOException: " + "x" * 5000) or "") == MAX_LENGTH


def test_a_failed_spark_application_says_why_in_one_line() -> None:
    app = {"metadata": {"name": "a-1"}, "status": {"applicationState": {"state": "FAILED", "errorMessage": REFUSED}}}
    observed = observe_spark_application(app)
    assert observed.state == "Failed" and "\n" not in observed.message and len(observed.message) < 700
    assert observed.message.startswith("SparkApplication a-1 FAILED: the API server refused: networkpolicies")
    short = {"state": "FAILED", "errorMessage": "driver container failed with ExitCode: 3, Reason: Error"}
    message = observe_spark_application({"metadata": {"name": "a-1"}, "status": {"applicationState": short}}).message
    assert message == "SparkApplication a-1 FAILED: driver container failed with ExitCode: 3, Reason: Error"
