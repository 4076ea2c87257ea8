#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# The daemon's CPU per sample against an anchor: another tracerd (the
# build before the stack copies that fit and the kernel chains, issue 31's
# "today's steady figure") recording the same fixture, in rounds that
# alternate the two, the median of each (goal: at most 1.3x the anchor's).
# The figure is each recording's summary, "after start-up: N us per
# sample": the daemon's CPU (its rusage, sampler and writer) after the
# first batch is written, over the samples taken since.  Rows:
#  - fx_bigframe (hot code below a 20 KiB and a 40 KiB frame), cpu mode at
#    99 and 999 Hz and wall mode at 99 Hz: this build copies (and unwinds)
#    the whole stacks, the anchor its first 8 KiB;
#  - fx_pipe (a writer to a pipe, most of its time below write()) at 999
#    Hz: this build's kernel call chains, which the anchor has not.
# The load average is printed beside each row: the machine may be shared.
#   bench_anchor.sh TRACERD ANCHOR FIXTURE_DIR [SECONDS] [ROUNDS]
set -eu
tracerd=$1 anchor=$2 fx=$3 secs=${4:-4} rounds=${5:-5}
tmp=$(mktemp -d /tmp/tracerd-bench-anchor-XXXXXX)
pid=
cleanup() {
	[ -z "$pid" ] || kill -9 "$pid" 2> /dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT

# one TRACERD MODE HZ: the steady us per sample of one recording of $pid
one() {
	rm -rf "$tmp/repo"
	"$1" record -q -p "$pid" -r "$tmp/repo" --mode "$2" -F "$3" -d "${secs}s" \
		2> "$tmp/err" > /dev/null || true
	sed -n 's/.*after start-up: \([0-9.]*\) us per sample.*/\1/p' "$tmp/err"
}
median() { tr ' ' '\n' | grep . | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] + 0 }'; }
load() { cut -d' ' -f1 /proc/loadavg; }

echo "daemon CPU per sample after start-up, this build against the anchor"
echo "($rounds alternating rounds of ${secs}s, medians; load: 1-minute average"
echo "at the row's start and end):"
for spec in "fx_bigframe cpu 99" "fx_bigframe cpu 999" "fx_bigframe wall 99" \
	"fx_pipe cpu 999"; do
	set -- $spec
	"$fx/$1" > "$tmp/out" 2> /dev/null &
	pid=$!
	until grep -q ready "$tmp/out" 2> /dev/null; do sleep 0.01; done
	l0=$(load) new= old= i=0
	while [ "$i" -lt "$rounds" ]; do
		old="$old $(one "$anchor" "$2" "$3")"
		new="$new $(one "$tracerd" "$2" "$3")"
		i=$((i + 1))
	done
	kill -9 "$pid" 2> /dev/null || true
	wait "$pid" 2> /dev/null || true
	pid=
	awk -v row="$1 $2 $3 Hz" -v n="$(echo $new | median)" -v o="$(echo $old | median)" \
		-v l="$l0-$(load)" -v rn="$new" -v ro="$old" 'BEGIN {
		printf "  %-24s %6.1f us, anchor %6.1f us: %.2fx (goal <= 1.3x), load %s\n",
			row, n, o, (o > 0 ? n / o : 0), l
		printf "  %-24s runs:%s; anchor:%s\n", "", rn, ro }'
done
