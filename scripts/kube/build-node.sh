#!/usr/bin/env bash
# Builds, once, what a single-node cluster needs on top of scripts/kube/build.sh's control plane:
#   kubelet, kube-controller-manager, kube-scheduler, kube-proxy  from k8s.io/kubernetes (same wrapper
#                                                                  module recipe as build.sh)
#   coredns                                                        from github.com/coredns/coredns
#   pause                                                          scripts/cluster/pause (our own, Go)
# into .cache/kube/bin. Stamps are separate from build.sh's (.node-<name>-<version>-r<RECIPE>), so
# changing this recipe never rebuilds the kube-apiserver other tests rely on.
# Env: KUBE_VERSION, COREDNS_VERSION, GO, KUBE_BUILD_JOBS, KUBE_BIN_DIR, KUBE_WORK_DIR (as build.sh).
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
KUBE_VERSION=${KUBE_VERSION:-v1.34.4}
COREDNS_VERSION=${COREDNS_VERSION:-v1.12.4}
RECIPE=1
OUT=${KUBE_BIN_DIR:-$ROOT/.cache/kube/bin}
WORK=${KUBE_WORK_DIR:-$ROOT/.cache/kube/work}
JOBS=${KUBE_BUILD_JOBS:-2}
mkdir -p "$OUT"
# the same lock as build.sh: both fill the same Go build cache and folder
if command -v flock >/dev/null 2>&1; then
  exec 9>"$OUT/.build.lock"
  flock 9
fi
stamp() { echo "$OUT/.node-$1-$2-r$RECIPE"; }
have() { [ -x "$OUT/$1" ] && [ -f "$(stamp "$1" "$2")" ]; }
kube_need=()
for b in kubelet kube-controller-manager kube-scheduler kube-proxy; do
  have "$b" "$KUBE_VERSION" || kube_need+=("$b")
done
need_coredns=1; have coredns "$COREDNS_VERSION" && need_coredns=0
pause_sum=$(sha256sum scripts/cluster/pause/main.go | cut -c1-12)
need_pause=1; have pause "$pause_sum" && need_pause=0
if [ ${#kube_need[@]} = 0 ] && [ $need_coredns = 0 ] && [ $need_pause = 0 ]; then exit 0; fi

GO=${GO:-$(command -v go || true)}
[ -z "$GO" ] && [ -x /usr/local/go/bin/go ] && GO=/usr/local/go/bin/go
if [ -z "$GO" ]; then
  echo "kube/build-node: Go (>= 1.24) is needed; install it or set GO=/path/to/go" >&2
  exit 3
fi
export GOFLAGS=-mod=mod CGO_ENABLED=0 GOTOOLCHAIN=${GOTOOLCHAIN:-auto}
LDFLAGS="-s -w"
start=$(date +%s)

if [ $need_pause = 1 ]; then
  (cd scripts/cluster/pause && GOFLAGS="" "$GO" build -trimpath -ldflags "$LDFLAGS" -o "$OUT/pause" .)
  rm -f "$OUT"/.node-pause-* && touch "$(stamp pause "$pause_sum")"
fi

if [ ${#kube_need[@]} -gt 0 ]; then
  echo "kube/build-node: building ${kube_need[*]} $KUBE_VERSION (go: $("$GO" version))" >&2
  staging_version="v0.${KUBE_VERSION#v1.}"
  minor=$(echo "$KUBE_VERSION" | cut -d. -f2)
  KUBE_LDFLAGS="$LDFLAGS"
  for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    KUBE_LDFLAGS="$KUBE_LDFLAGS -X $pkg.gitVersion=$KUBE_VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z"
  done
  rm -rf "$WORK/node" && mkdir -p "$WORK/node"
  (
    cd "$WORK/node"
    "$GO" mod init wrapper/node >/dev/null 2>&1
    gomod=$(GOFLAGS="" "$GO" mod download -json "k8s.io/kubernetes@$KUBE_VERSION" | sed -n 's/.*"GoMod": "\(.*\)".*/\1/p')
    [ -f "$gomod" ] || { echo "kube/build-node: could not download k8s.io/kubernetes@$KUBE_VERSION" >&2; exit 1; }
    grep -oE 'k8s\.io/[a-z0-9./-]+ => \./staging/src/k8s\.io/[a-z0-9./-]+' "$gomod" | awk '{print $1}' | sort -u \
      | while read -r m; do "$GO" mod edit -replace "$m=$m@$staging_version"; done
    "$GO" mod edit -require "k8s.io/kubernetes@$KUBE_VERSION"
    "$GO" get "k8s.io/kubernetes@$KUBE_VERSION"
    for b in "${kube_need[@]}"; do
      "$GO" build -p "$JOBS" -trimpath -ldflags "$KUBE_LDFLAGS" -o "$OUT/$b" "k8s.io/kubernetes/cmd/$b"
      rm -f "$OUT"/.node-"$b"-* && touch "$(stamp "$b" "$KUBE_VERSION")"
      echo "kube/build-node: $b done after $(( $(date +%s) - start ))s" >&2
    done
  )
fi

if [ $need_coredns = 1 ]; then
  echo "kube/build-node: building coredns $COREDNS_VERSION" >&2
  rm -rf "$WORK/coredns" && mkdir -p "$WORK/coredns"
  (
    cd "$WORK/coredns"
    "$GO" mod init wrapper/coredns >/dev/null 2>&1
    "$GO" get "github.com/coredns/coredns@$COREDNS_VERSION"
    "$GO" build -p "$JOBS" -trimpath -ldflags "$LDFLAGS" -o "$OUT/coredns" github.com/coredns/coredns
  )
  rm -f "$OUT"/.node-coredns-* && touch "$(stamp coredns "$COREDNS_VERSION")"
fi
echo "kube/build-node: node binaries ready in $OUT after $(( $(date +%s) - start ))s" >&2
