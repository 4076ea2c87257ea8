/* The recorder's control: opening a recording (repository, sampler thread,
 * attach), the control loop on the caller's thread, counters, and the
 * orderly stop.
 *
 * Threads: the caller's (this file: signals through a signalfd, the tick
 * callback), the sampler (the only tracer: daemon/sampler.c) and the
 * writer (unwind, symbolize, chunk writer and repository: daemon/writer.c).
 * Every signal the loop handles is blocked in every thread before any is
 * created; handlers never run, the loop reads them:
 *   INT/TERM  stop sampling, resume and detach every thread, finish the
 *             chunk; a second INT/TERM hurries (samples not yet written
 *             are dropped) but still detaches
 *   HUP       rotate the chunk
 *   USR1      write a snapshot into REPO/snapshots/
 * kill -9 leaves the targets running: the kernel detaches its tracees, and
 * PTRACE_O_EXITKILL is never set. */
#define _GNU_SOURCE
#include "daemon-internal.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <unistd.h>

int spsc_init(struct spsc *q, uint32_t cap, uint32_t slot_size)
{
	uint32_t c = 1;

	while (c < cap)
		c <<= 1;
	q->cap = c;
	q->slot_size = (slot_size + 15) & ~15u;
	q->mem = calloc(c, q->slot_size);
	atomic_init(&q->head, 0);
	atomic_init(&q->tail, 0);
	return q->mem ? 0 : -ENOMEM;
}

void spsc_free(struct spsc *q)
{
	free(q->mem);
	q->mem = NULL;
}

void rec_wake(int fd)
{
	uint64_t one = 1;

	if (write(fd, &one, sizeof(one)) < 0)
		(void)0; /* an eventfd only fails when its counter is full: still awake */
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

void rec_stats(const struct recorder *r, struct rec_stats *ret)
{
	struct recorder *m = (struct recorder *)r; /* atomics are read, not written */
	static uint32_t v[REC_STOP_RING];
	uint64_t n = atomic_load(&m->stop_n);
	size_t k = n < REC_STOP_RING ? (size_t)n : REC_STOP_RING;

	for (size_t i = 0; i < k; i++)
		v[i] = atomic_load_explicit(&m->stop_ns[i], memory_order_relaxed);
	qsort(v, k, sizeof(*v), cmp_u32);
	*ret = (struct rec_stats){
		.samples_taken = atomic_load(&m->samples_taken),
		.samples_written = atomic_load(&m->samples_written),
		.ticks = atomic_load(&m->ticks),
		.lost_ring = atomic_load(&m->lost_ring),
		.lost_not_stopped = atomic_load(&m->lost_not_stopped),
		.lost_events = atomic_load(&m->lost_events),
		.unwind_partial = atomic_load(&m->unwind_partial),
		.threads_seen = atomic_load(&m->threads_seen),
		.threads_live = atomic_load(&m->threads_live),
		.bytes_written = atomic_load(&m->bytes_written),
		.startup_cpu_us = atomic_load(&m->startup_cpu_us),
		.startup_samples = atomic_load(&m->startup_samples),
		.stop_p50_us = k ? v[k / 2] / 1e3 : 0,
		.stop_p99_us = k ? v[(size_t)((double)(k - 1) * 0.99)] / 1e3 : 0,
		.stop_max_us = atomic_load(&m->stop_max) / 1e3,
		.io_err = atomic_load(&m->io_err),
	};
}

int rec_open(const struct rec_config *cfg, struct recorder **ret_rec, struct rec_failure *ret_fail)
{
	struct recorder *r = calloc(1, sizeof(*r));
	struct repo *repo = NULL;
	sigset_t sigs;
	struct rlimit rl;
	pid_t owner = 0;
	int e;

	*ret_fail = (struct rec_failure){ REC_FAIL_SETUP, 0 };
	if (!r)
		return -ENOMEM;
	r->cfg = *cfg;
	r->sfd = r->unwinder_wake = r->sampler_wake = r->main_wake = -1;
	/* one fd per thread for schedstat */
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGHUP);
	sigaddset(&sigs, SIGUSR1);
	sigaddset(&sigs, SIGCHLD);
	sigaddset(&sigs, SIGPIPE);
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);
	sigdelset(&sigs, SIGCHLD);
	sigdelset(&sigs, SIGPIPE);
	r->sfd = signalfd(-1, &sigs, SFD_CLOEXEC | SFD_NONBLOCK);
	r->unwinder_wake = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	r->sampler_wake = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	r->main_wake = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (r->sfd < 0 || r->unwinder_wake < 0 || r->sampler_wake < 0 || r->main_wake < 0) {
		e = -errno;
		goto out_free;
	}
	e = spsc_init(&r->samples,
		TD_MAX(64u, TD_MIN(4096u, (64u << 20) / td_sample_size(r->cfg.max_window))),
		(uint32_t)td_sample_size(r->cfg.max_window));
	if (!e)
		e = spsc_init(&r->events, 65536, sizeof(struct rec_event));
	if (!e)
		e = spsc_init(&r->notices, 16, sizeof(struct rec_notice));
	if (e < 0)
		goto out_free;
	r->cfg.ropts.target_pid = (uint32_t)r->cfg.pids[0];
	e = repo_open(r->cfg.repo, &r->cfg.ropts, &repo, &owner);
	if (e < 0) {
		*ret_fail = (struct rec_failure){ REC_FAIL_REPO, e == -TD_E_LOCKED ? owner : 0 };
		goto out_free;
	}
	r->repo_handle = repo;

	/* The sampler attaches (the tracer must be the thread that seizes). */
	if (pthread_create(&r->sampler, NULL, sampler_main, r) != 0) {
		e = -EAGAIN;
		goto out_free;
	}
	r->sampler_started = true;
	while (!atomic_load(&r->attach_state)) {
		struct pollfd pfd = { r->main_wake, POLLIN, 0 };
		uint64_t junk;

		if (poll(&pfd, 1, 1000) > 0 && read(r->main_wake, &junk, sizeof(junk)) < 0)
			junk = 0;
	}
	if (atomic_load(&r->attach_state) < 0) {
		e = r->attach_err ? r->attach_err : -EIO;
		*ret_fail = (struct rec_failure){ r->attach_pid ? REC_FAIL_ATTACH : REC_FAIL_TRACER,
			r->attach_pid };
		goto out_free;
	}
	if (pthread_create(&r->unwinder, NULL, unwinder_main, r) != 0) {
		e = -EAGAIN;
		goto out_free;
	}
	r->unwinder_started = true;
	*ret_rec = r;
	return 0;
out_free:
	/* nothing was recorded: a repository made by this call goes again */
	repo_discard(r->repo_handle);
	r->repo_handle = NULL;
	rec_free(r);
	return e;
}

void rec_run(struct recorder *r, const struct rec_hooks *hooks, void *arg)
{
	uint64_t last = td_now_ns();

	while (!atomic_load(&r->unwinder_done)) {
		struct pollfd pfd[2] = { { r->sfd, POLLIN, 0 }, { r->main_wake, POLLIN, 0 } };
		struct signalfd_siginfo si;
		uint64_t junk;

		poll(pfd, 2, 1000);
		if (pfd[1].revents & POLLIN && read(r->main_wake, &junk, sizeof(junk)) < 0)
			junk = 0;
		while (read(r->sfd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
			switch (si.ssi_signo) {
			case SIGINT:
			case SIGTERM:
				if (atomic_fetch_add(&r->stop, 1) >= 1)
					atomic_store(&r->stop, 2); /* hurry */
				rec_wake(r->sampler_wake);
				rec_wake(r->unwinder_wake);
				break;
			case SIGHUP:
				atomic_store(&r->rotate_req, 1);
				rec_wake(r->unwinder_wake);
				break;
			case SIGUSR1:
				atomic_store(&r->snapshot_req, 1);
				rec_wake(r->unwinder_wake);
				break;
			}
		}
		for (struct rec_notice *n; (n = spsc_peek(&r->notices)); spsc_pop(&r->notices))
			if (hooks && hooks->notice)
				hooks->notice(n, arg);
		if (hooks && hooks->tick && td_now_ns() - last >= 1000000000u) {
			hooks->tick(r, arg);
			last = td_now_ns();
		}
	}
}

void rec_free(struct recorder *r)
{
	if (!r)
		return;
	atomic_store(&r->stop, 1);
	if (r->sampler_started) {
		rec_wake(r->sampler_wake);
		pthread_join(r->sampler, NULL);
	}
	if (r->unwinder_started)
		pthread_join(r->unwinder, NULL);
	if (r->repo_handle)
		repo_close(r->repo_handle, TCF_END_STOP);
	spsc_free(&r->samples);
	spsc_free(&r->events);
	spsc_free(&r->notices);
	if (r->sfd >= 0)
		close(r->sfd);
	if (r->unwinder_wake >= 0)
		close(r->unwinder_wake);
	if (r->sampler_wake >= 0)
		close(r->sampler_wake);
	if (r->main_wake >= 0)
		close(r->main_wake);
	free(r);
}
