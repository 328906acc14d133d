# hotpath — a Redis module in Rust. `make help` lists the targets.
SHELL := /bin/bash
PORT ?= 6379
SO := target/release/libhotpath.so
SERVER ?= redis-server
export PATH := $(HOME)/.cargo/bin:$(PATH)
# The project's Python (scripts/deps.sh makes the venv): the benchmark, the
# Valkey run and the tests that run examples/quickstart.py all use it.
export HOTPATH_PYTHON := $(CURDIR)/.venv/bin/python

.PHONY: help deps build run test check bench lint fmt fuzz docker release install matrix fresh-debian clean cluster-soak stock-soak stock-cluster idem-proof cluster-bench lua-gen lua-load differential clients-polyglot

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-12s %s\n", $$1, $$2}'

deps: ## install what the build and the tests need (Debian 12, as root)
	@bash scripts/deps.sh

build: deps ## build the module in release mode
	cargo build --release
	@echo "built $(SO)"

run: build ## start redis-server on PORT (default 6379) with the module loaded
	@if (exec 3<>/dev/tcp/127.0.0.1/$(PORT)) 2>/dev/null; then \
	  echo "port $(PORT) is already in use (another redis-server?): try make run PORT=6380"; exit 1; fi
	$(SERVER) --port $(PORT) --save "" --appendonly no --loadmodule $(CURDIR)/$(SO)

test: build ## the whole suite: unit, model, integration on redis-server 7 and valkey-server 9 (CI runs this)
	@bash scripts/test.sh full

check: deps ## the quick tier: mypy --strict on the Python client, unit and model tests, every reference page's examples (redis-server only)
	@bash scripts/test.sh check

bench: build ## run the side-by-side benchmark (module vs Lua twin vs native)
	@bash scripts/bench.sh

fuzz: build ## send 1,000,000 random commands to a real server (FUZZ_COMMANDS, FUZZ_SEED)
	HOTPATH_PARSER_FUZZ=1000000 cargo test --release --lib parser_fuzz
	FUZZ_COMMANDS=$${FUZZ_COMMANDS:-1000000} FUZZ_SEED=$${FUZZ_SEED:-time} cargo test --release --test integration fuzz:: -- --nocapture

cluster-soak: build ## long cluster runs: repeated failovers and slot moves under load (3 masters + 3 replicas)
	cargo test --release --test integration cluster_ha::soak_ -- --ignored --nocapture --test-threads=1
	cargo test --release --test integration cluster_spread::soak_ -- --ignored --nocapture --test-threads=1

stock-soak: build ## long STOCK run: 50 clients, 40 batches of random reserve/confirm/release with short leases, checked after each
	cargo test --release --test integration stock::soak_ -- --ignored --nocapture

stock-cluster: build ## spread STOCK on the 3+3 cluster: 10,000 units, 100,000 buyers, a master killed and a slot moved; and the capacity of one master against three, by CPU
	cargo test --release --test integration stock_spread::soak_ -- --ignored --nocapture --test-threads=1

idem-proof: build ## the long IDEM token proof: 1,000,000 randomized writes retried 0-3 times across a kill -9 and a replica promotion (HOTPATH_IDEM_PROOF_N)
	cargo test --release --test integration idem_token::proof_long -- --ignored --nocapture

cluster-bench: build ## fan-out measured client-side vs over the cluster bus (prototype in bench/busproto)
	cargo build --release -p hotpath-busproto
	cargo test --release --test integration cluster_ha::fanout_ -- --ignored --nocapture
	cargo test --release --test integration cluster_spread::bench_ -- --ignored --nocapture --test-threads=1

clients-polyglot: build ## the Node (ioredis) and Go (go-redis) snippets of docs/clients.md on a server with the module (runtimes from Debian, libraries from npm and the Go module proxy; offline Go: GO_MODULES_DIR=dir from scripts/go-modules-dir.sh; SERVER=...)
	@bash scripts/clients-polyglot.sh

lua-gen: ## rebuild lua-compat/generated/ (the Lua twins, the Functions library) from lua-compat/src/, then check it
	python3 scripts/lua-gen.py
	python3 scripts/lua-gen.py --check

lua-load: ## load the Functions library lua-compat/generated/hotpath.lua into URL (default redis://127.0.0.1:6379)
	bash scripts/lua-load.sh $(URL)

differential: build ## long module-vs-Lua differential campaign, fresh seed (DIFF_SEED, DIFF_CALLS)
	DIFF_CALLS=$${DIFF_CALLS:-200000} cargo test --release --test integration differential::campaign -- --ignored --nocapture --test-threads=1

# Files whose `mod` lines build.rs writes: cargo fmt does not reach them.
GENERATED_MOD_FILES = tests/*.rs tests/differential/*.rs tests/no_partial_writes/*.rs clients/rust/src/entities/*.rs

lint: ## clippy with warnings as errors, and the formatting check (cargo fmt and the files whose mod lines are generated)
	@bash scripts/deps.sh --lint
	cargo clippy --release --all-targets -- -D warnings
	cargo fmt --all -- --check
	rustfmt --edition 2021 --check $(GENERATED_MOD_FILES)

fmt: ## format the code (cargo fmt, and the files whose mod lines build.rs generates)
	@bash scripts/deps.sh --lint
	cargo fmt --all
	rustfmt --edition 2021 $(GENERATED_MOD_FILES)

fresh-debian: ## run make run + make test in a new Debian 12 chroot, as root (minutes; not in make test)
	bash scripts/fresh-debian.sh

docker: ## build the Docker image (needs a Docker engine)
	docker build -f docker/Dockerfile -t hotpath .

matrix: build ## the integration suite once on another server: make matrix SERVER=/path/to/redis-server, or SOURCE=/path/to/redis-or-valkey-src (built first)
	@bash scripts/test.sh matrix "$(if $(filter file,$(origin SERVER)),,$$(command -v $(SERVER)))" "$(SOURCE)"

release: deps ## build dist/hotpath-<version>-<os>-<arch>.so with its SHA-256, and the Python wheel
	@bash scripts/release.sh

PREFIX ?= /usr/local
MODULEDIR ?= $(PREFIX)/lib/redis/modules
install: build ## install the module as $(MODULEDIR)/hotpath.so (PREFIX, MODULEDIR, DESTDIR as usual)
	install -d "$(DESTDIR)$(MODULEDIR)"
	install -m 0755 $(SO) "$(DESTDIR)$(MODULEDIR)/hotpath.so"
	@echo "installed $(DESTDIR)$(MODULEDIR)/hotpath.so; add to redis.conf: loadmodule $(MODULEDIR)/hotpath.so"

clean: ## remove build output
	cargo clean
