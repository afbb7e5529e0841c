# The two commands a fresh machine needs: `make run` (a real 3-node etcd
# scenario on loopback, no Docker) and `make test`.
GO      ?= go
BIN     := bin/scenario
VERSION := $(shell git describe --always --dirty 2>/dev/null || echo dev)

.PHONY: build run test test-unit test-busy test-integration test-kube bench fuzz vet fmt clean

build:
	CGO_ENABLED=0 $(GO) build -ldflags "-X main.version=$(VERSION)" -o $(BIN) ./cmd/scenario

# Runs examples/etcd-smoke.hcl against a real 3-node etcd (built from its Go
# module into ~/.cache/scenario on first use, about a minute).
run: build
	./$(BIN) run examples/etcd-smoke.hcl --out results/etcd-smoke --overwrite

# Unit tests with the race detector, then integration tests that start real
# clusters. Those that measure milliseconds (the fabric and the runner:
# latency floors, shaper lateness, failover times) run one package at a time
# (-p 1): they share two cores. The store drivers' tests, the small provider
# packages and the command's tests hold to seconds (TTLs, lock-delays,
# session expiry; the command's checks are exit codes, outputs and cleanup)
# and mostly wait, so they run two packages at a time, the two longest
# (Consul's and the command's) first: each package took as long paired as
# alone (Consul 88-92 s, etcd 38-46 s, ZooKeeper 38-42 s), and the store
# drivers 94-104 s instead of about 190. Their clusters' ports come from
# below the kernel's ephemeral range (storetest.FreeAddrs and the runner's
# process.AllocatePorts), so the other package's connections cannot take one
# before it is bound, and are held machine-wide until the test or run ends,
# so the other package's clusters are not handed one either.
test: vet test-unit test-integration

# The packages whose tests start no store, container or fabric (a shell
# expansion, for the recipes' shell).
UNIT_PKGS = $$($(GO) list ./... | grep -v -e /stores/etcd -e /stores/zookeeper -e /stores/consul -e /runner$$ -e /runner/process -e /runner/container -e /images -e /cmd/scenario -e /fabric$$ -e /runner/kube -e /runner/worker)

test-unit:
	$(GO) test -race -count=1 -timeout 10m $(UNIT_PKGS)

# The unit tests as on a busy CI runner: BUSY busy loops (one per core by
# default) run beside COUNT rounds of every package, to find the tests whose
# clocks are too tight. Not part of make test, which runs on what the
# machine leaves it.
BUSY  ?= $(shell nproc)
COUNT ?= 3
test-busy:
	pids=; for i in $$(seq $(BUSY)); do yes >/dev/null & pids="$$pids $$!"; done; \
	trap 'kill $$pids; wait $$pids 2>/dev/null' EXIT; \
	$(GO) test -race -count=$(COUNT) -timeout 60m $(UNIT_PKGS)

test-integration:
	$(GO) test -race -p 2 -count=1 -timeout 30m -skip '^TestKube' ./stores/consul/ ./cmd/scenario/ ./stores/etcd/ ./stores/zookeeper/ ./runner/process/ ./runner/container/ ./images/ ./runner/worker/
	$(GO) test -race -p 1 -count=1 -timeout 30m -skip '^TestKube' ./fabric/ ./runner/

# The kubernetes provider's tests, on a local single-node Kubernetes they
# start (about 5 minutes; .ci/run runs them after make test).
test-kube:
	$(GO) test -race -p 1 -count=1 -timeout 20m ./runner/kube/
	$(GO) test -race -p 1 -count=1 -timeout 20m -run '^TestKube' ./runner/ ./cmd/scenario/

# Benchmarks: our closed-loop engine against etcd's own benchmark tool on one
# cluster, reported as ratios. Built as the command is (CGO_ENABLED=0, a
# static binary, as etcd's tool is too), not as go test builds by default.
bench: build
	CGO_ENABLED=0 $(GO) test -run '^$$' -bench . -benchtime 1x -timeout 40m ./bench/
	CGO_ENABLED=0 $(GO) test -run '^$$' -bench . ./fabric/shaper/
	CGO_ENABLED=0 $(GO) test -run '^$$' -bench . -benchtime 1x ./internal/hrsleep/
	CGO_ENABLED=0 $(GO) test -run '^$$' -bench BusyRoundTrip -benchtime 300x ./fabric/

# The language and the whole command line for 10 minutes each, then every
# other parser for a minute each.
fuzz:
	$(GO) test ./dsl -run '^$$' -fuzz FuzzLoad -fuzztime 10m
	$(GO) test ./cmd/scenario -run '^$$' -fuzz FuzzCLI -fuzztime 10m -fuzzminimizetime 10s
	$(GO) test ./compare -run '^$$' -fuzz FuzzParseRule -fuzztime 1m
	$(GO) test ./stores/zookeeper -run '^$$' -fuzz '^FuzzParseSrvr$$' -fuzztime 1m
	$(GO) test ./stores/zookeeper -run '^$$' -fuzz '^FuzzZnodeName$$' -fuzztime 1m
	$(GO) test ./stores/zookeeper -run '^$$' -fuzz '^FuzzParseMntr$$' -fuzztime 1m
	$(GO) test ./stores/promscrape -run '^$$' -fuzz '^FuzzParse$$' -fuzztime 1m
	$(GO) test ./stores/consul -run '^$$' -fuzz '^FuzzParseVersion$$' -fuzztime 1m
	$(GO) test ./stores/consul -run '^$$' -fuzz '^FuzzParseIPPort$$' -fuzztime 1m
	$(GO) test ./images -run '^$$' -fuzz '^FuzzParseSpec$$' -fuzztime 1m
	$(GO) test ./runner/container -run '^$$' -fuzz '^FuzzCgroupFiles$$' -fuzztime 1m
	$(GO) test ./internal/proc -run '^$$' -fuzz '^FuzzSchedstat$$' -fuzztime 1m

# -race: vet then reads the packages the race-enabled tests compile, so a
# cold machine compiles them once. GOGC=400: the compiler and vet collect
# their heaps less often (vet cold after the race build: 46 s instead of
# 56); vet runs no test binary, which it would reach. The command also
# builds for macOS, where it checks, plans, compares and reports scenarios
# (running one needs Linux): vet builds it so, which keeps it building.
vet:
	GOGC=400 $(GO) vet -race ./...
	GOGC=400 GOOS=darwin GOARCH=arm64 $(GO) build -o /dev/null ./cmd/scenario
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || (echo "gofmt needed:"; gofmt -l $$(git ls-files '*.go'); exit 1)

fmt:
	gofmt -w $$(git ls-files '*.go')
	./$(BIN) fmt examples/*.hcl scenarios/*.hcl

clean:
	rm -rf bin results
