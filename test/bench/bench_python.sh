#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# The writer's cost of a Python sample against a native one: tracerd
# records a CPU-bound CPython program (fx_python.py, Debian's
# /usr/bin/python3) and a CPU-bound native one (fx_chain), run after run,
# and prints its own "daemon CPU ... after start-up" figure for each: the
# Python one reads the frame chain (process_vm_readv) on top of the
# unwind.  The anchor is the native run of the same round.
#   bench_python.sh TRACERD FIXTURE_DIR [SECONDS] [ROUNDS]
set -eu
tracerd=$1 fx=$2 secs=${3:-5} rounds=${4:-3}
src=$(dirname "$0")/../fixtures/fx_python.py
if [ ! -x /usr/bin/python3 ]; then
	echo "python: skipped: no /usr/bin/python3 (apt-get install python3)"
	exit 0
fi
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

echo "python: daemon CPU per sample after start-up, cpu mode, 499 Hz, ${secs}s each:"
printf '  %-6s %12s %12s %8s\n' round 'native us' 'python us' ratio
for r in $(seq "$rounds"); do
	"$fx/fx_chain" > /dev/null 2>&1 &
	pid=$!
	sleep 0.5
	n=$(run)
	FX_PYTHON=hot /usr/bin/python3 "$src" > /dev/null 2>&1 &
	pid=$!
	sleep 0.5
	p=$(run)
	printf '  %-6s %12s %12s %8s\n' "$r" "$n" "$p" "$(echo "$n $p" | awk '{ printf "%.2f", $2 / $1 }')"
done
