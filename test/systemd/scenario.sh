#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# tracerd service in a real systemd: boot systemd in a container with
# systemd-nspawn, the installed tracerd.service and three target units
# inside, and run check.sh there.
#
# usage: scenario.sh BUILD_DIR FIXTURE_DIR OUT_DIR
#
# The container shares the host's /usr, read-only, with a
# `make install DESTDIR=OUT_DIR/stage PREFIX=/usr` tree laid over it (plus
# the fixtures and check.sh under /usr/libexec/tracerd-test), so that the
# unit runs as installed; its / and /etc are an empty tmpfs.  The test's
# units come in read-only at /etc/systemd/system, its configuration
# read-write at /etc/tracerd, and OUT_DIR/out at /out for the results.
# tracerd-test-check.service runs check.sh and powers the container off.
#
# Exit status:
#   0   the checks ran: OUT_DIR/result holds their lines (ok NAME,
#       FAIL NAME: why, measure NAME VALUE) and "end" if they finished
#   77  this machine cannot run them (not root, no systemd-nspawn, or the
#       container does not boot): the reason on stdout
#   1   the harness itself failed: why on stdout
# A container that boots but whose checks do not finish is a FAIL line,
# not a skip.  OUT_DIR/console.log, OUT_DIR/out/journal.txt: what the
# container said.
#
# Only the processes this script starts are ever signalled, by PID.  A
# SIGKILL to systemd-nspawn does not end the container (its systemd is
# reparented and runs on), so the container's init is killed by PID too.
set -u

build=$1
fixtures=$2
out=$3
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
budget=120 # s for the whole boot; check.sh gives itself 90

skip() {
	echo "$*"
	exit 77
}
die() {
	echo "$*"
	exit 1
}

[ "$(id -u)" = 0 ] || skip "needs root to boot a container with systemd-nspawn"
command -v systemd-nspawn > /dev/null 2>&1 ||
	skip "systemd-nspawn is missing (apt-get install systemd-container)"
[ -d /sys/fs/cgroup ] || skip "no /sys/fs/cgroup: systemd cannot run here"

stage=$out/stage
units=$out/units
etc=$out/etc
res=$out/out
rm -rf "$stage" "$units" "$etc" "$res" "$out/host" "$out/result"
mkdir -p "$stage" "$units/multi-user.target.wants" "$etc" "$res" || die "cannot create $out"

# ---- the install tree, as a package would lay it out
# Without the caller's make variables (SANITIZE, O from make check): only
# the binary already built in BUILD_DIR, never a rebuild (-o).
(
	unset MAKEFLAGS MFLAGS MAKELEVEL
	make -s -C "$src" install O="$build" SANITIZE= -o "$build/tracerd" \
		DESTDIR="$stage" PREFIX=/usr
) > "$out/install.log" 2>&1 || die "make install DESTDIR=$stage failed: $(tail -3 "$out/install.log")"
unit=$stage/usr/lib/systemd/system/tracerd.service
[ -f "$unit" ] || die "make install did not install $unit"
lx=$stage/usr/libexec/tracerd-test
mkdir -p "$lx"
# Under names of their own: the container's processes are visible to the
# whole host, and a tracer there that follows fx_spin by name (another
# test, a service being tried by hand) would hold ours, from outside the
# container, where its TracerPid reads 0.
install -m 0755 "$fixtures/fx_spin" "$lx/tdtest-spin" &&
	install -m 0755 "$fixtures/fx_svc" "$lx/tdtest-svc" || die "fixtures missing in $fixtures"
install -m 0644 "$here/check.sh" "$lx/check.sh"

# ---- the unit, checked on the host as installed: verify runs man for its
# Documentation= (the staged pages first) and wants its ExecStart= to
# exist, so a copy names the staged binary.
mkdir -p "$out/host"
sed "s|^ExecStart=/usr/bin/tracerd|ExecStart=$stage/usr/bin/tracerd|" "$unit" > "$out/host/tracerd.service"
if v=$(cd "$out/host" && MANPATH="$stage/usr/share/man:" systemd-analyze verify tracerd.service 2>&1) &&
	[ -z "$v" ]; then
	echo "ok verify" > "$out/host/result"
else
	echo "FAIL verify: systemd-analyze verify tracerd.service: $(echo "$v" | tr '\n' ' ')" > "$out/host/result"
fi
e=$(cd "$out/host" && systemd-analyze security --offline=true tracerd.service 2>&1 |
	sed -n 's/.*Overall exposure level for tracerd.service: \([0-9.]*\).*/\1/p')
echo "measure exposure_offline ${e:-none}" >> "$out/host/result"

# ---- units, configuration
for u in tracerd-test-spin tracerd-test-svc tracerd-test-third tracerd-test-check; do
	cp "$here/$u.service" "$units/"
	ln -s "/etc/systemd/system/$u.service" "$units/multi-user.target.wants/$u.service"
done
ln -s /usr/lib/systemd/system/tracerd.service "$units/multi-user.target.wants/tracerd.service"
# The installed unit but for its watchdog: 30 s would not fire within the
# test, 3 s does if the pings stop (and check.sh sees them come).
mkdir -p "$units/tracerd.service.d"
printf '[Service]\nWatchdogSec=3s\n' > "$units/tracerd.service.d/watchdog.conf"
cp "$here/tracerd-test.conf" "$etc/tracerd.conf"

# ---- boot
tpid=""
init=""
init_start=""
nspawn=""

starttime() { awk '{ sub(/.*\) /, ""); print $20 }' /proc/"$1"/stat 2>/dev/null; }
children() {
	if [ -r /proc/"$1"/task/"$1"/children ]; then
		cat /proc/"$1"/task/"$1"/children
	else
		for s in /proc/[0-9]*/stat; do
			awk -v p="$1" '{ x = $0; sub(/.*\) /, "", x); split(x, f, " ");
				if (f[2] == p) { split(FILENAME, d, "/"); print d[3] } }' "$s" 2>/dev/null
		done
	fi
}
# nspawn is timeout's child; the container's systemd is nspawn's child
# whose pid in its own namespace is 1.
find_init() {
	[ -n "$nspawn" ] || nspawn=$(children "$tpid" | awk '{ print $1 }')
	[ -n "$nspawn" ] || return
	for c in $(children "$nspawn"); do
		if awk '$1 == "NSpid:" && NF == 3 && $3 == 1 { found = 1 } END { exit !found }' \
			/proc/"$c"/status 2>/dev/null; then
			init=$c
			init_start=$(starttime "$c")
		fi
	done
}
running() { [ -n "$1" ] && kill -0 "$1" 2> /dev/null; }
# The container's systemd, if it is still the process found at boot.
init_alive() { [ -n "$init" ] && [ "$(starttime "$init")" = "$init_start" ]; }

cleanup() {
	if running "$tpid"; then
		kill -TERM "$tpid" 2> /dev/null # timeout passes it on: an orderly poweroff
		i=0
		while running "$tpid" && [ $i -lt 100 ]; do
			sleep 0.1
			i=$((i + 1))
		done
		running "$tpid" && kill -KILL "$tpid" 2> /dev/null
		running "$nspawn" && kill -KILL "$nspawn" 2> /dev/null
	fi
	if init_alive; then
		echo "the container's systemd (pid $init) outlived systemd-nspawn: killed" >> "$out/console.log"
		kill -KILL "$init" 2> /dev/null
	fi
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

# As docs/notes/systemd-test.md records it: / and /etc a tmpfs, the
# host's /usr under the install tree, cgroup v2 only, no machined.
# perf_event_open is let through nspawn's own seccomp filter, which denies
# it (a host does not): else tracerd would fall back to ptrace stops.
SYSTEMD_NSPAWN_UNIFIED_HIERARCHY=1 timeout --kill-after=10 $budget \
	systemd-nspawn -q -D / --volatile=yes --register=no --keep-unit \
	--private-network -M "tracerd-test-$$" --console=read-only \
	--system-call-filter=perf_event_open \
	--bind-ro="$units":/etc/systemd/system --bind="$etc":/etc/tracerd --bind="$res":/out \
	--overlay-ro=/usr:"$stage"/usr:/usr \
	-b systemd.firstboot=off systemd.show_status=false \
	> "$out/console.log" 2>&1 < /dev/null &
tpid=$!
t0=$(date +%s)
while running "$tpid"; do
	[ -n "$init" ] || find_init
	sleep 0.2
done
wait "$tpid"
rc=$?
took=$(($(date +%s) - t0))
if init_alive; then
	echo "the container's systemd (pid $init) outlived systemd-nspawn: killed" >> "$out/console.log"
	kill -KILL "$init" 2> /dev/null
fi

if [ ! -f "$res/booted" ]; then
	skip "the container did not boot here (systemd-nspawn exit $rc after ${took}s): $(grep -v '^$' "$out/console.log" | tail -3 | tr '\n' ' ')"
fi
cat "$out/host/result" "$res/result" > "$out/result" 2> /dev/null
if ! grep -qx end "$out/result"; then
	echo "FAIL checker: the checks did not finish (systemd-nspawn exit $rc after ${took}s; see $out/out/journal.txt, $out/console.log)" >> "$out/result"
	echo end >> "$out/result"
fi
echo "measure container_seconds $took" >> "$out/result"
exit 0
