# The README's commands are `make serve` (the page), `make replay` (the
# command line) and `make test`.
GO ?= go
NODE ?= node
GOROOT := $(shell $(GO) env GOROOT)
# go test under node: Go's own runner for GOOS=js binaries.
WASM_PATH := $(GOROOT)/lib/wasm:$(PATH)
ADDR ?= 127.0.0.1:8080

.PHONY: all build wasm site-packs serve fake replay test test-go test-wasm test-node test-browser vet fuzz bench bench-go bench-page bench-packs clean chromium

all: build wasm

build:
	$(GO) build -o bin/ragagent ./cmd/ragagent
	$(GO) build -o bin/fakegemini ./cmd/fakegemini

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

wasm:
	GOOS=js GOARCH=wasm $(GO) build -trimpath -ldflags='-s -w' -gcflags='$(WASM_GCFLAGS)' -o site/main.wasm.new ./wasm
	if cmp -s site/main.wasm.new site/main.wasm; then rm site/main.wasm.new; else mv site/main.wasm.new site/main.wasm; fi
	cp "$(GOROOT)/lib/wasm/wasm_exec.js" site/wasm_exec.js
	$(MAKE) --no-print-directory site/main.wasm.gz $(if $(shell command -v brotli),site/main.wasm.br) site-packs

# The corpus packs the page offers, copied from packs/ (not committed
# twice): each pack's manifest and gzip passages file, which the page
# fetches only when someone chooses the pack, and site/packs/index.json,
# the manifests the picker lists.
PACKS := $(patsubst packs/%/manifest.json,%,$(wildcard packs/*/manifest.json))
site-packs: $(foreach p,$(PACKS),site/packs/$(p)/manifest.json) site/packs/index.json

site/packs/%/manifest.json: packs/%/manifest.json packs/%/passages.sqlite.gz
	mkdir -p $(@D)
	cp packs/$*/passages.sqlite.gz $(@D)/passages.sqlite.gz
	cp $< $@

site/packs/index.json: $(foreach p,$(PACKS),packs/$(p)/manifest.json)
	mkdir -p $(@D)
	{ printf '{"packs": ['; sep=; for m in $^; do printf '%s' "$$sep"; cat "$$m"; sep=,; done; printf ']}\n'; } > $@.tmp && mv $@.tmp $@

site/main.wasm.gz: site/main.wasm
	gzip -9 -n -c $< > $@.tmp && mv $@.tmp $@

site/main.wasm.br: site/main.wasm
	brotli -q 11 -f -o $@.tmp $< && mv $@.tmp $@ && touch $@

serve: wasm
	$(GO) run ./cmd/serve --addr $(ADDR) --dir site

# The loopback fake Gemini API, for trying `ragagent live` or the page
# without a key: prints its URL, answers with the scripted policy.
fake:
	$(GO) run ./cmd/fakegemini

replay:
	$(GO) run ./cmd/ragagent replay

test: vet test-go test-wasm test-node test-browser

vet:
	$(GO) vet ./...
	GOOS=js GOARCH=wasm $(GO) vet ./wasm

test-go:
	$(GO) test ./...

# The core's own suites again, compiled to WASM (with the engine's flags)
# and run under node.
test-wasm:
	PATH="$(WASM_PATH)" GOOS=js GOARCH=wasm $(GO) test -gcflags='$(WASM_GCFLAGS)' ./core/... ./wasm

test-node: wasm
	$(NODE) --test tests/node/

test-browser: wasm node_modules/.package-lock.json chromium
	$(NODE) --test --test-concurrency=1 tests/browser/

# A short run of every fuzz target (go test allows one target per run).
FUZZTIME ?= 15s
FUZZ_TARGETS = core/pyjson:FuzzDecode core/agent:FuzzValidateDecision core/gemini:FuzzDecode core/recording:FuzzParse \
	core/gemini:FuzzLiveReply internal/geminitest:FuzzParseScript core/policy:FuzzScripted core/policy:FuzzNext \
	core/rerank:FuzzCandidateValidator core/builder:FuzzReadPassages core/store:FuzzOpenImage
fuzz:
	@for t in $(FUZZ_TARGETS); do \
		pkg=$${t%%:*}; fn=$${t##*:}; \
		echo "fuzz ./$$pkg $$fn ($(FUZZTIME))"; \
		$(GO) test ./$$pkg -run '^$$' -fuzz "^$$fn\$$" -fuzztime $(FUZZTIME) || exit 1; \
	done

bench: bench-go bench-page bench-packs

bench-go:
	$(GO) test ./... -run '^$$' -bench . -benchmem

# The Python pack natively and compiled to WebAssembly side by side, with
# the load average before and after: made ready from its bytes and searched
# (200 queries) natively, in node, with @sqlite.org/sqlite-wasm for
# comparison, and in headless Chromium (scripts/bench-packs.mjs).
bench-packs: wasm node_modules/.package-lock.json chromium
	$(NODE) scripts/bench-packs.mjs

# Page figures: sizes, start-up in headless Chromium, replay and FTS5 search
# in the browser, in node and natively.
bench-page: wasm
	$(NODE) scripts/bench-page.mjs

clean:
	rm -rf bin site/main.wasm site/main.wasm.gz site/main.wasm.br site/wasm_exec.js site/packs

# The pinned test driver (playwright-core; it downloads no browser), installed
# from the committed lock file whenever the lock file is newer.
node_modules/.package-lock.json: package-lock.json
	npm ci --no-audit --no-fund

# Debian's Chromium drives the browser tests. Installed with apt-get when
# missing and allowed (root or sudo); otherwise a one-line instruction.
chromium:
	@command -v chromium >/dev/null 2>&1 || [ -x /usr/bin/chromium ] || { \
		if [ "$$(id -u)" = 0 ]; then SUDO=; elif command -v sudo >/dev/null 2>&1; then SUDO=sudo; else \
			echo "the browser tests need Debian's chromium: apt-get install chromium" >&2; exit 1; fi; \
		DEBIAN_FRONTEND=noninteractive $$SUDO apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq chromium >/dev/null; }
