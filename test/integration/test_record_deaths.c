/* SPDX-License-Identifier: GPL-2.0-or-later */
/* tracerd record and what a death says of its signal: si_code decides.
 * The fixture fx_die dies by a kill() from this test or from a helper
 * with a hostile name, by tgkill and sigqueue from itself, by a real
 * SIGSEGV at an address it knows, and by two timers; each death's report
 * must name the source the kernel gave, never a sender's PID as a fault
 * address. */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "record.h"

TestSuite(record_deaths, .init = record_setup, .fini = record_teardown, .timeout = 300);

/* Record fx_die HOW until it dies: of send(fx, arg) once tracerd traces
 * it, else of what the fixture does on its byte.  Returns tracerd report
 * -f info of the recording (the caller frees); *ret_st: the fixture's
 * wait status. */
static char *die_recorded(const char *how, void (*send)(pid_t fx, void *arg), void *arg,
	int *ret_st)
{
	const char *argv[] = { "tracerd", "report", repo, "-f", "info", NULL };
	struct run_result r;
	pid_t fx, t;
	int in, out;
	char *info, cmd[128];

	/* one recording per death: the repository of an earlier one goes */
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", repo);
	cr_assert_eq(system(cmd), 0);
	fx = spawn(FX("fx_die"), how, &in, &out);
	t = tracerd_start(fx, NULL, NULL, NULL);
	if (send)
		send(fx, arg);
	else
		cr_assert_eq(write(in, "g", 1), 1);
	cr_assert_eq(waitpid(fx, ret_st, 0), fx);
	cr_expect_eq(tracerd_wait(t), 0, "%s", slurp(errfile));
	close(in);
	close(out);
	run_tracerd(&r, argv);
	cr_assert_eq(r.status, 0, "%s", r.err);
	info = strdup(r.out);
	run_result_free(&r);
	return info;
}

/* The line of info that starts with prefix, a newline first if it
 * begins with one ("" if none), in buf. */
static const char *line_of(const char *info, const char *prefix, char *buf, size_t len)
{
	const char *p = strstr(info, prefix);

	if (p && *p == '\n')
		p++;
	snprintf(buf, len, "%.*s", p ? (int)strcspn(p, "\n") : 0, p ? p : "");
	return buf;
}

/* tmpl with @PID@ and @UID@ put in, into buf. */
static const char *subst(char *buf, size_t len, const char *tmpl, int pid, unsigned uid)
{
	size_t n = 0;

	for (const char *p = tmpl; *p && n + 12 < len;) {
		if (!strncmp(p, "@PID@", 5)) {
			n += (size_t)snprintf(buf + n, len - n, "%d", pid);
			p += 5;
		} else if (!strncmp(p, "@UID@", 5)) {
			n += (size_t)snprintf(buf + n, len - n, "%u", uid);
			p += 5;
		} else {
			buf[n++] = *p++;
		}
	}
	buf[n] = '\0';
	return buf;
}

static void comm_of(pid_t pid, char *buf, size_t len)
{
	char path[64], *nl;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
	buf[0] = '\0';
	cr_assert_not_null(f = fopen(path, "r"));
	cr_assert_not_null(fgets(buf, (int)len, f));
	fclose(f);
	if ((nl = strchr(buf, '\n')))
		*nl = '\0';
}

static void send_term(pid_t fx, void *arg)
{
	(void)arg;
	cr_assert_eq(kill(fx, SIGTERM), 0);
}

/* kill(2) from this very process: its PID, comm and uid, and no fault
 * address. */
Test(record_deaths, kill_from_the_test_names_it)
{
	char me[32], want[256], line[512];
	char *info;
	int st;

	comm_of(getpid(), me, sizeof(me));
	info = die_recorded("wait", send_term, NULL, &st);
	cr_expect(WIFSIGNALED(st) && WTERMSIG(st) == SIGTERM, "status %#x", st);
	snprintf(want, sizeof(want),
		" killed by signal 15 (Terminated), sent by PID %d (%s), uid %u (kill) at ",
		(int)getpid(), me, (unsigned)getuid());
	line_of(info, "exit:", line, sizeof(line));
	cr_expect(strstr(line, want), "want \"%s\"\nin   \"%s\"", want, line);
	cr_expect_not(strstr(info, "address"), "%s", info);
	free(info);

	/* the threads view's "end" column names the sender too */
	{
		const char *argv[] = { "tracerd", "report", repo, "-f", "threads", NULL };
		struct run_result r;

		run_tracerd(&r, argv);
		cr_assert_eq(r.status, 0, "%s", r.err);
		snprintf(want, sizeof(want),
			"killed by signal 15 (Terminated), sent by PID %d (%s), uid %u (kill)\n",
			(int)getpid(), me, (unsigned)getuid());
		cr_expect(strstr(r.out, want), "want \"%s\"\nin \"%s\"", want, r.out);
		run_result_free(&r);
	}
}

/* A helper that names itself with a tab and an escape, sends SIGSEGV
 * with kill(2) and lives until told: the crash (held as a fault would
 * be) says who sent it, its name escaped, and no "fault address". */
struct helper {
	pid_t pid;
	int hold[2];
};

static void send_segv_from_helper(pid_t fx, void *arg)
{
	struct helper *h = arg;
	int ready[2];
	char c;

	cr_assert_eq(pipe(h->hold), 0);
	cr_assert_eq(pipe(ready), 0);
	h->pid = fork();
	if (h->pid == 0) {
		close(h->hold[1]);
		prctl(PR_SET_NAME, "kill\ter\x1b[1m");
		if (write(ready[1], "r", 1) != 1 || kill(fx, SIGSEGV) < 0)
			_exit(1);
		/* alive until the test has read the death */
		while (read(h->hold[0], &c, 1) > 0)
			;
		_exit(0);
	}
	close(h->hold[0]);
	close(ready[1]);
	cr_assert_eq(read(ready[0], &c, 1), 1);
	close(ready[0]);
}

Test(record_deaths, kill_segv_from_a_helper_is_no_fault)
{
	struct helper h = { 0 };
	char want[256], line[512];
	char *info;
	int st;

	info = die_recorded("wait", send_segv_from_helper, &h, &st);
	close(h.hold[1]);
	cr_assert_eq(waitpid(h.pid, NULL, 0), h.pid);
	cr_expect(WIFSIGNALED(st) && WTERMSIG(st) == SIGSEGV, "status %#x", st);
	snprintf(want, sizeof(want),
		": signal 11 (Segmentation fault), sent by PID %d (kill\\x09er\\x1b[1m), uid %u "
		"(kill), at ",
		(int)h.pid, (unsigned)getuid());
	line_of(info, "\n  pid ", line, sizeof(line));
	cr_expect(strstr(line, want), "want \"%s\"\nin   \"%s\"\n%s", want, line, info);
	snprintf(want, sizeof(want),
		" killed by signal 11 (Segmentation fault), sent by PID %d (kill\\x09er\\x1b[1m), "
		"uid %u (kill) at ",
		(int)h.pid, (unsigned)getuid());
	cr_expect(strstr(line_of(info, "exit:", line, sizeof(line)), want), "want \"%s\"\n%s",
		want, info);
	cr_expect_not(strstr(info, "address"), "%s", info);
	free(info);
}

/* The fixture's own ways: each death's line of info, the fixture's PID
 * and our uid put in for @PID@ and @UID@. */
static void own_death(const char *how, int signo, const char *prefix, const char *tmpl)
{
	char want[512], line[512];
	char *info;
	int st, fxpid = 0;

	info = die_recorded(how, NULL, NULL, &st);
	cr_expect(WIFSIGNALED(st) && WTERMSIG(st) == signo, "%s: status %#x", how, st);
	cr_expect_eq(sscanf(strstr(info, "exit:      pid ") ? strstr(info, "exit:      pid ") : "",
			     "exit:      pid %d", &fxpid),
		1, "%s: %s", how, info);
	subst(want, sizeof(want), tmpl, fxpid, (unsigned)getuid());
	line_of(info, prefix, line, sizeof(line));
	cr_expect(strstr(line, want), "%s: want \"%s\"\nin   \"%s\"\n%s", how, want, line, info);
	free(info);
}

/* abort()'s way: the crash and the exit say the process sent it itself. */
Test(record_deaths, tgkill_by_itself)
{
	own_death("tgkill", SIGABRT, "\n  pid ",
		": signal 6 (Aborted), sent by PID @PID@ (fx_die), uid @UID@ (tgkill), by the process "
		"itself, at ");
	own_death("tgkill", SIGABRT, "exit:",
		" killed by signal 6 (Aborted), sent by PID @PID@ (fx_die), uid @UID@ (tgkill), by the "
		"process itself at ");
}

Test(record_deaths, sigqueue_by_itself)
{
	own_death("sigqueue", SIGUSR1, "exit:",
		" killed by signal 10 (User defined signal 1), sent by PID @PID@ (fx_die), uid @UID@ "
		"(sigqueue; PID and uid as the sender gave them), by the process itself at ");
}

/* A fault the kernel raised: its address, the one the fixture wrote to. */
Test(record_deaths, segv_at_a_known_address)
{
	own_death("segv", SIGSEGV, "\n  pid ",
		": signal 11 (Segmentation fault), fault address 0xdead000 (SEGV_MAPERR), at ");
	own_death("segv", SIGSEGV, "exit:",
		" killed by signal 11 (Segmentation fault), fault address 0xdead000 (SEGV_MAPERR) "
		"at ");
}

/* timer_create(SIGEV_SIGNAL) gives SI_TIMER; setitimer() (and alarm())
 * the kernel's SI_KERNEL, with no sender. */
Test(record_deaths, timers)
{
	own_death("timer", SIGALRM, "exit:",
		" killed by signal 14 (Alarm clock), from a POSIX timer (SI_TIMER) at ");
	own_death("itimer", SIGALRM, "exit:",
		" killed by signal 14 (Alarm clock), from alarm() or setitimer() (SI_KERNEL) at ");
}
