/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Messages and argument parsing shared by the subcommands.  Every message
 * that reports a failure says what the user can do about it. */
#include "cli.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../common/parse.h"
#include "../common/td.h"
#include "../symbolize/symbolize.h"

void td_msg(const char *fmt, ...)
{
	char buf[2048];
	va_list ap;

	/* one write per message: lines from several threads never interleave */
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	fprintf(stderr, "tracerd: %s\n", buf);
	fflush(stderr);
}

int td_bad_option(const char *cmd, int c, char *const *argv)
{
	/* getopt leaves optind past the offending word; a long option's text
	 * may carry its "=value" */
	const char *word = optind > 0 ? argv[optind - 1] : "?";

	if (c == ':')
		td_msg("%s: %s needs a value; see tracerd %s --help", cmd, word, cmd);
	else if (optopt && !strncmp(word, "--", 2) && strchr(word, '='))
		td_msg("%s: %.*s takes no value; see tracerd %s --help", cmd,
			(int)(strchr(word, '=') - word), word, cmd);
	else if (optopt && word[0] == '-' && word[1] != '-')
		td_msg("%s: unknown option -%c; see tracerd %s --help", cmd, optopt, cmd);
	else
		td_msg("%s: unknown option '%s'; see tracerd %s --help", cmd, word, cmd);
	return TD_EXIT_USAGE;
}

/* Is pid a kernel thread (PF_KTHREAD in the flags of /proc/PID/stat)? */
static bool is_kernel_thread(pid_t pid, char *name, size_t len)
{
	char path[64], buf[512], *p, *open;
	unsigned long flags = 0;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	if (td_read_text(AT_FDCWD, path, buf, sizeof(buf)) < 0)
		return false;
	open = strchr(buf, '(');
	p = strrchr(buf, ')'); /* the name may hold ')' itself */
	if (!open || !p || p < open)
		return false;
	snprintf(name, len, "%.*s", (int)(p - open - 1), open + 1);
	/* state ppid pgrp session tty_nr tpgid flags */
	if (sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %lu", &flags) != 1)
		return false;
	return flags & 0x00200000; /* PF_KTHREAD */
}

/* A field of /proc/self/status as a number (base 16 for Cap*), -1 if none. */
static long long self_status(const char *field, int base)
{
	char buf[4096], *p;
	size_t n = strlen(field);

	if (td_read_text(AT_FDCWD, "/proc/self/status", buf, sizeof(buf)) < 0)
		return -1;
	for (p = buf; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
		if (!strncmp(p, field, n) && p[n] == ':')
			return strtoll(p + n + 1, NULL, base);
	return -1;
}

/* A user's name, or "?" (in a static buffer per slot). */
static const char *user_name(uid_t uid, int slot)
{
	static char names[2][64];
	struct passwd *pw = getpwuid(uid);

	snprintf(names[slot], sizeof(names[slot]), "%s", pw ? pw->pw_name : "?");
	return names[slot];
}

/* EPERM without CAP_SYS_PTRACE: what the kernel checked on this machine
 * (ptrace(2), "Ptrace access mode checking"): the target's real, effective
 * and saved uid against ours, whether it is dumpable (its /proc files are
 * root's when not), and Yama's scope (scope: its file's text, "" when the
 * machine has no Yama). */
static void explain_unprivileged(pid_t pid, const char *scope)
{
	char path[64], buf[2048], why[256], *u;
	unsigned long ids[3];
	struct stat st;
	uid_t me = getuid();

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	u = td_read_text(AT_FDCWD, path, buf, sizeof(buf)) > 0 ? strstr(buf, "\nUid:") : NULL;
	snprintf(path, sizeof(path), "/proc/%d", (int)pid);
	if (u && sscanf(u + 5, "%lu %lu %lu", &ids[0], &ids[1], &ids[2]) == 3 &&
		(ids[0] != me || ids[1] != me || ids[2] != me))
		snprintf(why, sizeof(why), "it runs as uid %lu (%s) and tracerd as uid %u (%s): only "
			 "its own user may trace it",
			ids[1], user_name((uid_t)ids[1], 0), (unsigned)me, user_name(me, 1));
	else if (stat(path, &st) == 0 && st.st_uid != me)
		snprintf(why, sizeof(why), "it is not dumpable (a set-user-ID program, or it called "
			 "prctl(PR_SET_DUMPABLE, 0)): only CAP_SYS_PTRACE may trace it");
	else if (scope[0] == '1')
		snprintf(why, sizeof(why), "/proc/sys/kernel/yama/ptrace_scope is 1: only its "
			 "ancestors may trace it (or sysctl kernel.yama.ptrace_scope=0)");
	else if (scope[0] == '2')
		snprintf(why, sizeof(why), "/proc/sys/kernel/yama/ptrace_scope is 2: only "
			 "CAP_SYS_PTRACE may trace");
	else
		snprintf(why, sizeof(why), "tracerd runs as uid %u (%s) without CAP_SYS_PTRACE%s",
			(unsigned)me, user_name(me, 1), scope[0] ? "" : " (this kernel has no Yama)");
	td_msg("cannot attach to %d: Operation not permitted; %s; run tracerd as root or grant "
	       "it CAP_SYS_PTRACE",
		(int)pid, why);
}

/* EPERM from attaching: what really stops it. */
static void explain_not_permitted(pid_t pid)
{
	long long caps = self_status("CapEff", 16), seccomp = self_status("Seccomp", 10);
	bool cap = caps >= 0 && (caps & (1ll << 19)); /* CAP_SYS_PTRACE */
	char name[64], scope[16] = "";

	if (is_kernel_thread(pid, name, sizeof(name))) {
		td_msg("cannot attach to %d: it is a kernel thread (%s); kernel threads cannot be "
		       "traced: give the PID of a user-space process",
			(int)pid, name);
		return;
	}
	td_read_text(AT_FDCWD, "/proc/sys/kernel/yama/ptrace_scope", scope, sizeof(scope));
	if (scope[0] == '3') {
		td_msg("cannot attach to %d: ptrace is disabled for every process: "
		       "/proc/sys/kernel/yama/ptrace_scope is 3, which only a reboot lowers",
			(int)pid);
		return;
	}
	if (!cap && geteuid() == 0) {
		td_msg("cannot attach to %d: Operation not permitted; tracerd runs as root but "
		       "without CAP_SYS_PTRACE (dropped by a container, a service manager or the "
		       "capability bounding set: see CapEff in /proc/self/status); grant "
		       "CAP_SYS_PTRACE",
			(int)pid);
		return;
	}
	if (!cap) {
		explain_unprivileged(pid, scope);
		return;
	}
	/* privileged, yet refused: not a question of users or capabilities */
	td_msg("cannot attach to %d: Operation not permitted, although tracerd runs as %s with "
	       "CAP_SYS_PTRACE: %sa security module (SELinux, AppArmor, Landlock) or a sandbox "
	       "around tracerd forbids tracing this process; look for a denial in the kernel "
	       "log (dmesg)",
		(int)pid, geteuid() == 0 ? "root" : "a user",
		seccomp > 0 ? "tracerd runs under a seccomp filter that may refuse ptrace, or " : "");
}

int td_explain_attach(pid_t pid, int err)
{
	struct td_task_info info;

	switch (-err) {
	case ESRCH:
	case ENOENT:
		td_msg("no process with PID %d; check the PID (ps -p %d)", (int)pid, (int)pid);
		break;
	case EPERM:
	case EACCES:
		explain_not_permitted(pid);
		break;
	case TD_E_TRACED:
		if (td_task_info_read(pid, pid, &info) == 0 && info.tracer) {
			/* TracerPid is the tracer's thread: name its process */
			pid_t tgid = td_tgid_of(info.tracer);
			struct td_task_info tracer;
			char name[4 * sizeof(tracer.name) + 1] = "?";

			if (!tgid)
				tgid = info.tracer; /* gone meanwhile: say what we saw */
			if (td_task_info_read(tgid, tgid, &tracer) == 0) /* its comm: escaped */
				td_text_escape(name, sizeof(name), tracer.name);
			td_msg("cannot attach to %d: it is already traced by PID %d (%s); "
			       "detach that debugger or tracer first",
				(int)pid, (int)tgid, name);
			break;
		}
		td_msg("cannot attach to %d: it is already traced by another process; "
		       "detach that debugger or tracer first",
			(int)pid);
		break;
	case TD_E_SELF:
		td_msg("%d is tracerd itself; give the PID of the process to profile", (int)pid);
		break;
	case TD_E_ZOMBIE:
		if (td_task_info_read(pid, pid, &info) == 0)
			td_msg("process %d is a zombie: it has exited and its parent (PID %d) "
			       "has not reaped it yet; there is nothing to sample",
				(int)pid, (int)info.ppid);
		else
			td_msg("process %d has exited; there is nothing to sample", (int)pid);
		break;
	case TD_E_ATTACHED:
		td_msg("cannot attach to %d twice: give each process once", (int)pid);
		break;
	case TD_E_LIMIT:
		td_msg("cannot attach to %d: it has more threads than tracerd's limit", (int)pid);
		break;
	default:
		td_msg("cannot attach to %d: %s", (int)pid, td_strerror(err));
		break;
	}
	return TD_EXIT_ATTACH;
}

bool td_parse_pid(const char *opt, const char *s, pid_t *ret)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v <= 0 || v > 0x3fffffff) {
		td_msg("%s: '%s' is not a process id; give a positive number", opt, s);
		return false;
	}
	*ret = (pid_t)v;
	return true;
}

bool td_parse_size(const char *opt, const char *s, uint64_t min, uint64_t max, uint64_t *ret)
{
	uint64_t v;

	/* too large to count (-ERANGE) is out of range like any other */
	if (td_size_parse(s, &v) < 0 || v < min || v > max) {
		td_msg("%s: '%s' is not a size from %llu to %llu bytes (suffixes K, M, G, T)", opt,
			s, (unsigned long long)min, (unsigned long long)max);
		return false;
	}
	*ret = v;
	return true;
}

bool td_parse_duration(const char *opt, const char *s, uint64_t *ret_ns)
{
	int e = td_duration_parse(s, ret_ns);

	if (e == -ERANGE)
		td_msg("%s: '%s' is longer than tracerd can count (about 584 years); give a shorter "
		       "duration",
			opt, s);
	else if (e < 0)
		td_msg("%s: '%s' is not a duration; give a number with a unit: us, ms, s, m, h, d "
		       "or w (e.g. 10m or 1h 30m)",
			opt, s);
	return e == 0;
}

const char *td_cache_dir_default(char *buf, size_t len)
{
	const char *env = getenv("TRACERD_CACHE_DIR"), *xdg = getenv("XDG_CACHE_HOME");
	const char *home = getenv("HOME");
	int n;

	if (env && env[0])
		n = snprintf(buf, len, "%s", env);
	else if (geteuid() == 0)
		n = snprintf(buf, len, "/var/cache/tracerd");
	else if (xdg && xdg[0] == '/')
		n = snprintf(buf, len, "%s/tracerd", xdg);
	else {
		if (!home || home[0] != '/') {
			struct passwd *pw = getpwuid(geteuid());

			home = pw ? pw->pw_dir : NULL;
		}
		if (!home || home[0] != '/')
			return NULL;
		n = snprintf(buf, len, "%s/.cache/tracerd", home);
	}
	if (n < 0 || (size_t)n >= len || !strcmp(buf, "none"))
		return NULL;
	return buf;
}

bool td_cache_dir_setup(const char *given, char *buf, size_t len, const char **ret_dir)
{
	const char *dir = given ? given : td_cache_dir_default(buf, len);
	int e;

	*ret_dir = NULL;
	if (!dir || !strcmp(dir, "none"))
		return true;
	if (given && given[0] != '/') {
		td_msg("--cache-dir: '%s' is not an absolute path; give one, or none", given);
		return false;
	}
	e = dir[0] == '/' ? sym_debug_cache_prepare(dir) : -EINVAL;
	if (e == 0) {
		*ret_dir = dir;
		return true;
	}
	if (given) {
		td_msg("--cache-dir %s: %s; give a directory of your own that no one else can "
		       "write, or none",
			dir, e == -EINVAL ? "not an absolute path" : td_strerror(e));
		return false;
	}
	td_msg("debuginfo cache %s: %s; going on without it (compressed debuginfo is inflated "
	       "anew); choose one with --cache-dir DIR or TRACERD_CACHE_DIR, or none",
		dir, e == -EINVAL ? "not an absolute path" : td_strerror(e));
	return true;
}

void td_debuginfod_setup(bool wanted)
{
	if (!wanted)
		unsetenv("DEBUGINFOD_URLS");
}
