#!/usr/bin/env bash
# Builds a container image with whatever engine this machine has: docker where a Docker engine
# answers, podman (daemonless) otherwise; see lib.sh. With no arguments it builds the project's
# Dockerfile as webhook-fanout:dev. Any other Dockerfile and context build the same way:
#
#   scripts/image/build.sh                                   # ./Dockerfile -> webhook-fanout:dev
#   scripts/image/build.sh -t webhook-fanout:1.2.3 --build-arg VERSION=1.2.3
#   scripts/image/build.sh -f deploy/x/Dockerfile -t x:dev deploy/x
#
# Options: -f|--file DOCKERFILE (default: CONTEXT/Dockerfile), -t|--tag TAG (default
# webhook-fanout:dev), CONTEXT (default: the repository root); every other option (--build-arg,
# --target, --platform, ...) is passed to the engine's build unchanged.
# The node:24-bookworm-slim base is made sure of first (base.sh: pulled, or a local stand-in where
# no registry is reachable); SKIP_BASE=1 skips that for Dockerfiles that do not use it.
# PUSH_IMAGE=true (set by skaffold for remote clusters) pushes TAG after the build.
# The build runs on the host network: a build network namespace adds nothing here and needs
# iptables/netavark set up on the machine.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
# shellcheck source=scripts/image/lib.sh
. "$here/lib.sh"

file=""
tag=webhook-fanout:dev
context=""
passthrough=()
while [ $# -gt 0 ]; do
  case "$1" in
    -f|--file) file=$2; shift 2 ;;
    --file=*) file=${1#--file=}; shift ;;
    -t|--tag) tag=$2; shift 2 ;;
    --tag=*) tag=${1#--tag=}; shift ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | grep '^#' | sed 's/^# \{0,1\}//'; exit 0 ;;
    # options that take a value as the next argument
    --build-arg|--target|--platform|--label|--secret|--cache-from) passthrough+=("$1" "$2"); shift 2 ;;
    -*) passthrough+=("$1"); shift ;;
    *) [ -z "$context" ] || { echo "build: one context only (got $context and $1)" >&2; exit 2; }
       context=$1; shift ;;
  esac
done
context=${context:-$repo}
file=${file:-$context/Dockerfile}
[ -f "$file" ] || { echo "build: no Dockerfile at $file" >&2; exit 2; }
[ -d "$context" ] || { echo "build: no context directory $context" >&2; exit 2; }

engine=$(image_engine)
[ -n "${SKIP_BASE:-}" ] || bash "$here/base.sh"
# the project's Dockerfile names its base by short name (node:24-bookworm-slim): give podman the
# full name, so the build does not depend on the machine's short-name aliases
if [ "$(cd "$(dirname "$file")" && pwd)/$(basename "$file")" = "$repo/Dockerfile" ] \
  && ! printf '%s\n' ${passthrough[@]+"${passthrough[@]}"} | grep -q '^NODE_IMAGE='; then
  passthrough+=(--build-arg NODE_IMAGE=docker.io/library/node:24-bookworm-slim)
fi

started=$(date +%s)
echo "build: $engine build -f $file -t $tag $context"
case "$engine" in
  docker)
    DOCKER_BUILDKIT=1 docker build -f "$file" -t "$tag" ${passthrough[@]+"${passthrough[@]}"} "$context"
    ;;
  podman)
    # shellcheck disable=SC2046 # the flags are words on purpose
    podman build $(image_engine_flags podman) --network host --layers \
      -f "$file" -t "$tag" ${passthrough[@]+"${passthrough[@]}"} "$context"
    ;;
  *) echo "build: unknown engine $engine" >&2; exit 2 ;;
esac
echo "build: $tag built with $engine in $(( $(date +%s) - started ))s"
# skaffold's custom builder asks for a push this way when the cluster is not local
if [ "${PUSH_IMAGE:-}" = true ]; then
  $engine push "$tag"
fi
