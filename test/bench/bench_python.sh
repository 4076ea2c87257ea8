#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# The writer's cost of a Python sample against a native one: tracerd
# records a CPU-bound CPython program (fx_python.py, Debian's
# /usr/bin/python3, stripped, and each of pyenv's 3.11, 3.12 and 3.13
# present, whose libpython or python carries DWARF: column "3.N p") and a
# CPU-bound native one (fx_chain), run after run, and prints its own
# "daemon CPU ... after start-up" figure for each: the Python ones read the
# frame chain (process_vm_readv) on top of the unwind, and name the
# native frames left from a libpython with DWARF.  The anchor is the
# native run of the same round; the last line is each column's median
# ratio to it, and the load average before and after (the other work on
# the machine moves every figure).
#   bench_python.sh TRACERD FIXTURE_DIR [SECONDS] [ROUNDS]
set -eu
tracerd=$1 fx=$2 secs=${3:-5} rounds=${4:-3}
src=$(dirname "$0")/../fixtures/fx_python.py
if [ ! -x /usr/bin/python3 ]; then
	echo "python: skipped: no /usr/bin/python3 (apt-get install python3)"
	exit 0
fi
pythons=/usr/bin/python3
for v in 11 12 13; do
	p=$(ls -d "${PYENV_ROOT:-/root/.pyenv}"/versions/3.$v.*/bin/python3.$v 2> /dev/null | tail -1)
	[ -n "$p" ] && pythons="$pythons $p"
done
tmp=$(mktemp -d /tmp/tracerd-bench-python-XXXXXX)
pid=
cleanup() {
	[ -n "$pid" ] && kill -9 "$pid" 2> /dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT

# one recording of the running $pid: its samples and steady cost (us)
run() {
	rm -rf "$tmp/repo"
	"$tracerd" record --pid "$pid" -r "$tmp/repo" -F 499 --duration "${secs}s" > "$tmp/log" 2>&1
	kill -9 "$pid"
	wait "$pid" 2> /dev/null || true
	pid=
	awk '/daemon CPU/ { for (i = 1; i <= NF; i++) if ($i == "start-up:") print $(i + 1) }' "$tmp/log"
}

echo "python: daemon CPU per sample after start-up (us), cpu mode, 499 Hz, ${secs}s each;"
echo "  load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
printf '  %-6s %10s' round native
for p in $pythons; do
	case $p in /usr/bin/*) tag= ;; *) tag=' p' ;; esac
	printf ' %14s' "$("$p" -c 'import sys; print("%d.%d" % sys.version_info[:2])')$tag (ratio)"
done
echo
: > "$tmp/ratios"
for r in $(seq "$rounds"); do
	"$fx/fx_chain" > /dev/null 2>&1 &
	pid=$!
	sleep 0.5
	n=$(run)
	printf '  %-6s %10s' "$r" "$n"
	col=0
	for p in $pythons; do
		col=$((col + 1))
		FX_PYTHON=hot "$p" "$src" > /dev/null 2>&1 &
		pid=$!
		sleep 0.5
		v=$(run)
		ratio=$(echo "$n $v" | awk '{ printf "%.2f", $2 / $1 }')
		echo "$col $ratio" >> "$tmp/ratios"
		printf ' %6s (%5s)' "$v" "$ratio"
	done
	echo
done
printf '  %-6s %10s' median 1.00
col=0
for p in $pythons; do
	col=$((col + 1))
	printf ' %14s' "$(awk -v c=$col '$1 == c { print $2 }' "$tmp/ratios" | sort -n |
		awk '{ v[NR] = $1 } END { printf "(%.2f)", NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }')"
done
echo
echo "  load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
