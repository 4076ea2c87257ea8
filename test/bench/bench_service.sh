#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# tracerd service following 10 processes: its CPU (the service and its
# worker) against the anchor, tracerd record on the same 10 processes for
# the same time, and the idle cost of the scans alone; then 200 (and 1000,
# where the fd limit allows) idle processes followed by one rule.
# Usage: bench_service.sh TRACERD FIXTURE_DIR [SECONDS]
set -eu
td=$1
fx=$2
secs=${3:-20}
dir=$(mktemp -d /tmp/tracerd-bench-svc-XXXXXX)
pids=""
cleanup() { kill $pids 2>/dev/null || true; rm -rf "$dir"; }
trap cleanup EXIT

# the CPU seconds of pid and its children still running
cpu_of() {
	t=0
	for p in $1 $(pgrep -P "$1" || true); do
		s=$(awk '{print $14 + $15}' /proc/$p/stat 2>/dev/null || echo 0)
		t=$((t + s))
	done
	echo "$t"
}

for i in 1 2 3 4 5 6 7 8 9 10; do
	"$fx/fx_threads" 7 >/dev/null &
	pids="$pids $!"
done
sleep 1
hz=$(getconf CLK_TCK)

cat >"$dir/conf" <<CONF
[Service]
Directory=$dir/data
[Target threads]
Cmdline=fx_threads 7\$
CONF
chmod 600 "$dir/conf"

run() { # mode: cpu or wall
	sed -i "/^Mode=/d" "$dir/conf"
	echo "Mode=$1" >>"$dir/conf"
	"$td" service --config "$dir/conf" >"$dir/log" 2>&1 &
	svc=$!
	until [ "$(grep -c 'following' "$dir/log")" -ge 10 ]; do sleep 0.2; done
	a=$(cpu_of $svc)
	sleep "$secs"
	b=$(cpu_of $svc)
	kill $svc
	wait $svc || true
	svc_cpu=$(echo "scale=4; ($b - $a) / $hz / $secs" | bc)

	"$td" record $(for p in $pids; do printf -- '--pid %s ' "$p"; done) --mode "$1" \
		--duration "${secs}s" -r "$dir/rec-$1" -q >/dev/null 2>&1 &
	rec=$!
	sleep 1
	a=$(cpu_of $rec)
	sleep $((secs - 2))
	b=$(cpu_of $rec)
	wait $rec || true
	rec_cpu=$(echo "scale=4; ($b - $a) / $hz / ($secs - 2)" | bc)
	printf 'service, 10 processes of 15 threads, %s mode, 99 Hz: %.2f%% of a CPU; tracerd record on the same: %.2f%% (ratio %.2f)\n' \
		"$1" "$(echo "$svc_cpu * 100" | bc)" "$(echo "$rec_cpu * 100" | bc)" \
		"$(echo "scale=3; $svc_cpu / $rec_cpu" | bc)"
	rm -rf "$dir/data" "$dir/rec-$1"
}
run cpu
run wall

# 200 idle followed processes of 2 threads each (fx_sleepers): the service's
# CPU (it and its worker) as % of a core over the same time, and the
# worker's RSS per process followed; then 1000, as a ratio to the 200 row.
# Where it goes: the service's scans of /proc (every ScanInterval: each
# process not followed read, a followed one only listed), the worker's
# reads (each cgroup's OOM kill count once a second, not each process's;
# the sampler's round of /proc/PID/task reads).
idle200=""
idle() { # N
	"$fx/fx_sleepers" "$1" >"$dir/sleepers.out" &
	sl=$!
	pids="$pids $sl"
	until grep -q ready "$dir/sleepers.out"; do sleep 0.2; done
	cat >"$dir/conf" <<CONF
[Service]
Directory=$dir/data
[Target sleepers]
Comm=fx-sleeper
CONF
	"$td" service --config "$dir/conf" >"$dir/log" 2>&1 &
	svc=$!
	until [ "$(grep -c 'rule sleepers: following' "$dir/log")" -ge "$1" ]; do sleep 0.5; done
	w=$(pgrep -P $svc | head -1)
	a=$(cpu_of $svc)
	sa=$(awk '{print $14 + $15}' /proc/$svc/stat)
	sleep "$secs"
	b=$(cpu_of $svc)
	sb=$(awk '{print $14 + $15}' /proc/$svc/stat)
	svc_rss=$(awk '/VmRSS/ {print $2}' /proc/$svc/status)
	w_rss=$(awk '/VmRSS/ {print $2}' /proc/$w/status)
	kill $svc
	wait $svc || true
	kill $sl
	wait $sl 2>/dev/null || true
	pct=$(echo "scale=4; ($b - $a) * 100 / $hz / $secs" | bc)
	printf 'service, %s idle processes of 2 threads, cpu mode, 99 Hz: %.2f%% of a core (service %.2f%%, worker %.2f%%); RSS service %s KiB, worker %s KiB (%.1f KiB per process)' \
		"$1" "$pct" "$(echo "scale=4; ($sb - $sa) * 100 / $hz / $secs" | bc)" \
		"$(echo "scale=4; ($b - $a - $sb + $sa) * 100 / $hz / $secs" | bc)" "$svc_rss" "$w_rss" \
		"$(echo "scale=2; $w_rss / $1" | bc)"
	if [ -n "$idle200" ] && [ "$(echo "$idle200 > 0" | bc)" = 1 ]; then
		printf ' (CPU ratio to 200: %.2f)' "$(echo "scale=3; $pct / $idle200" | bc)"
	fi
	printf '\n'
	[ "$1" = 200 ] && idle200=$pct
	rm -rf "$dir/data"
}
idle 200
if [ "$(ulimit -n)" -ge 8192 ] || ulimit -n 8192 2>/dev/null; then
	idle 1000
fi
