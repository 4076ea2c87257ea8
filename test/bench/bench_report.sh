#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# make bench, part 4: tracerd report against perf report --stdio on
# recordings of the same fixture with the same sample count (perf with
# --call-graph dwarf, which gives it equally correct stacks).  Wall time and
# peak memory (GNU time's maximum resident set).
# usage: bench_report.sh TRACERD FX_WORK [SECONDS]   (2 busy threads at 999 Hz:
#        ~1,850 samples per second for tracerd, ~1,970 for perf, so the
#        default of 560 s gives each over 1,000,000 samples; perf.data grows
#        by ~16 MB per second, ~9 GB in all, under $TMPDIR or /tmp)
set -eu
tracerd=$1 fx=$2 secs=${3:-560}
fxpid=
dir=$(mktemp -d "${TMPDIR:-/tmp}/tracerd-bench-report.XXXXXX")
trap 'rm -rf "$dir"; [ -z "$fxpid" ] || kill $fxpid 2>/dev/null || true' EXIT INT TERM

need_mb=$((secs * 17 + 100))
have_mb=$(df -Pm "$dir" | awk 'NR == 2 { print $4 }')
if [ "$have_mb" -lt "$need_mb" ]; then
	echo "bench_report: perf.data for ${secs} s needs ~${need_mb} MB in $(dirname "$dir"), only ${have_mb} MB free;" \
		"free space, set TMPDIR, or run a shorter bench (make bench REPORT_SECONDS=50)" >&2
	exit 1
fi
iters=$((secs * 4000000)) # ~4x more work than the recording lasts (~1.1 us each)

start_fx() {
	mkfifo "$dir/in.$1"
	"$fx" "$iters" 2 0 < "$dir/in.$1" > /dev/null &
	fxpid=$!
	exec 7> "$dir/in.$1"
	echo x >&7
	sleep 0.2
}

start_fx t
"$tracerd" --pid "$fxpid" -F 999 --duration "${secs}s" -r "$dir/repo" -q 2> "$dir/tracerd.err"
kill $fxpid 2>/dev/null || true; wait $fxpid 2>/dev/null || true; exec 7>&-
tsamples=$(sed -n 's/.*samples *\([0-9]*\) taken.*/\1/p' "$dir/tracerd.err")

start_fx p
timeout -s INT "$secs" perf record -F 999 --call-graph dwarf -o "$dir/perf.data" -p "$fxpid" \
	2> "$dir/perf.err" || true
kill $fxpid 2>/dev/null || true; wait $fxpid 2>/dev/null || true; exec 7>&-
psamples=$(sed -n 's/.*(\([0-9]*\) samples).*/\1/p' "$dir/perf.err")

# wall time in ns (GNU time rounds to 10 ms), peak memory from GNU time
t0=$(date +%s%N)
/usr/bin/time -f "%M" -o "$dir/t.time" "$tracerd" report "$dir/repo" --limit 0 > "$dir/t.out"
t1=$(date +%s%N)
/usr/bin/time -f "%M" -o "$dir/p.time" perf report --stdio --no-children -i "$dir/perf.data" \
	> "$dir/p.out" 2> "$dir/p.err"
t2=$(date +%s%N)
# a report that failed fast would make a fine-looking ratio: both must have
# found the fixture's hot function, perf with its callers (dwarf unwinding)
grep -q 'work_leaf' "$dir/t.out" || { echo "bench_report: tracerd report lacks work_leaf" >&2; exit 1; }
grep -q 'work_mid' "$dir/p.out" && grep -q 'work_leaf' "$dir/p.out" ||
	{ echo "bench_report: perf report lacks the fixture's stacks:" >&2; head -5 "$dir/p.err" >&2; exit 1; }
tt=$(echo "($t1 - $t0) / 1000000000" | bc -l | cut -c1-6)
pt=$(echo "($t2 - $t1) / 1000000000" | bc -l | cut -c1-6)
read -r tm < "$dir/t.time"
read -r pm < "$dir/p.time"
echo
echo "== tracerd report vs perf report --stdio: fx_work, 2 busy threads, 999 Hz, ${secs} s"
echo
printf "%-34s %10s %12s %12s %14s\n" "command" "samples" "wall s" "peak MB" "input MB"
printf "%-34s %10s %12s %12.1f %14.1f\n" "tracerd report (top)" "$tsamples" "$tt" \
	"$(echo "$tm / 1024" | bc -l)" "$(du -sk "$dir/repo" | awk '{print $1/1024}')"
printf "%-34s %10s %12s %12.1f %14.1f\n" "perf report --stdio (dwarf)" "$psamples" "$pt" \
	"$(echo "$pm / 1024" | bc -l)" "$(du -sk "$dir/perf.data" | awk '{print $1/1024}')"
echo
echo "(per sample: perf report $(echo "$pt * 1000000 / $psamples" | bc -l | cut -c1-6) us, tracerd report $(echo "$tt * 1000000 / $tsamples" | bc -l | cut -c1-6) us: $(echo "($pt / $psamples) / ($tt / $tsamples)" | bc -l | cut -c1-6)x faster; goal >= 10x)"
