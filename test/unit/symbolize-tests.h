/* SPDX-License-Identifier: GPL-2.0-or-later */
/* What the unit tests of symbolize/ share: where the fixtures are, the
 * stack window of a sample, and capturing one sample of a fixture.  Each
 * test_*.c that includes it is its own feature: names, unwinding, symbol
 * tables, debuginfo. */
#ifndef TD_TEST_SYMBOLIZE_TESTS_H
#define TD_TEST_SYMBOLIZE_TESTS_H

#include <criterion/criterion.h>

#include "../../ptrace/ptrace.h"
#include "../../symbolize/symbolize-internal.h"
#include "../helpers.h"

#define WINDOW (64u * 1024)

static inline struct td_sample *one_get(void *arg, pid_t pid, pid_t tid, uint32_t *w)
{
	(void)pid, (void)tid;
	*w = WINDOW;
	return arg;
}

static inline void one_put(void *arg, struct td_sample *s)
{
	(void)arg, (void)s;
}

/* One sample of pid's main thread into smp (td_sample_size(WINDOW)
 * bytes), the tracer detached after it. */
static inline void capture_one(pid_t pid, struct td_sample *smp)
{
	static const struct pt_round_ops ops = { one_get, one_put, NULL, NULL, NULL, NULL };
	struct pt_config cfg = { .max_threads = 8 };
	struct pt_round_stats st;
	struct pt_tracer *t;

	cr_assert_eq(pt_tracer_new(&cfg, &t), 0);
	cr_assert_gt(pt_tracer_attach(t, pid), 0);
	pt_tracer_sample(t, &pid, 1, &ops, smp, 2000, PT_ROUND_DETACH, &st);
	cr_assert_eq(st.captured, 1);
	pt_tracer_free(t);
}

#endif
