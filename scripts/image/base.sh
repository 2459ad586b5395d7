#!/usr/bin/env bash
# Makes sure the Dockerfile's base image, docker.io/library/node:24-bookworm-slim, is in the local
# image store. In order:
#   1. present already (pulled, or a stand-in made by this recipe version): nothing to do;
#   2. pull it from the registry: the real image always wins where a registry is reachable;
#   3. otherwise make a local stand-in of the same name: Debian bookworm (debootstrap minbase),
#      Node from the npm registry (node-linux-<arch>, the binary package the npm `node` package
#      installs), npm from the npm package `npm`, a `node` user with uid/gid 1000, like the real one.
# The stand-in is for machines that reach Debian's and npm's registries but no container registry
# (CI here). It is never published: it trusts this machine's CA bundle (NODE_EXTRA_CA_CERTS) so
# that npm inside a build gets through a TLS-intercepting egress proxy.
#
#   scripts/image/base.sh            # ensure the base
#   FORCE=1 scripts/image/base.sh    # rebuild the stand-in even if one exists
#
# Needs root (debootstrap, chroot). Takes ~2-4 minutes the first time, ~0 s once cached.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=scripts/image/lib.sh
. "$here/lib.sh"

BASE_IMAGE=docker.io/library/node:24-bookworm-slim
NODE_VERSION=${NODE_VERSION:-24.21.0}
NPM_VERSION=${NPM_VERSION:-11.21.1}
DEBIAN_MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
# bump when the recipe below changes: an older stand-in is then rebuilt
RECIPE="standin-3 node-${NODE_VERSION} npm-${NPM_VERSION}"
LABEL_KEY=io.webhook-fanout.base-recipe

engine=$(image_engine)

if [ -z "${FORCE:-}" ] && $engine image inspect "$BASE_IMAGE" >/dev/null 2>&1; then
  have=$($engine image inspect --format "{{ index .Config.Labels \"$LABEL_KEY\" }}" "$BASE_IMAGE" 2>/dev/null || true)
  if [ -z "$have" ] || [ "$have" = "<no value>" ]; then
    echo "base: $BASE_IMAGE present (pulled image)"
    exit 0
  fi
  if [ "$have" = "$RECIPE" ]; then
    echo "base: $BASE_IMAGE present (local stand-in, $RECIPE)"
    exit 0
  fi
  echo "base: stand-in recipe changed ($have -> $RECIPE): pulling or rebuilding"
fi

if [ -z "${FORCE:-}" ]; then
  echo "base: pulling $BASE_IMAGE"
  if timeout "${PULL_TIMEOUT:-60}" "$engine" pull -q "$BASE_IMAGE" >/dev/null 2>&1; then
    echo "base: pulled $BASE_IMAGE"
    exit 0
  fi
  echo "base: $BASE_IMAGE can not be pulled here: making a local stand-in"
fi

for tool in debootstrap chroot npm tar; do
  command -v "$tool" >/dev/null 2>&1 || { echo "base: $tool is missing (apt-get install debootstrap; npm comes with Node)" >&2; exit 1; }
done
[ "$(id -u)" = 0 ] || { echo "base: the stand-in needs root (debootstrap)" >&2; exit 1; }

case "$(uname -m)" in
  x86_64) arch=x64 ;;
  aarch64) arch=arm64 ;;
  *) echo "base: unsupported machine $(uname -m)" >&2; exit 1 ;;
esac

work=$(mktemp -d /tmp/webhook-fanout-base.XXXXXX)
trap 'rm -rf "$work"' EXIT
root=$work/rootfs
started=$(date +%s)

debootstrap --variant=minbase --include=ca-certificates,libstdc++6 bookworm "$root" "$DEBIAN_MIRROR" \
  >"$work/debootstrap.log" 2>&1 || { tail -30 "$work/debootstrap.log" >&2; exit 1; }

# Node and npm from the npm registry (npm pack: no install scripts run)
(cd "$work" && npm pack -q "node-linux-${arch}@${NODE_VERSION}" "npm@${NPM_VERSION}" >/dev/null)
mkdir -p "$work/node" "$root/usr/local/lib/node_modules/npm"
tar -xzf "$work/node-linux-${arch}-${NODE_VERSION}.tgz" -C "$work/node" --strip-components=1
install -m 0755 "$work/node/bin/node" "$root/usr/local/bin/node"
tar -xzf "$work/npm-${NPM_VERSION}.tgz" -C "$root/usr/local/lib/node_modules/npm" --strip-components=1
ln -s ../lib/node_modules/npm/bin/npm-cli.js "$root/usr/local/bin/npm"
ln -s ../lib/node_modules/npm/bin/npx-cli.js "$root/usr/local/bin/npx"

# this machine's CA bundle: includes any egress proxy's CA, which Debian's bundle lacks
if [ -f /etc/ssl/certs/ca-certificates.crt ]; then
  cp /etc/ssl/certs/ca-certificates.crt "$root/etc/ssl/certs/ca-certificates.crt"
fi

# the node user of the real image: uid/gid 1000, home /home/node
chroot "$root" /usr/sbin/groupadd --gid 1000 node
chroot "$root" /usr/sbin/useradd --uid 1000 --gid node --shell /bin/bash --create-home node
chroot "$root" /usr/local/bin/node --version >/dev/null

# slim: what a container never reads
rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/* \
  "$root"/usr/share/doc/* "$root"/usr/share/man/* "$root"/usr/share/info/* \
  "$root"/usr/share/locale/* "$root"/var/log/* "$root"/tmp/* \
  "$root"/usr/local/lib/node_modules/npm/docs "$root"/usr/local/lib/node_modules/npm/man

tar --numeric-owner -C "$root" -c . | $engine import \
  --change "ENV NODE_VERSION=${NODE_VERSION}" \
  --change "ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" \
  --change "ENV NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt" \
  --change "LABEL ${LABEL_KEY}=\"${RECIPE}\"" \
  --change 'CMD ["node"]' \
  - "$BASE_IMAGE" >/dev/null

echo "base: made stand-in $BASE_IMAGE ($RECIPE) in $(( $(date +%s) - started ))s"
