#!/usr/bin/env bash
# Runs a wasm build command (trunk, worker-build, cargo --target wasm32…) with whichever wasm32 std
# bootstrap.sh found: rustup's prebuilt one, or Debian's rustc-web + rust-web-src with -Zbuild-std.
#   wasm-env.sh [--spa] command…
# --spa: the SPA's build. Its std is rebuilt for size and panics trap without formatting or location strings
# (`-Cpanic=immediate-abort`, `optimize_for_size`, `-Zlocation-detail=none`: ≈ 9 % smaller wasm, see
# docs/benchmarks.md). Only the SPA: the worker shares the release profile but keeps its panic messages in
# the logs. Own target dir, since the flags differ. Its Leptos views are type-erased (`--cfg erase_components`:
# one AnyView where each component's view type would be instantiated anew, ≈ 10 % smaller wasm); native tests
# and clippy build the typed views, so the app compiles both ways.
set -euo pipefail
. "$(dirname "$0")/env.sh"
spa=
if [ "${1:-}" = "--spa" ]; then
  spa=1
  shift
  # The linker's relocations and symbols stay in the module: scripts/build/split.mjs splits it at the app's
  # `#[wasm_split]` functions, then strips what it does not ship.
  export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$RINGI_ROOT/target/spa}" RUSTFLAGS="--cfg erase_components -Clink-args=--emit-relocs" \
    CARGO_PROFILE_RELEASE_STRIP=false
  if [ "$(cat "$RINGI_HOME/wasm-std" 2>/dev/null)" = "build-std" ] || [ -d "$(rustc --print sysroot)/lib/rustlib/src/rust/library" ]; then
    export RUSTC_BOOTSTRAP=1 CARGO_UNSTABLE_BUILD_STD=std,panic_abort CARGO_UNSTABLE_BUILD_STD_FEATURES=optimize_for_size \
      RUSTFLAGS="-Zunstable-options -Cpanic=immediate-abort -Zlocation-detail=none $RUSTFLAGS"
  else
    echo "wasm-env: no std sources (rustup component rust-src): the SPA is built with the prebuilt std, larger" >&2
  fi
fi
if [ "$(cat "$RINGI_HOME/wasm-std" 2>/dev/null)" = "build-std" ]; then
  # worker-build insists that `rustc --print target-libdir` names an existing directory; Debian's rustc has
  # no prebuilt wasm32 std, so a shim answers that one query and passes everything else through.
  shim="$RINGI_HOME/rustc-shim"
  mkdir -p "$shim/empty-libdir"
  cat > "$shim/rustc" <<SHIM
#!/bin/sh
case "\$*" in *"--print target-libdir"*) echo "$shim/empty-libdir"; exit 0;; esac
exec /usr/bin/rustc "\$@"
SHIM
  chmod +x "$shim/rustc"
  export PATH="$shim:/usr/bin:$PATH" RUSTC=/usr/bin/rustc RUSTDOC=/usr/bin/rustdoc RUSTC_BOOTSTRAP=1 \
    CARGO_UNSTABLE_BUILD_STD=std,panic_abort CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_LINKER=/usr/bin/wasm-ld-22
  export CARGO=/usr/bin/cargo
fi
if [ -n "$spa" ]; then
  # Through scripts/build/wasm-link.sh, which leaves out exports the app never uses.
  export RINGI_WASM_LINKER="${CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_LINKER:-rust-lld}" \
    CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_LINKER="$RINGI_ROOT/scripts/build/wasm-link.sh"
fi
exec "$@"
