/* Messages and argument parsing shared by the subcommands.  Every message
 * that reports a failure says what the user can do about it. */
#include "cli.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/td.h"

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
		td_msg("cannot attach to %d: Operation not permitted; run as root or grant "
		       "CAP_SYS_PTRACE, and check /proc/sys/kernel/yama/ptrace_scope",
			(int)pid);
		break;
	case TD_E_TRACED:
		if (td_task_info_read(pid, pid, &info) == 0 && info.tracer) {
			/* TracerPid is the tracer's thread: name its process */
			pid_t tgid = td_tgid_of(info.tracer);
			struct td_task_info tracer;
			const char *name = "?";

			if (!tgid)
				tgid = info.tracer; /* gone meanwhile: say what we saw */
			if (td_task_info_read(tgid, tgid, &tracer) == 0)
				name = tracer.name;
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
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s || s[0] == '-')
		goto bad;
	switch (*end) {
	case 'k':
	case 'K':
		v <<= 10, end++;
		break;
	case 'm':
	case 'M':
		v <<= 20, end++;
		break;
	case 'g':
	case 'G':
		v <<= 30, end++;
		break;
	}
	if (*end == 'i')
		end++;
	if (*end == 'B')
		end++;
	if (*end || v < min || v > max)
		goto bad;
	*ret = v;
	return true;
bad:
	td_msg("%s: '%s' is not a size from %llu to %llu bytes (suffixes K, M, G)", opt, s,
		(unsigned long long)min, (unsigned long long)max);
	return false;
}

bool td_parse_duration(const char *opt, const char *s, uint64_t *ret_ns)
{
	char *end;
	double v;
	uint64_t unit = 1000000000u;

	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || v < 0)
		goto bad;
	if (!strcmp(end, "ms"))
		unit = 1000000u;
	else if (!strcmp(end, "s") || !*end)
		unit = 1000000000u;
	else if (!strcmp(end, "m"))
		unit = 60000000000u;
	else if (!strcmp(end, "h"))
		unit = 3600000000000u;
	else if (!strcmp(end, "d"))
		unit = 86400000000000u;
	else
		goto bad;
	if (v * (double)unit > 1e19)
		goto bad;
	*ret_ns = (uint64_t)(v * (double)unit);
	return true;
bad:
	td_msg("%s: '%s' is not a duration; give a number with ms, s, m, h or d (e.g. 10m)", opt,
		s);
	return false;
}
