/* tracerd report: golden outputs of every text format on a real recording
 * (a crash) and on the synthetic golden chunk; invariants; filters; errors. */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../helpers.h"

#define GOLD(f) TD_SOURCE_DIR "/test/golden/" f

static char *read_all(const char *path)
{
	FILE *f = fopen(path, "r");
	char *buf = NULL;
	size_t cap = 0;

	cr_assert_not_null(f, "missing %s", path);
	if (getdelim(&buf, &cap, '\0', f) < 0) {
		free(buf);
		buf = strdup("");
	}
	fclose(f);
	return buf;
}

static void golden(const char *file, const char *format, const char *extra)
{
	char in[512], want_path[512];
	const char *argv[] = { "tracerd", "report", in, "-f", format, extra, NULL };
	struct run_result r;
	char *want;

	snprintf(in, sizeof(in), GOLD("%s.tcf"), file);
	snprintf(want_path, sizeof(want_path), GOLD("report/%s.%s.txt"), file, format);
	run_tracerd(&r, argv);
	cr_assert_eq(r.status, 0, "%s", r.err);
	want = read_all(want_path);
	cr_expect_str_eq(r.out, want, "%s %s differs from %s", file, format, want_path);
	free(want);
	run_result_free(&r);
}

Test(report, golden_real_recording_with_a_crash)
{
	golden("rec-crash", "top", NULL);
	golden("rec-crash", "tree", NULL);
	golden("rec-crash", "folded", NULL);
	golden("rec-crash", "threads", NULL);
	golden("rec-crash", "info", NULL);
}

Test(report, golden_synthetic)
{
	golden("tcf-v1.0-small", "top", NULL);
	golden("tcf-v1.0-small", "tree", "--min-percent=5");
	golden("tcf-v1.0-small", "folded", NULL);
	golden("tcf-v1.0-small", "threads", NULL);
	golden("tcf-v1.0-small", "info", NULL);
}

/* Sum of the col-th space-separated field of each line after skip lines;
 * col < 0: the last field. */
static unsigned long long sum_column(const char *text, int skip_lines, int col)
{
	unsigned long long s = 0;
	int i = 0;

	for (const char *p = text; *p; i++) {
		const char *end = strchrnul(p, '\n');
		char line[256];

		snprintf(line, sizeof(line), "%.*s", (int)(end - p), p);
		if (i >= skip_lines && end > p) {
			if (col < 0) {
				/* lines can be long (deep C++ names): no copy */
				const char *q = end;

				while (q > p && q[-1] != ' ')
					q--;
				s += strtoull(q, NULL, 10);
			} else {
				char *save, *tok = strtok_r(line, " ", &save);

				for (int c = 0; tok && c < col; c++)
					tok = strtok_r(NULL, " ", &save);
				if (tok)
					s += strtoull(tok, NULL, 10);
			}
		}
		p = *end ? end + 1 : end;
	}
	return s;
}

Test(report, invariants_and_filters)
{
	const char *top[] = { "tracerd", "report", GOLD("tcf-v1.0-small.tcf"), "--limit", "0", NULL };
	const char *fold[] = { "tracerd", "report", GOLD("tcf-v1.0-small.tcf"), "-f", "folded",
		"--per-thread", NULL };
	const char *thr[] = { "tracerd", "report", GOLD("tcf-v1.0-small.tcf"), "--thread",
		"worker-1", NULL };
	const char *tid[] = { "tracerd", "report", GOLD("tcf-v1.0-small.tcf"), "--tid", "10002",
		"--state", "sleeping", NULL };
	const char *rel[] = { "tracerd", "report", GOLD("tcf-v1.0-small.tcf"), "--from", "-2s",
		NULL };
	struct run_result r;

	run_tracerd(&r, top);
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_expect_eq(sum_column(r.out, 3, 2), 1782, "self sums to every sample");
	run_result_free(&r);
	run_tracerd(&r, fold);
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_expect_eq(sum_column(r.out, 0, -1), 1782, "folded counts sum to every sample");
	cr_expect(!strncmp(r.out, "worker-", 7), "thread name first: %.40s", r.out);
	run_result_free(&r);
	run_tracerd(&r, thr);
	cr_expect(!strncmp(r.out, "594 samples", 11), "one thread of three: %.40s", r.out);
	run_result_free(&r);
	run_tracerd(&r, tid);
	cr_expect_eq(r.status, 0);
	{
		unsigned long long n = strtoull(r.out, NULL, 10);

		cr_expect(n > 100 && n < 594, "sleeping samples of one thread: %llu", n);
	}
	run_result_free(&r);
	run_tracerd(&r, rel);
	{
		unsigned long long n = strtoull(r.out, NULL, 10);

		/* the second chunk: 3 s of 3 threads at 99 Hz; its last 2 s */
		cr_expect(n > 400 && n < 900, "last 2 s: %llu samples", n);
	}
	run_result_free(&r);
}

Test(report, errors)
{
	const char *missing[] = { "tracerd", "report", "/nonexistent/repo", NULL };
	const char *fmt[] = { "tracerd", "report", GOLD("rec-crash.tcf"), "-f", "pdf", NULL };
	const char *junk[] = { "tracerd", "report", GOLD("README"), NULL };
	const char *when[] = { "tracerd", "report", GOLD("rec-crash.tcf"), "--from", "noon", NULL };
	char dir[] = "/tmp/tracerd-empty-XXXXXX";
	const char *empty[] = { "tracerd", "report", dir, NULL };
	struct run_result r;

	run_tracerd(&r, missing);
	cr_expect_eq(r.status, 1);
	cr_expect(strstr(r.err, "No such file or directory; give a chunk file"), "%s", r.err);
	run_result_free(&r);
	run_tracerd(&r, fmt);
	cr_expect_eq(r.status, 1);
	cr_expect(strstr(r.err, "'pdf' is not one of"), "%s", r.err);
	run_result_free(&r);
	run_tracerd(&r, junk);
	cr_expect_eq(r.status, 2);
	cr_expect(strstr(r.err, "is not a tracerd chunk file"), "%s", r.err);
	run_result_free(&r);
	run_tracerd(&r, when);
	cr_expect_eq(r.status, 1);
	cr_expect(strstr(r.err, "'noon' is not a time"), "%s", r.err);
	run_result_free(&r);
	cr_assert_not_null(mkdtemp(dir));
	run_tracerd(&r, empty);
	cr_expect_eq(r.status, 1);
	cr_expect(strstr(r.err, "is an empty repository"), "%s", r.err);
	run_result_free(&r);
	rmdir(dir);
}
