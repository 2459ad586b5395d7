#!/usr/bin/env bash
# Builds, once, the Go servers the tests (and the bench) run that neither npm nor PyPI brings,
# from their Go modules through the Go module proxy, into .cache/go-servers/bin (gitignored):
#   temporal-server      go.temporal.io/server/cmd/server      (a production Temporal server: the
#   temporal-sql-tool    go.temporal.io/server/cmd/tools/sql    TLS tests, the bench's Temporal)
#   otelcol              the OpenTelemetry Collector's core components (OTLP receiver over gRPC and
#                        HTTP, OTLP/HTTP and debug exporters) through otelcol.NewCommand, as the
#                        collector's builder generates it (scripts/tools/otelcol/main.go): the real
#                        OTLP receiver of the tracing tests
# Each is rebuilt only when its pinned version changes. Usage: go-builds.sh [temporal|otelcol]...
# (default both). Env: GO (path to go), GO_BUILD_JOBS (go build -p, default 2), BUILD_NOOP_EXIT
# (the status to exit with when everything was built already; default 0). Exit 3: no Go.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
TEMPORAL_SERVER_VERSION=v1.32.1   # the newest that builds with Go 1.26.8 (later ones want 1.26.10)
OTELCOL_VERSION=v0.165.0
OTELCOL_STABLE_VERSION=v1.71.0   # the same release's v1 modules (confmap and its providers)
OTELCOL_RECIPE=2                 # bump when main.go changes, so a cached build is redone
OUT=$ROOT/.cache/go-servers/bin
WORK=$ROOT/.cache/go-servers/work
JOBS=${GO_BUILD_JOBS:-2}
mkdir -p "$OUT" "$WORK"
exec 8>"$OUT/.build.lock"
flock 8

GO=${GO:-$(command -v go || true)}
[ -z "$GO" ] && [ -x /usr/local/go/bin/go ] && GO=/usr/local/go/bin/go
export GOFLAGS=-mod=mod CGO_ENABLED=0 GOTOOLCHAIN=${GOTOOLCHAIN:-auto}

wanted=("$@")
built=0
[ ${#wanted[@]} = 0 ] && wanted=(temporal otelcol)
for what in "${wanted[@]}"; do
  case $what in
    temporal)
      [ -x "$OUT/temporal-server" ] && [ -x "$OUT/temporal-sql-tool" ] && [ -f "$OUT/.temporal-$TEMPORAL_SERVER_VERSION" ] && continue
      [ -n "$GO" ] || { echo "go-builds: Go (>= 1.26.8) is needed to build the Temporal server; install it or set GO" >&2; exit 3; }
      start=$(date +%s)
      echo "go-builds: building temporal-server $TEMPORAL_SERVER_VERSION (a few minutes the first time)" >&2
      rm -rf "$WORK/temporal" && mkdir -p "$WORK/temporal"
      (
        cd "$WORK/temporal"
        "$GO" mod init wrapper/temporal >/dev/null 2>&1
        "$GO" get "go.temporal.io/server@$TEMPORAL_SERVER_VERSION"
        "$GO" build -p "$JOBS" -trimpath -ldflags "-s -w" -o "$OUT/temporal-server" go.temporal.io/server/cmd/server
        "$GO" build -p "$JOBS" -trimpath -ldflags "-s -w" -o "$OUT/temporal-sql-tool" go.temporal.io/server/cmd/tools/sql
      )
      rm -f "$OUT"/.temporal-* && touch "$OUT/.temporal-$TEMPORAL_SERVER_VERSION"
      built=1
      echo "go-builds: temporal-server built in $(( $(date +%s) - start ))s" >&2
      ;;
    otelcol)
      [ -x "$OUT/otelcol" ] && [ -f "$OUT/.otelcol-$OTELCOL_VERSION-r$OTELCOL_RECIPE" ] && continue
      [ -n "$GO" ] || { echo "go-builds: Go (>= 1.26) is needed to build the OpenTelemetry Collector; install it or set GO" >&2; exit 3; }
      start=$(date +%s)
      echo "go-builds: building otelcol $OTELCOL_VERSION" >&2
      rm -rf "$WORK/otelcol" && mkdir -p "$WORK/otelcol"
      cp scripts/tools/otelcol/main.go "$WORK/otelcol/"
      (
        cd "$WORK/otelcol"
        "$GO" mod init wrapper/otelcol >/dev/null 2>&1
        for m in otelcol service receiver/otlpreceiver exporter/otlphttpexporter exporter/debugexporter processor/batchprocessor; do
          "$GO" get "go.opentelemetry.io/collector/$m@$OTELCOL_VERSION"
        done
        for m in confmap/provider/fileprovider confmap/provider/envprovider confmap/provider/yamlprovider; do
          "$GO" get "go.opentelemetry.io/collector/$m@$OTELCOL_STABLE_VERSION"
        done
        "$GO" mod tidy
        "$GO" build -p "$JOBS" -trimpath -ldflags "-s -w" -o "$OUT/otelcol" .
      )
      rm -f "$OUT"/.otelcol-* && touch "$OUT/.otelcol-$OTELCOL_VERSION-r$OTELCOL_RECIPE"
      built=1
      echo "go-builds: otelcol built in $(( $(date +%s) - start ))s" >&2
      ;;
    *) echo "go-builds: unknown build $what (temporal, otelcol)" >&2; exit 2 ;;
  esac
done
[ $built = 1 ] || exit "${BUILD_NOOP_EXIT:-0}"
