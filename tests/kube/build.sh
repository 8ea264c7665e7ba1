#!/usr/bin/env bash
# Build the test cluster's binaries (etcd, kube-apiserver, kube-controller-manager, the node's
# kube-scheduler, kubelet and kube-proxy, and the kubectl of the same release) from the Go
# modules pinned in go.mod, and the
# node's cluster DNS, CoreDNS, from coredns/go.mod (a module of its own: its Kubernetes client
# is not the one k8s.io/kubernetes pins), once per machine and version: they are cached under
# ~/.cache/ducklake-operator/kube/<version>-<hash of the inputs>/. Prints the bin directory.
# The first build takes minutes on 2 cores; later runs return at once.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$HERE"
VERSION="$(awk '$1 == "k8s.io/kubernetes" || ($1 == "require" && $2 == "k8s.io/kubernetes") {print $NF; exit}' go.mod)"
KEY="$(cat go.mod go.sum etcd/main.go coredns/go.mod coredns/go.sum build.sh | sha256sum | cut -c1-12)"
OUT="${XDG_CACHE_HOME:-$HOME/.cache}/ducklake-operator/kube/$VERSION-$KEY"
# kubectl of the cluster's own release, not a distribution's: kubectl supports one minor
# version of skew, and before 1.34 it parsed the API server's whole OpenAPI document again for
# every object it applied (kubernetes/kubernetes#127095; cached since #132003)
COMMANDS=(kube-apiserver kube-controller-manager kube-scheduler kubelet kube-proxy kubectl)
built() { local c; for c in etcd coredns "${COMMANDS[@]}"; do [ -x "$OUT/bin/$c" ] || return 1; done; }
if built; then
  echo "$OUT/bin"; exit 0
fi
# one build at a time (the tests may ask from two places at once): the others wait, then find it
mkdir -p "$(dirname "$OUT")"
exec 9>"$(dirname "$OUT")/.build.lock"
flock 9
if built; then
  echo "$OUT/bin"; exit 0
fi
command -v go >/dev/null || { echo "build.sh: the Go toolchain is needed to build the test cluster (https://go.dev/dl)" >&2; exit 1; }
minor="${VERSION#v1.}"; minor="${minor%%.*}"
LDFLAGS="-s -w"
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do  # kubectl's client version: client-go's
  LDFLAGS+=" -X $pkg.gitVersion=$VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z"
done
tmp="$OUT.tmp.$$"; rm -rf "$tmp"; mkdir -p "$tmp/bin"
start=$(date +%s)
echo "build.sh: building the test cluster $VERSION into $OUT (first run on this machine: minutes)" >&2
export GOFLAGS="-mod=readonly -trimpath -buildvcs=false"
go build -ldflags "$LDFLAGS" -o "$tmp/bin/etcd" ./etcd
for c in "${COMMANDS[@]}"; do
  go build -ldflags "$LDFLAGS" -o "$tmp/bin/$c" "k8s.io/kubernetes/cmd/$c"
done
(cd coredns && go build -ldflags "-s -w" -o "$tmp/bin/coredns" github.com/coredns/coredns)
rm -rf "$OUT"; mv "$tmp" "$OUT"
echo "build.sh: built in $(( $(date +%s) - start )) s" >&2
echo "$OUT/bin"
