#!/usr/bin/env bash
# Runs a wasm build command (trunk, worker-build, cargo --target wasm32…) with whichever wasm32 std
# bootstrap.sh found: rustup's prebuilt one, or Debian's rustc-web + rust-web-src with -Zbuild-std.
set -euo pipefail
. "$(dirname "$0")/env.sh"
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
exec "$@"
