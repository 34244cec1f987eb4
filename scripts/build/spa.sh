#!/usr/bin/env bash
# The SPA into dist/, as two bundles of the same app (docs/design.md §11 "Two bundles"): Trunk builds it
# twice with the same release profile and std (scripts/build/wasm-env.sh --spa):
#   dist/index.html  — what an emailed link loads: sign-in callback, inbox, approval page with its forms;
#                      and beside them the sign-in's own module (sign-in/), which the callback page runs first;
#   dist/admin.html  — the same plus the pages few people open (`admin` feature: /audit, /settings).
# The worker answers each app path with the HTML of the bundle that has it (ringi-core
# `assets::in_full_bundle`). Both share the stylesheet and boot.js (same content, same hashed name); each
# build minifies and precompresses its own files (scripts/build/precompress.mjs, once its wasm is split).
set -euo pipefail
cd "$(dirname "$0")/../.."
full=target/spa-full-dist
# The script that runs before the wasm, with the app's storage keys written in front of it (app/src/early.rs; a
# native build, outside the wasm environment). index.html inlines it from target/early/.
mkdir -p target/early
cargo run -q -p ringi-app --example early > target/early/boot.js.new
cat app/boot.js >> target/early/boot.js.new
mv target/early/boot.js.new target/early/boot.js
# Each bundle's wasm split into the app and its parts on demand (scripts/build/split.mjs), from what cargo linked
# for that bundle, then minified and compressed again.
linked="${CARGO_TARGET_DIR:-target/spa}/wasm32-unknown-unknown/release/ringi-app.wasm"
# The sign-in's module (sign-in/: the code exchange the callback page runs before the app has arrived), built once
# with the same profile and std, named in both bundles.
scripts/build/wasm-env.sh --spa cargo build -q --release --target wasm32-unknown-unknown -p ringi-sign-in --bin ringi-sign-in
sign_in="${CARGO_TARGET_DIR:-target/spa}/wasm32-unknown-unknown/release/ringi-sign-in.wasm"
build() {  # build <dist> [trunk flags…]
  local out=$1
  shift
  scripts/build/wasm-env.sh --spa trunk build --release --dist "$out" "$@"
  node scripts/build/split.mjs "$out" "$linked"
  node scripts/build/sign-in.mjs "$out" "$sign_in"
  node scripts/build/precompress.mjs "$out" > /dev/null
}
build dist
build "$full" --features admin
cp "$full/index.html" dist/admin.html
for file in "$full"/*; do
  name=$(basename "$file")
  # Only the full bundle's own files (its wasm, chunks and JS, their .br/.gz); the shared ones are already there.
  if [ -f "$file" ] && [ "$name" != index.html ] && [ ! -e "dist/$name" ]; then cp "$file" "dist/$name"; fi
done
echo "spa: dist/index.html (emailed link) and dist/admin.html (+ $(grep -o 'ringi-app-[0-9a-f]*_bg.wasm' dist/admin.html | head -1))"
