# Tollgate: rolls Talos Linux upgrades across Cluster API workload clusters.

SHELL := /usr/bin/env bash -o pipefail
.SHELLFLAGS := -ec
.DEFAULT_GOAL := help

ROOT_DIR := $(abspath .)
BIN_DIR := $(ROOT_DIR)/bin
export PATH := $(BIN_DIR):$(PATH)
GO ?= go

# Tool versions, installed into ./bin (kubebuilder style).
CONTROLLER_GEN_VERSION ?= v0.21.0
GOLANGCI_LINT_VERSION ?= v2.15.0
GOTESTSUM_VERSION ?= v1.13.0
CRD_REF_DOCS_VERSION ?= v0.3.0
CONTROLLER_GEN := $(BIN_DIR)/controller-gen-$(CONTROLLER_GEN_VERSION)
GOLANGCI_LINT := $(BIN_DIR)/golangci-lint-$(GOLANGCI_LINT_VERSION)
GOTESTSUM := $(BIN_DIR)/gotestsum-$(GOTESTSUM_VERSION)
CRD_REF_DOCS := $(BIN_DIR)/crd-ref-docs-$(CRD_REF_DOCS_VERSION)

# envtest binaries: see hack/envtest-assets.sh. Cached outside the tree.
ENVTEST_ASSETS_SCRIPT := $(ROOT_DIR)/hack/envtest-assets.sh

IMG ?= ghcr.io/tollgate-dev/tollgate-controller:dev
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)

# Flags of every go test of `make test`. -race needs cgo and a C compiler (gcc):
# without them hack/test.sh leaves it out and says so. -vet=off: go test would
# run part of go vet on every package it tests, which `make verify` runs whole
# (`go vet ./...`, test files included, and golangci-lint's govet); in a fresh
# clone that was some 20 CPU-seconds of `make test` (281 against 261 to build
# every test binary).
GO_TEST_FLAGS ?= -race -vet=off
# Packages of `make test` (hack/test.sh); narrow it to try a change quickly.
TEST_PACKAGES ?= ./...
# Packages of `make test` run without -race, beside the others: the suites that
# build whole worlds, whose CPU is mostly their apiservers', CAPI core's and
# manager replicas' (hack/test.sh says why), and the krew release tool, which
# runs no goroutine and whose test spends 57 of its 63 CPU-seconds compressing
# the plugin with a race-instrumented compress/flate (8 without -race). Empty:
# every package with -race.
TEST_NO_RACE_PACKAGES ?= ./test/integration/... ./test/soak/... ./test/demo/... ./hack/tools/krew
# Packages of `make test` started first: the longest, so that none of them starts
# last and runs alone.
TEST_FIRST_PACKAGES ?= ./controllers/talosupgrade ./test/integration/capi ./controllers/releasechannel ./test/demo ./cmd/kubectl-tollgate ./test/integration/uninstall ./test/soak
# How many packages the -race run of `make test` runs at once (go test -p;
# empty: go's default, the number of cores): 3, one more than CI's 2 cores, as
# its fifty small packages, linked and run after the long suites, leave the
# machine idle otherwise (hack/test.sh).
TEST_RACE_PACKAGES_AT_ONCE ?= 3
# How many packages the run without -race runs at once: 3, as its packages,
# at the lower priority beside the engine suite, take what CPU it leaves, and
# two at a time left its last packages (the uninstall suite, the soak's) to
# run after the CAPI core suite, at the end of the run (hack/test.sh).
TEST_NO_RACE_PACKAGES_AT_ONCE ?= 3
# Packages of `make test` whose tests run at the normal CPU priority, every
# other test at a lower one (nice): the engine suite, which waits on timers
# one test after another and ends last when it shares the CPU equally
# (hack/test.sh). Empty: every test at the normal priority.
TEST_PRIORITY_PACKAGES ?= ./controllers/talosupgrade
# GOGC of every process `make test` starts, kube-apiservers and etcd among
# them: 400, fewer garbage collections for more memory, as the run is bound by
# its CPU (hack/test.sh says why and what it measured). Empty: each process's
# own GOGC, from the environment.
TEST_GOGC ?= 400
GINKGO_ARGS ?=
# Executions per fuzz target in `make test` (a count, not a duration: see hack/test.sh).
FUZZ_TIME ?= 10000x

##@ General

.PHONY: help
help: ## Show this help
	@awk 'BEGIN {FS = ":.*##"; printf "Usage:\n  make \033[36m<target>\033[0m\n"} /^[a-zA-Z_0-9-]+:.*?##/ { printf "  \033[36m%-20s\033[0m %s\n", $$1, $$2 } /^##@/ { printf "\n\033[1m%s\033[0m\n", substr($$0, 5) } ' $(MAKEFILE_LIST)

##@ Development

.PHONY: generate
generate: generate-go generate-manifests generate-docs generate-test-infrastructure generate-test-talosproviders ## Generate deepcopy code, CRDs, RBAC and webhook manifests, and the book's API reference

.PHONY: generate-go
generate-go: $(CONTROLLER_GEN) ## Generate deepcopy code
	$(CONTROLLER_GEN) object:headerFile=hack/boilerplate.go.txt paths="./api/..."

.PHONY: generate-manifests
# Only the packages the manager ships: the test providers under test/ have CRDs
# of their own, which must never land in config/.
generate-manifests: $(CONTROLLER_GEN) ## Generate CRDs, RBAC and webhook manifests under config/
	$(CONTROLLER_GEN) \
		crd:generateEmbeddedObjectMeta=false \
		rbac:roleName=manager-role \
		webhook \
		paths="./api/...;./controllers/...;./webhooks/...;./cmd/...;./internal/..." \
		output:crd:artifacts:config=config/crd/bases \
		output:rbac:artifacts:config=config/rbac \
		output:webhook:artifacts:config=config/webhook

.PHONY: generate-test-infrastructure
generate-test-infrastructure: $(CONTROLLER_GEN) ## Generate deepcopy code, CRDs and webhook manifests of the Talos-simulator infrastructure provider (test/providers/infrastructure)
	$(CONTROLLER_GEN) object:headerFile=hack/boilerplate.go.txt paths="./test/providers/infrastructure/api/..."
	$(CONTROLLER_GEN) crd:generateEmbeddedObjectMeta=false paths="./test/providers/infrastructure/api/..." \
		output:crd:artifacts:config=test/providers/infrastructure/config/crd
	$(CONTROLLER_GEN) webhook paths="./test/providers/infrastructure/webhooks/..." \
		output:webhook:artifacts:config=test/providers/infrastructure/config/webhook

.PHONY: generate-test-talosproviders
generate-test-talosproviders: $(CONTROLLER_GEN) ## Generate deepcopy code, CRDs and webhook manifests of the stand-ins for the Talos bootstrap and control-plane providers (test/providers/talos)
	$(CONTROLLER_GEN) object:headerFile=hack/boilerplate.go.txt paths="./test/providers/talos/api/..."
	$(CONTROLLER_GEN) crd:generateEmbeddedObjectMeta=false paths="./test/providers/talos/api/..." \
		output:crd:artifacts:config=test/providers/talos/config/crd
	$(CONTROLLER_GEN) webhook paths="./test/providers/talos/webhooks/..." \
		output:webhook:artifacts:config=test/providers/talos/config/webhook

.PHONY: generate-docs
generate-docs: $(CRD_REF_DOCS) ## Generate the book's API reference (docs/book/src/reference/api.md) from the Go types of api/
	$(CRD_REF_DOCS) --source-path=./api --config=hack/crd-ref-docs/config.yaml --renderer=markdown \
		--output-path=docs/book/src/reference/api.md --log-level=ERROR

.PHONY: fmt
fmt: ## Run gofmt on the tree
	gofmt -s -w $$(git ls-files '*.go')

.PHONY: vet
vet: ## Run go vet
	$(GO) vet ./...

.PHONY: lint
lint: $(GOLANGCI_LINT) ## Run golangci-lint
	$(GOLANGCI_LINT) run ./...

.PHONY: verify
verify: verify-gen verify-fmt vet lint ## Fail when generated files are stale, or gofmt, go vet or golangci-lint complain

# Where make generate writes (with the types it reads).
GENERATED_PATHS := api config docs/book/src/reference test/providers/infrastructure/api test/providers/infrastructure/config test/providers/talos/api test/providers/talos/config

.PHONY: verify-gen
verify-gen: generate ## Fail when generated files differ from what is committed
	@if [ -n "$$(git status --porcelain -- $(GENERATED_PATHS))" ]; then \
		git status --porcelain -- $(GENERATED_PATHS); git --no-pager diff -- $(GENERATED_PATHS) | head -100; \
		echo "Generated files are stale: run 'make generate' and commit the result"; exit 1; fi

.PHONY: verify-fmt
verify-fmt: ## Fail when gofmt would change a file
	@out="$$(gofmt -s -l $$(git ls-files '*.go'))"; if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

##@ Testing

.PHONY: envtest
envtest: ## Provide kube-apiserver, etcd and kube-controller-manager for the tests (builds them from source when they cannot be downloaded)
	@$(ENVTEST_ASSETS_SCRIPT) >/dev/null

# Packages of `make test-unit`: every test that needs no envtest binaries, the
# decisions of internal/disruption and the controllers' own tests among them.
# Without KUBEBUILDER_ASSETS each test that needs a kube-apiserver skips itself,
# naming it, and gotestsum's summary lists every skipped test (the API's
# schema tests among them).
UNIT_PACKAGES ?= ./api/... ./internal/... ./hooks/... ./webhooks/... ./controllers/...

.PHONY: test
test: $(GOTESTSUM) ## Run every test, envtest suites and a short fuzz run included; progress per package, log, JUnit report and summary in out/
	GO="$(GO)" GOTESTSUM="$(GOTESTSUM)" GO_TEST_FLAGS="$(GO_TEST_FLAGS)" TEST_PACKAGES="$(TEST_PACKAGES)" TEST_NO_RACE_PACKAGES="$(TEST_NO_RACE_PACKAGES)" TEST_FIRST_PACKAGES="$(TEST_FIRST_PACKAGES)" TEST_RACE_PACKAGES_AT_ONCE="$(TEST_RACE_PACKAGES_AT_ONCE)" TEST_PRIORITY_PACKAGES="$(TEST_PRIORITY_PACKAGES)" TEST_NO_RACE_PACKAGES_AT_ONCE="$(TEST_NO_RACE_PACKAGES_AT_ONCE)" TEST_GOGC="$(TEST_GOGC)" FUZZ_TIME="$(FUZZ_TIME)" hack/test.sh

.PHONY: test-unit
test-unit: $(GOTESTSUM) ## Run the tests that need no envtest binaries, in seconds (KUBEBUILDER_ASSETS unset: the tests needing a kube-apiserver are skipped, and the summary lists them)
	env -u KUBEBUILDER_ASSETS GOTESTSUM_FORMAT_ICONS=text $(GOTESTSUM) --format pkgname-and-test-fails --format-hide-empty-pkg -- $(UNIT_PACKAGES)

.PHONY: test-talosctl
test-talosctl: ## Check the Talos node simulator against talosctl (built from source into the tool cache by hack/talosctl.sh)
	talosctl="$$(GO="$(GO)" hack/talosctl.sh)"; TALOSCTL="$$talosctl" $(GO) test -count=1 -v -run TestTalosctl ./test/talossim/

BENCH_ARGS ?=
BENCH_TESTS ?= Kubernetes

.PHONY: bench
bench: ## Run the benchmarks (overhead per Machine, fleet scale, idle cost, reconcile time during 60s image pulls, a release through a channel of 1,000 Clusters, then the Go benchmarks BENCH_TESTS selects: Kubernetes upgrades in place; BENCH_TESTS= for none); sizes via BENCH_ARGS, e.g. BENCH_ARGS="--clusters=1000"; report in out/bench/
	KUBEBUILDER_ASSETS="$$($(ENVTEST_ASSETS_SCRIPT))" $(GO) run ./test/cmd/bench $(BENCH_ARGS)
	$(if $(BENCH_TESTS),KUBEBUILDER_ASSETS="$$($(ENVTEST_ASSETS_SCRIPT))" $(GO) test ./test/bench -run '^$$' -bench '$(BENCH_TESTS)' -benchtime 1x -timeout 30m)

SOAK_ARGS ?=

.PHONY: soak-short
soak-short: ## Run the short soak (TestSoakShort: 6 Clusters, every fault kind injected once, every invariant asserted; five to ten minutes of two cores); SOAK_SEED=N replays a seed
	TOLLGATE_SOAK=1 KUBEBUILDER_ASSETS="$$($(ENVTEST_ASSETS_SCRIPT))" $(GO) test -count=1 -timeout 40m -run '^TestSoakShort$$' -v ./test/soak

.PHONY: soak
soak: ## Run the fault-injecting soak (kills, failovers, apiserver outages, Talos faults) and check its invariants; sizes via SOAK_ARGS, e.g. SOAK_ARGS="--clusters=20 --workers=5 --rounds=3 --seed=42"
	KUBEBUILDER_ASSETS="$$($(ENVTEST_ASSETS_SCRIPT))" $(GO) run ./test/cmd/soak $(SOAK_ARGS)

##@ Build

.PHONY: build
build: ## Build the manager binary into bin/manager
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags "-s -w -X main.version=$(VERSION)" -o $(BIN_DIR)/manager .

.PHONY: plugin
plugin: ## Build the kubectl plugin into bin/kubectl-tollgate: with bin/ on PATH (or the file copied to a directory on it), run `kubectl tollgate`
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags "-s -w -X main.version=$(VERSION)" -o $(BIN_DIR)/kubectl-tollgate ./cmd/kubectl-tollgate

.PHONY: run
run: ## Run the manager against the current kubeconfig (webhooks off)
	$(GO) run . --webhook-port=0 --leader-elect=false

DEMO_ARGS ?=

.PHONY: demo
demo: ## Roll a Talos upgrade across a simulated Cluster in a local sandbox, live (no cluster needed; DEMO_ARGS="--help" for the flags, "--channel" for a release channel)
	@GO="$(GO)" hack/demo.sh $(DEMO_ARGS)

.PHONY: docker-build
docker-build: ## Build the container image
	docker build --build-arg VERSION=$(VERSION) -t $(IMG) .

# The release image, built without a container engine by hack/tools/image.
# Files and config are dated SOURCE_DATE_EPOCH, the last commit's time, so
# that a commit always gives the same digest.
IMAGE_PLATFORMS ?= linux/amd64,linux/arm64
IMAGE_DIR ?= $(RELEASE_DIR)/image
SOURCE_DATE_EPOCH ?= $(shell git log -1 --format=%ct 2>/dev/null || echo 0)

.PHONY: image
image: ## Build the release image (the manager for IMAGE_PLATFORMS, distroless-style, no container engine needed) as an OCI layout in out/image
	rm -rf $(IMAGE_DIR)
	SOURCE_DATE_EPOCH=$(SOURCE_DATE_EPOCH) $(GO) run ./hack/tools/image --version $(VERSION) --platforms $(IMAGE_PLATFORMS) --out $(IMAGE_DIR)

.PHONY: image-push
image-push: ## Build the release image as `make image` does and push it to IMG (credentials from the Docker config); prints its digest
	SOURCE_DATE_EPOCH=$(SOURCE_DATE_EPOCH) $(GO) run ./hack/tools/image --version $(VERSION) --platforms $(IMAGE_PLATFORMS) --push $(IMG)

RELEASE_DIR ?= out

.PHONY: release-manifests
release-manifests: ## Render the clusterctl release assets into out/: addon-components.yaml (with IMG), metadata.yaml, cluster templates
	$(GO) run ./hack/tools/render --image $(IMG) --out $(RELEASE_DIR)/addon-components.yaml config/default
	cp metadata.yaml $(RELEASE_DIR)/metadata.yaml
	cp templates/cluster-template-*.yaml $(RELEASE_DIR)/

# The kubectl plugin's release assets, made by hack/tools/krew: an archive
# per platform and the krew manifest naming their URLs and sums, which are
# those of the release's assets at PLUGIN_URL. The archives are dated
# SOURCE_DATE_EPOCH, so that a commit always gives the same sums.
PLUGIN_PLATFORMS ?= linux/amd64,linux/arm64,darwin/amd64,darwin/arm64
PLUGIN_URL ?= https://github.com/tollgate-dev/tollgate/releases/download/$(VERSION)

.PHONY: release-plugin
release-plugin: ## Build the kubectl plugin for PLUGIN_PLATFORMS as krew archives, with their krew manifest tollgate.yaml, into out/plugin
	rm -rf $(RELEASE_DIR)/plugin
	SOURCE_DATE_EPOCH=$(SOURCE_DATE_EPOCH) $(GO) run ./hack/tools/krew --version $(VERSION) --platforms $(PLUGIN_PLATFORMS) --url $(PLUGIN_URL) --out $(RELEASE_DIR)/plugin

##@ Tools

$(CONTROLLER_GEN):
	GOBIN=$(BIN_DIR) $(GO) install sigs.k8s.io/controller-tools/cmd/controller-gen@$(CONTROLLER_GEN_VERSION)
	mv $(BIN_DIR)/controller-gen $@

$(GOLANGCI_LINT):
	GOBIN=$(BIN_DIR) $(GO) install github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$(GOLANGCI_LINT_VERSION)
	mv $(BIN_DIR)/golangci-lint $@

$(CRD_REF_DOCS):
	GOBIN=$(BIN_DIR) $(GO) install github.com/elastic/crd-ref-docs@$(CRD_REF_DOCS_VERSION)
	mv $(BIN_DIR)/crd-ref-docs $@

$(GOTESTSUM):
	GOBIN=$(BIN_DIR) $(GO) install gotest.tools/gotestsum@$(GOTESTSUM_VERSION)
	mv $(BIN_DIR)/gotestsum $@
