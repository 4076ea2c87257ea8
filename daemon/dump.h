/* SPDX-License-Identifier: GPL-2.0-or-later */
/* tracerd dump as a library (daemon/dump.c): one capture round over the
 * threads of a process, then unwinding and symbolization into a flat
 * result, with what each blocked thread waits for (daemon/waits.h) and the
 * deadlocks among them.  cli/dump.c prints it. */
#ifndef TD_DUMP_H
#define TD_DUMP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "../symbolize/symbolize.h"
#include "waits.h"

#define DUMP_MAX_THREADS 8192
#define DUMP_MAX_TIDS 256
#define DUMP_STOP_TIMEOUT_MS 2000 /* for threads to stop (D state: never) */

struct dump_options {
	pid_t pid;
	pid_t tids[DUMP_MAX_TIDS]; /* only these threads; none: every thread */
	unsigned ntids;
	uint32_t stack_bytes;	   /* copied per thread; 0: 64 KiB */
	bool inlines;		   /* inlined frames too */
	bool no_dwarf;		   /* ELF symbols only (sym_options.no_dwarf) */
	bool no_kernel;		   /* no kernel frames (/proc/TID/stack) */
	const char *debuginfo_dir; /* borrowed */
	const char *cache_dir;	   /* borrowed; sym_options.cache_dir */
};

enum dump_capture {
	DUMP_NOT_CAPTURED, /* exited (or did not stop in time) before its copy */
	DUMP_CAPTURED,	   /* copied, unwound, symbolized */
	DUMP_EXITED,	   /* had exited already: the main thread of a process
			    * whose other threads live on (a zombie leader) */
};

/* One symbolized frame; strings are offsets into dump_result.strings,
 * 0 when unknown (dump_string() gives NULL then). */
struct dump_frame {
	uint64_t pc, offset;
	uint32_t function, file, module, build_id;
	int line;
	bool inlined;
	/* a kernel frame (from /proc/TID/stack): function, its module
	 * ("[kernel]" or "[MODULE]") and offset in the function; pc 0, as
	 * the kernel hides its addresses */
	bool kernel;
};

struct dump_thread {
	pid_t tid;
	char name[16];
	/* /proc's letter as read after attaching, except that a job-control
	 * stop, which a traced thread shows as 't', is 'T' */
	char state;
	enum dump_capture capture;
	/* CAPTURED only: */
	uint64_t stopped_ns;  /* upper bound of the time it was stopped */
	uint32_t stack_bytes; /* stack bytes copied */
	enum sym_end end;     /* why its stack ends */
	uint64_t fault_addr;  /* end WINDOW, READ_FAILED: the address */
	unsigned live_reads;  /* reads outside the stack copy */
	char detail[96];      /* libdwfl's words on the end, if any */
	unsigned first_frame, nframes; /* into dump_result.frames */
	/* of nframes, the first nkernel: its kernel stack below the system
	 * call it is blocked in, innermost first (root: /proc/TID/stack) */
	unsigned nkernel;
	struct wait_info wait; /* what it waits for, if blocked in a system call */
	/* in a deadlock: its cycle's number (1, 2, ...), else 0; the threads
	 * of a cycle each wait for an object the next one holds */
	unsigned deadlock;
};

/* owns: threads, frames, strings (flat arrays; threads sorted by tid) */
struct dump_result {
	pid_t pid;
	struct dump_thread *threads;
	unsigned nthreads;
	struct dump_frame *frames;
	unsigned nframes;
	char *strings;
	size_t strings_len;
	unsigned requested, captured, gone, timeout; /* the capture round */
	unsigned modules, with_elf, with_dwarf;	     /* sym_session_modules */
	struct sym_debug_stats debug_cache;	     /* sym_session_debug_stats */
	bool process_exited; /* during the dump: the threads are what was captured */
	unsigned deadlocks;  /* cycles found (dump_thread.deadlock) */
	/* kernel stacks of blocked threads: 0 read (or not asked:
	 * no_kernel), else why not (-EACCES: /proc/TID/stack needs
	 * CAP_SYS_ADMIN) */
	int kstack_err;
	uint64_t attach_ns, modules_ns, capture_ns, symbolize_ns;
};

/* Which step failed, and for whom. */
struct dump_failure {
	enum { DUMP_FAIL_SETUP, DUMP_FAIL_ATTACH, DUMP_FAIL_TID, DUMP_FAIL_MODULES } step;
	pid_t tid; /* TID: the one that is no thread of the process */
	bool gone; /* MODULES: because the process exited first */
};

/* Attach to o->pid, capture every (or each asked) thread once, detach,
 * then unwind and symbolize.  Returns 0 and *ret_result (free it with
 * dump_result_free), or -errno / -TD_E_* and *ret_fail. */
int dump_run(const struct dump_options *o, struct dump_result **ret_result,
	struct dump_failure *ret_fail);
void dump_result_free(struct dump_result *r); /* NULL-safe */
/* The thread tid of r (a binary search: threads are sorted by tid), NULL
 * if it is not one of them. */
const struct dump_thread *dump_thread_of(const struct dump_result *r, pid_t tid);

static inline const char *dump_string(const struct dump_result *r, uint32_t off)
{
	return off ? r->strings + off : NULL;
}

#endif
