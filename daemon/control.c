/* SPDX-License-Identifier: GPL-2.0-or-later */
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
 * PTRACE_O_EXITKILL is never set.
 *
 * Ownership (daemon-internal.h has the whole picture): this thread owns
 * struct recorder; it sets up struct rec_shared before the threads start
 * and frees it after joining them; it hands the repository to the writer
 * (writer_new) before anything is attached.  In struct rec_shared it
 * writes stop, rotate_req and snapshot_req, consumes the notices ring,
 * and reads the counters. */
#define _GNU_SOURCE
#include "daemon-internal.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <unistd.h>

/* The control loop's state.  owns: cfg (a copy), sh (its rings and
 * wakes), sfd, the two threads, writer (run by the writer thread from
 * its start until the join) */
struct recorder {
	struct rec_config cfg;
	struct rec_shared sh;
	int sfd; /* signalfd of the signals the loop handles */
	pthread_t sampler_thread, writer_thread;
	bool sampler_started, writer_started;
	struct writer *writer;
	unsigned asked; /* follow: rec_attach requests not yet answered */
};

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

void rec_stats(const struct recorder *r, struct rec_stats *ret)
{
	/* atomics are read, not written; the cast only drops const */
	struct rec_shared *sh = (struct rec_shared *)&r->sh;
	uint32_t v[REC_STOP_RING];
	uint64_t n = atomic_load(&sh->stop_n);
	size_t k = n < REC_STOP_RING ? (size_t)n : REC_STOP_RING;

	for (size_t i = 0; i < k; i++)
		v[i] = atomic_load_explicit(&sh->stop_ns[i], memory_order_relaxed);
	qsort(v, k, sizeof(*v), cmp_u32);
	*ret = (struct rec_stats){
		.samples_taken = atomic_load(&sh->samples_taken),
		.samples_written = atomic_load(&sh->samples_written),
		.unwritten_runnable = atomic_load(&sh->unwritten_runnable),
		.unwritten_hurried = atomic_load(&sh->unwritten_hurried),
		.unwritten_failed = atomic_load(&sh->unwritten_failed),
		.ticks = atomic_load(&sh->ticks),
		.lost_ring = atomic_load(&sh->lost_ring),
		.lost_not_stopped = atomic_load(&sh->lost_not_stopped),
		.lost_events = atomic_load(&sh->lost_events),
		.lost_torn = atomic_load(&sh->lost_torn),
		.lost_kernel = atomic_load(&sh->lost_kernel),
		.skipped = atomic_load(&sh->skipped),
		/* written before attach_state, which rec_open waited for */
		.capture = (enum rec_capture)sh->capture,
		.offcpu = sh->offcpu,
		.perf_err = sh->perf_err,
		.kernel = (enum rec_kernel)sh->kernel,
		.kstack = sh->kallsyms != NULL, /* set by writer_new */
		.kstack_err = sh->kstack_err,
		.kstacks_read = atomic_load(&sh->kstacks_read),
		.unwind_partial = atomic_load(&sh->unwind_partial),
		.maps_denied = atomic_load(&sh->maps_denied),
		.maps_denied_err = atomic_load(&sh->maps_denied_err),
		.cut_by_kernel = atomic_load(&sh->cut_by_kernel),
		.threads_seen = atomic_load(&sh->threads_seen),
		.threads_live = atomic_load(&sh->threads_live),
		.bytes_written = atomic_load(&sh->bytes_written),
		.startup_cpu_us = atomic_load(&sh->startup_cpu_us),
		.startup_samples = atomic_load(&sh->startup_samples),
		.debug_reused = atomic_load(&sh->debug_reused),
		.debug_created = atomic_load(&sh->debug_created),
		.debug_failed = atomic_load(&sh->debug_failed),
		.debug_err = atomic_load(&sh->debug_err),
		.tables_reused = atomic_load(&sh->tables_reused),
		.tables_made = atomic_load(&sh->tables_made),
		.debug_over_bound = atomic_load(&sh->debug_over_bound),
		.stop_p50_us = k ? v[td_rank(k, 0.50)] / 1e3 : 0,
		.stop_p99_us = k ? v[td_rank(k, 0.99)] / 1e3 : 0,
		.stop_max_us = atomic_load(&sh->stop_max) / 1e3,
		.owner_stops = atomic_load(&sh->owner_stops),
		.owner_early = atomic_load(&sh->owner_early),
		.children_followed = atomic_load(&sh->children_followed),
		.children_left = atomic_load(&sh->children_left),
		.children_full = atomic_load(&sh->children_full),
		.cpu_missed = atomic_load(&sh->cpu_missed),
		.cpu_timers = atomic_load(&sh->cpu_timers),
		.cpu_timer_err = atomic_load(&sh->cpu_timer_err),
		.sampler_policy = sh->sampler_policy,
		.sampler_policy_err = sh->sampler_policy_err,
		.io_err = atomic_load(&sh->io_err),
		.chunks_changed = atomic_load(&sh->chunks_changed),
		.lost_changed = atomic_load(&sh->lost_changed),
	};
	for (unsigned i = 0; i < REC_TRIG_N; i++)
		ret->trig[i] = atomic_load_explicit(&sh->trig[i], memory_order_relaxed);
}

/* Bytes of the sample ring: each sample takes its copy's bytes, not the
 * largest window's.  Wall mode: a copy of every blocked thread can come in
 * one tick; 64 MiB, faulted in as used.  cpu mode: half a second of the
 * CPUs' samples at the first window (perf's copies start whole, up to
 * the kernel's limit, and shrink to fit: sampler.c's add_thread; by
 * ptrace, 8 KiB) (the writer's longest pauses, while it
 * loads a large binary's symbols, are a fraction of that), at least 4 MiB.
 * While the writer keeps up, the sampler stays in the first SAMPLES_WARM
 * bytes (ring_keep_warm), faulted in at once in cpu mode (ring_prefault),
 * and the rest is touched only by a backlog, rather than a fault per page
 * on each first pass (a fifth of the daemon's CPU at 99 Hz, measured with
 * 64 KiB slots that took ten seconds to come round; more than half of it
 * at 999 Hz with a 64 MiB ring). */
#define SAMPLES_WARM ((size_t)4 << 20)
static size_t sample_bytes(const struct rec_config *cfg)
{
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	uint32_t first = cfg->capture == REC_CAPTURE_PTRACE ?
		cfg->first_window : TD_MIN(cfg->max_window, (uint32_t)PT_PERF_MAX_STACK);
	size_t want = (size_t)cfg->hz * (size_t)(cpus > 0 ? cpus : 1) * td_sample_size(first) / 2;

	if (cfg->mode == REC_MODE_WALL)
		return 64u << 20;
	return TD_MIN(TD_MAX(TD_MAX(want, (size_t)4 << 20), 4 * td_sample_size(cfg->max_window)),
		(size_t)64 << 20);
}

int rec_open(const struct rec_config *cfg, struct recorder **ret_rec, struct rec_failure *ret_fail)
{
	struct recorder *r = calloc(1, sizeof(*r));
	struct rec_shared *sh;
	struct repo *repo = NULL;
	sigset_t sigs;
	struct rlimit rl;
	pid_t owner = 0;
	int e;

	*ret_fail = (struct rec_failure){ REC_FAIL_SETUP, 0 };
	if (cfg->max_procs > REC_MAX_PROCS_MAX) {
		free(r);
		return -EINVAL;
	}
	if (!r)
		return -ENOMEM;
	sh = &r->sh;
	r->cfg = *cfg;
	sh->cfg = &r->cfg;
	r->sfd = sh->writer_wake.fd = sh->sampler_wake.fd = sh->control_wake.fd = -1;
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
	/* a service's recorders leave the signals to the service */
	if (!cfg->follow)
		r->sfd = signalfd(-1, &sigs, SFD_CLOEXEC | SFD_NONBLOCK);
	if (r->sfd < 0 && !cfg->follow) {
		e = -errno;
		goto out_free;
	}
	e = wake_open(&sh->writer_wake);
	if (!e)
		e = wake_open(&sh->sampler_wake);
	if (!e)
		e = wake_open(&sh->control_wake);
	if (e < 0)
		goto out_free;
	e = ring_init_bytes(&sh->samples, sample_bytes(&r->cfg));
	if (!e)
		ring_keep_warm(&sh->samples, SAMPLES_WARM);
	if (!e && r->cfg.mode != REC_MODE_WALL)
		ring_prefault(&sh->samples);
	if (!e)
		e = ring_init(&sh->events, 65536, sizeof(struct rec_event));
	if (!e)
		e = ring_init(&sh->notices, cfg->follow ? 256 : 16, sizeof(struct rec_notice));
	if (!e && cfg->follow)
		e = ring_init(&sh->asks, REC_MAX_ASKED, sizeof(pid_t));
	if (!e && cfg->follow)
		e = ring_init(&sh->answers, REC_MAX_ASKED, sizeof(struct rec_notice));
	if (e < 0)
		goto out_free;
	r->cfg.ropts.target_pid = (uint32_t)r->cfg.pids[0];
	/* a death in any mode is written with its signal's source, and wall
	 * mode's wait episodes with their owners' stacks taken while they
	 * held the object: TCF 1.2 (1.1 brought wait episodes) */
	r->cfg.ropts.minor = 2;
	e = repo_open(r->cfg.repo, &r->cfg.ropts, &repo, &owner);
	if (e < 0) {
		*ret_fail = (struct rec_failure){ REC_FAIL_REPO, e == -TD_E_LOCKED ? owner : 0 };
		goto out_free;
	}
	/* From here the writer owns the repository, whether its thread ever
	 * runs or not (writer_free closes it then). */
	e = writer_new(sh, repo, &r->writer);
	if (e < 0) {
		repo_discard(repo);
		goto out_free;
	}

	/* The sampler attaches (the tracer must be the thread that seizes). */
	if (pthread_create(&r->sampler_thread, NULL, sampler_main, sh) != 0) {
		e = -EAGAIN;
		goto out_free;
	}
	r->sampler_started = true;
	while (!atomic_load(&sh->attach_state)) {
		struct pollfd pfd = { sh->control_wake.fd, POLLIN, 0 };

		if (poll(&pfd, 1, 1000) > 0)
			wake_drain(&sh->control_wake);
	}
	if (atomic_load(&sh->attach_state) < 0) {
		e = sh->attach_err ? sh->attach_err : -EIO;
		*ret_fail = (struct rec_failure){ sh->attach_pid ? REC_FAIL_ATTACH : REC_FAIL_TRACER,
			sh->attach_pid };
		goto out_free;
	}
	if (pthread_create(&r->writer_thread, NULL, writer_main, r->writer) != 0) {
		e = -EAGAIN;
		goto out_free;
	}
	r->writer_started = true;
	*ret_rec = r;
	return 0;
out_free:
	/* nothing was recorded: a repository made by this call goes again */
	if (r->writer)
		writer_discard_repo(r->writer);
	rec_free(r);
	return e;
}

/* Hand what the writer said (the notices ring) to the caller's hook. */
static void pass_notices(struct rec_shared *sh, const struct rec_hooks *hooks, void *arg)
{
	for (struct rec_notice *n; (n = ring_peek(&sh->notices)); ring_pop(&sh->notices))
		if (hooks && hooks->notice)
			hooks->notice(n, arg);
}

void rec_run(struct recorder *r, const struct rec_hooks *hooks, void *arg)
{
	struct rec_shared *sh = &r->sh;
	uint64_t last = td_now_ns();

	while (!atomic_load(&sh->writer_done)) {
		struct pollfd pfd[2] = { { r->sfd, POLLIN, 0 }, { sh->control_wake.fd, POLLIN, 0 } };
		struct signalfd_siginfo si;

		poll(pfd, 2, 1000);
		if (pfd[1].revents & POLLIN)
			wake_drain(&sh->control_wake);
		while (read(r->sfd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
			switch (si.ssi_signo) {
			case SIGINT:
			case SIGTERM:
				if (atomic_fetch_add(&sh->stop, 1) >= 1)
					atomic_store(&sh->stop, 2); /* hurry */
				wake_post(&sh->sampler_wake);
				wake_post(&sh->writer_wake);
				break;
			case SIGHUP:
				atomic_store(&sh->rotate_req, 1);
				wake_post(&sh->writer_wake);
				break;
			case SIGUSR1:
				atomic_store(&sh->snapshot_req, 1);
				wake_post(&sh->writer_wake);
				break;
			}
		}
		pass_notices(sh, hooks, arg);
		if (hooks && hooks->tick && td_now_ns() - last >= 1000000000u) {
			hooks->tick(r, arg);
			last = td_now_ns();
		}
	}
	/* what the writer said before it was done (the last exit) */
	pass_notices(sh, hooks, arg);
}

int rec_attach(struct recorder *r, pid_t pid)
{
	pid_t *slot;

	/* each ask gets one answer: fewer than REC_MAX_ASKED outstanding
	 * keeps the sampler's answers ring from ever filling */
	if (r->asked >= REC_MAX_ASKED - 1 || !(slot = ring_reserve(&r->sh.asks)))
		return -EAGAIN;
	*slot = pid;
	ring_publish(&r->sh.asks);
	r->asked++;
	wake_post(&r->sh.sampler_wake);
	return 0;
}

int rec_fd(const struct recorder *r)
{
	return r->sh.control_wake.fd;
}

bool rec_poll(struct recorder *r, const struct rec_hooks *hooks, void *arg)
{
	struct rec_shared *sh = &r->sh;

	wake_drain(&sh->control_wake);
	for (struct rec_notice *n; (n = ring_peek(&sh->answers)); ring_pop(&sh->answers)) {
		r->asked--;
		if (hooks && hooks->notice)
			hooks->notice(n, arg);
	}
	pass_notices(sh, hooks, arg);
	return !atomic_load(&sh->writer_done);
}

uint64_t rec_heartbeat(const struct recorder *r)
{
	/* the cast only drops const: an atomic is read */
	return atomic_load(&((struct recorder *)r)->sh.heartbeat_ns);
}

void rec_free(struct recorder *r)
{
	struct rec_shared *sh;

	if (!r)
		return;
	sh = &r->sh;
	atomic_store(&sh->stop, 1);
	if (r->sampler_started) {
		wake_post(&sh->sampler_wake);
		pthread_join(r->sampler_thread, NULL);
	}
	if (r->writer_started)
		pthread_join(r->writer_thread, NULL);
	writer_free(r->writer); /* closes the repository if the thread never ran */
	ring_free(&sh->samples);
	ring_free(&sh->events);
	ring_free(&sh->notices);
	ring_free(&sh->asks);
	ring_free(&sh->answers);
	if (r->sfd >= 0)
		close(r->sfd);
	wake_close(&sh->writer_wake);
	wake_close(&sh->sampler_wake);
	wake_close(&sh->control_wake);
	free(r);
}
