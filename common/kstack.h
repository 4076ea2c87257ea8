/* SPDX-License-Identifier: GPL-2.0-or-later */
/* tracerd common: a thread's kernel stack as /proc/PID/task/TID/stack
 * gives it, read and parsed (kstack.c).
 *
 * The file lists the functions the thread is in, innermost first, one a
 * line: "[<0>] pipe_read+0x2f4/0x460" (and " [MODULE]" for a module's).
 * The kernel shows it to CAP_SYS_ADMIN alone (root) and has hidden the
 * addresses since 4.x ("[<0>]"): names and offsets are all it gives. */
#ifndef TD_COMMON_KSTACK_H
#define TD_COMMON_KSTACK_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Bytes of the file read at most: the kernel lists at most 64 frames
 * (MAX_STACK_TRACE_DEPTH); a system call's are 5 to 20 lines of about 50
 * bytes.  Longer text is cut at its last whole line. */
#define TD_KSTACK_TEXT 4096

/* One frame, pointing into the parsed text. */
struct td_kstack_frame {
	const char *name;
	const char *module; /* NULL: the kernel's own */
	uint64_t offset;    /* from the function's start */
};

/* Read the kernel stack of pid's thread tid into buf (at most len - 1
 * bytes, NUL-terminated).  Returns the byte count (0: the thread runs,
 * or is in no function the kernel names), -EACCES where the kernel
 * refuses (not CAP_SYS_ADMIN), -ESRCH when the thread is gone, -errno.
 * One open, read and close; allocates nothing. */
int td_kstack_read(pid_t pid, pid_t tid, char *buf, size_t len);
/* The same in two steps, for a reader that reads a thread's file again
 * and again (a pread at 0 makes the kernel unwind anew): the file opened
 * (an fd, or -errno as above), and one read of it. */
int td_kstack_open(pid_t pid, pid_t tid);
int td_kstack_pread(int fd, char *buf, size_t len);

/* Parse text (td_kstack_read's) in place into at most max frames,
 * innermost first; returns how many.  A line without a function's name
 * (an address the kernel could not name) is skipped; text that is not
 * the file's format ends the parse. */
unsigned td_kstack_parse(char *text, struct td_kstack_frame *ret, unsigned max);

/* 0 if this process may read kernel stacks (it reads its own thread's),
 * else why not (-EACCES: not CAP_SYS_ADMIN; -ENOENT: a kernel without
 * CONFIG_STACKTRACE). */
int td_kstack_permitted(void);

#endif
