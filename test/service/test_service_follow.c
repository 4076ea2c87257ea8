/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The service's follower table (service/follow.c): a process is (PID, start
 * time); refusals are said once and retried with backoff; a scan forgets
 * what is gone; lookups and the per-worker counts agree with the table. */
#include <criterion/criterion.h>
#include <errno.h>

#include "../../service/service-internal.h"

#define S 1000000000ull

static struct follow_entry *add(struct follow *f, pid_t pid, uint64_t start, int worker)
{
	struct td_proc_id id = { pid, start };
	struct follow_entry *e = NULL;

	cr_assert_eq(follow_add(f, &id, worker, "fx", &e), 0);
	cr_assert_not_null(e);
	return e;
}

Test(follow, a_reused_pid_is_a_new_process)
{
	struct follow f;
	struct td_proc_id old = { 100, 5000 }, reused = { 100, 9000 };
	struct follow_entry *e;

	follow_init(&f);
	add(&f, 100, 5000, 0);
	cr_assert_eq(follow_answer(&f, &old, 0, 0, &e), FOLLOW_NOW_FOLLOWED);
	cr_assert_not_null(follow_seen(&f, &old), "the same process is known");
	/* the PID now names a later process: unknown, and the old entry goes */
	cr_assert_null(follow_seen(&f, &reused));
	cr_assert_null(follow_find(&f, 100));
	add(&f, 100, 9000, 1);
	/* an answer or an exit about the old process changes nothing */
	cr_assert_eq(follow_answer(&f, &old, 0, 0, &e), FOLLOW_STALE);
	cr_assert_not(follow_remove(&f, &old));
	cr_assert_eq(follow_find(&f, 100)->state, FOLLOW_ASKED);
	cr_assert_eq(follow_answer(&f, &reused, 0, 0, &e), FOLLOW_NOW_FOLLOWED);
	cr_assert_eq(e->worker, 1);
	cr_assert(follow_remove(&f, &reused));
	cr_assert_eq(f.n, 0);
	follow_free(&f);
}

Test(follow, a_refusal_is_said_once_and_retried_with_backoff)
{
	struct follow f;
	struct td_proc_id id = { 200, 1 };
	struct follow_entry *e;
	uint64_t now = 1000 * S, prev = 0;

	follow_init(&f);
	add(&f, 200, 1, 0);
	cr_assert_eq(follow_answer(&f, &id, -TD_E_TRACED, now, &e), FOLLOW_REFUSED_NEW);
	cr_assert_eq(e->retry_ns, now + FOLLOW_RETRY_MIN_NS);
	cr_assert_not(follow_due(e, now + FOLLOW_RETRY_MIN_NS - 1));
	for (int i = 0; i < 12; i++) {
		now = e->retry_ns;
		cr_assert(follow_due(e, now));
		follow_asked(&f, e, 0);
		cr_assert_not(follow_due(e, now), "asked: not due while the answer is out");
		cr_assert_eq(follow_answer(&f, &id, -TD_E_TRACED, now, &e), FOLLOW_REFUSED_AGAIN,
			"the same reason again is not said again");
		cr_assert_geq(e->backoff_ns, prev);
		cr_assert_leq(e->backoff_ns, FOLLOW_RETRY_MAX_NS);
		prev = e->backoff_ns;
	}
	cr_assert_eq(prev, FOLLOW_RETRY_MAX_NS, "the backoff doubles up to its cap");
	/* another reason is news */
	follow_asked(&f, e, 0);
	cr_assert_eq(follow_answer(&f, &id, -EPERM, now, &e), FOLLOW_REFUSED_NEW);
	/* then it works: followed, backoff forgotten */
	follow_asked(&f, e, 0);
	cr_assert_eq(follow_answer(&f, &id, 0, now, &e), FOLLOW_NOW_FOLLOWED);
	cr_assert_eq(e->backoff_ns, 0);
	follow_free(&f);
}

Test(follow, a_process_gone_before_the_seize_is_forgotten_quietly)
{
	struct follow f;
	struct td_proc_id a = { 300, 1 }, b = { 301, 1 };
	struct follow_entry *e;

	follow_init(&f);
	add(&f, 300, 1, 0);
	add(&f, 301, 1, 0);
	cr_assert_eq(follow_answer(&f, &a, -ESRCH, 0, &e), FOLLOW_GONE);
	cr_assert_eq(follow_answer(&f, &b, -TD_E_ZOMBIE, 0, &e), FOLLOW_GONE);
	cr_assert_eq(f.n, 0);
	follow_free(&f);
}

Test(follow, a_scan_forgets_what_it_no_longer_sees)
{
	struct follow f;
	struct td_proc_id followed = { 401, 1 }, kept = { 402, 1 };
	struct follow_entry *e;

	follow_init(&f);
	add(&f, 400, 1, 0);
	add(&f, 401, 1, 0);
	add(&f, 402, 1, 0);
	cr_assert_eq(follow_answer(&f, &followed, 0, 0, &e), FOLLOW_NOW_FOLLOWED);
	cr_assert_eq(follow_answer(&f, &kept, 0, 0, &e), FOLLOW_NOW_FOLLOWED);
	cr_assert_eq(follow_sweep(&f), 0, "added by this scan: seen");
	/* the next scan sees only 402 */
	cr_assert_not_null(follow_seen(&f, &kept));
	cr_assert_eq(follow_sweep(&f), 1, "the asked one goes at once");
	cr_assert_null(follow_find(&f, 400));
	cr_assert_not_null(follow_find(&f, 401), "a followed one waits for its tracer's word");
	cr_assert_not_null(follow_seen(&f, &kept));
	cr_assert_eq(follow_sweep(&f), 1, "but not for two scans");
	cr_assert_null(follow_find(&f, 401));
	cr_assert_not_null(follow_find(&f, 402));
	cr_assert_eq(follow_count(&f, -1, FOLLOW_FOLLOWED), 1);
	follow_free(&f);
}

Test(follow, a_workers_entries_move_and_go_with_it)
{
	struct follow f;

	follow_init(&f);
	add(&f, 500, 1, 0);
	add(&f, 501, 1, 1);
	add(&f, 502, 1, 1);
	/* a reload swaps the two rules' places, through negatives */
	follow_renumber(&f, 0, -2 - 1);
	follow_renumber(&f, 1, -2 - 0);
	follow_renumber(&f, -2 - 1, 1);
	follow_renumber(&f, -2 - 0, 0);
	cr_assert_eq(follow_find(&f, 500)->worker, 1);
	cr_assert_eq(follow_find(&f, 501)->worker, 0);
	cr_assert_eq(follow_count(&f, 0, FOLLOW_ASKED), 2);
	follow_drop_worker(&f, 0);
	cr_assert_eq(f.n, 1);
	cr_assert_not_null(follow_find(&f, 500));
	follow_free(&f);
}

/* The index and the per-worker counts against the table itself, after
 * every kind of change: held[] must be what follow_count says, and every
 * entry found by its PID. */
static void expect_consistent(struct follow *f)
{
	for (int w = 0; w < 3; w++)
		cr_assert_eq(follow_held(f, w),
			follow_count(f, w, FOLLOW_ASKED) + follow_count(f, w, FOLLOW_FOLLOWED),
			"worker %d", w);
	for (unsigned i = 0; i < f->n; i++)
		cr_assert_eq(follow_find(f, f->e[i].id.pid), &f->e[i], "entry %u", i);
}

Test(follow, lookups_and_counts_hold_through_churn)
{
	struct follow f;
	struct follow_entry *e;
	unsigned seed = 7;

	follow_init(&f);
	for (pid_t pid = 1; pid <= 3000; pid++)
		add(&f, pid, 1, (int)(pid % 3));
	expect_consistent(&f);
	for (int step = 0; step < 20000; step++) {
		struct td_proc_id id;

		seed = seed * 1103515245u + 12345u;
		id = (struct td_proc_id){ (pid_t)(seed >> 8) % 3000 + 1, 1 };
		switch ((seed >> 4) % 6) {
		case 0: /* attached, or refused */
		case 1:
			follow_answer(&f, &id, (seed >> 20) & 1 ? 0 : -EPERM, 0, &e);
			break;
		case 2: /* asked again, maybe of another worker */
			if ((e = follow_find(&f, id.pid)) && e->state == FOLLOW_REFUSED)
				follow_asked(&f, e, (int)((seed >> 12) % 3));
			break;
		case 3: /* it exited */
			follow_remove(&f, &id);
			break;
		case 4: /* a new one (or a reused PID) */
			if (!follow_seen(&f, &id))
				add(&f, id.pid, 1, (int)((seed >> 12) % 3));
			break;
		default: /* the rules moved */
			follow_renumber(&f, 1, -3);
			follow_renumber(&f, 2, 1);
			follow_renumber(&f, -3, 2);
		}
	}
	expect_consistent(&f);
	follow_drop_worker(&f, 1);
	follow_sweep(&f);
	expect_consistent(&f);
	cr_assert_eq(follow_held(&f, 1), 0);
	follow_free(&f);
}
