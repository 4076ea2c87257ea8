/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The summary adds up: every period a recording took ("samples N taken")
 * is either written ("M written") or counted under a named reason on the
 * "not written" line, in both modes and with both captures, on fx_contend
 * (threads blocked on locks their owners hold, owners running and
 * sleeping, threads woken and waiting for a CPU): what the writer leaves
 * out there (a lock owner's stack for the waits alone, a runnable thread
 * before any stack of it) is where the two once parted with no counter
 * to say why. */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "record.h"

TestSuite(record_counts, .init = record_setup, .fini = record_teardown, .timeout = 300);

/* Record fx_contend in mode (capture: an option, or NULL for the default)
 * and check the summary's counts. */
static void counts_add_up(const char *mode, const char *capture)
{
	unsigned long long taken = 0, written = 0, runnable = 0, hurried = 0, refused = 0;
	pid_t fx = fx_start(FX("fx_contend"), NULL), t;
	const char *err, *line;

	cr_assert_gt(fx, 0);
	t = tracerd_start(fx, mode, "-F999", capture);
	cr_expect(repo_until(samples_600), "recording");
	cr_assert_eq(tracerd_stop(t), 0, "%s", slurp(errfile));
	fx_stop(fx);
	err = slurp(errfile);
	line = strstr(err, "  samples      ");
	cr_assert(line && sscanf(line, "  samples      %llu taken, %llu written", &taken,
				  &written) == 2,
		"%s", err);
	line = strstr(err, "  not written  ");
	if (line)
		cr_assert(sscanf(line,
				  "  not written  %llu waiting for a CPU before any stack of the "
				  "thread was seen, %llu dropped at a second stop request, %llu "
				  "refused by the chunk writer",
				  &runnable, &hurried, &refused) == 3,
			"%s", err);
	cr_expect_gt(written, 0, "%s", err);
	cr_expect_eq(taken, written + runnable + hurried + refused,
		"%llu taken, %llu written, %llu + %llu + %llu not written: %s", taken, written,
		runnable, hurried, refused, err);
	/* a clean stop drops nothing, and the disk did not fail */
	cr_expect_eq(hurried + refused, 0, "%s", err);
}

/* the default capture: perf where permitted (here, the kernel's samples
 * and switches, owners' early samples), else ptrace */
Test(record_counts, wall_mode_default_capture_adds_up)
{
	counts_add_up("--mode=wall", NULL);
}

Test(record_counts, wall_mode_ptrace_capture_adds_up)
{
	counts_add_up("--mode=wall", "--capture=ptrace");
}

Test(record_counts, cpu_mode_default_capture_adds_up)
{
	counts_add_up("--mode=cpu", NULL);
}

Test(record_counts, cpu_mode_ptrace_capture_adds_up)
{
	counts_add_up("--mode=cpu", "--capture=ptrace");
}
