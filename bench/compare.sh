#!/bin/sh
# Runs the benchmarks of one package as of a base commit and as of the work
# tree, in turns, and prints every figure of both side by side with their
# ratio. On a shared machine absolute times drift from run to run; figures
# taken in turns within one command drift together, so their ratio holds.
#
#   bench/compare.sh PKG BENCH [BASE]
#
# PKG is a package directory (./engine), BENCH the -bench pattern, BASE a
# commit (default main). The work tree's benchmark files of PKG
# (*_bench_test.go) replace BASE's, so that both sides run the same
# benchmarks: they must build against BASE's code. COUNT (default 3) turns
# are run, the side that goes first alternating; BENCHTIME (default 1s) and
# COPPICE_BENCH_MAX pass through. The table gives the median of the turns.
set -eu
[ $# -ge 2 ] || { echo "usage: $0 PKG BENCH [BASE]" >&2; exit 2; }
pkg=${1%/}
bench=$2
base=${3:-main}
GO=${GO:-go}
count=${COUNT:-3}
benchtime=${BENCHTIME:-1s}
cd "$(dirname "$0")/.."

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
trap 'exit 1' INT TERM
mkdir "$tmp/src"
git archive --format=tar "$base" | tar -x -C "$tmp/src"
cp "$pkg"/*_bench_test.go "$tmp/src/$pkg/"
(cd "$tmp/src" && $GO test -tags pebblegozstd -c -o "$tmp/base.test" "./$pkg")
$GO test -tags pebblegozstd -c -o "$tmp/new.test" "./$pkg"

run() { # side, directory
	(cd "$2/$pkg" && "$tmp/$1.test" -test.run '^$' -test.bench "$bench" \
		-test.benchtime "$benchtime" -test.timeout 120m) | tee -a "$tmp/$1.out" | grep -v '^\(PASS\|goos\|goarch\|pkg\|cpu\)' >&2
}
i=0
while [ "$i" -lt "$count" ]; do
	i=$((i + 1))
	if [ $((i % 2)) -eq 1 ]; then
		echo "turn $i: $base, then the work tree" >&2
		run base "$tmp/src"
		run new .
	else
		echo "turn $i: the work tree, then $base" >&2
		run new .
		run base "$tmp/src"
	fi
done

echo
echo "$pkg, -bench '$bench', $count turns of $benchtime, median per side; ratio = work tree / $base"
echo
awk -v base="$base" '
function median(key,   n, i, j, v, t) {
	n = cnt[key]
	for (i = 1; i <= n; i++) v[i] = vals[key, i]
	for (i = 2; i <= n; i++)
		for (j = i; j > 1 && v[j-1] > v[j]; j--) { t = v[j]; v[j] = v[j-1]; v[j-1] = t }
	if (n % 2) return v[(n+1)/2]
	return (v[n/2] + v[n/2+1]) / 2
}
function show(v) {
	if (v == int(v)) return sprintf("%.0f", v)
	return sprintf("%.2f", v)
}
FNR == 1 { side = (FILENAME ~ /base\.out$/) ? "base" : "new" }
/^Benchmark/ {
	name = $1; sub(/-[0-9]+$/, "", name)
	for (f = 3; f < NF; f += 2) {
		key = side SUBSEP name SUBSEP $(f+1)
		cnt[key]++; vals[key, cnt[key]] = $f
		if (!((name, $(f+1)) in seen)) { seen[name, $(f+1)] = 1; order[++rows] = name SUBSEP $(f+1) }
	}
}
END {
	printf "| benchmark | unit | %s | work tree | ratio |\n|---|---|---|---|---|\n", base
	for (r = 1; r <= rows; r++) {
		split(order[r], p, SUBSEP)
		b = ("base" SUBSEP order[r]) in cnt ? median("base" SUBSEP order[r]) : ""
		w = ("new" SUBSEP order[r]) in cnt ? median("new" SUBSEP order[r]) : ""
		ratio = (b != "" && w != "" && b != 0) ? sprintf("%.2f", w / b) : "-"
		printf "| %s | %s | %s | %s | %s |\n", p[1], p[2], b == "" ? "" : show(b), w == "" ? "" : show(w), ratio
	}
}' "$tmp/base.out" "$tmp/new.out"
