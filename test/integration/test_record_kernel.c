/* SPDX-License-Identifier: GPL-2.0-or-later */
/* tracerd record's kernel frames: with perf capture and the permission
 * for kernel-mode samples, a sample in a system call carries the kernel's
 * call chain below it (fx_pipe's write() to a pipe: pipe_write, vfs_write,
 * ksys_write), in top, folded and pprof, as much of the writer's time as
 * /proc says it spent in the kernel; --no-kernel and ptrace capture leave
 * them out, and the recording says why in one line, as it does for a
 * user without the permission. */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "record.h"

TestSuite(record_kernel, .init = record_setup, .fini = record_teardown, .timeout = 300);

/* The kernel functions below write() to a pipe, one of which any kernel
 * since 4.x has on that path (their exact set varies by version). */
static const char *const write_path[] = { "pipe_write", "anon_pipe_write", "vfs_write",
	"ksys_write", "__x64_sys_write" };

static bool any_of(const char *line, size_t len, const char *const *names, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		char semi[64];

		/* within the stack, or its leaf (followed by the count) */
		snprintf(semi, sizeof(semi), ";%s;", names[i]);
		if (memmem(line, len, semi, strlen(semi)))
			return true;
		semi[strlen(semi) - 1] = ' ';
		if (memmem(line, len, semi, strlen(semi)))
			return true;
	}
	return false;
}

static bool below_write(const char *line, size_t len)
{
	return any_of(line, len, write_path, sizeof(write_path) / sizeof(*write_path));
}

/* In the kernel: its entry from a system call (x86_64's, since 4.x). */
static bool in_kernel(const char *line, size_t len)
{
	static const char *const entry[] = { "entry_SYSCALL_64_after_hwframe",
		"entry_SYSCALL_64", "do_syscall_64" };

	return any_of(line, len, entry, sizeof(entry) / sizeof(*entry)) || below_write(line, len);
}

/* The main thread's user and system CPU ticks (/proc/PID/stat's utime
 * and stime). */
static void cpu_ticks(pid_t pid, unsigned long long *ret_user, unsigned long long *ret_sys)
{
	char path[64], *text, *p;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/stat", (int)pid, (int)pid);
	text = slurp(path);
	p = strrchr(text, ')');
	*ret_user = *ret_sys = 0;
	/* after the comm: state is field 3; utime 14, stime 15 */
	cr_assert(p && sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu",
			       ret_user, ret_sys) == 2,
		"%s", text);
}

/* fx_pipe recorded with extra (NULL: none) until 600 samples; its
 * folded stacks in *r, and the share of its writer's CPU time the kernel
 * accounted as system time meanwhile. */
static void record_pipe(const char *extra, struct run_result *r, double *ret_sys_share)
{
	const char *folded[] = { "tracerd", "report", repo, "-f", "folded", NULL };
	unsigned long long u0, s0, u1, s1;
	pid_t fx = fx_start(FX("fx_pipe"), NULL), t;

	cr_assert_gt(fx, 0);
	t = tracerd_start(fx, extra, NULL, NULL);
	cpu_ticks(fx, &u0, &s0);
	cr_expect(repo_until(samples_600));
	cpu_ticks(fx, &u1, &s1);
	cr_expect_eq(tracerd_stop(t), 0, "%s", slurp(errfile));
	fx_stop(fx);
	*ret_sys_share = u1 + s1 > u0 + s0 ? (double)(s1 - s0) / (double)(u1 + s1 - u0 - s0) : 0;
	run_tracerd(r, folded);
	cr_assert_eq(r->status, 0, "%s", r->err);
}

/* Of the samples of fx_pipe_write's thread, how many are below it, how
 * many of those are in the kernel, and how many carry a kernel frame of
 * write()'s path. */
static void count_writes(const char *out, unsigned long long *ret_write,
	unsigned long long *ret_kernel, unsigned long long *ret_path)
{
	*ret_write = *ret_kernel = *ret_path = 0;
	for (const char *line = out; *line;) {
		const char *nl = strchrnul(line, '\n'), *sp = memrchr(line, ' ', (size_t)(nl - line));
		unsigned long long n = sp ? strtoull(sp + 1, NULL, 10) : 0;
		size_t len = (size_t)(nl - line);

		if (memmem(line, len, ";fx_pipe_write", 14)) {
			*ret_write += n;
			if (in_kernel(line, len))
				*ret_kernel += n;
			if (below_write(line, len))
				*ret_path += n;
		}
		line = *nl ? nl + 1 : nl;
	}
}

Test(record_kernel, frames_below_write_to_a_pipe)
{
	/* every row: vfs_write has its total, but little self */
	const char *top[] = { "tracerd", "report", repo, "--limit", "0", NULL };
	unsigned long long writes, kernel, path;
	struct run_result r;
	char cmd[768], *out;
	double sys_share, share;

	record_pipe(NULL, &r, &sys_share);
	cr_assert(strstr(slurp(errfile), "kernel       the kernel's call chain"),
		"kernel frames on, said in the summary:\n%s", slurp(errfile));
	count_writes(r.out, &writes, &kernel, &path);
	share = writes ? (double)kernel / (double)writes : 0;
	cr_expect_gt(writes, 200, "%llu samples in fx_pipe_write:\n%.2000s", writes, r.out);
	/* the truth: the writer's system time by /proc, tick-based (hence the
	 * tolerance); the rest is the few instructions of user code around
	 * write() */
	cr_expect(share > sys_share - 0.2 && share < sys_share + 0.2,
		"%.0f%% of fx_pipe_write's samples have kernel frames, /proc says "
		"%.0f%% of its time was system time:\n%.3000s",
		100 * share, 100 * sys_share, r.out);
	/* and most of it in write()'s own path (the rest: its way back to
	 * user mode, a reschedule) */
	cr_expect_gt(path * 10, writes * 3, "%llu of %llu below write():\n%.3000s", path,
		writes, r.out);
	run_result_free(&r);

	run_tracerd(&r, top);
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_expect(strstr(r.out, "vfs_write ([kernel])") || strstr(r.out, "ksys_write ([kernel])"),
		"%s", r.out);
	run_result_free(&r);

	/* pprof: a mapping of the kernel's, which go tool pprof reads */
	need_command("go", "golang-go");
	snprintf(cmd, sizeof(cmd),
		"%s report %s -f pprof -o %s.pb.gz && HOME=/tmp PPROF_BINARY_PATH=/nonexistent "
		"go tool pprof -symbolize=none -raw %s.pb.gz 2>&1; rm -f %s.pb.gz",
		TRACERD, repo, repo, repo, repo);
	out = shell_output(cmd, NULL);
	cr_expect(strstr(out, " [kernel] ") && (strstr(out, " vfs_write") || strstr(out, " ksys_write")),
		"%s", out);
	free(out);
}

/* --no-kernel, or ptrace capture: no kernel frame, and the summary's
 * line says why. */
static void without_kernel(const char *extra, const char *why)
{
	const char *top[] = { "tracerd", "report", repo, NULL };
	unsigned long long writes, kernel, path;
	struct run_result r;
	double sys_share;

	record_pipe(extra, &r, &sys_share);
	cr_expect(strstr(slurp(errfile), why), "want '%s':\n%s", why, slurp(errfile));
	count_writes(r.out, &writes, &kernel, &path);
	cr_expect_gt(writes, 100, "%.2000s", r.out);
	cr_expect_eq(kernel, 0, "%llu kernel stacks with %s:\n%.2000s", kernel, extra, r.out);
	run_result_free(&r);
	run_tracerd(&r, top);
	cr_expect(!strstr(r.out, "[kernel]"), "%s", r.out);
	run_result_free(&r);
}

Test(record_kernel, no_kernel_leaves_them_out)
{
	without_kernel("--no-kernel", "kernel       off (--no-kernel)");
}

Test(record_kernel, ptrace_capture_says_why_not)
{
	without_kernel("--capture=ptrace", "kernel       off: ptrace capture");
}

/* A user without the permission for kernel-mode samples (nobody, where
 * kernel.perf_event_paranoid > 1): one line says so, or that its capture
 * is ptrace where perf is refused to it altogether. */
Test(record_kernel, a_user_without_permission_is_told)
{
	char dir[64] = "/tmp/tracerd-kernel-XXXXXX", sub[96];
	const char *argv[] = { "tracerd", "record", "-q", "-d", "1s", "-r", sub, "--", "timeout", "3",
		FX("fx_pipe"), NULL };
	struct run_result r;
	int paranoid = 2;
	FILE *f = fopen("/proc/sys/kernel/perf_event_paranoid", "re");

	if (f) {
		if (fscanf(f, "%d", &paranoid) != 1)
			paranoid = 2;
		fclose(f);
	}
	if (paranoid <= 1)
		cr_skip_test("kernel.perf_event_paranoid is %d: every user may", paranoid);
	cr_assert(mkdtemp(dir));
	cr_assert_eq(chown(dir, 65534, 65534), 0);
	snprintf(sub, sizeof(sub), "%s/repo", dir);
	run_tracerd_as_nobody(&r, argv);
	cr_expect(strstr(r.err, "kernel       off: no permission") ||
			  strstr(r.err, "kernel       off: ptrace capture"),
		"status %d:\n%s", r.status, r.err);
	run_result_free(&r);
	snprintf(sub, sizeof(sub), "rm -rf %s", dir);
	free(shell_output(sub, NULL));
}
