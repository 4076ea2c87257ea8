/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Private to the perf capture: the tables of struct pt_perf, shared by the
 * events and the drain (perf.c) and the pairing of switch records
 * (perf-switch.c).  Only the caller's one thread (the sampler) touches
 * them; nothing here allocates, locks or blocks after pt_perf_new. */
#ifndef TD_PERF_INTERNAL_H
#define TD_PERF_INTERNAL_H

#include <linux/perf_event.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <asm/perf_regs.h>

#include "ptrace.h"

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

/* A thread's time in one state (perf_periods_of): ns until its next sampling
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
	 * taken off its next on-CPU stretches (perf_weigh_on) */
	uint64_t owed_ns;
	bool on_guess;
	uint64_t open_since; /* offcpu: off a CPU, weighed up to then; 0: not */
	uint64_t open_at;    /* the open interval's switch-out sample's time */
	bool open_preempted; /* the open interval began with a preemption */
	uint64_t early_ns;   /* pt_perf_early asked then; 0: its sample came */
	bool open_unsure;    /* its switch-out record was not in the ring yet */
	/* its program ended then (pt_perf_end: held at its exit stop by the
	 * tracer, for the writer): time off a CPU after it is ours, not the
	 * program's, and is not weighed; 0: not ended */
	uint64_t ended;
	/* its program began then (pt_perf_begin: a command held before its
	 * exec); 0: it always had */
	uint64_t begun;
	/* pt_perf_resize reopened its events then: a sample older is of the
	 * closed ones, whose counts were read at the close; its CPU time
	 * since their last samples (carry_ns) goes to its next sample */
	uint64_t reopened;
	uint64_t carry_ns;
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
	uint64_t rearmed_ns; /* pt_perf_rearm's last new periods */
	bool early;	     /* pt_perf_early shortened a period since */
	unsigned cap, count;
	uint8_t *scratch; /* a record that wraps around the ring's end */
	bool user_only; /* no permission for kernel-mode samples */
	bool offcpu;	/* switch-out samples (cfg.offcpu, and permitted) */
};

/* A sample record, as both events write it. */
struct perf_sample {
	uint64_t ip, time, period, count, abi, regs[PERF_NREGS], size, dyn;
	uint32_t pid, tid;
	const uint8_t *stack;
	const uint8_t *chain; /* CALLCHAIN: nchain u64 entries, unaligned */
	uint64_t nchain;
};

struct perf_thread *perf_thread_find(const struct pt_perf *p, pid_t tid, unsigned *ret_i);
uint32_t perf_periods_of(struct pt_perf *p, struct perf_thread *th, unsigned line, uint64_t ns);
void perf_put_sample(const struct perf_sample *ps, uint32_t flags, uint32_t weight,
	uint64_t time, const struct pt_round_ops *ops, void *arg, struct pt_perf_stats *st);
const uint8_t *perf_record_at(struct pt_perf *p, unsigned c, uint64_t *tail,
	struct perf_event_header *eh, struct pt_perf_stats *st);

/* perf-switch.c: the switch records of a drain and the intervals off a CPU */
void perf_collect_switches(struct pt_perf *p, const struct pt_round_ops *ops, void *arg,
	struct pt_perf_stats *st);
uint32_t perf_weigh_on(struct pt_perf *p, struct perf_thread *th, uint64_t time);
void perf_take_switch(struct pt_perf *p, const struct perf_sample *ps, uint64_t now,
	const struct pt_round_ops *ops, void *arg, struct pt_perf_stats *st);
void perf_continue_open(struct pt_perf *p, struct perf_thread *th, uint64_t now,
	const struct pt_round_ops *ops, void *arg, struct pt_perf_stats *st);
void perf_carry_on(struct pt_perf *p, uint64_t now);

#endif
