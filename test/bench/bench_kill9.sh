#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# What kill -9 leaves: readable samples of a recording killed 0.5 s and 3 s
# after tracerd started, against the same recording stopped cleanly
# (SIGINT: everything taken is written) at the same moment.  fx_threads in
# wall mode at 99 Hz; five runs each; medians.  Blocks are published at
# least every 250 ms and a chunk's first sample at once, so kill -9 should
# lose about 250 ms of samples, and never all of them.
#   bench_kill9.sh TRACERD FIXTURE_DIR [RUNS]
set -eu
tracerd=$1 fx=$2 runs=${3:-5}
tmp=$(mktemp -d /tmp/tracerd-bench-kill9-XXXXXX)
fxpid=
cleanup() {
	[ -n "$fxpid" ] && kill -9 "$fxpid" 2> /dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT

"$fx/fx_threads" > "$tmp/out" 2> /dev/null &
fxpid=$!
until grep -q ready "$tmp/out" 2> /dev/null; do sleep 0.01; done

# samples AFTER SIGNAL: readable samples of a recording sent SIGNAL AFTER
# seconds after it started
samples() {
	rm -rf "$tmp/repo"
	"$tracerd" --pid "$fxpid" --mode wall -F 99 -r "$tmp/repo" -q 2> /dev/null &
	t=$!
	sleep "$1"
	kill -"$2" "$t"
	wait "$t" 2> /dev/null || true
	"$tracerd" report -f info "$tmp/repo" 2> /dev/null |
		awk '/^samples:/ { print $2; found = 1 } END { if (!found) print 0 }'
}
median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

echo "kill -9 against a clean stop at the same moment (fx_threads, wall mode, 99 Hz, median of $runs):"
printf '  %-6s %10s %10s %7s %s\n' after "kill -9" SIGINT kept "kill -9 runs with no sample"
for after in 0.5 3; do
	: > "$tmp/k" && : > "$tmp/i"
	i=0
	while [ $i -lt "$runs" ]; do
		samples "$after" KILL >> "$tmp/k"
		samples "$after" INT >> "$tmp/i"
		i=$((i + 1))
	done
	k=$(median < "$tmp/k") c=$(median < "$tmp/i") none=$(grep -c '^0$' "$tmp/k" || true)
	printf '  %-6s %10s %10s %6s%% %s of %s\n' "${after}s" "$k" "$c" \
		"$(awk -v k="$k" -v c="$c" 'BEGIN { printf "%.0f", c ? 100 * k / c : 0 }')" "$none" "$runs"
done
