"""What decides the tests' images (support.images): the apt mirrors the stand-in base is
built from, and the files whose hash names an image."""

from __future__ import annotations

from pathlib import Path

from support.images import context_files, debian_mirrors, inputs_digest

DEB822 = """\
Types: deb
# http://snapshot.debian.org/archive/debian/20250520T000000Z
URIs: http://mirror.example/debian
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb-src
URIs: http://sources.example/debian
Suites: bookworm-security

Types: deb
URIs: http://mirror.example/debian-security/
Suites: bookworm-security
Components: main
"""


def test_the_mirrors_come_from_deb822_and_one_line_sources() -> None:
    assert debian_mirrors(DEB822) == ("http://mirror.example/debian", "http://mirror.example/debian-security")
    one_line = (
        "deb [signed-by=/usr/share/keyrings/k.gpg] http://m.example/debian bookworm main\n"
        "# deb http://old.example/debian-security bookworm-security main\n"
        "deb http://m.example/debian-security bookworm-security main\n"
    )
    assert debian_mirrors(one_line) == ("http://m.example/debian", "http://m.example/debian-security")
    assert debian_mirrors("deb http://archive.ubuntu.com/ubuntu jammy main\n") is None


def test_an_images_inputs_are_its_files_not_their_by_products(tmp_path: Path) -> None:
    (tmp_path / "pkg" / "__pycache__").mkdir(parents=True)
    (tmp_path / "pkg" / "__pycache__" / "m.cpython-311.pyc").write_bytes(b"\0")
    (tmp_path / "pkg" / "x.egg-info").mkdir()
    (tmp_path / "pkg" / "m.py").write_text("x = 1\n")
    (tmp_path / "other.txt").write_text("not named\n")
    (tmp_path / "top.toml").write_text("")
    files = context_files(tmp_path, ["pkg", "top.toml"])
    assert sorted(files) == ["pkg/m.py", "top.toml"]
    key = inputs_digest({"containerfile": b"FROM scratch"}, files)
    (tmp_path / "pkg" / "__pycache__" / "m.cpython-311.pyc").write_bytes(b"\1")
    assert inputs_digest({"containerfile": b"FROM scratch"}, context_files(tmp_path, ["pkg", "top.toml"])) == key
    (tmp_path / "pkg" / "m.py").chmod(0o755)  # the executable bit is content too
    assert inputs_digest({"containerfile": b"FROM scratch"}, files) != key
    assert inputs_digest({"containerfile": b"FROM other"}, files) != inputs_digest(
        {"containerfile": b"FROM scratch"}, files
    )
