#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# What a decompression bomb in a target's binary costs tracerd: fx_chain
# with a .debug_info that inflates to 512 MiB of zeros (tracerd-gen bomb,
# about 550 KB on disk) against the anchor, a file of the same size with
# fx_chain's own DWARF and the same bytes appended where no section points
# (tracerd-gen bomb ... pad).  For each, ROUNDS interleaved runs of
#   record   tracerd record --cache-dir none -d 2s (the recording's wall
#            time: 2 s plus start-up and the end)
#   dump     tracerd dump --cache-dir none
# and their peak RSS (wait4, through /usr/bin/time) and wall time, as
# medians and as ratios bomb / anchor.  Before the bound on what a file
# may inflate to, the bomb took 549 MB and 12.2 s to record, 545 MB and
# 12.1 s to dump.
#   bench_bomb.sh TRACERD FIXTURE_DIR TRACERD_GEN [ROUNDS]
set -eu
tracerd=$1 fx=$2 gen=$3 rounds=${4:-3}
tmp=$(mktemp -d /tmp/tracerd-bench-bomb-XXXXXX)
pid=
cleanup() {
	[ -n "$pid" ] && kill -9 "$pid" 2> /dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT
"$gen" bomb "$fx/fx_chain" 512 "$tmp/bomb"
"$gen" bomb "$fx/fx_chain" 512 "$tmp/anchor" pad

# run KIND BIN: one measurement, "seconds KB" appended to $tmp/KIND-BIN
run() {
	"$tmp/$2" > /dev/null &
	pid=$!
	if [ "$1" = record ]; then
		/usr/bin/time -f "%e %M" -o "$tmp/t" "$tracerd" record --pid "$pid" -d 2s -q \
			--cache-dir none -r "$tmp/repo" 2> /dev/null
	else
		/usr/bin/time -f "%e %M" -o "$tmp/t" "$tracerd" dump --pid "$pid" \
			--cache-dir none > /dev/null 2>&1
	fi
	kill -9 "$pid" 2> /dev/null || true
	wait "$pid" 2> /dev/null || true
	pid=
	rm -rf "$tmp/repo"
	tail -n 1 "$tmp/t" >> "$tmp/$1-$2"
}

median() { # column of file
	sort -n -k "$2" "$1" | awk -v c="$2" '{ v[NR] = $c } END { print v[int((NR + 1) / 2)] }'
}

i=0
while [ $i -lt "$rounds" ]; do
	for kind in record dump; do
		run $kind anchor
		run $kind bomb
	done
	i=$((i + 1))
done
size=$(wc -c < "$tmp/bomb")
echo "bomb: $size bytes, .debug_info inflating to 512 MiB; anchor: the same size, its own DWARF ($rounds rounds, medians)"
for kind in record dump; do
	at=$(median "$tmp/$kind-anchor" 1) am=$(median "$tmp/$kind-anchor" 2)
	bt=$(median "$tmp/$kind-bomb" 1) bm=$(median "$tmp/$kind-bomb" 2)
	echo "$kind $at $am $bt $bm" | awk '{ printf "  %-6s anchor %.2f s %6.1f MB   bomb %.2f s %6.1f MB   bomb/anchor: time %.2f, peak RSS %.2f\n", $1, $2, $3 / 1024, $4, $5 / 1024, $4 / $2, $5 / $3 }'
done
