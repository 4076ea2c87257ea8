#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# What following a command's children costs: fx_forks bomb N (N children
# waiting together, past the 64 processes followed at once, then N short
# ones one after another) alone, under tracerd record -- (each child
# followed, or let go past the bound) and under --no-inherit (each child
# stopped once and let go), and under perf record --call-graph dwarf
# (the anchor: its inherit), medians of five interleaved runs: the
# command's wall time, and tracerd's own CPU time per child (its
# summary's "in all").  make check proves that every child is followed
# or counted and none is left stopped; how fast is a timing figure, here.
#   bench_children.sh TRACERD FX_DIR
set -eu
tracerd=$1 fx=$2/fx_forks n=300
tmp=$(mktemp -d /tmp/tracerd-bench-children-XXXXXX)
trap 'rm -rf "$tmp"' EXIT

now() { date +%s.%N; }

# one run; $1 = alone, inherit or noinherit; appends "wall cpu" to $tmp/$1
one() {
	rm -rf "$tmp/repo"
	s=$(now)
	case $1 in
	alone) "$fx" bomb $n > /dev/null ;;
	inherit) "$tracerd" record -q -r "$tmp/repo" -- "$fx" bomb $n > /dev/null 2> "$tmp/err" ;;
	noinherit) "$tracerd" record -q -r "$tmp/repo" --no-inherit -- "$fx" bomb $n \
		> /dev/null 2> "$tmp/err" ;;
	perf) perf record -q -F 99 --call-graph dwarf -o "$tmp/perf.data" -- "$fx" bomb $n \
		> /dev/null 2>&1 ;;
	esac
	e=$(now)
	cpu=0
	[ "$1" = alone ] || [ "$1" = perf ] || cpu=$(sed -n 's/.*(\([0-9.]*\) s in all).*/\1/p' "$tmp/err")
	echo "$s $e $cpu" | awk '{ printf "%.4f %.4f\n", $2 - $1, $3 }' >> "$tmp/$1"
}

median() { sort -n | sed -n 3p; }

kinds="alone inherit noinherit"
command -v perf > /dev/null && perf record -q -o "$tmp/perf.data" -- true 2> /dev/null &&
	kinds="$kinds perf"
for k in $kinds; do : > "$tmp/$k"; done
for i in 1 2 3 4 5; do
	for k in $kinds; do one $k; done
done
a=$(cut -d' ' -f1 < "$tmp/alone" | median)
b=$(cut -d' ' -f1 < "$tmp/inherit" | median)
c=$(cut -d' ' -f1 < "$tmp/noinherit" | median)
bc=$(cut -d' ' -f2 < "$tmp/inherit" | median)
cc=$(cut -d' ' -f2 < "$tmp/noinherit" | median)
p=0
[ -s "$tmp/perf" ] && p=$(cut -d' ' -f1 < "$tmp/perf" | median)
awk -v a="$a" -v b="$b" -v c="$c" -v p="$p" -v bc="$bc" -v cc="$cc" -v n=$((2 * n)) 'BEGIN {
	printf "children: %d short children (fx_forks bomb), medians of 5: %.3f s alone, " \
		"%.3f s followed (%.2fx), %.3f s --no-inherit (%.2fx)", n, a, b, b / a, c, c / a
	if (p > 0)
		printf ", %.3f s under perf record --call-graph dwarf (%.2fx; tracerd %.2fx of " \
			"perf)", p, p / a, b / p
	else
		printf ", no perf record to compare with"
	printf "; tracerd CPU %.0f us per child followed, %.0f us per child let go\n",
		bc * 1e6 / n, cc * 1e6 / n }'
