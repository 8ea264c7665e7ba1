# One image for the controller and the Spark jobs: Python, a JRE for PySpark, the project.
# (No Docker engine runs on the development machines; the chart's defaults match this file
# and a test checks the user, command and ports.)
FROM python:3.11-slim-bookworm AS build
WORKDIR /src
COPY pyproject.toml README.md ./
COPY operator ./operator
COPY jobs ./jobs
RUN pip wheel --no-cache-dir --wheel-dir /wheels '.[controller,spark,duckdb]'

FROM python:3.11-slim-bookworm
RUN apt-get update \
 && apt-get install -y --no-install-recommends openjdk-17-jre-headless \
 && rm -rf /var/lib/apt/lists/*
COPY --from=build /wheels /wheels
RUN pip install --no-cache-dir --no-index --find-links=/wheels 'ducklake-operator[controller,spark,duckdb]' \
 && rm -rf /wheels
RUN groupadd --gid 10001 ducklake && useradd --uid 10001 --gid 10001 --no-create-home --shell /usr/sbin/nologin ducklake
# The job program as a file, for spark-submit (the Job and SparkApplication launchers run
# /opt/ducklake/run_job.py: three lines calling ducklake_jobs.__main__.main), and the
# entrypoint Spark's driver and executor pods need (they pass "driver ..." or "executor")
COPY docker/run_job.py docker/spark-entrypoint.sh /opt/ducklake/
ENV PYTHONUNBUFFERED=1 SPARK_LOCAL_IP=127.0.0.1 HOME=/tmp
USER 10001
# kopf liveness, Prometheus metrics
EXPOSE 8080 9090
ENTRYPOINT ["/opt/ducklake/spark-entrypoint.sh"]
CMD ["ducklake-operator"]
