/* SPDX-License-Identifier: GPL-2.0-or-later */
/* tracerd record -- CMD follows the processes CMD starts (fork, vfork,
 * and what they exec into) as perf record -- CMD does, each a process of
 * its own in the report; --no-inherit records CMD alone and says how many
 * it left.  The truth is each process's own count of its CPU time
 * (test/fixtures/fx_forks.c prints it), and its own count of its forks. */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../common/td.h"
#include "../../daemon/daemon.h"
#include "record.h"

#define FORKS TD_FIXTURE_DIR "/fx_forks"

TestSuite(record_children, .init = record_setup, .fini = record_teardown, .timeout = 300);

/* What a process of the command said of itself: "cpu PID NS FUNCTION". */
struct selfcount {
	pid_t pid;
	double cpu_s;
	char fn[32];
};

static unsigned selfcounts(const char *out, struct selfcount *sc, unsigned max)
{
	unsigned n = 0;

	for (const char *l = out; l && *l && n < max;
		l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
		int pid;
		unsigned long long ns;

		if (sscanf(l, "cpu %d %llu %31s", &pid, &ns, sc[n].fn) == 3) {
			sc[n].pid = pid;
			sc[n].cpu_s = (double)ns / 1e9;
			n++;
		}
	}
	return n;
}

/* The report of this test's repository with up to four arguments (NULL
 * ends them); the caller frees it. */
static char *report(const char *a1, const char *a2, const char *a3, const char *a4)
{
	const char *argv[] = { "tracerd", "report", repo, a1, a2, a3, a4, NULL };
	struct run_result r;

	run_tracerd(&r, argv);
	cr_assert_eq(r.status, 0, "report: %s", r.err);
	free(r.err);
	return r.out;
}

/* The samples of process pid in a threads report, summed over its
 * threads; how many rows it has in *ret_rows.  Rows of other processes
 * are counted in *ret_others (may be NULL). */
static unsigned long pid_samples(const char *threads, pid_t pid, unsigned *ret_rows,
	unsigned *ret_others)
{
	unsigned long sum = 0;

	*ret_rows = 0;
	if (ret_others)
		*ret_others = 0;
	for (const char *l = threads; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
		unsigned tid, p;
		unsigned long n;
		char name[64];

		if (sscanf(l, "%u %u %63s %lu", &tid, &p, name, &n) != 4)
			continue;
		if ((pid_t)p == pid) {
			sum += n;
			++*ret_rows;
		} else if (ret_others) {
			++*ret_others;
		}
	}
	return sum;
}

/* Process sc has its own rows, as many samples as its CPU time says at
 * 99 Hz (the harness's tolerance: a loaded machine), and --pid shows it
 * alone, in the function it burned its time in. */
static void process_checked(const char *threads, const struct selfcount *sc)
{
	char pid[16], *alone;
	unsigned rows, others;
	unsigned long n = pid_samples(threads, sc->pid, &rows, NULL);
	double expect = sc->cpu_s * 99, share;

	cr_expect_geq(rows, 1, "process %d (%s) has no row of its own:\n%s", (int)sc->pid, sc->fn,
		threads);
	cr_expect(n >= expect / 2 && n <= expect * 2 + 2,
		"process %d: %lu samples for %.2f s of its CPU at 99 Hz", (int)sc->pid, n,
		sc->cpu_s);
	snprintf(pid, sizeof(pid), "%d", (int)sc->pid);
	alone = report("-f", "threads", "--pid", pid);
	pid_samples(alone, sc->pid, &rows, &others);
	cr_expect(rows >= 1 && others == 0, "--pid %s shows other processes:\n%s", pid, alone);
	free(alone);
	share = total_share(sc->pid, sc->fn, NULL);
	cr_expect_gt(share, 80.0, "process %d: %.1f%% of its samples in %s", (int)sc->pid, share,
		sc->fn);
}

/* Three forked workers and a vforked child that execs: each is recorded
 * from its first instruction as a process of its own, with the samples
 * its CPU time calls for; tracerd exits with the command's status. */
Test(record_children, forked_and_execed_children_are_processes_of_their_own)
{
	const char *argv[] = { "tracerd", "record", "-q", "-r", repo, "--", FORKS, "workers", "3",
		"400", NULL };
	struct selfcount sc[8];
	struct run_result r;
	unsigned n, execed = 0;
	char *threads;

	run_tracerd(&r, argv);
	cr_assert_eq(r.status, 5, "%s", r.err);
	n = selfcounts(r.out, sc, TD_ARRAY_SIZE(sc));
	cr_assert_eq(n, 5, "the fixture's processes said: %s", r.out);
	cr_expect(strstr(r.err, "children     4 processes followed\n"), "%s", r.err);
	threads = report("-f", "threads", NULL, NULL);
	for (unsigned i = 0; i < n; i++) {
		process_checked(threads, &sc[i]);
		execed += !strcmp(sc[i].fn, "after_exec_burn");
	}
	cr_expect_eq(execed, 1);
	free(threads);
	/* each child's command line, as it runs after its exec */
	threads = report("-f", "info", NULL, NULL);
	cr_expect(strstr(threads, "/fx_forks after 400\n"), "%s", threads);
	free(threads);
	cr_expect_eq(verify_status(), 0);
	run_result_free(&r);
}

/* --no-inherit: the command alone, and one line says how many it left. */
Test(record_children, no_inherit_records_the_command_alone_and_says_so)
{
	const char *argv[] = { "tracerd", "record", "-q", "-r", repo, "--no-inherit", "--", FORKS,
		"workers", "2", "300", NULL };
	const char *with_pid[] = { "tracerd", "record", "-q", "-r", repo, "--no-inherit", "--pid",
		"1", NULL };
	struct selfcount sc[8];
	struct run_result r;
	unsigned n, rows, others;
	char *threads;

	run_tracerd(&r, argv);
	cr_assert_eq(r.status, 5, "%s", r.err);
	n = selfcounts(r.out, sc, TD_ARRAY_SIZE(sc));
	cr_assert_eq(n, 4, "the fixture's processes said: %s", r.out);
	cr_expect(strstr(r.err, "3 not recorded (--no-inherit)"), "%s", r.err);
	threads = report("-f", "threads", NULL, NULL);
	for (unsigned i = 0; i < n; i++) {
		pid_samples(threads, sc[i].pid, &rows, &others);
		if (!strcmp(sc[i].fn, "parent_burn"))
			cr_expect(rows == 1 && others == 0, "not the command alone:\n%s", threads);
	}
	free(threads);
	run_result_free(&r);
	run_tracerd(&r, with_pid);
	cr_expect_eq(r.status, 1, "--no-inherit with --pid: %s", r.err);
	run_result_free(&r);
}

/* sh -c 'prog; prog': the shell's children one after the other, each its
 * own process, each in its own function. */
Test(record_children, a_shells_sequential_children)
{
	const char *argv[] = { "tracerd", "record", "-q", "-r", repo, "--", "sh", "-c",
		FORKS " after 300; " FORKS " after 300", NULL };
	struct selfcount sc[4];
	struct run_result r;
	char *threads;

	run_tracerd(&r, argv);
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_assert_eq(selfcounts(r.out, sc, TD_ARRAY_SIZE(sc)), 2, "%s", r.out);
	cr_expect_neq(sc[0].pid, sc[1].pid);
	threads = report("-f", "threads", NULL, NULL);
	process_checked(threads, &sc[0]);
	process_checked(threads, &sc[1]);
	free(threads);
	run_result_free(&r);
}

/* Many children, more at once than tracerd follows: the ones past the
 * bound are let go (counted, said once), every one is followed or
 * counted, none is left stopped (the fixture waits for each), and the
 * recording ends with the tree. */
Test(record_children, many_children_are_bounded_and_none_is_left_stopped)
{
	const char *argv[] = { "tracerd", "record", "-q", "-r", repo, "--", FORKS, "bomb", "150",
		NULL };
	unsigned long long followed = 0, left = 0;
	struct run_result r;
	const char *line;

	run_tracerd(&r, argv);
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_expect(strstr(r.out, "end\n"), "%s", r.out);
	line = strstr(r.err, "  children     ");
	cr_assert(line, "%s", r.err);
	cr_assert_eq(sscanf(line, "  children     %llu processes followed; %llu not recorded",
			     &followed, &left),
		2, "%s", r.err);
	/* 300 forks: the 150 sequential ones all followed, of the 150 at
	 * once those past the bound (64 processes with the fixture) not */
	cr_expect_eq(followed + left, 300, "%s", r.err);
	cr_expect_geq(followed, 150, "%s", r.err);
	cr_expect_geq(left, 150 - (REC_MAX_PROCS - 1), "%s", r.err);
	cr_expect_eq(strstr(line + 1, "not recorded"), strstr(line, "not recorded"),
		"said more than once: %s", r.err);
	run_result_free(&r);
}

/* Wall mode samples each of the many children blocked together at every
 * tick, and they exit together: each is held at its exit until the writer
 * has read its mappings (as any target's leader), so their stacks are
 * whole, not "maps were not read". */
Test(record_children, many_children_exiting_together_keep_their_stacks)
{
	const char *argv[] = { "tracerd", "record", "-q", "-r", repo, "--mode", "wall", "--",
		FORKS, "bomb", "60", NULL };
	unsigned long long written = 0, partial = 0;
	struct run_result r;
	const char *line;

	run_tracerd(&r, argv);
	cr_assert_eq(r.status, 0, "%s", r.err);
	line = strstr(r.err, "  samples      ");
	cr_assert(line && sscanf(line, "  samples      %*u taken, %llu written", &written) == 1,
		"%s", r.err);
	line = strstr(r.err, "  lost         ");
	cr_assert(line && sscanf(line, "  lost         %*u ring full, %*u did not stop in time, "
					"%*u events; %llu stacks partial",
				  &partial) == 1,
		"%s", r.err);
	cr_expect_gt(written, 0);
	/* a hold ends after 2 s whatever the writer did: a loaded machine
	 * may leave a few */
	cr_expect_leq(partial * 10, written, "%llu of %llu stacks partial: %s", partial, written,
		r.err);
	run_result_free(&r);
}

/* The recording ends first (-d): the processes of the tree go on, none
 * left stopped (the workers finish their CPU time and say so), and the
 * command's status is still tracerd's. */
Test(record_children, children_run_on_when_the_recording_ends_first)
{
	const char *argv[] = { "tracerd", "record", "-q", "-r", repo, "-d", "1s", "--", FORKS,
		"workers", "2", "2500", NULL };
	struct selfcount sc[8];
	struct run_result r;

	run_tracerd(&r, argv);
	cr_assert_eq(r.status, 5, "%s", r.err);
	cr_expect_eq(selfcounts(r.out, sc, TD_ARRAY_SIZE(sc)), 4, "%s", r.out);
	cr_expect(strstr(r.out, "end\n"), "%s", r.out);
	run_result_free(&r);
}

/* go run: the program go builds and starts is recorded, not only the go
 * tool (the first user's complaint). */
Test(record_children, go_run_records_the_program_it_starts)
{
	static const char prog[] =
		"package main\n"
		"\n"
		"import (\n\t\"fmt\"\n\t\"os\"\n\t\"syscall\"\n)\n"
		"\n"
		"var sink int\n"
		"\n"
		"//go:noinline\n"
		"func spin() {\n"
		"\tvar ru syscall.Rusage\n"
		"\tfor {\n"
		"\t\tfor i := 0; i < 10000000; i++ {\n\t\t\tsink += i * i % 7\n\t\t}\n"
		"\t\tsyscall.Getrusage(syscall.RUSAGE_SELF, &ru)\n"
		"\t\tns := (ru.Utime.Sec+ru.Stime.Sec)*1000000000 + (ru.Utime.Usec+ru.Stime.Usec)*1000\n"
		"\t\tif ns >= 800000000 {\n"
		"\t\t\tfmt.Printf(\"cpu %d %d main.spin\\n\", os.Getpid(), ns)\n\t\t\treturn\n\t\t}\n"
		"\t}\n"
		"}\n"
		"\n"
		"func main() { spin() }\n";
	char dir[96], file[128];
	const char *argv[] = { "tracerd", "record", "-q", "-r", repo, "--", "go", "run", file, NULL };
	struct selfcount sc[2];
	struct run_result r;
	unsigned rows;
	unsigned long n;
	char *threads;
	FILE *f;

	need_command("go", "golang-go");
	snprintf(dir, sizeof(dir), "%s.go", repo);
	snprintf(file, sizeof(file), "%s/main.go", dir);
	cr_assert_eq(mkdir(dir, 0700), 0);
	f = fopen(file, "w");
	cr_assert(f);
	fputs(prog, f);
	fclose(f);
	setenv("GOCACHE", "/tmp/tracerd-test-gocache", 0);
	run_tracerd(&r, argv);
	unlink(file);
	rmdir(dir);
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_assert_eq(selfcounts(r.out, sc, TD_ARRAY_SIZE(sc)), 1, "%s", r.out);
	threads = report("-f", "threads", NULL, NULL);
	n = pid_samples(threads, sc[0].pid, &rows, NULL);
	cr_expect(n >= sc[0].cpu_s * 99 / 2 && n <= sc[0].cpu_s * 99 * 2 + 2,
		"the program: %lu samples for %.2f s of its CPU at 99 Hz:\n%s", n, sc[0].cpu_s,
		threads);
	free(threads);
	run_result_free(&r);
}
