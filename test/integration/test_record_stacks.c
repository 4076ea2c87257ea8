/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Stack copies that fit, with perf capture: hot code below a 20 KiB and a
 * 40 KiB frame (fx_bigframe) is never cut, from the first sample on, in
 * cpu mode at 99 and 999 Hz and in wall mode, idle and loaded; below an
 * 80 KiB frame, deeper than the kernel copies for a perf sample, the
 * stack ends in a placeholder that says so, and the recording's summary
 * and the report's header count those samples. */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "record.h"

static void stacks_teardown(void)
{
	load_stop();
	record_teardown();
}

TestSuite(record_stacks, .init = record_setup, .fini = stacks_teardown, .timeout = 300);

static bool samples_400(const struct found *f)
{
	return f->samples >= 400;
}

/* fx_bigframe recorded with perf capture and a1, a2 until 400 samples:
 * every one of them whole. */
static void bigframe_whole(const char *a1, const char *a2)
{
	pid_t fx = fx_start(FX("fx_bigframe"), NULL), t;
	struct found f;
	const char *err;

	cr_assert_gt(fx, 0);
	t = tracerd_start(fx, "--capture=perf", a1, a2);
	cr_expect(repo_until(samples_400));
	cr_expect_eq(tracerd_stop(t), 0, "%s", slurp(errfile));
	err = slurp(errfile);
	f = scan_repo();
	fx_stop(fx);
	cr_expect_geq(f.samples, 400, "%s %s: %llu samples", a1 ? a1 : "", a2 ? a2 : "",
		(unsigned long long)f.samples);
	/* the copies start whole: not even the first samples are cut */
	cr_expect_eq(f.cut, 0, "%s %s: %llu of %llu stacks cut\n%s", a1 ? a1 : "",
		a2 ? a2 : "", (unsigned long long)f.cut, (unsigned long long)f.samples, err);
	cr_expect_null(strstr(err, "cut at the kernel's limit"), "%s", err);
}

Test(record_stacks, big_frames_whole_cpu_mode)
{
	bigframe_whole(NULL, NULL);
	bigframe_whole("-F", "999");
}

Test(record_stacks, big_frames_whole_wall_mode)
{
	bigframe_whole("--mode=wall", NULL);
}

Test(record_stacks, big_frames_whole_loaded)
{
	load_start();
	/* 999 Hz: a loaded machine leaves the spinners a few percent of a
	 * CPU, too little for 400 samples at 99 Hz within repo_until's bound */
	bigframe_whole("-F", "999");
	bigframe_whole("--mode=wall", NULL);
	load_stop();
}

/* Below an 80 KiB frame: what the kernel cannot copy is said, per stack
 * (its placeholder), in the summary and in the report's header; the
 * threads above 40 KiB and 20 KiB frames stay whole beside it. */
Test(record_stacks, deeper_than_the_kernel_copies_is_said)
{
	static const char placeholder[] = "[stack cut: deeper than the kernel's 64 KiB copy]";
	const char *argv[] = { "tracerd", "report", repo, "-f", "folded", NULL };
	const char *top[] = { "tracerd", "report", repo, "-f", "top", NULL };
	pid_t fx = fx_start(FX("fx_bigframe"), "80"), t;
	struct run_result r;
	unsigned long long cut80 = 0, other = 0, whole = 0;
	const char *err;
	char *line, *save = NULL;

	cr_assert_gt(fx, 0);
	t = tracerd_start(fx, "--capture=perf", NULL, NULL);
	cr_expect(repo_until(samples_400));
	cr_expect_eq(tracerd_stop(t), 0, "%s", slurp(errfile));
	fx_stop(fx);
	err = slurp(errfile);
	cr_expect_not_null(strstr(err, "cut at the kernel's limit of 65528 bytes"), "%s", err);

	run_tracerd(&r, argv);
	cr_assert_eq(r.status, 0, "%s", r.err);
	for (line = strtok_r(r.out, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		const char *sp = strrchr(line, ' ');
		unsigned long long n = sp ? strtoull(sp + 1, NULL, 10) : 0;

		if (!strncmp(line, placeholder, strlen(placeholder)) && strstr(line, "frame_80k"))
			cut80 += n;
		else if (strstr(line, "[stack cut"))
			other += n;
		else if (strstr(line, "start_thread;worker;frame_"))
			whole += n;
	}
	run_result_free(&r);
	cr_expect_gt(cut80, 0, "the 80 KiB frame's samples end at the kernel's limit");
	cr_expect_eq(other, 0, "no other stack cut (%llu)", other);
	cr_expect_gt(whole, cut80, "the 20 and 40 KiB frames' threads whole: %llu", whole);

	run_tracerd(&r, top);
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_expect_not_null(strstr(r.out, "deeper than the kernel copies (64 KiB per perf sample)"),
		"%.400s", r.out);
	run_result_free(&r);
}
