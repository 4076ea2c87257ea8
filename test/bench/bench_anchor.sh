#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# The daemon's CPU per sample against an anchor: another tracerd (the
# build before the stack copies that fit and the kernel chains, issue 31's
# "today's steady figure") recording the same fixture, in rounds that
# alternate the two, the median of each (goal: at most 1.3x the anchor's).
# Two figures per recording: its summary's "after start-up: N us per
# sample" (the daemon's CPU, its rusage, after the first batch is written,
# over the samples taken since; the end of the recording included), and
# the steady one: its threads' CPU time (schedstat) from its first block
# on disk to 1 s before the end, over that stretch's share of the samples
# (the rate is steady; a loaded machine moves the rate, and with it what
# each sample carries of the daemon's work per second).  Rows:
#  - fx_bigframe (hot code below a 20 KiB and a 40 KiB frame), cpu mode at
#    99 and 999 Hz and wall mode at 99 Hz: this build copies (and unwinds)
#    the whole stacks, the anchor its first 8 KiB;
#  - fx_pipe (a writer to a pipe, most of its time below write()) at 999
#    Hz: this build's kernel call chains, which the anchor has not.
# The load average is printed beside each row: the machine may be shared.
#   bench_anchor.sh TRACERD ANCHOR FIXTURE_DIR [SECONDS] [ROUNDS]
set -eu
tracerd=$1 anchor=$2 fx=$3 secs=${4:-6} rounds=${5:-5}
tmp=$(mktemp -d /tmp/tracerd-bench-anchor-XXXXXX)
pid=
cleanup() {
	[ -z "$pid" ] || kill -9 "$pid" 2> /dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT

now() { awk '{ print $1 }' /proc/uptime; }
# cpu PID: its threads' CPU time in ns (schedstat)
cpu() { cat /proc/"$1"/task/*/schedstat 2> /dev/null | awk '{ t += $1 } END { print t + 0 }'; }

# one TRACERD MODE HZ: "SUMMARY STEADY RATE" of one recording of $pid: us
# per sample, and samples a second
one() {
	rm -rf "$tmp/repo"
	start=$(now)
	"$1" record -p "$pid" -r "$tmp/repo" --mode "$2" -F "$3" -d "${secs}s" \
		2> "$tmp/err" > /dev/null &
	t=$!
	# the steady state: from its first block on disk (start-up done,
	# which a loaded machine stretches to seconds) to 1 s before the end
	until [ -n "$(find "$tmp/repo" -name '*.part' -size +1k 2> /dev/null)" ] ||
		! kill -0 "$t" 2> /dev/null; do
		sleep 0.05
	done
	t0=$(now) c0=$(cpu "$t")
	left=$(awk -v a="$start" -v b="$t0" -v s="$secs" 'BEGIN { printf "%.2f", s - 1 - (b - a) }')
	sleep "$(awk -v l="$left" 'BEGIN { print (l > 0 ? l : 0) }')"
	t1=$(now) c1=$(cpu "$t")
	wait "$t" || true
	awk -v c="$((c1 - c0))" -v w="$(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }')" \
		-v secs="$secs" '
		/after start-up:/ { sub(/.*after start-up: /, ""); sum = $1 + 0 }
		/^  samples / { n = $2 + 0 }
		END { printf "%.1f %.1f %.0f\n", sum, (n && w >= 1 ? c / 1e3 / (n * w / secs) : 0),
			n / secs }' "$tmp/err"
}
median() { tr ' ' '\n' | grep . | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] + 0 }'; }
load() { cut -d' ' -f1 /proc/loadavg; }

echo "daemon CPU per sample, this build against the anchor ($rounds alternating"
echo "rounds of ${secs}s, medians; load: 1-minute average at the row's start and end):"
for spec in "fx_bigframe cpu 99" "fx_bigframe cpu 999" "fx_bigframe wall 99" \
	"fx_pipe cpu 999"; do
	set -- $spec
	# emptied here, not by the redirection in the child: the "ready"
	# of the run before must not be read as this one's
	: > "$tmp/out"
	"$fx/$1" > "$tmp/out" 2> /dev/null &
	pid=$!
	until grep -q ready "$tmp/out" 2> /dev/null; do sleep 0.01; done
	l0=$(load) i=0
	: > "$tmp/new"
	: > "$tmp/old"
	while [ "$i" -lt "$rounds" ]; do
		one "$anchor" "$2" "$3" >> "$tmp/old"
		one "$tracerd" "$2" "$3" >> "$tmp/new"
		i=$((i + 1))
	done
	kill -9 "$pid" 2> /dev/null || true
	wait "$pid" 2> /dev/null || true
	pid=
	for k in 1 2 3; do
		eval "n$k=\$(cut -d' ' -f$k < \"\$tmp/new\" | median)"
		eval "o$k=\$(cut -d' ' -f$k < \"\$tmp/old\" | median)"
	done
	awk -v row="$1 $2 $3 Hz" -v n1="$n1" -v o1="$o1" -v n2="$n2" -v o2="$o2" \
		-v n3="$n3" -v o3="$o3" -v l="$l0-$(load)" 'BEGIN {
		printf "  %-22s summary %6.1f us, anchor %6.1f: %.2fx; steady %6.1f us, anchor %6.1f: %.2fx (goal <= 1.3x); %s and %s samples/s; load %s\n",
			row, n1, o1, (o1 > 0 ? n1 / o1 : 0), n2, o2, (o2 > 0 ? n2 / o2 : 0), n3, o3, l }'
	printf '  %-22s runs (summary steady rate): %s; anchor: %s\n' "" \
		"$(paste -sd, "$tmp/new")" "$(paste -sd, "$tmp/old")"
done
