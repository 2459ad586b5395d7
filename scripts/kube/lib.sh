# shellcheck shell=bash
# What scripts/kube/build.sh (control plane) and build-node.sh (node binaries) share: where the
# binaries go, the one build lock, finding Go, the version stamped into the binaries, and the
# wrapper module that builds k8s.io/kubernetes commands from the Go module proxy. Sourced from
# the repository root, after `set -euo pipefail`.

KUBE_VERSION=${KUBE_VERSION:-v1.34.4}
OUT=${KUBE_BIN_DIR:-$PWD/.cache/kube/bin}
# shellcheck disable=SC2034 # WORK, JOBS: used by the scripts that source this file
WORK=${KUBE_WORK_DIR:-$PWD/.cache/kube/work}
# shellcheck disable=SC2034
JOBS=${KUBE_BUILD_JOBS:-2}
LDFLAGS="-s -w"

# one build at a time (parallel `npm test` runs share .cache/kube; both scripts fill the same Go
# build cache and folder); callers check their stamps after taking it
kube_lock() {
  mkdir -p "$OUT"
  if command -v flock >/dev/null 2>&1; then
    exec 9>"$OUT/.build.lock"
    flock 9
  fi
}

# sets GO, or exits 3 (the callers' "no Go toolchain") naming the script ($1)
kube_find_go() {
  GO=${GO:-$(command -v go || true)}
  [ -z "$GO" ] && [ -x /usr/local/go/bin/go ] && GO=/usr/local/go/bin/go
  if [ -z "$GO" ]; then
    echo "$1: Go (>= 1.24) is needed to build the Kubernetes binaries; install it or set GO=/path/to/go" >&2
    exit 3
  fi
  export GOFLAGS=-mod=mod CGO_ENABLED=0 GOTOOLCHAIN=${GOTOOLCHAIN:-auto}
}

# what `--version`, /version and kubectl's skew check report (else v0.0.0-master)
kube_version_ldflags() {
  local minor pkg flags="$LDFLAGS"
  minor=$(echo "$KUBE_VERSION" | cut -d. -f2)
  for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    flags="$flags -X $pkg.gitVersion=$KUBE_VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z"
  done
  echo "$flags"
}

# In the current (empty) folder, a module that can build k8s.io/kubernetes/cmd/*. k8s.io/kubernetes
# is not meant to be consumed as a module: its go.mod requires every staging module (k8s.io/api,
# k8s.io/apiserver, ...) at v0.0.0 and replaces them with ./staging/src/...; the wrapper replaces
# each with the published v0.<minor>.<patch> tag, the list read from that go.mod itself, so it
# stays right across versions. $1: the module's name, $2: the calling script's name for errors.
kube_wrapper_module() {
  local staging_version gomod staging m
  staging_version="v0.${KUBE_VERSION#v1.}"
  "$GO" mod init "wrapper/$1" >/dev/null 2>&1
  gomod=$(GOFLAGS="" "$GO" mod download -json "k8s.io/kubernetes@$KUBE_VERSION" | sed -n 's/.*"GoMod": "\(.*\)".*/\1/p')
  [ -f "$gomod" ] || { echo "$2: could not download k8s.io/kubernetes@$KUBE_VERSION" >&2; return 1; }
  staging=$(grep -oE 'k8s\.io/[a-z0-9./-]+ => \./staging/src/k8s\.io/[a-z0-9./-]+' "$gomod" | awk '{print $1}' | sort -u)
  [ -n "$staging" ] || { echo "$2: no staging replaces found in $gomod" >&2; return 1; }
  for m in $staging; do
    "$GO" mod edit -replace "$m=$m@$staging_version"
  done
  "$GO" mod edit -require "k8s.io/kubernetes@$KUBE_VERSION"
  # a requirement with its full graph, so builds need no `go mod tidy`
  "$GO" get "k8s.io/kubernetes@$KUBE_VERSION"
}
