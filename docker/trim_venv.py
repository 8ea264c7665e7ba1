"""Removes from the image's venv what the product never runs, before the image copies it:
run by the Dockerfile's dependencies stage (as ``python trim_venv.py VENV``), with the
standard library only and binutils' strip and readelf. Nothing the product imports or loads
goes: the tests run the CLI, the DuckDB extensions, pyarrow's S3, a Spark job in the image,
and Spark on Kubernetes (driver and executor pods) with it.
"""

from __future__ import annotations

import hashlib
import os
import platform
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

# Paths (globs) under site-packages that nothing in the product reaches.
UNUSED = (
    # the client's asyncio twin; the operator's asynchronous calls go through kopf's own client
    "kubernetes/aio",
    # Spark Connect's Scala shell (bin/spark-connect-shell); jars/* alone is Spark's classpath
    "pyspark/jars/connect-repl",
    # PySpark's example programs and their data files
    "pyspark/examples",
    "pyspark/data",
    # pyarrow's own test suite, and the C++ headers and sources for building against it
    "pyarrow/tests",
    "pyarrow/include",
    "pyarrow/src",
    # Arrow Flight, the RPC framework (pyarrow.flight): no other library of pyarrow links it
    "pyarrow/flight.py",
    "pyarrow/_flight.*",
    "pyarrow/libarrow_flight.so*",
    "pyarrow/libarrow_python_flight.so*",
)

# Spark's jars (globs in pyspark/jars) for what the product never starts. Spark looks each
# of these features up by class name and goes on without it (an in-memory catalog; no Spark
# Connect server): a job using one fails with ClassNotFoundException.
UNUSED_JARS = (
    # Hive: its metastore catalog (enableHiveSupport), SerDes, the JDBC/Thrift server and
    # SQL CLI; the metastore's persistence (DataNucleus, JDO, Derby, connection pools)
    "hive-beeline-*",
    "hive-cli-*",
    "hive-common-*",
    "hive-exec-*",
    "hive-jdbc-*",
    "hive-metastore-*",
    "hive-serde-*",
    "hive-service-rpc-*",
    "hive-shims-*",
    "spark-hive_*",
    "spark-hive-thriftserver_*",
    "datanucleus-*",
    "derby*",
    "javax.jdo-*",
    "jdo-api-*",
    "jta-*",
    "transaction-api-*",
    "HikariCP-*",
    "commons-dbcp-*",
    "libfb303-*",
    "libthrift-*",
    "jpam-*",
    "javolution-*",
    "antlr-runtime-*",  # Hive's parser (ANTLR 3); Spark's own is antlr4-runtime
    "ST4-*",
    "super-csv-*",
    "opencsv-*",
    "json-[0-9]*",  # org.json, for Hive
    "dropwizard-metrics-hadoop-metrics2-reporter-*",
    # MLlib and GraphX, and the numeric libraries only they use
    "spark-mllib_*",
    "spark-mllib-local_*",
    "spark-graphx_*",
    "breeze_*",
    "breeze-macros_*",
    "spire*",
    "cats-kernel_*",
    "algebra_*",
    "arpack*",
    "blas-*",
    "lapack-*",
    "JTransforms-*",
    "JLargeArrays-*",
    # the Spark Connect server and the declarative pipelines on it; the Scala shell and the
    # Scala compiler it runs (spark-shell)
    "spark-connect_*",
    "spark-pipelines_*",
    "spark-repl_*",
    "scala-compiler-*",
)

# JNI libraries that jars carry for many platforms: by jar name prefix, the entry (a name or a
# directory prefix) that the jar's loader picks on each machine (platform.machine(), glibc);
# the others leave the jar. A machine not listed keeps the jar whole.
NATIVE_LIBRARIES = {
    "rocksdbjni-": {
        "x86_64": "librocksdbjni-linux64.so",
        "aarch64": "librocksdbjni-linux-aarch64.so",
        "ppc64le": "librocksdbjni-linux-ppc64le.so",
        "s390x": "librocksdbjni-linux-s390x.so",
        "riscv64": "librocksdbjni-linux-riscv64.so",
    },
    "zstd-jni-": {
        "x86_64": "linux/amd64/",
        "aarch64": "linux/aarch64/",
        "ppc64le": "linux/ppc64le/",
        "s390x": "linux/s390x/",
        "riscv64": "linux/riscv64/",
    },
    "snappy-java-": {
        "x86_64": "org/xerial/snappy/native/Linux/x86_64/",
        "aarch64": "org/xerial/snappy/native/Linux/aarch64/",
        "ppc64le": "org/xerial/snappy/native/Linux/ppc64le/",
        "s390x": "org/xerial/snappy/native/Linux/s390x/",
        "riscv64": "org/xerial/snappy/native/Linux/riscv64/",
    },
    "lz4-java-": {
        "x86_64": "net/jpountz/util/linux/amd64/",
        "aarch64": "net/jpountz/util/linux/aarch64/",
        "ppc64le": "net/jpountz/util/linux/ppc64le/",
        "s390x": "net/jpountz/util/linux/s390x/",
        "riscv64": "net/jpountz/util/linux/riscv64/",
    },
    "leveldbjni-all-": {"x86_64": "META-INF/native/linux64/"},
}
NATIVE_SUFFIXES = (".so", ".dll", ".dylib", ".jnilib")
# Netty ships its JNI libraries as one jar per platform (classifier): this machine's, by name
NETTY_PLATFORMS = {"x86_64": "linux-x86_64", "aarch64": "linux-aarch_64", "riscv64": "linux-riscv64"}
NETTY_NATIVE_JAR = re.compile(
    r"netty-(tcnative-boringssl-static|transport-native-\w+)-.+-((linux|osx|windows)-\w+)\.jar"
)


def remove(path: Path) -> int:
    """Removes a file or a tree; the bytes it held."""
    if path.is_dir() and not path.is_symlink():
        size = sum(p.stat().st_size for p in path.rglob("*") if p.is_file() and not p.is_symlink())
        shutil.rmtree(path)
        return size
    size = path.lstat().st_size
    path.unlink()
    return size


def remove_matching(directory: Path, patterns: tuple[str, ...]) -> int:
    """Removes what each glob names in ``directory``; each must name something (else the
    dependencies changed and the list needs a look). The bytes saved."""
    saved = 0
    for pattern in patterns:
        found = sorted(directory.glob(pattern))
        if not found:
            raise SystemExit(f"trim_venv: nothing matches {directory}/{pattern}: the dependencies changed, update it")
        saved += sum(remove(path) for path in found)
    return saved


def keep_only(jar: Path, wanted: str) -> int:
    """Rewrites ``jar`` without its JNI libraries other than those named ``wanted*``; the
    bytes saved. The wanted library must be there (else its loader's layout changed)."""
    before = jar.stat().st_size
    trimmed = jar.with_suffix(".trimmed")
    kept = False
    with zipfile.ZipFile(jar) as source, zipfile.ZipFile(trimmed, "w") as target:
        for entry in source.infolist():
            if entry.filename.endswith(NATIVE_SUFFIXES) and not entry.filename.startswith(wanted):
                continue
            kept |= entry.filename.startswith(wanted)
            target.writestr(entry, source.read(entry))
    if not kept:
        trimmed.unlink()
        raise SystemExit(f"trim_venv: {jar.name} holds no {wanted}: its layout changed, update NATIVE_LIBRARIES")
    os.replace(trimmed, jar)
    return before - jar.stat().st_size


def trim_native_jars(jars: Path, machine: str) -> int:
    """Other platforms' JNI libraries out of Spark's jars; the bytes saved."""
    saved = 0
    for prefix, libraries in NATIVE_LIBRARIES.items():
        if machine in libraries:
            saved += sum(keep_only(jar, libraries[machine]) for jar in jars.glob(f"{prefix}*.jar"))
    if machine in NETTY_PLATFORMS:
        for jar in jars.glob("netty-*.jar"):
            native = NETTY_NATIVE_JAR.fullmatch(jar.name)
            if native and native.group(2) != NETTY_PLATFORMS[machine]:
                saved += remove(jar)
    return saved


def soname(library: Path) -> str | None:
    """The SONAME a shared library declares (what the dynamic loader looks for)."""
    dynamic = subprocess.run(["readelf", "-d", str(library)], capture_output=True, text=True).stdout
    found = re.search(r"\(SONAME\)\s+Library soname: \[([^\]]+)\]", dynamic)
    return found.group(1) if found else None


def link_duplicates(site: Path) -> int:
    """Wheels cannot hold symbolic links, so a library comes as libx.so, libx.so.N and
    libx.so.N.M.P, three equal files: the one named by its SONAME stays, the others become
    links to it. The bytes saved."""
    saved = 0
    for directory, _, files in os.walk(site):
        groups: dict[tuple[str, str], list[Path]] = {}
        for name in files:
            path = Path(directory, name)
            if ".so" in name and not path.is_symlink():
                stem = name.split(".so", 1)[0]
                groups.setdefault((stem, hashlib.sha256(path.read_bytes()).hexdigest()), []).append(path)
        for copies in groups.values():
            names = {path.name for path in copies}
            main = soname(copies[0]) if len(copies) > 1 else None
            if main not in names:
                continue
            for path in copies:
                if path.name != main:
                    saved += remove(path)
                    path.symlink_to(main)
    return saved


def strip_libraries(site: Path) -> int:
    """Symbol tables out of the shared libraries (as Debian strips its packages'); DuckDB's
    extensions are left whole (their metadata is at the end of the file), and so are the
    libraries wheels vendor in *.libs, which auditwheel patched. The bytes saved."""
    saved = 0
    for directory, dirs, files in os.walk(site):
        dirs[:] = [d for d in dirs if not d.endswith(".libs")]
        for name in files:
            path = Path(directory, name)
            if (name.endswith(".so") or ".so." in name) and not path.is_symlink():
                with open(path, "rb") as f:
                    if f.read(4) != b"\x7fELF":
                        continue
                before = path.stat().st_size
                subprocess.run(["strip", "--strip-unneeded", str(path)], check=True)
                saved += before - path.stat().st_size
    return saved


def main(venv: Path) -> None:
    (site,) = venv.glob("lib/python3*/site-packages")
    jars = site / "pyspark" / "jars"
    steps = (
        ("unused files", lambda: remove_matching(site, UNUSED)),
        ("Spark's jars for Hive, MLlib, GraphX, Spark Connect", lambda: remove_matching(jars, UNUSED_JARS)),
        ("other platforms' JNI libraries", lambda: trim_native_jars(jars, platform.machine())),
        ("copies of shared libraries made links", lambda: link_duplicates(site)),
        ("symbol tables of shared libraries", lambda: strip_libraries(site)),
    )
    for what, step in steps:
        print(f"trim_venv: {what}: {step() / 1e6:.1f} MB less")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
