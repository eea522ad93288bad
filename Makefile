# minikubelet: see README.md. Every target runs as root on a Debian machine.
SHELL := /bin/bash
GO ?= $(shell command -v go 2>/dev/null || echo /usr/local/go/bin/go)
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo v0.0.0-dev)
LDFLAGS := -X github.com/minikubelet/minikubelet/internal/version.Version=$(VERSION)
export MINIKUBELET_CACHE ?= /var/cache/minikubelet
GOLANGCI_LINT_VERSION := v2.15.0
# grpcnotrace leaves out gRPC's golang.org/x/net/trace, whose /debug/requests
# pages link html/template: its reflective method calls keep every exported
# method of every type in the binary (13 MB of 55; see internal/kubeclient's
# doc for the other cut). Kubernetes builds its binaries with it too.
export GOTAGS := grpcnotrace

.PHONY: all build prepare prepare-run prepare-cluster images run test unit lint bench scale fuzz faults conformance clean install uninstall
all: build

build: ## bin/minikubelet and the test bed's tools
	CGO_ENABLED=0 $(GO) build -tags '$(GOTAGS)' -ldflags '$(LDFLAGS)' -o bin/minikubelet ./cmd/minikubelet
	CGO_ENABLED=0 $(GO) build -o bin/ ./test/ctrdtest/cmd/withcontainerd ./test/ctrdtest/cmd/bedclean ./test/scale/cmd/fakecri

prepare: ## install what the tests need: containerd 1.6 and 2.x, the test images, a registry, kube-apiserver, etcd (cached)
	bash test/scripts/prepare.sh test

prepare-run: ## install only what make run needs: runc, CNI plugins, containerd 2.x, the pause and busybox images (cached)
	bash test/scripts/prepare.sh run

images: ## the examples' images as OCI tarballs: $(MINIKUBELET_CACHE)/images/{pause,busybox}.tar
	bash test/scripts/prepare.sh images

prepare-cluster: prepare ## build a one-node cluster's binaries, CoreDNS, metrics-server, e2e.test and the e2e image stand-ins (cached)
	bash test/scripts/prepare-cluster.sh

run: prepare-run build ## run minikubelet on examples/manifests against a private containerd
	bash test/scripts/run.sh

test: prepare prepare-cluster build ## every test: unit and integration, against containerd 1.6 and 2.x, and a conformance slice
	bash test/scripts/test.sh

unit: ## unit tests only (no runtime needed)
	$(GO) test -race ./agent/... ./pleg/... ./podworkers/... ./volumes/... ./cgroups/... ./internal/... ./cmd/...

lint: ## golangci-lint v2 with .golangci.yml
	bash test/scripts/lint.sh $(GOLANGCI_LINT_VERSION)

faults: prepare build ## the fault suite in full: agent SIGKILLs, containerd restarts, manifest churn, full disk, URL flapping
	bash test/scripts/faults.sh

conformance: prepare-cluster build ## Kubernetes' conformance specs against minikubelet, then the kubelet; writes docs/conformance
	bash test/scripts/conformance.sh

bench: prepare build ## the bench report on containerd 2.x: text, bin/bench-report.json, bin/bench-plot.png
	bash test/scripts/bench.sh

scale: prepare build ## 100 hollow minikubelet nodes, then 100 kubemark hollow kubelets, 1,000 pods each, against one control plane: bin/scale-report.{json,txt} (not part of make test; about 25 minutes)
	bash test/scripts/prepare-cluster.sh scale
	bash test/scripts/scale.sh

# FUZZTIME is how long each fuzz target runs (a duration, or Nx for N execs).
FUZZTIME ?= 60s
fuzz: ## every fuzz target of the module, FUZZTIME (60s) each, one after the other (not part of make test)
	@set -e; for dir in $$(grep -rl --include='*_test.go' '^func Fuzz' . | xargs -n1 dirname | sort -u); do \
		for target in $$($(GO) test -list '^Fuzz' $$dir | grep '^Fuzz'); do \
			echo "fuzz: $$target in $$dir for $(FUZZTIME)"; \
			$(GO) test -run='^$$' -fuzz="^$$target\$$" -fuzztime=$(FUZZTIME) $$dir; \
		done; \
	done

# Where make install puts things; DESTDIR prefixes every path (for packaging
# and tests) and then nothing is reloaded or stopped on this machine.
DESTDIR ?=
PREFIX ?= /usr/local
BINDIR ?= $(PREFIX)/bin
UNITDIR ?= /etc/systemd/system
CONFDIR ?= /etc/minikubelet
# The static pod directory of examples/config.yaml (staticPodPath), as the kubelet's.
MANIFESTDIR := /etc/kubernetes/manifests
# systemctl acts only without DESTDIR and when systemd runs (sd_booted).
SYSTEMD_RUNNING = $(if $(DESTDIR),,$(wildcard /run/systemd/system))

install: build ## the binary, the systemd unit, examples/config.yaml (an existing config is kept), /etc/kubernetes/manifests
	install -D -m 0755 bin/minikubelet $(DESTDIR)$(BINDIR)/minikubelet
	install -d -m 0755 $(DESTDIR)$(MANIFESTDIR)
	mkdir -p $(DESTDIR)$(UNITDIR)
	sed -e 's|/usr/local/bin/minikubelet|$(BINDIR)/minikubelet|' -e 's|/etc/minikubelet/config.yaml|$(CONFDIR)/config.yaml|' \
		examples/minikubelet.service >$(DESTDIR)$(UNITDIR)/minikubelet.service.tmp
	chmod 0644 $(DESTDIR)$(UNITDIR)/minikubelet.service.tmp
	mv -f $(DESTDIR)$(UNITDIR)/minikubelet.service.tmp $(DESTDIR)$(UNITDIR)/minikubelet.service
	@if [ -e $(DESTDIR)$(CONFDIR)/config.yaml ]; then \
		echo "install: keeping $(DESTDIR)$(CONFDIR)/config.yaml (examples/config.yaml not copied over it)"; \
	else \
		install -D -m 0644 examples/config.yaml $(DESTDIR)$(CONFDIR)/config.yaml; \
	fi
	$(if $(SYSTEMD_RUNNING),systemctl daemon-reload)

# uninstall stops and disables the service, removes the binary and the unit,
# removes the config only if it is still examples/config.yaml unchanged, and
# the manifest directory only if it is empty.
uninstall: ## undo make install; a config that was edited is kept
	$(if $(SYSTEMD_RUNNING),if [ -e $(UNITDIR)/minikubelet.service ]; then systemctl disable --now minikubelet.service; fi)
	rm -f $(DESTDIR)$(BINDIR)/minikubelet $(DESTDIR)$(UNITDIR)/minikubelet.service
	@if [ -e $(DESTDIR)$(CONFDIR)/config.yaml ]; then \
		if cmp -s examples/config.yaml $(DESTDIR)$(CONFDIR)/config.yaml; then \
			rm -f $(DESTDIR)$(CONFDIR)/config.yaml; \
		else \
			echo "uninstall: keeping $(DESTDIR)$(CONFDIR)/config.yaml: it was changed"; \
		fi; \
	fi
	if [ -d $(DESTDIR)$(CONFDIR) ]; then rmdir --ignore-fail-on-non-empty $(DESTDIR)$(CONFDIR); fi
	@# The manifest directory goes only if empty (so does /etc/kubernetes): pods stay defined.
	if [ -d $(DESTDIR)$(MANIFESTDIR) ]; then rmdir --ignore-fail-on-non-empty $(DESTDIR)$(MANIFESTDIR) $(DESTDIR)$(dir $(MANIFESTDIR)); fi
	$(if $(SYSTEMD_RUNNING),systemctl daemon-reload)

clean:
	rm -rf bin
