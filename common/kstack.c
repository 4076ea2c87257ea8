/* SPDX-License-Identifier: GPL-2.0-or-later */
/* A thread's kernel stack from /proc/PID/task/TID/stack: one bounded read,
 * and a parse in place into (name, module, offset) frames.
 *
 * Guarantees: at most TD_KSTACK_TEXT bytes read and TD_KERNEL_FRAMES-like
 * caller-given frames kept; nothing allocated; a line that does not read
 * as the kernel writes it ("[<ADDR>] NAME+0xOFF/0xLEN [MODULE]") ends the
 * parse, so odd text yields fewer frames, never wrong ones.  Leaves to
 * the caller what a frame's name means (symbolize/kallsyms.c maps names
 * to addresses) and when to read: the kernel unwinds the thread's stack
 * at the read, which is only meaningful while the thread sleeps. */
#define _GNU_SOURCE
#include "kstack.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int td_kstack_open(pid_t pid, pid_t tid)
{
	char path[64];
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/stack", (int)pid, (int)tid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	return fd >= 0 ? fd : errno == ENOENT ? -ESRCH : -errno;
}

int td_kstack_pread(int fd, char *buf, size_t len)
{
	/* one read: the kernel fills the seq_file's page at once */
	ssize_t n;

	if (len < 2)
		return -EINVAL;
	n = pread(fd, buf, len - 1, 0);
	if (n < 0)
		return errno == ESRCH || errno == ENOENT ? -ESRCH : -errno;
	buf[n] = '\0';
	if ((size_t)n == len - 1) {
		/* cut: keep the whole lines */
		char *nl = strrchr(buf, '\n');

		n = nl ? nl + 1 - buf : 0;
		buf[n] = '\0';
	}
	return (int)n;
}

int td_kstack_read(pid_t pid, pid_t tid, char *buf, size_t len)
{
	int fd = td_kstack_open(pid, tid), r;

	if (fd < 0)
		return fd;
	r = td_kstack_pread(fd, buf, len);
	close(fd);
	return r;
}

/* One line (NUL-terminated, no newline) into f; 1 a frame, 0 a line to
 * skip, -1 not the file's format. */
static int parse_line(char *line, struct td_kstack_frame *f)
{
	char *p = line, *plus, *end, *mod;

	if (p[0] != '[' || p[1] != '<')
		return -1;
	p = strstr(p, ">] ");
	if (!p)
		return -1;
	p += 3;
	mod = strchr(p, ' ');
	if (mod) {
		*mod++ = '\0';
		if (*mod != '[' || !(end = strchr(mod, ']')) || end == mod + 1)
			return -1;
		*end = '\0';
		mod++;
	}
	plus = strrchr(p, '+');
	if (!plus || plus == p)
		return 0; /* an address the kernel could not name */
	*plus = '\0';
	errno = 0;
	f->offset = strtoull(plus + 1, &end, 16);
	if (errno || end == plus + 1 || (*end && *end != '/'))
		return -1;
	f->name = p;
	f->module = mod;
	return 1;
}

unsigned td_kstack_parse(char *text, struct td_kstack_frame *ret, unsigned max)
{
	unsigned n = 0;

	for (char *line = text; *line && n < max;) {
		char *nl = strchrnul(line, '\n'), *next = *nl ? nl + 1 : nl;
		int r;

		*nl = '\0';
		r = parse_line(line, &ret[n]);
		if (r < 0)
			break;
		n += (unsigned)r;
		line = next;
	}
	return n;
}

int td_kstack_permitted(void)
{
	char buf[TD_KSTACK_TEXT];
	int r = td_kstack_read(getpid(), gettid(), buf, sizeof(buf));

	return r < 0 ? r : 0;
}
