#!/usr/bin/env bash
# prepare.sh: set up what minikubelet runs against on this machine.
#
#   prepare.sh [test]   everything the test suite needs (make prepare, make test)
#   prepare.sh run      only what `make run` needs: the runtime and the two images
#   prepare.sh images   only the pause and busybox image tarballs
#
# Run as root. Idempotent, and fast (well under 2 s) when everything is cached:
#   1. installs the Debian packages the mode needs (apt-get only if one is
#      missing): RUN_PACKAGES for run, TEST_PACKAGES as well for test;
#   2. builds containerd $CONTAINERD_VERSION from the Go module proxy into
#      $MINIKUBELET_CACHE/containerd-$CONTAINERD_VERSION/bin (skipped if present;
#      in run mode only when MINIKUBELET_RUNTIME, the runtime run.sh uses, is
#      containerd-2.1, the default);
#   3. builds the local OCI image tarballs into $MINIKUBELET_CACHE/images
#      (each rebuilt only when its sources change): pause and busybox, and in
#      test mode probeserver;
#   4. test mode: builds kube-apiserver and kubectl $KUBE_VERSION and etcd
#      $ETCD_VERSION from the Go module proxy into $MINIKUBELET_CACHE/kube-$KUBE_VERSION/bin
#      and $MINIKUBELET_CACHE/etcd-$ETCD_VERSION/bin (skipped when their stamp is
#      there; about 6 minutes cold on 2 cores) for the node-mode tests;
#   5. writes $MINIKUBELET_CACHE/bed.json, read by test/ctrdtest.LoadBed: it
#      lists what is there, so a run after a test preparation keeps every entry.
#
# Environment: MINIKUBELET_CACHE (default /var/cache/minikubelet), GO (default:
# go on PATH, else /usr/local/go/bin/go), MINIKUBELET_RUNTIME (run mode).
set -euo pipefail

CONTAINERD_VERSION=v2.1.4
KUBE_VERSION=v1.36.3
KUBE_STAGING_VERSION=v0.36.3
ETCD_VERSION=v3.6.8
# The k8s.io/kubernetes staging modules, each pinned by a replace line (the
# proxy answers 403 for the v0.0.0 versions k8s.io/kubernetes requires).
# sample-cli-plugin is left out: the proxy refuses it and nothing needs it.
KUBE_STAGING=(api apiextensions-apiserver apimachinery apiserver cli-runtime client-go
	cloud-provider cluster-bootstrap code-generator component-base component-helpers
	controller-manager cri-api cri-client cri-streaming csi-translation-lib
	dynamic-resource-allocation endpointslice externaljwt kms kube-aggregator
	kube-controller-manager kube-proxy kube-scheduler kubectl kubelet metrics mount-utils
	pod-security-admission sample-apiserver sample-controller streaming)
PAUSE_REF=localhost/minikubelet/pause:3.10
BUSYBOX_REF=localhost/minikubelet/busybox:1.35
PROBE_REF=localhost/minikubelet/probeserver:1.0
BUSYBOX_BIN=/bin/busybox
IMAGE_PATH_ENV=PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
# What running needs: runc, the CNI plugins (bridge, host-local, loopback,
# in /usr/lib/cni), busybox-static (the busybox image is made of it),
# iproute2 and util-linux (nsenter, mount: the bed's network and teardown).
# containerd 1.6 comes from Debian; run mode installs it only when run.sh
# uses it (MINIKUBELET_RUNTIME=containerd-1.6).
RUN_PACKAGES=(runc containernetworking-plugins busybox-static iproute2 util-linux)
# What the tests need beyond that: containerd 1.6 (the suite runs on both
# versions). docker-registry, apache2-utils (htpasswd) and skopeo serve the
# image pull tests: a local registry, its htpasswd auth, and pushing the
# cached images. dbus-daemon and systemd (for systemd-logind) serve the
# graceful node shutdown tests: a private system bus with the real logind on
# it; systemd also brings systemd-analyze, which verifies
# examples/minikubelet.service.
TEST_PACKAGES=(containerd docker-registry apache2-utils skopeo dbus-daemon systemd)

CACHE=${MINIKUBELET_CACHE:-/var/cache/minikubelet}
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
SCRIPT="$REPO/test/scripts/prepare.sh"
CTRD2_DIR="$CACHE/containerd-$CONTAINERD_VERSION"
IMAGES_DIR="$CACHE/images"
KUBE_DIR="$CACHE/kube-$KUBE_VERSION"
ETCD_DIR="$CACHE/etcd-$ETCD_VERSION"

log() { echo "prepare: $*" >&2; }
die() { log "error: $*"; exit 1; }

find_go() {
	if [[ -n "${GO:-}" ]]; then echo "$GO"; return; fi
	if command -v go >/dev/null 2>&1; then command -v go; return; fi
	[[ -x /usr/local/go/bin/go ]] || die "no go on PATH and no /usr/local/go/bin/go"
	echo /usr/local/go/bin/go
}

# install_packages installs whichever of the packages named is not installed.
install_packages() {
	local missing=() p status
	for p in "$@"; do
		status=$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null || true)
		[[ "$status" == installed ]] || missing+=("$p")
	done
	[[ ${#missing[@]} -eq 0 ]] && return
	log "installing ${missing[*]}"
	apt-get update -q
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}"
	# The tests run their own registries on free ports; the package's system
	# service (:5000) is not wanted where systemd would start it.
	if [[ " ${missing[*]} " == *" docker-registry "* && -d /run/systemd/system ]]; then
		systemctl disable --now docker-registry.service || true
	fi
}

# build_containerd2 builds containerd, its runc shim and ctr at $CONTAINERD_VERSION
# through a throwaway module (go install ...@version is refused: exclude directives).
build_containerd2() {
	local bin="$CTRD2_DIR/bin" f
	if [[ -x "$bin/containerd" && -x "$bin/containerd-shim-runc-v2" && -x "$bin/ctr" ]]; then
		return
	fi
	log "building containerd $CONTAINERD_VERSION (about 2 minutes cold)"
	local tmp="$WORK/ctrd"
	mkdir -p "$tmp"
	cat >"$tmp/go.mod" <<-EOF
		module minikubelet.invalid/ctrdbuild

		go 1.24

		require github.com/containerd/containerd/v2 $CONTAINERD_VERSION
	EOF
	cat >"$tmp/tools.go" <<-'EOF'
		//go:build tools

		package tools

		import (
			_ "github.com/containerd/containerd/v2/cmd/containerd"
			_ "github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2"
			_ "github.com/containerd/containerd/v2/cmd/ctr"
		)
	EOF
	(
		cd "$tmp"
		GOFLAGS=-mod=mod GOTOOLCHAIN=local "$GO" mod tidy
		GOFLAGS=-mod=mod GOTOOLCHAIN=local "$GO" build -tags no_btrfs -trimpath \
			-ldflags "-X github.com/containerd/containerd/v2/version.Version=${CONTAINERD_VERSION#v}" \
			-o "$tmp/bin/" \
			github.com/containerd/containerd/v2/cmd/containerd \
			github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2 \
			github.com/containerd/containerd/v2/cmd/ctr
	)
	for f in containerd containerd-shim-runc-v2 ctr; do
		[[ -x "$tmp/bin/$f" ]] || die "containerd build produced no $f"
	done
	mkdir -p "$CTRD2_DIR"
	rm -rf "$bin"
	mv "$tmp/bin" "$bin"
	log "containerd $CONTAINERD_VERSION ready in $bin"
}

# build_kube builds kube-apiserver and kubectl at $KUBE_VERSION through a
# throwaway module that requires k8s.io/kubernetes (never the project's go.mod:
# depguard bans k8s.io/kubernetes). Skipped when the stamp says it is done.
build_kube() {
	local bin="$KUBE_DIR/bin" m
	if [[ -x "$bin/kube-apiserver" && -x "$bin/kubectl" && "$(cat "$KUBE_DIR/.stamp" 2>/dev/null)" == "$KUBE_VERSION" ]]; then
		return
	fi
	log "building kube-apiserver and kubectl $KUBE_VERSION (about 5.5 minutes cold)"
	local tmp="$WORK/kube"
	mkdir -p "$tmp"
	{
		echo "module minikubelet.invalid/kubebuild"
		echo
		echo "go 1.24"
		echo
		echo "require k8s.io/kubernetes $KUBE_VERSION"
		echo
		for m in "${KUBE_STAGING[@]}"; do
			echo "replace k8s.io/$m => k8s.io/$m $KUBE_STAGING_VERSION"
		done
	} >"$tmp/go.mod"
	cat >"$tmp/tools.go" <<-'EOF'
		//go:build tools

		package tools

		import (
			_ "k8s.io/kubernetes/cmd/kube-apiserver"
			_ "k8s.io/kubernetes/cmd/kubectl"
		)
	EOF
	local ld="-X k8s.io/component-base/version.gitVersion=$KUBE_VERSION"
	ld+=" -X k8s.io/client-go/pkg/version.gitVersion=$KUBE_VERSION"
	ld+=" -X k8s.io/component-base/version.gitMajor=1"
	ld+=" -X k8s.io/component-base/version.gitMinor=$(echo "$KUBE_VERSION" | cut -d. -f2)"
	(
		cd "$tmp"
		GOFLAGS=-mod=mod GOTOOLCHAIN=local "$GO" mod tidy
		GOFLAGS=-mod=mod GOTOOLCHAIN=local "$GO" build -trimpath -ldflags "-s -w $ld" -o "$tmp/bin/" \
			k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kubectl
	)
	for m in kube-apiserver kubectl; do
		[[ -x "$tmp/bin/$m" ]] || die "kube build produced no $m"
	done
	mkdir -p "$KUBE_DIR"
	rm -rf "$bin"
	mv "$tmp/bin" "$bin"
	echo "$KUBE_VERSION" >"$KUBE_DIR/.stamp"
	log "kube-apiserver $KUBE_VERSION ready in $bin"
}

# build_etcd builds etcd at $ETCD_VERSION (its server module's root package
# is the main) through a throwaway module. Skipped when the stamp says done.
build_etcd() {
	local bin="$ETCD_DIR/bin"
	if [[ -x "$bin/etcd" && "$(cat "$ETCD_DIR/.stamp" 2>/dev/null)" == "$ETCD_VERSION" ]]; then
		return
	fi
	log "building etcd $ETCD_VERSION (about 30 s cold)"
	local tmp="$WORK/etcd"
	mkdir -p "$tmp"
	cat >"$tmp/go.mod" <<-EOF
		module minikubelet.invalid/etcdbuild

		go 1.24

		require go.etcd.io/etcd/server/v3 $ETCD_VERSION
	EOF
	cat >"$tmp/tools.go" <<-'EOF'
		//go:build tools

		package tools

		import _ "go.etcd.io/etcd/server/v3"
	EOF
	(
		cd "$tmp"
		GOFLAGS=-mod=mod GOTOOLCHAIN=local "$GO" mod tidy
		GOFLAGS=-mod=mod GOTOOLCHAIN=local "$GO" build -trimpath -ldflags "-s -w" -o "$tmp/bin/etcd" go.etcd.io/etcd/server/v3
	)
	[[ -x "$tmp/bin/etcd" ]] || die "etcd build produced no binary"
	mkdir -p "$ETCD_DIR"
	rm -rf "$bin"
	mv "$tmp/bin" "$bin"
	echo "$ETCD_VERSION" >"$ETCD_DIR/.stamp"
	log "etcd $ETCD_VERSION ready in $bin"
}

# images_stamp hashes everything the image tarballs are made from.
images_stamp() {
	{
		(cd "$REPO" && find test/images -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum)
		sha256sum "$BUSYBOX_BIN" "$SCRIPT"
		"$GO" env GOVERSION
	} | sha256sum | cut -d' ' -f1
}

# build_images NAME... builds the named image tarballs (pause, busybox,
# probeserver) into $IMAGES_DIR, each only when its stamp changed.
build_images() {
	local want name todo=()
	want=$(images_stamp)
	for name in "$@"; do
		if [[ ! -f "$IMAGES_DIR/$name.tar" || "$(cat "$IMAGES_DIR/.$name.stamp" 2>/dev/null)" != "$want" ]]; then
			todo+=("$name")
		fi
	done
	[[ ${#todo[@]} -eq 0 ]] && return
	log "building images ${todo[*]} into $IMAGES_DIR"
	mkdir -p "$IMAGES_DIR" "$WORK/images"
	(cd "$REPO" && GOFLAGS=-buildvcs=false "$GO" build -o "$WORK/images/mkimage" ./test/images/mkimage)
	for name in "${todo[@]}"; do
		"image_$name" "$WORK/images"
		echo "$want" >"$IMAGES_DIR/.$name.stamp"
	done
}

# static_binary builds the Go package $2 of the repo as a static binary $1.
static_binary() {
	(cd "$REPO" && CGO_ENABLED=0 GOFLAGS=-buildvcs=false "$GO" build -trimpath -ldflags='-s -w' -o "$1" "$2")
}

# pause_binary writes the bed's pause binary $1: on amd64 the one-thread
# executable test/images/pause makes, elsewhere the Go process of
# test/images/pause/portable (the Go runtime's threads and all), which it
# builds.
pause_binary() {
	(cd "$REPO" && GOFLAGS=-buildvcs=false "$GO" run ./test/images/pause -o "$1")
}

# image_pause, image_probeserver and image_busybox write one tarball each,
# using the scratch dir $1 (which holds mkimage).
image_pause() {
	pause_binary "$1/pause"
	"$1/mkimage" -ref "$PAUSE_REF" -o "$IMAGES_DIR/pause.tar" \
		-file "/pause=$1/pause:0755" -entrypoint /pause
}

image_probeserver() {
	static_binary "$1/probeserver" ./test/images/probeserver
	"$1/mkimage" -ref "$PROBE_REF" -o "$IMAGES_DIR/probeserver.tar" \
		-file "/probeserver=$1/probeserver:0755" -dir /tmp:1777 \
		-entrypoint /probeserver -cmd serve
}

image_busybox() {
	local args=() applet
	for applet in $("$BUSYBOX_BIN" --list); do
		[[ "$applet" == busybox ]] || args+=(-symlink "/bin/$applet=busybox")
	done
	"$1/mkimage" -ref "$BUSYBOX_REF" -o "$IMAGES_DIR/busybox.tar" \
		-file "/bin/busybox=$BUSYBOX_BIN:0755" \
		-file "/etc/passwd=$REPO/test/images/busybox/passwd:0644" \
		-file "/etc/group=$REPO/test/images/busybox/group:0644" \
		-dir /etc:0755 -dir /root:0700 -dir /tmp:1777 \
		-env "$IMAGE_PATH_ENV" -cmd sh "${args[@]}"
}

# write_bed writes bed.json (keep in sync with ctrdtest.Bed) with what is
# there: the runtimes, images and cluster binaries that exist, so that a run
# preparation after a test one keeps every entry. It replaces the file only
# when its content changes.
write_bed() {
	local runc cni=/usr/lib/cni tmp runtimes=() images=() extra=()
	runc=$(command -v runc) || die "runc not found"
	[[ -x "$cni/bridge" && -x "$cni/host-local" && -x "$cni/loopback" ]] || die "CNI plugins missing in $cni"
	if [[ -x /usr/bin/containerd ]]; then
		runtimes+=('{"name": "containerd-1.6", "containerd": "/usr/bin/containerd", "ctr": "/usr/bin/ctr", "binDir": "/usr/bin", "configVersion": 2}')
	fi
	if [[ -x "$CTRD2_DIR/bin/containerd" ]]; then
		runtimes+=("{\"name\": \"containerd-2.1\", \"containerd\": \"$CTRD2_DIR/bin/containerd\", \"ctr\": \"$CTRD2_DIR/bin/ctr\", \"binDir\": \"$CTRD2_DIR/bin\", \"configVersion\": 3}")
	fi
	[[ ${#runtimes[@]} -gt 0 ]] || die "no containerd: neither /usr/bin/containerd nor $CTRD2_DIR/bin/containerd"
	local ref role
	for role in pause busybox probeserver; do
		case $role in
		pause) ref=$PAUSE_REF ;;
		busybox) ref=$BUSYBOX_REF ;;
		probeserver) ref=$PROBE_REF ;;
		esac
		[[ -f "$IMAGES_DIR/$role.tar" ]] && images+=("{\"ref\": \"$ref\", \"tar\": \"$IMAGES_DIR/$role.tar\", \"role\": \"$role\"}")
	done
	[[ -x "$KUBE_DIR/bin/kube-apiserver" ]] && extra+=("\"kubeAPIServer\": \"$KUBE_DIR/bin/kube-apiserver\"")
	[[ -x "$KUBE_DIR/bin/kubectl" ]] && extra+=("\"kubectl\": \"$KUBE_DIR/bin/kubectl\"")
	[[ -x "$ETCD_DIR/bin/etcd" ]] && extra+=("\"etcd\": \"$ETCD_DIR/bin/etcd\"")
	tmp=$(mktemp "$CACHE/.bed.json.XXXXXX")
	{
		echo '{'
		echo '  "runtimes": ['
		join_lines '    ' "${runtimes[@]}"
		echo '  ],'
		echo "  \"runc\": \"$runc\","
		echo "  \"cniBinDir\": \"$cni\","
		echo '  "images": ['
		join_lines '    ' "${images[@]}"
		if [[ ${#extra[@]} -gt 0 ]]; then
			echo '  ],'
			join_lines '  ' "${extra[@]}"
		else
			echo '  ]'
		fi
		echo '}'
	} >"$tmp"
	chmod 0644 "$tmp"
	if cmp -s "$tmp" "$CACHE/bed.json"; then
		rm -f "$tmp"
	else
		mv "$tmp" "$CACHE/bed.json"
	fi
}

# join_lines INDENT ITEM... prints the items one a line, comma-separated.
join_lines() {
	local indent=$1 i
	shift
	for ((i = 1; i <= $#; i++)); do
		if ((i < $#)); then
			echo "$indent${!i},"
		else
			echo "$indent${!i}"
		fi
	done
}

main() {
	local mode=${1:-test}
	case $mode in
	run | test | images) ;;
	*) die "usage: prepare.sh [test|run|images]" ;;
	esac
	[[ $(id -u) -eq 0 ]] || die "run as root"
	mkdir -p "$CACHE"
	exec 9>"$CACHE/.prepare.lock"
	flock 9
	WORK=$(mktemp -d "$CACHE/.work.XXXXXX")
	trap 'rm -rf "$WORK"' EXIT
	case $mode in
	images)
		install_packages busybox-static
		GO=$(find_go)
		build_images pause busybox
		log "images ready: $IMAGES_DIR/pause.tar ($PAUSE_REF), $IMAGES_DIR/busybox.tar ($BUSYBOX_REF)"
		return
		;;
	run)
		local runtime=${MINIKUBELET_RUNTIME:-containerd-2.1}
		case $runtime in
		containerd-2.1) install_packages "${RUN_PACKAGES[@]}" ;;
		containerd-1.6) install_packages "${RUN_PACKAGES[@]}" containerd ;;
		*) die "MINIKUBELET_RUNTIME=$runtime: want containerd-2.1 or containerd-1.6" ;;
		esac
		GO=$(find_go)
		[[ $runtime == containerd-2.1 ]] && build_containerd2
		build_images pause busybox
		;;
	test)
		install_packages "${RUN_PACKAGES[@]}" "${TEST_PACKAGES[@]}"
		GO=$(find_go)
		build_containerd2
		build_images pause busybox probeserver
		build_etcd
		build_kube
		;;
	esac
	write_bed
	log "bed ready: $CACHE/bed.json"
}

main "$@"
