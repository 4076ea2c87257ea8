/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Where a lock's owner is shown: fx_owners' holders run their critical
 * section in one known function (ow_mutex_crit, ow_rwlock_crit) and sleep
 * in msleep() without the lock, so a stack of the holder with its crit
 * function on it was taken while it held the lock, and any other stack of
 * it was not.  A wall recording's waits report must credit the waiters'
 * wait to the holder with a stack of the first kind, never the second
 * (a row without a stack says none was taken while it held the lock):
 * on a quiet machine, and with three busy loops per core. */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../helpers.h"

/* ---- what the waits report credits to a holder */
struct credit {
	unsigned long long total;  /* the waiters' wait on the object */
	unsigned long long inside; /* credited to the holder with its crit function */
	unsigned long long none;   /* to the holder, no stack taken while it held it */
	unsigned long long wrong;  /* to the holder, with another stack */
	char wrong_stack[512];	   /* the first such stack */
	unsigned episodes;
};

/* Over the sites of report --format waits --json (one per line) of kind
 * and object whose waiters are named waiter*: the time credited to holder
 * by the stack it has there. */
static void credit_of(const char *out, const char *kind, unsigned long long object,
	const char *waiter, const char *holder, const char *crit, struct credit *c)
{
	char head[96], wkey[64], hkey[64];

	*c = (struct credit){ 0 };
	snprintf(head, sizeof(head), "{\"kind\":\"%s\",\"object\":\"0x%llx\",", kind, object);
	snprintf(wkey, sizeof(wkey), "\"name\":\"%s", waiter);
	snprintf(hkey, sizeof(hkey), "{\"thread\":\"%s\",", holder);
	for (const char *p = out; (p = strstr(p, head)); p++) {
		const char *end = strchrnul(p, '\n'), *owners = strstr(p, "\"owners\":[");
		const char *th = strstr(p, "\"threads\":["), *o;
		unsigned long long ns = 0;
		unsigned count = 0;
		char *site = strndup(p, (size_t)(end - p));

		cr_assert(owners && th && owners < end, "%.400s", p);
		th = strstr(site, "\"threads\":[");
		if (!strstr(th, wkey) || strstr(th, wkey) > strstr(th, "]")) {
			free(site); /* another thread's wait on the object */
			continue;
		}
		cr_assert(sscanf(strstr(site, "\"wait_ns\":"), "\"wait_ns\":%llu,\"count\":%u", &ns,
				  &count) == 2,
			"%s", site);
		c->total += ns;
		c->episodes += count;
		for (o = strstr(site, "\"owners\":["); (o = strstr(o, hkey)); o++) {
			const char *st = strstr(o, "\"stack\":["), *se = st ? strstr(st, "]}") : NULL;
			unsigned long long ons = 0;
			char *stack;

			cr_assert(st && se && sscanf(strstr(o, "\"wait_ns\":"), "\"wait_ns\":%llu",
						   &ons) == 1,
				"%s", o);
			stack = strndup(st, (size_t)(se + 1 - st));
			if (!strcmp(stack, "\"stack\":[]")) {
				cr_expect(strstr(o, "\"stack_while_held\":false,") < st &&
						  strstr(o, "\"stack_while_held\":false,"),
					"a row without a stack says none was taken: %.300s", o);
				c->none += ons;
			} else if (strstr(stack, crit)) {
				cr_expect(strstr(o, "\"stack_while_held\":true,") < st &&
						  strstr(o, "\"stack_while_held\":true,"),
					"%.300s", o);
				c->inside += ons;
			} else {
				if (!c->wrong)
					snprintf(c->wrong_stack, sizeof(c->wrong_stack), "%s", stack);
				c->wrong += ons;
			}
			free(stack);
		}
		free(site);
	}
}

/* Record fx_owners for secs seconds in wall mode (with --owner-stops if
 * stops); the waits report's credits of the mutex's and the rwlock's
 * holders.  *ret_stopped, when asked: the owner stops the summary counts. */
static void record_owners(const char *secs, bool stops, struct credit *mutex,
	struct credit *rwlock, unsigned long long *ret_stopped)
{
	char text[512], dir[] = "/tmp/tracerd-owners-XXXXXX", repo[64], p[32], cmd[96];
	const char *rec[] = { "tracerd", "--pid", p, "--mode", "wall", "-d", secs, "-r", repo,
		stops ? "--owner-stops" : NULL, NULL };
	const char *rep[] = { "tracerd", "report", repo, "--format", "waits", "--json", "--limit",
		"0", NULL };
	struct run_result r;
	pid_t pid = fx_start_listing(FX("fx_owners"), NULL, text, sizeof(text));

	cr_assert_not_null(mkdtemp(dir));
	snprintf(repo, sizeof(repo), "%s/repo", dir);
	snprintf(p, sizeof(p), "%d", (int)pid);
	run_tracerd(&r, rec);
	fx_stop(pid);
	cr_assert_eq(r.status, 0, "%s", r.err);
	if (ret_stopped) {
		const char *n = strstr(r.err, "for its stack (");

		*ret_stopped = n ? strtoull(n + strlen("for its stack ("), NULL, 10) : 0;
	}
	run_result_free(&r);
	run_tracerd(&r, rep);
	cr_assert_eq(r.status, 0, "%s", r.err);
	credit_of(r.out, "mutex", fx_listed_addr(text, "mutex"), "ow-post", "ow-mholder", "\"ow_mutex_crit\"",
		mutex);
	credit_of(r.out, "rwlock", fx_listed_addr(text, "rwlock"), "ow-reader", "ow-writer",
		"\"ow_rwlock_crit\"", rwlock);
	run_result_free(&r);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	cr_expect_eq(system(cmd), 0);
}

static void log_credit(const char *what, const struct credit *c)
{
	cr_log_info("%s: %u episodes, %.3f s waited; the holder in its critical section "
		    "%.1f%%, no stack taken while it held %.1f%%, another stack %.1f%%",
		what, c->episodes, c->total / 1e9,
		c->total ? 100.0 * (double)c->inside / (double)c->total : 0,
		c->total ? 100.0 * (double)c->none / (double)c->total : 0,
		c->total ? 100.0 * (double)c->wrong / (double)c->total : 0);
}

/* Never a stack of the holder from outside its hold. */
static void expect_never_wrong(const char *what, const struct credit *c)
{
	log_credit(what, c);
	cr_assert_gt(c->episodes, 0, "%s: no wait recorded", what);
	cr_expect_eq(c->wrong, 0, "%s: %.3f s of the wait credited to the holder where it did not "
				  "hold the lock: %s",
		what, c->wrong / 1e9, c->wrong_stack);
}

static void expect_held_where_it_holds(const char *what, const struct credit *c)
{
	double inside = c->total ? (double)c->inside / (double)c->total : 0;

	expect_never_wrong(what, c);
	cr_expect_geq(inside, 0.8,
		"%s: %.1f%% of %.3f s of waiting credited to the holder in its critical section "
		"(%.3f s with no stack taken while it held it)",
		what, 100 * inside, c->total / 1e9, c->none / 1e9);
}

Test(lock_waits, owners_shown_where_they_hold_the_lock, .timeout = 180)
{
	struct credit mutex, rwlock;

	record_owners("4s", true, &mutex, &rwlock, NULL);
	expect_held_where_it_holds("mutex", &mutex);
	expect_held_where_it_holds("rwlock", &rwlock);
}

/* The same with three busy loops per core: the holders are preempted
 * while they hold the lock, their holds stretched in wall time. */
Test(lock_waits, owners_shown_where_they_hold_the_lock_loaded, .timeout = 180)
{
	struct credit mutex, rwlock;

	load_start();
	record_owners("6s", true, &mutex, &rwlock, NULL);
	load_stop();
	expect_held_where_it_holds("mutex, loaded", &mutex);
	expect_held_where_it_holds("rwlock, loaded", &rwlock);
}

/* Without --owner-stops no owner is stopped (so no call of the target can
 * see EINTR because of tracerd): the kernel samples a holder a waiter found
 * early (a short period of its CPU time until the next tick), and those
 * samples show it in its critical section for at least 80% of the wait,
 * as the stops do, and never where it does not hold the lock. */
static void record_owners_without_stops(const char *secs, const char *load, struct credit *mutex,
	struct credit *rwlock)
{
	unsigned long long stopped;
	char what[64];

	record_owners(secs, false, mutex, rwlock, &stopped);
	cr_expect_eq(stopped, 0, "%llu owner stops without --owner-stops", stopped);
	snprintf(what, sizeof(what), "mutex, %sno stops", load);
	expect_held_where_it_holds(what, mutex);
	snprintf(what, sizeof(what), "rwlock, %sno stops", load);
	expect_held_where_it_holds(what, rwlock);
}

Test(lock_waits, owners_never_shown_outside_their_hold_without_stops, .timeout = 180)
{
	struct credit mutex, rwlock;

	record_owners_without_stops("4s", "", &mutex, &rwlock);
}

Test(lock_waits, owners_never_shown_outside_their_hold_without_stops_loaded, .timeout = 180)
{
	struct credit mutex, rwlock;

	load_start();
	record_owners_without_stops("6s", "loaded, ", &mutex, &rwlock);
	load_stop();
}
