#!/usr/bin/env bash
# Builds, once, the Kubernetes control plane the operator tests run against (envtest style):
#   etcd            from the Go module go.etcd.io/etcd/server/v3
#   kube-apiserver  from the Go module k8s.io/kubernetes (cmd/kube-apiserver)
#   kubectl         from the same module, only when no kubectl is on the PATH
# into .cache/kube/bin (gitignored). Each binary is rebuilt only when its pinned version changes.
#
# k8s.io/kubernetes is not meant to be consumed as a module: its go.mod requires every staging
# module (k8s.io/api, k8s.io/apiserver, ...) at v0.0.0 and replaces them with ./staging/src/...
# A wrapper module therefore replaces each of them with the published v0.<minor>.<patch> tag;
# the list is read from the kubernetes go.mod itself, so it stays right across versions.
#
# Env: KUBE_VERSION (default below), ETCD_VERSION, GO (path to go), KUBE_BUILD_JOBS (go build -p),
# KUBE_BUILD_KUBECTL=1 (build kubectl even when one is on the PATH), KUBE_BIN_DIR / KUBE_WORK_DIR
# (output and scratch folders). Exit 3: no Go toolchain.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
KUBE_VERSION=${KUBE_VERSION:-v1.34.4}
ETCD_VERSION=${ETCD_VERSION:-v3.6.16}
# bump when the build recipe changes, so cached binaries are rebuilt
RECIPE=2
OUT=${KUBE_BIN_DIR:-$ROOT/.cache/kube/bin}
WORK=${KUBE_WORK_DIR:-$ROOT/.cache/kube/work}
JOBS=${KUBE_BUILD_JOBS:-2}

mkdir -p "$OUT"
# one build at a time (parallel `npm test` runs share .cache/kube); the cache is checked after the lock
if command -v flock >/dev/null 2>&1; then
  exec 9>"$OUT/.build.lock"
  flock 9
fi
need_etcd=1; need_apiserver=1; need_kubectl=0
[ -x "$OUT/etcd" ] && [ -f "$OUT/.etcd-$ETCD_VERSION" ] && need_etcd=0
[ -x "$OUT/kube-apiserver" ] && [ -f "$OUT/.kube-apiserver-$KUBE_VERSION-r$RECIPE" ] && need_apiserver=0
if ! command -v kubectl >/dev/null 2>&1 || [ "${KUBE_BUILD_KUBECTL:-}" = "1" ]; then
  if ! { [ -x "$OUT/kubectl" ] && [ -f "$OUT/.kubectl-$KUBE_VERSION-r$RECIPE" ]; }; then need_kubectl=1; fi
fi
if [ $need_etcd = 0 ] && [ $need_apiserver = 0 ] && [ $need_kubectl = 0 ]; then exit 0; fi

GO=${GO:-$(command -v go || true)}
[ -z "$GO" ] && [ -x /usr/local/go/bin/go ] && GO=/usr/local/go/bin/go
if [ -z "$GO" ]; then
  echo "kube/build: Go (>= 1.24) is needed to build etcd and kube-apiserver; install it or set GO=/path/to/go" >&2
  exit 3
fi
avail_kb=$(df -Pk "$ROOT" | awk 'NR==2 {print $4}')
if [ "${avail_kb:-0}" -lt 6000000 ]; then
  echo "kube/build: warning: less than 6 GB free; the Go build cache for kube-apiserver needs about 4-5 GB" >&2
fi

export GOFLAGS=-mod=mod
export CGO_ENABLED=0
export GOTOOLCHAIN=${GOTOOLCHAIN:-auto}
LDFLAGS="-s -w"
start=$(date +%s)

if [ $need_etcd = 1 ]; then
  echo "kube/build: building etcd $ETCD_VERSION (go: $("$GO" version))" >&2
  rm -rf "$WORK/etcd" && mkdir -p "$WORK/etcd"
  (
    cd "$WORK/etcd"
    "$GO" mod init wrapper/etcd >/dev/null 2>&1
    "$GO" get "go.etcd.io/etcd/server/v3@$ETCD_VERSION"
    "$GO" build -p "$JOBS" -trimpath -ldflags "$LDFLAGS" -o "$OUT/etcd" go.etcd.io/etcd/server/v3
  )
  rm -f "$OUT"/.etcd-* && touch "$OUT/.etcd-$ETCD_VERSION"
  echo "kube/build: etcd done after $(( $(date +%s) - start ))s" >&2
fi

if [ $need_apiserver = 1 ] || [ $need_kubectl = 1 ]; then
  echo "kube/build: building kube-apiserver $KUBE_VERSION (go: $("$GO" version))" >&2
  staging_version="v0.${KUBE_VERSION#v1.}"
  minor=$(echo "$KUBE_VERSION" | cut -d. -f2)
  # what `kube-apiserver --version`, /version and kubectl's skew check report (else v0.0.0-master)
  KUBE_LDFLAGS="$LDFLAGS"
  for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    KUBE_LDFLAGS="$KUBE_LDFLAGS -X $pkg.gitVersion=$KUBE_VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z"
  done
  rm -rf "$WORK/kube" && mkdir -p "$WORK/kube"
  (
    cd "$WORK/kube"
    "$GO" mod init wrapper/kube >/dev/null 2>&1
    # Fetch the kubernetes go.mod and turn its "k8s.io/X => ./staging/src/k8s.io/X" replaces
    # into replaces with the published staging tags.
    gomod=$(GOFLAGS= "$GO" mod download -json "k8s.io/kubernetes@$KUBE_VERSION" | sed -n 's/.*"GoMod": "\(.*\)".*/\1/p')
    [ -f "$gomod" ] || { echo "kube/build: could not download k8s.io/kubernetes@$KUBE_VERSION" >&2; exit 1; }
    staging=$(grep -oE 'k8s\.io/[a-z0-9./-]+ => \./staging/src/k8s\.io/[a-z0-9./-]+' "$gomod" | awk '{print $1}' | sort -u)
    [ -n "$staging" ] || { echo "kube/build: no staging replaces found in $gomod" >&2; exit 1; }
    for m in $staging; do
      "$GO" mod edit -replace "$m=$m@$staging_version"
    done
    "$GO" mod edit -require "k8s.io/kubernetes@$KUBE_VERSION"
    # A main package in the module so that "go mod tidy"-free builds resolve the full graph.
    "$GO" get "k8s.io/kubernetes@$KUBE_VERSION"
    if [ $need_apiserver = 1 ]; then
      "$GO" build -p "$JOBS" -trimpath -ldflags "$KUBE_LDFLAGS" -o "$OUT/kube-apiserver" k8s.io/kubernetes/cmd/kube-apiserver
    fi
    if [ $need_kubectl = 1 ]; then
      "$GO" build -p "$JOBS" -trimpath -ldflags "$KUBE_LDFLAGS" -o "$OUT/kubectl" k8s.io/kubernetes/cmd/kubectl
    fi
  )
  if [ $need_apiserver = 1 ]; then rm -f "$OUT"/.kube-apiserver-* && touch "$OUT/.kube-apiserver-$KUBE_VERSION-r$RECIPE"; fi
  if [ $need_kubectl = 1 ]; then rm -f "$OUT"/.kubectl-* && touch "$OUT/.kubectl-$KUBE_VERSION-r$RECIPE"; fi
fi
echo "kube/build: control plane ready in $OUT after $(( $(date +%s) - start ))s" >&2
