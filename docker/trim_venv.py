"""Removes from the image's venv what the product never runs, before the image copies it:
run by the Dockerfile's dependencies stage (as ``python trim_venv.py VENV``), with the
standard library only and binutils' strip. Nothing the product imports or loads goes: the
tests run the CLI, the DuckDB extensions, pyarrow's S3 and a Spark job in the image.
"""

from __future__ import annotations

import os
import platform
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

# Paths under site-packages that nothing in the product reaches.
UNUSED = (
    # the client's asyncio twin; the operator's asynchronous calls go through kopf's own client
    "kubernetes/aio",
    # Spark Connect's Scala shell (bin/spark-connect-shell); jars/* alone is Spark's classpath
    "pyspark/jars/connect-repl",
    # pyarrow's own test suite, and the C++ headers for building against it
    "pyarrow/tests",
    "pyarrow/include",
)
# RocksDB's JNI library, per platform, as its loader names the file (glibc builds; the jar
# also holds musl, macOS and Windows ones)
ROCKSDB_LIBRARIES = {
    "x86_64": "librocksdbjni-linux64.so",
    "aarch64": "librocksdbjni-linux-aarch64.so",
    "ppc64le": "librocksdbjni-linux-ppc64le.so",
    "s390x": "librocksdbjni-linux-s390x.so",
    "riscv64": "librocksdbjni-linux-riscv64.so",
}


def keep_only(jar: Path, unwanted: str, wanted: str) -> int:
    """Rewrites ``jar`` without its entries named ``unwanted*`` other than ``wanted``; the
    bytes saved."""
    before = jar.stat().st_size
    trimmed = jar.with_suffix(".trimmed")
    with zipfile.ZipFile(jar) as source, zipfile.ZipFile(trimmed, "w") as target:
        for entry in source.infolist():
            if not entry.filename.startswith(unwanted) or entry.filename == wanted:
                target.writestr(entry, source.read(entry))
    os.replace(trimmed, jar)
    return before - jar.stat().st_size


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
    for rel in UNUSED:
        path = site / rel
        if not path.exists():
            raise SystemExit(f"trim_venv: {path} is gone: the dependencies changed, update UNUSED")
        shutil.rmtree(path)
        print(f"trim_venv: removed {rel}")
    library = ROCKSDB_LIBRARIES.get(platform.machine())
    for jar in (site / "pyspark" / "jars").glob("rocksdbjni-*.jar"):
        if library:
            print(
                f"trim_venv: {jar.name} without other platforms' libraries, {keep_only(jar, 'librocksdbjni-', library) >> 20} MiB less"
            )
    print(f"trim_venv: shared libraries stripped, {strip_libraries(site) >> 20} MiB less")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
