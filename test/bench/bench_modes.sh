#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# What the two modes read, next to independent truths:
#  - cpu mode against `perf record -e task-clock` on the same fixture, run
#    for run (fx_spin: a spin with a cheap system call every 25 us;
#    fx_split: 70/30 in 10 ms cycles of CPU time; fx_evloop: an event loop
#    half busy on a timerfd; fx_bursts: 50 us of work between blocking
#    reads, 4000 a second): each function's share of the samples, and the
#    CPU time the samples stand for against `perf stat -e task-clock` and
#    schedstat over the same run;
#  - the 70/30 split over five runs, at 99 Hz;
#  - wall mode against the event loop's own clock (its time in epoll_wait),
#    and the event loop and fx_bursts against their life and schedstat,
#    quiet and loaded;
#  - EINTR and early returns of parked waits (fx_parked) and of the event
#    loop, in both modes at 99 and 999 Hz (must be 0);
#  - wall mode's cost on 1000 parked threads plus a spinning one
#    (fx_threads 1000): the daemon's CPU, and the spinner's CPU against a
#    run without tracerd.
#   bench_modes.sh TRACERD FIXTURE_DIR [SECONDS]
set -eu
tracerd=$1 fx=$2 secs=${3:-5}
tmp=$(mktemp -d /tmp/tracerd-bench-modes-XXXXXX)
pids=
cleanup() {
	for p in $pids; do kill -9 "$p" 2> /dev/null || true; done
	rm -rf "$tmp"
}
trap cleanup EXIT

# start FIXTURE [ARG]: runs it with its stdout in $tmp/out; sets $pid
start() {
	rm -f "$tmp/out"
	"$fx/$1" ${2:+"$2"} > "$tmp/out" 2> /dev/null &
	pid=$!
	pids="$pids $pid"
	until grep -q ready "$tmp/out" 2> /dev/null; do sleep 0.01; done
}
stop() { kill -9 "$pid" 2> /dev/null || true; wait "$pid" 2> /dev/null || true; }

# share FUNCTION < report: its total% (the samples with it on the stack) in
# `tracerd report` top, or in perf's `--children` output (its first column)
tshare() { awk -v f="$1" '$0 ~ "  " f " \\(" { sub("%", "", $2); print $2; exit }'; }
pshare() { awk -v f="$1" '$0 ~ "\\] " f "$" { sub("%", "", $1); print $1; exit }'; }

# cpu PID: its threads' CPU time so far in ns, by schedstat
cpu() { cat /proc/$1/task/*/schedstat | awk '{ s += $1 } END { printf "%.0f\n", s }'; }

echo "cpu mode against perf record -e task-clock --call-graph dwarf, ${secs}s each,"
echo "each function's total share (samples with it on the stack), and the CPU"
echo "time tracerd's samples stand for (samples/99) against perf stat's task-clock"
echo "and schedstat's over the same run:"
printf '  %-10s %-16s %8s %8s\n' fixture function tracerd perf
for spec in "fx_spin fx_spin_user" "fx_split split_a split_b" "fx_evloop loop_busy epoll_wait" \
	"fx_bursts burst_work burst_wait"; do
	set -- $spec
	f=$1
	shift
	start "$f"
	rm -rf "$tmp/repo"
	c0=$(cpu "$pid")
	perf stat -x, -e task-clock -p "$pid" -o "$tmp/stat" -- sleep "$secs" > /dev/null 2>&1 &
	ps=$!
	"$tracerd" --pid "$pid" -r "$tmp/repo" -q -d "${secs}s" 2> "$tmp/sum" || true
	wait "$ps" || true
	c1=$(cpu "$pid")
	"$tracerd" report "$tmp/repo" --limit 0 > "$tmp/t.txt"
	perf record -q -e task-clock -F 99 --call-graph dwarf -p "$pid" -o "$tmp/perf.data" \
		-- sleep "$secs" > /dev/null 2>&1 || true
	perf report -i "$tmp/perf.data" --stdio --children -g none -s sym 2> /dev/null |
		grep -v '^#' > "$tmp/p.txt" || true
	stop
	for fn in "$@"; do
		a=$(tshare "$fn" < "$tmp/t.txt") b=$(pshare "$fn" < "$tmp/p.txt")
		printf '  %-10s %-16s %7s%% %7s%%\n' "$f" "$fn" "${a:-0.00}" "${b:-0.00}"
	done
	n=$("$tracerd" report "$tmp/repo" -f folded | awk '{ s += $NF } END { print s + 0 }')
	ms=$(awk -F, '/task-clock/ { print $1; exit }' "$tmp/stat")
	# schedstat spans both (and their start-up): a little more
	awk -v n="$n" -v p="${ms:-0}" -v a=$((c1 - c0)) 'BEGIN {
		printf "  %-10s CPU time: tracerd %.2f s, perf stat %.2f s, schedstat %.2f s\n",
			"", n / 99, p / 1e3, a / 1e9 }'
done

echo "the 70/30 split (fx_split, cpu mode, 99 Hz, ${secs}s), split_a's share of split_a+b, five runs:"
start fx_split
line=
for i in 1 2 3 4 5; do
	rm -rf "$tmp/repo"
	"$tracerd" --pid "$pid" -r "$tmp/repo" -q -d "${secs}s" 2> "$tmp/sum" || true
	"$tracerd" report "$tmp/repo" --limit 0 > "$tmp/t.txt"
	a=$(tshare split_a < "$tmp/t.txt") b=$(tshare split_b < "$tmp/t.txt")
	line="$line $(awk -v a="${a:-0}" -v b="${b:-0}" 'BEGIN { printf "%.1f", a + b ? 100 * a / (a + b) : 0 }')"
done
stop
echo "  split_a:$line (truth 70.0)"

# counts PID: the fixture's SIGUSR2 report into $tmp/c.txt
counts() {
	n=$(grep -c '^end' "$tmp/out" || true)
	kill -USR2 "$1"
	until [ "$(grep -c '^end' "$tmp/out" || true)" -gt "$n" ]; do sleep 0.01; done
	awk -v n="$n" '/^end/ { k++; next } k == n && /^T / { print }' "$tmp/out" > "$tmp/c.txt"
}
# sum of a column (eintr $6, early $8, wait_ns $14, busy_ns $16) over the lines
col() { awk -v c="$1" '{ s += $c } END { printf "%.0f\n", s }' "$tmp/c.txt"; }

echo "wall mode against the event loop's own clock (fx_evloop, ${secs}s), epoll_wait's share:"
for hz in 99 999; do
	start fx_evloop
	rm -rf "$tmp/repo"
	"$tracerd" --pid "$pid" -r "$tmp/repo" -q -d "${secs}s" --mode wall -F "$hz" 2> "$tmp/sum" &
	t=$!
	until [ "$(awk '/^TracerPid/ {print $2}' /proc/$pid/status)" != 0 ]; do sleep 0.01; done
	counts "$pid"
	w0=$(col 14) b0=$(col 16)
	wait "$t" || true
	counts "$pid"
	w1=$(col 14) b1=$(col 16)
	stop
	loop=$("$tracerd" report "$tmp/repo" -f threads | awk '/ fx-loop /{ print $1 }')
	got=$("$tracerd" report "$tmp/repo" --tid "$loop" --limit 0 | tshare epoll_wait)
	echo "  -F $hz: sampled ${got}%, by its clock $(awk -v w="$((w1 - w0))" -v b="$((b1 - b0))" 'BEGIN { printf "%.1f", 100 * w / (w + b) }')%"
done

# the issue's event loop (2 ms timer, 1 ms of work) and a worker in short
# bursts (fx_bursts: 50 us of work between blocking reads, 4000 a second),
# quiet and with three busy loops per core: the wait's share against the
# thread's clock, its samples' time against its life in the recording,
# and its states against schedstat's split (goals: 5 points quiet, 8
# loaded; 2%; 5 points)
hogs=
load() {
	for i in $(seq $((3 * $(nproc)))); do
		sh -c 'while :; do :; done' &
		hogs="$hogs $!"
	done
	pids="$pids $hogs"
}
unload() { for p in $hogs; do kill -9 "$p" 2> /dev/null || true; done; hogs=; }
# rows TID STATE: the loop's samples in that state ("" for all)
rows() {
	"$tracerd" report "$tmp/repo" -f threads --tid "$1" ${2:+--state "$2"} |
		awk -v t="$1" '$1 == t { print $4 }'
}
for spec in "fx_evloop 2000 fx-loop epoll_wait" "fx_bursts 250 fx-burst burst_wait"; do
	set -- $spec
	f=$1 arg=$2 name=$3 fn=$4
	echo "wall mode, $name ($f $arg, 99 Hz, ${secs}s):"
	for load in quiet loaded; do
		start "$f" "$arg"
		[ $load = loaded ] && load
		loop=$(grep -l "^$name\$" /proc/$pid/task/*/comm | cut -d/ -f5)
		rm -rf "$tmp/repo"
		# its life in the recording: at least from the attach seen to
		# the stop asked (the truths' window), at most from tracerd's
		# start to its exit
		s0=$(date +%s%N)
		"$tracerd" --pid "$pid" -r "$tmp/repo" -q --mode wall 2> "$tmp/sum" &
		t=$!
		until [ "$(awk '/^TracerPid/ {print $2}' /proc/$pid/status)" != 0 ]; do sleep 0.001; done
		set -- $(cat /proc/$pid/task/$loop/schedstat)
		r0=$1 q0=$2 t0=$(date +%s%N)
		counts "$pid"
		w0=$(col 14) b0=$(col 16)
		sleep "$secs"
		counts "$pid"
		w1=$(col 14) b1=$(col 16)
		set -- $(cat /proc/$pid/task/$loop/schedstat)
		r1=$1 q1=$2 t1=$(date +%s%N)
		kill -INT "$t"
		wait "$t" || true
		s1=$(date +%s%N)
		unload
		stop
		got=$("$tracerd" report "$tmp/repo" --tid "$loop" --limit 0 | tshare "$fn")
		all=$(rows "$loop") on=$(rows "$loop" on-cpu) rq=$(rows "$loop" runnable)
		awk -v l=$load -v fn="$fn" -v g="${got:-0}" -v w=$((w1 - w0)) -v b=$((b1 - b0)) -v a="$all" \
			-v on="$on" -v rq="$rq" -v r=$((r1 - r0)) -v q=$((q1 - q0)) -v t=$((t1 - t0)) \
			-v T=$((s1 - s0)) 'BEGIN {
			printf "  %-6s %s %.1f%% sampled, %.1f%% by its clock; weight %.2f s of %.2f-%.2f s lived\n",
				l, fn, g, 100 * w / (w + b), a / 99, t / 1e9, T / 1e9
			printf "         on-cpu/runnable/sleeping %.1f/%.1f/%.1f%%, schedstat %.1f/%.1f/%.1f%%\n",
				100 * on / a, 100 * rq / a, 100 * (a - on - rq) / a,
				100 * r / t, 100 * q / t, 100 * (t - r - q) / t }'
	done
done

echo "EINTR and early returns while recorded ${secs}s (all waits of the fixture):"
for f in fx_parked fx_evloop; do
	for mode in cpu wall; do
		for hz in 99 999; do
			start "$f"
			counts "$pid"
			e0=$(col 6) r0=$(col 8)
			rm -rf "$tmp/repo"
			"$tracerd" --pid "$pid" -r "$tmp/repo" -q -d "${secs}s" --mode "$mode" \
				-F "$hz" 2> "$tmp/sum" || true
			counts "$pid"
			stop
			echo "  $f --mode $mode -F $hz: $(($(col 6) - e0)) EINTR, $(($(col 8) - r0)) early"
		done
	done
done

echo "wall mode on 1000 parked threads and a spinner (fx_threads 1000, 99 Hz, ${secs}s):"
spin_cpu() { awk '{ print $1 }' "/proc/$1/task/$2/schedstat"; }
start fx_threads 1000
spinner=$(grep -l '^fx-spin$' /proc/$pid/task/*/comm | cut -d/ -f5)
c0=$(spin_cpu "$pid" "$spinner")
sleep "$secs"
c1=$(spin_cpu "$pid" "$spinner")
rm -rf "$tmp/repo"
"$tracerd" --pid "$pid" -r "$tmp/repo" -d "${secs}s" --mode wall 2> "$tmp/sum" || true
c2=$(spin_cpu "$pid" "$spinner")
stop
grep -E 'samples|daemon CPU' "$tmp/sum" | sed 's/^ */  /'
awk -v a="$((c1 - c0))" -v b="$((c2 - c1))" -v s="$secs" 'BEGIN {
	printf "  the spinner ran %.2f s of %s s alone, %.2f s while recorded (%.3f of alone)\n",
		a / 1e9, s, b / 1e9, b / a }'
