"""Container images for the tests' node, built with buildah from the repository and the
package registries alone: no container registry is reachable here and no Docker engine runs.

- ``base_image()``: the stand-in for ``python:3.11-slim-bookworm``, Debian bookworm made by
  debootstrap with Debian's Python (``tests/images/python-base``).
- ``operator_image()``: the repository's ``Dockerfile`` built on that base.
- ``pause_image()``: the pod sandboxes' pause program, static Go (``tests/images/pause``).
- ``build_image()``: any Containerfile and context, e.g. an image ``FROM`` the operator's
  (pass an ``Image`` as a build argument).

Each image is named ``ducklake.test/<name>:<12 hex digits of the hash of its inputs>``
(``.test`` is a reserved domain: no registry can serve that name, so nothing ever pulls it)
and saved as a docker-archive, which ``ctr -n k8s.io images import`` (containerd 1.6),
``docker load`` and ``podman load`` all read, under that name (its manifest.json carries
it). Its layers are not compressed: saving the operator's image takes 6 s instead of 37 s as
an oci-archive (gzip), and importing it needs no gunzip; the cost is disk (1.2 GB, not 0.6).
A later call with the same inputs returns the cached archive at once; buildah's storage,
whose layers make a code-only change a quick rebuild, sits beside the archives under
``~/.cache/ducklake-operator/images/``. Every buildah command runs in a mount namespace of
its own, so no mount outlives it, even when it is killed. Builds need root.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
RECIPES = ROOT / "tests" / "images"
REGISTRY = "ducklake.test"
# what the Dockerfile copies: the image's inputs besides the Dockerfile itself
OPERATOR_INPUTS = ("pyproject.toml", "README.md", "docker", "operator", "jobs")
# by-products of running and building the code in the checkout, never inputs
_IGNORED_DIRS = {"__pycache__", ".pytest_cache", ".mypy_cache"}
_IGNORED_SUFFIXES = (".pyc", ".egg-info")
# the host's CA bundle (it may intercept TLS): RUN steps see it in place of the base's own
# bundle, bound read-only for the build, never stored in a layer
HOST_CA = Path("/etc/ssl/certs/ca-certificates.crt")
DEFAULT_MIRRORS = ("http://deb.debian.org/debian", "http://deb.debian.org/debian-security")
_TAIL_LINES = 40
KEEP_UNUSED_SECONDS = 3600
STORAGE_LIMIT = 12_000_000_000  # bytes of buildah's storage past which older layers go


@dataclass(frozen=True)
class Image:
    ref: str  # ducklake.test/<name>:<hash12>
    archive: Path  # docker-archive of ref, for `ctr images import`


class ImageBuildError(RuntimeError):
    pass


def cache_root() -> Path:
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "ducklake-operator" / "images"


# -- inputs and their hash (pure but for reading the files) -----------------------------


def context_files(root: Path, names: Sequence[str] | None = None) -> dict[str, Path]:
    """The files of a build context by their path inside it: all of ``root``, or only the
    named files and directories, without caches and build by-products."""
    found: dict[str, Path] = {}
    for top in sorted(names) if names is not None else [""]:
        start = root / top
        if not start.is_dir():
            if not start.exists():
                raise ImageBuildError(f"{start} is missing: it is an input of the image")
            found[top] = start
            continue
        for directory, dirs, files in os.walk(start):
            dirs[:] = sorted(d for d in dirs if d not in _IGNORED_DIRS and not d.endswith(_IGNORED_SUFFIXES))
            for file in sorted(files):
                if not file.endswith(_IGNORED_SUFFIXES):
                    path = Path(directory) / file
                    found[path.relative_to(root).as_posix()] = path
    return found


def inputs_digest(parts: Mapping[str, bytes], files: Mapping[str, Path]) -> str:
    """sha256 of named byte strings and of files (path in the context, executable bit,
    symlink target or content): what decides whether a cached image is still the one."""
    h = hashlib.sha256()
    for name in sorted(parts):
        h.update(json.dumps(["part", name, len(parts[name])]).encode() + parts[name])
    for rel in sorted(files):
        path = files[rel]
        if path.is_symlink():
            content, kind = os.readlink(path).encode(), "link"
        else:
            content, kind = path.read_bytes(), "exec" if os.access(path, os.X_OK) else "file"
        h.update(json.dumps([kind, rel, len(content)]).encode() + content)
    return h.hexdigest()


def debian_mirrors(sources: str) -> tuple[str, str] | None:
    """The host's bookworm and bookworm-security mirrors from apt sources, in deb822
    (``.sources``) or one-line (``sources.list``) form; None when it names neither."""
    main = security = None
    stanzas: list[dict[str, str]] = [{}]
    for line in sources.splitlines():
        if line.lstrip().startswith("#"):  # a comment, also inside a deb822 stanza
            continue
        line = line.split("#", 1)[0].rstrip()
        if line.startswith("deb "):  # one-line: deb [options] URI SUITE COMPONENTS...
            words = [w for w in line.split()[1:] if "=" not in w and w not in ("[", "]") and not w.startswith("[")]
            if len(words) >= 2:
                stanzas.append({"types": "deb", "uris": words[0], "suites": words[1]})
                stanzas.append({})
        elif not line.strip():
            stanzas.append({})
        elif ":" in line and not line[0].isspace():
            key, value = line.split(":", 1)
            stanzas[-1][key.strip().lower()] = value.strip()
    for stanza in stanzas:
        if "deb" not in stanza.get("types", "").split() or not stanza.get("uris"):
            continue
        uri, suites = stanza["uris"].split()[0].rstrip("/"), stanza.get("suites", "").split()
        if "bookworm" in suites and main is None:
            main = uri
        if "bookworm-security" in suites and security is None:
            security = uri
    return (main, security) if main and security else None


def host_mirrors() -> tuple[str, str]:
    """The Debian mirrors this machine's apt uses (a stand-in built elsewhere gets Debian's)."""
    apt = Path("/etc/apt")
    texts = [
        p.read_text()
        for p in [apt / "sources.list", *sorted((apt / "sources.list.d").glob("*"))]
        if p.is_file() and p.name.endswith((".list", ".sources"))
    ]
    return debian_mirrors("\n\n".join(texts)) or DEFAULT_MIRRORS


# -- buildah --------------------------------------------------------------------------


def _buildah_command(*args: str) -> list[str]:
    storage = cache_root() / "storage"
    return [
        "unshare",
        "--mount",
        "--propagation",
        "private",
        "buildah",
        "--root",
        str(storage / "root"),
        "--runroot",
        str(storage / "runroot"),
        "--storage-driver",
        "overlay",
        *args,
    ]


def _run_logged(
    command: list[str],
    log: Path,
    what: str,
    timeout: float = 3600,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
) -> None:
    """Runs a build step with its output appended to ``log``; on failure, an error with the
    output's last lines."""
    with open(log, "ab") as sink:
        sink.write(f"$ {' '.join(command)}\n".encode())
        sink.flush()
        done = subprocess.run(command, stdout=sink, stderr=subprocess.STDOUT, timeout=timeout, cwd=cwd, env=env)
    if done.returncode != 0:
        tail = "\n".join(log.read_text(errors="replace").splitlines()[-_TAIL_LINES:])
        raise ImageBuildError(f"{what} failed (exit {done.returncode}); full log {log}:\n{tail}")


def buildah(*args: str, timeout: float = 600) -> str:
    """One buildah command on the tests' storage; its stdout."""
    done = subprocess.run(_buildah_command(*args), capture_output=True, text=True, timeout=timeout)
    if done.returncode != 0:
        raise ImageBuildError(f"buildah {' '.join(args)} failed: {done.stderr.strip()[-4000:]}")
    return done.stdout


@contextmanager
def _locked() -> Iterator[None]:
    """One build at a time on this machine: buildah's cache and the archives are shared."""
    cache_root().mkdir(parents=True, exist_ok=True)
    with open(cache_root() / "lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def _stored(image: Image) -> None:
    """The image in buildah's storage (for FROM, or to run it): loaded from its archive when
    the storage was cleared since it was built."""
    try:
        buildah("inspect", "--type", "image", image.ref)
    except ImageBuildError:
        buildah("pull", "--quiet", f"docker-archive:{image.archive}", timeout=1800)


def _forget_older(name: str, keep: Image) -> None:
    """Older images of a name go once unused for an hour (a cache hit marks an archive used:
    another test process may be about to import one): their archives, their tags in the
    storage. The storage's layers stay, for the layer cache, unless it outgrew its limit."""
    for old in (cache_root() / "archives").glob(f"{name}-*.tar"):
        if old != keep.archive and time.time() - old.stat().st_mtime > KEEP_UNUSED_SECONDS:
            old.unlink()
    refs = buildah("images", "--format", "{{.Name}}:{{.Tag}}", "--noheading").split()
    for ref in refs:
        tag = ref.rpartition(":")[2]
        if ref.startswith(f"{REGISTRY}/{name}:") and not (cache_root() / "archives" / f"{name}-{tag}.tar").exists():
            try:
                buildah("rmi", ref)
            except ImageBuildError:  # in use by a container of a run (run_in_image) right now
                pass
    storage = subprocess.run(["du", "-sb", str(cache_root() / "storage")], capture_output=True, text=True)
    if storage.returncode == 0 and int(storage.stdout.split()[0]) > STORAGE_LIMIT:
        buildah("rmi", "--prune")  # the untagged: layers of older builds, and the layer cache


def _build(
    name: str,
    key: str,
    containerfile: Path,
    make_context: Callable[[Path, Path], None],
    build_args: Mapping[str, str | Image],
) -> Image:
    """The image of this key: from the cache, or built in a fresh context that
    ``make_context(directory, log)`` fills."""
    image = Image(f"{REGISTRY}/{name}:{key[:12]}", cache_root() / "archives" / f"{name}-{key[:12]}.tar")
    if image.archive.exists():
        os.utime(image.archive)  # in use: _forget_older keeps it
        return image
    with _locked():
        if image.archive.exists():  # built meanwhile by another process
            return image
        for value in build_args.values():
            if isinstance(value, Image):
                _stored(value)
        (cache_root() / "logs").mkdir(parents=True, exist_ok=True)
        (cache_root() / "archives").mkdir(parents=True, exist_ok=True)
        log = cache_root() / "logs" / f"{name}.log"
        log.write_text("")
        print(f"images: building {image.ref} (log {log})", file=sys.stderr)
        start = time.monotonic()
        with tempfile.TemporaryDirectory(prefix=f"{name}-", dir=cache_root()) as work:
            context = Path(work) / "context"
            context.mkdir()
            make_context(context, log)
            volumes = ["--volume", f"{HOST_CA}:{HOST_CA}:ro"] if HOST_CA.is_file() else []
            args = [f"{k}={v.ref if isinstance(v, Image) else v}" for k, v in sorted(build_args.items())]
            _run_logged(
                _buildah_command(
                    "bud",
                    "--layers",
                    "--force-rm",
                    "--pull=never",
                    "--network=host",
                    *volumes,
                    *(a for arg in args for a in ("--build-arg", arg)),
                    "--file",
                    str(containerfile),
                    "--tag",
                    image.ref,
                    str(context),
                ),
                log,
                f"building {image.ref}",
            )
            archive = Path(work) / "image.tar"
            _run_logged(
                _buildah_command("push", "--quiet", image.ref, f"docker-archive:{archive}:{image.ref}"),
                log,
                f"saving {image.ref}",
            )
            os.replace(archive, image.archive)
        _forget_older(name, image)
        print(f"images: built {image.ref} in {time.monotonic() - start:.0f} s", file=sys.stderr)
    return image


def _copy_files(files: Mapping[str, Path]) -> Callable[[Path, Path], None]:
    def copy(context: Path, log: Path) -> None:
        for rel, source in files.items():
            target = context / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            if source.is_symlink():
                target.symlink_to(os.readlink(source))
            else:
                shutil.copy2(source, target)

    return copy


def build_image(
    name: str, containerfile: Path, context: Path, build_args: Mapping[str, str | Image] | None = None
) -> Image:
    """An image from a Containerfile and a context directory (all of it is an input),
    cached by the hash of both and of the build arguments (an ``Image`` passes its ref)."""
    files = context_files(context)
    return _build_files(name, containerfile, files, build_args or {})


def _build_files(
    name: str, containerfile: Path, files: Mapping[str, Path], build_args: Mapping[str, str | Image]
) -> Image:
    parts = {
        "containerfile": containerfile.read_bytes(),
        "build_args": json.dumps(
            {k: v.ref if isinstance(v, Image) else v for k, v in build_args.items()}, sort_keys=True
        ).encode(),
    }
    return _build(name, inputs_digest(parts, files), containerfile, _copy_files(files), build_args)


# -- the tests' images ------------------------------------------------------------------


def base_image() -> Image:
    """The stand-in for python:3.11-slim-bookworm: debootstrap's bookworm with Debian's Python
    (3 minutes the first time on this machine)."""
    recipe = RECIPES / "python-base"
    mirror, security = host_mirrors()
    files = context_files(recipe)
    key = inputs_digest({"mirrors": f"{mirror} {security}".encode()}, files)

    def make_rootfs(context: Path, log: Path) -> None:
        rootfs = context.parent / "rootfs"
        _run_logged(
            [
                "unshare",
                "--mount",
                "--propagation",
                "private",
                "bash",
                str(recipe / "rootfs.sh"),
                str(rootfs),
                mirror,
                security,
            ],
            log,
            "debootstrap",
        )
        _run_logged(
            ["tar", "--numeric-owner", "--xattrs", "-C", str(rootfs), "-cf", str(context / "rootfs.tar"), "."],
            log,
            "packing the root filesystem",
        )
        shutil.rmtree(rootfs)

    return _build("python-base", key, recipe / "Containerfile", make_rootfs, {})


def operator_image() -> Image:
    """The repository's Dockerfile on the stand-in base."""
    files = context_files(ROOT, OPERATOR_INPUTS)
    return _build_files("ducklake-operator", ROOT / "Dockerfile", files, {"BASE_IMAGE": base_image()})


def pause_image() -> Image:
    """The pod sandboxes' image: a static Go program that waits for SIGTERM or SIGINT."""
    recipe = RECIPES / "pause"
    files = context_files(recipe)
    go = subprocess.run(["go", "env", "GOVERSION"], capture_output=True, text=True, check=True).stdout.strip()
    key = inputs_digest({"go": go.encode()}, files)

    def compile_pause(context: Path, log: Path) -> None:
        env = {**os.environ, "CGO_ENABLED": "0", "GOFLAGS": "-mod=readonly -trimpath -buildvcs=false"}
        command = ["go", "build", "-ldflags=-s -w", "-o", str(context / "pause"), "."]
        _run_logged(command, log, "building the pause program", timeout=600, cwd=recipe, env=env)

    return _build("pause", key, recipe / "Containerfile", compile_pause, {})


# -- running an image as a pod runs it ----------------------------------------------------


def _archive_json(archive: tarfile.TarFile, name: str) -> Any:
    member = archive.extractfile(name)
    if member is None:
        raise ImageBuildError(f"{archive.name!r} holds no file {name}: not a docker-archive")
    return json.load(member)


def _archive_manifest(archive: tarfile.TarFile) -> dict[str, Any]:
    (manifest,) = _archive_json(archive, "manifest.json")  # one image per archive
    return manifest


def image_config(image: Image) -> dict[str, Any]:
    """The image's config as its archive holds it (User, Env, Entrypoint, Cmd, WorkingDir, ...)."""
    with tarfile.open(image.archive) as archive:
        return _archive_json(archive, _archive_manifest(archive)["Config"])["config"]


def image_size(image: Image) -> int:
    """Bytes of the image's layers uncompressed: what ``docker images`` and ``crictl images``
    call its size."""
    with tarfile.open(image.archive) as archive:
        return sum(archive.getmember(layer).size for layer in _archive_manifest(archive)["Layers"])


def run_in_image(
    image: Image,
    command: Sequence[str] | None = None,
    *,
    env: Mapping[str, str] | None = None,
    mounts: Mapping[str, Path] | None = None,
    timeout: float = 300,
) -> subprocess.CompletedProcess[str]:
    """Runs the image as the launcher's pods do: its entrypoint with ``command`` (or its own
    command), its user as runAsUser and runAsGroup, no capabilities, no new privileges, a
    read-only root filesystem with only a fresh /tmp writable; through runc, the runtime the
    node's containerd uses. ``mounts``: host directories bound read-only, by their path inside."""
    config = image_config(image)
    _stored(image)
    user = str(config.get("User") or "0")
    uid, _, gid = user.partition(":")
    if not uid.isdigit() or (gid and not gid.isdigit()):
        raise ValueError(f"{image.ref} runs as {user!r}: only numeric users, as Kubernetes' runAsUser")
    args = (config.get("Entrypoint") or []) + (list(command) if command is not None else config.get("Cmd") or [])
    environment = (config.get("Env") or []) + [f"{k}={v}" for k, v in (env or {}).items()]
    with tempfile.TemporaryDirectory(prefix="run-", dir=cache_root()) as bundle:
        spec = runtime_spec(args, environment, int(uid), int(gid or uid), str(config.get("WorkingDir") or "/"))
        spec["mounts"] += [  # type: ignore[operator]
            {"destination": inside, "type": "bind", "source": str(host), "options": ["rbind", "ro"]}
            for inside, host in (mounts or {}).items()
        ]
        Path(bundle, "config.json").write_text(json.dumps(spec))
        Path(bundle, "rootfs").mkdir()
        script = (
            'set -eu; c=$("$@" from --pull=never --quiet "$REF"); trap \'"$@" rm "$c" >/dev/null\' EXIT; '
            'mount --bind "$("$@" mount "$c")" "$BUNDLE/rootfs"; '
            'runc --root "$BUNDLE/state" run --bundle "$BUNDLE" "ducklake-test-$$" </dev/null'
        )
        storage = _buildah_command()[4:]  # buildah and its storage flags, inside this one namespace
        return subprocess.run(
            ["unshare", "--mount", "--propagation", "private", "bash", "-c", script, "run", *storage],
            env={**os.environ, "REF": image.ref, "BUNDLE": bundle},
            capture_output=True,
            text=True,
            timeout=timeout,
        )


def runtime_spec(args: Sequence[str], env: Sequence[str], uid: int, gid: int, cwd: str) -> dict[str, object]:
    """An OCI runtime spec as the kubelet's containerd writes it for a container with
    readOnlyRootFilesystem, capabilities dropped and allowPrivilegeEscalation false."""
    mounts = [
        {"destination": "/proc", "type": "proc", "source": "proc"},
        {
            "destination": "/dev",
            "type": "tmpfs",
            "source": "tmpfs",
            "options": ["nosuid", "strictatime", "mode=755", "size=65536k"],
        },
        {
            "destination": "/dev/pts",
            "type": "devpts",
            "source": "devpts",
            "options": ["nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620"],
        },
        {
            "destination": "/dev/shm",
            "type": "tmpfs",
            "source": "shm",
            "options": ["nosuid", "noexec", "nodev", "mode=1777", "size=65536k"],
        },
        {"destination": "/dev/mqueue", "type": "mqueue", "source": "mqueue", "options": ["nosuid", "noexec", "nodev"]},
        {"destination": "/sys", "type": "sysfs", "source": "sysfs", "options": ["nosuid", "noexec", "nodev", "ro"]},
        {"destination": "/tmp", "type": "tmpfs", "source": "tmpfs", "options": ["nosuid", "nodev", "mode=1777"]},
    ]
    return {
        "ociVersion": "1.0.2",
        "process": {
            "user": {"uid": uid, "gid": gid},
            "args": list(args),
            "env": list(env),
            "cwd": cwd,
            "capabilities": {"bounding": [], "effective": [], "permitted": []},
            "noNewPrivileges": True,
        },
        "root": {"path": "rootfs", "readonly": True},
        "hostname": "ducklake-test",
        "mounts": mounts,
        "linux": {
            # the host's network: a command here may reach the tests' servers on loopback
            "namespaces": [{"type": t} for t in ("pid", "ipc", "uts", "mount")],
            "maskedPaths": ["/proc/kcore", "/proc/keys", "/proc/timer_list", "/sys/firmware"],
            "readonlyPaths": ["/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"],
        },
    }


def main(argv: Sequence[str]) -> int:
    builders = {"base": base_image, "operator": operator_image, "pause": pause_image}
    if not argv or any(name not in builders for name in argv):
        print(
            f"usage: build.sh {{{'|'.join(builders)}}}...: builds (or finds cached) and prints ref and archive",
            file=sys.stderr,
        )
        return 2
    for name in argv:
        image = builders[name]()
        print(image.ref, image.archive)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
