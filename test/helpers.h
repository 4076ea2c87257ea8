/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Test helpers: start fixtures, run tracerd, read /proc, skip for a
 * missing tool (helpers.c says more). */
#ifndef TD_TEST_HELPERS_H
#define TD_TEST_HELPERS_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#ifndef TD_BUILD_DIR
#define TD_BUILD_DIR "build"
#endif
#ifndef TD_FIXTURE_DIR
#define TD_FIXTURE_DIR "build/fixtures"
#endif
#ifndef TD_SOURCE_DIR
#define TD_SOURCE_DIR "."
#endif

/* A fixture built from test/fixtures/, and a golden file of test/golden/. */
#define FX(name) TD_FIXTURE_DIR "/" name
#define GOLD(f) TD_SOURCE_DIR "/test/golden/" f

/* How long a test waits for a condition before it calls it failed: a
 * bound for a hang, never an expectation of speed (the suite must pass on a
 * loaded machine). */
#define TEST_PATIENCE_MS 30000

/* Start a fixture (path, one optional argument) with /dev/null as its
 * stdin and stderr, and wait for its "ready" line.  Returns its pid, or -1. */
pid_t fx_start(const char *path, const char *arg1);
/* The same with a pipe as its stdin: *ret_stdin is the write end (the
 * caller closes it). */
pid_t fx_start_piped(const char *path, const char *arg1, int *ret_stdin);
/* Start a fixture that prints its objects' addresses ("NAME 0xADDR"
 * lines) up to a line "end" on its standard output (fx_locks, fx_owners),
 * with one optional argument; that text into text (len bytes at most).
 * Returns its pid; a fixture that ends first fails the test. */
pid_t fx_start_listing(const char *path, const char *arg1, char *text, size_t len);
/* The address of NAME in such a listing (the test fails without it). */
unsigned long long fx_listed_addr(const char *text, const char *name);
/* Kill and reap. */
void fx_stop(pid_t pid);

struct run_result {
	int status; /* exit code, or 128+signal */
	char *out, *err;
};
/* The debuginfo cache tracerd uses under test: the build's, never the
 * machine's (TRACERD_CACHE_DIR, unless already set). */
#define TEST_CACHE_DIR TD_BUILD_DIR "/test-cache"
/* For a child about to exec tracerd: its environment under test. */
void tracerd_test_env(void);

/* Run build/tracerd with argv (argv[0] ignored), capture both streams. */
int run_tracerd(struct run_result *r, const char *const *argv);
/* Same, in a child that first drops to uid/gid 65534. */
int run_tracerd_as_nobody(struct run_result *r, const char *const *argv);
void run_result_free(struct run_result *r);
/* tracerd dump --pid pid [extra1 [extra2]] (NULL: none), into r. */
void dump_text(pid_t pid, struct run_result *r, const char *extra1, const char *extra2);

/* One-letter state of a thread, '?' if gone. */
char task_state(pid_t pid, pid_t tid);
/* Wait until every thread of pid except those whose name contains
 * 'except' sleeps (S); false on timeout. */
bool wait_parked(pid_t pid, const char *except, int timeout_ms);
/* Wait until every thread of pid is in state c. */
bool wait_all_state(pid_t pid, char c, int timeout_ms);
/* Time the thread has run, from schedstat (ns). */
uint64_t task_runtime(pid_t pid, pid_t tid);
/* How many times the thread has been put on a CPU, from schedstat: a
 * thread that sleeps between ticks (the sampler) counts its ticks. */
uint64_t task_switches(pid_t pid, pid_t tid);
/* Is signo pending for the process (shared) or its thread tid? */
bool task_signal_pending(pid_t pid, pid_t tid, int signo);
/* The fixture's own progress counter, its global "fx_progress" (found in
 * /proc/PID/exe's symbol table, read through /proc/PID/mem): it moves only
 * while the fixture runs its own code.  UINT64_MAX if it cannot be read. */
uint64_t fx_counter(pid_t pid);
/* Poll cond(arg) every few milliseconds until it holds (true) or
 * timeout_ms pass (false). */
bool wait_for(bool (*cond)(void *arg), void *arg, int timeout_ms);
/* Build test/fixtures/fx_go into bin; the test is skipped without a Go
 * toolchain. */
void go_fixture_build(const char *bin);
/* The address nm gives the symbol name in file, 0 if none. */
unsigned long nm_addr(const char *file, const char *name);
/* Tids of pid (up to n). */
int task_list(pid_t pid, pid_t *tids, int n);
/* Tid of the thread of pid named name, 0 if none. */
pid_t task_by_name(pid_t pid, const char *name);

/* Parsed frames of one thread in tracerd dump's text output. */
struct pframe {
	char function[1024];
	char file[512];
	int line;
	char module[512];
	bool inlined;
};
/* The user frames of thread tid in text (a dump's; its kernel frames are
 * left out), up to n; -1 if the thread is absent. */
int parse_thread(const char *text, pid_t tid, struct pframe *frames, int n);
/* Names of frames whose module is 'module', in order, joined by ' '. */
void own_chain(const struct pframe *f, int n, const char *module, char *buf, size_t len);

/* Sum of the col-th space-separated field of each line of text after
 * skip_lines; col < 0: the last field (a report's table or folded
 * stacks). */
unsigned long long sum_column(const char *text, int skip_lines, int col);

/* Line number of the first line of path containing marker, 0 if none. */
int source_line(const char *path, const char *marker);

bool is_root(void);

/* The load of a busy machine, for tests that must hold on one: three busy
 * loops per core, each its own process, killed by load_stop() and with
 * the test process whatever way it ends (PR_SET_PDEATHSIG).  load_stop()
 * with no load started does nothing: a suite's .fini may call it. */
void load_start(void);
void load_stop(void);

/* What sh -c cmd writes to its standard output, whole (never NULL; the
 * caller frees it); *ret_status, when asked, as pclose() returns it. */
char *shell_output(const char *cmd, int *ret_status);
/* The whole of the file at path (the test fails if it cannot be read);
 * the caller frees it. */
char *read_all(const char *path);
/* Is the program name on the PATH?  (A test that needs it calls
 * need_command() instead.) */
bool have_command(const char *name);
/* The one way a test meets a missing tool: skip it (cr_skip_test) with
 * the reason, "no NAME on this machine (apt-get install PACKAGE)", unless
 * name is on the PATH.  Never returns when it is missing. */
void need_command(const char *name, const char *package);
/* Skip the test unless python is an executable CPython 3.11 (Debian 12's
 * python3, the version whose frames the tests lay out by hand). */
void need_python311(const char *python);
/* What node test/tools/html-data.js prints of a tracerd html page: its
 * embedded data read as a browser reads it, one fact per line (see the
 * script).  *ret_status as shell_output() gives it: non-zero when the
 * data cannot be read so (the output then says why). */
char *html_page_data(const char *page, int *ret_status);
/* What headless chromium prints of url with the options extra (the DOM,
 * with --dump-dom: the page's scripts have run); *ret_log gets its log,
 * where the page's console errors show.  The caller frees both. */
char *chromium_page(const char *url, const char *extra, char **ret_log);

#endif
