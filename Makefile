# Coppice — `make help` lists the targets.
GO        ?= go
DATA      ?= ./data
ADDR      ?= 127.0.0.1:8080
N         ?= 100000
# Pebble compresses with klauspost's pure-Go zstd (no cgo zstd needed).
GOTAGS    ?= pebblegozstd
FUZZTIME  ?= 30s
PREFIX    ?= /usr/local
DESTDIR   ?=
CONTAINER ?= podman

.PHONY: help build install image run test test-long bench bench-engine fuzz vet lint

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk 'BEGIN{FS=":.*## "}{printf "  %-13s %s\n", $$1, $$2}'

build: ## build bin/coppice (with the commit `coppice version` shows, when built from a git clone)
	$(GO) build -buildvcs=auto -tags $(GOTAGS) -o bin/coppice ./cmd/coppice

install: build ## install bin/coppice to $(DESTDIR)$(PREFIX)/bin (PREFIX=/usr/local)
	install -d $(DESTDIR)$(PREFIX)/bin
	install -m 0755 bin/coppice $(DESTDIR)$(PREFIX)/bin/coppice

image: ## build the container image coppice:latest with $(CONTAINER) (podman or docker)
	$(CONTAINER) build $(if $(filter podman,$(CONTAINER)),--format docker) -t coppice:latest .

run: build ## start the server on $(ADDR) with data in $(DATA)
	./bin/coppice serve --addr $(ADDR) --data $(DATA)

test: vet ## run the test suite (what CI runs): unit, model and fuzz-seed tests
	$(GO) test -tags $(GOTAGS) -short -count=1 ./...

test-long: ## run the long tests and fuzz every fuzz target for $(FUZZTIME)
	$(GO) test -tags $(GOTAGS) -count=1 -timeout 60m ./...
	@set -e; for pkg in $$($(GO) list ./...); do \
	  for f in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz' || true); do \
	    echo "fuzz $$pkg $$f"; \
	    $(GO) test -tags $(GOTAGS) -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) $$pkg; \
	  done; \
	done

bench: ## run the side-by-side suite (W1-W8 vs PostgreSQL, Bleve, ceilings) at N docs into bench/results/DATE-N.md
	GO=$(GO) ./bench/run.sh $(N)

bench-engine: ## run the engine benchmarks (sizes up to 1e6) into bench/results/engine-DATE.txt
	@mkdir -p bench/results
	@out=bench/results/engine-$$(date -u +%Y%m%d-%H%M%S).txt; \
	COPPICE_BENCH_MAX=$(or $(BENCH_MAX),1000000) $(GO) test -tags $(GOTAGS) -run '^$$' -bench . \
	  -benchtime $(or $(BENCHTIME),2s) -timeout 120m ./engine/ 2>&1 | tee $$out; \
	grep -q '^ok' $$out || { echo "benchmarks failed; output in $$out"; exit 1; }

vet: ## go vet and gofmt check
	$(GO) vet -tags $(GOTAGS) ./...
	@test -z "$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))" || { gofmt -l .; echo "gofmt needed"; exit 1; }
