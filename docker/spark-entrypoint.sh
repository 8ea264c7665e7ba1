#!/bin/bash
# The image's entrypoint. Spark on Kubernetes starts its pods with arguments only: "driver ..."
# for a SparkApplication's driver (cluster mode), "executor" for an executor, whose settings
# arrive as SPARK_* environment variables. Anything else (ducklake-operator, spark-submit,
# a shell) runs as given.
set -euo pipefail

SPARK_HOME="${SPARK_HOME:-$(python -c 'import os, pyspark; print(os.path.dirname(pyspark.__file__))')}"
export SPARK_HOME

case "${1:-}" in
  driver)
    shift
    # bind and advertise the pod's address, not the image's default of 127.0.0.1
    export SPARK_LOCAL_IP="${SPARK_DRIVER_BIND_ADDRESS:?SPARK_DRIVER_BIND_ADDRESS is set by Spark for its driver pod}"
    exec "$SPARK_HOME/bin/spark-submit" --conf "spark.driver.bindAddress=$SPARK_DRIVER_BIND_ADDRESS" \
      --deploy-mode client "$@"
    ;;
  executor)
    shift
    export SPARK_LOCAL_IP="${SPARK_EXECUTOR_POD_IP:?SPARK_EXECUTOR_POD_IP is set by Spark for its executor pods}"
    # JVM options Spark passes as SPARK_JAVA_OPT_0, SPARK_JAVA_OPT_1, ... in that order
    java_opts=()
    while IFS= read -r name; do java_opts+=("${!name}"); done < <(compgen -e | grep '^SPARK_JAVA_OPT_' | sort -t_ -k4 -n)
    exec java "${java_opts[@]}" -Xms"$SPARK_EXECUTOR_MEMORY" -Xmx"$SPARK_EXECUTOR_MEMORY" \
      -cp "${SPARK_CONF_DIR:-$SPARK_HOME/conf}:$SPARK_HOME/jars/*${SPARK_EXTRA_CLASSPATH:+:$SPARK_EXTRA_CLASSPATH}" \
      org.apache.spark.scheduler.cluster.k8s.KubernetesExecutorBackend \
      --driver-url "$SPARK_DRIVER_URL" --executor-id "$SPARK_EXECUTOR_ID" --cores "$SPARK_EXECUTOR_CORES" \
      --app-id "$SPARK_APPLICATION_ID" --hostname "$SPARK_EXECUTOR_POD_IP" \
      --resourceProfileId "$SPARK_RESOURCE_PROFILE_ID" --podName "$SPARK_EXECUTOR_POD_NAME"
    ;;
  *)
    exec "$@"
    ;;
esac
