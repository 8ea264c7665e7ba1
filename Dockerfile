# One image for the controller and the Spark jobs: Python, a JRE for PySpark, the project.
# (No Docker engine runs on the development machines: the tests build this file with buildah
# on a stand-in base, tests/support/images.py; the chart's defaults match this file and a test
# checks the user, command and ports.) Pods run it with a read-only root filesystem, so
# everything Python imports is compiled here.
ARG BASE_IMAGE=python:3.11-slim-bookworm

# A Java runtime for Spark made by jlink from a JDK that stays in this stage: only the JDK's
# modules that Spark, Hadoop's client and the Kubernetes client use (114 MB; Debian's JRE
# package is 215 MB with what it depends on). jdeps over Spark's jars names java.base,
# java.compiler, java.desktop (java.beans), java.instrument, java.naming, java.rmi,
# java.scripting, java.security.jgss, java.security.sasl, java.sql, jdk.jfr (Netty),
# jdk.management and jdk.unsupported. These are used with no reference jdeps sees:
# jdk.incubator.vector (Spark's launcher passes --add-modules=jdk.incubator.vector: no JVM
# starts without it), jdk.security.auth (Hadoop's login module), jdk.crypto.ec (TLS with EC
# keys, as API servers have), jdk.naming.dns, jdk.net, jdk.security.jgss and jdk.zipfs. The
# JDK's classes keep their line numbers; the class data sharing archive is made again (JVMs
# start as fast as with Debian's JRE).
# openjdk's post-installation script links its manual page into /usr/share/man/man1, which
# slim images lack (Debian bug 863199).
FROM ${BASE_IMAGE} AS java
RUN mkdir -p /usr/share/man/man1 \
 && apt-get update \
 && apt-get install -y --no-install-recommends openjdk-17-jdk-headless \
 && jlink --output /opt/java --no-header-files --no-man-pages --add-modules \
java.base,java.compiler,java.desktop,java.instrument,java.naming,java.rmi,java.scripting,\
java.security.jgss,java.security.sasl,java.sql,jdk.jfr,jdk.management,jdk.unsupported,\
jdk.incubator.vector,jdk.security.auth,jdk.crypto.ec,jdk.naming.dns,jdk.net,jdk.security.jgss,jdk.zipfs \
 && /opt/java/bin/java -Xshare:dump >/dev/null

# The dependencies, in a venv the image copies whole: no wheels, pip cache or build tools
# reach the image. pyproject.toml alone is copied, so a change of the code reuses this stage.
FROM ${BASE_IMAGE} AS dependencies
WORKDIR /src
COPY pyproject.toml ./
RUN python -m venv --without-pip /opt/ducklake/venv \
 && python -c 'import tomllib; p = tomllib.load(open("pyproject.toml", "rb"))["project"]; \
[print(r) for r in p["dependencies"] + [r for e in ("controller", "spark", "duckdb") for r in p["optional-dependencies"][e]]]' \
    >requirements.txt \
 && pip --python /opt/ducklake/venv/bin/python install --no-cache-dir --no-compile -r requirements.txt
# what the product never runs leaves the venv (trim_venv.py says what and why); then the rest
# is compiled, hash-checked so that copying the files cannot make the bytecode stale
COPY docker/trim_venv.py ./
RUN apt-get update \
 && apt-get install -y --no-install-recommends binutils \
 && python trim_venv.py /opt/ducklake/venv \
 && /opt/ducklake/venv/bin/python -m compileall -q -j 0 --invalidation-mode unchecked-hash /opt/ducklake/venv/lib

# The project, installed under a prefix laid out as the venv is: the image copies it onto the
# venv, so a change of the code rebuilds only the last layers.
FROM dependencies AS project
COPY README.md ./
COPY operator ./operator
COPY jobs ./jobs
RUN pip --python /opt/ducklake/venv/bin/python install --no-cache-dir --no-deps --no-compile --prefix /project . \
 && /opt/ducklake/venv/bin/python -m compileall -q --invalidation-mode unchecked-hash \
    -s /project -p /opt/ducklake/venv /project/lib

FROM ${BASE_IMAGE}
# The standard library is compiled where its base did not.
RUN python -m compileall -q -j 0 -x 'bad_coding|badsyntax|site-packages|lib2to3/tests/data' \
    "$(python -c 'import sysconfig; print(sysconfig.get_path("stdlib"))')"
RUN groupadd --gid 10001 ducklake && useradd --uid 10001 --gid 10001 --no-create-home --shell /usr/sbin/nologin ducklake
COPY --from=java /opt/java /opt/java
COPY --from=dependencies /opt/ducklake/venv /opt/ducklake/venv
# The job program as a file, for spark-submit (the Job and SparkApplication launchers run
# /opt/ducklake/run_job.py: three lines calling ducklake_jobs.__main__.main), and the
# entrypoint Spark's driver and executor pods need (they pass "driver ..." or "executor")
COPY docker/run_job.py docker/spark-entrypoint.sh /opt/ducklake/
COPY --from=project /project/ /opt/ducklake/venv/
ENV JAVA_HOME=/opt/java PATH=/opt/ducklake/venv/bin:/opt/java/bin:$PATH PYTHONUNBUFFERED=1 SPARK_LOCAL_IP=127.0.0.1 HOME=/tmp
USER 10001
# kopf liveness, Prometheus metrics
EXPOSE 8080 9090
ENTRYPOINT ["/opt/ducklake/spark-entrypoint.sh"]
CMD ["ducklake-operator"]
