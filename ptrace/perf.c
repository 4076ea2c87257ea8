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
 * caller says (pt_perf_rearm, on its own timer, every 100 ms) and only for
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
 * registers and stack each time the thread leaves a CPU, and its
 * PERF_RECORD_SWITCH records say when (and, going out, whether it was
 * preempted) and when it came back.  Each interval off a CPU becomes one
 * sample at the stack where it left, weighted by its duration in periods:
 * preempted, it waited for a CPU there; blocked, it waited in that call
 * (and, once woken, for a CPU: the caller splits that off).  The records
 * of one thread land in the rings of the CPUs it ran on, so a drain
 * first collects every switch record of every ring (sorted by thread and
 * time) and then pairs each switch-out sample with the thread's next
 * switch in.  An interval still open at the drain is weighed up to then
 * and continued (continue_open) at each later drain until its switch in
 * (a sample without stack bytes, TD_SAMPLE_REPEAT: the thread's last
 * stack, its interval's): a long sleep shows while it lasts.  A drain
 * can read a ring while the kernel writes a record whose time it took
 * already (a switch-out sample's record, a switch in): the first records
 * of the thread at the next drain settle it, and time weighed twice is
 * owed back (owed_ns).  Nothing is stopped or interrupted: the kernel
 * writes all of it at the switch.
 *
 * Weights add up: a thread's time in each state (on a CPU; off one,
 * preempted or blocked) is a line cut into periods with a sampling point
 * at a random place in each (periods_of); a sample weighs the points that
 * fall in its stretch, so each state's weights add up to its time within
 * a period, and each is fair.  With offcpu the switch records cut that
 * time into stretches on a CPU and intervals off one, without overlap: a
 * task-clock sample weighs its thread's time on CPUs since its previous
 * one by the records (weigh_on), not its event's count, which overlaps
 * the intervals at each switch.
 *
 * Early samples (pt_perf_early: a lock's running owner, for the waits): the
 * thread's event on one CPU gets a short period at once, and its drawn
 * one back at the next pt_perf_rearm, both on the caller's timer.  The
 * kernel (6.18, checked) restarts the period from nothing at the ioctl, on
 * a CPU or off (then from its next switch in), and samples every short
 * period until the next ioctl; the sample's PERIOD field keeps the period
 * of the event's opening.  The weights stay the CPU time's (periods_of),
 * whatever the period: the first sample after the ask, of weight 0, goes
 * out as TD_SAMPLE_OWNER (a stack for the waits, no period of the
 * profile) rather than thinned; the later ones of the short period are
 * thinned as any.
 *
 * Bounds: max_threads threads, one fd per thread and CPU (two with
 * offcpu); stack copies of at most PT_PERF_MAX_STACK bytes (a sample must
 * fit a u16 record size); at most PERF_MAX_SWITCHES switch records a
 * drain (more: the intervals left unpaired are dropped and counted).
 * Everything is allocated by pt_perf_new; add/remove/drain never allocate.
 */
#define _GNU_SOURCE
#include "ptrace.h"

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

/* The registers the unwinder needs, in perf's order (bit = index). */
#define PERF_REGS_MASK                                                                        \
	((1ull << PERF_REG_X86_AX) | (1ull << PERF_REG_X86_BX) | (1ull << PERF_REG_X86_CX) |  \
		(1ull << PERF_REG_X86_DX) | (1ull << PERF_REG_X86_SI) |                       \
		(1ull << PERF_REG_X86_DI) | (1ull << PERF_REG_X86_BP) |                       \
		(1ull << PERF_REG_X86_SP) | (1ull << PERF_REG_X86_IP) |                       \
		(1ull << PERF_REG_X86_FLAGS) | (1ull << PERF_REG_X86_CS) |                    \
		(1ull << PERF_REG_X86_SS) | (1ull << PERF_REG_X86_R8) |                       \
		(1ull << PERF_REG_X86_R9) | (1ull << PERF_REG_X86_R10) |                      \
		(1ull << PERF_REG_X86_R11) | (1ull << PERF_REG_X86_R12) |                     \
		(1ull << PERF_REG_X86_R13) | (1ull << PERF_REG_X86_R14) |                     \
		(1ull << PERF_REG_X86_R15))
#define PERF_NREGS 20
#define PERF_MAX_SWITCHES (1u << 17) /* switch records paired per drain */

/* A thread's time in one state (periods_of): ns until its next sampling
 * point, and where that point falls in its period-long slot. */
struct perf_line {
	uint64_t left, at;
};

/* The states whose time is sampled on lines of their own. */
enum { LINE_ON, LINE_PREEMPTED, LINE_BLOCKED, NLINES };

struct perf_thread {
	pid_t tid; /* 0: free */
	pid_t pid;
	uint32_t stack_bytes;
	struct perf_line line[NLINES];
	/* offcpu: its time on CPUs by its switch records, up to the last
	 * drain's last one; on a CPU since on_since (0: not), which is its
	 * add's time until a record says (on_guess) */
	uint64_t on_ns, on_since;
	uint64_t on_weighed; /* of its time on CPUs (on_at), what its samples weighed */
	/* offcpu: time on a CPU that an interval off one weighed already
	 * (it began at its switch-out sample, its record came later; a
	 * switch in that came after the drain that took it as still off):
	 * taken off its next on-CPU stretches (weigh_on) */
	uint64_t owed_ns;
	bool on_guess;
	uint64_t open_since; /* offcpu: off a CPU, weighed up to then; 0: not */
	uint64_t open_at;    /* the open interval's switch-out sample's time */
	bool open_preempted; /* the open interval began with a preemption */
	uint64_t early_ns;   /* pt_perf_early asked then; 0: its sample came */
	bool open_unsure;    /* its switch-out record was not in the ring yet */
};

/* A PERF_RECORD_SWITCH of a drain. */
struct perf_switch {
	uint32_t tid;
	uint32_t misc; /* PERF_RECORD_MISC_SWITCH_OUT[_PREEMPT] */
	uint64_t time;
	uint64_t on; /* its thread's time on CPUs in this drain's records, up to it */
};

/* owns: every event fd, the rings' mappings, the epoll fd, the tables */
struct pt_perf {
	struct pt_perf_config cfg;
	unsigned ncpus;
	long page;
	size_t ring_bytes; /* data part, a power of two */
	int epfd;
	int *owner;	    /* per CPU: the ring's dummy event, -1 if offline */
	uint8_t **ring;	    /* per CPU: the mapping (header page + data) */
	struct perf_thread *th; /* open addressing by tid, cap slots */
	int *fds;		/* cap x ncpus event fds, -1 if none */
	int *cs;		/* offcpu: cap x ncpus switch event fds, -1 if none */
	struct perf_switch *sw; /* offcpu: this drain's switch records */
	unsigned nsw;
	bool sw_full;		/* more than PERF_MAX_SWITCHES this drain */
	uint64_t *head;		/* per CPU: the data_head this drain reads to */
	uint64_t *last;		/* per event: its count at its previous sample */
	uint64_t *fired; /* per event, a bit: it fired since pt_perf_rearm */
	uint64_t rng;
	unsigned cap, count;
	uint8_t *scratch; /* a record that wraps around the ring's end */
	bool user_only; /* no permission for kernel-mode samples */
	bool offcpu;	/* switch-out samples (cfg.offcpu, and permitted) */
};

static void close_thread(struct pt_perf *p, unsigned i);

static long perf_open(struct perf_event_attr *a, pid_t tid, int cpu, int group)
{
	return syscall(SYS_perf_event_open, a, tid, cpu, group, PERF_FLAG_FD_CLOEXEC);
}

static unsigned slot_of(const struct pt_perf *p, pid_t tid)
{
	return ((uint32_t)tid * 2654435761u) & (p->cap - 1);
}

static struct perf_thread *thread_find(const struct pt_perf *p, pid_t tid, unsigned *ret_i)
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
	/* room for 32 samples of the largest size per CPU, at least 256 KiB */
	sample_max = 512 + 8 * PERF_NREGS + p->cfg.stack_bytes;
	for (p->ring_bytes = 256 * 1024; p->ring_bytes < 32 * sample_max; p->ring_bytes <<= 1)
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

	if (thread_find(p, tid, &i))
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

int pt_perf_resize(struct pt_perf *p, pid_t tid, uint32_t stack_bytes)
{
	unsigned i;
	int r;

	if (!thread_find(p, tid, &i))
		return -ENOENT;
	stack_bytes = stack_size(p, stack_bytes);
	if (stack_bytes == p->th[i].stack_bytes)
		return 0;
	close_thread(p, i);
	r = open_thread(p, i, tid, stack_bytes);
	if (r < 0) {
		pt_perf_remove(p, tid); /* its fds are closed: no longer sampled */
		return r;
	}
	p->th[i].stack_bytes = stack_bytes;
	return 0;
}

void pt_perf_remove(struct pt_perf *p, pid_t tid)
{
	unsigned i, j, k;

	if (!thread_find(p, tid, &i))
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
static uint32_t periods_of(struct pt_perf *p, struct perf_thread *th, unsigned line,
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
	return periods_of(p, th, LINE_ON, gap);
}

/* A sample record, as both events write it. */
struct perf_sample {
	uint64_t ip, time, period, count, abi, regs[PERF_NREGS], size, dyn;
	uint32_t pid, tid;
	const uint8_t *stack;
	const uint8_t *chain; /* CALLCHAIN: nchain u64 entries, unaligned */
	uint64_t nchain;
};

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
static void put_sample(const struct perf_sample *ps, uint32_t flags, uint32_t weight,
	uint64_t time, const struct pt_round_ops *ops, void *arg, struct pt_perf_stats *st)
{
	struct td_sample *s;
	uint32_t window = 0;
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

	if (!thread_find(p, tid, &i))
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
	if (r == 0)
		p->th[i].early_ns = now;
	return r;
}

static int switch_cmp(const void *a, const void *b)
{
	const struct perf_switch *x = a, *y = b;

	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	return x->time < y->time ? -1 : x->time > y->time;
}

/* Where a switch record of tid at time would go among this drain's. */
static size_t switch_index(const struct pt_perf *p, uint32_t tid, uint64_t time)
{
	size_t lo = 0, hi = p->nsw;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct perf_switch *m = &p->sw[mid];

		if (m->tid < tid || (m->tid == tid && m->time < time))
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* The first switch record of tid at or after time, or NULL. */
static const struct perf_switch *switch_after(const struct pt_perf *p, uint32_t tid,
	uint64_t time)
{
	size_t i = switch_index(p, tid, time);

	return i < p->nsw && p->sw[i].tid == tid ? &p->sw[i] : NULL;
}

/* Thread th's time on CPUs at time (of this drain) by its switch records:
 * on a CPU from a switch in to the next switch out. */
static uint64_t on_at(const struct pt_perf *p, const struct perf_thread *th, uint64_t time)
{
	size_t i = switch_index(p, (uint32_t)th->tid, time);
	const struct perf_switch *e =
		i && p->sw[i - 1].tid == (uint32_t)th->tid ? &p->sw[i - 1] : NULL;

	if (!e)
		return th->on_ns + (th->on_since && time > th->on_since ? time - th->on_since : 0);
	if (e->misc & PERF_RECORD_MISC_SWITCH_OUT)
		return th->on_ns + e->on;
	return th->on_ns + e->on + (time - e->time);
}

/* After the sort: each record's on.  A switch out without a switch in
 * before it (records lost, or a thread on a CPU since its add), the time
 * since the last one it knows of; two switches in, the first stretch is
 * lost with the record between. */
static void sum_on(struct pt_perf *p)
{
	for (size_t a = 0, b; a < p->nsw; a = b) {
		struct perf_thread *th;
		uint64_t acc = 0, since = 0;
		unsigned k;

		for (b = a + 1; b < p->nsw && p->sw[b].tid == p->sw[a].tid; b++)
			;
		if ((th = thread_find(p, (pid_t)p->sw[a].tid, &k)) &&
			(!th->on_guess || (p->sw[a].misc & PERF_RECORD_MISC_SWITCH_OUT)))
			since = th->on_since;
		for (size_t i = a; i < b; i++) {
			struct perf_switch *e = &p->sw[i];

			if (!(e->misc & PERF_RECORD_MISC_SWITCH_OUT)) {
				since = e->time;
			} else {
				if (since && e->time > since)
					acc += e->time - since;
				since = 0;
			}
			e->on = acc;
		}
	}
}

/* After the drain's samples: each thread's on_ns and on_since up to its
 * last record.  When records were not kept (sw_full), where a thread is
 * is unknown: taken as on a CPU from now if its next record is a switch
 * out, and what its records said of its time until now forgotten. */
static void carry_on(struct pt_perf *p, uint64_t now)
{
	for (size_t a = 0, b; a < p->nsw; a = b) {
		const struct perf_switch *e;
		struct perf_thread *th;
		unsigned k;

		for (b = a + 1; b < p->nsw && p->sw[b].tid == p->sw[a].tid; b++)
			;
		e = &p->sw[b - 1];
		if (!(th = thread_find(p, (pid_t)e->tid, &k)))
			continue;
		th->on_ns += e->on;
		th->on_since = e->misc & PERF_RECORD_MISC_SWITCH_OUT ? 0 : e->time;
		th->on_guess = false;
		if (p->sw_full) {
			th->on_since = now;
			th->on_guess = true;
			th->on_weighed = th->on_ns;
		}
	}
}

/* The weight of a task-clock sample of thread th at time, with offcpu:
 * its time on CPUs since its previous one by its switch records, which
 * cut its time into stretches on a CPU and intervals off one without
 * overlap, less what intervals weighed of it already.  (The event's own
 * count runs past the records at each switch, 5 us a switch on the VM
 * where it was measured, time the intervals weigh too: a web server's
 * worker's weights added up to 3% more than its life; see
 * docs/notes/offcpu.md.)  A sample that another CPU's ring had from
 * earlier weighs nothing. */
static uint32_t weigh_on(struct pt_perf *p, struct perf_thread *th, uint64_t time)
{
	uint64_t on = on_at(p, th, time), gap = on > th->on_weighed ? on - th->on_weighed : 0;
	uint64_t owed = TD_MIN(gap, th->owed_ns);

	th->on_weighed = TD_MAX(th->on_weighed, on);
	th->owed_ns -= owed;
	return periods_of(p, th, LINE_ON, gap - owed);
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

	if ((th = thread_find(p, (pid_t)ps->tid, &k)) && p->fds[(size_t)k * p->ncpus + cpu] >= 0) {
		uint32_t j = (uint32_t)((size_t)k * p->ncpus + cpu);
		bool early = early_taken(th, ps);

		rearm_later(p, j);
		if (p->offcpu) {
			p->last[j] = ps->count;
			weight = weigh_on(p, th, ps->time);
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
	put_sample(ps, flags | (kernel ? TD_SAMPLE_IN_KERNEL : 0), weight, ps->time, ops, arg, st);
}

/* The flags of an interval off a CPU: preempted, it waited for one;
 * else it was blocked in the kernel (a system call, a fault). */
static uint32_t offcpu_flags(bool preempted)
{
	return TD_SAMPLE_OFFCPU | (preempted ? TD_SAMPLE_RUNNABLE : TD_SAMPLE_IN_SYSCALL);
}

/* The record after e if it is the same thread's, else NULL. */
static const struct perf_switch *switch_next(const struct pt_perf *p, const struct perf_switch *e)
{
	return e + 1 < p->sw + p->nsw && e[1].tid == e->tid ? e + 1 : NULL;
}

/* An interval that began at its switch-out sample's time, its record not
 * in the ring yet: from the sample (its time is taken before the stack is
 * copied) to the record, the thread's records have it on the CPU too.
 * At most a period: a stray record is no reason to drop CPU time. */
static void owe_copy(const struct pt_perf *p, struct perf_thread *th, uint64_t sample,
	uint64_t record)
{
	if (record > sample)
		th->owed_ns += TD_MIN(record - sample, p->cfg.period_ns);
}

/* A switch-out sample: the stack where the thread left the CPU, its
 * interval from its switch-out record (preempted or blocked, it says) to
 * its next switch in.  Without the switch in, open up to now, continued
 * at later drains; with a switch out instead, the switch in was lost
 * (PERF_RECORD_LOST): where it ended is unknown, and the interval is
 * dropped rather than weighed over time the thread spent on a CPU. */
static void take_switch(struct pt_perf *p, const struct perf_sample *ps, uint64_t now,
	const struct pt_round_ops *ops, void *arg, struct pt_perf_stats *st)
{
	const struct perf_switch *e = switch_after(p, ps->tid, ps->time);
	struct perf_thread *th;
	uint64_t out = ps->time, in = now;
	bool preempted = false, open = true, unsure = true;
	uint32_t weight;
	unsigned k;

	if (!(th = thread_find(p, (pid_t)ps->tid, &k)))
		return; /* removed since */
	if (ps->abi == PERF_SAMPLE_REGS_ABI_NONE) {
		st->no_user_regs++; /* its last switch, past its exit */
		return;
	}
	if (e && (e->misc & PERF_RECORD_MISC_SWITCH_OUT)) {
		preempted = e->misc & PERF_RECORD_MISC_SWITCH_OUT_PREEMPT;
		out = e->time;
		unsure = false;
		e = switch_next(p, e);
	}
	if (e && !(e->misc & PERF_RECORD_MISC_SWITCH_OUT)) {
		in = e->time;
		open = false;
	} else if (e || p->sw_full) {
		/* its switch in lost, or among the records not kept */
		st->unpaired++;
		return;
	}
	weight = periods_of(p, th, preempted ? LINE_PREEMPTED : LINE_BLOCKED,
		in > out ? in - out : 0);
	if (open) {
		/* a drain can read the ring between the sample and its
		 * switch-out record: unsure, the record is taken at the
		 * next drain */
		th->open_since = now;
		th->open_at = ps->time;
		th->open_preempted = preempted;
		th->open_unsure = unsure;
	} else if (!weight) {
		st->thinned++; /* less than a period: its fraction is carried */
		return;
	}
	/* an open interval's stack goes now, even of weight 0: its
	 * continuations repeat it */
	put_sample(ps, offcpu_flags(preempted), weight, out, ops, arg, st);
	st->offcpu++;
}

/* Thread th's open interval: weighed from open_since to its switch in,
 * else to now and kept open.  Every record of the thread in this drain
 * came after its switch-out sample, so its first one ends the interval
 * (after the interval's own switch-out record, when that came late): a
 * switch in whatever its time (a record the kernel was still writing
 * when the last drain read the ring can be older than open_since: that
 * much was weighed twice, and is owed), a switch out if the switch in
 * was lost (the interval ends where it was weighed to). */
static void continue_open(struct pt_perf *p, struct perf_thread *th, uint64_t now,
	const struct pt_round_ops *ops, void *arg, struct pt_perf_stats *st)
{
	struct td_sample *s;
	uint32_t window = 0;
	const struct perf_switch *e = switch_after(p, (uint32_t)th->tid, 0);
	uint64_t from = th->open_since, to = now;
	uint32_t weight;

	if (e && (e->misc & PERF_RECORD_MISC_SWITCH_OUT) && th->open_unsure) {
		th->open_preempted = e->misc & PERF_RECORD_MISC_SWITCH_OUT_PREEMPT;
		owe_copy(p, th, th->open_at, e->time);
		e = switch_next(p, e);
	}
	if (e)
		th->open_unsure = false;
	if (e && (e->misc & PERF_RECORD_MISC_SWITCH_OUT)) {
		th->open_since = 0;
		return;
	}
	if (e) {
		to = e->time;
		if (to < from) {
			th->owed_ns += from - to;
			to = from;
		}
	} else if (p->sw_full) {
		return; /* cannot tell: weighed at the next drain */
	}
	th->open_since = e ? 0 : now;
	weight = periods_of(p, th, th->open_preempted ? LINE_PREEMPTED : LINE_BLOCKED, to - from);
	if (!weight)
		return;
	/* no stack: a repeat of the thread's last, its interval's sample */
	s = ops->slot_get ? ops->slot_get(arg, th->pid, th->tid, &window) : NULL;
	if (!s) {
		st->dropped++;
		return;
	}
	memset(s, 0, sizeof(*s));
	s->pid = th->pid;
	s->tid = th->tid;
	s->time_ns = from;
	s->flags = TD_SAMPLE_PERF | TD_SAMPLE_REPEAT | offcpu_flags(th->open_preempted) |
		(weight != 1 ? TD_SAMPLE_WEIGHTED : 0);
	s->weight = weight;
	if (ops->slot_put)
		ops->slot_put(arg, s);
	st->samples++;
}

/* The record at tail of ring c, in scratch when it wraps; NULL at the end
 * or for a record that cannot be read (the rest is dropped). */
static const uint8_t *record_at(struct pt_perf *p, unsigned c, uint64_t *tail,
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

/* Pass one of a drain: every switch record up to each ring's head, for
 * the caller (who ran) and, with offcpu, sorted for pairing. */
static void collect_switches(struct pt_perf *p, const struct pt_round_ops *ops, void *arg,
	struct pt_perf_stats *st)
{
	p->nsw = 0;
	p->sw_full = false;
	for (unsigned c = 0; c < p->ncpus; c++) {
		struct perf_event_header eh;
		const uint8_t *rec;
		uint64_t tail;

		if (!p->ring[c])
			continue;
		tail = ((struct perf_event_mmap_page *)p->ring[c])->data_tail;
		for (; (rec = record_at(p, c, &tail, &eh, st)); tail += eh.size) {
			/* sample_id: pid, tid (u32 each), time */
			struct perf_switch sw;

			if (eh.type != PERF_RECORD_SWITCH || eh.size < sizeof(eh) + 16)
				continue;
			memcpy(&sw.tid, rec + sizeof(eh) + 4, sizeof(sw.tid));
			memcpy(&sw.time, rec + sizeof(eh) + 8, sizeof(sw.time));
			sw.misc = eh.misc;
			if (ops->switched)
				ops->switched(arg, (pid_t)sw.tid, !(eh.misc & PERF_RECORD_MISC_SWITCH_OUT));
			if (!p->offcpu)
				continue;
			if (p->nsw == PERF_MAX_SWITCHES)
				p->sw_full = true;
			else
				p->sw[p->nsw++] = sw;
		}
	}
	if (p->offcpu) {
		qsort(p->sw, p->nsw, sizeof(*p->sw), switch_cmp);
		sum_on(p);
	}
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
	collect_switches(p, ops, arg, &st);
	/* intervals open at the last drain, before this drain's samples of
	 * their threads (a continuation repeats the thread's last stack) */
	for (unsigned i = 0; p->offcpu && i < p->cap; i++)
		if (p->th[i].tid && p->th[i].open_since)
			continue_open(p, &p->th[i], now, ops, arg, &st);
	for (unsigned c = 0; c < p->ncpus; c++) {
		struct perf_event_mmap_page *h = (void *)p->ring[c];
		struct perf_event_header eh;
		const uint8_t *rec;
		uint64_t tail;

		if (!h)
			continue;
		tail = h->data_tail;
		for (; (rec = record_at(p, c, &tail, &eh, &st)); tail += eh.size) {
			if (eh.type == PERF_RECORD_SAMPLE) {
				bool kernel = (eh.misc & PERF_RECORD_MISC_CPUMODE_MASK) ==
					PERF_RECORD_MISC_KERNEL;
				struct perf_sample ps;

				if (!parse_sample(p, rec, eh.size, &ps))
					st.malformed++;
				else if (ps.period == 1 && p->offcpu)
					take_switch(p, &ps, now, ops, arg, &st);
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
		carry_on(p, now);
	if (ret_stats)
		*ret_stats = st;
	return (int)st.samples;
}
