#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# cpu mode on a bursty server's worker (fx_bursts: 50 us of its own CPU
# time between blocking reads of a pipe fed 4000 and 500 times a second),
# with no recorder, with perf capture and with ptrace capture, run after
# run:
#  - the worker's samples per second of its CPU time (schedstat), against
#    the 99 asked, and the share of them in its handler (burst_work);
#  - the recording's coverage line (ptrace: the share of the CPU time the
#    samples carry);
#  - the cost to the target: the process's CPU time (schedstat, every
#    thread) per request served, against the run without a recorder.
#   bench_ptracecpu.sh TRACERD FIXTURE_DIR [SECONDS]
set -eu
tracerd=$1 fx=$2 secs=${3:-5}
tmp=$(mktemp -d /tmp/tracerd-bench-ptracecpu-XXXXXX)
pid=
cleanup() {
	[ -n "$pid" ] && kill -9 "$pid" 2> /dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT

cpu() { cat /proc/$1/task/*/schedstat | awk '{ s += $1 } END { printf "%.0f\n", s }'; }
wcpu() { awk '{ print $1 }' "$1/schedstat"; }
# the requests the worker served so far (its report on SIGUSR2)
served() {
	ends=$(grep -c '^end' "$tmp/out" || true)
	kill -USR2 "$pid"
	until [ "$(grep -c '^end' "$tmp/out" || true)" -gt "$ends" ]; do sleep 0.01; done
	awk '$1 == "T" && $2 == "fx-burst" { n = $4 } END { print n }' "$tmp/out"
}

for feed in 250 2000; do
echo "cpu mode on fx_bursts $feed (50 us bursts, $((1000000 / feed)) a second), ${secs}s each, 99 Hz:"
printf '  %-8s %14s %10s %9s %18s\n' capture 'samples/cpu-s' handler coverage 'target cpu/request'
base=
for capture in none perf ptrace; do
	"$fx/fx_bursts" "$feed" > "$tmp/out" 2> /dev/null &
	pid=$!
	until grep -q ready "$tmp/out" 2> /dev/null; do sleep 0.01; done
	w=$(grep -l fx-burst /proc/$pid/task/*/comm | sed 's|/comm$||')
	rm -rf "$tmp/repo"
	if [ "$capture" != none ]; then
		"$tracerd" record -q --capture "$capture" -F 99 -r "$tmp/repo" --pid "$pid" \
			2> "$tmp/err" &
		t=$!
		# its CPU time counts from the attach (the worker traced)
		until [ "$(awk '/^TracerPid/ { print $2 }' "$w/status")" != 0 ]; do
			sleep 0.001
		done
		r0=$(wcpu "$w")
		sleep 0.5
	fi
	n0=$(served) c0=$(cpu "$pid")
	sleep "$secs"
	n1=$(served) c1=$(cpu "$pid")
	per=$(awk -v c=$((c1 - c0)) -v n=$((n1 - n0)) 'BEGIN { printf "%.1f", c / n / 1000 }')
	[ -z "$base" ] && base=$per
	ratio=$(awk -v a="$per" -v b="$base" 'BEGIN { printf "%.3f", a / b }')
	if [ "$capture" = none ]; then
		printf '  %-8s %14s %10s %9s %12s us %s\n' none - - - "$per" "(1.000)"
	else
		kill -INT "$t"
		wait "$t" || true
		r1=$(wcpu "$w")
		n=$("$tracerd" report "$tmp/repo" -f threads |
			awk '$3 == "fx-burst" { print $4 }')
		h=$("$tracerd" report "$tmp/repo" --thread fx-burst --limit 0 |
			awk '$0 ~ "  burst_work \\(" { print $2; exit }')
		cov=$(awk '/^  coverage/ { print $2; exit }' "$tmp/err")
		rate=$(awk -v n="${n:-0}" -v w=$((r1 - r0)) 'BEGIN { printf "%.1f", n / (w / 1e9) }')
		printf '  %-8s %14s %10s %9s %12s us (%s)\n' "$capture" "$rate" "${h:--}" \
			"${cov:-100%}" "$per" "$ratio"
	fi
	kill -9 "$pid" 2> /dev/null || true
	wait "$pid" 2> /dev/null || true
	pid=
done
done
echo "  (samples/cpu-s: the worker's samples over its schedstat CPU seconds while"
echo "  recorded; perf's within 10% of 99 and ptrace's within 20% are issue 31's figures)"
