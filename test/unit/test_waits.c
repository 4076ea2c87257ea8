/* SPDX-License-Identifier: GPL-2.0-or-later */
/* daemon/waits.c: what a blocked thread waits for, told from its system
 * call, the arguments, the words they point at and its stack's names.
 *
 * The test process is its own target: its threads are the owners (live,
 * or joined and gone), real glibc objects in its memory hold the words
 * (their fields named from glibc's headers, so the offsets the classifier
 * assumes are checked against the glibc it runs with), and its own pipes,
 * sockets and files are the descriptors.  No other process, no stop. */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <poll.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "../../common/sample.h"
#include "../../common/td.h"
#include "../../daemon/waits.h"

#ifndef FUTEX_LOCK_PI2
#define FUTEX_LOCK_PI2 13
#endif

/* A thread of this process that takes an object (take), holds it until
 * owner_stop, then gives it back (give). */
struct owner {
	pthread_t thread;
	pid_t tid;
	void (*take)(void *obj);
	void (*give)(void *obj);
	void *obj;
	sem_t taken, release;
};

static void *owner_main(void *arg)
{
	struct owner *o = arg;

	o->tid = gettid();
	if (o->take)
		o->take(o->obj);
	sem_post(&o->taken);
	while (sem_wait(&o->release) < 0 && errno == EINTR)
		;
	if (o->give)
		o->give(o->obj);
	return NULL;
}

static void owner_start(struct owner *o, void (*take)(void *), void (*give)(void *), void *obj)
{
	*o = (struct owner){ .take = take, .give = give, .obj = obj };
	cr_assert_eq(sem_init(&o->taken, 0, 0), 0);
	cr_assert_eq(sem_init(&o->release, 0, 0), 0);
	cr_assert_eq(pthread_create(&o->thread, NULL, owner_main, o), 0);
	while (sem_wait(&o->taken) < 0 && errno == EINTR)
		;
}

static void owner_stop(struct owner *o)
{
	sem_post(&o->release);
	pthread_join(o->thread, NULL);
	sem_destroy(&o->taken);
	sem_destroy(&o->release);
}

static void *note_tid(void *arg)
{
	*(pid_t *)arg = gettid();
	return NULL;
}

/* The TID of a thread of this process that has exited and been joined:
 * no longer a live thread of it. */
static pid_t gone_tid(void)
{
	pthread_t th;
	pid_t tid = 0;

	cr_assert_eq(pthread_create(&th, NULL, note_tid, &tid), 0);
	pthread_join(th, NULL);
	cr_assert_gt(tid, 0);
	return tid;
}

/* A thread of this process (its main thread) waits in nr with args. */
static struct wait_info classify(long nr, const uint64_t args[6], const uint32_t *futex, char state,
	const char *const *funcs, unsigned nfuncs)
{
	struct wait_info w;

	memset(&w, 0x5a, sizeof(w));
	wait_classify(getpid(), gettid(), nr, args, futex, state, funcs, nfuncs, &w);
	return w;
}

static uint64_t addr(const void *p)
{
	return (uint64_t)(uintptr_t)p;
}

/* ---- not in a system call ---- */

Test(waits, no_system_call_is_no_wait_unless_in_disk_sleep)
{
	const uint64_t args[6] = { 0 };
	struct wait_info w;

	w = classify(-1, args, NULL, 'S', NULL, 0);
	cr_expect_eq(w.kind, WAIT_NONE);
	cr_expect_eq(w.nr, -1);
	cr_expect_eq(w.owner, 0);
	cr_expect_str_empty(w.what);
	w = classify(-1, args, NULL, 'R', NULL, 0);
	cr_expect_eq(w.kind, WAIT_NONE);
	w = classify(-1, args, NULL, 'D', NULL, 0);
	cr_expect_eq(w.kind, WAIT_DISK);
	cr_expect_str_empty(w.what);
}

/* ---- futex: mutexes ---- */

static void mutex_take(void *m)
{
	cr_assert_eq(pthread_mutex_lock(m), 0);
}

static void mutex_give(void *m)
{
	pthread_mutex_unlock(m);
}

Test(waits, mutex_owner_is_its_owner_field)
{
	static const char *const funcs[] = { "__lll_lock_wait", "__GI___pthread_mutex_lock",
		"worker", "start_thread" };
	pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
	struct owner o;
	uint64_t args[6] = { addr(&m), FUTEX_WAIT | FUTEX_PRIVATE_FLAG, 2 };
	uint32_t words[TD_FUTEX_WORDS];
	struct wait_info w;

	owner_start(&o, mutex_take, mutex_give, &m);
	cr_assert_eq(m.__data.__owner, o.tid, "glibc keeps a mutex's owner in __owner");
	cr_assert_eq((char *)&m.__data.__owner - (char *)&m, 8);

	/* read from the target now, and from words read at a tick */
	w = classify(SYS_futex, args, NULL, 'S', funcs, 4);
	cr_expect_eq(w.kind, WAIT_MUTEX);
	cr_expect_eq(w.nr, SYS_futex);
	cr_expect_eq(w.object, addr(&m));
	cr_expect_eq(w.owner, o.tid);
	memcpy(words, &m, sizeof(words));
	w = classify(SYS_futex, args, words, 'S', funcs, 4);
	cr_expect_eq(w.kind, WAIT_MUTEX);
	cr_expect_eq(w.owner, o.tid);

	/* no name on the stack: a live thread in __owner is enough */
	w = classify(SYS_futex, args, NULL, 'S', NULL, 0);
	cr_expect_eq(w.kind, WAIT_MUTEX);
	cr_expect_eq(w.object, addr(&m));
	cr_expect_eq(w.owner, o.tid);
	owner_stop(&o);
}

Test(waits, pi_mutex_owner_is_its_lock_word)
{
	pthread_mutexattr_t a;
	pthread_mutex_t m;
	struct owner o;
	uint64_t args[6] = { 0, FUTEX_LOCK_PI | FUTEX_PRIVATE_FLAG };
	uint32_t words[TD_FUTEX_WORDS] = { 0 };
	struct wait_info w;

	pthread_mutexattr_init(&a);
	cr_assert_eq(pthread_mutexattr_setprotocol(&a, PTHREAD_PRIO_INHERIT), 0);
	cr_assert_eq(pthread_mutex_init(&m, &a), 0);
	args[0] = addr(&m);
	owner_start(&o, mutex_take, mutex_give, &m);
	cr_assert_eq((uint32_t)m.__data.__lock & FUTEX_TID_MASK, (uint32_t)o.tid);

	/* no stack names needed: the operation says PI */
	w = classify(SYS_futex, args, NULL, 'S', NULL, 0);
	cr_expect_eq(w.kind, WAIT_MUTEX);
	cr_expect_eq(w.object, addr(&m));
	cr_expect_eq(w.owner, o.tid);
	args[1] = FUTEX_LOCK_PI2 | FUTEX_PRIVATE_FLAG;
	w = classify(SYS_futex, args, NULL, 'S', NULL, 0);
	cr_expect_eq(w.kind, WAIT_MUTEX);
	cr_expect_eq(w.owner, o.tid);

	/* the waiters bit beside the TID, as the words were at the tick */
	words[0] = (uint32_t)o.tid | FUTEX_WAITERS;
	w = classify(SYS_futex, args, words, 'S', NULL, 0);
	cr_expect_eq(w.kind, WAIT_MUTEX);
	cr_expect_eq(w.owner, o.tid);
	owner_stop(&o);
	pthread_mutex_destroy(&m);
	pthread_mutexattr_destroy(&a);

	/* a TID that is no live thread of the process is no owner */
	words[0] = (uint32_t)gone_tid() | FUTEX_WAITERS;
	w = classify(SYS_futex, args, words, 'S', NULL, 0);
	cr_expect_eq(w.kind, WAIT_MUTEX);
	cr_expect_eq(w.owner, 0);
	words[0] = FUTEX_TID_MASK;
	w = classify(SYS_futex, args, words, 'S', NULL, 0);
	cr_expect_eq(w.owner, 0);
}

Test(waits, robust_mutex_owner_falls_back_to_its_lock_word)
{
	static const char *const funcs[] = { "__pthread_mutex_lock_full" };
	const uint64_t args[6] = { 0x7f0000001000, FUTEX_WAIT | FUTEX_PRIVATE_FLAG, 0 };
	uint32_t words[TD_FUTEX_WORDS] = { 0 };
	struct wait_info w;
	pid_t me = gettid();

	/* __owner (+8) holds nothing live: the lock word's TID is taken */
	words[0] = (uint32_t)me | FUTEX_WAITERS;
	words[2] = (uint32_t)gone_tid();
	w = classify(SYS_futex, args, words, 'S', funcs, 1);
	cr_expect_eq(w.kind, WAIT_MUTEX);
	cr_expect_eq(w.object, args[0]);
	cr_expect_eq(w.owner, me);

	/* neither word live: a mutex (the stack says so) of no known owner */
	words[0] = (uint32_t)gone_tid() | FUTEX_WAITERS;
	w = classify(SYS_futex, args, words, 'S', funcs, 1);
	cr_expect_eq(w.kind, WAIT_MUTEX);
	cr_expect_eq(w.owner, 0);
}

/* ---- futex: rwlocks, condition variables, semaphores ---- */

static void rwlock_take(void *l)
{
	cr_assert_eq(pthread_rwlock_wrlock(l), 0);
}

static void rwlock_give(void *l)
{
	pthread_rwlock_unlock(l);
}

Test(waits, rwlock_writer_owns_it_from_either_futex)
{
	static const char *const rd[] = { "__GI___pthread_rwlock_rdlock", "reader" };
	static const char *const wr[] = { "___pthread_rwlock_wrlock", "writer" };
	pthread_rwlock_t l = PTHREAD_RWLOCK_INITIALIZER;
	struct owner o;
	uint64_t args[6] = { addr(&l.__data.__wrphase_futex), FUTEX_WAIT | FUTEX_PRIVATE_FLAG };
	uint32_t words[TD_FUTEX_WORDS];
	struct wait_info w;

	cr_assert_eq((char *)&l.__data.__wrphase_futex - (char *)&l, 8);
	cr_assert_eq((char *)&l.__data.__writers_futex - (char *)&l, 12);
	cr_assert_eq((char *)&l.__data.__cur_writer - (char *)&l, 24);
	owner_start(&o, rwlock_take, rwlock_give, &l);
	cr_assert_eq(l.__data.__cur_writer, o.tid, "glibc keeps the writer in __cur_writer");

	/* a reader, on __wrphase_futex */
	w = classify(SYS_futex, args, NULL, 'S', rd, 2);
	cr_expect_eq(w.kind, WAIT_RWLOCK);
	cr_expect_eq(w.object, addr(&l));
	cr_expect_eq(w.owner, o.tid);
	memcpy(words, &l.__data.__wrphase_futex, sizeof(words));
	w = classify(SYS_futex, args, words, 'S', rd, 2);
	cr_expect_eq(w.object, addr(&l));
	cr_expect_eq(w.owner, o.tid);

	/* a writer, on __writers_futex */
	args[0] = addr(&l.__data.__writers_futex);
	w = classify(SYS_futex, args, NULL, 'S', wr, 2);
	cr_expect_eq(w.kind, WAIT_RWLOCK);
	cr_expect_eq(w.object, addr(&l));
	cr_expect_eq(w.owner, o.tid);
	memcpy(words, &l.__data.__writers_futex, sizeof(words));
	w = classify(SYS_futex, args, words, 'S', wr, 2);
	cr_expect_eq(w.object, addr(&l));
	cr_expect_eq(w.owner, o.tid);
	owner_stop(&o);

	/* no writer holds it (readers do): the object, no owner */
	args[0] = addr(&l.__data.__wrphase_futex);
	w = classify(SYS_futex, args, NULL, 'S', rd, 2);
	cr_expect_eq(w.kind, WAIT_RWLOCK);
	cr_expect_eq(w.object, addr(&l));
	cr_expect_eq(w.owner, 0);
}

Test(waits, condvar_is_found_from_either_signals_word)
{
	static const char *const funcs[] = { "__futex_abstimed_wait_common", "__pthread_cond_wait",
		"consumer" };
	pthread_cond_t c = PTHREAD_COND_INITIALIZER;
	uint64_t args[6] = { addr(&c.__data.__g_signals[0]),
		FUTEX_WAIT_BITSET | FUTEX_PRIVATE_FLAG | FUTEX_CLOCK_REALTIME, 0 };
	struct wait_info w;

	cr_assert_eq((char *)&c.__data.__g_signals[0] - (char *)&c, 0x28);
	w = classify(SYS_futex, args, NULL, 'S', funcs, 3);
	cr_expect_eq(w.kind, WAIT_CONDVAR);
	cr_expect_eq(w.object, addr(&c));
	cr_expect_eq(w.owner, 0, "a condition has no owner");
	args[0] = addr(&c.__data.__g_signals[1]);
	w = classify(SYS_futex, args, NULL, 'S', funcs, 3);
	cr_expect_eq(w.kind, WAIT_CONDVAR);
	cr_expect_eq(w.object, addr(&c));
	/* a requeue-PI wait (a condition used with a PI mutex) too */
	args[1] = FUTEX_WAIT_REQUEUE_PI | FUTEX_PRIVATE_FLAG;
	w = classify(SYS_futex, args, NULL, 'S', funcs, 3);
	cr_expect_eq(w.kind, WAIT_CONDVAR);
}

/* CPython's GIL, where the interpreter names take_gil and drop_gil (a
 * stripped one's is told by the address: daemon/writer-python.c) */
Test(waits, condvar_under_take_gil_is_the_gil)
{
	static const char *const take[] = { "__futex_abstimed_wait_common",
		"___pthread_cond_timedwait64", "PyCOND_TIMEDWAIT", "take_gil" };
	static const char *const drop[] = { "__pthread_cond_wait_common", "pthread_cond_wait",
		"drop_gil.constprop.0" };
	pthread_cond_t c = PTHREAD_COND_INITIALIZER;
	uint64_t args[6] = { addr(&c.__data.__g_signals[1]),
		FUTEX_WAIT_BITSET | FUTEX_PRIVATE_FLAG, 0 };
	struct wait_info w;

	w = classify(SYS_futex, args, NULL, 'S', take, 4);
	cr_expect_eq(w.kind, WAIT_GIL);
	cr_expect_eq(w.object, addr(&c));
	w = classify(SYS_futex, args, NULL, 'S', drop, 3);
	cr_expect_eq(w.kind, WAIT_GIL);
	/* not under it: a condition variable */
	w = classify(SYS_futex, args, NULL, 'S', take, 2);
	cr_expect_eq(w.kind, WAIT_CONDVAR);
}

/* Woken from a condition, pthread_cond_wait takes its mutex again: a
 * wait for that mutex (held by its owner), not for the condition; under
 * take_gil the GIL's */
Test(waits, condvar_relock_is_a_mutex_wait)
{
	static const char *const relock[] = { "futex_wait", "__GI___lll_lock_wait",
		"__pthread_mutex_cond_lock", "__pthread_cond_wait_common",
		"___pthread_cond_timedwait64", "python3.11+0x4f92c0", "take_gil" };
	struct {
		pthread_cond_t c;
		pthread_mutex_t m;
	} gil = { PTHREAD_COND_INITIALIZER, PTHREAD_MUTEX_INITIALIZER };
	uint64_t args[6] = { addr(&gil.m), FUTEX_WAIT | FUTEX_PRIVATE_FLAG, 2 };
	struct wait_info w;

	pthread_mutex_lock(&gil.m);
	w = classify(SYS_futex, args, NULL, 'S', relock, 6);
	cr_expect_eq(w.kind, WAIT_MUTEX);
	cr_expect_eq(w.object, addr(&gil.m));
	cr_expect_eq(w.owner, gettid(), "the mutex's __owner");
	w = classify(SYS_futex, args, NULL, 'S', relock, 7);
	cr_expect_eq(w.kind, WAIT_GIL);
	cr_expect_eq(w.object, addr(&gil.m));
	pthread_mutex_unlock(&gil.m);
}

/* A stripped interpreter names no take_gil: the GIL's condition
 * variables' addresses (and their mutexes', which follow them in
 * struct _gil_runtime_state) tell its waits; others stay as they are */
Test(waits, gil_told_by_its_addresses)
{
	struct {
		pthread_cond_t c;
		pthread_mutex_t m;
	} gil[2];
	const uint64_t conds[2] = { addr(&gil[0].c), addr(&gil[1].c) };
	struct wait_info w = { .kind = WAIT_CONDVAR, .object = addr(&gil[1].c), .owner = 0 };

	wait_python_gil(getpid(), gettid(), conds, 0, &w);
	cr_expect_eq(w.kind, WAIT_GIL);
	w = (struct wait_info){ .kind = WAIT_MUTEX, .object = addr(&gil[0].m), .owner = 1 };
	wait_python_gil(getpid(), gettid(), conds, gettid(), &w);
	cr_expect_eq(w.kind, WAIT_GIL);
	cr_expect_eq(w.owner, 0, "its own thread holds nothing it waits for");
	w = (struct wait_info){ .kind = WAIT_MUTEX, .object = addr(&gil[0].c) + 8 };
	wait_python_gil(getpid(), gettid(), conds, 0, &w);
	cr_expect_eq(w.kind, WAIT_MUTEX);
	w = (struct wait_info){ .kind = WAIT_SEMAPHORE, .object = addr(&gil[0].c) };
	wait_python_gil(getpid(), gettid(), conds, 0, &w);
	cr_expect_eq(w.kind, WAIT_SEMAPHORE);
}

Test(waits, condvar_word_equal_to_a_live_tid_is_no_join)
{
	static const char *const funcs[] = { "pthread_cond_wait" };
	pthread_cond_t c = PTHREAD_COND_INITIALIZER;
	pid_t me = gettid();
	uint32_t words[TD_FUTEX_WORDS] = { (uint32_t)me };
	const uint64_t args[6] = { addr(&c.__data.__g_signals[0]), FUTEX_WAIT, (uint64_t)me };
	struct wait_info w;

	w = classify(SYS_futex, args, words, 'S', funcs, 1);
	cr_expect_eq(w.kind, WAIT_CONDVAR);
	cr_expect_eq(w.object, addr(&c));
	cr_expect_eq(w.owner, 0);
}

Test(waits, semaphore_has_no_owner)
{
	static const char *const slow[] = { "do_futex_wait", "__new_sem_wait_slow64", "sem_wait",
		"consumer" };
	static const char *const plain[] = { "sem_timedwait" };
	sem_t s;
	const uint64_t args[6] = { addr(&s),
		FUTEX_WAIT_BITSET | FUTEX_PRIVATE_FLAG | FUTEX_CLOCK_REALTIME, 0 };
	struct wait_info w;

	cr_assert_eq(sem_init(&s, 0, 0), 0);
	w = classify(SYS_futex, args, NULL, 'S', slow, 4);
	cr_expect_eq(w.kind, WAIT_SEMAPHORE);
	cr_expect_eq(w.object, addr(&s));
	cr_expect_eq(w.owner, 0);
	w = classify(SYS_futex, args, NULL, 'S', plain, 1);
	cr_expect_eq(w.kind, WAIT_SEMAPHORE);
	sem_destroy(&s);
}

/* ---- futex: joins ---- */

Test(waits, join_owner_is_the_joined_thread)
{
	static const char *const funcs[] = { "__futex_abstimed_wait_common64",
		"__pthread_clockjoin_ex", "main" };
	struct owner o;
	uint64_t args[6] = { 0x7f0000002d0, FUTEX_WAIT_BITSET | FUTEX_PRIVATE_FLAG, 0 };
	uint32_t words[TD_FUTEX_WORDS] = { 0 };
	struct wait_info w;
	pid_t gone = gone_tid();

	owner_start(&o, NULL, NULL, NULL);
	args[2] = (uint64_t)o.tid;
	words[0] = (uint32_t)o.tid;
	w = classify(SYS_futex, args, NULL, 'S', funcs, 3);
	cr_expect_eq(w.kind, WAIT_JOIN);
	cr_expect_eq(w.object, args[0], "a join's object is the tid word");
	cr_expect_eq(w.owner, o.tid);

	/* no name on the stack: the word holds the value waited on, a live TID */
	w = classify(SYS_futex, args, words, 'S', NULL, 0);
	cr_expect_eq(w.kind, WAIT_JOIN);
	cr_expect_eq(w.owner, o.tid);
	owner_stop(&o);

	/* the joined thread gone: believed if it was seen at the tick (the
	 * words were read then), not when everything is read now */
	args[2] = (uint64_t)gone;
	words[0] = (uint32_t)gone;
	w = classify(SYS_futex, args, words, 'S', funcs, 3);
	cr_expect_eq(w.kind, WAIT_JOIN);
	cr_expect_eq(w.owner, gone);
	w = classify(SYS_futex, args, NULL, 'S', funcs, 3);
	cr_expect_eq(w.kind, WAIT_JOIN);
	cr_expect_eq(w.owner, 0);
	/* and without the name, a dead TID in the word is no join */
	w = classify(SYS_futex, args, words, 'S', NULL, 0);
	cr_expect_eq(w.kind, WAIT_FUTEX);
	cr_expect_eq(w.owner, 0);
	/* a value that is no TID at all */
	args[2] = 0;
	w = classify(SYS_futex, args, words, 'S', funcs, 3);
	cr_expect_eq(w.kind, WAIT_JOIN);
	cr_expect_eq(w.owner, 0);
	args[2] = (uint64_t)-5;
	w = classify(SYS_futex, args, words, 'S', funcs, 3);
	cr_expect_eq(w.owner, 0);
}

Test(waits, join_needs_the_word_to_hold_the_value_waited_on)
{
	pid_t me = gettid();
	uint32_t words[TD_FUTEX_WORDS] = { (uint32_t)me + 1 };
	const uint64_t args[6] = { 0x7f0000002d0, FUTEX_WAIT | FUTEX_PRIVATE_FLAG, (uint64_t)me };
	struct wait_info w;

	w = classify(SYS_futex, args, words, 'S', NULL, 0);
	cr_expect_eq(w.kind, WAIT_FUTEX);
	cr_expect_eq(w.object, args[0]);
	cr_expect_eq(w.owner, 0);
}

/* ---- futex: what is not recognised, and stack names ---- */

Test(waits, unrecognised_futex_stays_a_futex)
{
	static const char *const mutex[] = { "pthread_mutex_lock" };
	static const char *const app[] = { "my_spin_wait", "worker" };
	uint32_t words[TD_FUTEX_WORDS] = { 5, 0, 7 };
	uint64_t args[6] = { 0x7f0000003000, FUTEX_WAIT | FUTEX_PRIVATE_FLAG, 5 };
	struct wait_info w;

	w = classify(SYS_futex, args, words, 'S', app, 2);
	cr_expect_eq(w.kind, WAIT_FUTEX);
	cr_expect_eq(w.object, args[0]);
	cr_expect_eq(w.owner, 0);
	cr_expect_str_empty(w.what);

	/* an operation that is not a wait says nothing of the object, even
	 * under a mutex's name */
	args[1] = FUTEX_WAKE | FUTEX_PRIVATE_FLAG;
	w = classify(SYS_futex, args, words, 'S', mutex, 1);
	cr_expect_eq(w.kind, WAIT_FUTEX);
	cr_expect_eq(w.object, args[0]);
	args[1] = 0x7f; /* no operation at all */
	w = classify(SYS_futex, args, words, 'S', mutex, 1);
	cr_expect_eq(w.kind, WAIT_FUTEX);

	/* words unreadable now (nothing mapped there): no owner, no crash */
	args[1] = FUTEX_WAIT;
	args[0] = 8;
	w = classify(SYS_futex, args, NULL, 'S', mutex, 1);
	cr_expect_eq(w.kind, WAIT_MUTEX);
	cr_expect_eq(w.object, 8);
	cr_expect_eq(w.owner, 0);
	w = classify(SYS_futex, args, NULL, 'S', NULL, 0);
	cr_expect_eq(w.kind, WAIT_FUTEX);
	cr_expect_eq(w.owner, 0);
}

Test(waits, stack_names_are_read_near_the_leaf_without_decorations)
{
	const char *funcs[16] = { NULL };
	const uint64_t args[6] = { 0x7f0000004000, FUTEX_WAIT | FUTEX_PRIVATE_FLAG, 0 };
	uint32_t words[TD_FUTEX_WORDS] = { 0 };
	struct wait_info w;

	/* unknown frames (NULL) are passed over */
	funcs[3] = "__GI___pthread_cond_wait";
	w = classify(SYS_futex, args, words, 'S', funcs, 4);
	cr_expect_eq(w.kind, WAIT_CONDVAR);

	/* the twelfth frame counts, the thirteenth does not */
	funcs[3] = NULL;
	funcs[11] = "sem_clockwait";
	w = classify(SYS_futex, args, words, 'S', funcs, 16);
	cr_expect_eq(w.kind, WAIT_SEMAPHORE);
	funcs[11] = NULL;
	funcs[12] = "sem_clockwait";
	w = classify(SYS_futex, args, words, 'S', funcs, 16);
	cr_expect_eq(w.kind, WAIT_FUTEX);

	/* and only the nfuncs given */
	funcs[0] = "sem_wait";
	w = classify(SYS_futex, args, words, 'S', funcs, 0);
	cr_expect_eq(w.kind, WAIT_FUTEX);

	/* a name is matched from its start: a program's own function that
	 * merely contains glibc's name is not glibc's */
	funcs[0] = "my_sem_wait";
	w = classify(SYS_futex, args, words, 'S', funcs, 1);
	cr_expect_eq(w.kind, WAIT_FUTEX);
}

/* ---- descriptors ---- */

static void expect_fd_wait(long nr, int fd, const char *what)
{
	const uint64_t args[6] = { (uint64_t)fd, 0, 0 };
	struct wait_info w = classify(nr, args, NULL, 'S', NULL, 0);

	cr_expect_eq(w.kind, WAIT_FD, "%s", wait_syscall_name(nr));
	cr_expect_eq(w.nr, nr);
	cr_expect_eq(w.object, (uint64_t)fd);
	cr_expect_eq(w.owner, 0);
	cr_expect_str_eq(w.what, what, "%s on fd %d", wait_syscall_name(nr), fd);
}

static void fd_link(int fd, char *buf, size_t len)
{
	char path[64];
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	n = readlink(path, buf, len - 1);
	cr_assert_gt(n, 0);
	buf[n] = '\0';
}

Test(waits, descriptor_calls_name_what_they_wait_on)
{
	static const long calls[] = { SYS_read, SYS_write, SYS_pread64, SYS_pwrite64, SYS_readv,
		SYS_writev, SYS_connect, SYS_accept, SYS_accept4, SYS_sendto, SYS_recvfrom,
		SYS_sendmsg, SYS_recvmsg, SYS_recvmmsg, SYS_sendmmsg, SYS_epoll_wait,
		SYS_epoll_pwait, SYS_epoll_pwait2, SYS_flock, SYS_fsync, SYS_fdatasync,
		SYS_io_uring_enter };
	int p[2], sv[2], ep;
	char pipe_name[48], sock_name[48];

	cr_assert_eq(pipe(p), 0);
	cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	ep = epoll_create1(0);
	cr_assert_geq(ep, 0);
	fd_link(p[0], pipe_name, sizeof(pipe_name));
	fd_link(sv[0], sock_name, sizeof(sock_name));
	cr_assert(!strncmp(pipe_name, "pipe:[", 6), "%s", pipe_name);
	cr_assert(!strncmp(sock_name, "socket:[", 8), "%s", sock_name);

	for (size_t i = 0; i < TD_ARRAY_SIZE(calls); i++)
		expect_fd_wait(calls[i], p[0], pipe_name);
	expect_fd_wait(SYS_recvfrom, sv[0], sock_name);
	expect_fd_wait(SYS_epoll_wait, ep, "anon_inode:[eventpoll]");
	close(p[0]);
	close(p[1]);
	close(sv[0]);
	close(sv[1]);
	close(ep);
}

Test(waits, descriptor_names_are_cut_to_fit_and_may_be_unknown)
{
	char dir[] = "/tmp/tracerd-waits-XXXXXX";
	char path[PATH_MAX], want[48];
	const uint64_t args[6] = { (uint64_t)-1 };
	struct wait_info w;
	int fd;

	cr_assert_not_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/a-file-whose-name-is-longer-than-the-room-for-it", dir);
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	cr_assert_geq(fd, 0);
	cr_assert_gt(strlen(path), sizeof(want) - 1);
	memcpy(want, path, sizeof(want) - 1);
	want[sizeof(want) - 1] = '\0';
	cr_assert_eq(sizeof(want), sizeof(w.what));
	expect_fd_wait(SYS_fsync, fd, want);
	unlink(path);
	rmdir(dir);

	/* a descriptor that is not open (closed since, or never) */
	close(fd);
	expect_fd_wait(SYS_fsync, fd, "");
	w = classify(SYS_read, args, NULL, 'S', NULL, 0);
	cr_expect_eq(w.kind, WAIT_FD);
	cr_expect_eq(w.object, (uint64_t)-1);
	cr_expect_str_empty(w.what);
}

Test(waits, poll_names_its_first_descriptor)
{
	int sv[2];
	char sock_name[48];
	struct pollfd fds[2];
	uint64_t args[6] = { 0 };
	struct wait_info w;

	cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	fd_link(sv[0], sock_name, sizeof(sock_name));
	fds[0] = (struct pollfd){ .fd = sv[0], .events = POLLIN };
	fds[1] = (struct pollfd){ .fd = sv[1], .events = POLLIN };
	args[0] = addr(fds);
	args[1] = 2;
	w = classify(SYS_poll, args, NULL, 'S', NULL, 0);
	cr_expect_eq(w.kind, WAIT_FD);
	cr_expect_eq(w.object, (uint64_t)sv[0]);
	cr_expect_str_eq(w.what, sock_name);
	w = classify(SYS_ppoll, args, NULL, 'S', NULL, 0);
	cr_expect_eq(w.kind, WAIT_FD);
	cr_expect_eq(w.object, (uint64_t)sv[0]);
	cr_expect_str_eq(w.what, sock_name);

	/* no descriptor to name: a set of them (object -1, nothing named) */
	args[1] = 0; /* poll(fds, 0, timeout): a sleep */
	w = classify(SYS_poll, args, NULL, 'S', NULL, 0);
	cr_expect_eq(w.kind, WAIT_FD);
	cr_expect_eq(w.object, (uint64_t)-1);
	cr_expect_str_empty(w.what);
	args[1] = 2;
	fds[0].fd = -1; /* ignored by poll */
	w = classify(SYS_poll, args, NULL, 'S', NULL, 0);
	cr_expect_eq(w.object, (uint64_t)-1);
	cr_expect_str_empty(w.what);
	args[0] = 8; /* nothing mapped there */
	w = classify(SYS_ppoll, args, NULL, 'S', NULL, 0);
	cr_expect_eq(w.kind, WAIT_FD);
	cr_expect_eq(w.object, (uint64_t)-1);
	cr_expect_str_empty(w.what);
	close(sv[0]);
	close(sv[1]);
}

Test(waits, select_waits_on_a_set)
{
	const uint64_t args[6] = { 4, 0x7f0000005000, 0, 0, 0 };
	struct wait_info w;

	w = classify(SYS_select, args, NULL, 'S', NULL, 0);
	cr_expect_eq(w.kind, WAIT_FD);
	cr_expect_eq(w.object, (uint64_t)-1);
	cr_expect_str_empty(w.what);
	w = classify(SYS_pselect6, args, NULL, 'S', NULL, 0);
	cr_expect_eq(w.kind, WAIT_FD);
	cr_expect_eq(w.object, (uint64_t)-1);
}

/* ---- sleeps, signals, other calls, disk sleep ---- */

Test(waits, sleeps_and_signal_waits)
{
	const uint64_t args[6] = { 0x7f0000006000, 0, 0 };

	cr_expect_eq(classify(SYS_nanosleep, args, NULL, 'S', NULL, 0).kind, WAIT_SLEEP);
	cr_expect_eq(classify(SYS_clock_nanosleep, args, NULL, 'S', NULL, 0).kind, WAIT_SLEEP);
	cr_expect_eq(classify(SYS_pause, args, NULL, 'S', NULL, 0).kind, WAIT_SIGNAL);
	cr_expect_eq(classify(SYS_rt_sigsuspend, args, NULL, 'S', NULL, 0).kind, WAIT_SIGNAL);
	cr_expect_eq(classify(SYS_rt_sigtimedwait, args, NULL, 'S', NULL, 0).kind, WAIT_SIGNAL);
	cr_expect_str_empty(classify(SYS_nanosleep, args, NULL, 'S', NULL, 0).what);
	cr_expect_eq(classify(SYS_pause, args, NULL, 'S', NULL, 0).owner, 0);
}

Test(waits, other_calls_are_named_when_known)
{
	const uint64_t args[6] = { (uint64_t)-1, 0, 0 };
	struct wait_info w;

	w = classify(SYS_wait4, args, NULL, 'S', NULL, 0);
	cr_expect_eq(w.kind, WAIT_OTHER);
	cr_expect_eq(w.nr, SYS_wait4);
	cr_expect_str_eq(w.what, "wait4");
	w = classify(SYS_waitid, args, NULL, 'S', NULL, 0);
	cr_expect_eq(w.kind, WAIT_OTHER);
	cr_expect_str_eq(w.what, "waitid");
	w = classify(SYS_semtimedop, args, NULL, 'S', NULL, 0);
	cr_expect_str_eq(w.what, "semtimedop");
	/* a call that is not one of the blocking ones known: named all the
	 * same (dump said "blocked in system call 56" of a clone) */
	w = classify(SYS_getpid, args, NULL, 'S', NULL, 0);
	cr_expect_eq(w.kind, WAIT_OTHER);
	cr_expect_eq(w.nr, SYS_getpid);
	cr_expect_str_eq(w.what, "getpid");
	w = classify(SYS_clone, args, NULL, 'S', NULL, 0);
	cr_expect_eq(w.kind, WAIT_OTHER);
	cr_expect_str_eq(w.what, "clone");
	/* no system call at all by that number */
	w = classify(100000, args, NULL, 'S', NULL, 0);
	cr_expect_eq(w.kind, WAIT_OTHER);
	cr_expect_eq(w.nr, 100000);
	cr_expect_str_empty(w.what);
	w = classify(LONG_MAX, args, NULL, 'S', NULL, 0);
	cr_expect_eq(w.kind, WAIT_OTHER);
	cr_expect_str_empty(w.what);
}

Test(waits, disk_sleep_wins_over_all_but_descriptors)
{
	static const char *const funcs[] = { "sem_wait" };
	int p[2];
	uint64_t args[6] = { 0x7f0000007000, FUTEX_WAIT, 0 };
	struct wait_info w;

	w = classify(SYS_futex, args, NULL, 'D', funcs, 1);
	cr_expect_eq(w.kind, WAIT_DISK);
	cr_expect_eq(w.nr, SYS_futex);
	cr_expect_eq(classify(SYS_nanosleep, args, NULL, 'D', NULL, 0).kind, WAIT_DISK);
	w = classify(SYS_wait4, args, NULL, 'D', NULL, 0);
	cr_expect_eq(w.kind, WAIT_DISK);
	cr_expect_str_empty(w.what, "a disk sleep names no call");

	/* a read in D (a slow disk or a network file system) stays on its fd */
	cr_assert_eq(pipe(p), 0);
	args[0] = (uint64_t)p[0];
	w = classify(SYS_read, args, NULL, 'D', NULL, 0);
	cr_expect_eq(w.kind, WAIT_FD);
	cr_expect_eq(w.object, (uint64_t)p[0]);
	close(p[0]);
	close(p[1]);
}

/* ---- bad input: a process or thread that is not there ---- */

Test(waits, a_target_that_is_gone_gives_no_owner_and_no_name)
{
	static const char *const funcs[] = { "pthread_mutex_lock" };
	pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
	struct owner o;
	const uint64_t futex_args[6] = { addr(&m), FUTEX_WAIT | FUTEX_PRIVATE_FLAG, 2 };
	const uint64_t fd_args[6] = { 0 };
	struct wait_info w;
	pid_t gone = gone_tid();

	owner_start(&o, mutex_take, mutex_give, &m);
	/* the waiter gone: its memory is not read (process_vm_readv needs
	 * a live thread), so no owner */
	wait_classify(getpid(), gone, SYS_futex, futex_args, NULL, 'S', funcs, 1, &w);
	cr_expect_eq(w.kind, WAIT_MUTEX);
	cr_expect_eq(w.owner, 0);
	/* the process gone: nothing of it is live, nothing named */
	wait_classify(gone, gone, SYS_futex, futex_args, NULL, 'S', funcs, 1, &w);
	cr_expect_eq(w.kind, WAIT_MUTEX);
	cr_expect_eq(w.owner, 0);
	wait_classify(gone, gone, SYS_read, fd_args, NULL, 'S', NULL, 0, &w);
	cr_expect_eq(w.kind, WAIT_FD);
	cr_expect_str_empty(w.what);
	owner_stop(&o);
}

/* ---- names ---- */

Test(waits, kinds_have_the_chunk_format_names)
{
	static const struct {
		enum wait_kind kind;
		enum tcf_wait_kind tcf;
		const char *name;
	} kinds[] = {
		{ WAIT_MUTEX, TCF_WAIT_MUTEX, "mutex" },
		{ WAIT_RWLOCK, TCF_WAIT_RWLOCK, "rwlock" },
		{ WAIT_CONDVAR, TCF_WAIT_CONDVAR, "condvar" },
		{ WAIT_SEMAPHORE, TCF_WAIT_SEMAPHORE, "semaphore" },
		{ WAIT_JOIN, TCF_WAIT_JOIN, "join" },
		{ WAIT_FUTEX, TCF_WAIT_FUTEX, "futex" },
		{ WAIT_FD, TCF_WAIT_FD, "fd" },
		{ WAIT_SLEEP, TCF_WAIT_SLEEP, "sleep" },
		{ WAIT_SIGNAL, TCF_WAIT_SIGNAL, "signal" },
		{ WAIT_DISK, TCF_WAIT_DISK, "disk" },
		{ WAIT_GIL, TCF_WAIT_GIL, "gil" },
		{ WAIT_OTHER, TCF_WAIT_OTHER, "other" },
	};

	for (size_t i = 0; i < TD_ARRAY_SIZE(kinds); i++) {
		cr_expect_eq(wait_tcf_kind(kinds[i].kind), kinds[i].tcf, "%s", kinds[i].name);
		cr_expect_str_eq(wait_kind_name(kinds[i].kind), kinds[i].name);
		cr_expect_str_eq(tcf_wait_kind_name(kinds[i].tcf), kinds[i].name);
	}
	/* NONE is never stored (no episode waits for nothing) */
	cr_expect_str_eq(wait_kind_name(WAIT_NONE), "none");
	cr_expect_eq(wait_tcf_kind(WAIT_NONE), TCF_WAIT_OTHER);
	/* out of range */
	cr_expect_eq(wait_tcf_kind((enum wait_kind)99), TCF_WAIT_OTHER);
	cr_expect_eq(wait_tcf_kind((enum wait_kind)-1), TCF_WAIT_OTHER);
	cr_expect_str_eq(wait_kind_name((enum wait_kind)99), "other");
}

Test(waits, syscall_names_of_every_call)
{
	cr_expect_str_eq(wait_syscall_name(SYS_futex), "futex");
	cr_expect_str_eq(wait_syscall_name(SYS_epoll_pwait2), "epoll_pwait2");
	cr_expect_str_eq(wait_syscall_name(SYS_read), "read");
	cr_expect_str_eq(wait_syscall_name(SYS_sched_yield), "sched_yield");
	cr_expect_str_eq(wait_syscall_name(SYS_getpid), "getpid");
	cr_expect_str_eq(wait_syscall_name(SYS_clone), "clone");
	cr_expect_str_eq(wait_syscall_name(SYS_clone3), "clone3");
	/* both tables, whatever the machine: 56 is clone on x86_64, openat
	 * on aarch64 (asm-generic), whose clone is 220 */
	cr_expect_str_eq(wait_syscall_name_arch(WAIT_ARCH_X86_64, 56), "clone");
	cr_expect_str_eq(wait_syscall_name_arch(WAIT_ARCH_X86_64, 202), "futex");
	cr_expect_str_eq(wait_syscall_name_arch(WAIT_ARCH_AARCH64, 56), "openat");
	cr_expect_str_eq(wait_syscall_name_arch(WAIT_ARCH_AARCH64, 220), "clone");
	cr_expect_str_eq(wait_syscall_name_arch(WAIT_ARCH_AARCH64, 98), "futex");
	cr_expect_str_eq(wait_syscall_name_arch(WAIT_ARCH_AARCH64, 63), "read");
	cr_expect_str_eq(wait_syscall_name_arch(WAIT_ARCH_AARCH64, 435), "clone3");
	/* a hole of the table, and past its end */
	cr_expect_null(wait_syscall_name_arch(WAIT_ARCH_X86_64, 400));
	cr_expect_null(wait_syscall_name_arch(WAIT_ARCH_AARCH64, 100000));
	cr_expect_null(wait_syscall_name(-1));
	cr_expect_null(wait_syscall_name(LONG_MIN));
	cr_expect_null(wait_syscall_name(LONG_MAX));
}
