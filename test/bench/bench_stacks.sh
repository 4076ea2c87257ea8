#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# Stack copies that fit, and what the copies cost:
#  - cut stacks (ending in "[stack cut: ...]") with perf capture on
#    fx_bigframe (hot code below a 20 KiB and a 40 KiB frame) in cpu mode at
#    99 and 999 Hz and in wall mode, and on a `clang -O2 -c` of a generated
#    C file of a few thousand lines, recorded from its first instruction
#    (goal: 0% on the frames, at most 2% on clang);
#  - the daemon's CPU per sample after start-up on the same runs (the
#    recording's summary), to set against another tracerd's on the same
#    machine: run this script with both;
#  - the cost of wall mode's switch samples to a target that switches tens
#    of thousands of times a second (fx_pingpong: two threads handing a byte
#    over pipes, 10 us of work each, its round trips its own clock of work
#    done): its CPU per round trip alone, under tracerd in wall mode, under
#    `perf record -e context-switches --call-graph dwarf` and under `perf
#    record -e context-switches`, each started by its recorder, in rounds
#    that alternate; the ratio to alone is the slowdown.
#   bench_stacks.sh TRACERD FIXTURE_DIR [SECONDS]
set -eu
tracerd=$1 fx=$2 secs=${3:-5}
tmp=$(mktemp -d /tmp/tracerd-bench-stacks-XXXXXX)
pids=
cleanup() {
	for p in $pids; do kill -9 "$p" 2> /dev/null || true; done
	rm -rf "$tmp"
}
trap cleanup EXIT

# cut REPO: "cut% of samples" from its folded report
cut() {
	"$tracerd" report "$1" -f folded 2> /dev/null | awk '{ n = $NF; t += n }
		/\[stack cut/ { c += n } END { printf "%5.1f%% of %6d", t ? 100 * c / t : 0, t }'
}
# percost SUMMARY: the daemon's CPU per sample after start-up, in us
percost() { sed -n 's/.*after start-up: \([0-9.]*\) us per sample.*/\1/p' "$1"; }

echo "cut stacks with perf capture, and the daemon's CPU per sample after start-up:"
printf '  %-34s %17s %10s\n' run cut "us/sample"
for spec in "cpu 99" "cpu 999" "wall 99"; do
	set -- $spec
	"$fx/fx_bigframe" > "$tmp/out" 2> /dev/null &
	pid=$!
	pids="$pids $pid"
	until grep -q ready "$tmp/out" 2> /dev/null; do sleep 0.01; done
	rm -rf "$tmp/repo"
	"$tracerd" --pid "$pid" -r "$tmp/repo" --mode "$1" -F "$2" -d "${secs}s" \
		2> "$tmp/sum" > /dev/null || true
	kill -9 "$pid" 2> /dev/null || true
	wait "$pid" 2> /dev/null || true
	printf '  %-34s %17s %10s\n' "fx_bigframe 20+40 KiB, $1 $2 Hz" "$(cut "$tmp/repo")" \
		"$(percost "$tmp/sum")"
done

# A C file whose compile has deep and varied stacks: nested expressions,
# statements and initializers parsed by recursive descent, and optimized.
awk 'BEGIN {
	print "struct s { int a, b; struct s *next; };"
	for (f = 0; f < 150; f++) {
		printf "int f%d(struct s *p, int x) {\n  int y = 0;\n", f
		printf "  for (int i = 0; i < x; i++) {\n"
		e = "x"
		for (d = 0; d < 24; d++)
			e = "(" e (d % 3 ? " + " : " * ") "(i ^ " d + f ")" ")"
		printf "    y += %s;\n", e
		printf "    if (p && p->a > i) { y ^= p->b; p = p->next; } else if (y & 1) { y = y / 3 + i; }\n"
		printf "  }\n  return y%s;\n}\n", f ? " + f" f - 1 "(p, x - 1)" : ""
	}
}' > "$tmp/gen.c"
if command -v clang > /dev/null; then
	for hz in 99 999; do
		rm -rf "$tmp/repo"
		"$tracerd" record -r "$tmp/repo" -F "$hz" -- clang -O2 -c "$tmp/gen.c" \
			-o "$tmp/gen.o" 2> "$tmp/sum" > /dev/null || true
		printf '  %-34s %17s %10s\n' "clang -O2 -c ($(wc -l < "$tmp/gen.c") lines), $hz Hz" \
			"$(cut "$tmp/repo")" "$(percost "$tmp/sum")"
	done
else
	echo "  clang: not on this machine (apt-get install clang), no row"
fi

# cost CMD...: fx_pingpong's CPU (its own, user and system) per round trip,
# in us: what the recorder's work at each switch costs the target, which a
# loaded machine does not blur as it does the rate of round trips
cost() {
	"$@" > "$tmp/pp" 2> /dev/null || true
	awk '/^rounds/ && $2 > 0 { printf "%.2f\n", $6 / $2 * 1e6 }' "$tmp/pp"
}
echo
echo "a target switching tens of thousands of times a second (fx_pingpong, ${secs}s"
echo "a run, 3 alternating rounds, each started by its recorder): its CPU per round"
echo "trip (two switches off a CPU), median, and against alone:"
a= t= d= p=
for round in 1 2 3; do
	a="$a $(cost "$fx/fx_pingpong" "$secs")"
	rm -rf "$tmp/repo"
	t="$t $(cost "$tracerd" record -q -r "$tmp/repo" --mode wall -- "$fx/fx_pingpong" "$secs")"
	if command -v perf > /dev/null; then
		d="$d $(cost perf record -q -e context-switches --call-graph dwarf \
			-o "$tmp/perf.data" -- "$fx/fx_pingpong" "$secs")"
		p="$p $(cost perf record -q -e context-switches -o "$tmp/perf.data" -- \
			"$fx/fx_pingpong" "$secs")"
	fi
done
med() { echo "$@" | tr ' ' '\n' | grep . | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] + 0 }'; }
alone=$(med $a)
for row in "alone:$a" "tracerd wall mode:$t" "perf -e context-switches, dwarf:$d" \
	"perf -e context-switches:$p"; do
	name=${row%%:*} runs=${row#*:}
	m=$(med $runs)
	awk -v n="$name" -v m="$m" -v a="$alone" -v r="$runs" 'BEGIN {
		if (m <= 0 || a <= 0) { printf "  %-34s (not run)\n", n; exit }
		printf "  %-34s %7.2f us  %.2fx alone  (runs:%s)\n", n, m, m / a, r }'
done
