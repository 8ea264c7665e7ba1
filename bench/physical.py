"""The machine's physical limits a job's rate is held against.

``disk_rate``: the disk's sequential write and read rate, each byte from the device. The
write is fsync'd; before the read the file's pages are dropped from the page cache
(``posix_fadvise(DONTNEED)`` on that one file: clean pages, nothing else on the machine is
touched), since a read of a file just written otherwise comes from memory (the probe of
before printed 1,071-2,850 MB/s for that reason). A job reads and writes each byte once, so
its input rate is bounded by half the combined rate (``DiskRate.job_bound``).

``copy_rate``: what the CPU allows, for contrast: DuckDB copying the same Parquet files into
one Parquet file (``COPY (FROM read_parquet(...)) TO``), every core, no catalog: the least
work any rewrite of those bytes does here. When it is far under the disk's bound, every
contender is bound by the CPU (Parquet decoding and encoding), not by the disk.

    python bench/physical.py [--dir DIR] [--mb 1024]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass

BLOCK = 8 << 20


@dataclass(frozen=True)
class DiskRate:
    write: float  # MB/s, fsync'd
    read: float  # MB/s, from the device (unless ``cached``)
    cached: bool  # the page cache could not be dropped for the file: the read came from memory

    @property
    def combined(self) -> float:
        """MB/s of write+read: the bytes moved over the time of both."""
        return 2 / (1 / self.write + 1 / self.read)

    @property
    def job_bound(self) -> float:
        """The input rate of a job that reads and writes each byte once: half the combined rate."""
        return self.combined / 2

    def describe(self) -> str:
        read = f"read {self.read:.0f} MB/s" + (" (from the page cache: it could not be dropped)" if self.cached else "")
        return (
            f"{self.combined:8.1f} MB/s write+read (write {self.write:.0f} MB/s fsync'd, {read}); "
            f"a job's input bound {self.job_bound:.0f} MB/s"
        )


def _drop_cached(fd: int) -> bool:
    """Drop one file's clean pages from the page cache; False where that is not possible."""
    if not hasattr(os, "posix_fadvise"):
        return False
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    return True


def disk_rate(directory: str, mb: int = 1024) -> DiskRate:
    """Write ``mb`` MB of random bytes to a file in ``directory`` (fsync'd), drop its pages,
    read it back; the file is removed."""
    path = os.path.join(directory, "disk-probe.bin")
    block = os.urandom(BLOCK)
    blocks = max(1, (mb << 20) // BLOCK)
    size_mb = blocks * BLOCK / 1e6
    try:
        t0 = time.perf_counter()
        with open(path, "wb") as fh:
            for _ in range(blocks):
                fh.write(block)
            fh.flush()
            os.fsync(fh.fileno())
            write_s = time.perf_counter() - t0
            dropped = _drop_cached(fh.fileno())
        t0 = time.perf_counter()
        with open(path, "rb", buffering=0) as fh:
            while fh.read(BLOCK):
                pass
        read_s = time.perf_counter() - t0
    finally:
        if os.path.exists(path):
            os.remove(path)
    return DiskRate(size_mb / write_s, size_mb / read_s, not dropped)


def copy_rate(files: Sequence[str]) -> float:
    """MB/s of input DuckDB copies ``files`` (Parquet) into one Parquet file at, every core."""
    import duckdb

    size_mb = sum(os.path.getsize(f) for f in files) / 1e6
    with tempfile.TemporaryDirectory(prefix="bench-copy-") as scratch:
        con = duckdb.connect()
        try:
            listed = "[" + ", ".join("'" + f.replace("'", "''") + "'" for f in files) + "]"
            t0 = time.perf_counter()
            con.execute(f"COPY (FROM read_parquet({listed})) TO '{scratch}/out.parquet' (FORMAT parquet)")
            return size_mb / (time.perf_counter() - t0)
        finally:
            con.close()


def print_limits(directory: str, rates: dict[str, float], parquet: Sequence[str] = (), width: int = 52) -> None:
    """The disk's rate and a job's bound from it, DuckDB's plain copy of ``parquet`` (the
    input, when it is Parquet), and each of ``rates`` (MB/s of input) as a share of the bound."""
    disk = disk_rate(directory)
    print(f"{'disk sequential':<{width}} {disk.describe()}")
    if parquet:
        rates = {"DuckDB COPY of the input Parquet to one file (no catalog)": copy_rate(parquet), **rates}
    for what, rate in rates.items():
        print(f"{what:<{width}} {rate:8.1f} MB/s: {100 * rate / disk.job_bound:4.0f}% of the disk's bound")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--dir", default=tempfile.gettempdir())
    parser.add_argument("--mb", type=int, default=1024)
    args = parser.parse_args()
    print(f"disk sequential: {disk_rate(args.dir, args.mb).describe()}")


if __name__ == "__main__":
    main()
