#!/bin/sh
# Runs the side-by-side benchmark suite (bench/suite) at N docs and writes
# bench/results/<date>-<N>.md. Installs PostgreSQL and the word list when
# they are missing, builds the server and the suite, then runs one system
# at a time. Extra arguments go to the suite (see bench/suite/main.go).
# COPPICE_BIN names a server binary to measure instead of building one.
set -eu
N=${1:-100000}
[ $# -gt 0 ] && shift
cd "$(dirname "$0")/.."

sudo=""
[ "$(id -u)" -ne 0 ] && sudo=sudo
missing=""
ls /usr/lib/postgresql/*/bin/postgres >/dev/null 2>&1 || missing="$missing postgresql"
[ -f /usr/share/dict/words ] || missing="$missing wamerican"
if [ -n "$missing" ]; then
	echo "installing:$missing"
	$sudo apt-get update
	$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y $missing
fi

GO=${GO:-go}
bin=${COPPICE_BIN:-bin/coppice}
[ -n "${COPPICE_BIN:-}" ] || $GO build -tags pebblegozstd -o bin/coppice ./cmd/coppice
(cd bench/suite && $GO build -tags pebblegozstd -o ../../bin/coppice-bench .)
exec ./bin/coppice-bench -n "$N" -bin "$bin" -out bench/results -work bench/.work "$@"
