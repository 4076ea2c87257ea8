#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# How long tracerd holds its target's signals, as the target sees it: the
# SIGALRMs of a 1 kHz interval timer that fx_signals handles per second,
# alone and under tracerd -F 999, medians of five interleaved runs.
# Ordinary signals merge while one is pending, so a signal that tracerd
# holds past the next expiry costs one delivery.  (make check proves that
# queued signals pass through exactly; how fast is a timing figure, here.)
#   bench_signals.sh TRACERD FX_SIGNALS
set -eu
tracerd=$1 fx=$2
tmp=$(mktemp -d /tmp/tracerd-bench-signals-XXXXXX)
trap 'rm -rf "$tmp"' EXIT

# one run; $1 = alone or traced; prints deliveries per second
one() {
	rm -f "$tmp/in" "$tmp/out"
	rm -rf "$tmp/repo"
	mkfifo "$tmp/in"
	"$fx" 3000 < "$tmp/in" > "$tmp/out" &
	pid=$!
	exec 3> "$tmp/in"
	until grep -q ready "$tmp/out"; do sleep 0.01; done
	if [ "$1" = traced ]; then
		# without the fifo's write end: the fixture waits for its end
		"$tracerd" --pid "$pid" -r "$tmp/repo" -q -F 999 2> "$tmp/err" 3>&- &
		t=$!
		until [ "$(awk '/^TracerPid/ {print $2}' /proc/$pid/status)" != 0 ]; do
			sleep 0.01
		done
	fi
	printf g >&3
	exec 3>&-
	wait "$pid"
	[ "$1" = traced ] && wait "$t"
	awk '/^alarms/ { printf "%.1f\n", $2 / $4 }' "$tmp/out"
}

median() { sort -n | sed -n 3p; }

: > "$tmp/alone"
: > "$tmp/traced"
for i in 1 2 3 4 5; do
	one alone >> "$tmp/alone"
	one traced >> "$tmp/traced"
done
a=$(median < "$tmp/alone")
b=$(median < "$tmp/traced")
echo "signals: a 1 kHz timer's SIGALRMs handled per second, medians of 5: $a alone," \
	"$b under tracerd -F 999 ($(awk -v a="$a" -v b="$b" 'BEGIN { printf "%.3f", b / a }') of alone)"
