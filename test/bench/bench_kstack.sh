#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# Wall mode's kernel stacks of blocked threads (/proc/TID/stack, root):
# tracerd's steady CPU per sample (its summary's figure after start-up)
# recording, in wall mode, fx_evloop on a 2 ms timer (a new blocked period
# at many ticks), fx_contend (a dozen threads blocking and woken every few
# ms: the worst case, a read per thread at most ticks) and fx_kwait (two
# threads blocked for good: one read each for the whole run), with kernel
# stacks and with --no-kernel, in interleaved rounds, with perf and ptrace
# capture; the ratio of the medians is the figure, and the reads beside
# the ticks.  Skipped where the kernel shows no kernel stack.
#   bench_kstack.sh TRACERD FIXTURE_DIR [SECONDS] [ROUNDS]
set -eu
tracerd=$1 fx=$2 secs=${3:-4} rounds=${4:-3}
if ! cat /proc/self/stack > /dev/null 2>&1; then
	echo "kernel stacks of blocked threads: skipped (/proc/self/stack needs CAP_SYS_ADMIN)"
	exit 0
fi
tmp=$(mktemp -d /tmp/tracerd-bench-kstack-XXXXXX)
pid=
cleanup() {
	[ -z "$pid" ] || kill -9 "$pid" 2> /dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT

# one CAPTURE EXTRA: tracerd's steady CPU us per sample, the kernel
# stacks it read ("-" with --no-kernel) and its ticks
one() {
	rm -rf "$tmp/repo"
	"$tracerd" record -q -m wall --capture "$1" -d "${secs}s" -p "$pid" -r "$tmp/repo" $2 \
		2> "$tmp/err" > /dev/null
	us=$(sed -n 's/.*after start-up: \([0-9.]*\) us per sample.*/\1/p' "$tmp/err")
	reads=$(sed -n 's/.*once per blocked period (\([0-9]*\) read).*/\1/p' "$tmp/err")
	ticks=$(sed -n 's/.* in \([0-9]*\) ticks$/\1/p' "$tmp/err")
	echo "${us:-0} ${reads:--} ${ticks:-0}"
}

median() { sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }

for f in "fx_evloop 2000" fx_contend fx_kwait; do
	# shellcheck disable=SC2086 # the fixture's argument, if any
	"$fx"/$f > "$tmp/out" 2> /dev/null &
	pid=$!
	until grep -q ready "$tmp/out" 2> /dev/null; do sleep 0.01; done
	for cap in perf ptrace; do
		: > "$tmp/on"
		: > "$tmp/off"
		i=0
		while [ "$i" -lt "$rounds" ]; do
			one "$cap" "" >> "$tmp/on"
			one "$cap" --no-kernel >> "$tmp/off"
			i=$((i + 1))
		done
		on=$(cut -d' ' -f1 < "$tmp/on" | median)
		off=$(cut -d' ' -f1 < "$tmp/off" | median)
		reads=$(cut -d' ' -f2 < "$tmp/on" | median)
		ticks=$(cut -d' ' -f3 < "$tmp/on" | median)
		awk -v f="${f%% *}" -v cap="$cap" -v on="$on" -v off="$off" -v reads="$reads" \
			-v ticks="$ticks" 'BEGIN {
			printf "kernel stacks of blocked threads, %s, wall, %s capture: %.1f us of tracerd CPU per sample with, %.1f without (--no-kernel): %.2fx; %s reads of /proc/TID/stack in %s ticks\n",
				f, cap, on, off, (off > 0 ? on / off : 0), reads, ticks }'
	done
	kill -9 "$pid" 2> /dev/null || true
	wait "$pid" 2> /dev/null || true
	pid=
done
