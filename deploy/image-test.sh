#!/bin/sh
# Proves the container image with podman on a machine that may reach no
# container registry: when the build stage's base image is neither stored
# nor pullable, it makes one from this machine's Go installation and a
# static busybox, feeds the build the modules of this machine's module
# cache, and runs deploy/container-test.sh with it.
#
#   make image-test            (or: deploy/image-test.sh)
#
# The final stage is FROM scratch, which needs no registry. Needs podman,
# curl, go (the version go.mod asks for) and, for the local base image,
# busybox-static (Debian: apt-get install podman runc busybox-static).
#
# Environment:
#   GO_IMAGE      the build stage's base; default the Dockerfile's, and
#                 localhost/coppice-go:<go version> when that cannot be had
#   PODMAN_FLAGS  podman's global flags. The default is what runs rootful
#                 podman inside a container without systemd: vfs storage
#                 (no overlay on overlay), cgroupfs, events in a file, runc
#                 (crun refuses hybrid cgroups), and a storage of its own
#                 under /var/lib/coppice-image-test so that it does not
#                 meet an existing store of another driver. Set it empty
#                 on an ordinary host.
#   LIMITS        --ulimit flags of build and run; the default is lower
#                 than podman's, which a container may not raise to.
#   KEEP=1        keeps the image coppice:test.
set -eu
cd "$(dirname "$0")/.."

STORE=/var/lib/coppice-image-test
PODMAN_FLAGS=${PODMAN_FLAGS-"--root $STORE/storage --runroot $STORE/run --storage-driver vfs \
--cgroup-manager cgroupfs --events-backend file --runtime runc"}
LIMITS=${LIMITS-"--ulimit nofile=$(ulimit -Hn):$(ulimit -Hn) --ulimit nproc=8192:8192"}
GO_IMAGE=${GO_IMAGE:-$(sed -n 's/^ARG GO_IMAGE=//p' Dockerfile)}

step() { echo "image-test: $*"; }
fail() { echo "image-test: FAIL: $*" >&2; exit 1; }
# shellcheck disable=SC2086
p() { podman $PODMAN_FLAGS "$@"; }

command -v podman >/dev/null || fail "podman is not installed"
build_flags=
if p image exists "$GO_IMAGE" || p pull -q "$GO_IMAGE" >/dev/null 2>&1; then
	step "build stage on $GO_IMAGE"
else
	goroot=$(go env GOROOT)
	version=$(go env GOVERSION)
	GO_IMAGE=localhost/coppice-go:${version#go}
	step "no registry gives the base image: the build stage is on $GO_IMAGE, of $goroot"
	if ! p image exists "$GO_IMAGE"; then
		step "making $GO_IMAGE"
		busybox=$(command -v busybox || true)
		[ -n "$busybox" ] && ! ldd "$busybox" >/dev/null 2>&1 ||
			fail "the local base image needs a static busybox (Debian: busybox-static)"
		root=$(mktemp -d)
		trap 'rm -rf "$root"' EXIT
		mkdir -p "$root/rootfs/bin" "$root/rootfs/usr/local" "$root/rootfs/etc/ssl/certs" "$root/rootfs/tmp" "$root/rootfs/root"
		cp "$busybox" "$root/rootfs/bin/busybox"
		for applet in $("$busybox" --list); do
			[ -e "$root/rootfs/bin/$applet" ] || ln -s busybox "$root/rootfs/bin/$applet"
		done
		cp -a "$goroot" "$root/rootfs/usr/local/go"
		cp /etc/ssl/certs/ca-certificates.crt "$root/rootfs/etc/ssl/certs/" 2>/dev/null || true
		# git, with the libraries it links, stamps the commit when the
		# build context holds a repository (a clone, not a worktree).
		if git=$(command -v git); then
			for f in "$git" $(ldd "$git" | sed -n 's/.*=> \(\/[^ ]*\).*/\1/p; s/^[[:space:]]*\(\/[^ ]*\) .*/\1/p'); do
				mkdir -p "$root/rootfs$(dirname "$f")"
				cp -L "$f" "$root/rootfs$f"
			done
		fi
		chmod 1777 "$root/rootfs/tmp"
		echo 'root:x:0:0:root:/root:/bin/sh' >"$root/rootfs/etc/passwd"
		echo 'root:x:0:' >"$root/rootfs/etc/group"
		tar -C "$root/rootfs" -cf "$root/go.tar" .
		p import -q --change 'ENV PATH=/usr/local/go/bin:/root/go/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
			--change 'ENV GOTOOLCHAIN=local' "$root/go.tar" "$GO_IMAGE" >/dev/null || fail "import $GO_IMAGE"
		rm -rf "$root"
		trap - EXIT
	fi
	# The build reads the modules from this machine's module cache, filled
	# through whatever module proxy this machine reaches.
	go mod download
	cache=$(go env GOMODCACHE)/cache/download
	build_flags="-v $cache:/goproxy:ro --build-arg GOPROXY=file:///goproxy"
fi

# Without systemd podman has no timer to run the health check by itself,
# and says so at each start and stop ("unable to get systemd connection");
# the test runs the check (podman healthcheck run) instead.
status=0
CONTAINER=podman CONTAINER_FLAGS=$PODMAN_FLAGS \
	BUILD_FLAGS="$LIMITS --build-arg GO_IMAGE=$GO_IMAGE $build_flags" RUN_FLAGS="$LIMITS" \
	deploy/container-test.sh || status=$?
# The build stage's image is left untagged; in the test's own store it goes.
case $PODMAN_FLAGS in *"$STORE"*) p image prune -f >/dev/null ;; esac
exit $status
