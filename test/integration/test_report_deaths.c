/* SPDX-License-Identifier: GPL-2.0-or-later */
/* tracerd report of an emergency dump (the repository of a process that
 * died): the death leads every format, with its cause and every thread's
 * stack, and the report is restricted to the process that died. */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <ctype.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../chunkfmt/chunkfmt-internal.h"
#include "../helpers.h"
#include "../tools/synth.h"

/* The repository tracerd service leaves when 4242 dies (synth_death: two
 * processes, the death chunk, the dump of 4242's death into dump), and
 * after the dump 5252 going on for 5 ticks into a new chunk. */
static void death_repo(const char *dir, enum synth_death how, char *dump, size_t len)
{
	struct repo_opts o = { .target_pid = 4242 };
	struct repo *r;
	struct chunk_writer *w;
	struct chunk_report rep;
	uint64_t t = td_now_ns() - 1000000000ull;
	uint32_t tick, th, f, l;

	cr_assert_eq(repo_open(dir, &o, &r, NULL), 0);
	cr_assert_eq(synth_death(r, how, t, dump, len), 0);
	/* both chunks whole, every row's thread and stack defined before it
	 * in its own chunk */
	cr_assert_eq(chunk_read_file(dump, NULL, NULL, &rep), 0);
	cr_expect_eq(rep.chunks, 2);
	cr_expect_eq(rep.chunks_finished, 2);
	cr_expect_eq(rep.blocks_bad + rep.seq_gaps + rep.unknown_refs, 0, "%s", rep.first_damage);

	/* the bystander lives on */
	cr_assert_not_null(w = repo_writer(r));
	f = chunk_writer_function(w, "bystander_tick", NULL, "victim.c", 138);
	l = chunk_writer_location(w, 0, 0x401600, (struct chunk_line[]){ { f, 140, 0 } }, 1);
	tick = chunk_writer_stack(w, &l, 1);
	th = chunk_writer_thread(w, 5252, 5252, "bystander");
	for (unsigned k = 0; k < 5; k++)
		cr_assert_eq(chunk_writer_sample(w, t + 300000000 + 10000000 * k, th,
				     TCF_STATE_ONCPU, tick, NULL, 0),
			0);
	cr_assert_eq(repo_close(r, TCF_END_STOP), 0);
}

/* Times of day in text made "@TIME@": they are the test's own. */
static void mask_times(char *s)
{
	for (char *p = s; strnlen(p, 24) >= 20; p++) {
		size_t n = 0;

		if (!(isdigit((unsigned char)p[0]) && isdigit((unsigned char)p[3]) && p[4] == '-' &&
			    p[10] == 'T' && p[13] == ':' && p[16] == ':'))
			continue;
		n = 19;
		if (p[n] == '.' && strnlen(p, 24) == 24)
			n += 4;
		if (p[n] != 'Z')
			continue;
		memcpy(p, "@TIME@", 6);
		memmove(p + 6, p + n + 1, strlen(p + n + 1) + 1);
		p += 5;
	}
}

static bool starts(const char *s, const char *prefix)
{
	return !strncmp(s, prefix, strlen(prefix));
}

/* tracerd's output with its times masked (exit status in *ret_status). */
static char *run_masked(const char *const *argv, int *ret_status)
{
	struct run_result r;
	char *out;

	run_tracerd(&r, argv);
	*ret_status = r.status;
	if (r.status)
		cr_log_error("%s", r.err);
	out = strdup(r.out);
	run_result_free(&r);
	mask_times(out);
	return out;
}

/* An OOM kill, as it happens (a dump written now into a repository):
 * the default report leads with the death (cause, time, every thread's
 * stack), says it is restricted, and counts only 4242's samples, as the
 * golden dump's does but for the times; the other formats are restricted
 * alike; the repository itself does not read the dump as one of its
 * chunks. */
Test(report_deaths, emergency_dump_leads_with_the_death)
{
	char dir[] = "/tmp/tracerd-death-XXXXXX", dump[4300], repo[64];
	const char *top[] = { "tracerd", "report", dump, NULL };
	const char *threads[] = { "tracerd", "report", dump, "-f", "threads", NULL };
	const char *folded[] = { "tracerd", "report", dump, "-f", "folded", NULL };
	const char *info[] = { "tracerd", "report", dump, "-f", "info", NULL };
	const char *other[] = { "tracerd", "report", dump, "--pid", "5252", NULL };
	const char *whole[] = { "tracerd", "report", repo, NULL };
	char *out, *want, cmd[600];
	int st;

	cr_assert_not_null(mkdtemp(dir));
	snprintf(repo, sizeof(repo), "%s/repo", dir);
	death_repo(repo, SYNTH_DEATH_OOM, dump, sizeof(dump));

	out = run_masked(top, &st);
	cr_assert_eq(st, 0);
	want = read_all(GOLD("report/emergency-oom.top.txt"));
	mask_times(want);
	cr_expect_str_eq(out, want, "differs from test/golden/report/emergency-oom.top.txt");
	free(want);
	free(out);

	out = run_masked(threads, &st);
	cr_expect_eq(st, 0);
	cr_expect(starts(out, "pid 4242 (victim) died: "), "%s", out);
	cr_expect(strstr(out, "    4242     4242  victim") && strstr(out, "    4243     4242  io-worker"),
		"%s", out);
	cr_expect_not(strstr(out, "5252  bystander"), "only the dead process's threads: %s", out);
	free(out);

	out = run_masked(folded, &st);
	cr_expect_eq(st, 0);
	cr_expect_eq(sum_column(out, 0, -1), 40, "4242's samples: %s", out);
	cr_expect_not(strstr(out, "bystander_tick"), "%s", out);
	cr_expect_not(strstr(out, "died"), "folded stays folded: %s", out);
	free(out);

	out = run_masked(info, &st);
	cr_expect_eq(st, 0);
	cr_expect(starts(out, "pid 4242 (victim) died: killed by signal 9 (Killed) \u2014 by the OOM "
			      "killer\n"),
		"%s", out);
	cr_expect(strstr(out, "exit:      pid 4242 killed by signal 9 (Killed) by the OOM killer at "),
		"%s", out);
	cr_expect(strstr(out, "samples:   40 (of 60 read)"), "%s", out);
	free(out);

	/* --pid chooses: the death still leads, the profile is 5252's */
	out = run_masked(other, &st);
	cr_expect_eq(st, 0);
	cr_expect(starts(out, "pid 4242 (victim) died: "), "%s", out);
	cr_expect_not(strstr(out, "restricted"), "%s", out);
	cr_expect(strstr(out, "\n20 samples\n") && strstr(out, "bystander_tick"), "%s", out);
	free(out);

	/* the repository: its three chunks, every process, no death section
	 * (the dump sits in it but is not one of its chunks) */
	out = run_masked(whole, &st);
	cr_expect_eq(st, 0);
	cr_expect(starts(out, "mode: cpu"), "%s", out);
	cr_expect(strstr(out, "\n65 samples\n"), "40 + 20 + 5 after the death: %s", out);
	free(out);

	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	cr_expect_eq(system(cmd), 0);
}

/* A SIGSEGV: the cause with its fault address, the crashing thread's stack
 * first though its row came second, and a thread whose stack could not be
 * taken said so. */
Test(report_deaths, emergency_dump_of_a_crash)
{
	char dir[] = "/tmp/tracerd-death-XXXXXX", dump[4300], repo[64];
	const char *top[] = { "tracerd", "report", dump, "-f", "tree", NULL };
	const char *victim, *worker, *idle, *samples;
	char *out, cmd[600];
	int st;

	cr_assert_not_null(mkdtemp(dir));
	snprintf(repo, sizeof(repo), "%s/repo", dir);
	death_repo(repo, SYNTH_DEATH_SEGV, dump, sizeof(dump));
	out = run_masked(top, &st);
	cr_assert_eq(st, 0);
	cr_expect(starts(out, "pid 4242 (victim) died: killed by signal 11 (Segmentation fault) at "
			      "address 0x10\n  time: @TIME@\n"),
		"%s", out);
	cr_expect_not(strstr(out, "OOM"), "%s", out);
	victim = strstr(out, "  thread 4242 (victim), the crashing thread:\n    #0   alloc_buffer at "
			     "victim.c:77 in victim\n    #1   handle_request at victim.c:52 in victim\n");
	worker = strstr(out, "  thread 4243 (io-worker):\n    #0   read_block at victim.c:101 in "
			     "victim\n");
	idle = strstr(out, "  thread 4244 (idle): no stack taken\n");
	samples = strstr(out, "40 samples;");
	cr_expect(victim && worker && idle && samples, "%s", out);
	cr_expect(victim < worker && worker < idle && idle < samples, "the crashing thread first: %s",
		out);
	cr_expect(strstr(out, "report restricted to pid 4242, the process that died (--pid to "
			      "choose)\n"),
		"%s", out);
	free(out);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	cr_expect_eq(system(cmd), 0);
}
