# The README's two commands are `make replay` (the main job) and `make test`.
GO ?= go

.PHONY: all build replay test test-go vet fuzz bench fake clean

all: build

build:
	$(GO) build -o bin/ragagent ./cmd/ragagent
	$(GO) build -o bin/fakegemini ./cmd/fakegemini

# The loopback fake Gemini API, for trying `ragagent live` or the page
# without a key: prints its URL, answers with the scripted policy.
fake:
	$(GO) run ./cmd/fakegemini

replay:
	$(GO) run ./cmd/ragagent replay

test: vet test-go

vet:
	$(GO) vet ./...

test-go:
	$(GO) test ./...

# A short run of every fuzz target (go test allows one target per run).
FUZZTIME ?= 15s
FUZZ_TARGETS = core/pyjson:FuzzDecode core/agent:FuzzValidateDecision core/gemini:FuzzDecode core/recording:FuzzParse \
	core/gemini:FuzzLiveReply core/gemini/geminitest:FuzzParseScript core/policy:FuzzScripted core/policy:FuzzNext \
	core/rerank:FuzzCandidateValidator
fuzz:
	@for t in $(FUZZ_TARGETS); do \
		pkg=$${t%%:*}; fn=$${t##*:}; \
		echo "fuzz ./$$pkg $$fn ($(FUZZTIME))"; \
		$(GO) test ./$$pkg -run '^$$' -fuzz "^$$fn\$$" -fuzztime $(FUZZTIME) || exit 1; \
	done

bench:
	$(GO) test ./... -run '^$$' -bench . -benchmem

clean:
	rm -rf bin
