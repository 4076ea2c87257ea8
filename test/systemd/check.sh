#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# The service test's checks, run inside the container by
# tracerd-test-check.service (see scenario.sh).  Each check writes one line
# to /out/result:
#   ok NAME
#   FAIL NAME: why
#   measure NAME VALUE
# and the last line is "end".  Every wait polls with a deadline; none is a
# fixed sleep.  The unit writes the boot's journal to /out/journal.txt.
set -u

R=/out/result
D=/var/lib/tracerd
CONF=/etc/tracerd/tracerd.conf
echo booted > /out/booted

# /etc is empty here: no /etc/alternatives, so no "awk" on the PATH.
AWK=$(command -v mawk || command -v gawk || command -v original-awk || echo awk)
awk() { "$AWK" "$@"; }

ok() { echo "ok $1" >> $R; }
fail() { echo "FAIL $1: $2" >> $R; }
measure() { echo "measure $1 $2" >> $R; }
now_ms() { date +%s%3N; }

# wait_until SECONDS COMMAND...: run COMMAND every 0.1 s until it succeeds
# (true) or SECONDS pass (false).
wait_until() {
	wu_end=$(($(now_ms) + $1 * 1000))
	shift
	while ! "$@"; do
		[ "$(now_ms)" -lt "$wu_end" ] || return 1
		sleep 0.1
	done
}

prop() { systemctl show -P "$2" "$1"; }
mainpid() { prop "$1" MainPID; }

# Does the repository of rule $1 hold samples of process $2 whose stacks
# pass through function $3?  (tracerd report reads a repository while it
# is written.)
has_samples() {
	tracerd report "$D/$1" --pid "$2" --format folded 2>/dev/null | grep -q "$3"
}

# Samples of process $2 in the repository of rule $1.
sample_count() {
	tracerd report "$D/$1" --pid "$2" --format info 2>/dev/null |
		awk '$1 == "samples:" { print $2; found = 1 } END { if (!found) print 0 }'
}
count_above() { [ "$(sample_count "$1" "$2")" -gt "$3" ]; }

# Is process $1 traced by a process of tracerd.service (the daemon or one
# of its workers)?  TracerPid names the tracing thread.
traced_by_service() {
	tp=$(awk '$1 == "TracerPid:" { print $2 }' /proc/"$1"/status 2>/dev/null)
	[ -n "$tp" ] && [ "$tp" != 0 ] &&
		grep -qx '0::/system.slice/tracerd.service' /proc/"$tp"/cgroup 2>/dev/null
}
tracer_of() { awk '$1 == "TracerPid:" { print $2 }' /proc/"$1"/status 2>/dev/null; }
# What a failure message says of process $1: its state and tracer.
proc_info() {
	if [ ! -d /proc/"$1" ]; then
		echo "pid $1 is gone"
		return
	fi
	st=$(awk '$1 == "State:" { print $2 }' /proc/"$1"/status)
	tp=$(tracer_of "$1")
	echo "pid $1 state $st, TracerPid $tp$([ "$tp" != 0 ] && echo " ($(cat /proc/"$tp"/comm 2>/dev/null) in $(grep '^0::' /proc/"$tp"/cgroup 2>/dev/null))"); tracerd said: $(journalctl -b _SYSTEMD_UNIT=tracerd.service -o cat 2>/dev/null | grep -w "$1" | tail -2 | tr '\n' ' ')"
}
started() { [ "$(mainpid "$1")" != 0 ]; }
alive() { [ -d /proc/"$1" ] && ! grep -q '^State:.*Z' /proc/"$1"/status 2>/dev/null; }

settled() { s=$(prop tracerd ActiveState); [ "$s" != activating ] && [ "$s" != reloading ]; }
active() { [ "$(prop tracerd ActiveState)" = active ]; }
status_following() { prop tracerd StatusText | grep -q 'following [0-9]* process'; }

# The last lines tracerd said, then systemd's about it, for a failure
# message.
why_down() {
	journalctl -b _SYSTEMD_UNIT=tracerd.service -o cat 2>/dev/null | tail -2 | tr '\n' ' '
	echo "/ systemd: $(journalctl -b -u tracerd -o cat 2>/dev/null | tail -1)"
}

finish() {
	echo end >> $R
	exit 0
}

# ---- ready: Type=notify, READY=1 after the first scan
if ! wait_until 30 settled || ! active; then
	fail ready "tracerd.service is $(prop tracerd ActiveState) ($(prop tracerd Result)): $(why_down)"
	fail rest "not run: the service never became ready"
	finish
fi
ok ready
wd0=$(prop tracerd WatchdogTimestampMonotonic)
if wait_until 10 status_following; then
	ok status_text
else
	fail status_text "STATUS= is '$(prop tracerd StatusText)', not 'following N processes, ...'"
fi

# ---- samples from both targets, symbolized under the unit's sandbox
for t in spinner:tracerd-test-spin:fx_spin_user svc:tracerd-test-svc:svc_hash; do
	rule=${t%%:*} unit=${t#*:} fn=${t##*:}
	unit=${unit%:*}
	pid=$(mainpid "$unit")
	if wait_until 20 has_samples "$rule" "$pid" "$fn"; then
		ok "samples_$rule"
	else
		fail "samples_$rule" "no sample of $unit through $fn in $D/$rule after 20 s ($(proc_info "$pid")): $(tracerd report "$D/$rule" --format info 2>&1 | tr '\n' ' ' | cut -c1-300)"
	fi
done

# ---- a restarted target is followed: its new process gets samples
old=$(mainpid tracerd-test-spin)
t0=$(now_ms)
systemctl restart tracerd-test-spin
new=$(mainpid tracerd-test-spin)
if [ "$new" = "$old" ] || [ "$new" = 0 ]; then
	fail restart_followed "tracerd-test-spin did not restart (pid $old, then $new)"
elif wait_until 20 has_samples spinner "$new" fx_spin_user; then
	ok restart_followed
	measure target_start_to_first_sample_ms $(($(now_ms) - t0))
else
	fail restart_followed "no sample of the restarted fx_spin (was pid $old) after 20 s ($(proc_info "$new"))"
fi

# ---- a reload picks up a new rule, and keeps following the others
cat >> $CONF <<'EOF'

[Target third]
Cmdline=tdtest-svc.*third
Mode=wall
EOF
third=$(mainpid tracerd-test-third)
spin=$(mainpid tracerd-test-spin)
before=$(sample_count spinner "$spin")
t0=$(now_ms)
if ! systemctl reload tracerd; then
	fail reload "systemctl reload tracerd failed: $(why_down)"
elif ! wait_until 10 settled || ! active; then
	fail reload "after the reload tracerd.service is $(prop tracerd ActiveState): $(why_down)"
elif wait_until 20 has_samples third "$third" svc_serve; then
	ok reload
	measure reload_to_first_sample_ms $(($(now_ms) - t0))
else
	fail reload "no sample of the third target in $D/third 20 s after the reload ($(proc_info "$third"))"
fi
if wait_until 10 count_above spinner "$spin" "$before"; then
	ok reload_keeps_following
else
	fail reload_keeps_following "no new sample of fx_spin after the reload ($(proc_info "$spin"))"
fi

# ---- a followed process that crashes leaves an emergency recording
# check_emergency NAME RULE PID: emergency-PID-*.tcf appears in the rule's
# repository, tracerd report reads it, and it holds the crash.
check_emergency() {
	if ! wait_until 20 emergency_exists "$2" "$3"; then
		fail "$1" "no $D/$2/emergency-$3-*.tcf 20 s after the crash: $(ls "$D/$2" | tr '\n' ' ')"
		return
	fi
	ok "$1"
	f=$(ls "$D/$2"/emergency-"$3"-*.tcf | head -1)
	if ! info=$(tracerd report "$f" --format info 2>&1); then
		fail "$1_report" "tracerd report $f: $(echo "$info" | tr '\n' ' ')"
	elif ! echo "$info" | grep -q '^crashes: *[1-9]'; then
		fail "$1_report" "$f records no crash: $(echo "$info" | tr '\n' ' ')"
	else
		ok "$1_report"
	fi
}
emergency_exists() { ls "$D/$1"/emergency-"$2"-*.tcf > /dev/null 2>&1; }

pid=$(mainpid tracerd-test-svc)
systemctl kill -s SEGV --kill-who=main tracerd-test-svc
check_emergency emergency_sigsegv svc "$pid"
pid=$(mainpid tracerd-test-third)
systemctl kill -s USR1 --kill-who=main tracerd-test-third # a real NULL write
check_emergency emergency_fault third "$pid"

# ---- WATCHDOG=1 keeps coming (scenario.sh's drop-in makes WatchdogSec=
# short enough to see it), and the service never restarted: a crash or a
# watchdog kill would have been hidden by Restart=on-failure
wd_advanced() { [ "$(prop tracerd WatchdogTimestampMonotonic)" != "$wd0" ]; }
if wait_until 10 wd_advanced; then
	ok watchdog
else
	fail watchdog "no WATCHDOG=1 since READY=1 (WatchdogUSec $(prop tracerd WatchdogUSec))"
fi
if [ "$(prop tracerd NRestarts)" = 0 ]; then
	ok no_restarts
else
	fail no_restarts "tracerd.service restarted $(prop tracerd NRestarts) times: $(why_down)"
fi

# ---- stop: every target runs on, untraced
# The crashed targets came back (Restart=on-abnormal): wait until the
# service follows every target again, so that the stop has work to do.
all_followed() {
	for unit in tracerd-test-spin tracerd-test-svc tracerd-test-third; do
		pid=$(mainpid $unit)
		[ "$pid" != 0 ] && traced_by_service "$pid" || return 1
	done
}
wait_until 20 all_followed
pids=""
for unit in tracerd-test-spin tracerd-test-svc tracerd-test-third; do
	pid=$(mainpid $unit)
	if [ "$pid" != 0 ] && traced_by_service "$pid"; then
		pids="$pids $pid"
	else
		fail "followed_$unit" "not traced by tracerd.service: $(proc_info "$pid")"
	fi
done
systemctl stop tracerd
if [ "$(prop tracerd ActiveState)" = inactive ] && [ "$(prop tracerd Result)" = success ]; then
	ok stop_clean
else
	fail stop_clean "after systemctl stop: $(prop tracerd ActiveState), result $(prop tracerd Result): $(why_down)"
fi
bad=""
for pid in $pids; do
	if ! alive "$pid"; then
		bad="$bad $pid(gone)"
	elif [ "$(tracer_of "$pid")" != 0 ]; then
		bad="$bad $pid(TracerPid $(tracer_of "$pid"))"
	fi
done
if [ -z "$pids" ]; then
	fail stop_leaves_targets "no target was followed when tracerd stopped"
elif [ -n "$bad" ]; then
	fail stop_leaves_targets "after the stop:$bad"
else
	ok stop_leaves_targets
fi

# The stop sealed every chunk: no .part left, and verify finds no damage.
parts=$(find $D -name '*.part' | tr '\n' ' ')
if [ -n "$parts" ]; then
	fail stop_sealed "unfinished chunks after the stop: $parts"
elif ! v=$(tracerd verify $D/spinner $D/svc $D/third 2>&1); then
	fail stop_sealed "tracerd verify after the stop: $(echo "$v" | grep -iv '^ *ok' | tr '\n' ' ' | cut -c1-400)"
else
	ok stop_sealed
fi

# ---- the journal: tracerd's own lines, with priorities from <N> prefixes
# (PID 1's lines about the unit are not tracerd's.)
j=$(journalctl -b _SYSTEMD_UNIT=tracerd.service -o export 2>/dev/null | awk '
	/^_PID=/ { pid = substr($0, 6) }
	/^PRIORITY=/ { pri = substr($0, 10) }
	/^MESSAGE=/ { msg = substr($0, 9) }
	/^$/ {
		if (pid != "" && pid != 1) {
			n++
			if (pri == "") nopri++
			if (pri == 6) info++
			if (msg ~ /^<[0-7]>/) raw++
		}
		pid = pri = msg = ""
	}
	END { printf "%d %d %d %d\n", n, nopri, info, raw }')
set -- $j
if [ "$1" -eq 0 ]; then
	fail journal "no journal line from tracerd itself"
elif [ "$2" -ne 0 ] || [ "$3" -eq 0 ] || [ "$4" -ne 0 ]; then
	fail journal "$1 lines: $2 without PRIORITY, $3 at info (6), $4 with an unparsed <N> prefix"
else
	ok journal
fi
measure journal_lines "$1"

# ---- the unit as installed (scenario.sh runs systemd-analyze verify on the
# host: man, which verify runs for Documentation=, needs the /etc that is
# empty here)
exposure=$(systemd-analyze security tracerd.service 2>&1 |
	sed -n 's/.*Overall exposure level for tracerd.service: \([0-9.]*\).*/\1/p')
if [ -z "$exposure" ]; then
	fail exposure "systemd-analyze security tracerd.service printed no exposure"
elif awk -v e="$exposure" 'BEGIN { exit !(e <= 3.0) }'; then
	ok exposure
else
	fail exposure "systemd-analyze security: exposure $exposure, above 3.0"
fi
measure exposure_in_container "${exposure:-none}"
finish
