# One image for the controller and the Spark jobs: Python, a JRE for PySpark, the project.
# (No Docker engine runs on the development machines: the tests build this file with buildah
# on a stand-in base, tests/support/images.py; the chart's defaults match this file and a test
# checks the user, command and ports.) Pods run it with a read-only root filesystem, so
# everything Python imports is compiled here.
ARG BASE_IMAGE=python:3.11-slim-bookworm

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
# openjdk's post-installation script links its manual page into /usr/share/man/man1, which
# slim images lack (Debian bug 863199). The standard library is compiled where its base did not.
RUN mkdir -p /usr/share/man/man1 \
 && apt-get update \
 && apt-get install -y --no-install-recommends openjdk-17-jre-headless \
 && apt-get clean \
 && rm -rf /var/lib/apt/lists/* \
 && python -m compileall -q -j 0 -x 'bad_coding|badsyntax|site-packages|lib2to3/tests/data' \
    "$(python -c 'import sysconfig; print(sysconfig.get_path("stdlib"))')"
RUN groupadd --gid 10001 ducklake && useradd --uid 10001 --gid 10001 --no-create-home --shell /usr/sbin/nologin ducklake
COPY --from=dependencies /opt/ducklake/venv /opt/ducklake/venv
# The job program as a file, for spark-submit (the Job and SparkApplication launchers run
# /opt/ducklake/run_job.py: three lines calling ducklake_jobs.__main__.main), and the
# entrypoint Spark's driver and executor pods need (they pass "driver ..." or "executor")
COPY docker/run_job.py docker/spark-entrypoint.sh /opt/ducklake/
COPY --from=project /project/ /opt/ducklake/venv/
ENV PATH=/opt/ducklake/venv/bin:$PATH PYTHONUNBUFFERED=1 SPARK_LOCAL_IP=127.0.0.1 HOME=/tmp
USER 10001
# kopf liveness, Prometheus metrics
EXPOSE 8080 9090
ENTRYPOINT ["/opt/ducklake/spark-entrypoint.sh"]
CMD ["ducklake-operator"]
