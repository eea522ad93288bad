#!/usr/bin/env bash
# setup.sh: the one entry point a newcomer runs as root on a fresh Debian VM.
#
#   bash test/setup.sh run    # install what is missing, run minikubelet on examples/manifests
#   bash test/setup.sh test   # install what is missing, run every test
#
# It installs the build tools (make, gcc, git, curl) from Debian, makes sure a
# Go toolchain new enough for go.mod is there, then hands over to `make TARGET`
# (`make run` installs only what running needs, test/scripts/prepare.sh run:
# runc, CNI plugins, containerd 2.x, the pause and busybox images; `make test`
# everything the tests need, prepare.sh test).
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$REPO"
log() { echo "setup: $*" >&2; }
die() { log "error: $*"; exit 1; }

[[ $(id -u) -eq 0 ]] || die "run as root (minikubelet drives containerd, mounts and cgroups)"
[[ $# -ge 1 ]] || die "usage: bash test/setup.sh run|test|build|bench|lint"

need=()
for tool in make gcc git curl unzip; do
	command -v "$tool" >/dev/null 2>&1 || need+=("$tool")
done
if [[ ${#need[@]} -gt 0 ]]; then
	log "installing ${need[*]}"
	apt-get update -q
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${need[@]}" ca-certificates
fi

# The Go version go.mod asks for, e.g. 1.26.0.
want=$(awk '/^go /{print $2; exit}' go.mod)
go_ok() {
	local have
	have=$("$1" env GOVERSION 2>/dev/null) || return 1
	have=${have#go}
	[[ "$(printf '%s\n%s\n' "$want" "$have" | sort -V | head -n1)" == "$want" ]]
}
GO=""
for candidate in "$(command -v go 2>/dev/null || true)" /usr/local/go/bin/go; do
	if [[ -n "$candidate" && -x "$candidate" ]] && go_ok "$candidate"; then
		GO=$candidate
		break
	fi
done
if [[ -z "$GO" ]]; then
	# Go publishes its toolchains as modules; fetch one through the module
	# proxy the machine is configured with (GOPROXY), else Go's default.
	proxy=${GOPROXY:-https://proxy.golang.org}
	proxy=${proxy%%,*}
	[[ -n "$proxy" && "$proxy" != direct && "$proxy" != off ]] ||
		die "no Go >= $want found; install it under /usr/local/go (or set GOPROXY to a Go module proxy) and re-run"
	arch=$(dpkg --print-architecture)
	ver=$want
	[[ "$ver" =~ ^[0-9]+\.[0-9]+$ ]] && ver="$ver.0"
	zip="$proxy/golang.org/toolchain/@v/v0.0.1-go$ver.linux-$arch.zip"
	log "fetching Go $ver from the module proxy"
	tmp=$(mktemp -d)
	curl -fsSL -o "$tmp/go.zip" "$zip" || die "could not fetch $zip"
	unzip -q "$tmp/go.zip" -d "$tmp"
	rm -rf /usr/local/go
	mv "$tmp"/golang.org/toolchain@*/ /usr/local/go
	chmod +x /usr/local/go/bin/* /usr/local/go/pkg/tool/*/* 2>/dev/null || true
	rm -rf "$tmp"
	GO=/usr/local/go/bin/go
	go_ok "$GO" || die "the fetched Go does not run"
fi
export PATH="$(dirname "$GO"):$PATH"
log "using $("$GO" version)"
exec make GO="$GO" "$@"
