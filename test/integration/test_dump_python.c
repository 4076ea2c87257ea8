/* SPDX-License-Identifier: GPL-2.0-or-later */
/* One wait, one kind: a CPython thread waiting for the GIL is of kind gil
 * in `tracerd dump` as in the recorder's waits report.  Debian's stripped
 * python3.11 names no take_gil on the stack, so both must tell the GIL
 * by its condition variables' addresses (wait_python_gil); before, the
 * dump said condvar where the report said gil.  The truth is the program
 * (fx_python.py gil): its two worker threads do nothing but compute in
 * settle_accounts, so whatever they block on is the GIL. */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../common/td.h"
#include "record.h"

TestSuite(dump_python, .init = record_setup, .fini = record_teardown, .timeout = 300);

#define PYTHON "/usr/bin/python3"
#define SCRIPT TD_SOURCE_DIR "/test/fixtures/fx_python.py"
#define MAX_WORKERS 8

static bool samples_300(const struct found *f)
{
	return f->samples >= 300;
}

/* The kind of thread tid's waits in the waits report (JSON), by the
 * "threads" of each wait site: "gil" if every site of tid says gil, the
 * first other kind otherwise, "" if tid has none. */
static void report_kind(const char *json, unsigned tid, char *kind, size_t len)
{
	char want[48];

	kind[0] = '\0';
	snprintf(want, sizeof(want), "{\"tid\":%u,", tid);
	for (const char *l = json; l && *l; l = strchr(l, '\n'), l = l ? l + 1 : NULL) {
		const char *end = strchrnul(l, '\n'), *t = strstr(l, "\"threads\":[");
		char k[32];

		if (!t || t > end || !memmem(t, (size_t)(end - t), want, strlen(want)) ||
			sscanf(l, "{\"kind\":\"%31[^\"]\"", k) != 1)
			continue;
		if (!kind[0] || strcmp(k, "gil"))
			snprintf(kind, len, "%s", k);
	}
}

/* One dump of pid (JSON): each worker thread (its Python frames hold
 * tally_thread or audit_thread) into tids; those blocked in a wait into waiting,
 * with the dump's kind.  Returns the number of workers seen. */
static unsigned dump_workers(pid_t pid, unsigned *tids, unsigned *waiting,
	char kinds[][32], unsigned *nwaiting)
{
	char p[32];
	const char *argv[] = { "tracerd", "dump", "--pid", p, "--json", NULL };
	struct run_result r;
	unsigned n = 0;

	*nwaiting = 0;
	snprintf(p, sizeof(p), "%d", (int)pid);
	run_tracerd(&r, argv);
	cr_assert_eq(r.status, 0, "%s", r.err);
	for (const char *th = strstr(r.out, "{\"tid\": "); th && n < MAX_WORKERS;) {
		const char *next = strstr(th + 1, "{\"tid\": "),
			   *end = next ? next : th + strlen(th), *w;
		size_t len = (size_t)(end - th);
		unsigned tid;

		char state = 0;

		if (sscanf(th, "{\"tid\": %u, \"name\": \"%*[^\"]\", \"state\": \"%c", &tid, &state) ==
				2 &&
			(memmem(th, len, "\"function\": \"tally_thread\"", 26) ||
				memmem(th, len, "\"function\": \"audit_thread\"", 26))) {
			tids[n++] = tid;
			w = memmem(th, len, "\"wait\": {\"kind\": \"", 18);
			/* blocked (S, as read before the stop); one in a
			 * system call that does not wait (glibc's futex wakes:
			 * __lll_lock_wake, futex_wake) is no wait of its kind */
			if (w && state == 'S' && !memmem(th, len, "_wake", 5) &&
				sscanf(w + 18, "%31[^\"]", kinds[*nwaiting]) == 1)
				waiting[(*nwaiting)++] = tid;
		}
		th = next;
	}
	run_result_free(&r);
	return n;
}

/* Record in wall mode (the waits report), then dump the same process
 * until a dump finds a worker blocked (one of the two waits for the GIL
 * nearly all the time): every worker the dumps see waiting is of kind
 * gil, and so is it in the report. */
Test(dump_python, gil_wait_is_gil_in_dump_and_report)
{
	const char *rep[] = {
		"tracerd", "report", repo, "--format", "waits", "--json", "--limit", "0", NULL };
	unsigned tids[MAX_WORKERS], waiting[MAX_WORKERS], seen = 0, dumps = 0;
	char kinds[MAX_WORKERS][32], rkind[32];
	struct run_result r;
	uint64_t t0;
	pid_t fx, t;

	need_python311(PYTHON);
	setenv("FX_PYTHON", "gil", 1);
	fx = fx_start(PYTHON, SCRIPT);
	cr_assert_gt(fx, 0, "fx_python.py did not start");
	t = tracerd_start(fx, "--mode=wall", "-F", "199");
	cr_expect(repo_until(samples_300));
	cr_expect_eq(tracerd_stop(t), 0, "%s", slurp(errfile));
	run_tracerd(&r, rep);
	cr_assert_eq(r.status, 0, "%s", r.err);

	t0 = td_now_ns();
	while (seen < 4 && td_now_ns() - t0 < (uint64_t)TEST_PATIENCE_MS * 1000000) {
		unsigned nw, n = dump_workers(fx, tids, waiting, kinds, &nw);

		dumps++;
		cr_assert_eq(n, 2, "dump %u found %u worker threads, not 2", dumps, n);
		for (unsigned i = 0; i < nw; i++, seen++) {
			cr_expect_str_eq(kinds[i], "gil", "dump %u: worker %u waits as %s", dumps,
				waiting[i], kinds[i]);
			report_kind(r.out, waiting[i], rkind, sizeof(rkind));
			cr_expect_str_eq(rkind, "gil", "the report has worker %u wait as '%s':\n%.3000s",
				waiting[i], rkind, r.out);
		}
	}
	cr_expect_geq(seen, 4, "%u dumps saw %u workers waiting", dumps, seen);
	run_result_free(&r);
	fx_stop(fx);
}
