#!/usr/bin/env bash
# The SPA's wasm linker (scripts/build/wasm-env.sh --spa): the toolchain's own ($RINGI_WASM_LINKER), without the
# exports of server_fn's stream adapters (wasm-streams' IntoUnderlyingSource/Sink/ByteSource). Leptos always links
# server_fn's browser client, whose `#[wasm_bindgen]` classes rustc exports; a CSR app without server functions never
# creates one. Dropped here, the linker leaves out their code and what it reaches (taken out after linking, their
# closures would stay in the function table the split modules share). scripts/build/split.mjs checks that the app's
# JS never creates one.
set -euo pipefail
linker=${RINGI_WASM_LINKER:-rust-lld}
args=()
if [ "$(basename "$linker")" != rust-lld ] && [ "${1:-}" = -flavor ]; then
  shift 2  # rustc names the flavor for rust-lld; a plain wasm-ld takes none
fi
while [ $# -gt 0 ]; do
  if [ "$1" = --export ] && [ $# -gt 1 ]; then
    case "$2" in
      *intounderlyingsource_* | *intounderlyingsink_* | *intounderlyingbytesource_*) ;;
      *) args+=("$1" "$2") ;;
    esac
    shift 2
  else
    args+=("$1")
    shift
  fi
done
exec "$linker" "${args[@]}"
