/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Shared helpers: the error table, the clock and small /proc readers (the
 * escaping of strings is text.c's).  Nothing here allocates but the task
 * walk (opendir); everything is safe to call from any thread, but the /proc
 * readers do I/O and must not run while a target thread is held stopped. */
#include "td.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const char *const td_messages[] = {
	[TD_E_ZOMBIE - TD_E_BASE] = "process is a zombie",
	[TD_E_SELF - TD_E_BASE] = "refusing to trace tracerd itself",
	[TD_E_TRACED - TD_E_BASE] = "process is already being traced",
	[TD_E_GONE - TD_E_BASE] = "thread or process is gone",
	[TD_E_NOTHREADS - TD_E_BASE] = "no thread could be attached",
	[TD_E_TIMEOUT - TD_E_BASE] = "thread did not stop in time",
	[TD_E_LIMIT - TD_E_BASE] = "configured limit reached",
	[TD_E_DWFL - TD_E_BASE] = "libdwfl error",
	[TD_E_CORRUPT - TD_E_BASE] = "malformed input",
	[TD_E_FULL - TD_E_BASE] = "buffer full",
	[TD_E_LOCKED - TD_E_BASE] = "repository is in use by another tracerd",
	[TD_E_UNSAFE - TD_E_BASE] = "directory is writable by its group or by others",
	[TD_E_NOTREG - TD_E_BASE] = "not a regular file or directory",
	[TD_E_SYMLINK - TD_E_BASE] = "a symbolic link is on the path",
	[TD_E_NOTOWNER - TD_E_BASE] = "owned by another user",
	[TD_E_ATTACHED - TD_E_BASE] = "process is already attached by this tracer",
	[TD_E_CHANGED - TD_E_BASE] = "the file was changed by another process while written",
	[TD_E_LOCKLINK - TD_E_BASE] = "the repository's lock file is a symbolic link",
	[TD_E_PSEUDOFS - TD_E_BASE] = "the kernel's pseudo-filesystem holds no files but its own",
};

const char *td_strerror(int err)
{
	if (err < 0)
		err = -err;
	if (err > TD_E_BASE && err < TD_E_MAX && td_messages[err - TD_E_BASE])
		return td_messages[err - TD_E_BASE];
	if (err > 0 && err < TD_E_BASE)
		return strerror(err);
	return "unknown error";
}

uint64_t td_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t td_real_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int td_read_text(int dirfd, const char *path, char *buf, size_t len)
{
	ssize_t n;
	size_t off = 0;
	int fd;

	if (len == 0)
		return -EINVAL;
	fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	while (off + 1 < len) {
		n = read(fd, buf + off, len - 1 - off);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			n = -errno;
			close(fd);
			return (int)n;
		}
		if (n == 0)
			break;
		off += (size_t)n;
	}
	buf[off] = '\0';
	close(fd);
	return (int)off;
}

/* Read a stat file (/proc/PID/stat or a task's) into buf; *ret_state
 * points at field 3, the state.  comm (field 2) may hold spaces and
 * parentheses: the state follows the last ')'. */
static int read_stat(const char *path, char *buf, size_t len, char **ret_state)
{
	int r = td_read_text(AT_FDCWD, path, buf, len);
	char *p;

	if (r < 0)
		return r == -ENOENT ? -ESRCH : r;
	p = strrchr(buf, ')');
	if (!p || p[1] != ' ')
		return -TD_E_CORRUPT;
	*ret_state = p + 2;
	return 0;
}

int td_task_info_read(pid_t pid, pid_t tid, struct td_task_info *ret_info)
{
	struct td_task_info info = { .state = '?' };
	char path[64], buf[1024], *p;
	int r;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/stat", (int)pid, (int)tid);
	r = read_stat(path, buf, sizeof(buf), &p);
	if (r < 0)
		return r;
	p -= 2; /* the last ')' */
	info.state = p[2];
	info.ppid = (pid_t)strtol(p + 4, NULL, 10);
	{
		char *open = strchr(buf, '(');
		size_t n = open ? (size_t)(p - open - 1) : 0;

		if (n >= sizeof(info.name))
			n = sizeof(info.name) - 1;
		if (open)
			memcpy(info.name, open + 1, n);
		info.name[n] = '\0';
	}
	snprintf(path, sizeof(path), "/proc/%d/task/%d/status", (int)pid, (int)tid);
	if (td_read_text(AT_FDCWD, path, buf, sizeof(buf)) > 0) {
		p = strstr(buf, "\nTracerPid:");
		if (p)
			info.tracer = (pid_t)strtol(p + 11, NULL, 10);
	}
	*ret_info = info;
	return 0;
}

int td_proc_id_read(pid_t pid, struct td_proc_id *ret_id)
{
	char path[64], buf[1024], *p;
	unsigned long long start;
	int r;

	if (pid <= 0)
		return -ESRCH;
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	r = read_stat(path, buf, sizeof(buf), &p);
	if (r < 0)
		return r;
	/* starttime is field 22, 19 fields after the state */
	for (int field = 3; field < 22; field++) {
		p = strchr(p, ' ');
		if (!p)
			return -TD_E_CORRUPT;
		p++;
	}
	if (sscanf(p, "%llu", &start) != 1)
		return -TD_E_CORRUPT;
	*ret_id = (struct td_proc_id){ .pid = pid, .start_time = start };
	return 0;
}

int td_proc_id_check(const struct td_proc_id *id)
{
	struct td_proc_id now;
	int r = td_proc_id_read(id->pid, &now);

	if (r == -ESRCH)
		return 0;
	if (r < 0)
		return r;
	return now.start_time == id->start_time;
}

/* Does one line of /proc/PID/maps (NUL-terminated, perhaps only its start
 * when it is longer than the reader's buffer) map a file over addr? */
static bool maps_line_file_at(const char *line, uint64_t addr)
{
	unsigned long long start, end;
	int off = 0;

	if (sscanf(line, "%llx-%llx %*s %*s %*s %*s %n", &start, &end, &off) < 2 || !off)
		return false;
	return start <= addr && addr < end && line[off] == '/';
}

int td_maps_file_at(pid_t pid, uint64_t addr)
{
	char path[64], buf[4096];
	size_t have = 0;
	bool skip = false; /* the rest of a line longer than buf, judged already */
	int fd, r = 0;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? -ESRCH : -errno;
	for (;;) {
		ssize_t n = read(fd, buf + have, sizeof(buf) - 1 - have);
		char *line = buf, *nl;

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			r = errno == ESRCH ? -ESRCH : -errno;
			break;
		}
		if (n == 0)
			break;
		have += (size_t)n;
		buf[have] = '\0';
		while ((nl = memchr(line, '\n', have - (size_t)(line - buf)))) {
			*nl = '\0';
			if (!skip && maps_line_file_at(line, addr)) {
				r = 1;
				goto out;
			}
			skip = false;
			line = nl + 1;
		}
		have -= (size_t)(line - buf);
		memmove(buf, line, have);
		if (have == sizeof(buf) - 1) {
			/* one line fills buf: its addresses and the path's
			 * start are in it; the rest is skipped */
			if (!skip && maps_line_file_at(buf, addr)) {
				r = 1;
				break;
			}
			skip = true;
			have = 0;
		}
	}
out:
	close(fd);
	return r;
}

pid_t td_tgid_of(pid_t tid)
{
	char path[64], buf[1024], *p;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)tid);
	if (td_read_text(AT_FDCWD, path, buf, sizeof(buf)) < 0)
		return 0;
	p = strstr(buf, "\nTgid:");
	return p ? (pid_t)strtol(p + 6, NULL, 10) : 0;
}

void td_fmt_utc(uint64_t real_ns, char *buf, size_t len)
{
	time_t s = (time_t)(real_ns / 1000000000u);
	struct tm tm;

	if (!real_ns) {
		snprintf(buf, len, "-");
		return;
	}
	gmtime_r(&s, &tm);
	strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

size_t td_rank(size_t n, double q)
{
	double r = q * (double)n;
	size_t k = (size_t)r;

	if ((double)k < r)
		k++; /* ceil */
	if (k < 1)
		k = 1;
	return (k > n ? n : k) - 1;
}

int td_tasks_each(pid_t pid, int (*fn)(pid_t tid, void *arg), void *arg)
{
	char path[64];
	struct dirent *de;
	int r = 0;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	d = opendir(path);
	if (!d)
		return errno == ENOENT ? -ESRCH : -errno;
	while (r == 0 && (de = readdir(d))) {
		char *end;
		long tid = strtol(de->d_name, &end, 10);

		if (de->d_name[0] < '1' || de->d_name[0] > '9' || *end || tid > INT32_MAX)
			continue;
		r = fn((pid_t)tid, arg);
	}
	closedir(d);
	return r;
}

struct live_find {
	pid_t pid, skip;
};

static int live_check(pid_t tid, void *arg)
{
	const struct live_find *lf = arg;
	struct td_task_info info;

	if (tid == lf->skip || td_task_info_read(lf->pid, tid, &info) < 0)
		return 0;
	return info.state != 'Z' && info.state != 'X' ? (int)tid : 0;
}

pid_t td_task_find_live(pid_t pid, pid_t skip)
{
	struct live_find lf = { pid, skip };
	int r = td_tasks_each(pid, live_check, &lf);

	return r > 0 ? (pid_t)r : 0;
}
