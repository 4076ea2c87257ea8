/* SPDX-License-Identifier: GPL-2.0-or-later */
/* CPU-time sampling by the kernel: one perf_event task-clock counter per
 * (thread, CPU), whose overflow makes the kernel copy the thread's user
 * registers and the top of its user stack into a ring buffer, on the
 * thread's own CPU, at the instant the period of CPU time ran out.
 *
 * Why: a ptrace stop requested from another CPU lands where the thread
 * next enters the kernel, not where it was (measured here: a thread that
 * spins 25 us and then calls getppid was stopped at getppid in 96% of the
 * cross-CPU interrupts, 4% when tracer and thread shared a CPU; perf put 1%
 * there).  The kernel's sample is taken in the timer interrupt on the
 * thread's CPU, so it agrees with `perf record -e task-clock` by
 * construction, stops no thread, and counts only threads that run.
 *
 * Layout: one ring per CPU, owned by a dummy event of the calling thread
 * on that CPU; every (thread, CPU) event sends its samples there
 * (PERF_EVENT_IOC_SET_OUTPUT allows it only between events of the same
 * CPU).  The caller drains the rings with pt_perf_drain(), which copies
 * each sample into a slot the caller gives (no allocation, no lock).
 *
 * Periods and their cost.  A fixed period locks onto a periodic workload
 * (a 70/30 split in 10 ms cycles read 80/20 at 99 Hz), so each event's
 * period is drawn anew, uniform over +-50% of the mean, but only when the
 * caller says (pt_perf_rearm, on its own timer, at most every
 * PT_PERF_REARM_NS) and only for
 * the events that fired since: one PERIOD ioctl per event and timer, not
 * a read, an ioctl and a wake-up per sample (two thirds of the daemon's
 * CPU per sample, measured: each is an interrupt of the target's CPU).
 * The kernel restarts a period from nothing at the ioctl, so the code
 * that runs right after one is sampled late: never at a moment the
 * target chose.  Rearming at the drain that a target's signal stop
 * triggers put the stop's signal handler, which runs next, out of reach
 * of most samples (a handler taking 3% of the CPU time got 0.1% of the
 * samples; perf 3%).  The kernel keeps a new period until the next
 * ioctl, so periods vary; each sample is weighted by the
 * CPU time since its event's previous sample (the count the kernel
 * writes with it, PERF_SAMPLE_READ) in periods, rounded at random so that
 * the expected weight is exact: 0.7 periods is one sample 70% of the time,
 * none otherwise.  The rate is then the one asked, whatever the drains.
 *
 * Off-CPU intervals (cfg.offcpu, wall mode): a second event per (thread,
 * CPU), PERF_COUNT_SW_CONTEXT_SWITCHES at period 1, copies the user
 * registers and stack each time the thread leaves a CPU; its switch
 * records are paired in perf-switch.c.
 *
 * Weights add up: a thread's time in each state (on a CPU; off one,
 * preempted or blocked) is a line cut into periods with a sampling point
 * at a random place in each (perf_periods_of); a sample weighs the points that
 * fall in its stretch, so each state's weights add up to its time within
 * a period, and each is fair.  With offcpu the switch records cut that
 * time into stretches on a CPU and intervals off one, without overlap: a
 * task-clock sample weighs its thread's time on CPUs since its previous
 * one by the records (perf_weigh_on), not its event's count, which overlaps
 * the intervals at each switch.  A thread's events reopened for another
 * stack size (pt_perf_resize) hand what they counted since their last
 * samples to its next one: the new ones count from nothing.
 *
 * Early samples (pt_perf_early: a lock's running owner, for the waits): the
 * thread's event on one CPU gets a short period at once, and its drawn
 * one back at the next pt_perf_rearm, both on the caller's timer.  The
 * kernel (6.18, checked) restarts the period from nothing at the ioctl, on
 * a CPU or off (then from its next switch in), and samples every short
 * period until the next ioctl; the sample's PERIOD field keeps the period
 * of the event's opening.  The weights stay the CPU time's (perf_periods_of),
 * whatever the period: the first sample after the ask, of weight 0, goes
 * out as TD_SAMPLE_OWNER (a stack for the waits, no period of the
 * profile) rather than thinned; the later ones of the short period are
 * thinned as any.
 *
 * Bounds: max_threads threads, one fd per thread and CPU (two with
 * offcpu); stack copies of at most PT_PERF_MAX_STACK bytes (the kernel's
 * limit; it copies less where the whole record would not fit its u16
 * size: about 240 bytes less with our registers); at most PERF_MAX_SWITCHES switch records a
 * drain (more: the intervals left unpaired are dropped and counted).
 * Everything is allocated by pt_perf_new; add/remove/drain never allocate.
 */
#define _GNU_SOURCE
#include "perf-internal.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <asm/perf_regs.h>


static void close_thread(struct pt_perf *p, unsigned i);

static long perf_open(struct perf_event_attr *a, pid_t tid, int cpu, int group)
{
	return syscall(SYS_perf_event_open, a, tid, cpu, group, PERF_FLAG_FD_CLOEXEC);
}

static unsigned slot_of(const struct pt_perf *p, pid_t tid)
{
	return ((uint32_t)tid * 2654435761u) & (p->cap - 1);
}

struct perf_thread *perf_thread_find(const struct pt_perf *p, pid_t tid, unsigned *ret_i)
{
	for (unsigned i = slot_of(p, tid), k = 0; k < p->cap; i = (i + 1) & (p->cap - 1), k++) {
		if (p->th[i].tid == tid) {
			*ret_i = i;
			return &p->th[i];
		}
		if (!p->th[i].tid)
			return NULL;
	}
	return NULL;
}


static uint64_t rand64(struct pt_perf *p)
{
	p->rng = p->rng * 6364136223846793005ull + 1442695040888963407ull;
	return p->rng >> 11;
}

/* uniform over [0.5, 1.5) x the mean */
static uint64_t next_period(struct pt_perf *p)
{
	return p->cfg.period_ns / 2 + rand64(p) % (p->cfg.period_ns + 1);
}

static void attr_sample(const struct pt_perf *p, struct perf_event_attr *a)
{
	memset(a, 0, sizeof(*a));
	a->size = sizeof(*a);
	a->type = PERF_TYPE_SOFTWARE;
	a->config = PERF_COUNT_SW_TASK_CLOCK;
	a->sample_period = p->cfg.period_ns;
	/* READ: the event's count at the sample, for its weight.  PERIOD
	 * tells the two events' samples apart (they share a layout): a
	 * switch sample's is 1, a task-clock period is at least 50 us */
	a->sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_PERIOD |
		PERF_SAMPLE_READ | PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER;
	a->sample_regs_user = PERF_REGS_MASK;
	a->sample_stack_user = p->cfg.stack_bytes;
	a->use_clockid = 1;
	a->clockid = CLOCK_MONOTONIC;
	a->exclude_kernel = p->user_only;
	a->exclude_hv = 1;
	a->disabled = 1;
	/* the kernel's part of the call chain alone (the user part is
	 * unwound from the stack copy), at most TD_KERNEL_FRAMES deep */
	if (p->cfg.kernel && !p->user_only) {
		a->sample_type |= PERF_SAMPLE_CALLCHAIN;
		a->exclude_callchain_user = 1;
		a->sample_max_stack = TD_KERNEL_FRAMES;
	}
	if (p->cfg.switches && !p->offcpu) {
		a->context_switch = 1;
		a->sample_id_all = 1; /* a switch record says whose it is */
	}
}

/* offcpu: a sample at every switch out (the user registers and stack
 * where the thread left the CPU), and the switch records.  Counting a
 * switch happens in the scheduler, in kernel mode: it cannot exclude the
 * kernel, so it needs the permission for kernel-mode samples. */
static void attr_switch(const struct pt_perf *p, struct perf_event_attr *a)
{
	attr_sample(p, a);
	a->config = PERF_COUNT_SW_CONTEXT_SWITCHES;
	a->sample_period = 1;
	a->exclude_kernel = 0;
	a->context_switch = 1;
	a->sample_id_all = 1;
}

int pt_perf_new(const struct pt_perf_config *cfg, struct pt_perf **ret_perf)
{
	struct pt_perf *p = calloc(1, sizeof(*p));
	struct perf_event_attr a;
	size_t sample_max;
	long n;
	int r = 0, nowner = 0;

	if (!p)
		return -ENOMEM;
	p->cfg = *cfg;
	p->cfg.stack_bytes &= ~7u;
	if (p->cfg.stack_bytes > PT_PERF_MAX_STACK)
		p->cfg.stack_bytes = PT_PERF_MAX_STACK;
	if (!p->cfg.period_ns)
		p->cfg.period_ns = 10101010;
	p->rng = cfg->seed | 1;
	p->epfd = -1;
	p->page = sysconf(_SC_PAGESIZE);
	n = sysconf(_SC_NPROCESSORS_CONF);
	p->ncpus = n > 0 ? (unsigned)n : 1;
	for (p->cap = 16; p->cap < 2 * cfg->max_threads; p->cap <<= 1)
		;
	/* room for 16 samples of the largest size per CPU, at least 256 KiB
	 * (the copies start whole and shrink to what each thread's stacks
	 * use: the daemon's maybe_fit) */
	sample_max = 512 + 8 * PERF_NREGS + p->cfg.stack_bytes;
	for (p->ring_bytes = 256 * 1024; p->ring_bytes < 16 * sample_max; p->ring_bytes <<= 1)
		;
	p->owner = malloc(p->ncpus * sizeof(*p->owner));
	p->ring = calloc(p->ncpus, sizeof(*p->ring));
	p->th = calloc(p->cap, sizeof(*p->th));
	p->fds = malloc((size_t)p->cap * p->ncpus * sizeof(*p->fds));
	p->cs = malloc((size_t)p->cap * p->ncpus * sizeof(*p->cs));
	p->head = calloc(p->ncpus, sizeof(*p->head));
	p->last = calloc((size_t)p->cap * p->ncpus, sizeof(*p->last));
	p->fired = calloc(((size_t)p->cap * p->ncpus + 63) / 64, sizeof(*p->fired));
	p->scratch = malloc(65536);
	p->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (!p->owner || !p->ring || !p->th || !p->fds || !p->cs || !p->head || !p->last ||
		!p->fired || !p->scratch || p->epfd < 0) {
		r = p->epfd < 0 ? -errno : -ENOMEM;
		goto fail;
	}
	memset(p->owner, 0xff, p->ncpus * sizeof(*p->owner));
	memset(p->fds, 0xff, (size_t)p->cap * p->ncpus * sizeof(*p->fds));
	memset(p->cs, 0xff, (size_t)p->cap * p->ncpus * sizeof(*p->cs));

	/* Can we sample another process at all, and with kernel-mode
	 * samples?  Try on ourselves: the same checks, minus ptrace access
	 * (which attaching already proves). */
	attr_sample(p, &a);
	n = perf_open(&a, 0, -1, -1);
	if (n < 0 && (errno == EACCES || errno == EPERM)) {
		p->user_only = true;
		attr_sample(p, &a);
		n = perf_open(&a, 0, -1, -1);
	}
	if (n < 0) {
		r = -errno;
		goto fail;
	}
	close((int)n);
	if (cfg->offcpu && !p->user_only) {
		attr_switch(p, &a);
		n = perf_open(&a, 0, -1, -1);
		p->sw = n >= 0 ? malloc(PERF_MAX_SWITCHES * sizeof(*p->sw)) : NULL;
		p->offcpu = p->sw != NULL;
		if (n >= 0)
			close((int)n);
	}

	for (unsigned c = 0; c < p->ncpus; c++) {
		struct epoll_event ev = { .events = EPOLLIN, .data.u32 = c };
		void *m;

		memset(&a, 0, sizeof(a));
		a.size = sizeof(a);
		a.type = PERF_TYPE_SOFTWARE;
		a.config = PERF_COUNT_SW_DUMMY;
		a.use_clockid = 1;
		a.clockid = CLOCK_MONOTONIC;
		a.exclude_kernel = 1;
		a.exclude_hv = 1;
		a.watermark = 1;
		a.wakeup_watermark = (uint32_t)(p->ring_bytes / 4);
		n = perf_open(&a, 0, (int)c, -1);
		if (n < 0) {
			if (errno == ENODEV || errno == EINVAL)
				continue; /* an offline CPU */
			r = -errno;
			goto fail;
		}
		p->owner[c] = (int)n;
		m = mmap(NULL, (size_t)p->page + p->ring_bytes, PROT_READ | PROT_WRITE, MAP_SHARED,
			p->owner[c], 0);
		if (m == MAP_FAILED) {
			r = -errno;
			goto fail;
		}
		p->ring[c] = m;
		if (epoll_ctl(p->epfd, EPOLL_CTL_ADD, p->owner[c], &ev) < 0) {
			r = -errno;
			goto fail;
		}
		nowner++;
	}
	if (!nowner) {
		r = -ENODEV;
		goto fail;
	}
	*ret_perf = p;
	return 0;
fail:
	pt_perf_free(p);
	return r;
}

static void close_thread(struct pt_perf *p, unsigned i)
{
	int *fd = &p->fds[(size_t)i * p->ncpus], *cs = &p->cs[(size_t)i * p->ncpus];

	for (unsigned c = 0; c < p->ncpus; c++) {
		if (fd[c] >= 0)
			close(fd[c]);
		if (cs[c] >= 0)
			close(cs[c]);
		fd[c] = cs[c] = -1;
	}
}

void pt_perf_free(struct pt_perf *p)
{
	if (!p)
		return;
	if (p->th && p->fds && p->cs)
		for (unsigned i = 0; i < p->cap; i++)
			if (p->th[i].tid)
				close_thread(p, i);
	for (unsigned c = 0; p->ring && c < p->ncpus; c++)
		if (p->ring[c])
			munmap(p->ring[c], (size_t)p->page + p->ring_bytes);
	for (unsigned c = 0; p->owner && c < p->ncpus; c++)
		if (p->owner[c] >= 0)
			close(p->owner[c]);
	if (p->epfd >= 0)
		close(p->epfd);
	free(p->owner);
	free(p->ring);
	free(p->th);
	free(p->fds);
	free(p->cs);
	free(p->sw);
	free(p->head);
	free(p->last);
	free(p->fired);
	free(p->scratch);
	free(p);
}

/* Open thread slot i's events (its fds all -1). */
static int open_thread(struct pt_perf *p, unsigned i, pid_t tid, uint32_t stack_bytes)
{
	struct perf_event_attr a, sw;
	unsigned opened = 0;
	int *fd = &p->fds[(size_t)i * p->ncpus], *cs = &p->cs[(size_t)i * p->ncpus], r = 0;

	attr_sample(p, &a);
	a.sample_stack_user = stack_bytes;
	attr_switch(p, &sw);
	sw.sample_stack_user = stack_bytes;
	for (unsigned c = 0; c < p->ncpus; c++) {
		long n;

		if (p->owner[c] < 0)
			continue;
		if (p->offcpu) {
			n = perf_open(&sw, tid, (int)c, -1);
			if (n < 0) {
				r = -errno;
				break;
			}
			cs[c] = (int)n;
			if (ioctl(cs[c], PERF_EVENT_IOC_SET_OUTPUT, p->owner[c]) < 0 ||
				ioctl(cs[c], PERF_EVENT_IOC_ENABLE, 0) < 0) {
				r = -errno;
				break;
			}
		}
		a.sample_period = next_period(p);
		p->last[(size_t)i * p->ncpus + c] = 0;
		n = perf_open(&a, tid, (int)c, -1);
		if (n < 0) {
			r = -errno;
			break;
		}
		fd[c] = (int)n;
		if (ioctl(fd[c], PERF_EVENT_IOC_SET_OUTPUT, p->owner[c]) < 0 ||
			ioctl(fd[c], PERF_EVENT_IOC_ENABLE, 0) < 0) {
			r = -errno;
			break;
		}
		opened++;
	}
	if (r < 0 || !opened) {
		close_thread(p, i);
		return r < 0 ? r : -ENODEV;
	}
	return 0;
}

static uint32_t stack_size(const struct pt_perf *p, uint32_t bytes)
{
	bytes &= ~7u;
	return bytes && bytes < p->cfg.stack_bytes ? bytes : p->cfg.stack_bytes;
}

int pt_perf_add(struct pt_perf *p, pid_t pid, pid_t tid, uint32_t stack_bytes)
{
	unsigned i;
	int r;

	if (perf_thread_find(p, tid, &i))
		return 0;
	if (p->count + 1 > p->cap / 2)
		return -TD_E_LIMIT;
	for (i = slot_of(p, tid); p->th[i].tid; i = (i + 1) & (p->cap - 1))
		;
	stack_bytes = stack_size(p, stack_bytes);
	r = open_thread(p, i, tid, stack_bytes);
	if (r < 0)
		return r;
	/* on a CPU from now, until its first switch record says it was not */
	p->th[i] = (struct perf_thread){ .tid = tid, .pid = pid, .stack_bytes = stack_bytes,
		.on_since = (uint64_t)td_now_ns(), .on_guess = true };
	p->count++;
	return 0;
}

/* Thread slot i's CPU time since its events' last samples, by their
 * counts now (a task-clock event reads its count; no sample needed). */
static uint64_t unsampled_ns(const struct pt_perf *p, unsigned i)
{
	uint64_t sum = 0;

	for (unsigned c = 0; c < p->ncpus; c++) {
		size_t j = (size_t)i * p->ncpus + c;
		uint64_t count;

		if (p->fds[j] >= 0 && read(p->fds[j], &count, sizeof(count)) == sizeof(count) &&
			count > p->last[j])
			sum += count - p->last[j];
	}
	return sum;
}

int pt_perf_resize(struct pt_perf *p, pid_t tid, uint32_t stack_bytes)
{
	unsigned i;
	int r;

	if (!perf_thread_find(p, tid, &i))
		return -ENOENT;
	stack_bytes = stack_size(p, stack_bytes);
	if (stack_bytes == p->th[i].stack_bytes)
		return 0;
	/* The new events count from nothing: the CPU time the closed ones
	 * counted since their last samples (up to a period per CPU, lost
	 * at every resize before) goes to the next sample, and their
	 * samples still in the ring, after this drain's head, are
	 * counted in it rather than weighed against the new counts (a
	 * whole recording's CPU time on that CPU, at once).  offcpu
	 * weighs by the switch records, not the counts. */
	p->th[i].reopened = (uint64_t)td_now_ns();
	if (!p->offcpu)
		p->th[i].carry_ns += unsampled_ns(p, i);
	close_thread(p, i);
	r = open_thread(p, i, tid, stack_bytes);
	if (r < 0) {
		pt_perf_remove(p, tid); /* its fds are closed: no longer sampled */
		return r;
	}
	p->th[i].stack_bytes = stack_bytes;
	return 0;
}

void pt_perf_end(struct pt_perf *p, pid_t tid, uint64_t at_ns)
{
	unsigned i;
	struct perf_thread *th = p ? perf_thread_find(p, tid, &i) : NULL;

	if (th)
		th->ended = at_ns;
}

void pt_perf_begin(struct pt_perf *p, pid_t tid, uint64_t at_ns)
{
	unsigned i;
	struct perf_thread *th = p ? perf_thread_find(p, tid, &i) : NULL;

	if (th)
		th->begun = at_ns;
}

void pt_perf_remove(struct pt_perf *p, pid_t tid)
{
	unsigned i, j, k;

	if (!perf_thread_find(p, tid, &i))
		return;
	close_thread(p, i);
	p->th[i].tid = 0;
	p->count--;
	/* Backward-shift deletion keeps probe chains whole without
	 * tombstones; the fds move with their thread. */
	for (j = (i + 1) & (p->cap - 1); p->th[j].tid; j = (j + 1) & (p->cap - 1)) {
		k = slot_of(p, p->th[j].tid);
		if ((j > i && (k <= i || k > j)) || (j < i && (k <= i && k > j))) {
			p->th[i] = p->th[j];
			memcpy(&p->fds[(size_t)i * p->ncpus], &p->fds[(size_t)j * p->ncpus],
				p->ncpus * sizeof(*p->fds));
			memcpy(&p->cs[(size_t)i * p->ncpus], &p->cs[(size_t)j * p->ncpus],
				p->ncpus * sizeof(*p->cs));
			memcpy(&p->last[(size_t)i * p->ncpus], &p->last[(size_t)j * p->ncpus],
				p->ncpus * sizeof(*p->last));
			p->th[j].tid = 0;
			memset(&p->fds[(size_t)j * p->ncpus], 0xff, p->ncpus * sizeof(*p->fds));
			memset(&p->cs[(size_t)j * p->ncpus], 0xff, p->ncpus * sizeof(*p->cs));
			i = j;
		}
	}
}

unsigned pt_perf_threads(const struct pt_perf *p)
{
	return p->count;
}

bool pt_perf_user_only(const struct pt_perf *p)
{
	return p->user_only;
}

bool pt_perf_offcpu(const struct pt_perf *p)
{
	return p->offcpu;
}

bool pt_perf_kernel(const struct pt_perf *p)
{
	return p->cfg.kernel && !p->user_only;
}

int pt_perf_fd(const struct pt_perf *p)
{
	return p->epfd;
}

/* A new period for event j, from now. */
static void rearm(struct pt_perf *p, uint32_t j)
{
	uint64_t next = next_period(p);

	if (p->fds[j] >= 0)
		ioctl(p->fds[j], PERF_EVENT_IOC_PERIOD, &next);
}

/* Event j fired: a new period for it at the next pt_perf_rearm. */
static void rearm_later(struct pt_perf *p, uint32_t j)
{
	p->fired[j / 64] |= 1ull << (j % 64);
}

void pt_perf_rearm(struct pt_perf *p)
{
	size_t words = ((size_t)p->cap * p->ncpus + 63) / 64;
	uint64_t now = (uint64_t)td_now_ns();

	/* each ioctl on an event whose thread runs is an interrupt of its
	 * CPU, which the caller waits for: a sixth of the daemon's CPU at 999
	 * Hz when the drains came every 50 ms (perf record -g on tracerd) */
	if (!p->early && now - p->rearmed_ns < PT_PERF_REARM_NS)
		return;
	p->rearmed_ns = now;
	p->early = false;

	for (size_t w = 0; w < words; w++)
		for (uint64_t bits = p->fired[w]; bits; bits &= bits - 1)
			rearm(p, (uint32_t)(w * 64 + (unsigned)__builtin_ctzll(bits)));
	memset(p->fired, 0, words * sizeof(*p->fired));
}

/* The next ns of thread th's time in state line (on a CPU, preempted,
 * blocked), in periods: how many of its sampling points fall in them.
 * The time of each state is one line cut into slots of a period, with one
 * point in each slot at a random place: the expected weight of any
 * stretch is its length in periods, whatever comes before it, and no
 * rhythm of the program can line up with the points; and the weights of
 * a state add up to its time within a period.  (Points a random period
 * apart on one line for all states strayed from a thread's time by the
 * square root of a twelfth of their number, and a state's by the spread
 * of which state each point fell in: 4% of a server worker's on-CPU time
 * in 10 s at 99 Hz; rounding each stretch on its own at random strays by
 * the square root of their number; carrying a remainder from stretch to
 * stretch tilts short ones against long ones.) */
uint32_t perf_periods_of(struct pt_perf *p, struct perf_thread *th, unsigned line,
	uint64_t ns)
{
	struct perf_line *l = &th->line[line];
	uint64_t period = p->cfg.period_ns;
	uint32_t w = 0;

	ns = TD_MIN(ns, 1000 * period); /* a stale count: 1000 periods */
	if (!l->left) {
		l->at = rand64(p) % period;
		l->left = l->at + 1;
	}
	while (ns >= l->left) {
		uint64_t at = rand64(p) % period;

		ns -= l->left;
		l->left = period - l->at + at; /* to the next slot's point */
		l->at = at;
		w++;
	}
	l->left -= ns;
	return w;
}

/* The weight of a sample of event j (of thread th) at count: the CPU time
 * since its previous one, in periods. */
static uint32_t weigh(struct pt_perf *p, struct perf_thread *th, uint32_t j, uint64_t count)
{
	uint64_t gap = count > p->last[j] ? count - p->last[j] : 0;

	p->last[j] = count;
	gap += th->carry_ns; /* what its closed events counted (pt_perf_resize) */
	th->carry_ns = 0;
	return perf_periods_of(p, th, LINE_ON, gap);
}

/* ip, pid, tid, time, period, count (READ), nr and ips[nr] (CALLCHAIN,
 * when kernel chains are asked), abi, regs[PERF_NREGS] (when abi is not
 * NONE), size, data[size], dyn_size (when size is not 0).  false if the
 * record is too short for what it says. */
static bool parse_sample(const struct pt_perf *p, const uint8_t *rec, size_t len,
	struct perf_sample *ps)
{
	const uint8_t *q = rec + sizeof(struct perf_event_header), *end = rec + len;

	memset(ps, 0, sizeof(*ps));
#define TAKE(v)                                     \
	do {                                        \
		if ((size_t)(end - q) < sizeof(v))  \
			return false;               \
		memcpy(&(v), q, sizeof(v));         \
		q += sizeof(v);                     \
	} while (0)
	TAKE(ps->ip);
	TAKE(ps->pid);
	TAKE(ps->tid);
	TAKE(ps->time);
	TAKE(ps->period);
	TAKE(ps->count);
	if (pt_perf_kernel(p)) {
		TAKE(ps->nchain);
		if ((uint64_t)(end - q) / 8 < ps->nchain)
			return false;
		ps->chain = q;
		q += ps->nchain * 8;
	}
	TAKE(ps->abi);
	if (ps->abi != PERF_SAMPLE_REGS_ABI_NONE)
		for (unsigned i = 0; i < PERF_NREGS; i++)
			TAKE(ps->regs[i]);
	TAKE(ps->size);
	if (ps->size) {
		if ((uint64_t)(end - q) < ps->size + 8)
			return false;
		ps->stack = q;
		q += ps->size;
		TAKE(ps->dyn);
	}
#undef TAKE
	return true;
}

/* The kernel's frames of ps's call chain into s (TD_SAMPLE_KCHAIN),
 * innermost first.  The chain opens with PERF_CONTEXT_KERNEL; a context
 * marker (the values from PERF_CONTEXT_MAX up) is no frame, and the user
 * context (excluded, but a guest's or a marker's) ends the kernel's. */
static void put_chain(const struct perf_sample *ps, struct td_sample *s)
{
	s->nkernel = 0;
	for (uint64_t i = 0; i < ps->nchain && s->nkernel < TD_KERNEL_FRAMES; i++) {
		uint64_t ip;

		memcpy(&ip, ps->chain + 8 * i, 8);
		if (ip == PERF_CONTEXT_USER)
			break;
		if (ip >= (uint64_t)PERF_CONTEXT_MAX)
			continue;
		s->kernel_ips[s->nkernel++] = ip;
	}
	if (s->nkernel)
		s->flags |= TD_SAMPLE_KCHAIN;
}

/* Hand a parsed sample to the caller: flags (TD_SAMPLE_*), weight in
 * periods, at time. */
void perf_put_sample(const struct perf_sample *ps, uint32_t flags, uint32_t weight,
	uint64_t time, const struct pt_round_ops *ops, void *arg, struct pt_perf_stats *st)
{
	struct td_sample *s;
	/* in: what the kernel copied (the slot needs no more); out: what it holds */
	uint32_t window = (uint32_t)TD_MIN(ps->dyn, ps->size);
	uint64_t dyn = ps->dyn;
	const uint64_t *regs = ps->regs;

	s = ops->slot_get ? ops->slot_get(arg, (pid_t)ps->pid, (pid_t)ps->tid, &window) : NULL;
	if (!s) {
		st->dropped++;
		return;
	}
	memset(&s->regs, 0, sizeof(s->regs));
	/* perf's order (mask bits ascending) to struct user_regs_struct */
	s->regs.rax = regs[0];
	s->regs.rbx = regs[1];
	s->regs.rcx = regs[2];
	s->regs.rdx = regs[3];
	s->regs.rsi = regs[4];
	s->regs.rdi = regs[5];
	s->regs.rbp = regs[6];
	s->regs.rsp = regs[7];
	s->regs.rip = regs[8];
	s->regs.eflags = regs[9];
	s->regs.cs = regs[10];
	s->regs.ss = regs[11];
	s->regs.r8 = regs[12];
	s->regs.r9 = regs[13];
	s->regs.r10 = regs[14];
	s->regs.r11 = regs[15];
	s->regs.r12 = regs[16];
	s->regs.r13 = regs[17];
	s->regs.r14 = regs[18];
	s->regs.r15 = regs[19];
	s->regs.orig_rax = (unsigned long long)-1;
	s->pid = (int32_t)ps->pid;
	s->tid = (int32_t)ps->tid;
	s->time_ns = time;
	s->stopped_ns = 0;
	s->flags = TD_SAMPLE_PERF | flags | (weight != 1 ? TD_SAMPLE_WEIGHTED : 0);
	s->weight = weight;
	s->runnable = 0;
	s->stack_addr = s->regs.rsp;
	s->stack_end = 0;
	if (dyn > ps->size)
		dyn = ps->size;
	if (dyn > window)
		dyn = window;
	if (ps->stack && dyn)
		memcpy(s->stack, ps->stack, dyn);
	else
		s->flags |= TD_SAMPLE_STACK_FAILED;
	s->stack_len = (uint32_t)dyn;
	put_chain(ps, s);
	if (ops->slot_put)
		ops->slot_put(arg, s);
	st->samples++;
}

/* Is ps the first sample of th since pt_perf_early asked for one?  Then
 * it is kept, of any weight. */
static bool early_taken(struct perf_thread *th, const struct perf_sample *ps)
{
	if (!th->early_ns || ps->time < th->early_ns)
		return false;
	th->early_ns = 0;
	return true;
}

int pt_perf_early(struct pt_perf *p, pid_t tid, int cpu, uint64_t ns)
{
	uint64_t now = (uint64_t)td_now_ns(); /* before: no sample of it can precede */
	unsigned i;
	int r = -ENOENT;

	if (!perf_thread_find(p, tid, &i))
		return -ENOENT;
	ns = TD_MAX(ns, PT_PERF_EARLY_MIN_NS);
	for (unsigned c = 0; c < p->ncpus; c++) {
		uint32_t j = (uint32_t)((size_t)i * p->ncpus + c);

		if (p->fds[j] < 0 || (cpu >= 0 && (unsigned)cpu != c))
			continue;
		if (ioctl(p->fds[j], PERF_EVENT_IOC_PERIOD, &ns) < 0) {
			r = -errno;
			continue;
		}
		rearm_later(p, j); /* its drawn period back at the next rearm */
		r = 0;
	}
	if (r == 0) {
		p->th[i].early_ns = now;
		p->early = true; /* its period back at the next pt_perf_rearm */
	}
	return r;
}

/* A task-clock sample: on a CPU, weighed by the CPU time since the
 * event's previous sample (with offcpu: the thread's previous sample, by
 * its switch records). */
static void take_sample(struct pt_perf *p, unsigned cpu, const struct perf_sample *ps,
	bool kernel, const struct pt_round_ops *ops, void *arg, struct pt_perf_stats *st)
{
	struct perf_thread *th;
	uint32_t weight = 1, flags = 0;
	unsigned k;

	if ((th = perf_thread_find(p, (pid_t)ps->tid, &k)) && ps->time < th->reopened &&
		!p->offcpu) {
		st->thinned++; /* of its closed events: its time is in carry_ns */
		return;
	}
	if (th && p->fds[(size_t)k * p->ncpus + cpu] >= 0) {
		uint32_t j = (uint32_t)((size_t)k * p->ncpus + cpu);
		bool early = early_taken(th, ps);

		rearm_later(p, j);
		if (p->offcpu) {
			p->last[j] = ps->count;
			weight = perf_weigh_on(p, th, ps->time);
		} else {
			weight = weigh(p, th, j, ps->count);
		}
		if (!weight && !early) {
			st->thinned++;
			return;
		}
		if (!weight)
			flags = TD_SAMPLE_OWNER; /* a stack for the waits alone */
	}
	if (ps->abi == PERF_SAMPLE_REGS_ABI_NONE) {
		st->no_user_regs++; /* a kernel thread, or in the kernel past exit */
		return;
	}
	perf_put_sample(ps, flags | (kernel ? TD_SAMPLE_IN_KERNEL : 0), weight, ps->time, ops, arg, st);
}

/* The record at tail of ring c, in scratch when it wraps; NULL at the end
 * or for a record that cannot be read (the rest is dropped). */
const uint8_t *perf_record_at(struct pt_perf *p, unsigned c, uint64_t *tail,
	struct perf_event_header *eh, struct pt_perf_stats *st)
{
	const uint8_t *data = p->ring[c] + p->page;
	size_t off = (size_t)(*tail & (p->ring_bytes - 1));
	uint64_t head = p->head[c];

	if (*tail >= head || head - *tail < sizeof(*eh))
		return NULL;
	/* a header never wraps: records are 8-byte aligned */
	memcpy(eh, data + off, sizeof(*eh));
	if (eh->size < sizeof(*eh) || eh->size > head - *tail) {
		st->malformed++;
		*tail = head; /* cannot resynchronize: drop the rest */
		return NULL;
	}
	if (off + eh->size <= p->ring_bytes)
		return data + off;
	memcpy(p->scratch, data + off, p->ring_bytes - off);
	memcpy(p->scratch + (p->ring_bytes - off), data, eh->size - (p->ring_bytes - off));
	return p->scratch;
}

int pt_perf_drain(struct pt_perf *p, const struct pt_round_ops *ops, void *arg,
	struct pt_perf_stats *ret_stats)
{
	struct pt_perf_stats st = { 0 };
	uint64_t now;

	for (unsigned c = 0; c < p->ncpus; c++)
		if (p->ring[c])
			p->head[c] = __atomic_load_n(
				&((struct perf_event_mmap_page *)p->ring[c])->data_head, __ATOMIC_ACQUIRE);
	/* after the heads: every record read has a time before it */
	now = (uint64_t)td_now_ns();
	perf_collect_switches(p, ops, arg, &st);
	/* intervals open at the last drain, before this drain's samples of
	 * their threads (a continuation repeats the thread's last stack) */
	for (unsigned i = 0; p->offcpu && i < p->cap; i++)
		if (p->th[i].tid && p->th[i].open_since)
			perf_continue_open(p, &p->th[i], now, ops, arg, &st);
	for (unsigned c = 0; c < p->ncpus; c++) {
		struct perf_event_mmap_page *h = (void *)p->ring[c];
		struct perf_event_header eh;
		const uint8_t *rec;
		uint64_t tail;

		if (!h)
			continue;
		tail = h->data_tail;
		for (; (rec = perf_record_at(p, c, &tail, &eh, &st)); tail += eh.size) {
			if (eh.type == PERF_RECORD_SAMPLE) {
				bool kernel = (eh.misc & PERF_RECORD_MISC_CPUMODE_MASK) ==
					PERF_RECORD_MISC_KERNEL;
				struct perf_sample ps;

				if (!parse_sample(p, rec, eh.size, &ps))
					st.malformed++;
				else if (ps.period == 1 && p->offcpu)
					perf_take_switch(p, &ps, now, ops, arg, &st);
				else
					take_sample(p, c, &ps, kernel, ops, arg, &st);
			} else if (eh.type == PERF_RECORD_LOST && eh.size >= sizeof(eh) + 16) {
				uint64_t lost;

				memcpy(&lost, rec + sizeof(eh) + 8, sizeof(lost));
				st.lost += lost;
				st.lost_records++;
			} else if (eh.type == PERF_RECORD_THROTTLE) {
				st.throttled++;
			}
		}
		__atomic_store_n(&h->data_tail, tail, __ATOMIC_RELEASE);
	}
	if (p->offcpu)
		perf_carry_on(p, now);
	if (ret_stats)
		*ret_stats = st;
	return (int)st.samples;
}
