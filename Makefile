# ringi — the two commands a newcomer needs: `make dev` (whole system on 127.0.0.1) and `make test`.
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
ENV := . scripts/build/env.sh &&
PY := $(HOME)/.cache/ringi/venv/bin/python

.PHONY: dev demo test rust-checks bootstrap build spa worker check lint unit deploy-check deploy-check-unbuilt deploy-check-built e2e bench deploy clean

## make dev: bootstrap if needed, build SPA + worker, run the local stack (Ctrl-C stops everything)
dev: bootstrap build
	$(ENV) python scripts/dev/dev.py

## make demo: start another run of the demo workflow on a running `make dev` (a new mail in the mailbox);
## ACCOUNT=member: the member account's workflow (another account and region, answered through its own role)
demo:
	$(ENV) python scripts/dev/demo.py $(if $(ACCOUNT),--account $(ACCOUNT))

## make test: everything CI runs. The deploy kit's checks (Python, moto) run beside the Rust ones and the wasm
## builds, whose long links leave a core idle; then the checks that need the build, and the e2e suite.
test: bootstrap
	@$(MAKE) --no-print-directory -j2 rust-checks deploy-check-unbuilt
	@$(MAKE) --no-print-directory deploy-check-built e2e

## one cargo at a time (they would only wait for each other's lock on target/)
rust-checks:
	@$(MAKE) --no-print-directory -j1 lint unit build

bootstrap:
	@scripts/build/bootstrap.sh

lint:
	$(ENV) cargo fmt --all -- --check
	@# core's layers (no import cycle, no arrow up a layer) and the size limits: scripts/lint/check_layers.py
	$(ENV) python scripts/lint/check_layers.py --quiet
	$(ENV) cargo clippy -p ringi-core -p ringi-sign-in -p ringi-app --all-targets --features ringi-app/admin -- -D warnings
	@# The wasm crates too, where rustup's prebuilt wasm32 std exists (Debian's fallback toolchain has no clippy).
	$(ENV) if [ "$$(cat "$$RINGI_HOME/wasm-std")" = rustup ]; then \
	  cargo clippy -p ringi-edge -p ringi-sign-in -p ringi-app --target wasm32-unknown-unknown -- -D warnings; \
	  cargo clippy -p ringi-app --target wasm32-unknown-unknown --features admin -- -D warnings; \
	else echo "lint: clippy for the wasm crates skipped (build-std toolchain)"; fi

## unit: the core crate's tests, the sign-in's and the SPA's (natively: their logic and state run without a browser)
unit:
	$(ENV) cargo test -p ringi-core -p ringi-sign-in -p ringi-app --features ringi-app/admin

## the two wasm builds side by side: each ends in a long single-threaded link (LTO, codegen-units = 1); each is
## skipped when its inputs are as at its last successful build (scripts/build/uptodate.py: a no-change `make dev`)
build:
	@$(MAKE) --no-print-directory -j2 spa worker

## SPA: Trunk (release profile, std rebuilt for size: scripts/build/wasm-env.sh) into dist/ (no inline script: see Trunk.toml),
## twice: index.html is the bundle an emailed link loads, admin.html adds the rare pages (scripts/build/spa.sh)
spa:
	$(ENV) if python scripts/build/uptodate.py spa; then echo "spa: unchanged since its last build (dist/)"; \
	else scripts/build/spa.sh && python scripts/build/uptodate.py spa --done; fi

## worker: worker-build (same release profile, same target dir) into edge/build/
worker:
	$(ENV) if python scripts/build/uptodate.py worker; then echo "worker: unchanged since its last build (edge/build/)"; \
	else (cd edge && ../scripts/build/wasm-env.sh worker-build --release) && python scripts/build/uptodate.py worker --done; fi

## the deploy kit, offline: template (cfn-lint, assertions, moto), production wrangler config (dry run), deploy.py
deploy-check:
	$(ENV) python -m pytest -q tests/deploy
deploy-check-unbuilt:
	$(ENV) python -m pytest -q -m "not built" tests/deploy
deploy-check-built:
	$(ENV) python -m pytest -q -m built tests/deploy

## e2e: the browser and API suite, its modules spread over E2E_WORKERS pytest-xdist workers (default 2), each on a
## stack of its own (tests/e2e/conftest.py: ports 20 apart); E2E_WORKERS=0 runs it in this one process
E2E_WORKERS ?= 2
e2e:
	$(ENV) python -m pytest -q --durations=30 $(if $(filter-out 0,$(E2E_WORKERS)),-n $(E2E_WORKERS) --dist loadfile) tests/e2e

## make bench: benchmarks on an own stack (ports 8887/5410/9410) → docs/benchmarks.md; BENCH_OPT_LEVELS=1 adds
## the opt-level "s" builds (target/opt-s, several minutes). BENCH_ONLY=spa (or any of sizes,cold,decision,placement,types,
## throughput,inbox,spa,lighthouse,storage,load, comma-separated) runs only those sections and prints them (docs/ is left as
## is). The load section's soak lasts 10 min; BENCH_SOAK_SECONDS=60 shortens it for a preview.
## Lighthouse (pinned, npm) is installed at bench time into ~/.cache/ringi/lighthouse, not into package.json.
## BENCH_TWIGGY=1 adds what the SPA wasm is made of (a names-kept build into target/twiggy; needs twiggy:
## cargo install twiggy --locked --root ~/.cache/ringi/cargo).
bench: bootstrap build
	$(ENV) python scripts/bench/run.py $(if $(BENCH_ONLY),--only $(BENCH_ONLY)) $(if $(BENCH_SOAK_SECONDS),--soak-seconds $(BENCH_SOAK_SECONDS))

## make deploy: ringi on Cloudflare + AWS from deploy/ringi.env (docs/deploy.md). DRY_RUN=1 prints the plan and
## changes nothing; ROTATE=1 also rotates the registration API key and the worker's AWS access key.
deploy: bootstrap
	$(ENV) python deploy/deploy.py $(if $(filter 1 true yes,$(DRY_RUN)),--dry-run) $(if $(filter 1 true yes,$(ROTATE)),--rotate)

clean:
	rm -rf target dist edge/build .ringi edge/wrangler.production.json
