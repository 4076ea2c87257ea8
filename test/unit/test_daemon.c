/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Unit tests of daemon/'s private parts: the transport between the
 * threads (the ring, its contract in daemon/ring.h, and the wakes,
 * daemon/wake.h), the target set (daemon/targets.c), and the writer's
 * shared state: its first error (writer_fail) and its one rotation
 * (writer_rotate). */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <errno.h>
#include <pthread.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../../daemon/daemon-internal.h"
#include "../helpers.h"

Test(ring, full_drops_fifo_and_wraps)
{
	struct ring q = { 0 };
	uint64_t *slot;

	cr_assert_eq(ring_init(&q, 3, 8), 0);
	cr_expect_eq(q.cap, 4, "rounded up to a power of two");
	cr_expect_eq(q.slot_size, 16, "rounded up to 16 bytes");
	cr_expect_null(ring_peek(&q), "empty");
	for (uint64_t round = 0; round < 5; round++) {
		for (uint64_t i = 0; i < 4; i++) {
			slot = ring_reserve(&q);
			cr_assert_not_null(slot);
			*slot = round * 10 + i;
			if (i == 0)
				cr_expect_null(ring_peek(&q), "reserved is not yet published");
			ring_publish(&q);
		}
		cr_expect_null(ring_reserve(&q), "full: the producer gets nothing, never waits");
		cr_expect_eq(ring_used(&q), 4);
		for (uint64_t i = 0; i < 4; i++) {
			slot = ring_peek(&q);
			cr_assert_not_null(slot);
			cr_expect_eq(*slot, round * 10 + i, "oldest first");
			ring_pop(&q);
		}
		cr_expect_null(ring_peek(&q));
		cr_expect_eq(ring_used(&q), 0);
	}
	/* reserved but never published: invisible, and reused */
	slot = ring_reserve(&q);
	*slot = 99;
	cr_expect_null(ring_peek(&q));
	cr_expect_eq(ring_reserve(&q), (void *)slot);
	ring_free(&q);
	ring_free(&q); /* twice is harmless */
}

#define N_RECORDS 100000u

static void *consume(void *arg)
{
	struct ring *q = arg;
	uint64_t want = 0, bad = 0;

	while (want < N_RECORDS) {
		uint64_t *r = ring_peek(q);

		if (!r) {
			sched_yield();
			continue;
		}
		/* the whole record is visible once published */
		if (r[0] != want || r[1] != ~want)
			bad++;
		want++;
		ring_pop(q);
	}
	return (void *)(uintptr_t)bad;
}

Test(ring, two_threads_see_whole_records_in_order, .timeout = 60)
{
	struct ring q = { 0 };
	pthread_t c;
	void *bad;
	uint64_t next = 0;

	cr_assert_eq(ring_init(&q, 64, 16), 0);
	cr_assert_eq(pthread_create(&c, NULL, consume, &q), 0);
	while (next < N_RECORDS) {
		uint64_t *r = ring_reserve(&q);

		if (!r) {
			sched_yield(); /* a real producer counts a drop; here, retry */
			continue;
		}
		r[0] = next;
		r[1] = ~next;
		ring_publish(&q);
		next++;
	}
	pthread_join(c, &bad);
	cr_expect_eq((uintptr_t)bad, 0, "torn or reordered records");
	ring_free(&q);
}

/* A byte ring: records of their own sizes, oldest first, a full ring
 * drops, freed bytes at the start are reused.  (The two-thread test below
 * wraps records whole past the end at every offset.) */
Test(ring, bytes_hold_records_of_their_own_size)
{
	struct ring q = { 0 };
	uint8_t *r;
	uint64_t n = 0;

	cr_assert_eq(ring_init_bytes(&q, 5000), 0);
	cr_expect_eq(q.cap, 8192, "rounded up to a power of two");
	cr_expect_null(ring_peek_bytes(&q), "empty");
	/* 100-byte records take 128 bytes each: 64 fit, the 65th is dropped */
	while ((r = ring_reserve_bytes(&q, 100))) {
		memset(r, (int)n, 100);
		ring_publish_bytes(&q, 100);
		n++;
	}
	cr_expect_eq(n, 64, "%llu records of 128 bytes in 8192", (unsigned long long)n);
	cr_expect_eq(ring_used(&q), 8192);
	/* a record published shorter than reserved takes only its bytes */
	for (uint64_t i = 0; i < 10; i++) {
		r = ring_peek_bytes(&q);
		cr_assert_not_null(r);
		cr_expect_eq(r[0], (uint8_t)i);
		cr_expect_eq(r[99], (uint8_t)i);
		ring_pop_bytes(&q);
	}
	cr_expect_null(ring_reserve_bytes(&q, 2000), "1280 bytes free: no room");
	r = ring_reserve_bytes(&q, 1000);
	cr_assert_not_null(r, "wraps to the start, where 10 records were freed");
	cr_expect_eq(r, q.mem + 16, "at the start");
	r[0] = 0xab;
	ring_publish_bytes(&q, 1);
	cr_expect_eq(ring_used(&q), 8192 - 10 * 128 + 32);
	for (uint64_t i = 10; i < 64; i++) {
		r = ring_peek_bytes(&q);
		cr_assert_not_null(r);
		cr_expect_eq(r[50], (uint8_t)i, "oldest first");
		ring_pop_bytes(&q);
	}
	r = ring_peek_bytes(&q);
	cr_assert_not_null(r);
	cr_expect_eq(r[0], 0xab, "then the one that wrapped");
	ring_pop_bytes(&q);
	cr_expect_null(ring_peek_bytes(&q));
	cr_expect_eq(ring_used(&q), 0);
	ring_free(&q);
}

/* A byte ring kept warm: while the consumer keeps up, the producer goes
 * back to the start once past the warm bytes; with records waiting it goes
 * on, so that a backlog has the whole ring. */
Test(ring, bytes_kept_warm_come_back_to_the_start)
{
	struct ring q = { 0 };
	uint8_t *r;

	cr_assert_eq(ring_init_bytes(&q, 16384), 0);
	ring_keep_warm(&q, 1000);
	cr_expect_eq(q.warm, 992, "rounded down to 16");
	/* 8 records of 128 bytes: 1024, past the warm bytes */
	for (int i = 0; i < 8; i++) {
		cr_assert_not_null(ring_reserve_bytes(&q, 100));
		ring_publish_bytes(&q, 100);
	}
	r = ring_reserve_bytes(&q, 100);
	cr_expect_eq(r, q.mem + 1024 + 16, "records waiting: on past the warm bytes");
	for (int i = 0; i < 8; i++) {
		cr_assert_not_null(ring_peek_bytes(&q));
		ring_pop_bytes(&q);
	}
	r = ring_reserve_bytes(&q, 100);
	cr_expect_eq(r, q.mem + 16, "the ring empty: back to the start");
	r[0] = 0x5a;
	ring_publish_bytes(&q, 100);
	cr_expect_eq(ring_used(&q), 16384 - 1024 + 128, "the bytes wrapped past count until read");
	r = ring_peek_bytes(&q);
	cr_assert_not_null(r);
	cr_expect_eq(r[0], 0x5a, "the consumer follows to the start");
	ring_pop_bytes(&q);
	cr_expect_eq(ring_used(&q), 0);
	ring_free(&q);
}

static void *consume_bytes(void *arg)
{
	struct ring *q = arg;
	uint64_t want = 0, bad = 0;

	while (want < N_RECORDS) {
		uint64_t *r = ring_peek_bytes(q);
		uint64_t words = 2 + want % 97;

		if (!r) {
			sched_yield();
			continue;
		}
		for (uint64_t i = 0; i < words; i++)
			if (r[i] != want + i)
				bad++;
		want++;
		ring_pop_bytes(q);
	}
	return (void *)(uintptr_t)bad;
}

Test(ring, bytes_two_threads_see_whole_records_in_order, .timeout = 60)
{
	struct ring q = { 0 };
	pthread_t c;
	void *bad;
	uint64_t next = 0;

	cr_assert_eq(ring_init_bytes(&q, 16384), 0);
	cr_assert_eq(pthread_create(&c, NULL, consume_bytes, &q), 0);
	while (next < N_RECORDS) {
		uint64_t words = 2 + next % 97; /* sizes that wrap at every offset */
		uint64_t *r = ring_reserve_bytes(&q, 97 * 8);

		if (!r) {
			sched_yield(); /* a real producer counts a drop; here, retry */
			continue;
		}
		for (uint64_t i = 0; i < words; i++)
			r[i] = next + i;
		ring_publish_bytes(&q, words * 8);
		next++;
	}
	pthread_join(c, &bad);
	cr_expect_eq((uintptr_t)bad, 0, "torn or reordered records");
	ring_free(&q);
}

/* ---- the target set */

struct seen {
	pid_t add_pid[64], add_tid[64];
	bool add_found[64];
	unsigned nadd;
	pid_t removed[64];
	unsigned nremove;
};

static void t_add(void *arg, pid_t pid, pid_t tid, bool found)
{
	struct seen *s = arg;

	if (s->nadd < 64) {
		s->add_pid[s->nadd] = pid;
		s->add_tid[s->nadd] = tid;
		s->add_found[s->nadd++] = found;
	}
}

static void t_remove(void *arg, pid_t tid)
{
	struct seen *s = arg;

	if (s->nremove < 64)
		s->removed[s->nremove++] = tid;
}

static bool t_known(void *arg, pid_t tid)
{
	struct seen *s = arg;

	for (unsigned i = 0; i < s->nadd; i++)
		if (s->add_tid[i] == tid)
			return true;
	return false;
}

static const struct targets_ops t_ops = { t_add, t_remove, t_known };

static pid_t sleeper(void)
{
	pid_t pid = fork();

	if (pid == 0)
		for (;;)
			pause();
	return pid;
}

Test(targets, attach_identity_threads_and_exit, .timeout = 30)
{
	struct pt_config cfg = { .max_threads = 64, .trace_clone = true, .trace_exec = true };
	struct targets *ts = calloc(1, sizeof(*ts));
	struct seen *s = calloc(1, sizeof(*s));
	struct td_proc_id ids[2], now;
	struct pt_tracer *t;
	pid_t pids[2] = { sleeper(), sleeper() }, failed = 0;
	struct pt_event ev;
	int st;

	cr_assert_gt(pids[0], 0);
	cr_assert_gt(pids[1], 0);
	cr_assert_eq(pt_tracer_new(&cfg, &t), 0);
	cr_assert_eq(targets_init(ts, t, 4), 0);
	cr_assert_eq(targets_attach(ts, pids, 2, &t_ops, s, ids, &failed), 0);
	cr_expect_eq(targets_live(ts), 2);
	for (unsigned i = 0; i < 2; i++) {
		cr_assert_eq(td_proc_id_read(pids[i], &now), 0);
		cr_expect_eq(ids[i].pid, pids[i]);
		cr_expect_eq(ids[i].start_time, now.start_time, "identity recorded at attach");
	}
	cr_assert_eq(s->nadd, 2, "one thread each");
	for (unsigned i = 0; i < 2; i++) {
		cr_expect_eq(s->add_pid[i], pids[i]);
		cr_expect_eq(s->add_tid[i], pids[i]);
		cr_expect(s->add_found[i], "found at attach: nothing told of it yet");
	}

	/* changes are queued, applied after the round */
	ev = (struct pt_event){ .kind = PT_EVENT_THREAD_NEW, .pid = pids[0], .tid = 424242 };
	cr_expect_not(targets_note(ts, &ev));
	ev = (struct pt_event){ .kind = PT_EVENT_EXEC, .pid = pids[0], .tid = pids[0],
		.old_tid = 424243 };
	cr_expect_not(targets_note(ts, &ev));
	ev = (struct pt_event){ .kind = PT_EVENT_SIGNAL, .pid = pids[0], .tid = pids[0],
		.signo = SIGUSR1 };
	cr_expect_not(targets_note(ts, &ev));
	cr_expect_eq(s->nadd, 2, "nothing applied during the round");
	targets_apply(ts, &t_ops, s);
	cr_assert_eq(s->nadd, 3);
	cr_expect_eq(s->add_tid[2], 424242);
	cr_expect_eq(s->add_pid[2], pids[0]);
	cr_expect_not(s->add_found[2], "born: its event was told already");
	cr_assert_eq(s->nremove, 1);
	cr_expect_eq(s->removed[0], 424243, "exec by a non-leader: the old tid goes");

	/* a process exit ends that target, once */
	ev = (struct pt_event){ .kind = PT_EVENT_PROCESS_EXIT, .pid = pids[1], .tid = pids[1] };
	cr_expect(targets_note(ts, &ev));
	cr_expect_eq(targets_live(ts), 1);
	cr_expect_not(targets_note(ts, &ev), "not a live target any more");
	cr_expect_eq(targets_live(ts), 1);

	/* a PID this tracer has attached already is refused, and named */
	{
		struct targets *ts2 = calloc(1, sizeof(*ts2));
		pid_t twice[2] = { pids[0], pids[0] };

		cr_assert_eq(targets_init(ts2, t, 4), 0);
		cr_expect_eq(targets_attach(ts2, twice, 2, &t_ops, s, ids, &failed), -TD_E_ATTACHED);
		cr_expect_eq(failed, pids[0]);
		targets_free(ts2);
		free(ts2);
	}
	pt_tracer_free(t);
	for (unsigned i = 0; i < 2; i++) {
		kill(pids[i], SIGKILL);
		waitpid(pids[i], &st, 0);
	}
	targets_free(ts);
	free(ts);
	free(s);
}

Test(targets, overflow_resyncs_from_the_tracer_with_the_pid, .timeout = 30)
{
	struct pt_config cfg = { .max_threads = 64 };
	struct targets *ts = calloc(1, sizeof(*ts));
	struct seen *s = calloc(1, sizeof(*s));
	struct td_proc_id ids[1];
	struct pt_tracer *t;
	pid_t pid = sleeper(), failed = 0;
	int st;

	cr_assert_gt(pid, 0);
	cr_assert_eq(pt_tracer_new(&cfg, &t), 0);
	cr_assert_eq(targets_init(ts, t, 4), 0);
	cr_assert_eq(targets_attach(ts, &pid, 1, &t_ops, s, ids, &failed), 0);
	s->nadd = 0; /* forget it: the resync must find it again */
	for (unsigned i = 0; i <= TARGETS_PENDING; i++) {
		struct pt_event ev = { .kind = PT_EVENT_THREAD_EXIT, .pid = pid, .tid = 1000000 };

		targets_note(ts, &ev);
	}
	targets_apply(ts, &t_ops, s);
	cr_expect_eq(s->nremove, 64, "the queued changes are applied (64 recorded here)");
	cr_assert_eq(s->nadd, 1, "then the tracer's list is taken");
	cr_expect_eq(s->add_tid[0], pid);
	cr_expect_eq(s->add_pid[0], pid, "with its process, not 0");
	cr_expect_not(s->add_found[0]);
	pt_tracer_free(t);
	kill(pid, SIGKILL);
	waitpid(pid, &st, 0);
	targets_free(ts);
	free(ts);
	free(s);
}

/* ---- the writer: what the summary counts as lost, the chunks say */

static uint64_t lost_by[4];

static int count_lost(void *arg, struct chunk_reader *r, const struct chunk_event *e)
{
	(void)arg;
	(void)r;
	if (e->type == CHUNK_EV_LOST && e->kind < 4)
		lost_by[e->kind] += e->count;
	return 0;
}

/* The sampler's loss counters, set as it would, reach the repository as
 * LOST records: a report of the recording says what its summary says. */
Test(writer, losses_are_recorded, .timeout = 30)
{
	static const struct chunk_visitor v = { NULL, NULL, count_lost, NULL };
	char dir[] = "/tmp/tracerd-writer-XXXXXX";
	struct rec_config cfg = { .npids = 1, .hz = 99, .mode = REC_MODE_CPU,
		.max_window = 16384, .first_window = 16384 };
	struct rec_shared *sh = calloc(1, sizeof(*sh));
	struct tcf_dir_entry e[8];
	struct writer *w = NULL;
	struct repo *repo = NULL;
	pid_t owner;
	int n;

	cr_assert_not_null(mkdtemp(dir));
	cfg.pids[0] = getpid();
	cfg.repo = dir;
	cfg.ropts.target_pid = (uint32_t)getpid();
	sh->cfg = &cfg;
	sh->writer_wake.fd = sh->sampler_wake.fd = sh->control_wake.fd = -1;
	cr_assert_eq(ring_init_bytes(&sh->samples, 64 * td_sample_size(16384)), 0);
	cr_assert_eq(ring_init(&sh->events, 64, sizeof(struct rec_event)), 0);
	cr_assert_eq(ring_init(&sh->notices, 16, sizeof(struct rec_notice)), 0);
	cr_assert_eq(repo_open(dir, &cfg.ropts, &repo, &owner), 0);
	cr_assert_eq(writer_new(sh, repo, &w), 0);
	atomic_store(&sh->lost_ring, 1700);
	atomic_store(&sh->lost_kernel, 60);
	atomic_store(&sh->lost_not_stopped, 92);
	atomic_store(&sh->targets_live, 1);
	atomic_store(&sh->sampler_done, 1);
	writer_main(w); /* nothing to write: finishes the chunk and returns */
	writer_free(w);
	n = tcf_dir_scan(dir, e, 8);
	cr_assert_gt(n, 0, "no chunk in %s", dir);
	for (int i = 0; i < n; i++) {
		char p[128];
		struct chunk_report rep;

		snprintf(p, sizeof(p), "%s/%.63s", dir, e[i].name);
		chunk_read_file(p, &v, NULL, &rep);
	}
	cr_expect_eq(lost_by[TCF_LOST_RING_FULL], 1760, "ring full: %llu",
		(unsigned long long)lost_by[TCF_LOST_RING_FULL]);
	cr_expect_eq(lost_by[TCF_LOST_NOT_STOPPED], 92, "not stopped: %llu",
		(unsigned long long)lost_by[TCF_LOST_NOT_STOPPED]);
	ring_free(&sh->samples);
	ring_free(&sh->events);
	ring_free(&sh->notices);
	free(sh);
	{
		char cmd[64];

		snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
		cr_expect_eq(system(cmd), 0);
	}
}

/* ---- the wakes: a post is never lost, one drain takes them all, and
 * nothing blocks */

static bool readable(const struct wake *w)
{
	struct pollfd pfd = { w->fd, POLLIN, 0 };

	return poll(&pfd, 1, 0) == 1 && (pfd.revents & POLLIN);
}

Test(wake, two_posts_one_drain_and_no_blocking, .timeout = 10)
{
	struct wake w, none = { -1 };

	cr_assert_eq(wake_open(&w), 0);
	cr_expect_not(readable(&w), "a new wake has nothing posted");
	cr_expect_not(wake_drain(&w), "a drain of nothing returns at once, empty");
	wake_post(&w);
	wake_post(&w);
	cr_expect(readable(&w), "posted: the poller wakes");
	cr_expect(wake_drain(&w), "one drain takes both posts");
	cr_expect_not(readable(&w), "drained once: nothing is left for a second look");
	cr_expect_not(wake_drain(&w), "a second drain does not block");
	wake_post(&w);
	cr_expect(readable(&w), "a post after a drain is not lost");
	cr_expect(wake_drain(&w));
	wake_post(&none); /* a wake never opened: harmless */
	cr_expect_not(wake_drain(&none));
	wake_close(&w);
	wake_close(&w); /* twice is harmless */
	cr_expect_eq(w.fd, -1);
}

/* ---- writer_fail: the first error wins, whoever stores */

#define FAIL_ROUNDS 2000

struct fail_racer {
	struct writer *w;
	pthread_barrier_t *go;
	int err;
	int got[FAIL_ROUNDS];
};

static void *fail_race(void *arg)
{
	struct fail_racer *r = arg;

	for (int i = 0; i < FAIL_ROUNDS; i++) {
		pthread_barrier_wait(r->go); /* io_err is 0 */
		r->got[i] = writer_fail(r->w, r->err);
		pthread_barrier_wait(r->go); /* both stored */
	}
	return NULL;
}

/* The shared state of a recorder without threads: enough to drive a
 * writer from the test's thread. */
static void bare_shared(struct rec_shared *sh, struct rec_config *cfg)
{
	*cfg = (struct rec_config){ .npids = 1, .hz = 99, .mode = REC_MODE_CPU,
		.max_window = 16384, .first_window = 16384 };
	sh->cfg = cfg;
	sh->writer_wake.fd = sh->sampler_wake.fd = sh->control_wake.fd = -1;
}

Test(writer, fail_first_error_wins_under_concurrent_stores, .timeout = 60)
{
	struct rec_shared *sh = calloc(1, sizeof(*sh));
	struct rec_config cfg;
	struct writer *w = NULL;
	struct fail_racer a = { .err = -ENOSPC }, b = { .err = -EIO };
	pthread_barrier_t go;
	pthread_t ta, tb;
	unsigned won_a = 0, won_b = 0;

	bare_shared(sh, &cfg);
	cr_assert_eq(writer_new(sh, NULL, &w), 0); /* no repository: none is needed */
	a.w = b.w = w;
	cr_assert_eq(pthread_barrier_init(&go, NULL, 3), 0);
	a.go = b.go = &go;
	cr_assert_eq(pthread_create(&ta, NULL, fail_race, &a), 0);
	cr_assert_eq(pthread_create(&tb, NULL, fail_race, &b), 0);
	for (int i = 0; i < FAIL_ROUNDS; i++) {
		int stood;

		atomic_store(&sh->io_err, 0);
		pthread_barrier_wait(&go);
		pthread_barrier_wait(&go);
		stood = atomic_load(&sh->io_err);
		cr_assert(stood == a.err || stood == b.err, "round %d: io_err %d", i, stood);
		/* the loser was told the winner's error, not its own */
		cr_assert_eq(a.got[i], stood, "round %d: %d returned, %d stood", i, a.got[i], stood);
		cr_assert_eq(b.got[i], stood, "round %d: %d returned, %d stood", i, b.got[i], stood);
		won_a += stood == a.err;
		won_b += stood == b.err;
	}
	pthread_join(ta, NULL);
	pthread_join(tb, NULL);
	pthread_barrier_destroy(&go);
	cr_log_info("first error: ENOSPC %u times, EIO %u times", won_a, won_b);
	/* one after the other: the later one never overwrites */
	cr_expect_eq(writer_fail(w, -EROFS), atomic_load(&sh->io_err));
	cr_expect_neq(atomic_load(&sh->io_err), -EROFS);
	atomic_store(&sh->io_err, 0);
	cr_expect_eq(writer_fail(w, 0), -EIO, "an error without a cause is still an error");
	cr_expect_eq(writer_fail(w, -ENOSPC), -EIO);
	writer_free(w);
	free(sh);
}

/* ---- writer_rotate: the one way a chunk ends, driven without a target */

static unsigned ends[8], ends_n;
static uint64_t rot_lost;

static int count_ends(void *arg, struct chunk_reader *r, const struct chunk_event *e)
{
	(void)arg;
	(void)r;
	if (e->type == CHUNK_EV_END && ends_n < 8)
		ends[ends_n++] = e->kind;
	if (e->type == CHUNK_EV_LOST)
		rot_lost += e->count;
	return 0;
}

/* The finished chunks of dir, read: their end reasons in ends[]. */
static int read_chunks(const char *dir)
{
	static const struct chunk_visitor v = { NULL, NULL, count_ends, NULL };
	struct tcf_dir_entry e[8];
	int n = tcf_dir_scan(dir, e, 8), finished = 0;

	ends_n = 0;
	rot_lost = 0;
	for (int i = 0; i < n; i++) {
		char p[160];
		struct chunk_report rep;

		if (!strstr(e[i].name, ".tcf") || strstr(e[i].name, ".part"))
			continue;
		snprintf(p, sizeof(p), "%s/%.63s", dir, e[i].name);
		chunk_read_file(p, &v, NULL, &rep);
		finished++;
	}
	return finished;
}

Test(writer, rotate_ends_the_chunk_with_its_losses_and_the_first_error, .timeout = 30)
{
	char dir[] = "/tmp/tracerd-rotate-XXXXXX";
	struct rec_shared *sh = calloc(1, sizeof(*sh));
	struct rec_config cfg;
	struct writer *w = NULL;
	struct repo *repo = NULL;
	pid_t owner;
	int err;

	cr_assert_not_null(mkdtemp(dir));
	bare_shared(sh, &cfg);
	cfg.pids[0] = getpid();
	cfg.repo = dir;
	cfg.ropts.target_pid = (uint32_t)getpid();
	cr_assert_eq(repo_open(dir, &cfg.ropts, &repo, &owner), 0);
	cr_assert_eq(writer_new(sh, repo, &w), 0);

	/* losses to record start a chunk; the rotation ends it */
	atomic_store(&sh->lost_ring, 5);
	writer_rotate(w, WRITER_ROTATE_DUE);
	cr_expect_eq(read_chunks(dir), 0, "not due: nothing ends");
	writer_rotate(w, TCF_END_ROTATE);
	cr_expect_eq(atomic_load(&sh->io_err), 0);
	cr_assert_eq(read_chunks(dir), 1, "one chunk finished");
	cr_expect_eq(ends[0], TCF_END_ROTATE);
	cr_expect_eq(rot_lost, 5, "its losses recorded before it ended: %llu",
		(unsigned long long)rot_lost);

	/* a rotation that fails ends recording with the repository's error,
	 * and it stays the first */
	atomic_store(&sh->lost_ring, 7);
	td_fault_arm(TD_FAULT_RENAME, 1);
	writer_rotate(w, TCF_END_ROTATE);
	cr_expect(td_fault_fired(), "the rotation's rename was failed");
	td_fault_arm(0, 0);
	err = atomic_load(&sh->io_err);
	cr_expect_lt(err, 0, "the failed rotation is recording's error");
	writer_rotate(w, TCF_END_ROTATE);
	cr_expect_eq(atomic_load(&sh->io_err), err, "a later failure does not overwrite it");
	cr_expect_eq(writer_fail(w, -EPERM), err);
	writer_free(w); /* closes the failed repository */
	free(sh);
	{
		char cmd[64];

		snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
		cr_expect_eq(system(cmd), 0);
	}
}
