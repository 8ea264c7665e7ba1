#!/usr/bin/env bash
# The root filesystem of the tests' stand-in for python:3.11-slim-bookworm, which no registry
# here serves: Debian bookworm (minbase) with Debian's Python 3.11, pip and venv, `python` and
# `pip` on the PATH and pip allowed to install system-wide, as in the official image.
# Usage: rootfs.sh TARGET MIRROR SECURITY_MIRROR (the apt mirrors the host uses). Run as root,
# inside a mount namespace of its own (the caller's unshare), so nothing stays mounted.
set -euo pipefail
target="$1" mirror="$2" security="$3"

debootstrap --variant=minbase --include=ca-certificates,netbase,tzdata bookworm "$target" "$mirror" >&2
# slim as Debian's -slim images, which the official image is built on (debuerreotype's
# slimify): no documentation, manual pages or translations, now or from later installs
cat >"$target/etc/dpkg/dpkg.cfg.d/docker-slim" <<'SLIM'
path-exclude /usr/share/doc/*
path-include /usr/share/doc/*/copyright
path-exclude /usr/share/groff/*
path-exclude /usr/share/info/*
path-exclude /usr/share/linda/*
path-exclude /usr/share/lintian/overrides/*
path-exclude /usr/share/locale/*
path-exclude /usr/share/man/*
path-include /usr/share/locale/locale.alias
SLIM
find "$target/usr/share/doc" -mindepth 1 -not -name copyright -not -type d -delete
find "$target/usr/share/doc" -mindepth 1 -depth -type d -empty -delete
rm -rf "$target"/usr/share/{groff,info,linda,man}/* "$target"/usr/share/lintian/overrides/*
find "$target/usr/share/locale" -mindepth 1 -maxdepth 1 -not -name locale.alias -exec rm -rf {} +
# the official image's sources: bookworm, its updates and security
rm -f "$target/etc/apt/sources.list"
cat >"$target/etc/apt/sources.list.d/debian.sources" <<SOURCES
Types: deb
URIs: $mirror
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: $security
Suites: bookworm-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SOURCES
cp /etc/resolv.conf "$target/etc/resolv.conf"
mount -t proc proc "$target/proc"
in_root() { chroot "$target" env DEBIAN_FRONTEND=noninteractive LANG=C.UTF-8 "$@"; }
in_root apt-get update -qq
in_root apt-get -y -qq upgrade >&2
in_root apt-get install -y -qq --no-install-recommends python3 python3-pip python3-venv >&2
in_root apt-get clean
umount "$target/proc"

# python and pip as the official image names them; pip may install into the system (Debian
# marks its Python as externally managed)
ln -s /usr/bin/python3 "$target/usr/local/bin/python"
ln -s /usr/bin/pip3 "$target/usr/local/bin/pip"
rm -f "$target"/usr/lib/python3.*/EXTERNALLY-MANAGED
# nothing of the host or of the install stays: container runtimes provide resolv.conf and hostname
rm -rf "$target"/var/lib/apt/lists/* "$target"/var/cache/apt/* "$target"/var/log/apt/* "$target"/var/log/dpkg.log
: >"$target/etc/resolv.conf"
: >"$target/etc/hostname"
chmod 644 "$target/etc/resolv.conf" "$target/etc/hostname"
