# Regina — the commands a developer and CI need. `make help` lists them.
#
# `make run` needs nothing but this checkout: without DATABASE_URL or PG_* settings the broker
# starts a private PostgreSQL cluster under .regina/ and stops it on Ctrl-C. It builds the web
# dashboard first (Node.js and npm), which the broker embeds and serves at http://localhost:6632/.

.DEFAULT_GOAL := help
SHELL := /bin/bash

# rustup installs cargo here; a non-login shell may not have it on PATH yet.
export PATH := $(HOME)/.cargo/bin:$(PATH)

CARGO ?= cargo
TARGET_DIR := $(abspath $(or $(CARGO_TARGET_DIR),target))
# The shared test cluster of regina-testkit (see crates/regina-testkit).
TEST_PG_DIR := $(TARGET_DIR)/regina-test-pg
# The development cluster of `regina serve` without database settings.
DEV_DIR := $(CURDIR)/.regina
REGINA := $(TARGET_DIR)/release/regina
BENCH := $(TARGET_DIR)/release/regina-bench
# The build that the fault runs, the SDK suites and the dashboard's tests run against: the release
# build when they are run on their own, the debug one within `make test` (CHECK_PROFILE=dev),
# which its Rust tests have just built; a release build would add minutes to every CI run.
CHECK_PROFILE ?= release
CHECK_BIN := $(TARGET_DIR)/$(if $(filter dev,$(CHECK_PROFILE)),debug,$(CHECK_PROFILE))
# The debug binaries are the ones `cargo test --workspace` builds (both packages have integration
# tests): the same command finds them up to date, where a `cargo build` of the two packages would
# resolve other dependency features and rebuild part of the workspace.
# `$(call CHECK_BUILD,PACKAGES)` builds what a run needs.
CHECK_BUILD = $(if $(filter dev,$(CHECK_PROFILE)),$(CARGO) test --workspace --no-run -q,\
  $(CARGO) build --profile $(CHECK_PROFILE) $(1))

.PHONY: help run build test lint fmt openapi openapi-check migrate clean-db ensure-postgres bench bench-push \
  bench-sweep bench-smoke explain faults sdk-test compat dashboard dashboard-test

help: ## List the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | \
	  awk 'BEGIN { FS = ":.*## " } { printf "  make %-16s %s\n", $$1, $$2 }'

run: ensure-postgres ## Build the dashboard and the broker (release), run it in the foreground on :6632; Ctrl-C stops it and its dev database
	@bash scripts/dashboard-build.sh --optional
	$(CARGO) build --release -p regina
	exec $(REGINA) serve

build: ## Build the whole workspace (debug)
	$(CARGO) build --workspace --all-targets

test: ensure-postgres ## Every test: format check, clippy, Rust tests, fault runs, the SDK suites, the dashboard's browser tests
	@# The dashboard first, so that every broker build below embeds it.
	@bash scripts/dashboard-build.sh
	$(CARGO) fmt --all --check
	$(CARGO) clippy --workspace --all-targets -- -D warnings
	$(MAKE) --no-print-directory openapi-check
	@status=0; $(CARGO) test --workspace --no-fail-fast || status=$$?; \
	  bash scripts/pg-stop.sh --delete-memory "$(TEST_PG_DIR)"; exit $$status
	$(MAKE) --no-print-directory faults CHECK_PROFILE=dev
	$(MAKE) --no-print-directory sdk-test CHECK_PROFILE=dev
	$(MAKE) --no-print-directory dashboard-test CHECK_PROFILE=dev

lint: ## Format check and clippy with warnings as errors
	$(CARGO) fmt --all --check
	$(CARGO) clippy --workspace --all-targets -- -D warnings

fmt: ## Format all Rust code
	$(CARGO) fmt --all

openapi: ## Regenerate api/openapi.json from the route catalogue and request types (a test fails when it is stale)
	$(CARGO) run -q -p regina -- openapi > api/openapi.json

openapi-check: ## Validate api/openapi.json against the OpenAPI 3.1 schema (installs the validator in target/)
	bash scripts/openapi-check.sh api/openapi.json

migrate: ensure-postgres ## Apply migrations and SQL functions (to the dev database unless DATABASE_URL/PG_* is set)
	$(CARGO) build --release -p regina
	$(REGINA) migrate

clean-db: ## Stop the dev database and delete .regina/
	bash scripts/pg-stop.sh --delete "$(DEV_DIR)/pgdata"
	rm -rf -- "$(DEV_DIR)"

ensure-postgres: ## Install the PostgreSQL binaries (and check cargo) when missing
	@bash scripts/ensure-postgres.sh

bench: ensure-postgres ## Benchmark matrix: every shape on broker, raw and (push shapes) ceiling (an hour or so; bench/results/<date>-matrix/)
	$(CARGO) build --release -p regina -p regina-bench
	$(BENCH) matrix $(BENCH_ARGS)

bench-push: ensure-postgres ## Push shapes only on broker, raw and ceiling, with their ratios (bench/results/<date>-push/)
	$(CARGO) build --release -p regina -p regina-bench
	$(BENCH) matrix --push-only $(BENCH_ARGS)

bench-sweep: ensure-postgres ## Partition-scaling sweep hi-part-10 … hi-part-100k (reports and curve in bench/results/)
	$(CARGO) build --release -p regina -p regina-bench
	$(BENCH) sweep --target broker $(BENCH_ARGS)

bench-smoke: ensure-postgres ## A few seconds of a few scenarios on every target, release build (CI runs a smoke test through cargo test)
	$(CARGO) build --release -p regina -p regina-bench
	$(BENCH) run bp-10 bp-100-spread cg-5 pop-ack --duration 3 --warmup 1 --prefill 20000 --out $(TARGET_DIR)/bench-smoke
	$(BENCH) run steady-state --duration 3 --warmup 1 --stored 200000 --retention-span 20 --out $(TARGET_DIR)/bench-smoke

explain: ensure-postgres ## EXPLAIN of every admin, status and analytics statement on a large fixture (minutes; report in bench/results/<date>-explain/)
	$(CARGO) build --release -p regina-bench
	$(BENCH) explain $(EXPLAIN_ARGS)

# Seconds of load per fault run: short in `make test`, longer on demand (`make faults FAULT_SECONDS=600`).
FAULT_SECONDS ?= 15

faults: ensure-postgres ## Fault runs: broker kill -9, database outage, overload, two brokers, hostile input (FAULT_SECONDS each)
	$(call CHECK_BUILD,-p regina -p regina-bench)
	$(CHECK_BIN)/regina-bench fault --seconds $(FAULT_SECONDS) $(FAULT_ARGS)

# The SDKs whose suites `make sdk-test` runs (each has a test.sh that installs what it needs).
SDKS ?= typescript python go

sdk-test: ensure-postgres ## SDK suites (unit, conformance scenarios, README samples) against a live broker
	$(call CHECK_BUILD,-p regina)
	@status=0; for sdk in $(SDKS); do \
	  echo "== sdks/$$sdk"; REGINA_BIN=$(CHECK_BIN)/regina bash sdks/$$sdk/test.sh || status=1; \
	done; exit $$status

compat: ensure-postgres ## Compatibility matrix: every queen-mq release of PyPI (own virtualenvs) against a live broker; table in target/queen-compat/
	$(call CHECK_BUILD,-p regina)
	REGINA_BIN=$(CHECK_BIN)/regina bash sdks/python/compat/matrix.sh $(COMPAT_RELEASES)

dashboard: ## Build the web dashboard into dashboard/dist (npm ci when needed); the next broker build embeds it
	@bash scripts/dashboard-build.sh

dashboard-test: ensure-postgres ## Dashboard: type-check, lint, browser tests (headless Chromium) against a live broker
	@bash scripts/dashboard-build.sh
	cd dashboard && npm run --silent typecheck && npm run --silent lint
	$(call CHECK_BUILD,-p regina)
	REGINA_BIN=$(CHECK_BIN)/regina SCREENSHOT_DIR=$(TARGET_DIR)/dashboard-screenshots bash dashboard/e2e/run.sh
