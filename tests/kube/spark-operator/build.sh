#!/usr/bin/env bash
# The Kubeflow Spark Operator for the tests, from its Go module pinned in go.mod, once per
# machine and version, under ~/.cache/ducklake-operator/spark-operator/<version>-<hash of the inputs>/:
#   crds/  the module's CRDs (config/crd/bases)
#   chart/ its Helm chart (charts/spark-operator-chart)
#   bin/spark-operator  its binary (cmd/operator: `spark-operator controller start ...`), static
#          (CGO_ENABLED=0) so it runs in any image
# Prints that directory. `build.sh manifests` copies the CRDs and the chart only (a second,
# no compiling); the binary's first build takes minutes on 2 cores; later runs return at once.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$HERE"
MODULE=github.com/kubeflow/spark-operator/v2
VERSION="$(awk -v m="$MODULE" '$1 == m || ($1 == "require" && $2 == m) {print $NF; exit}' go.mod)"
KEY="$(cat go.mod go.sum tools.go build.sh | sha256sum | cut -c1-12)"
OUT="${XDG_CACHE_HOME:-$HOME/.cache}/ducklake-operator/spark-operator/$VERSION-$KEY"
want_binary=true
case "${1:-}" in
  "") ;;
  manifests) want_binary=false ;;
  *) echo "usage: build.sh [manifests]" >&2; exit 2 ;;
esac
if [ -d "$OUT/crds" ] && [ -d "$OUT/chart" ] && { ! $want_binary || [ -x "$OUT/bin/spark-operator" ]; }; then
  echo "$OUT"; exit 0
fi
command -v go >/dev/null || { echo "build.sh: the Go toolchain is needed for the Spark Operator (https://go.dev/dl)" >&2; exit 1; }
export GOFLAGS="-mod=readonly -trimpath -buildvcs=false" CGO_ENABLED=0
SRC="$(go mod download -json "$MODULE" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')"
mkdir -p "$OUT"
# Each part is made beside its place and renamed into it, so a part that is there is whole.
copy() {  # <directory in the module> <name in $OUT>
  [ -d "$OUT/$2" ] && return
  [ -d "$SRC/$1" ] || { echo "build.sh: $MODULE@$VERSION has no $1 ($SRC)" >&2; exit 1; }
  local tmp="$OUT/.$2.tmp.$$"
  rm -rf "$tmp"; cp -r "$SRC/$1" "$tmp"
  chmod -R u+w "$tmp"  # the module cache is read-only; the copy must stay removable
  mv -T "$tmp" "$OUT/$2" 2>/dev/null || rm -rf "$tmp"  # another run put it there meanwhile
}
copy config/crd/bases crds
copy charts/spark-operator-chart chart
if $want_binary && [ ! -x "$OUT/bin/spark-operator" ]; then
  start=$(date +%s)
  echo "build.sh: building the Spark Operator $VERSION into $OUT (first run on this machine: minutes)" >&2
  pkg=k8s.io/component-base/version  # what the module's Makefile stamps
  LDFLAGS="-s -w -X $pkg.gitVersion=$VERSION -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z"
  mkdir -p "$OUT/bin"
  go build -ldflags "$LDFLAGS" -o "$OUT/bin/.spark-operator.tmp.$$" "$MODULE/cmd/operator"
  mv "$OUT/bin/.spark-operator.tmp.$$" "$OUT/bin/spark-operator"
  echo "build.sh: built in $(( $(date +%s) - start )) s" >&2
fi
echo "$OUT"
