/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Integration tests of `tracerd dump` against the fixtures: exact chains of
 * the fixture's own functions, inline frames, demangled names, file:line,
 * agreement with eu-stack, debuginfo found or fetched only when asked,
 * and threads in every state.  Its error paths are test_dump_errors.c;
 * what blocked threads wait for, test_lock_waits.c. */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../../common/td.h"
#include "../helpers.h"

#define MAXF 256

static struct pframe frames[MAXF];

struct progress {
	pid_t pid, tid;
	uint64_t t0;
};

static bool ran(void *arg)
{
	const struct progress *p = arg;

	return task_runtime(p->pid, p->tid) > p->t0;
}

/* Does thread tid of pid get CPU time from now on? */
static bool runs_on(pid_t pid, pid_t tid)
{
	struct progress p = { pid, tid, task_runtime(pid, tid) };

	return wait_for(ran, &p, TEST_PATIENCE_MS);
}

Test(dump, c_chain_through_qsort_with_inline_frame, .timeout = 60)
{
	pid_t pid = fx_start(FX("fx_chain"), NULL);
	struct run_result r;
	char chain[4096];
	int n, i_step = -1, i_cmp = -1, i_sort = -1, libc_between = 0;
	int want_line = source_line("test/fixtures/fx_chain.c", "the line a test looks for");

	cr_assert_gt(pid, 0, "fixture did not start");
	dump_text(pid, &r, NULL, NULL);
	cr_assert_eq(r.status, 0, "exit %d: %s", r.status, r.err);
	n = parse_thread(r.out, pid, frames, MAXF);
	cr_assert_gt(n, 0, "no frames for %d in:\n%s", pid, r.out);
	own_chain(frames, n, FX("fx_chain"), chain, sizeof(chain));
	cr_expect_str_eq(chain, "fx_leaf fx_step fx_compare fx_sort fx_outer main _start");
	for (int i = 0; i < n; i++) {
		if (!strcmp(frames[i].function, "fx_step"))
			i_step = i;
		if (!strcmp(frames[i].function, "fx_compare"))
			i_cmp = i;
		if (!strcmp(frames[i].function, "fx_sort"))
			i_sort = i;
	}
	cr_assert(i_step >= 0 && i_cmp > i_step && i_sort > i_cmp, "%s", r.out);
	cr_expect(frames[i_step].inlined, "fx_step must be an inlined frame");
	cr_expect(!frames[i_cmp].inlined);
	cr_expect_str_eq(frames[i_step].file, "test/fixtures/fx_chain.c");
	cr_expect_eq(frames[i_step].line, want_line, "fx_step line %d, want %d",
		frames[i_step].line, want_line);
	for (int i = i_cmp + 1; i < i_sort; i++)
		libc_between += strstr(frames[i].module, "libc.so") != NULL;
	cr_expect_gt(libc_between, 0, "the chain must pass through qsort in libc:\n%s", r.out);
	cr_expect(strstr(r.out, "-- outermost frame reached") != NULL, "%s", r.out);
	/* the target keeps running */
	cr_expect(runs_on(pid, pid), "target must make progress after dump");
	cr_expect_eq(task_state(pid, pid), 'R');
	run_result_free(&r);
	fx_stop(pid);
}

Test(dump, cxx_namespace_template_lambda_demangled, .timeout = 60)
{
	pid_t pid = fx_start(FX("fx_cxx"), NULL);
	struct run_result r;
	int n, k = 0;
	/* in order, innermost first: each must match a later frame */
	static const char *const want[] = {
		"shapes::spin_forever(int)",
		"main::{lambda}::operator()::{lambda}::operator()",
		"std::__introsort_loop<",
		"std::sort<",
		"main::{lambda}::operator()",
		"shapes::Engine<int>::drive<main::{lambda(int)#1}>(main::{lambda(int)#1})",
		"main",
	};

	cr_assert_gt(pid, 0);
	dump_text(pid, &r, NULL, NULL);
	cr_assert_eq(r.status, 0, "%s", r.err);
	n = parse_thread(r.out, pid, frames, MAXF);
	for (int i = 0; i < n && k < (int)(sizeof(want) / sizeof(want[0])); i++)
		if (!strncmp(frames[i].function, want[k], strlen(want[k])))
			k++;
	cr_expect_eq(k, (int)(sizeof(want) / sizeof(want[0])), "matched %d names; missing '%s' in:\n%s",
		k, want[k < 7 ? k : 6], r.out);
	cr_expect(strstr(r.out, "main::{lambda}::operator()::{lambda}::operator() [inlined]"),
		"the comparator lambda is inlined:\n%s", r.out);
	cr_expect(strstr(r.out, "_Z") == NULL, "no mangled names:\n%s", r.out);
	run_result_free(&r);
	fx_stop(pid);
}

static const char *const kinds[] = { "condvar", "futex", "nanosleep", "epoll", "read", "poll",
	"select", "recv", "accept", "spin" };

Test(dump, ten_named_threads_each_in_its_chain, .timeout = 60)
{
	pid_t pid = fx_start(FX("fx_threads"), NULL);
	struct run_result r;
	char chain[4096], want[256], name[32];

	cr_assert_gt(pid, 0);
	cr_assert(wait_parked(pid, "spin", TEST_PATIENCE_MS), "fixture threads did not park");
	dump_text(pid, &r, "--no-inline", NULL);
	cr_assert_eq(r.status, 0, "%s", r.err);
	for (unsigned i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
		pid_t tid;
		char hdr[64];
		int n;

		snprintf(name, sizeof(name), "fx-%s", kinds[i]);
		tid = task_by_name(pid, name);
		cr_assert_gt(tid, 0, "no thread %s", name);
		n = parse_thread(r.out, tid, frames, MAXF);
		cr_assert_gt(n, 0, "thread %s missing:\n%s", name, r.out);
		own_chain(frames, n, FX("fx_threads"), chain, sizeof(chain));
		snprintf(want, sizeof(want), "%s_%s thr_%s", strcmp(kinds[i], "spin") ? "wait" : "spin",
			strcmp(kinds[i], "spin") ? kinds[i] : "loop", kinds[i]);
		cr_expect_str_eq(chain, want, "thread %s", name);
		snprintf(hdr, sizeof(hdr), "thread %d (%s) %c", (int)tid, name,
			strcmp(kinds[i], "spin") ? 'S' : 'R');
		cr_expect(strstr(r.out, hdr), "header '%s' missing", hdr);
		if (strcmp(kinds[i], "spin"))
			cr_expect(strstr(frames[0].module, "libc.so"),
				"%s: innermost frame is the blocking call in libc", name);
	}
	{
		int n = parse_thread(r.out, pid, frames, MAXF);

		own_chain(frames, n, FX("fx_threads"), chain, sizeof(chain));
		cr_expect_str_eq(chain, "main _start");
	}
	/* nothing left stopped; the spinner runs on */
	cr_expect(wait_parked(pid, "spin", TEST_PATIENCE_MS),
		"threads must sleep again, not be stopped");
	cr_expect(runs_on(pid, task_by_name(pid, "fx-spin")), "the spinner runs on");
	run_result_free(&r);
	fx_stop(pid);
}

/* eu-stack -p on the same stopped process: names of the frames in the
 * fixture's binary, thread by thread. */
static int eu_stack_chains(pid_t pid, const char *module, pid_t *tids, char chains[][1024], int max)
{
	char cmd[512], line[4096];
	FILE *f;
	int n = -1;

	snprintf(cmd, sizeof(cmd), "eu-stack -m -p %d 2>/dev/null", (int)pid);
	f = popen(cmd, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		char *dash;

		if (!strncmp(line, "TID ", 4) && n + 1 < max) {
			n++;
			tids[n] = atoi(line + 4);
			chains[n][0] = '\0';
			continue;
		}
		dash = strstr(line, " - ");
		if (n < 0 || line[0] != '#' || !dash || strncmp(dash + 3, module, strlen(module)))
			continue;
		*dash = '\0';
		{
			char *fn = strstr(line, " 0x");

			fn = fn ? strchr(fn + 1, ' ') : NULL;
			if (!fn)
				continue;
			size_t l = strlen(chains[n]);
			snprintf(chains[n] + l, 1024 - l, "%s%s", l ? " " : "", fn + 1);
		}
	}
	pclose(f);
	return n + 1;
}

static void agree_with_eu_stack(const char *fixture)
{
	static char chains[64][1024];
	struct run_result r;
	char ours[4096];
	pid_t pid, tids[64];
	int n;

	need_command("eu-stack", "elfutils");
	pid = fx_start(fixture, NULL);
	cr_assert_gt(pid, 0);
	wait_parked(pid, "spin", TEST_PATIENCE_MS);
	kill(pid, SIGSTOP);
	cr_assert(wait_all_state(pid, 'T', TEST_PATIENCE_MS), "fixture did not stop");
	dump_text(pid, &r, "--no-inline", NULL);
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_expect(wait_all_state(pid, 'T', TEST_PATIENCE_MS),
		"a stopped process stays stopped after a dump");
	n = eu_stack_chains(pid, fixture, tids, chains, 64);
	cr_assert_gt(n, 0, "eu-stack printed nothing");
	for (int i = 0; i < n; i++) {
		int k = parse_thread(r.out, tids[i], frames, MAXF);

		cr_assert_gt(k, 0, "thread %d missing from tracerd", tids[i]);
		own_chain(frames, k, fixture, ours, sizeof(ours));
		cr_expect_str_eq(ours, chains[i], "thread %d: tracerd '%s', eu-stack '%s'", tids[i],
			ours, chains[i]);
	}
	kill(pid, SIGCONT);
	run_result_free(&r);
	fx_stop(pid);
}

Test(dump, agrees_with_eu_stack_threads, .timeout = 60)
{
	agree_with_eu_stack(FX("fx_threads"));
}

Test(dump, agrees_with_eu_stack_chain, .timeout = 60)
{
	agree_with_eu_stack(FX("fx_chain"));
}

Test(dump, stripped_binary_with_build_id_debuginfo_dir, .timeout = 60)
{
	pid_t pid = fx_start(FX("fx_chain_stripped"), NULL);
	struct run_result r;
	char chain[4096];
	int n, want_line = source_line("test/fixtures/fx_chain.c", "the line a test looks for");

	cr_assert_gt(pid, 0);
	dump_text(pid, &r, "--debuginfo-dir", TD_FIXTURE_DIR "/debugdir");
	cr_assert_eq(r.status, 0, "%s", r.err);
	n = parse_thread(r.out, pid, frames, MAXF);
	own_chain(frames, n, FX("fx_chain_stripped"), chain, sizeof(chain));
	cr_expect_str_eq(chain, "fx_leaf fx_step fx_compare fx_sort fx_outer main _start");
	for (int i = 0; i < n; i++)
		if (!strcmp(frames[i].function, "fx_step"))
			cr_expect_eq(frames[i].line, want_line);
	run_result_free(&r);

	/* Without the debuginfo: the same frames (CFI is in .eh_frame), but
	 * the fixture's functions have no symbol left: each is placed by its
	 * start, which .eh_frame gives, at the address the unstripped
	 * binary's symbol has. */
	dump_text(pid, &r, "--no-inline", NULL);
	cr_assert_eq(r.status, 0, "%s", r.err);
	n = parse_thread(r.out, pid, frames, MAXF);
	own_chain(frames, n, FX("fx_chain_stripped"), chain, sizeof(chain));
	{
		static const char *const fns[] = { "fx_leaf", "fx_compare", "fx_sort", "fx_outer",
			"main", "_start" };
		char want[1024];
		size_t off = 0;

		for (size_t i = 0; i < sizeof(fns) / sizeof(fns[0]); i++) {
			unsigned long at = nm_addr(FX("fx_chain"), fns[i]);

			cr_assert(at, "no %s in fx_chain", fns[i]);
			off += (size_t)snprintf(want + off, sizeof(want) - off, "%sfx_chain_stripped+%#lx",
				i ? " " : "", at);
		}
		cr_expect_str_eq(chain, want, "%s", r.out);
	}
	cr_expect(strstr(r.out, "qsort") != NULL, "libc frames still named:\n%s", r.out);
	run_result_free(&r);
	fx_stop(pid);
}

/* A debuginfod server that knows nothing: it answers 404 to every request
 * and writes a byte to *ret_heard for each.  Returns its pid; its URL is
 * in url. */
static pid_t debuginfod_start(char *url, size_t len, int *ret_heard)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t alen = sizeof(a);
	int ls = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), p[2];
	pid_t pid;

	cr_assert_geq(ls, 0);
	cr_assert_eq(bind(ls, (struct sockaddr *)&a, sizeof(a)), 0);
	cr_assert_eq(listen(ls, 16), 0);
	cr_assert_eq(getsockname(ls, (struct sockaddr *)&a, &alen), 0);
	cr_assert_eq(pipe2(p, O_CLOEXEC), 0);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		static const char resp[] = "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n"
					   "Connection: close\r\n\r\n";

		close(p[0]);
		for (;;) {
			char req[4096];
			int c = accept(ls, NULL, NULL);

			if (c < 0)
				continue;
			if (write(p[1], "!", 1) != 1 || read(c, req, sizeof(req)) < 0 ||
				write(c, resp, sizeof(resp) - 1) < 0)
				_exit(1);
			close(c);
		}
	}
	close(ls);
	close(p[1]);
	fcntl(p[0], F_SETFL, O_NONBLOCK);
	*ret_heard = p[0];
	snprintf(url, len, "http://127.0.0.1:%d", (int)ntohs(a.sin_port));
	return pid;
}

static int requests_heard(int fd)
{
	char buf[64];
	ssize_t n = read(fd, buf, sizeof(buf));

	return n > 0 ? (int)n : 0;
}

/* libdw asks the servers in DEBUGINFOD_URLS for debuginfo it lacks: only
 * with --debuginfod. */
Test(dump, debuginfod_only_when_asked, .timeout = 60)
{
	pid_t pid = fx_start(FX("fx_chain_stripped"), NULL), server;
	char url[64], cache[] = "/tmp/tracerd-debuginfod-XXXXXX", cmd[128];
	struct run_result r;
	int heard;

	cr_assert_gt(pid, 0);
	cr_assert_not_null(mkdtemp(cache));
	server = debuginfod_start(url, sizeof(url), &heard);
	setenv("DEBUGINFOD_URLS", url, 1);
	/* its own client cache: a remembered miss would ask nobody */
	setenv("DEBUGINFOD_CACHE_PATH", cache, 1);
	setenv("DEBUGINFOD_TIMEOUT", "10", 1);

	dump_text(pid, &r, NULL, NULL);
	cr_expect_eq(r.status, 0, "%s", r.err);
	cr_expect(strstr(r.out, "qsort") != NULL, "%s", r.out);
	cr_expect_eq(requests_heard(heard), 0, "no server asked without --debuginfod");
	run_result_free(&r);

	dump_text(pid, &r, "--debuginfod", NULL);
	cr_expect_eq(r.status, 0, "%s", r.err);
	cr_expect(strstr(r.out, "qsort") != NULL, "%s", r.out);
	cr_expect_gt(requests_heard(heard), 0, "--debuginfod asks the server for what is missing");
	run_result_free(&r);

	kill(server, SIGKILL);
	waitpid(server, NULL, 0);
	close(heard);
	fx_stop(pid);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", cache);
	cr_expect_eq(system(cmd), 0);
}

Test(dump, binary_deleted_after_start, .timeout = 60)
{
	char dir[] = "/tmp/tracerd-test-XXXXXX", path[256], cmd[600], chain[4096];
	struct run_result r;
	pid_t pid;
	int n;

	cr_assert_not_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/fx_gone", dir);
	snprintf(cmd, sizeof(cmd), "cp %s %s", FX("fx_chain"), path);
	cr_assert_eq(system(cmd), 0);
	pid = fx_start(path, NULL);
	cr_assert_gt(pid, 0);
	cr_assert_eq(unlink(path), 0);
	rmdir(dir);
	dump_text(pid, &r, NULL, NULL);
	cr_assert_eq(r.status, 0, "%s", r.err);
	n = parse_thread(r.out, pid, frames, MAXF);
	own_chain(frames, n, path, chain, sizeof(chain));
	cr_expect_str_eq(chain, "fx_leaf fx_step fx_compare fx_sort fx_outer main _start", "%s",
		r.out);
	cr_expect(strstr(r.out, "(deleted)") != NULL, "module shown as deleted:\n%s", r.out);
	run_result_free(&r);
	fx_stop(pid);
}

Test(dump, json_output, .timeout = 60)
{
	pid_t pid = fx_start(FX("fx_chain"), NULL);
	struct run_result r;
	char p[32], want[64];
	const char *argv[] = { "tracerd", "dump", "--pid", p, "--json", NULL };

	cr_assert_gt(pid, 0);
	snprintf(p, sizeof(p), "%d", (int)pid);
	run_tracerd(&r, argv);
	cr_assert_eq(r.status, 0, "%s", r.err);
	snprintf(want, sizeof(want), "{\"pid\": %d, \"threads\": [", (int)pid);
	cr_expect(!strncmp(r.out, want, strlen(want)), "%s", r.out);
	snprintf(want, sizeof(want), "{\"tid\": %d, \"name\": \"fx_chain\"", (int)pid);
	cr_expect(strstr(r.out, want), "%s", r.out);
	cr_expect(strstr(r.out, "\"function\": \"fx_step\", \"inlined\": true"), "%s", r.out);
	cr_expect(strstr(r.out, "\"end\": \"outermost frame reached\""), "%s", r.out);
	cr_expect(strstr(r.out, "\"stopped_ns\": "), "%s", r.out);
	cr_expect(strstr(r.out, "\"build_id\": \""), "%s", r.out);
	cr_expect(strstr(r.out, "\"offset\": \"0x"), "%s", r.out);
	cr_expect(!strcmp(r.out + strlen(r.out) - 4, "\n]}\n"), "ends the object");
	run_result_free(&r);
	fx_stop(pid);
}

Test(dump, tid_filter_and_verbose, .timeout = 60)
{
	pid_t pid = fx_start(FX("fx_threads"), NULL), tid;
	struct run_result r;
	char p[32], t[32], hdr[64];
	const char *argv[] = { "tracerd", "dump", "--pid", p, "--tid", t, "-v", NULL };

	cr_assert_gt(pid, 0);
	tid = task_by_name(pid, "fx-poll");
	snprintf(p, sizeof(p), "%d", (int)pid);
	snprintf(t, sizeof(t), "%d", (int)tid);
	run_tracerd(&r, argv);
	cr_assert_eq(r.status, 0, "%s", r.err);
	snprintf(hdr, sizeof(hdr), "thread %d (fx-poll) S  stopped ", (int)tid);
	cr_expect(strstr(r.out, hdr), "%s", r.out);
	cr_expect(strstr(r.out, "fx-read") == NULL, "only the asked thread:\n%s", r.out);
	cr_expect(strstr(r.out, "1 threads, 1 captured"), "%s", r.out);
	run_result_free(&r);
	fx_stop(pid);
}

/* A process whose main thread called pthread_exit: the leader is a zombie,
 * the workers live on, and their stacks are what a dump is for. */
Test(dump, main_thread_exited_workers_live, .timeout = 60)
{
	pid_t pid = fx_start(FX("fx_zleader"), NULL), spin, sleeper;
	struct run_result r;
	char chain[4096], hdr[160];
	int n;

	cr_assert_gt(pid, 0);
	cr_assert_eq(task_state(pid, pid), 'Z', "the main thread has exited");
	spin = task_by_name(pid, "zl-spin");
	sleeper = task_by_name(pid, "zl-sleep");
	cr_assert(spin > 0 && sleeper > 0);
	dump_text(pid, &r, NULL, NULL);
	cr_assert_eq(r.status, 0, "exit %d: %s", r.status, r.err);
	cr_expect_str_eq(r.err, "", "nothing to warn about");
	snprintf(hdr, sizeof(hdr),
		"thread %d (fx_zleader) Z exited\n  -- main thread has exited; the process lives "
		"on in its other threads\n",
		(int)pid);
	cr_expect(!strncmp(r.out, hdr, strlen(hdr)), "the leader first, as exited:\n%s", r.out);
	n = parse_thread(r.out, spin, frames, MAXF);
	own_chain(frames, n, FX("fx_zleader"), chain, sizeof(chain));
	cr_expect_str_eq(chain, "zl_spin_leaf zl_spin_outer zl_spin_thread", "%s", r.out);
	n = parse_thread(r.out, sleeper, frames, MAXF);
	own_chain(frames, n, FX("fx_zleader"), chain, sizeof(chain));
	cr_expect_str_eq(chain, "zl_sleep_wait zl_sleep_thread", "%s", r.out);
	cr_expect(n > 0 && strstr(frames[0].module, "libc.so"), "asleep in libc:\n%s", r.out);
	run_result_free(&r);
	cr_expect(runs_on(pid, spin), "the workers run on");
	fx_stop(pid);
}

/* A thread stopped by SIGSTOP reads 't' in /proc once traced: the dump
 * says what it is, a job-control stop, and leaves it stopped. */
Test(dump, job_control_stop_is_named, .timeout = 60)
{
	pid_t pid = fx_start(FX("fx_chain"), NULL);
	struct run_result r;
	char p[32], want[160];
	const char *argv[] = { "tracerd", "dump", "--pid", p, "--json", NULL };

	cr_assert_gt(pid, 0);
	kill(pid, SIGSTOP);
	cr_assert(wait_all_state(pid, 'T', TEST_PATIENCE_MS), "fixture did not stop");
	dump_text(pid, &r, NULL, NULL);
	cr_assert_eq(r.status, 0, "%s", r.err);
	snprintf(want, sizeof(want), "thread %d (fx_chain) T stopped (job control)\n", (int)pid);
	cr_expect(strstr(r.out, want), "want '%s' in:\n%s", want, r.out);
	run_result_free(&r);
	snprintf(p, sizeof(p), "%d", (int)pid);
	run_tracerd(&r, argv);
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_expect(strstr(r.out, "\"state\": \"T\", \"state_name\": \"stopped (job control)\""),
		"%s", r.out);
	run_result_free(&r);
	cr_expect(wait_all_state(pid, 'T', TEST_PATIENCE_MS), "still stopped after the dumps");
	kill(pid, SIGCONT);
	cr_expect(runs_on(pid, pid), "runs again after SIGCONT");
	fx_stop(pid);
}

Test(dump, frame_pointer_fallback_without_cfi, .timeout = 30)
{
	pid_t pid = fx_start(FX("fx_nocfi"), NULL);
	struct run_result r;
	char chain[4096];
	int n;

	cr_assert_gt(pid, 0);
	dump_text(pid, &r, NULL, NULL);
	cr_assert_eq(r.status, 0, "%s", r.err);
	n = parse_thread(r.out, pid, frames, MAXF);
	own_chain(frames, n, FX("fx_nocfi"), chain, sizeof(chain));
	cr_expect_str_eq(chain, "nocfi_leaf nocfi_middle main _start",
		"no CFI covers the fixture's code: frame pointers get us back:\n%s", r.out);
	run_result_free(&r);
	fx_stop(pid);
}

Test(dump, no_dwarf_names_from_symbol_tables, .timeout = 30)
{
	pid_t pid = fx_start(FX("fx_chain"), NULL);
	struct run_result r;
	char chain[4096];
	int n;

	cr_assert_gt(pid, 0);
	dump_text(pid, &r, "--no-dwarf", NULL);
	cr_assert_eq(r.status, 0, "%s", r.err);
	n = parse_thread(r.out, pid, frames, MAXF);
	own_chain(frames, n, FX("fx_chain"), chain, sizeof(chain));
	/* no inline frame, no source position: only what .symtab knows */
	cr_expect_str_eq(chain, "fx_leaf fx_compare fx_sort fx_outer main _start", "%s", r.out);
	for (int i = 0; i < n; i++)
		cr_expect_eq(frames[i].file[0], '\0', "no file:line without DWARF");
	cr_expect(strstr(r.out, "@@") == NULL, "version suffixes stripped:\n%s", r.out);
	run_result_free(&r);
	fx_stop(pid);
}

/* As root, a thread blocked in a system call shows its kernel stack above
 * the call, innermost first, names without addresses (the kernel hides
 * them): fx_kwait's reader the kernel's pipe read above read(), its main
 * thread the kernel's nanosleep; in JSON flagged as kernel frames;
 * --no-kernel leaves them out.  Skipped where /proc/TID/stack is not
 * readable. */
Test(dump, blocked_threads_kernel_stack_above_the_call, .timeout = 60)
{
	static const char *const pipe_names[] = { "anon_pipe_read+", "pipe_read+",
		"pipe_wait_readable+", "pipe_wait+" };
	pid_t pid = fx_start(FX("fx_kwait"), NULL), reader = 0;
	struct run_result r;
	char hdr[64], path[64], line[64];
	const char *t, *user, *kernel = NULL;

	cr_assert_gt(pid, 0);
	snprintf(path, sizeof(path), "/proc/%d/stack", (int)pid);
	if (td_read_text(AT_FDCWD, path, line, sizeof(line)) < 0) {
		fx_stop(pid);
		cr_skip_test("/proc/PID/stack is not readable: it needs CAP_SYS_ADMIN");
	}
	cr_assert(wait_all_state(pid, 'S', TEST_PATIENCE_MS), "fx_kwait's threads did not block");
	for (pid_t tids[4]; !reader;) {
		int n = task_list(pid, tids, 4);

		for (int i = 0; i < n; i++)
			if (tids[i] != pid)
				reader = tids[i];
	}
	dump_text(pid, &r, NULL, NULL);
	cr_assert_eq(r.status, 0, "%s", r.err);
	snprintf(hdr, sizeof(hdr), "thread %d (", (int)reader);
	t = strstr(r.out, hdr);
	cr_assert(t, "%s", r.out);
	user = strstr(t, " fx_kwait_read at ");
	for (size_t i = 0; i < sizeof(pipe_names) / sizeof(*pipe_names) && !kernel; i++)
		kernel = strstr(t, pipe_names[i]);
	cr_assert(user && kernel, "%s", r.out);
	cr_expect(kernel < user && strstr(kernel, " in [kernel]\n") < user,
		"the kernel's frames above the call:\n%s", r.out);
	cr_expect(strstr(t, "  #0                      "), "#0 a kernel frame:\n%s", r.out);
	cr_expect(strstr(r.out, "nanosleep+0x"), "%s", r.out);
	cr_expect(strstr(t, "  waiting in read on fd "), "%s", r.out);
	run_result_free(&r);

	dump_text(pid, &r, "--json", NULL);
	cr_expect(strstr(r.out, "\"kernel\": true, \"module\": \"[kernel]\""), "%s", r.out);
	run_result_free(&r);
	dump_text(pid, &r, "--no-kernel", NULL);
	cr_expect(!strstr(r.out, "[kernel]"), "%s", r.out);
	run_result_free(&r);
	fx_stop(pid);
}

/* A thread in uninterruptible sleep (fx_kwait's main thread waiting for
 * its vfork child: D), which no ptrace stop reaches: as root, its kernel
 * stack read before the stops is what the dump shows of it, and says
 * so; the reader beside it is dumped whole. */
Test(dump, uninterruptible_thread_shows_its_kernel_stack, .timeout = 60)
{
	pid_t pid = fx_start(FX("fx_kwait"), "vfork");
	struct run_result r;
	char hdr[64], path[64], line[64];
	const char *t;

	cr_assert_gt(pid, 0);
	snprintf(path, sizeof(path), "/proc/%d/stack", (int)pid);
	if (td_read_text(AT_FDCWD, path, line, sizeof(line)) < 0) {
		fx_stop(pid);
		cr_skip_test("/proc/PID/stack is not readable: it needs CAP_SYS_ADMIN");
	}
	for (int i = 0; i < TEST_PATIENCE_MS / 10 && task_state(pid, pid) != 'D'; i++)
		usleep(10000);
	cr_assert_eq(task_state(pid, pid), 'D', "the main thread waits for its vfork child");
	dump_text(pid, &r, NULL, NULL);
	snprintf(hdr, sizeof(hdr), "thread %d (fx_kwait) D\n", (int)pid);
	t = strstr(r.out, hdr);
	cr_assert(t, "%s", r.out);
	t += strlen(hdr);
	cr_expect(!strncmp(t, "  -- not stopped (uninterruptible sleep); its kernel stack:\n  #0  ",
			  64),
		"%s", r.out);
	cr_expect(strstr(t, "vfork+0x") && strstr(t, "vfork+0x") < strstr(t, "\nthread "),
		"the kernel's vfork below its call:\n%s", r.out);
	cr_expect(strstr(r.out, " fx_kwait_read at "), "%s", r.out);
	cr_expect(strstr(r.err, "they are shown with their kernel stack alone"), "%s", r.err);
	run_result_free(&r);
	fx_stop(pid);
}
