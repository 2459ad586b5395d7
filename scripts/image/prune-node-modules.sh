#!/bin/sh
# Removes from a production node_modules what the running processes never load (run in the
# Dockerfile's deps stage; POSIX sh and find only, as in node:*-slim):
#   - @temporalio/core-bridge's native libraries for other platforms (it ships five, ~28 MB each)
#     and its Rust sources: index.js loads releases/<this platform>/index.node only;
#   - @swc/* and swc-loader: webpack compiles workflow code with them, and the worker loads the
#     prebuilt dist/workflow-bundle.js instead (webpack itself stays: the SDK requires it on load);
#   - @types/*, declarations, TypeScript sources, source maps (Node does not run .ts from
#     node_modules), documentation, and the test/docs/example folders at package roots.
# Licence files stay. Usage: prune-node-modules.sh NODE_MODULES_DIR
set -eu
nm=${1:?usage: prune-node-modules.sh NODE_MODULES_DIR}
cd "$nm"
before=$(du -sm . | cut -f1)

bridge=@temporalio/core-bridge
target=$(node -p "require('./$bridge/common.js').getPrebuiltTargetName()")
[ -f "$bridge/releases/$target/index.node" ] || { echo "prune: no core-bridge library for $target" >&2; exit 1; }
for dir in "$bridge"/releases/*; do
  [ "$dir" = "$bridge/releases/$target" ] || rm -rf "$dir"
done
rm -rf "$bridge/sdk-core" "$bridge/bridge-macros" "$bridge/src" "$bridge/scripts" "$bridge/ts" "$bridge"/Cargo.*

rm -rf @swc swc-loader @types

find . -type f \( -name '*.map' -o -name '*.ts' -o -name '*.mts' -o -name '*.cts' \
  -o -iname '*.md' -o -iname '*.markdown' -o -iname 'CHANGELOG*' -o -iname 'HISTORY*' \) \
  ! -iname 'LICENSE*' -delete
# package roots only (node_modules/x/test, node_modules/@s/x/test): deeper folders of these names
# can be code
for pkg in */ @*/*/; do
  for sub in test tests __tests__ docs doc example examples .github; do
    [ -d "$pkg$sub" ] && rm -rf "$pkg$sub"
  done
done
# the native module loads after pruning
node -e "require('./$bridge')" >/dev/null

echo "prune: node_modules ${before} MB -> $(du -sm . | cut -f1) MB (core-bridge kept for $target)"
