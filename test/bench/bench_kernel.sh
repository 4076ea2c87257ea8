#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# Kernel frames' cost: tracerd's steady CPU per sample (its summary's
# figure after start-up, which /proc/self's rusage gives it) recording
# fx_pipe (a writer to a pipe, most of its time below write()) with
# kernel call chains and with --no-kernel, in interleaved rounds, at 99
# and 999 Hz; the ratio of the medians is the figure (goal: at most 1.3),
# and the start-up's CPU (kernel chains read /proc/kallsyms once) beside.
#   bench_kernel.sh TRACERD FIXTURE_DIR [SECONDS] [ROUNDS]
set -eu
tracerd=$1 fx=$2 secs=${3:-4} rounds=${4:-3}
tmp=$(mktemp -d /tmp/tracerd-bench-kernel-XXXXXX)
pid=
cleanup() {
	[ -z "$pid" ] || kill -9 "$pid" 2> /dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT

"$fx/fx_pipe" > "$tmp/out" 2> /dev/null &
pid=$!
until grep -q ready "$tmp/out" 2> /dev/null; do sleep 0.01; done

# one HZ EXTRA: prints tracerd's steady CPU us per sample and its
# start-up ms
one() {
	rm -rf "$tmp/repo"
	"$tracerd" record -q -F "$1" -d "${secs}s" -p "$pid" -r "$tmp/repo" $2 2> "$tmp/err" \
		> /dev/null
	grep -q "kernel       " "$tmp/err"
	sed -n 's/.*after start-up: \([0-9.]*\) us per sample (start-up \([0-9]*\) ms).*/\1 \2/p' \
		"$tmp/err"
}

median() { sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }

for hz in 99 999; do
	: > "$tmp/on"
	: > "$tmp/off"
	i=0
	while [ "$i" -lt "$rounds" ]; do
		one "$hz" "" >> "$tmp/on"
		one "$hz" --no-kernel >> "$tmp/off"
		i=$((i + 1))
	done
	on=$(cut -d' ' -f1 < "$tmp/on" | median)
	off=$(cut -d' ' -f1 < "$tmp/off" | median)
	son=$(cut -d' ' -f2 < "$tmp/on" | median)
	soff=$(cut -d' ' -f2 < "$tmp/off" | median)
	awk -v hz="$hz" -v on="$on" -v off="$off" -v son="$son" -v soff="$soff" 'BEGIN {
		printf "kernel frames, fx_pipe at %s Hz: %.1f us of tracerd CPU per sample with, %.1f without (--no-kernel): %.2fx (goal <= 1.3x); start-up %s ms with, %s without\n",
			hz, on, off, (off > 0 ? on / off : 0), son, soff }'
done
