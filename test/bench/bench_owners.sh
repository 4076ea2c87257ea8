#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# Where the waits report shows a lock's owner, and what showing it costs
# the owner (test/fixtures/fx_owners.c: a mutex holder runs 30 ms of CPU
# in ow_mutex_crit, an rwlock writer 20 ms in ow_rwlock_crit, each then
# sleeps 20 ms in msleep without its lock; two posters and a reader wait):
#  - of the waiters' wait on each lock, the share credited to the holder
#    with a stack inside its critical section, with no stack taken while it
#    held the lock, and with another stack (must be 0), idle and with
#    three busy loops per core, in wall mode, without --owner-stops (the
#    kernel asked for an early sample of the owner) and with it;
#  - the cost: the holders' holds per second and mean hold (lock to
#    unlock, wall time) alone and recorded in wall mode, idle, both ways;
#    the early samples tracerd asked of the kernel, its stops of lock
#    owners for their stack and its stopped time.
#   bench_owners.sh TRACERD FIXTURE_DIR [SECONDS]
set -eu
tracerd=$1 fx=$2 secs=${3:-5}
tmp=$(mktemp -d /tmp/tracerd-bench-owners-XXXXXX)
pids=
cleanup() {
	for p in $pids; do kill -9 "$p" 2> /dev/null || true; done
	rm -rf "$tmp"
}
trap cleanup EXIT

start() {
	rm -f "$tmp/out"
	"$fx/fx_owners" > "$tmp/out" 2> /dev/null &
	pid=$!
	pids="$pids $pid"
	until grep -q '^end' "$tmp/out" 2> /dev/null; do sleep 0.01; done
}
stop() { kill -9 "$pid" 2> /dev/null || true; wait "$pid" 2> /dev/null || true; }

load=
load_start() {
	n=$((3 * $(nproc)))
	for i in $(seq "$n"); do
		sh -c 'while :; do :; done' &
		load="$load $!"
		pids="$pids $!"
	done
}
load_stop() {
	for p in $load; do kill -9 "$p" 2> /dev/null || true; wait "$p" 2> /dev/null || true; done
	load=
}

# credit KIND OBJECT WAITER HOLDER CRIT < waits.json: "inside none wrong
# total" ns over the sites of kind and object whose waiters' names start
# with WAITER, credited to HOLDER with CRIT on its stack, with no stack,
# with another stack, and the sites' whole wait
credit() {
	awk -v k="$1" -v o="$2" -v w="$3" -v h="$4" -v c="$5" '
	index($0, "{\"kind\":\"" k "\",\"object\":\"" o "\"") == 1 {
		th = substr($0, index($0, "\"threads\":["))
		th = substr(th, 1, index(th, "]"))
		if (!index(th, "\"name\":\"" w))
			next
		match($0, /"wait_ns":[0-9]+/)
		total += substr($0, RSTART + 10, RLENGTH - 10)
		n = split(substr($0, index($0, "\"owners\":[")), part, "{\"thread\":\"")
		for (i = 2; i <= n; i++) {
			if (substr(part[i], 1, index(part[i], "\"") - 1) != h)
				continue
			match(part[i], /"wait_ns":[0-9]+/)
			ns = substr(part[i], RSTART + 10, RLENGTH - 10)
			st = substr(part[i], index(part[i], "\"stack\":["))
			st = substr(st, 1, index(st, "]"))
			if (st == "\"stack\":[]")
				none += ns
			else if (index(st, "\"" c "\""))
				inside += ns
			else
				wrong += ns
		}
	}
	END { printf "%.0f %.0f %.0f %.0f\n", inside, none, wrong, total }'
}

pct() { awk -v a="$1" -v t="$2" 'BEGIN { printf "%.1f", t ? 100 * a / t : 0 }'; }

echo "owners' stacks (wall mode, ${secs}s): of each lock's wait, credited to its holder"
printf '  %-15s %-7s %10s %10s %10s %10s\n' load lock "in crit" "no stack" "other" "waited s"
for l in idle loaded idle+stops loaded+stops; do
	case $l in loaded*) load_start ;; esac
	case $l in *stops) stops=--owner-stops ;; *) stops= ;; esac
	start
	rm -rf "$tmp/repo"
	"$tracerd" --pid "$pid" --mode wall $stops -r "$tmp/repo" -q -d "${secs}s" 2> "$tmp/sum" || true
	stop
	case $l in loaded*) load_stop ;; esac
	"$tracerd" report "$tmp/repo" -f waits --json --limit 0 > "$tmp/w.json"
	mu=$(awk '$1 == "mutex" { print $2 }' "$tmp/out")
	rw=$(awk '$1 == "rwlock" { print $2 }' "$tmp/out")
	for spec in "mutex $mu ow-post ow-mholder ow_mutex_crit" "rwlock $rw ow-reader ow-writer ow_rwlock_crit"; do
		set -- $spec
		set -- $(credit "$@" < "$tmp/w.json") "$1"
		printf '  %-15s %-7s %9s%% %9s%% %9s%% %10s\n' "$l" "$5" "$(pct "$1" "$4")" \
			"$(pct "$2" "$4")" "$(pct "$3" "$4")" "$(awk -v t="$4" 'BEGIN { printf "%.2f", t / 1e9 }')"
	done
	sed -n 's/.*(\([0-9]*\) stops).*/  tracerd stopped owners \1 times/p; s/^  stopped */  stopped       /p' "$tmp/sum"
	sed -n 's/.*(\([0-9]*\) asked).*/  tracerd asked the kernel \1 early samples of owners/p' "$tmp/sum"
done

# holds HOLDER: "holds wall_ns" of fx_owners' SIGUSR2 report in $tmp/out,
# the latest one
report() {
	n=$(grep -c '^end' "$tmp/out" || true)
	kill -USR2 "$pid"
	until [ "$(grep -c '^end' "$tmp/out" || true)" -gt "$n" ]; do sleep 0.01; done
}
holds() { awk -v h="$1" '$1 == "H" && $2 == h { v = $4 " " $6 } END { print v }' "$tmp/out"; }

# rate HOLDER BEFORE AFTER: "holds/s mean-ms"
rate() {
	echo "$2 $3" | awk -v s="$secs" '{ n = $3 - $1; printf "%.1f %.2f", n / s, n ? ($4 - $2) / n / 1e6 : 0 }'
}

echo "cost to the holders (idle, ${secs}s): holds per second, mean hold (wall ms)"
printf '  %-10s %-12s %10s %10s\n' run holder holds/s "hold ms"
for run in alone wall wall+stops; do
	start
	report
	m0=$(holds ow-mholder) w0=$(holds ow-writer)
	if [ "$run" != alone ]; then
		[ "$run" = wall+stops ] && stops=--owner-stops || stops=
		rm -rf "$tmp/repo"
		"$tracerd" --pid "$pid" --mode wall $stops -r "$tmp/repo" -q -d "${secs}s" 2> "$tmp/sum" || true
	else
		sleep "$secs"
	fi
	report
	m1=$(holds ow-mholder) w1=$(holds ow-writer)
	stop
	printf '  %-10s %-12s %10s %10s\n' "$run" ow-mholder $(rate ow-mholder "$m0" "$m1")
	printf '  %-10s %-12s %10s %10s\n' "$run" ow-writer $(rate ow-writer "$w0" "$w1")
done
sed -n 's/.*(\([0-9]*\) stops).*/  tracerd stopped owners \1 times/p; s/^  stopped */  stopped       /p' "$tmp/sum"
sed -n 's/.*(\([0-9]*\) asked).*/  tracerd asked the kernel \1 early samples of owners/p' "$tmp/sum"
