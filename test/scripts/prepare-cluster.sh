#!/usr/bin/env bash
# prepare-cluster.sh: build what a one-node cluster (test/cluster) and the
# Kubernetes conformance suite need, on top of the bed of prepare.sh.
#
# Run as root after test/scripts/prepare.sh (it reads bed.json: containerd,
# kube-apiserver, kubectl, etcd, the base images). Idempotent; every step is
# cached under $MINIKUBELET_CACHE and skipped when its stamp matches:
#   1. installs iptables (kube-proxy's iptables mode) when it is missing;
#   2. builds kube-controller-manager, kube-scheduler, kube-proxy, kubelet
#      and the ginkgo CLI in one `go build`, e2e.test with `go test -c`
#      and agnhost and nonewprivs (static, CGO_ENABLED=0, for images
#      without a libc) at
#      $KUBE_VERSION through a throwaway module that pins every staging
#      module (as prepare.sh does for kube-apiserver, with the same flags,
#      so the Go build cache is shared) into
#      $MINIKUBELET_CACHE/cluster-$KUBE_VERSION/bin;
#   3. builds CoreDNS $COREDNS_VERSION with the plugins the cluster uses into
#      $MINIKUBELET_CACHE/coredns-$COREDNS_VERSION/bin;
#   4. builds metrics-server $METRICS_SERVER_VERSION (kubectl top) into
#      $MINIKUBELET_CACHE/metrics-server-$METRICS_SERVER_VERSION/bin;
#   5. builds the stand-ins of the images the suite pulls from
#      registry.k8s.io (which cannot be reached) as OCI tarballs into
#      $MINIKUBELET_CACHE/cluster-images;
#   6. writes $MINIKUBELET_CLUSTER (default $MINIKUBELET_CACHE/cluster.json),
#      read by test/cluster.LoadBins;
#   7. with the argument "scale" (make scale) only: builds kubemark's hollow
#      node (k8s.io/kubernetes/cmd/kubemark) at $KUBE_VERSION through the same
#      throwaway module and flags into $MINIKUBELET_CACHE/kubemark-$KUBE_VERSION/bin
#      (test/scale's -kubemark default), about a minute once step 2 has
#      filled the build cache. cluster.json does not name it, so that
#      trees whose test/cluster does not know the field keep reading it.
#
# Each step logs how long it took. Environment: MINIKUBELET_CACHE (default
# /var/cache/minikubelet), GO (default: go on PATH, else /usr/local/go/bin/go).
set -euo pipefail

# KUBE_VERSION must be the version prepare.sh builds kube-apiserver at; the
# build checks it against bed.json's kube-apiserver.
KUBE_VERSION=v1.36.3
KUBE_STAGING_VERSION=v0.36.3
# CoreDNS as kubeadm v1.36 deploys it.
COREDNS_VERSION=v1.14.2
# metrics-server, the aggregated API behind kubectl top (v0.9.0 was not
# tried).
METRICS_SERVER_VERSION=v0.8.0
# The staging modules of k8s.io/kubernetes, each pinned by a replace line
# (see prepare.sh; sample-cli-plugin is refused by the proxy and not needed).
KUBE_STAGING=(api apiextensions-apiserver apimachinery apiserver cli-runtime client-go
	cloud-provider cluster-bootstrap code-generator component-base component-helpers
	controller-manager cri-api cri-client cri-streaming csi-translation-lib
	dynamic-resource-allocation endpointslice externaljwt kms kube-aggregator
	kube-controller-manager kube-proxy kube-scheduler kubectl kubelet metrics mount-utils
	pod-security-admission sample-apiserver sample-controller streaming)
# The main packages built in one go build; their binaries are named after
# the last path element (ginkgo's is the CLI that runs e2e.test in parallel).
KUBE_MAINS=(k8s.io/kubernetes/cmd/kube-controller-manager k8s.io/kubernetes/cmd/kube-scheduler
	k8s.io/kubernetes/cmd/kube-proxy k8s.io/kubernetes/cmd/kubelet github.com/onsi/ginkgo/v2/ginkgo)
# agnhost and nonewprivs run inside images without a libc: they are built
# apart, static.
STATIC_MAINS=(k8s.io/kubernetes/test/images/agnhost k8s.io/kubernetes/test/images/nonewprivs)
# bash-static is the busybox stand-in's sh (see build_images).
PACKAGES=(iptables bash-static)
# The e2e suite's images (test/utils/image/manifest.go of $KUBE_VERSION)
# that the tests in scope run; the stand-ins are imported under these names.
E2E_REGISTRY=registry.k8s.io/e2e-test-images
AGNHOST_REFS=("$E2E_REGISTRY/agnhost:2.63.0" "$E2E_REGISTRY/agnhost:2.55")
BUSYBOX_REF="$E2E_REGISTRY/busybox:1.37.0-1"
NGINX_REF="$E2E_REGISTRY/nginx:1.15-4"
NONEWPRIVS_REF="$E2E_REGISTRY/nonewprivs:1.4"
PAUSE_REF=registry.k8s.io/pause:3.10.2
BUSYBOX_BIN=/bin/busybox
BASH_STATIC=/bin/bash-static
IMAGE_PATH_ENV=PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin

CACHE=${MINIKUBELET_CACHE:-/var/cache/minikubelet}
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BED="$CACHE/bed.json"
KUBE_DIR="$CACHE/cluster-$KUBE_VERSION"
COREDNS_DIR="$CACHE/coredns-$COREDNS_VERSION"
METRICS_SERVER_DIR="$CACHE/metrics-server-$METRICS_SERVER_VERSION"
KUBEMARK_DIR="$CACHE/kubemark-$KUBE_VERSION"
CLUSTER_JSON=${MINIKUBELET_CLUSTER:-$CACHE/cluster.json}
IMAGES_DIR="$CACHE/cluster-images"

log() { echo "prepare-cluster: $*" >&2; }
die() { log "error: $*"; exit 1; }

find_go() {
	if [[ -n "${GO:-}" ]]; then echo "$GO"; return; fi
	if command -v go >/dev/null 2>&1; then command -v go; return; fi
	[[ -x /usr/local/go/bin/go ]] || die "no go on PATH and no /usr/local/go/bin/go"
	echo /usr/local/go/bin/go
}

# bed_field prints a top-level string field of bed.json.
bed_field() {
	sed -n "s/^ *\"$1\": *\"\([^\"]*\)\".*/\1/p" "$BED"
}

# timed runs "$@" and logs how long it took under the name $1.
timed() {
	local what=$1 t0=$SECONDS
	shift
	"$@"
	log "$what: $((SECONDS - t0)) s"
}

install_packages() {
	local missing=() p status
	for p in "${PACKAGES[@]}"; do
		status=$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null || true)
		[[ "$status" == installed ]] || missing+=("$p")
	done
	[[ ${#missing[@]} -eq 0 ]] && return
	log "installing ${missing[*]}"
	apt-get update -q
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}"
}

# kube_module DIR PKG... writes a throwaway module into DIR that requires
# k8s.io/kubernetes $KUBE_VERSION with every staging module pinned, and
# imports the packages PKG so that go mod tidy resolves them.
kube_module() {
	local dir=$1 m
	shift
	mkdir -p "$dir"
	{
		echo "module minikubelet.invalid/clusterbuild"
		echo
		echo "go 1.24"
		echo
		echo "require k8s.io/kubernetes $KUBE_VERSION"
		echo
		for m in "${KUBE_STAGING[@]}"; do
			echo "replace k8s.io/$m => k8s.io/$m $KUBE_STAGING_VERSION"
		done
	} >"$dir/go.mod"
	{
		echo "//go:build tools"
		echo
		echo "package tools"
		echo
		echo "import ("
		for m in "$@"; do
			echo "	_ \"$m\""
		done
		echo ")"
	} >"$dir/tools.go"
}

# kube_ldflags prints the -ldflags -X of every kube build: the same as
# prepare.sh's kube-apiserver, and no build tags: upstream builds with
# selinux,notest,grpcnotrace, but any tag that selects other files
# (grpcnotrace: grpc and all that imports it) would miss the build cache
# kube-apiserver filled; on this host (no SELinux) they change nothing the
# tests see.
kube_ldflags() {
	local ld="-X k8s.io/component-base/version.gitVersion=$KUBE_VERSION"
	ld+=" -X k8s.io/client-go/pkg/version.gitVersion=$KUBE_VERSION"
	ld+=" -X k8s.io/component-base/version.gitMajor=1"
	ld+=" -X k8s.io/component-base/version.gitMinor=$(echo "$KUBE_VERSION" | cut -d. -f2)"
	echo "$ld"
}

# kube_stamp names what the kube build is made of.
kube_stamp() {
	echo "$KUBE_VERSION ${KUBE_MAINS[*]} ${STATIC_MAINS[*]} e2e.test $("$GO" env GOVERSION)"
}

# build_kube builds KUBE_MAINS and e2e.test (see the header).
build_kube() {
	local bin="$KUBE_DIR/bin" m want api_version
	want=$(kube_stamp)
	if [[ -x "$bin/e2e.test" && "$(cat "$KUBE_DIR/.stamp" 2>/dev/null)" == "$want" ]]; then
		return
	fi
	api_version=$("$(bed_field kubeAPIServer)" --version 2>/dev/null) || die "bed.json has no working kube-apiserver (run prepare.sh first)"
	[[ "$api_version" == "Kubernetes $KUBE_VERSION" ]] ||
		die "bed.json's kube-apiserver says '$api_version', this script builds $KUBE_VERSION: keep KUBE_VERSION in step with prepare.sh"
	log "building the cluster's kube binaries and e2e.test $KUBE_VERSION (about 10 minutes cold after prepare.sh)"
	local tmp="$WORK/kube" ld
	kube_module "$tmp" "${KUBE_MAINS[@]}" "${STATIC_MAINS[@]}" k8s.io/kubernetes/test/e2e
	ld=$(kube_ldflags)
	(
		cd "$tmp"
		export GOFLAGS=-mod=mod GOTOOLCHAIN=local
		timed "resolve modules" "$GO" mod tidy
		# e2e.test's own test dependencies (ginkgo, gomega, ...): tidy
		# keeps only what the main module's packages need. The version
		# matters: without one, go get upgrades k8s.io/kubernetes.
		timed "resolve e2e test modules" "$GO" get -t "k8s.io/kubernetes/test/e2e@$KUBE_VERSION"
		timed "go build ${KUBE_MAINS[*]##*/}" "$GO" build -trimpath -ldflags "-s -w $ld" -o "$tmp/bin/" "${KUBE_MAINS[@]}"
		timed "go test -c e2e.test" "$GO" test -c -vet=off -trimpath -ldflags "-s -w $ld" -o "$tmp/bin/e2e.test" k8s.io/kubernetes/test/e2e
		# As upstream builds them: static, for images with no libc (they
		# then share no compiled package with the cgo builds above).
		timed "go build ${STATIC_MAINS[*]##*/} (static)" env CGO_ENABLED=0 "$GO" build -trimpath -ldflags "-s -w $ld" -o "$tmp/bin/" "${STATIC_MAINS[@]}"
	)
	for m in "${KUBE_MAINS[@]##*/}" "${STATIC_MAINS[@]##*/}" e2e.test; do
		[[ -x "$tmp/bin/$m" ]] || die "kube build produced no $m"
	done
	mkdir -p "$KUBE_DIR"
	rm -rf "$bin"
	mv "$tmp/bin" "$bin"
	echo "$want" >"$KUBE_DIR/.stamp"
	log "cluster binaries $KUBE_VERSION ready in $bin"
}

# build_kubemark builds kubemark's hollow node (step 7 of the header) as
# build_kube builds the components, sharing their build cache.
build_kubemark() {
	local want tmp="$WORK/kubemark" ld
	want="$KUBE_VERSION kubemark $("$GO" env GOVERSION)"
	if built "$KUBEMARK_DIR" kubemark "$want"; then
		return
	fi
	log "building kubemark $KUBE_VERSION (about a minute once the cluster's binaries are built)"
	kube_module "$tmp" k8s.io/kubernetes/cmd/kubemark
	ld=$(kube_ldflags)
	(
		cd "$tmp"
		export GOFLAGS=-mod=mod GOTOOLCHAIN=local
		timed "resolve kubemark modules" "$GO" mod tidy
		timed "go build kubemark" "$GO" build -trimpath -ldflags "-s -w $ld" -o "$tmp/bin/" k8s.io/kubernetes/cmd/kubemark
	)
	install_built kubemark "$tmp" "$KUBEMARK_DIR" "$want"
	log "kubemark $KUBE_VERSION ready in $KUBEMARK_DIR/bin"
}

# built DIR NAME WANT: whether DIR/bin/NAME is there, built as the stamp
# WANT says.
built() { [[ -x "$1/bin/$2" && "$(cat "$1/.stamp" 2>/dev/null)" == "$3" ]]; }

# install_built NAME TMP DIR WANT moves the binaries built in TMP/bin to
# DIR/bin (dying when NAME is not among them) and stamps DIR with WANT.
install_built() {
	local name=$1 tmp=$2 dir=$3 want=$4
	[[ -x "$tmp/bin/$name" ]] || die "$name build produced no binary"
	mkdir -p "$dir"
	rm -rf "$dir/bin"
	mv "$tmp/bin" "$dir/bin"
	echo "$want" >"$dir/.stamp"
}

# build_coredns builds CoreDNS with only the plugins the cluster's
# Corefile uses (the full plugin set pulls in every cloud SDK), in the
# order of CoreDNS's plugin.cfg.
build_coredns() {
	local bin="$COREDNS_DIR/bin" want
	# The stamp hashes this function, not the whole script: editing
	# another part of the script does not rebuild CoreDNS.
	want="$COREDNS_VERSION $(declare -f build_coredns | sha256sum | cut -d' ' -f1)"
	if built "$COREDNS_DIR" coredns "$want"; then
		return
	fi
	log "building CoreDNS $COREDNS_VERSION (about 2 minutes cold)"
	local tmp="$WORK/coredns"
	mkdir -p "$tmp"
	cat >"$tmp/go.mod" <<-EOF
		module minikubelet.invalid/corednsbuild

		go 1.25

		require github.com/coredns/coredns $COREDNS_VERSION
	EOF
	cat >"$tmp/main.go" <<-'EOF'
		// Command coredns is CoreDNS with the plugins a test cluster needs.
		package main

		import (
			"github.com/coredns/coredns/core/dnsserver"
			"github.com/coredns/coredns/coremain"

			_ "github.com/coredns/coredns/plugin/bind"
			_ "github.com/coredns/coredns/plugin/cache"
			_ "github.com/coredns/coredns/plugin/errors"
			_ "github.com/coredns/coredns/plugin/forward"
			_ "github.com/coredns/coredns/plugin/health"
			_ "github.com/coredns/coredns/plugin/kubernetes"
			_ "github.com/coredns/coredns/plugin/loadbalance"
			_ "github.com/coredns/coredns/plugin/log"
			_ "github.com/coredns/coredns/plugin/ready"
		)

		func main() {
			dnsserver.Directives = []string{"bind", "ready", "health", "errors", "log",
				"loadbalance", "cache", "kubernetes", "forward"}
			coremain.Run()
		}
	EOF
	(
		cd "$tmp"
		export GOFLAGS=-mod=mod GOTOOLCHAIN=local
		timed "resolve CoreDNS modules" "$GO" mod tidy
		timed "go build coredns" "$GO" build -trimpath -ldflags "-s -w -X github.com/coredns/coredns/coremain.GitCommit=$COREDNS_VERSION" -o "$tmp/bin/coredns" .
	)
	install_built coredns "$tmp" "$COREDNS_DIR" "$want"
	log "CoreDNS $COREDNS_VERSION ready in $bin"
}

# build_metrics_server builds metrics-server as upstream's Makefile does
# (static, its version in client-go's version variables), in a throwaway
# module of its own: it pins other k8s.io versions than the cluster build,
# and go install refuses a module with replace directives. The stamp names
# only what the binary is made of, so that edits elsewhere in this script
# do not rebuild it.
build_metrics_server() {
	local bin="$METRICS_SERVER_DIR/bin" want
	want="$METRICS_SERVER_VERSION $("$GO" env GOVERSION)"
	if built "$METRICS_SERVER_DIR" metrics-server "$want"; then
		return
	fi
	log "building metrics-server $METRICS_SERVER_VERSION (about 9 CPU-minutes cold)"
	local tmp="$WORK/metrics-server"
	mkdir -p "$tmp"
	cat >"$tmp/go.mod" <<-EOF
		module minikubelet.invalid/metricsserverbuild

		go 1.24
	EOF
	(
		cd "$tmp"
		export GOFLAGS=-mod=mod GOTOOLCHAIN=local
		timed "resolve metrics-server modules" "$GO" get -tool "sigs.k8s.io/metrics-server/cmd/metrics-server@$METRICS_SERVER_VERSION"
		timed "go build metrics-server" env CGO_ENABLED=0 "$GO" build -trimpath \
			-ldflags "-s -w -X k8s.io/client-go/pkg/version.gitVersion=$METRICS_SERVER_VERSION" \
			-o "$tmp/bin/" sigs.k8s.io/metrics-server/cmd/metrics-server
	)
	install_built metrics-server "$tmp" "$METRICS_SERVER_DIR" "$want"
	log "metrics-server $METRICS_SERVER_VERSION ready in $bin"
}

# images_stamp hashes everything the stand-in images are made from: their
# sources, the binaries in them, and the function that builds them.
images_stamp() {
	{
		(cd "$REPO" && find test/images/e2e test/images/mkimage test/images/pause -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum)
		sha256sum "$BUSYBOX_BIN" "$BASH_STATIC" "$KUBE_DIR/bin/agnhost" "$KUBE_DIR/bin/nonewprivs"
		declare -f build_images # what makes them, not the whole script
		"$GO" env GOVERSION
	} | sha256sum | cut -d' ' -f1
}

# build_images writes the stand-ins of the e2e suite's images: agnhost (the
# built binary as entrypoint, busybox's applets, a curl that wraps wget,
# user 1000 in group 50000 as in the real image), busybox (its applets,
# Debian's static bash as sh), pause
# (test/images/pause), nginx (busybox httpd on port 80) and nonewprivs (its
# setuid-root program, as in the real image).
build_images() {
	local want
	want=$(images_stamp)
	if [[ -f "$IMAGES_DIR/agnhost.tar" && "$(cat "$IMAGES_DIR/.stamp" 2>/dev/null)" == "$want" ]]; then
		return
	fi
	log "building the e2e image stand-ins into $IMAGES_DIR"
	local tmp="$WORK/images" e2e="$REPO/test/images/e2e"
	mkdir -p "$tmp" "$IMAGES_DIR"
	(
		cd "$REPO"
		# The bed's pause, as test/scripts/prepare.sh makes it.
		"$GO" run ./test/images/pause -o "$tmp/pause"
		"$GO" build -o "$tmp/mkimage" ./test/images/mkimage
	)
	local applets=() nosh=() applet ref refs=()
	for applet in $("$BUSYBOX_BIN" --list); do
		[[ "$applet" == busybox ]] || applets+=(-symlink "/bin/$applet=busybox")
		[[ "$applet" == busybox || "$applet" == sh ]] || nosh+=(-symlink "/bin/$applet=busybox")
	done
	local dirs=(-file "/bin/busybox=$BUSYBOX_BIN:0755" -dir /etc:0755 -dir /root:0700 -dir /tmp:1777 -env "$IMAGE_PATH_ENV")
	local base=("${dirs[@]}" "${applets[@]}")
	for ref in "${AGNHOST_REFS[@]}"; do refs+=(-ref "$ref"); done
	"$tmp/mkimage" "${refs[@]}" -o "$IMAGES_DIR/agnhost.tar" "${base[@]}" \
		-file "/agnhost=$KUBE_DIR/bin/agnhost:0755" -symlink /agnhost-2=agnhost -file "/usr/bin/curl=$e2e/curl:0755" \
		-file "/etc/passwd=$e2e/agnhost-passwd:0644" -file "/etc/group=$e2e/agnhost-group:0644" \
		-dir /home/user-defined-in-image:0755 -dir /uploads:0755 \
		-entrypoint /agnhost -cmd pause
	# The real image's sh (busybox 1.37) passes on environment variables
	# whose names are not shell names ("data-1", which four specs set);
	# Debian's busybox 1.35 drops them, bash keeps them: sh is bash here.
	"$tmp/mkimage" -ref "$BUSYBOX_REF" -o "$IMAGES_DIR/busybox.tar" "${dirs[@]}" "${nosh[@]}" \
		-file "/bin/bash=$BASH_STATIC:0755" -symlink /bin/sh=bash \
		-file "/etc/passwd=$REPO/test/images/busybox/passwd:0644" -file "/etc/group=$REPO/test/images/busybox/group:0644" \
		-cmd sh
	"$tmp/mkimage" -ref "$NGINX_REF" -o "$IMAGES_DIR/nginx.tar" "${base[@]}" \
		-file "/etc/passwd=$REPO/test/images/busybox/passwd:0644" -file "/etc/group=$REPO/test/images/busybox/group:0644" \
		-file "/usr/share/nginx/html/index.html=$e2e/nginx-index.html:0644" \
		-cmd httpd -cmd -f -cmd -p -cmd 80 -cmd -h -cmd /usr/share/nginx/html
	"$tmp/mkimage" -ref "$NONEWPRIVS_REF" -o "$IMAGES_DIR/nonewprivs.tar" "${base[@]}" \
		-file "/etc/passwd=$REPO/test/images/busybox/passwd:0644" -file "/etc/group=$REPO/test/images/busybox/group:0644" \
		-file "/usr/local/bin/nnp=$KUBE_DIR/bin/nonewprivs:4755" -cmd nnp
	"$tmp/mkimage" -ref "$PAUSE_REF" -o "$IMAGES_DIR/pause.tar" -file "/pause=$tmp/pause:0755" -entrypoint /pause
	echo "$want" >"$IMAGES_DIR/.stamp"
}

# write_cluster writes cluster.json (keep in sync with cluster.Bins),
# replacing it only when its content changes.
write_cluster() {
	local tmp bin="$KUBE_DIR/bin" ref
	mkdir -p "$(dirname "$CLUSTER_JSON")"
	tmp=$(mktemp "$(dirname "$CLUSTER_JSON")/.cluster.json.XXXXXX")
	{
		cat <<-EOF
			{
			  "kubeVersion": "$KUBE_VERSION",
			  "kubeControllerManager": "$bin/kube-controller-manager",
			  "kubeScheduler": "$bin/kube-scheduler",
			  "kubeProxy": "$bin/kube-proxy",
			  "kubelet": "$bin/kubelet",
			  "coredns": "$COREDNS_DIR/bin/coredns",
			  "corednsVersion": "$COREDNS_VERSION",
			  "metricsServer": "$METRICS_SERVER_DIR/bin/metrics-server",
			  "metricsServerVersion": "$METRICS_SERVER_VERSION",
			  "e2eTest": "$bin/e2e.test",
			  "ginkgo": "$bin/ginkgo",
			  "agnhost": "$bin/agnhost",
			  "images": [
		EOF
		for ref in "${AGNHOST_REFS[@]}"; do
			echo "    {\"ref\": \"$ref\", \"tar\": \"$IMAGES_DIR/agnhost.tar\", \"role\": \"e2e\"},"
		done
		cat <<-EOF
			    {"ref": "$BUSYBOX_REF", "tar": "$IMAGES_DIR/busybox.tar", "role": "e2e"},
			    {"ref": "$NGINX_REF", "tar": "$IMAGES_DIR/nginx.tar", "role": "e2e"},
			    {"ref": "$NONEWPRIVS_REF", "tar": "$IMAGES_DIR/nonewprivs.tar", "role": "e2e"},
			    {"ref": "$PAUSE_REF", "tar": "$IMAGES_DIR/pause.tar", "role": "e2e"}
			  ]
			}
		EOF
	} >"$tmp"
	chmod 0644 "$tmp"
	if cmp -s "$tmp" "$CLUSTER_JSON"; then
		rm -f "$tmp"
	else
		mv "$tmp" "$CLUSTER_JSON"
	fi
}

main() {
	[[ $(id -u) -eq 0 ]] || die "run as root"
	[[ -f "$BED" ]] || die "$BED is missing: run test/scripts/prepare.sh first"
	mkdir -p "$CACHE"
	exec 9>"$CACHE/.prepare-cluster.lock"
	flock 9
	WORK=$(mktemp -d "$CACHE/.work-cluster.XXXXXX")
	trap 'rm -rf "$WORK"' EXIT
	install_packages
	GO=$(find_go)
	timed "kube binaries" build_kube
	timed "CoreDNS" build_coredns
	timed "metrics-server" build_metrics_server
	timed "e2e image stand-ins" build_images
	write_cluster
	log "cluster ready: $CLUSTER_JSON"
	if [[ "${1:-}" == scale ]]; then
		timed "kubemark" build_kubemark
	fi
}

main "$@"
