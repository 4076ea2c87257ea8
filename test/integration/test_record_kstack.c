/* SPDX-License-Identifier: GPL-2.0-or-later */
/* tracerd record's kernel stacks of blocked threads (wall mode): where
 * the kernel shows /proc/TID/stack (root), fx_kwait's thread blocked in
 * read() on a pipe shows the kernel's pipe read below fx_kwait_read, and
 * its main thread the kernel's nanosleep below fx_kwait_nap, in folded,
 * top, waits and pprof, with perf or ptrace capture; each wait, one
 * blocked period for the whole recording, costs one read of the file,
 * not one a tick; --no-kernel leaves them out.  The waits report's
 * one-line stacks name the program's function first, fx_kwait's and
 * each of fx_locks' waiters' and owners', with the kernel's part folded
 * to one mark after it.  The names are the ones
 * this kernel (6.18) and older ones put on those paths; the truth is the
 * kernel's own file, read by the test where it says which it has. */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../common/kstack.h"
#include "../../symbolize/symbolize.h"
#include "record.h"

TestSuite(record_kstack, .init = record_setup, .fini = record_teardown, .timeout = 300);

/* A blocked read() of an empty pipe: pipe_read (anon_pipe_read since
 * 6.16), which waits in pipe_wait_readable on some versions. */
static const char *const pipe_names[] = { "pipe_read", "anon_pipe_read", "pipe_wait_readable",
	"pipe_wait" };
/* nanosleep(), which glibc makes clock_nanosleep(): hrtimer_nanosleep,
 * do_nanosleep below it where not inlined, common_nsleep above. */
static const char *const nap_names[] = { "hrtimer_nanosleep", "do_nanosleep", "common_nsleep",
	"common_nsleep_timens", "__x64_sys_clock_nanosleep", "__x64_sys_nanosleep" };

/* Skip, with the reason, where the kernel does not show kernel stacks or
 * kallsyms hides their addresses. */
static void need_kstack(void)
{
	struct sym_kallsyms *k;
	int e = td_kstack_permitted();

	if (e < 0)
		cr_skip_test("/proc/self/stack is not readable (%s): it needs CAP_SYS_ADMIN",
			strerror(-e));
	if ((e = sym_kallsyms_load(NULL, &k)) < 0)
		cr_skip_test("/proc/kallsyms: %s", strerror(-e));
	sym_kallsyms_free(k);
}

/* One of names is a frame of line (of len bytes) after its frame `after`
 * (below it: nearer the leaf). */
static bool below(const char *line, size_t len, const char *after, const char *const *names,
	size_t n)
{
	const char *at = memmem(line, len, after, strlen(after));

	if (!at)
		return false;
	len -= (size_t)(at - line);
	for (size_t i = 0; i < n; i++) {
		char semi[64];

		snprintf(semi, sizeof(semi), ";%s;", names[i]);
		if (memmem(at, len, semi, strlen(semi)))
			return true;
		semi[strlen(semi) - 1] = ' '; /* the leaf, before its count */
		if (memmem(at, len, semi, strlen(semi)))
			return true;
	}
	return false;
}

/* Folded stacks: the samples below fn, and how many of them have one of
 * names below it. */
static void count_below(const char *out, const char *fn, const char *const *names, size_t n,
	unsigned long long *ret_all, unsigned long long *ret_kernel)
{
	char key[64];

	snprintf(key, sizeof(key), ";%s;", fn);
	*ret_all = *ret_kernel = 0;
	for (const char *line = out; *line;) {
		const char *nl = strchrnul(line, '\n'), *sp = memrchr(line, ' ', (size_t)(nl - line));
		unsigned long long c = sp ? strtoull(sp + 1, NULL, 10) : 0;
		size_t len = (size_t)(nl - line);

		if (memmem(line, len, key, strlen(key))) {
			*ret_all += c;
			if (below(line, len, key + 1, names, n))
				*ret_kernel += c;
		}
		line = *nl ? nl + 1 : nl;
	}
}

#define N(a) (sizeof(a) / sizeof(*(a)))

/* fx_kwait recorded in wall mode with extra (NULL: none) until 600
 * samples; its folded stacks in *r. */
static void record_kwait(const char *extra, struct run_result *r)
{
	const char *folded[] = { "tracerd", "report", repo, "-f", "folded", NULL };
	pid_t fx = fx_start(FX("fx_kwait"), NULL), t;

	cr_assert_gt(fx, 0);
	t = tracerd_start(fx, "--mode=wall", extra, NULL);
	cr_expect(repo_until(samples_600));
	cr_expect_eq(tracerd_stop(t), 0, "%s", slurp(errfile));
	fx_stop(fx);
	run_tracerd(r, folded);
	cr_assert_eq(r->status, 0, "%s", r->err);
}

/* The kernel's waits below both calls, in (nearly) every sample of them:
 * the first look may find a thread before its call. */
static void expect_kernel_waits(const char *folded)
{
	unsigned long long all, kernel;

	count_below(folded, "fx_kwait_read", pipe_names, N(pipe_names), &all, &kernel);
	cr_expect_gt(all, 200, "%llu samples in fx_kwait_read:\n%.3000s", all, folded);
	cr_expect_geq(kernel * 10, all * 9, "%llu of %llu below a pipe read:\n%.3000s", kernel,
		all, folded);
	count_below(folded, "fx_kwait_nap", nap_names, N(nap_names), &all, &kernel);
	cr_expect_gt(all, 200, "%llu samples in fx_kwait_nap:\n%.3000s", all, folded);
	cr_expect_geq(kernel * 10, all * 9, "%llu of %llu below a nanosleep:\n%.3000s", kernel,
		all, folded);
}

/* The "in:" line of the waits report that names fn: fn among its user
 * frames, which come first, and the kernel's part folded after them to
 * one mark naming one of names. */
static void expect_in_line(const char *out, const char *fn, const char *const *names, size_t n)
{
	const char *at = strstr(out, "\n    in: "), *nl = NULL;
	char want[64];

	for (; at; at = strstr(at + 1, "\n    in: ")) {
		nl = strchrnul(at + 1, '\n');
		snprintf(want, sizeof(want), " %s <- ", fn);
		if (memmem(at, (size_t)(nl - at), want, strlen(want)))
			break;
	}
	cr_assert(at, "no in: line names %s:\n%s", fn, out);
	for (size_t i = 0; i < n; i++) {
		snprintf(want, sizeof(want), " [kernel: %s", names[i]);
		if (memmem(at, (size_t)(nl - at), want, strlen(want)) && nl[-1] == ']')
			return;
	}
	cr_expect(false, "%s's in: line has no kernel mark of its wait:\n%.*s", fn,
		(int)(nl - at), at);
}

/* The summary's count of /proc/TID/stack reads: two threads blocked for
 * good are two blocked periods (a few more if a first look came before
 * a thread's call), against some 300 ticks. */
static void expect_read_once(void)
{
	const char *err = slurp(errfile), *at = strstr(err, "once per blocked period (");
	unsigned long long reads = at ? strtoull(at + 25, NULL, 10) : 0;

	cr_assert(at, "%s", err);
	cr_expect(reads >= 2 && reads <= 6, "%llu reads of /proc/TID/stack:\n%s", reads, err);
}

Test(record_kstack, blocked_threads_show_their_kernel_wait)
{
	const char *top[] = { "tracerd", "report", repo, "--limit", "0", NULL };
	const char *waits[] = { "tracerd", "report", repo, "-f", "waits", NULL };
	struct run_result r;
	char cmd[768], *out;
	bool named = false;

	need_kstack();
	record_kwait(NULL, &r);
	expect_kernel_waits(r.out);
	run_result_free(&r);
	expect_read_once();

	run_tracerd(&r, top);
	cr_assert_eq(r.status, 0, "%s", r.err);
	for (size_t i = 0; i < N(pipe_names); i++) {
		snprintf(cmd, sizeof(cmd), " %s ([kernel])", pipe_names[i]);
		named = named || strstr(r.out, cmd);
	}
	cr_expect(named, "%s", r.out);
	run_result_free(&r);

	/* the wait episode's place: the call in the program, then the
	 * kernel's wait folded to one mark */
	run_tracerd(&r, waits);
	cr_assert_eq(r.status, 0, "%s", r.err);
	expect_in_line(r.out, "fx_kwait_read", pipe_names, N(pipe_names));
	expect_in_line(r.out, "fx_kwait_nap", nap_names, N(nap_names));
	run_result_free(&r);

	/* pprof: in the kernel's mapping, as perf's kernel frames */
	need_command("go", "golang-go");
	snprintf(cmd, sizeof(cmd),
		"%s report %s -f pprof -o %s.pb.gz && HOME=/tmp PPROF_BINARY_PATH=/nonexistent "
		"go tool pprof -symbolize=none -raw %s.pb.gz 2>&1; rm -f %s.pb.gz",
		TRACERD, repo, repo, repo, repo);
	out = shell_output(cmd, NULL);
	cr_expect(strstr(out, " [kernel] ") && strstr(out, "nanosleep"), "%s", out);
	free(out);
}

/* ptrace capture, where perf gives no kernel frame at all: blocked
 * threads still have theirs, and the summary says which threads do.  With
 * both cores busy: a blocked thread's read does not race its CPU. */
Test(record_kstack, ptrace_capture_still_shows_them)
{
	struct run_result r;

	need_kstack();
	load_start();
	record_kwait("--capture=ptrace", &r);
	load_stop();
	expect_kernel_waits(r.out);
	run_result_free(&r);
	expect_read_once();
	cr_expect(strstr(slurp(errfile), "kernel       a blocked thread's kernel stack from "
					 "/proc/TID/stack"),
		"%s", slurp(errfile));
}

Test(record_kstack, no_kernel_leaves_them_out)
{
	const char *top[] = { "tracerd", "report", repo, NULL };
	unsigned long long all, kernel;
	struct run_result r;

	need_kstack();
	record_kwait("--no-kernel", &r);
	cr_expect(strstr(slurp(errfile), "kernel       off (--no-kernel)\n"), "%s",
		slurp(errfile));
	count_below(r.out, "fx_kwait_read", pipe_names, N(pipe_names), &all, &kernel);
	cr_expect_gt(all, 200, "%.2000s", r.out);
	cr_expect_eq(kernel, 0, "%.2000s", r.out);
	cr_expect(!strstr(r.out, "entry_SYSCALL"), "%.2000s", r.out);
	run_result_free(&r);
	run_tracerd(&r, top);
	cr_expect(!strstr(r.out, "[kernel]"), "%s", r.out);
	run_result_free(&r);
}

/* A user the kernel does not show kernel stacks to (nobody: no
 * CAP_SYS_ADMIN): wall mode records on, and the summary's kernel line
 * says why blocked threads have no kernel stack. */
Test(record_kstack, a_user_without_permission_is_told)
{
	char dir[64] = "/tmp/tracerd-kstack-XXXXXX", sub[96];
	const char *argv[] = { "tracerd", "record", "-q", "-m", "wall", "-d", "1s", "-r", sub, "--",
		"timeout", "3", FX("fx_kwait"), NULL };
	struct run_result r;

	need_kstack(); /* root: nobody is refused what root may read */
	cr_assert(mkdtemp(dir));
	cr_assert_eq(chown(dir, 65534, 65534), 0);
	snprintf(sub, sizeof(sub), "%s/repo", dir);
	run_tracerd_as_nobody(&r, argv);
	cr_expect(strstr(r.err, "; a blocked thread's /proc/TID/stack: not readable without "
				"CAP_SYS_ADMIN (root)\n"),
		"status %d:\n%s", r.status, r.err);
	run_result_free(&r);
	snprintf(sub, sizeof(sub), "rm -rf %s", dir);
	free(shell_output(sub, NULL));
}

/* The site of the waits report whose waiters include thread (a text
 * block from its figures to the blank line after it). */
static char *waits_site(const char *out, const char *thread)
{
	char want[64];
	const char *at, *b, *e;

	snprintf(want, sizeof(want), " (%s)", thread);
	for (at = strstr(out, "\n    waiting:"); at; at = strstr(at + 1, "\n    waiting:")) {
		const char *nl = strchrnul(at + 1, '\n');

		if (memmem(at, (size_t)(nl - at), want, strlen(want)))
			break;
	}
	cr_assert(at, "no site of %s:\n%s", thread, out);
	for (b = at; b > out && strncmp(b, "\n\n", 2); b--)
		;
	e = strstr(at, "\n\n");
	return strndup(b, e ? (size_t)(e - b) : strlen(b));
}

/* The line of site that begins with head, without it. */
static char *site_line(const char *site, const char *head)
{
	const char *at = strstr(site, head), *nl;

	cr_assert(at, "no %s line in:%s", head, site);
	at += strlen(head);
	nl = strchrnul(at, '\n');
	return strndup(at, (size_t)(nl - at));
}

/* fx_locks' waiters, recorded in wall mode with the kernel stacks of
 * blocked threads: each site's "in:" line names the fixture's function
 * the waiter blocks in, and its owner's line the function the owner
 * sleeps in while it holds the object, among their user frames, which
 * come first; the kernel's part (the futex wait, the scheduler, the
 * system call's entry) is folded after them to one mark.  The JSON
 * keeps every frame and counts the kernel's: they are the stack's
 * innermost, down to the system call's entry. */
Test(record_kstack, waits_name_the_program_before_the_kernel)
{
	static const struct {
		const char *thread, *fn, *owner;
	} w[] = { { "lk-mutex", "w_mutex", "holder" }, { "lk-pi", "w_pi", "holder" },
		{ "lk-rdlock", "w_rdlock", "wholder" }, { "lk-cond", "w_cond", NULL },
		{ "lk-sem", "w_sem", NULL }, { "lk-join", "w_join", "lk_long" },
		{ "lk-pipe", "w_pipe", NULL } };
	const char *waits[] = { "tracerd", "report", repo, "-f", "waits", NULL };
	const char *json[] = { "tracerd", "report", repo, "-f", "waits", "--json", NULL };
	struct run_result r;
	char text[1024];
	pid_t fx, t;

	need_kstack();
	fx = fx_start_listing(FX("fx_locks"), NULL, text, sizeof(text));
	cr_assert_gt(fx, 0);
	cr_assert(wait_parked(fx, NULL, TEST_PATIENCE_MS), "fx_locks' threads did not park");
	t = tracerd_start(fx, "--mode=wall", NULL, NULL);
	cr_expect(repo_until(samples_600));
	cr_expect_eq(tracerd_stop(t), 0, "%s", slurp(errfile));
	fx_stop(fx);

	run_tracerd(&r, waits);
	cr_assert_eq(r.status, 0, "%s", r.err);
	for (size_t i = 0; i < N(w); i++) {
		char *site = waits_site(r.out, w[i].thread), *in = site_line(site, "\n    in: ");
		char want[64];

		snprintf(want, sizeof(want), " %s <- ", w[i].fn);
		cr_expect(strstr(in, want), "%s waits in %s: in: %s", w[i].thread, w[i].fn, in);
		cr_expect(strstr(in, " [kernel: ") && in[strlen(in) - 1] == ']' &&
				  !strstr(in, "entry_SYSCALL") && !strstr(in, "do_syscall_64"),
			"%s: the kernel's frames folded after the program's: in: %s", w[i].thread,
			in);
		if (w[i].owner) {
			char *held = site_line(site, "\n    held by ");

			snprintf(want, sizeof(want), " %s <- ", w[i].owner);
			cr_expect(strstr(held, want) && strstr(held, " [kernel: "),
				"%s's owner sleeps in %s: held by %s", w[i].thread, w[i].owner, held);
			free(held);
		}
		free(in);
		free(site);
	}
	run_result_free(&r);

	run_tracerd(&r, json);
	cr_assert_eq(r.status, 0, "%s", r.err);
	{
		const char *at = strstr(r.out, "\"name\":\"lk-mutex\"}"), *b;
		unsigned k = 0;
		char *stack, *f[64], *save = NULL;
		unsigned n = 0;

		cr_assert(at, "%s", r.out);
		for (b = at; b > r.out && b[-1] != '\n'; b--)
			;
		at = strstr(b, "\"kernel_frames\":");
		cr_assert(at && sscanf(at, "\"kernel_frames\":%u", &k) == 1, "%.600s", b);
		at = strstr(at, "\"stack\":[");
		stack = strndup(at + 9, (size_t)(strchr(at, ']') - at - 9));
		for (char *s = strtok_r(stack, ",", &save); s && n < 64; s = strtok_r(NULL, ",", &save))
			f[n++] = s;
		cr_assert(k > 0 && k < n, "%u kernel frames of %u: %.600s", k, n, b);
		cr_expect(!strncmp(f[k - 1], "\"entry_SYSCALL", 14),
			"the kernel's outermost frame is its system call entry: %s (%.600s)",
			f[k - 1], b);
		for (unsigned i = 0; i < k; i++)
			cr_expect(!strstr(f[i], "pthread") && strcmp(f[i], "\"w_mutex\""),
				"a user frame counted as the kernel's: %s (%.600s)", f[i], b);
		free(stack);
	}
	run_result_free(&r);
}

/* The text of each site of the waits report, and its line head ("in:",
 * "held by") less its figures: what a reader tells sites and owner rows
 * apart by. */
static char *site_key(const char *site)
{
	const char *kind = strstr(site, " ms  "), *in = strstr(site, "\n    in: ");
	char *k = NULL;

	for (const char *at = kind; at && at < in; at = strstr(at + 1, " ms  "))
		kind = at;
	cr_assert(kind && in, "%s", site);
	if (asprintf(&k, "%.*s|%.*s", (int)strcspn(kind + 5, "\n"), kind + 5,
		    (int)strcspn(in + 9, "\n"), in + 9) < 0)
		k = NULL;
	cr_assert_not_null(k);
	return k;
}

/* fx_owners' posters and readers wait for their lock again and again,
 * each episode's kernel stack taken one way or another (perf's switch-out
 * chain has the scheduler innermost, /proc/TID/stack not): one place in
 * the program is still one site, and one stack of an owner one row, so
 * that no two rows of the waits report read the same. */
Test(record_kstack, one_place_is_one_site_whatever_the_kernel_stack)
{
	const char *waits[] = { "tracerd", "report", repo, "-f", "waits", "--limit", "0", NULL };
	char text[512], p[32], *keys[256];
	const char *rec[] = { "tracerd", "--pid", p, "--mode", "wall", "-d", "3s", "-q", "-r",
		repo, NULL };
	struct run_result r;
	unsigned n = 0, mutex = 0;
	pid_t fx;

	need_kstack();
	fx = fx_start_listing(FX("fx_owners"), NULL, text, sizeof(text));
	cr_assert_gt(fx, 0);
	snprintf(p, sizeof(p), "%d", (int)fx);
	run_tracerd(&r, rec);
	fx_stop(fx);
	cr_assert_eq(r.status, 0, "%s", r.err);
	run_result_free(&r);
	run_tracerd(&r, waits);
	cr_assert_eq(r.status, 0, "%s", r.err);
	for (const char *s = strstr(r.out, "\n\n"); s && n < 256; s = strstr(s + 2, "\n\n")) {
		const char *e = strstr(s + 2, "\n\n");
		char *site = strndup(s, e ? (size_t)(e - s) : strlen(s)), *held[16];
		unsigned nheld = 0;

		keys[n] = site_key(site);
		mutex += !strncmp(keys[n], "mutex ", 6);
		for (unsigned i = 0; i < n; i++)
			cr_expect(strcmp(keys[i], keys[n]), "two sites read the same: %s\n%s",
				keys[n], r.out);
		n++;
		/* "held by TID (NAME) for ...: STACK": the thread and the stack */
		for (const char *h = strstr(site, "\n    held by "); h && nheld < 16;
			h = strstr(h + 1, "\n    held by ")) {
			const char *colon = strstr(h, "): "), *nl = strchrnul(h + 1, '\n');

			cr_assert(colon && colon < nl, "%s", site);
			if (asprintf(&held[nheld], "%.*s%.*s", (int)strcspn(h + 13, " "), h + 13,
				    (int)(nl - colon), colon) < 0)
				held[nheld] = NULL;
			cr_assert_not_null(held[nheld]);
			for (unsigned i = 0; i < nheld; i++)
				cr_expect(strcmp(held[i], held[nheld]),
					"two owner rows read the same: %s\n%s", held[nheld], site);
			nheld++;
		}
		while (nheld)
			free(held[--nheld]);
		free(site);
	}
	cr_expect_gt(mutex, 0, "no mutex site:\n%s", r.out);
	while (n)
		free(keys[--n]);
	run_result_free(&r);
}
