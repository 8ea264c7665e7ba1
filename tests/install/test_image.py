"""The operator's image, built from the repository's Dockerfile on the tests' stand-in for its
base (support.images: buildah, no registry), and run as the launcher's pods run it: its user
10001, a read-only root filesystem with only /tmp writable, no capabilities (through runc,
the node's runtime). The first run builds the image (minutes); later runs find it cached.
"""

from __future__ import annotations

import json

import pytest

from ducklake_operator.controller.launchers.render import PROGRAM, RUN_AS
from support.images import ROOT, Image, image_config, image_size, operator_image, run_in_image

# Uncompressed, on the stand-in base (the official one is ~25 MB smaller), in bytes: 1 GB as
# docker and crictl count it (10^9, not 2^30). What it holds, in MB, when this was set: base
# 152, Java runtime 114 (jlink), PySpark 266, DuckDB and its four extensions 196, pyarrow 100,
# kubernetes 57, the rest of the venv 62, the project 3; 951 in all (0.45 GB gzip-compressed,
# as a registry stores it).
SIZE_LIMIT = 1_000_000_000

# Python modules whose compiled bytecode is missing or stale: a read-only root filesystem
# cannot take it, so each start would compile them again
STALE_BYTECODE = """
import os, sys, importlib.util
stale = []
for name, module in list(sys.modules.items()):
    source, cached = getattr(module, "__file__", None), getattr(module, "__cached__", None)
    if not source or not cached or not source.endswith(".py"):
        continue
    try:
        header = open(cached, "rb").read(16)
    except OSError:
        stale.append(name)
        continue
    if header[:4] != importlib.util.MAGIC_NUMBER:
        stale.append(name)
    elif int.from_bytes(header[4:8], "little") == 0:  # timestamp-based: must match the source
        st = os.stat(source)
        if (int.from_bytes(header[8:12], "little"), int.from_bytes(header[12:16], "little")) != (
                int(st.st_mtime) & 0xFFFFFFFF, st.st_size & 0xFFFFFFFF):
            stale.append(name)
print(len(sys.modules), "modules; stale:", sorted(stale))
"""


@pytest.fixture(scope="module")
def image() -> Image:
    return operator_image()


def run(image: Image, *command: str) -> str:
    done = run_in_image(image, list(command))
    assert done.returncode == 0, (command, done.stdout, done.stderr[-3000:])
    return done.stdout + done.stderr


def test_the_image_stays_within_its_size(image: Image) -> None:
    assert image_size(image) <= SIZE_LIMIT, image_size(image)


def test_the_image_runs_the_operator_as_the_chart_expects(image: Image) -> None:
    config = image_config(image)
    assert config["User"] == str(RUN_AS)
    assert config["Entrypoint"] == ["/opt/ducklake/spark-entrypoint.sh"] and config["Cmd"] == ["ducklake-operator"]
    assert "HOME=/tmp" in config["Env"]
    assert run(image, "id", "-u").split() == [str(RUN_AS)]


def test_the_cli_and_the_libraries_work_on_a_read_only_root(image: Image) -> None:
    assert "usage: ducklake" in run(image, "ducklake", "--help")
    assert "usage: ducklake-operator" in run(image, "ducklake-operator", "--help")
    # DuckDB with its extensions from their wheels (nothing downloaded), S3 in pyarrow, the
    # controller's libraries, and the job program's module
    imports = run(image, "python", "-c", (
        "import pyspark, duckdb, kopf, kubernetes, pyarrow.fs, ducklake_jobs.__main__\n"
        "from ducklake_operator.duckdb_client import connect\n"
        "con = connect()\n"
        "print(sorted(r[0] for r in con.execute('select extension_name from duckdb_extensions() where loaded').fetchall()))\n"
        "print(pyarrow.fs.S3FileSystem.__name__)\n" + STALE_BYTECODE))  # fmt: skip
    assert "'ducklake'" in imports and "'httpfs'" in imports and "'postgres_scanner'" in imports
    assert "'sqlite_scanner'" in imports and "S3FileSystem" in imports
    assert "stale: []" in imports
    assert run(image, "test", "-f", PROGRAM) == ""


def test_spark_runs_on_a_read_only_root(image: Image) -> None:
    assert "version 4." in run(image, "spark-submit", "--version")
    jars = run(
        image, "sh", "-c", 'ls "$(python -c "import pyspark, os; print(os.path.dirname(pyspark.__file__))")/jars"'
    )
    assert "spark-kubernetes_" in jars and "kubernetes-client-" in jars
    counted = run(image, "python", "-c", (
        "from pyspark.sql import SparkSession\n"
        "spark = SparkSession.builder.master('local[1]').config('spark.ui.enabled', 'false').getOrCreate()\n"
        "print('rows', spark.range(1000).selectExpr('sum(id)').first()[0])\n"))  # fmt: skip
    assert "rows 499500" in counted


def test_spark_loads_the_native_libraries_of_this_machine(image: Image) -> None:
    """The image keeps, of the JNI libraries Spark's jars carry for many platforms, those of
    its own (docker/trim_venv.py): each loads. lz4 compresses shuffles, zstd map statuses,
    epoll carries Spark's network; lz4 would fall back to Java silently, hence nativeInstance."""
    loaded = run(image, "python", "-c", (
        "from pyspark.sql import SparkSession\n"
        "spark = SparkSession.builder.master('local[1]').config('spark.ui.enabled', 'false').getOrCreate()\n"
        "jvm = spark.sparkContext._jvm\n"
        "print('lz4', jvm.net.jpountz.lz4.LZ4Factory.nativeInstance())\n"
        "print('zstd', len(jvm.com.github.luben.zstd.Zstd.compress(bytearray(b'duck' * 100))))\n"
        "print('snappy', jvm.org.xerial.snappy.Snappy.getNativeLibraryVersion())\n"
        "print('epoll', jvm.io.netty.channel.epoll.Epoll.isAvailable())\n"
        "print('openssl', jvm.io.netty.handler.ssl.OpenSsl.isAvailable())\n"
        "jvm.org.rocksdb.RocksDB.loadLibrary()\n"
        "db = jvm.org.fusesource.leveldbjni.JniDBFactory.factory.open(jvm.java.io.File('/tmp/leveldb'), jvm.org.iq80.leveldb.Options())\n"
        "db.close()\n"
        "print('rocksdb leveldb loaded')\n"))  # fmt: skip
    assert "lz4 LZ4Factory:JNI" in loaded and "zstd " in loaded and "snappy 1." in loaded
    assert "epoll True" in loaded and "openssl True" in loaded and "rocksdb leveldb loaded" in loaded


def test_the_entrypoint_passes_other_commands_through(image: Image) -> None:
    assert run(image, "printf", "%s|", "driverless", "two words", "") == "driverless|two words||"
    failed = run_in_image(image, ["sh", "-c", "exit 7"])
    assert failed.returncode == 7


def test_a_compaction_runs_through_spark_in_the_image(image: Image) -> None:
    """The product's own path: the examples' SQLite catalog made and filled by the CLI, then
    compacted by Spark tasks (local mode: the JVM, PySpark's workers running DuckDB)."""
    script = (
        "set -e; mkdir /tmp/work; cp -r /examples /tmp/work/examples; cd /tmp/work\n"
        "ducklake apply -f examples/ >&2\n"
        "for i in 0 1 2; do\n"
        "  ducklake sql -f examples/catalog.yaml "
        '"INSERT INTO lake.sales.orders (id) SELECT i FROM range($((i * 50)), $((i * 50 + 50))) t(i)" >&2\n'
        "done\n"
        "ducklake run-job compact sales.orders -f examples/catalog.yaml\n"
    )
    done = run_in_image(image, ["bash", "-c", script], mounts={"/examples": ROOT / "examples"}, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads(done.stdout)["filesRead"] == 3  # the three inserts' files, merged by a Spark task
