"""Where the lake's files live: local paths (a PVC in a cluster) or ``s3://`` URIs, through
pyarrow's filesystems, so jobs need no Hadoop S3 jars. The controller (catalog deletion),
the CLI and the jobs all do their file I/O here.

Paths are full URIs or absolute local paths, as ``catalog.paths`` resolves them.
S3 settings come from the standard AWS environment (``AWS_ACCESS_KEY_ID``,
``AWS_SECRET_ACCESS_KEY``, ``AWS_SESSION_TOKEN``, ``AWS_REGION``, ``AWS_ENDPOINT_URL`` for
S3-compatible stores) of the driver; Spark tasks get the driver's ``S3Config`` with their
work (``configure``), since executors need not share the driver's environment.
Parquet work happens on local scratch copies: ``fetch`` brings an input to local disk (a
no-op for local paths) and ``store`` puts a finished file in place.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cache
from typing import TYPE_CHECKING
from urllib.parse import urlparse

if TYPE_CHECKING:
    import pyarrow.fs as pafs


@dataclass(frozen=True)
class StoredFile:
    path: str  # full path or URI
    size: int
    mtime: float  # seconds since the epoch


def is_remote(path: str) -> bool:
    return "://" in path


@dataclass(frozen=True)
class S3Config:
    endpoint: str | None = None  # URL; http:// for a store without TLS
    region: str | None = None
    access_key: str | None = None
    secret_key: str | None = field(default=None, repr=False)
    session_token: str | None = field(default=None, repr=False)
    url_style: str | None = None  # "vhost" forces virtual-host addressing; else pyarrow's default

    @classmethod
    def from_env(cls) -> S3Config:
        env = os.environ.get
        return cls(
            env("AWS_ENDPOINT_URL_S3") or env("AWS_ENDPOINT_URL"),
            env("AWS_REGION") or env("AWS_DEFAULT_REGION"),
            env("AWS_ACCESS_KEY_ID"),
            env("AWS_SECRET_ACCESS_KEY"),
            env("AWS_SESSION_TOKEN"),
        )


_configured: S3Config | None = None


def configure(config: S3Config | None) -> None:
    """Use these S3 settings in this process (a Spark task's, shipped from the driver)."""
    global _configured
    _configured = config


def s3_config(path: str) -> S3Config | None:
    """The settings a task needs for ``path`` (None for local paths)."""
    return (_configured or S3Config.from_env()) if path.startswith("s3://") else None


S3_ATTEMPTS = 7  # per request, with the SDK's backoff between them


@cache
def _s3(config: S3Config) -> pafs.S3FileSystem:
    import pyarrow.fs as pafs  # lazily: the controller rarely touches files

    kwargs: dict[str, object] = {}
    if config.endpoint:
        parsed = urlparse(config.endpoint)
        kwargs.update(endpoint_override=parsed.netloc or parsed.path, scheme=parsed.scheme or "https")
    if config.region:
        kwargs["region"] = config.region
    if config.access_key and config.secret_key:
        kwargs.update(access_key=config.access_key, secret_key=config.secret_key, session_token=config.session_token)
    if config.url_style == "vhost":
        kwargs["force_virtual_addressing"] = True
    # A job reads and writes hundreds of objects: the SDK's 3 attempts fail the whole job on a
    # store that stalls a few seconds (its low-speed limit is 3 s per request); Hadoop's S3A
    # tries 7 times. Transient errors only: a missing key or a refused credential fails at once.
    kwargs["retry_strategy"] = pafs.AwsStandardS3RetryStrategy(max_attempts=S3_ATTEMPTS)
    return pafs.S3FileSystem(**kwargs)


def filesystem(path: str, s3: S3Config | None = None) -> tuple[pafs.FileSystem, str]:
    """The filesystem holding ``path`` and the path within it; ``s3``: settings for this
    call (else the process's: ``configure``, or the environment)."""
    import pyarrow.fs as pafs  # lazily: the controller rarely touches files

    if path.startswith("s3://"):
        return _s3(s3 or _configured or S3Config.from_env()), path[len("s3://") :]
    if is_remote(path):
        return pafs.FileSystem.from_uri(path)
    return pafs.LocalFileSystem(), path


def fetch(path: str, scratch: str) -> str:
    """A local path with the content of ``path`` (the file itself when it is local)."""
    if not is_remote(path):
        return path
    fs, inner = filesystem(path)
    local = os.path.join(scratch, f"in-{len(os.listdir(scratch))}-{os.path.basename(inner)}")
    with fs.open_input_stream(inner) as src, open(local, "wb") as dst:
        shutil.copyfileobj(src, dst, 1 << 22)
    return local


def store(local: str, path: str) -> None:
    """Put the finished local file at ``path`` (moved when local, uploaded otherwise)."""
    fs, inner = filesystem(path)
    if not is_remote(path):
        os.makedirs(os.path.dirname(path), exist_ok=True)
        shutil.move(local, path)
        return
    with open(local, "rb") as src, fs.open_output_stream(inner) as dst:
        shutil.copyfileobj(src, dst, 1 << 22)
    os.remove(local)


def delete(path: str, s3: S3Config | None = None) -> bool:
    """Delete a file; False if it was already gone."""
    fs, inner = filesystem(path, s3)
    try:
        fs.delete_file(inner)
    except FileNotFoundError:
        return False
    except OSError:  # some S3 stores report a missing key as a generic error
        if exists(path, s3):
            raise
        return False
    return True


def exists(path: str, s3: S3Config | None = None) -> bool:
    import pyarrow.fs as pafs

    fs, inner = filesystem(path, s3)
    return fs.get_file_info(inner).type != pafs.FileType.NotFound


def size(path: str) -> int:
    fs, inner = filesystem(path)
    return int(fs.get_file_info(inner).size)


def stat(path: str) -> StoredFile | None:
    """The regular file at ``path`` (its size and modification time, as ``list_files`` gives
    them); None when there is none."""
    if not is_remote(path):
        if not os.path.isfile(path):
            return None
        st = os.stat(path)
        return StoredFile(path, st.st_size, st.st_mtime)
    import pyarrow.fs as pafs

    fs, inner = filesystem(path)
    info = fs.get_file_info(inner)
    if info.type != pafs.FileType.File:
        return None
    return StoredFile(path, int(info.size or 0), info.mtime.timestamp() if info.mtime else 0.0)


def list_files(root: str, s3: S3Config | None = None) -> Iterator[StoredFile]:
    """Every regular file under ``root`` (a directory path ending in ``/``). Local symlinks
    are neither followed nor listed, so nothing outside ``root`` is ever reached. ``s3``:
    settings for this call (else the process's)."""
    if not is_remote(root):
        for directory, _dirs, names in os.walk(root, followlinks=False):
            for name in names:
                full = os.path.join(directory, name)
                if not os.path.islink(full):
                    st = os.lstat(full)
                    yield StoredFile(full, st.st_size, st.st_mtime)
        return
    import pyarrow.fs as pafs

    fs, inner = filesystem(root, s3)
    scheme = root[: len(root) - len(inner)]
    for info in fs.get_file_info(pafs.FileSelector(inner.rstrip("/"), recursive=True, allow_not_found=True)):
        if info.type == pafs.FileType.File:
            yield StoredFile(scheme + info.path, int(info.size or 0), info.mtime.timestamp() if info.mtime else 0.0)
