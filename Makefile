# The README's commands are `make serve` (the page), `make replay` (the
# command line) and `make test`.
GO ?= go
NODE ?= node
GOROOT := $(shell $(GO) env GOROOT)
# go test under node: Go's own runner for GOOS=js binaries.
WASM_PATH := $(GOROOT)/lib/wasm:$(PATH)
ADDR ?= 127.0.0.1:8080

.PHONY: sites bench-retrieval bench-retrieval-rounds lint-api all build wasm site-packs vendor worker migrations serve-worker test-worker serve demo fake replay serve-api test test-beside-browser test-go test-wasm test-node test-browser vet fuzz bench bench-go bench-server bench-page bench-packs bench-crossencoder bench-node crossencode tiny-cross-encoder tiny-embedder clean chromium screenshots

all: build wasm

# The command line, the fake Gemini API and the static server in bin/ (the
# node and browser tests run these: RAGAGENT_BIN).
build:
	$(GO) build -o bin/ragagent ./cmd/ragagent
	$(GO) build -o bin/fakegemini ./cmd/fakegemini
	$(GO) build -o bin/serve ./cmd/serve

# The engine for the page and the node tests: site/main.wasm, its gzip twin
# (and a brotli twin when the brotli command is installed; the server
# prefers it) and Go's wasm_exec.js. None of them is committed. The twins
# are remade only when main.wasm changed.
# WASM_GCFLAGS drops Go's bounds checks in the machine-translated SQLite
# (go-sqlite3-wasm: C compiled to WASM, then to Go). Every load and store
# of SQLite's linear memory there carries a check and a panic call, which
# the Go WASM backend turns into extra blocks and resume points: without
# them main.wasm is 23% smaller (19.1 -> 14.7 MB, 4.96 -> 3.73 MB gzip) and
# the code V8 must compile before the engine is ready shrinks by a third.
# SQLite's own code has no such checks in any C build; the rest of the
# program (the go-sqlite3 wrapper included) keeps them. See docs/page.md.
WASM_GCFLAGS ?= github.com/ncruces/go-sqlite3-wasm/v6/...=-B
# The flags every js/wasm compile of make test shares (vet's, the builds',
# test-wasm's): the same flags are the same compiled packages in Go's cache.
WASM_BUILDFLAGS = -trimpath -gcflags='$(WASM_GCFLAGS)'

wasm:
	GOOS=js GOARCH=wasm $(GO) build $(WASM_BUILDFLAGS) -ldflags='-s -w' -o site/main.wasm.new ./wasm
	if cmp -s site/main.wasm.new site/main.wasm; then rm site/main.wasm.new; else mv site/main.wasm.new site/main.wasm; fi
	cp "$(GOROOT)/lib/wasm/wasm_exec.js" site/wasm_exec.js
	$(MAKE) --no-print-directory site/main.wasm.gz $(if $(shell command -v brotli),site/main.wasm.br) site-packs

# The corpus packs the page offers, copied from fixtures/packs/ (not committed
# twice): each pack's manifest and gzip passages file, which the page
# fetches only when someone chooses the pack, and site/packs/index.json,
# the manifests the picker lists.
PACKS := $(patsubst fixtures/packs/%/manifest.json,%,$(wildcard fixtures/packs/*/manifest.json))
site-packs: $(foreach p,$(PACKS),site/packs/$(p)/manifest.json) site/packs/index.json

site/packs/%/manifest.json: fixtures/packs/%/manifest.json fixtures/packs/%/passages.sqlite.gz
	mkdir -p $(@D)
	cp fixtures/packs/$*/passages.sqlite.gz $(@D)/passages.sqlite.gz
	cp $< $@

site/packs/index.json: $(foreach p,$(PACKS),fixtures/packs/$(p)/manifest.json)
	mkdir -p $(@D)
	{ printf '{"packs": ['; sep=; for m in $^; do printf '%s' "$$sep"; cat "$$m"; sep=,; done; printf ']}\n'; } > $@.tmp && mv $@.tmp $@

# The server edition as a Cloudflare Worker (worker/): the Go program for
# js/wasm (with the engine's flags), syumai/workers' wasm_exec.js and the
# entry module, in worker/build/ (wrangler.toml's main), and the packs it
# offers besides the seed (WORKER_PACKS: shipped pack ids or pack folders;
# build/packs.mjs and their gzip passages as Data modules). Prints the
# sizes against Workers' 10 MB compressed limit.
WORKER_PACKS ?= python-3.11
worker:
	mkdir -p worker/build
	GOOS=js GOARCH=wasm $(GO) build $(WASM_BUILDFLAGS) -ldflags='-s -w' -o worker/build/app.wasm.new ./worker
	if cmp -s worker/build/app.wasm.new worker/build/app.wasm; then rm worker/build/app.wasm.new; else mv worker/build/app.wasm.new worker/build/app.wasm; fi
	$(GO) run github.com/syumai/workers/cmd/workers-assets-gen -mode=go -o worker/build/assets
	cp worker/build/assets/wasm_exec.js worker/worker.mjs worker/d1wire.mjs worker/r2.mjs worker/build/ && rm -rf worker/build/assets
	$(NODE) scripts/worker-packs.mjs worker/build $(foreach p,$(WORKER_PACKS),$(if $(findstring /,$(p)),$(p),fixtures/packs/$(p)))
	@echo "worker/build/app.wasm: $$(wc -c < worker/build/app.wasm) bytes, $$(gzip -9 -n -c worker/build/app.wasm | wc -c) gzip -9"

# The Worker's D1 migrations, generated from the store's schema (the one
# source): 0001 the whole schema, 0002 the experiments' tables (for a
# database that applied 0001 before them); TestWorkerMigrationIsTheSchema
# fails when they drift.
migrations:
	$(GO) test ./internal/server -run '^TestWorkerMigrationIsTheSchema$$' -count=1 -update

# The Worker on this machine (wrangler dev, offline, a local D1 in
# worker/.wrangler/state): secrets from worker/.dev.vars.
serve-worker: worker node_modules/.package-lock.json
	cd worker && WRANGLER_SEND_METRICS=false ../node_modules/.bin/wrangler dev --local --ip 127.0.0.1 --port 8787 --show-interactive-dev-session=false

site/main.wasm.gz: site/main.wasm
	gzip -9 -n -c $< > $@.tmp && mv $@.tmp $@

site/main.wasm.br: site/main.wasm
	brotli -q 11 -f -o $@.tmp $< && mv $@.tmp $@ && touch $@

serve: wasm vendor
	$(GO) run ./cmd/serve --addr $(ADDR) --dir site

# The page with the loopback fake Gemini API beside it, already allowed by
# the page's CSP: a live run without a key. It prints the address to open.
demo: wasm vendor
	$(GO) run ./cmd/serve --addr $(ADDR) --dir site --demo

# The cross-encoder's runtime for the page, copied from the pinned npm
# packages (package-lock.json), never fetched from a CDN: transformers.js's
# self-contained browser bundle and the ONNX Runtime Web build it loads (the
# plain SIMD WebAssembly build: the page scores on the CPU, not WebGPU),
# with gzip twins and the licences. Not committed; remade when the lock
# file changes. See docs/crossencoder.md.
VENDOR := site/vendor
TJS := node_modules/@huggingface/transformers
ORTW := node_modules/onnxruntime-web

vendor: $(VENDOR)/.stamp

$(VENDOR)/.stamp: node_modules/.package-lock.json
	rm -rf $(VENDOR) && mkdir -p $(VENDOR)
	cp $(TJS)/dist/transformers.min.js $(ORTW)/dist/ort-wasm-simd-threaded.mjs $(ORTW)/dist/ort-wasm-simd-threaded.wasm $(VENDOR)/
	cp $(TJS)/LICENSE $(VENDOR)/LICENSE-transformers.js.txt
	printf 'onnxruntime-web %s: MIT licence, Copyright (c) Microsoft Corporation.\n' "$$($(NODE) -p 'require("./$(ORTW)/package.json").version')" > $(VENDOR)/LICENSE-onnxruntime-web.txt
	for f in transformers.min.js ort-wasm-simd-threaded.mjs ort-wasm-simd-threaded.wasm; do gzip -9 -n -c $(VENDOR)/$$f > $(VENDOR)/$$f.gz; done
	touch $@

# Scores the 4 original and 12 expanded cases with the cross-encoder under
# node (transformers.js with onnxruntime-node) and writes a recording that
# `ragagent rerank --cross-encoder FILE` replays. Needs the network for the
# model files (or MODEL_DIR, a folder holding them); OUT must not exist.
OUT ?= ragagent-cross-encoder.json
crossencode: wasm node_modules/.package-lock.json
	$(NODE) scripts/crossencode.mjs --output $(OUT) $(if $(MODEL_DIR),--model-dir $(MODEL_DIR)) $(if $(HOST),--host $(HOST))

# Remakes the tests' tiny cross-encoder (tests/fixtures/tiny-cross-encoder)
# with Debian's python3-torch and python3-onnx.
tiny-cross-encoder:
	/usr/bin/python3 scripts/tiny-cross-encoder.py tests/fixtures/tiny-cross-encoder

# Remakes the tests' tiny sentence-embedding model (tests/fixtures/tiny-embedder,
# for lab/embed.mjs) with Debian's python3-torch and python3-onnx; its
# vocabulary comes from the bundled packs' passages.
tiny-embedder:
	/usr/bin/python3 scripts/tiny-embedder.py tests/fixtures/tiny-embedder

# The loopback fake Gemini API, for trying `ragagent live` or the page
# without a key: prints its URL, answers with the scripted policy.
fake:
	$(GO) run ./cmd/fakegemini

replay:
	$(GO) run ./cmd/ragagent replay

# The server edition (api/openapi.json): the runs API with its state in
# API_DB. RAGAGENT_TOKEN_PEPPER must be set (tokens are stored as its
# HMACs); GOOGLE_API_KEY or GEMINI_API_KEY enables gemini runs. Make a
# token first: go run ./cmd/ragagent tokens add --db $(API_DB) --name me
API_DB ?= ragagent-api.db
API_ADDR ?= 127.0.0.1:8090
serve-api:
	$(GO) run ./cmd/ragagent serve-api --db $(API_DB) --addr $(API_ADDR)

# make test: the builds the suites use, side by side (their output kept
# apart, -O); then the browser suite beside vet and the other suites; then
# the server package's native tests alone.
# The browser suite is the longest (about 250 s beside the others on a
# 2-core machine, three files at a time: one at a time it used 0.65 cores,
# its pages waiting on timers, the fake model and Chromium's own threads),
# and the other suites fill the gap: vet (which, after the WebAssembly builds compiled every dependency
# for js/wasm with the very flags of test-wasm, -trimpath and WASM_GCFLAGS,
# compiles them natively for test-go), test-wasm, test-node and the native
# tests of every package but internal/server.
# internal/server runs last and alone: its tests wait on the local Worker
# (workerd, one thread), and beside the WASM suites they took 443 s
# instead of about 65.
test:
	$(MAKE) --no-print-directory -j2 -Otarget worker wasm vendor build node_modules/.package-lock.json
	$(MAKE) --no-print-directory -j2 -Otarget test-browser test-beside-browser
	$(GO) test -vet=off ./internal/server

# What make test runs beside the browser suite, in this order.
test-beside-browser:
	$(MAKE) --no-print-directory vet lint-api test-wasm test-node sites
	$(GO) test -vet=off $$($(GO) list ./... | grep -v '/internal/server$$')

# The documentation sites' packs (scripts/build-site-pack.sh: Debian's HTML
# documentation, unpacked into .cache/debian, never installed), rebuilt in
# .cache/packs by this checkout's builder, and the leave-one-site-out
# measurement over them and the shipped packs: the tables of
# docs/retrieval.md and the claims it makes of the default and of tune
# (fixtures/packs TestLeaveOneSiteOut). The packs are not committed.
SITES := postgresql nodejs git bash cmake
sites: build
	for s in $(SITES); do RAGAGENT=bin/ragagent sh scripts/build-site-pack.sh $$s >/dev/null || exit 1; done
	$(GO) test -vet=off -count=1 -run '^TestLeaveOneSiteOut$$' ./fixtures/packs -sites "$(CURDIR)/.cache/packs" -v

# The API document under Redocly CLI's recommended rules, warnings failing
# too (recommended-strict), offline: @redocly/cli is pinned in
# package-lock.json; no telemetry, no update check.
lint-api: node_modules/.package-lock.json
	REDOCLY_TELEMETRY=off REDOCLY_SUPPRESS_UPDATE_NOTICE=true node_modules/.bin/redocly lint api/openapi.json --extends recommended-strict

vet:
	$(GO) vet ./...
	GOOS=js GOARCH=wasm $(GO) vet $(WASM_BUILDFLAGS) ./wasm ./worker ./internal/jsbridge

# Natively, and the API tests against the local Worker (TestWorker:
# wrangler dev, offline, started once; skipped with a message when wrangler
# or the built Worker is missing). go test's own vet pass is off here and in
# test-wasm: make test runs the whole of go vet before them (a superset of it),
# and on a fresh machine the pass cost about 23 s natively.
test-go: worker node_modules/.package-lock.json
	$(GO) test -vet=off ./...

# The core's own suites again, compiled to WASM (with the engine's flags)
# and run under node by scripts/go-wasm-test-exec (Go's go_js_wasm_exec
# with V8's baseline compiler alone: see the script).
test-wasm:
	GO="$(GO)" NODE="$(NODE)" GOOS=js GOARCH=wasm $(GO) test -vet=off $(WASM_BUILDFLAGS) -exec "$(CURDIR)/scripts/go-wasm-test-exec" ./core/... ./wasm ./internal/jsbridge

# The node tests, the node module's among them (tests/node/lab*.test.mjs:
# against the command line's --json, and its packed tarball installed
# offline), and the examples a user copies (examples/node/).
# Under V8's baseline WebAssembly compiler alone (--liftoff-only, passed on
# to each test file's process): a test file starts the engine for seconds,
# and the optimising tier compiled main.wasm on the second core meanwhile
# (4.7 s of CPU a process against 0.7 s; the suite's CPU 311 -> 173 s).
# bench-node measures with the optimising tier, as users run.
test-node: wasm vendor build
	RAGAGENT_BIN="$(CURDIR)/bin" $(NODE) --liftoff-only --test tests/node/ examples/node/

# The pages skip the warm-up and run the engine on V8's baseline compiler
# alone, but for the warm-up's own tests (tests/browser/harness.mjs, launch).
test-browser: wasm vendor chromium build
	RAGAGENT_BIN="$(CURDIR)/bin" $(NODE) --test --test-concurrency=3 tests/browser/

# The browser suite again, saving its screenshots of every view for people
# to look at (tests/browser/screenshots/, not committed): make test skips
# them (nothing asserts on them; tests/browser/harness.mjs, screenshot).
screenshots: wasm vendor chromium build
	RAGAGENT_SCREENSHOTS=1 RAGAGENT_BIN="$(CURDIR)/bin" $(NODE) --test --test-concurrency=3 tests/browser/

# A short run of every fuzz target (go test allows one target per run).
FUZZTIME ?= 15s
FUZZ_TARGETS = core/pyjson:FuzzDecode core/pyjson:FuzzMarshalStruct core/agent:FuzzValidateDecision core/gemini:FuzzDecode core/recording:FuzzParse \
	core/gemini:FuzzLiveReply internal/geminitest:FuzzParseScript core/policy:FuzzScripted core/policy:FuzzNext \
	core/rerank:FuzzCandidateValidator core/budget:FuzzOpen core/secret:FuzzRedact core/evaluate:FuzzParseCases cmd/serve:FuzzServePath \
	core/reranklab:FuzzParseScoring core/rerank:FuzzParseModelManifest \
	core/builder:FuzzReadPassages core/builder:FuzzReadHTML core/store:FuzzOpenImage core/store:FuzzOpenLexicon internal/server/store:FuzzDecodeResults \
	internal/remote:FuzzPackArchive
fuzz:
	@for t in $(FUZZ_TARGETS); do \
		pkg=$${t%%:*}; fn=$${t##*:}; \
		echo "fuzz ./$$pkg $$fn ($(FUZZTIME))"; \
		$(GO) test ./$$pkg -run '^$$' -fuzz "^$$fn\$$" -fuzztime $(FUZZTIME) || exit 1; \
	done

bench: bench-go bench-retrieval bench-retrieval-rounds bench-server bench-page bench-packs bench-crossencoder bench-node

# The node module: openLab and the 16-trial replay, first (a fresh
# process) and warm, beside the native command line's replay
# (scripts/bench-node.mjs; RUNS=5 fresh processes).
bench-node: wasm
	$(NODE) scripts/bench-node.mjs

bench-go:
	$(GO) test ./... -run '^$$' -bench . -benchmem

# The retrieval experiment (ragagent retrieval --corpus python-3.11: its 39
# cases under every built-in) natively, then compiled to WebAssembly under
# node (Go's own runner, the engine's flags), with the load average before
# and after: the same benchmark, side by side in one run.
bench-retrieval:
	@uptime
	$(GO) test ./core/engine -run '^$$' -bench 'RetrievalPython' -benchtime 5x
	PATH="$(WASM_PATH)" GOOS=js GOARCH=wasm $(GO) test -gcflags='$(WASM_GCFLAGS)' ./core/engine -run '^$$' -bench 'RetrievalPython' -benchtime 3x
	@uptime

# The Python pack natively and compiled to WebAssembly side by side, with
# the load average before and after: made ready from its bytes and searched
# (200 queries) natively, in node, with @sqlite.org/sqlite-wasm for
# comparison, and in headless Chromium (scripts/bench-packs.mjs).
bench-packs: wasm node_modules/.package-lock.json chromium
	$(NODE) scripts/bench-packs.mjs

# The same experiment per built-in, cold (first-ms) and warm, and the pack
# made ready under every built-in (fixtures/packs), natively and in the WASM
# engine under node in alternating rounds so both see the same load
# (scripts/bench-retrieval.sh).
bench-retrieval-rounds:
	GO=$(GO) scripts/bench-retrieval.sh

# Server edition load scenarios (seconds each, so go test -bench . alone
# skips them): 200 concurrent clients under the caps, cancel to end event,
# kill -9 under load and restart; the load scenario again against the local
# Worker (wrangler dev --local, then workerd alone) when npm ci installed
# wrangler, ending with the Worker's runs/s beside native's. -v: every
# figure as it comes (go test keeps ten lines of a benchmark's log).
bench-server: worker node_modules/.package-lock.json
	RAGAGENT_BENCH_SERVER=1 $(GO) test ./internal/server -run '^$$' -bench Server -benchtime 1x -timeout 30m -v

# Page figures: sizes, start-up in headless Chromium, replay and FTS5 search
# in the browser, in node and natively.
bench-page: wasm
	$(NODE) scripts/bench-page.mjs

# Cross-encoder figures: download size, time to first score after the
# download (cold and from the browser's cache) and scoring time per pair, in
# headless Chromium and under node, for the tiny test model (HOST=https://huggingface.co
# measures the real model where there is a network).
bench-crossencoder: wasm vendor chromium
	$(NODE) scripts/bench-crossencoder.mjs $(if $(HOST),--host $(HOST))

clean:
	rm -rf bin site/main.wasm site/main.wasm.gz site/main.wasm.br site/wasm_exec.js site/packs $(VENDOR) worker/build

# The pinned test driver (playwright-core; it downloads no browser) and the
# cross-encoder's runtime, installed from the committed lock file whenever
# the lock file is newer. No install script runs: onnxruntime-node's would
# download optional CUDA libraries, and everything used ships in the packages.
node_modules/.package-lock.json: package-lock.json
	npm ci --no-audit --no-fund --ignore-scripts

# Debian's Chromium drives the browser tests. Installed with apt-get when
# missing and allowed (root or sudo); otherwise a one-line instruction.
chromium:
	@command -v chromium >/dev/null 2>&1 || [ -x /usr/bin/chromium ] || { \
		if [ "$$(id -u)" = 0 ]; then SUDO=; elif command -v sudo >/dev/null 2>&1; then SUDO=sudo; else \
			echo "the browser tests need Debian's chromium: apt-get install chromium" >&2; exit 1; fi; \
		DEBIAN_FRONTEND=noninteractive $$SUDO apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq chromium >/dev/null; }
