#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# tracerd service's [Export] to a loopback receiver (a python3 HTTP server
# standing in for Pyroscope): the exporter process's CPU against the whole
# service's (its workers included) following the same 10 processes, and
# an outage of the receiver of 10 intervals: the intervals missing after it
# (the spool's bound is far larger, so the figure to reach is 0).
# Usage: bench_export.sh TRACERD FIXTURE_DIR [SECONDS]   (KEEP=1 keeps its directory)
set -eu
td=$1
fx=$2
secs=${3:-20}
dir=$(mktemp -d /tmp/tracerd-bench-exp-XXXXXX)
pids=""
cleanup() { kill $pids 2>/dev/null || true; [ -n "${KEEP:-}" ] || rm -rf "$dir"; }
trap cleanup EXIT

command -v python3 >/dev/null || { echo "export: skipped: python3 is not installed"; exit 0; }

cpu_of() { # pids: their CPU ticks
	t=0
	for p in "$@"; do
		s=$(awk '{print $14 + $15}' /proc/$p/stat 2>/dev/null || echo 0)
		t=$((t + s))
	done
	echo "$t"
}

cat >"$dir/recv.py" <<'PY'
import http.server, sys
class H(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        self.rfile.read(int(self.headers.get('Content-Length', 0)))
        print(self.path, flush=True)
        self.send_response(200)
        self.end_headers()
    def log_message(self, *a):
        pass
http.server.HTTPServer(('127.0.0.1', int(sys.argv[1])), H).serve_forever()
PY
port=$((20000 + $$ % 20000))
python3 "$dir/recv.py" $port >>"$dir/got" 2>/dev/null &
recv=$!
pids="$pids $recv"
for i in 1 2 3 4 5 6 7 8 9 10; do
	"$fx/fx_threads" 7 >/dev/null &
	pids="$pids $!"
done
cat >"$dir/conf" <<CONF
[Service]
Directory=$dir/data
CacheDirectory=none
[Export]
URL=http://127.0.0.1:$port
Interval=1s
[Target threads]
Cmdline=fx_threads 7\$
CONF
chmod 600 "$dir/conf"
"$td" service --config "$dir/conf" >"$dir/log" 2>&1 &
svc=$!
pids="$pids $svc"
until [ "$(grep -c 'following' "$dir/log")" -ge 10 ]; do sleep 0.2; done
until [ -s "$dir/got" ]; do sleep 0.2; done
hz=$(getconf CLK_TCK)
exp=$(pgrep -P $svc -x tracerd-export)
all="$svc $(pgrep -P $svc | tr '\n' ' ')"
a=$(cpu_of $all)
e=$(cpu_of $exp)
sleep "$secs"
b=$(cpu_of $all)
f=$(cpu_of $exp)
printf 'export, 10 processes, Interval=1s, pyroscope: the exporter %.2f%% of a CPU, the service with its workers %.2f%% (exporter/service %.3f)\n' \
	"$(echo "scale=4; ($f - $e) * 100 / $hz / $secs" | bc)" \
	"$(echo "scale=4; ($b - $a) * 100 / $hz / $secs" | bc)" \
	"$(echo "scale=4; ($f - $e) / ($b - $a)" | bc)"

# an outage of 10 intervals, then the receiver back
kill $recv
wait $recv 2>/dev/null || true
sleep 10
python3 "$dir/recv.py" $port >>"$dir/got" 2>/dev/null &
recv=$!
pids="$pids $recv"
until grep -q 'answers again' "$dir/log"; do sleep 0.5; done
kill $svc
wait $svc || true
# per pid, in arrival order: a window that steps back is out of order; a
# window skipped is missing if the repository holds samples of the pid in
# it (cpu mode sends nothing for a window where the process never ran)
sed -n 's/.*pid%3D\([0-9]*\).*from=\([0-9]*\)&until=\([0-9]*\).*/\1 \2 \3/p' "$dir/got" >"$dir/windows"
total=$(wc -l <"$dir/windows")
back=$(awk '{ if (($1 in last) && $2 < last[$1]) n++; last[$1] = $3 } END { print n + 0 }' "$dir/windows")
missing=0
for gap in $(awk '{ if (($1 in last) && $2 > last[$1]) for (t = last[$1]; t < $2; t++) print $1 ":" t;
		    last[$1] = $3 }' "$dir/windows"); do
	p=${gap%:*}
	t=${gap#*:}
	f=$(date -u -d "@$t" +%Y-%m-%dT%H:%M:%SZ)
	u=$(date -u -d "@$((t + 1))" +%Y-%m-%dT%H:%M:%SZ)
	if [ -n "$("$td" report -f folded --pid "$p" --from "$f" --to "$u" "$dir/data/threads" 2>/dev/null)" ]; then
		missing=$((missing + 1))
	fi
done
printf 'export, an outage of 10 intervals (Interval=1s, spool bound %s): of %d windows received, %d with samples missing, %d out of order\n' \
	"$(grep -o 'at most [0-9]* MiB' "$dir/log" | head -1 | sed 's/at most //')" "$total" "$missing" "$back"
