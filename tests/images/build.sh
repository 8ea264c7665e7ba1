#!/usr/bin/env bash
# Builds the tests' images, or finds them cached: base (the stand-in for the Dockerfile's
# python:3.11-slim-bookworm), operator (the repository's Dockerfile on it), pause (the pod
# sandboxes'). Prints each image's reference and its docker-archive, which
# `ctr -n k8s.io images import ARCHIVE` loads. Needs root, buildah and debootstrap
# (scripts/setup installs them); the first operator build takes minutes.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
exec python3 -m support.images "$@"
