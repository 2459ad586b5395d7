#!/usr/bin/env bash
# Builds, once, what a single-node cluster needs on top of scripts/kube/build.sh's control plane:
#   kubelet, kube-controller-manager, kube-scheduler, kube-proxy  from k8s.io/kubernetes (same wrapper
#                                                                  module recipe as build.sh)
#   coredns                                                        from github.com/coredns/coredns
#   pause                                                          scripts/cluster/pause (our own, Go)
# into .cache/kube/bin. Stamps are separate from build.sh's (.node-<name>-<version>-r<RECIPE>), so
# changing this recipe never rebuilds the kube-apiserver other tests rely on.
# Env: KUBE_VERSION, COREDNS_VERSION, GO, KUBE_BUILD_JOBS, KUBE_BIN_DIR, KUBE_WORK_DIR,
# BUILD_NOOP_EXIT (as build.sh).
set -euo pipefail
cd "$(dirname "$0")/../.."
# shellcheck source=scripts/kube/lib.sh
. scripts/kube/lib.sh
COREDNS_VERSION=${COREDNS_VERSION:-v1.12.4}
RECIPE=1
kube_lock
stamp() { echo "$OUT/.node-$1-$2-r$RECIPE"; }
have() { [ -x "$OUT/$1" ] && [ -f "$(stamp "$1" "$2")" ]; }
kube_need=()
for b in kubelet kube-controller-manager kube-scheduler kube-proxy; do
  have "$b" "$KUBE_VERSION" || kube_need+=("$b")
done
need_coredns=1; have coredns "$COREDNS_VERSION" && need_coredns=0
pause_sum=$(sha256sum scripts/cluster/pause/main.go | cut -c1-12)
need_pause=1; have pause "$pause_sum" && need_pause=0
if [ ${#kube_need[@]} = 0 ] && [ $need_coredns = 0 ] && [ $need_pause = 0 ]; then exit "${BUILD_NOOP_EXIT:-0}"; fi

kube_find_go kube/build-node
start=$(date +%s)

if [ $need_pause = 1 ]; then
  (cd scripts/cluster/pause && GOFLAGS="" "$GO" build -trimpath -ldflags "$LDFLAGS" -o "$OUT/pause" .)
  rm -f "$OUT"/.node-pause-* && touch "$(stamp pause "$pause_sum")"
fi

if [ ${#kube_need[@]} -gt 0 ]; then
  echo "kube/build-node: building ${kube_need[*]} $KUBE_VERSION (go: $("$GO" version))" >&2
  KUBE_LDFLAGS=$(kube_version_ldflags)
  rm -rf "$WORK/node" && mkdir -p "$WORK/node"
  (
    cd "$WORK/node"
    kube_wrapper_module node kube/build-node
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
