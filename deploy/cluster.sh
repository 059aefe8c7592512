#!/bin/sh
# Starts a 3-node Coppice cluster on loopback for a try-out: node N serves
# the API on 127.0.0.1:808N and replicates on 127.0.0.1:708N, with its data
# in DIR/nN (DIR is the first argument, default ./data-cluster). Node 1
# prints the administrator's key on the first start (or uses
# COPPICE_BOOTSTRAP_KEY). Ctrl-C stops the three.
set -eu
dir=${1:-./data-cluster}
bin=${COPPICE_BIN:-./bin/coppice}
join=127.0.0.1:7081,127.0.0.1:7082,127.0.0.1:7083
pids=""
stop() {
	for p in $pids; do kill "$p" 2>/dev/null || true; done
	wait
}
trap stop INT TERM
for n in 1 2 3; do
	mkdir -p "$dir"
	"$bin" serve --addr 127.0.0.1:808$n --data "$dir/n$n" \
		--node-id $n --raft-addr 127.0.0.1:708$n --join $join \
		--log-level "${COPPICE_LOG_LEVEL:-warn}" &
	pids="$pids $!"
done
echo "cluster: nodes at http://127.0.0.1:8081, :8082 and :8083 (data in $dir); Ctrl-C stops them"
wait
