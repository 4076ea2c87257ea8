#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# What wall mode and its wait classification cost on a program of 1000
# threads: fx_many (30% wait for mutexes held by other threads, 5% churn
# through 5 contended mutexes, 20% wait on condition variables, 15% on
# pipes, the rest sleep, some for 1 to 50 ms at a time; SPINNERS spin and
# count their work), recorded at 99 Hz for SECONDS in each run:
#   alone        the target's throughput without tracerd (the anchor of
#                the slowdown; run before and after the recordings)
#   --mode cpu   the anchor of tracerd's costs: it samples only the
#                threads that use CPU and classifies nothing
#   --mode wall  every thread at every tick, each new wait classified
#                (its kind, object, owner and the owner's stack, fd)
#   wall, idle   the same crowd asleep in one wait that never ends
#                (fx_many N S idle): wall mode with no new waits
# For each: tracerd's CPU time per second and per sample taken and its
# peak RSS (wait4, through /usr/bin/time), the samples per second it took
# against those asked (wall: HZ per thread; cpu: HZ per CPU second the
# target used), and the spinners' work per second against the run alone
# (their own count).  SPINNERS defaults to one less than the CPUs (at
# least 1), so that tracerd has a CPU to itself unless it needs more.
# The target and tracerd each run in a session of their own, as a server
# and a daemon do: with sched_autogroup the scheduler shares CPUs among
# sessions first, and tracerd's CPU would otherwise come out of the
# target's share.  On a machine busy with other work the idle crowd's
# spinner gets less CPU than the mixed crowd's even alone: compare each
# crowd with its own run alone.
#   bench_many.sh TRACERD FIXTURE_DIR [SECONDS] [THREADS] [SPINNERS]
set -eu
tracerd=$1 fx=$2 secs=${3:-5} n=${4:-1000}
ncpu=$(getconf _NPROCESSORS_ONLN)
spin=${5:-$((ncpu > 1 ? ncpu - 1 : 1))}
hz=99
tmp=$(mktemp -d /tmp/tracerd-bench-many-XXXXXX)
pid=
cleanup() {
	[ -n "$pid" ] && kill -9 "$pid" 2> /dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT

# Can this machine run N more threads (the target's, tracerd's and some
# to spare)?  threads-max and pid_max bound the system, ulimit -u a user
# other than root (the kernel does not apply it to root).
nthreads() { ls /proc/*/task 2> /dev/null | grep -c '^[0-9]' || true; }
need=$((n + 64))
tmax=$(cat /proc/sys/kernel/threads-max) pmax=$(cat /proc/sys/kernel/pid_max)
ulim=$(awk '/^Max processes/ { print $3 }' /proc/self/limits) now=$(nthreads)
room=$((tmax < pmax ? tmax - now : pmax - now))
if [ "$(id -u)" != 0 ] && [ "$ulim" != unlimited ]; then
	mine=$(ps -L -u "$(id -u)" --no-headers 2> /dev/null | wc -l)
	[ $((ulim - mine)) -lt "$room" ] && room=$((ulim - mine))
fi
echo "wall mode on fx_many, $n threads ($spin spinning) and main, ${hz} Hz, ${secs} s runs, $ncpu CPUs" \
	"(load average $(cut -d' ' -f1 /proc/loadavg)):"
echo "  room for threads: $room (threads-max $tmax, pid_max $pmax, ulimit -u $ulim$([ "$(id -u)" = 0 ] && echo ', not applied to root'), $now running)"
if [ "$room" -lt "$need" ]; then
	n=$((room - 64))
	echo "  this machine does not allow $need more threads: running with $n" >&2
	[ "$n" -ge 100 ] || { echo "  too few: skipped" >&2; exit 0; }
fi

# start [idle]: fx_many with its stdout in $tmp/out; sets $pid
start() {
	rm -f "$tmp/out"
	setsid "$fx/fx_many" "$n" "$spin" ${1:+"$1"} > "$tmp/out" 2> "$tmp/fx.err" &
	pid=$!
	until grep -q ready "$tmp/out" 2> /dev/null; do
		kill -0 "$pid" 2> /dev/null || { cat "$tmp/fx.err" >&2; exit 1; }
		sleep 0.05
	done
	sleep 1 # every waiter in its wait
}
stop() { kill -9 "$pid" 2> /dev/null || true; wait "$pid" 2> /dev/null || true; pid=; }
# work: the spinners' count and the fixture's clock, "W T"
work() {
	k=$(grep -c '^work' "$tmp/out" || true)
	kill -USR2 "$pid"
	until [ "$(grep -c '^work' "$tmp/out" || true)" -gt "$k" ]; do sleep 0.01; done
	grep '^work' "$tmp/out" | tail -1 | cut -d' ' -f2-
}
# the target's CPU seconds so far (all its threads)
cpu_s() { awk -v t="$(getconf CLK_TCK)" '{ print ($14 + $15) / t }' "/proc/$pid/stat"; }

# run NAME [MODE]: one run; appends "NAME work/s tracerd-fields..." to $tmp/rows
run() {
	name=$1 mode=${2:-}
	c0=$(cpu_s) w0=$(work)
	if [ -z "$mode" ]; then
		sleep "$secs"
		fields="- - - - - - - - -"
	else
		rm -rf "$tmp/repo"
		/usr/bin/time -f '%e %U %S %M' -o "$tmp/time" setsid "$tracerd" --pid "$pid" --mode "$mode" \
			-F "$hz" -d "${secs}s" -r "$tmp/repo" -q 2> "$tmp/sum" || true
		# elapsed, CPU s, peak RSS KiB, samples taken, lost (ring full),
		# asked per second, the summary's own seconds, its start-up ms
		# and us per sample after it
		fields=$(awk -v mode="$mode" -v hz="$hz" -v threads="$(ls "/proc/$pid/task" | wc -l)" \
			-v c0="$c0" -v c1="$(cpu_s)" '
			FNR == NR { e = $1; cpu = $2 + $3; rss = $4; next }
			/ recorded / { rec = $3 }
			/^  samples / { taken = $2 }
			/^  lost / { lost = $2 }
			/^  daemon CPU / { after = $13; up = $18 }
			END {
				asked = mode == "wall" ? hz * threads : hz * (c1 - c0) / rec
				printf "%s %s %s %s %s %s %s %s %s", e, cpu, rss, taken, lost, asked, rec,
					up, after
			}' "$tmp/time" "$tmp/sum")
	fi
	w1=$(work)
	echo "$name $w0 $w1 $fields" >> "$tmp/rows"
}

: > "$tmp/rows"
start
run alone
run "--mode_cpu" cpu
run "--mode_wall" wall
run alone
stop
start idle
run alone_idle
run "wall,_idle" wall
stop

# the table: each tracerd figure against --mode cpu's, the work against
# the mean of the runs alone (the idle crowd's against its own)
awk '
function rate(a, b, c, d) { return (c - a) / ((d - b) / 1e9) }
{ name[NR] = $1; w[NR] = rate($2, $3, $4, $5); e[NR] = $6; cpu[NR] = $7; rss[NR] = $8
  taken[NR] = $9; lost[NR] = $10; asked[NR] = $11; rec[NR] = $12; up[NR] = $13; after[NR] = $14 }
$1 == "alone" { alone += w[NR]; nalone++ }
$1 == "alone_idle" { alone_idle = w[NR] }
$1 == "--mode_cpu" { c = NR }
END {
	alone /= nalone
	printf "  %-12s %16s %16s %26s %15s %18s\n", "run", "CPU s per s", "us per sample",
		"samples/s taken of asked", "peak RSS", "target work/s"
	for (i = 1; i <= NR; i++) {
		n = name[i]; gsub("_", " ", n)
		anchor = n == "alone idle" || n == "wall, idle" ? alone_idle : alone
		if (e[i] == "-") {
			printf "  %-12s %16s %16s %26s %15s %11.1fM %s\n", n, "", "", "", "",
				w[i] / 1e6, n == "alone" ? sprintf("%.3f", w[i] / alone) : "anchor"
			continue
		}
		cs = cpu[i] / e[i]; us = taken[i] ? 1e6 * cpu[i] / taken[i] : 0
		ach = taken[i] / rec[i]
		printf "  %-12s %7.3f %8s %7.1f %8s %8.0f of %6.0f %6.3f %6.1fM %8s %11.1fM %6.3f\n", n,
			cs, i == c ? "anchor" : sprintf("%7.2fx", cs / (cpu[c] / e[c])),
			us, i == c ? "anchor" : sprintf("%7.3fx", us / (1e6 * cpu[c] / taken[c])),
			ach, asked[i], asked[i] ? ach / asked[i] : 0,
			rss[i] / 1024, i == c ? "anchor" : sprintf("%7.2fx", rss[i] / rss[c]),
			w[i] / 1e6, w[i] / anchor
		# start-up ends when the writer first finds both rings empty
		if (after[i] + 0 > 0)
			printf "  %-12s start-up %s ms, then %s us per sample; %s samples lost (ring full)\n",
				"", up[i], after[i], lost[i]
		else
			printf "  %-12s start-up never ended (the writer never found its rings empty); %s samples lost (ring full)\n", "",
				lost[i]
	}
	printf "  (alone: the two runs alone are the anchor of the mixed crowd, each\n"
	printf "  shown against their mean; wall, idle: against the idle crowd alone)\n"
}' "$tmp/rows"
echo "  load average at the end: $(cut -d' ' -f1 /proc/loadavg) (other work on the machine moves the figures)"
