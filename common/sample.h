/* SPDX-License-Identifier: GPL-2.0-or-later */
/* tracerd common: the flat sample record, the one thing every stage of
 * the pipeline hands on (sampler -> ring -> writer -> symbolize).
 *
 * It owns nothing and does nothing: a header that ptrace/ fills, daemon/
 * carries through its ring, and symbolize/ reads.  It never holds a
 * pointer, so it crosses a ring, a pipe or a file unchanged; it is never
 * written to disk (chunks store frames, not stack bytes). */
#ifndef TD_COMMON_SAMPLE_H
#define TD_COMMON_SAMPLE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/user.h>

/* td_sample.flags */
enum {
	TD_SAMPLE_GROUP_STOPPED = 1u << 0, /* target was in a job-control stop */
	TD_SAMPLE_IN_SYSCALL = 1u << 1,	   /* stopped inside a system call */
	TD_SAMPLE_STACK_PROCMEM = 1u << 2, /* stack read via /proc/PID/mem */
	TD_SAMPLE_STACK_FAILED = 1u << 3,  /* no stack bytes could be read */
	TD_SAMPLE_HELD = 1u << 4,	   /* taken in a held signal stop (crash) */
	TD_SAMPLE_PERF = 1u << 5,	   /* taken by the kernel (pt_perf), no stop */
	TD_SAMPLE_IN_KERNEL = 1u << 6,	   /* PERF: the thread was in the kernel */
	TD_SAMPLE_NOSTOP = 1u << 7,	   /* blocked, copied without a stop: only
					    * rsp and rip are known */
	TD_SAMPLE_REPEAT = 1u << 8,	   /* NOSTOP, unchanged since the thread's
					    * last copy: no stack, repeat its last */
	TD_SAMPLE_DISK = 1u << 9,	   /* NOSTOP: in uninterruptible sleep (D) */
	TD_SAMPLE_RUNNABLE = 1u << 10,	   /* REPEAT: time the thread waited for a
					    * CPU (wall mode with perf) */
	TD_SAMPLE_WEIGHTED = 1u << 11,	   /* stands for `weight` samples: the
					    * periods of CPU time it was owed
					    * (cpu mode, ptrace capture) */
	TD_SAMPLE_FUTEX = 1u << 12,	   /* NOSTOP in futex(): futex[] holds the
					    * words at its futex address */
	TD_SAMPLE_DEATH = 1u << 14,	   /* taken at its exit stop: its process
					    * is dying of a signal (pt_config.trace_exit) */
	TD_SAMPLE_NAMED = 1u << 13,	   /* comm[] holds the thread's name then */
	TD_SAMPLE_SIGINFO = 1u << 15,	   /* DEATH, HELD: this thread took the
					    * fatal signal; si says where from */
	TD_SAMPLE_OFFCPU = 1u << 16,	   /* PERF: an interval off a CPU, taken
					    * at its switch out; weight: its
					    * length in periods; RUNNABLE if
					    * preempted, else IN_SYSCALL */
	TD_SAMPLE_NO_ROWS = 1u << 17,	   /* NOSTOP, of a thread whose time
					    * OFFCPU samples carry: for its wait
					    * episode only, no sample of the
					    * profile */
	TD_SAMPLE_OWNER = 1u << 18,	   /* a lock's owner's stack (wall mode
					    * with perf), stopped for it, or (with
					    * PERF) the kernel's early sample of it
					    * of weight 0: no period of the profile */
	TD_SAMPLE_KCHAIN = 1u << 19,	   /* PERF, or NOSTOP in wall mode (from
					    * /proc/TID/stack: sampler-wall.c):
					    * kernel_ips[0, nkernel) hold the
					    * kernel's call chain, innermost first */
};

/* Kernel frames kept per sample (TD_SAMPLE_KCHAIN): a system call's chain
 * is 10 to 30 deep; deeper ones keep their innermost frames. */
#define TD_KERNEL_FRAMES 64

/* What the kernel said of a fatal signal (siginfo_t) at its delivery.
 * code decides what the rest means: a fault the kernel raised (SEGV_*,
 * BUS_*, ILL_*, FPE_*: code > 0) has its address; a signal a process sent
 * (SI_USER, SI_TKILL, SI_QUEUE, SI_MESGQ) its sender's PID and uid, as
 * the target's PID namespace numbers them, and the sender's comm read at
 * the signal's stop ("" if it was gone, or in another PID namespace). */
struct td_siginfo {
	int32_t code;	/* si_code */
	int32_t pid;	/* si_pid: SI_USER, SI_TKILL, SI_QUEUE, SI_MESGQ; else 0 */
	uint32_t uid;	/* si_uid: as pid */
	uint32_t pad;
	uint64_t addr;	/* si_addr: a fault's (code > 0, SEGV BUS ILL FPE); else 0 */
	char comm[16];	/* the sender's, NUL-terminated; "" unknown */
};

/* Words read at a blocked thread's futex address at the tick: a lock's
 * word and its owner fields (mutex __owner at +8, rwlock __cur_writer at
 * +12 or +16 from the futex), so that the owner is the one of that tick. */
#define TD_FUTEX_WORDS 6

/* One captured thread: registers and a copy of [stack_addr, +stack_len).
 * Flat and pointer-free: the stack bytes follow the header in the same
 * buffer, whose capacity the owner of the buffer knows. */
struct td_sample {
	int32_t pid;
	int32_t tid;
	uint64_t time_ns;    /* CLOCK_MONOTONIC at capture */
	uint64_t stopped_ns; /* upper bound of the time we kept it stopped
			      * (0: held for a crash, TD_SAMPLE_HELD) */
	uint32_t flags;	     /* TD_SAMPLE_* */
	uint32_t stack_len;  /* valid bytes in stack[] */
	uint32_t weight;     /* TD_SAMPLE_WEIGHTED: how many samples */
	uint32_t runnable;   /* OFFCPU blocked: of weight, the periods it
			      * waited for a CPU once woken */
	int32_t signo;	     /* TD_SAMPLE_DEATH: the signal its process dies of;
			      * TD_SAMPLE_SIGINFO: that signal */
	uint64_t stack_addr; /* target address of stack[0] (the SP) */
	uint64_t stack_end;  /* end of the stack mapping, 0 if unknown */
	uint32_t futex[TD_FUTEX_WORDS]; /* TD_SAMPLE_FUTEX */
	char comm[16];		       /* TD_SAMPLE_NAMED: a thread that lives
					* a few ms is gone when the writer
					* would read its name */
	struct td_siginfo si;	       /* TD_SAMPLE_SIGINFO */
	uint32_t nkernel;	       /* TD_SAMPLE_KCHAIN: kernel_ips used */
	uint32_t pad_kernel;
	uint64_t kernel_ips[TD_KERNEL_FRAMES]; /* TD_SAMPLE_KCHAIN: live kernel
						* addresses (never written to
						* disk: the writer names them;
						* 0: a name /proc gave that
						* kallsyms lacks, "[kernel]") */
	struct user_regs_struct regs;
	uint8_t stack[];
};

/* Why a stack ends where the kernel's copy of it did, at the most the
 * kernel copies per perf sample (ptrace.h: PT_PERF_MAX_STACK): the
 * unwinder's end name, which the report counts in its header. */
#define TD_CUT_KERNEL_LIMIT "deeper than the kernel's 64 KiB copy"

/* Bytes a sample with a window of 'window' stack bytes occupies. */
static inline size_t td_sample_size(uint32_t window)
{
	return (sizeof(struct td_sample) + window + 15) & ~(size_t)15;
}

#endif
