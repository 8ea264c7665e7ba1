#!/usr/bin/env bash
# The Kubeflow Spark Operator for the tests, from its Go module pinned in go.mod, once per
# machine and version: its binary (bin/spark-operator, static, so it runs in any image), its
# CRDs (crds/, the module's config/crd/bases) and its Helm chart (chart/, the module's
# charts/spark-operator-chart), cached under
# ~/.cache/ducklake-operator/spark-operator/<version>-<hash of the inputs>/. Prints that directory.
# The first build takes minutes on 2 cores; later runs return at once.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$HERE"
MODULE=github.com/kubeflow/spark-operator/v2
VERSION="$(awk -v m="$MODULE" '$1 == m || ($1 == "require" && $2 == m) {print $NF; exit}' go.mod)"
KEY="$(cat go.mod go.sum tools.go build.sh | sha256sum | cut -c1-12)"
OUT="${XDG_CACHE_HOME:-$HOME/.cache}/ducklake-operator/spark-operator/$VERSION-$KEY"
if [ -x "$OUT/bin/spark-operator" ] && [ -d "$OUT/crds" ] && [ -d "$OUT/chart" ]; then
  echo "$OUT"; exit 0
fi
command -v go >/dev/null || { echo "build.sh: the Go toolchain is needed to build the Spark Operator (https://go.dev/dl)" >&2; exit 1; }
export GOFLAGS="-mod=readonly -trimpath -buildvcs=false" CGO_ENABLED=0
SRC="$(go mod download -json "$MODULE" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')"
for d in config/crd/bases charts/spark-operator-chart; do
  [ -d "$SRC/$d" ] || { echo "build.sh: $MODULE@$VERSION has no $d ($SRC)" >&2; exit 1; }
done
pkg=k8s.io/component-base/version  # what the module's Makefile stamps
LDFLAGS="-s -w -X $pkg.gitVersion=$VERSION -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z"
tmp="$OUT.tmp.$$"; rm -rf "$tmp"; mkdir -p "$tmp/bin"
trap 'rm -rf "$tmp"' EXIT
start=$(date +%s)
echo "build.sh: building the Spark Operator $VERSION into $OUT (first run on this machine: minutes)" >&2
go build -ldflags "$LDFLAGS" -o "$tmp/bin/spark-operator" "$MODULE/cmd/operator"
cp -r "$SRC/config/crd/bases" "$tmp/crds"
cp -r "$SRC/charts/spark-operator-chart" "$tmp/chart"
chmod -R u+w "$tmp"  # the module cache is read-only; the copies must stay removable
rm -rf "$OUT"; mv "$tmp" "$OUT"
echo "build.sh: built in $(( $(date +%s) - start )) s" >&2
echo "$OUT"
