#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# cpu mode on a bursty server's worker (fx_bursts FEED,WORK: a request
# every FEED us, each WORK us of its own CPU time in handle_request,
# between blocking reads of a pipe), with no recorder, with perf capture
# and with ptrace capture, idle and with two busy loops per core, run
# after run:
#  - the worker's samples per second of its CPU time (schedstat), against
#    the 99 asked, and the share of them in its request handler
#    (handle_request and what it calls; perf is the truth of that share);
#  - the recording's coverage line (ptrace: the share of the CPU time the
#    samples carry), and for ptrace where its stops landed (the summary's
#    triggers line: in user code, at a call's return, at a wait's return);
#  - the cost to the target: the process's CPU time (schedstat, every
#    thread) per request served, against the run without a recorder.
#   bench_ptracecpu.sh TRACERD FIXTURE_DIR [SECONDS]
set -eu
tracerd=$1 fx=$2 secs=${3:-5}
tmp=$(mktemp -d /tmp/tracerd-bench-ptracecpu-XXXXXX)
pid= loads=
cleanup() {
	[ -n "$pid" ] && kill -9 "$pid" 2> /dev/null || true
	for l in $loads; do kill -9 "$l" 2> /dev/null || true; done
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
load_start() {
	for i in $(seq $(($(nproc) * 2))); do
		sh -c 'while :; do :; done' &
		loads="$loads $!"
	done
}
load_stop() {
	for l in $loads; do kill -9 "$l" 2> /dev/null || true; done
	for l in $loads; do wait "$l" 2> /dev/null || true; done
	loads=
}

for spec in 1000,150 250,50; do
feed=${spec%,*} work=${spec#*,}
for load in idle loaded; do
echo "cpu mode on fx_bursts $spec ($work us requests, $((1000000 / feed)) a second), $load, ${secs}s each, 99 Hz:"
printf '  %-8s %14s %9s %9s %18s  %s\n' capture 'samples/cpu-s' handler coverage \
	'target cpu/request' 'ptrace stops: user/call/wait-return'
[ "$load" = loaded ] && load_start
base=
for capture in none perf ptrace; do
	# emptied here, not by the redirection in the child: the "ready"
	# of the run before must not be read as this one's
	: > "$tmp/out"
	"$fx/fx_bursts" "$spec" > "$tmp/out" 2> /dev/null &
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
		printf '  %-8s %14s %9s %9s %12s us %s\n' none - - - "$per" "(1.000)"
	else
		kill -INT "$t"
		wait "$t" || true
		r1=$(wcpu "$w")
		n=$("$tracerd" report "$tmp/repo" -f threads |
			awk '$3 == "fx-burst" { print $4 }')
		# total% of the handler's row: it and its callees
		h=$("$tracerd" report "$tmp/repo" --thread fx-burst --limit 0 |
			awk '$0 ~ "  handle_request \\(" { print $2; exit }')
		cov=$(awk '/^  coverage/ { print $2; exit }' "$tmp/err")
		stops=$(awk '/^  triggers/ { for (i = 1; i <= NF; i++) if ($i == "stops") \
			print $(i + 1) "/" $(i + 5) "/" $(i + 10) }' "$tmp/err")
		rate=$(awk -v n="${n:-0}" -v w=$((r1 - r0)) 'BEGIN { printf "%.1f", n / (w / 1e9) }')
		printf '  %-8s %14s %9s %9s %12s us (%s)  %s\n' "$capture" "$rate" "${h:--}" \
			"${cov:-100%}" "$per" "$ratio" "${stops:--}"
	fi
	kill -9 "$pid" 2> /dev/null || true
	wait "$pid" 2> /dev/null || true
	pid=
done
load_stop
done
done
echo "  (samples/cpu-s: the worker's samples over its schedstat CPU seconds while"
echo "  recorded; perf's within 10% of 99 and ptrace's within 20%, and at least 90%"
echo "  in the handler, are issue 31's figures; loaded: two busy loops per core)"
