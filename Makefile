# minikubelet: see README.md. Every target runs as root on a Debian machine.
SHELL := /bin/bash
GO ?= $(shell command -v go 2>/dev/null || echo /usr/local/go/bin/go)
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo v0.0.0-dev)
LDFLAGS := -X github.com/minikubelet/minikubelet/internal/version.Version=$(VERSION)
export MINIKUBELET_CACHE ?= /var/cache/minikubelet
GOLANGCI_LINT_VERSION := v2.15.0

.PHONY: all build prepare run test unit lint bench fuzz clean
all: build

build: ## bin/minikubelet and the test bed's tools
	CGO_ENABLED=0 $(GO) build -ldflags '$(LDFLAGS)' -o bin/minikubelet ./cmd/minikubelet
	CGO_ENABLED=0 $(GO) build -o bin/ ./test/ctrdtest/cmd/withcontainerd ./test/ctrdtest/cmd/bedclean

prepare: ## install what is missing, build containerd 2.x and the test images (cached)
	bash test/scripts/prepare.sh

run: prepare build ## run minikubelet on examples/manifests against a private containerd
	bash test/scripts/run.sh

test: prepare build ## every test: unit and integration, against containerd 1.6 and 2.x
	bash test/scripts/test.sh

unit: ## unit tests only (no runtime needed)
	$(GO) test -race ./agent/... ./pleg/... ./podworkers/... ./volumes/... ./cgroups/... ./internal/...

lint: ## golangci-lint v2 with .golangci.yml
	bash test/scripts/lint.sh $(GOLANGCI_LINT_VERSION)

bench: prepare build ## pod start latency against the raw CRI calls, on containerd 2.x
	bash test/scripts/bench.sh

fuzz: ## the fuzz targets, 60s each (not part of make test)
	$(GO) test -run='^$$' -fuzz=FuzzLoad -fuzztime=60s ./agent/manifest/

clean:
	rm -rf bin
