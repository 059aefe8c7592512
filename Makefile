# Coppice — `make help` lists the targets.
GO        ?= go
# ADDR and DATA, when given (make run ADDR=:9000), become --addr and --data;
# otherwise the server reads COPPICE_ADDR and COPPICE_DATA, else its defaults.
ADDR      ?=
DATA      ?=
N         ?= 100000
# Pebble compresses with klauspost's pure-Go zstd (no cgo zstd needed).
GOTAGS    ?= pebblegozstd
FUZZTIME  ?= 30s
PREFIX    ?= /usr/local
DESTDIR   ?=
CONTAINER ?= podman

.PHONY: help build install image image-test run cluster test test-long test-reliability bench bench-engine bench-cluster fuzz vet lint chromium nettools

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk 'BEGIN{FS=":.*## "}{printf "  %-13s %s\n", $$1, $$2}'

build: ## build bin/coppice (with the commit `coppice version` shows, when built from a git clone)
	$(GO) build -buildvcs=auto -tags $(GOTAGS) -o bin/coppice ./cmd/coppice

install: build ## install bin/coppice to $(DESTDIR)$(PREFIX)/bin (PREFIX=/usr/local)
	install -d $(DESTDIR)$(PREFIX)/bin
	install -m 0755 bin/coppice $(DESTDIR)$(PREFIX)/bin/coppice

image: ## build the container image coppice:latest with $(CONTAINER) (podman or docker)
	$(CONTAINER) build $(if $(filter podman,$(CONTAINER)),--format docker) -t coppice:latest .

image-test: ## build the image with podman and check a container of it (deploy/image-test.sh; makes the base image locally when no registry answers)
	./deploy/image-test.sh

run: build ## start the server; ADDR=… DATA=… pass --addr/--data, else COPPICE_ADDR/COPPICE_DATA or the defaults apply
	./bin/coppice serve$(if $(ADDR), --addr $(ADDR))$(if $(DATA), --data $(DATA))

cluster: build ## start 3 nodes on loopback (API 127.0.0.1:8081-8083, Raft :7081-7083, data in CLUSTER_DATA=./data-cluster); Ctrl-C stops them
	./deploy/cluster.sh $(or $(CLUSTER_DATA),./data-cluster)

test: vet chromium nettools ## run the test suite (what CI runs): unit, model, fuzz-seed and browser tests
	$(GO) test -tags $(GOTAGS) -short -count=1 ./...
	cd bench/suite && $(GO) test -tags $(GOTAGS) -short -count=1 ./...

# The console's browser tests drive Debian's chromium and skip without it.
chromium: ## install chromium for the browser tests when it is missing and this is root with apt-get
	@if [ -n "$$COPPICE_CHROMIUM" ] || command -v chromium >/dev/null 2>&1; then exit 0; fi; \
	if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	  echo "installing chromium for the console's browser tests"; \
	  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; } \
	    || echo "chromium could not be installed: the browser tests will skip"; \
	else \
	  echo "chromium is missing (install it as root: apt-get install chromium): the browser tests will skip"; \
	fi

# The cluster's partition tests cut real processes apart with ip(8) and
# iptables(8) in network namespaces, and skip without them.
nettools: ## install ip and iptables for the partition tests when missing and this is root with apt-get
	@if command -v ip >/dev/null 2>&1 && command -v iptables >/dev/null 2>&1; then exit 0; fi; \
	if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	  echo "installing iproute2 and iptables for the partition tests"; \
	  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq iproute2 iptables >/dev/null; } \
	    || echo "iproute2 and iptables could not be installed: the partition tests will skip"; \
	else \
	  echo "ip or iptables is missing (install them as root: apt-get install iproute2 iptables): the partition tests will skip"; \
	fi

# Its short form runs in `make test`. Latency targets need a quiet machine.
test-reliability: nettools ## run the reliability suite in full (kill loops, signals, hostile clients) and print its figures
	$(GO) test -tags $(GOTAGS) -count=1 -timeout 30m -v ./reliability/

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

bench-cluster: ## replicated inserts and point reads vs a single server, 16 and 64 clients, into bench/results/cluster-DATE.txt
	@mkdir -p bench/results
	@out=bench/results/cluster-$$(date -u +%Y%m%d-%H%M%S).txt; \
	$(GO) test -tags $(GOTAGS) -run '^$$' -bench '^BenchmarkCluster$$' -benchtime $(or $(BENCHTIME),3s) \
	  -timeout 30m ./api/ 2>&1 | tee $$out; \
	grep -q '^ok' $$out || { echo "benchmarks failed; output in $$out"; exit 1; }

vet: ## go vet and gofmt check, of the module and of the benchmark suite's module
	$(GO) vet -tags $(GOTAGS) ./...
	cd bench/suite && $(GO) vet -tags $(GOTAGS) ./...
	@test -z "$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))" || { gofmt -l .; echo "gofmt needed"; exit 1; }
