/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Capturing a thread that is blocked in a system call without stopping it.
 *
 * Interrupting a thread asleep in epoll_wait, sigtimedwait and a few other
 * calls makes the call return EINTR to the program (docs/notes/ptrace.md),
 * and every interrupt costs the thread two context switches.  A blocked thread
 * needs no stop: /proc/PID/task/TID/syscall gives its system call, the
 * arguments, the user stack pointer and pc, and its stack can be copied
 * with process_vm_readv while it sleeps.  The copy is trusted only if the
 * thread provably did not run meanwhile: the same syscall line and the same
 * schedstat (run time and times scheduled) before and after, the check the
 * kernel's own task_current_syscall() makes with the switch count.
 *
 * Only rsp and rip are known (the syscall line has no other register); the
 * unwinder starts from those two, which is enough for code with CFI. */
#define _GNU_SOURCE
#include "ptrace.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int pread_text(int fd, char *buf, size_t len)
{
	ssize_t n = pread(fd, buf, len - 1, 0);

	if (n < 0)
		return errno == ESRCH || errno == ENOENT ? -ESRCH : -errno;
	if (n == 0)
		return -ESRCH; /* the thread is gone: its files read empty */
	buf[n] = '\0';
	return (int)n;
}

int pt_syscall_parse(const char *line, struct pt_syscall *ret)
{
	struct pt_syscall sc = { 0 };
	char *p;

	if (!strncmp(line, "running", 7)) {
		sc.running = true;
		*ret = sc;
		return 0;
	}
	errno = 0;
	sc.nr = strtol(line, &p, 10);
	if (p == line || errno)
		return -EINVAL;
	if (sc.nr < 0) { /* "-1 SP PC": blocked, but not in a system call */
		sc.sp = strtoull(p, &p, 16);
		sc.pc = strtoull(p, &p, 16);
		*ret = sc;
		return 0;
	}
	for (int i = 0; i < 6; i++)
		sc.args[i] = strtoull(p, &p, 16);
	sc.sp = strtoull(p, &p, 16);
	sc.pc = strtoull(p, &p, 16);
	if (!sc.sp || !sc.pc)
		return -EINVAL;
	*ret = sc;
	return 0;
}

int pt_blocked_probe(int syscall_fd, int schedstat_fd, struct pt_blocked *ret)
{
	char buf[256];
	struct pt_blocked b = { 0 };
	char *p;
	int r;

	/* schedstat first: a thread that runs between the two reads then
	 * shows a changed count at the next probe, never a stale one */
	r = pread_text(schedstat_fd, buf, sizeof(buf));
	if (r < 0)
		return r;
	b.run_ns = strtoull(buf, &p, 10);
	b.wait_ns = strtoull(p, &p, 10);
	b.run_count = strtoull(p, NULL, 10);
	r = pread_text(syscall_fd, buf, sizeof(buf));
	if (r < 0)
		return r;
	if (pt_syscall_parse(buf, &b.sc) < 0)
		return -EINVAL;
	*ret = b;
	return b.sc.running ? 0 : 1;
}

bool pt_blocked_same(const struct pt_blocked *a, const struct pt_blocked *b)
{
	return !a->sc.running && !b->sc.running && a->run_ns == b->run_ns &&
		a->run_count == b->run_count && a->sc.nr == b->sc.nr && a->sc.sp == b->sc.sp &&
		a->sc.pc == b->sc.pc && !memcmp(a->sc.args, b->sc.args, sizeof(a->sc.args));
}

int pt_blocked_copy(pid_t pid, pid_t tid, const struct pt_blocked *b, int syscall_fd,
	int schedstat_fd, struct td_sample *s, uint32_t window, uint64_t stack_end)
{
	struct pt_blocked after;
	uint64_t len = window;
	ssize_t n;
	int r;

	if (b->sc.running)
		return -EINVAL;
	if (stack_end > b->sc.sp && stack_end - b->sc.sp < len)
		len = stack_end - b->sc.sp;
	n = pt_read_memory(tid, b->sc.sp, s->stack, (size_t)len);
	if (n < 0)
		return n == -ESRCH ? -ESRCH : (int)n;
	r = pt_blocked_probe(syscall_fd, schedstat_fd, &after);
	if (r < 0)
		return r;
	if (!pt_blocked_same(b, &after))
		return -EAGAIN; /* it ran while we copied: the copy may be torn */
	memset(&s->regs, 0, sizeof(s->regs));
	s->regs.rsp = b->sc.sp;
	s->regs.rip = b->sc.pc;
	s->regs.orig_rax = (unsigned long long)b->sc.nr;
	s->regs.rdi = b->sc.args[0];
	s->regs.rsi = b->sc.args[1];
	s->regs.rdx = b->sc.args[2];
	s->regs.r10 = b->sc.args[3];
	s->regs.r8 = b->sc.args[4];
	s->regs.r9 = b->sc.args[5];
	s->pid = pid;
	s->tid = tid;
	s->time_ns = td_now_ns();
	s->stopped_ns = 0;
	s->flags = TD_SAMPLE_NOSTOP | (b->sc.nr >= 0 ? TD_SAMPLE_IN_SYSCALL : 0);
	s->stack_addr = b->sc.sp;
	s->stack_end = stack_end;
	s->stack_len = (uint32_t)n;
	return 1;
}
