"""Where a local Spark session's Unix domain sockets can go. A socket's path has at most 107
bytes (``sun_path`` holds 108 with its NUL), and Spark names the sockets of a session's JVM
and Python workers ``<dir>/.<uuid4>.sock``: in a long directory (a Local attempt's scratch
directory) binding fails with "AF_UNIX path too long". Pure.
"""

from __future__ import annotations

SOCKET_PATH_MAX = 107
SPARK_SOCKET_NAME = len("/.") + 36 + len(".sock")
# the directory a launcher chose for a program's sockets (the Local launcher: it removes it
# with the program's scratch directory, also after a program that could not)
SOCKET_DIR_ENV = "DUCKLAKE_SPARK_SOCKET_DIR"


def socket_parent(preferred: str, name_length: int) -> str:
    """``preferred`` when a directory of ``name_length`` characters in it holds Spark's
    sockets, else /tmp."""
    fits = len(preferred) + 1 + name_length + SPARK_SOCKET_NAME <= SOCKET_PATH_MAX
    return preferred if fits else "/tmp"
