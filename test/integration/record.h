/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The harness of the record_* suites, defined in test_record.c: each test
 * records a fixture into a repository of its own with tracerd running in
 * the background, and reads back what the repository holds. */
#ifndef TD_TEST_RECORD_H
#define TD_TEST_RECORD_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "../helpers.h"

#define TRACERD TD_BUILD_DIR "/tracerd"

/* This test's repository (not made: tracerd makes it) and the file that
 * gets tracerd_start()'s output; record_setup() names both, the suite's
 * .init, and record_teardown() removes both, its .fini. */
extern char repo[64], errfile[96];
void record_setup(void);
void record_teardown(void);

/* tracerd record --pid pid -r repo -q a1 a2 a3 (NULL ends them) in the
 * background, its output to errfile; returns once it traces pid. */
pid_t tracerd_start(pid_t pid, const char *a1, const char *a2, const char *a3);
/* Reap tracerd: its exit code, or 128+signal. */
int tracerd_wait(pid_t t);
/* Ctrl-C: tracerd stops recording, detaches and exits; its exit code. */
int tracerd_stop(pid_t t);
/* The process tracing pid, 0 if none (-1 if pid is gone). */
pid_t tracer_of(pid_t pid);
/* The file at path, whole up to 64 KiB, in a static buffer ("" if it
 * cannot be read): errfile, mostly. */
char *slurp(const char *path);
/* fork + exec a fixture with pipes for stdin and stdout; waits for its
 * "ready".  *ret_in, *ret_out: the parent's ends. */
pid_t spawn(const char *path, const char *arg1, int *ret_in, int *ret_out);

/* What a repository holds, as the tests count it: samples by the
 * fixture's own innermost function, whole and cut stacks, and events. */
struct found {
	uint64_t samples, thread_start, thread_exit, exec, exits, crashes;
	uint64_t leaf_a, leaf_b, before, after, after_with_exec_seen, plugin, main_spin;
	uint64_t reach_main, cut, renames;
	uint64_t whole_after, cut_after; /* after the first stack that reached main */
	uint64_t started_twice; /* THREAD_START events for a tid already started */
	uint64_t unwound; /* stacks with a frame of the program, not a note of none */
	uint64_t since_exec; /* samples after an exec event */
	char renamed_to[32];
	bool exec_seen;
	int crash_signo;
	char crash_chain[1024];
	unsigned chunks, finished, end_target_exit;
};
/* What repo holds now (also while tracerd writes it); *ret_files: its
 * chunks. */
struct found scan_repo_now(int *ret_files);
/* What repo holds; the test fails if it holds no chunk. */
struct found scan_repo(void);
/* Wait until what tracerd has written so far satisfies cond: a recording
 * lasts as long as the test needs, not a guessed duration.  false after
 * a bound meant for a hang. */
bool repo_until(bool (*cond)(const struct found *f));
/* Conditions for repo_until() that more than one file waits for. */
bool has_samples(const struct found *f);
bool samples_600(const struct found *f);

/* tracerd verify repo's exit code. */
int verify_status(void);
/* The recording in repo as pprof, as go tool pprof -raw prints it (its
 * names alone: no binary is looked for); the caller frees it. */
char *pprof_raw(void);
/* The samples and share of thread name in a threads report; false if it
 * is not listed. */
bool thread_share(const char *out, const char *name, unsigned long *ret_n, double *ret_pct);

/* A fixture seen running: its progress counter (fx_counter()) and main
 * thread's run time, to see them move again with runs_again(). */
struct running {
	pid_t fx;
	uint64_t counter, runtime;
};
/* Has the fixture r->fx made progress and used CPU since r, and does it
 * run?  (For wait_for().) */
bool runs_again(void *arg);

/* Read a fixture's report from out into text (len bytes at most) up to its
 * line "end", waiting at most TEST_PATIENCE_MS for each piece; false if it
 * did not come whole. */
bool fx_read_report(int out, char *text, size_t len);

/* total% of the first top row of function fn in a report of this test's
 * repository for tid alone, with extra (an option such as
 * "--state=stopped") if not NULL; -1 if fn has no row. */
double total_share(pid_t tid, const char *fn, const char *extra);

#endif
