#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# make bench, part 5: the HTML flame graph with over 100,000 unique stacks.
# Generates a synthetic recording whose samples spread over many stacks,
# writes the page, and loads it in headless chromium with a search applied
# (the URL hash does what typing does), against the same chromium loading the
# page of a 10-stack recording: the anchor is chromium's own start-up.
# usage: bench_html.sh TRACERD TRACERD_GEN
set -eu
tracerd=$1 gen=$2
dir=$(mktemp -d "${TMPDIR:-/tmp}/tracerd-bench-html.XXXXXX")
trap 'rm -rf "$dir"' EXIT INT TERM

if ! command -v chromium > /dev/null 2>&1; then
	echo "bench_html: chromium is not installed (apt-get install chromium); skipped" >&2
	exit 0
fi

now() { date +%s%N; }
secs() { echo "($2 - $1) / 1000000000" | bc -l | cut -c1-6; }

# chromium loading file://$1#$2, drawing and searching: "WALL DRAWN", the
# wall time of the whole chromium run (start-up, and --dump-dom writing the
# page back out) and the page's own time from navigation to the end of its
# first drawing (its data-drawn-ms).  Its DOM must hold drawn frames and a
# matched percentage, or the figures mean nothing.
load() {
	l0=$(now)
	timeout 300 chromium --headless --no-sandbox --disable-gpu --no-first-run \
		--disable-background-networking --disable-component-update --disable-sync \
		--user-data-dir="$dir/profile" --dump-dom "file://$1#$2" > "$1.dom" 2> "$1.log"
	l1=$(now)
	grep -q 'class="f' "$1.dom" && grep -q 'id="match">matched [1-9]' "$1.dom" ||
		{ echo "bench_html: $1 drew no frames or matched nothing" >&2; exit 1; }
	ms=$(sed -n 's/.*data-drawn-ms="\([0-9]*\)".*/\1/p' "$1.dom" | head -1)
	echo "$(secs "$l0" "$l1") $(echo "$ms / 1000" | bc -l | cut -c1-6)"
}

"$gen" -o "$dir/big.tcf" --stacks 300000 --zipf 0.8 --repeat 0.05 --threads 64 \
	--seconds 60 --hz 99 > /dev/null
"$gen" -o "$dir/small.tcf" --stacks 10 --threads 1 --seconds 10 --hz 99 > /dev/null
unique=$("$tracerd" report "$dir/big.tcf" -f folded | wc -l)
samples=$("$tracerd" report "$dir/big.tcf" --limit 0 | sed -n 's/^\([0-9]*\) samples$/\1/p')

t0=$(now)
/usr/bin/time -f "%M" -o "$dir/gen.time" "$tracerd" report "$dir/big.tcf" -f html -o "$dir/big.html"
t1=$(now)
"$tracerd" report "$dir/small.tcf" -f html -o "$dir/small.html"
read -r gm < "$dir/gen.time"
load "$dir/small.html" 'search=::' > /dev/null # warm chromium's caches
small=$(load "$dir/small.html" 'search=::')
big=$(load "$dir/big.html" 'search=::')

echo
echo "== HTML flame graph: $samples samples, $unique unique stacks (function level)"
echo
printf "%-40s %10s %12s %10s\n" "step" "wall s" "in page s" "size MB"
printf "%-40s %10s %12s %10.1f\n" "tracerd report -f html (peak $((gm / 1024)) MB)" "$(secs "$t0" "$t1")" \
	- "$(du -k "$dir/big.html" | awk '{print $1 / 1024}')"
printf "%-40s %10s %12s %10.1f\n" "chromium: load, draw, search (10 stacks)" ${small} \
	"$(du -k "$dir/small.html" | awk '{print $1 / 1024}')"
printf "%-40s %10s %12s %10.1f\n" "chromium: the same ($unique stacks)" ${big} \
	"$(du -k "$dir/big.html" | awk '{print $1 / 1024}')"
echo
echo "(in page: navigation to the end of the first drawing, search applied; wall"
echo " adds chromium's start-up and --dump-dom writing the page back out)"
