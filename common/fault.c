/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The fault-injectable I/O and allocation shim (see td.h).  Disarmed it is
 * a thin wrapper over the system calls; the writer and the repository use
 * it for every write, fsync, rename and allocation so that tests can fail
 * the Nth of them and check that only whole chunks or cleanly repairable
 * prefixes remain. */
#define _GNU_SOURCE
#include "td.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static unsigned fault_ops;
static long fault_countdown;
static bool fault_fired;

void td_fault_arm(unsigned ops, long countdown)
{
	fault_ops = ops;
	fault_countdown = countdown;
	fault_fired = false;
}

bool td_fault_fired(void)
{
	return fault_fired;
}

static bool hit(unsigned op)
{
	if (!(fault_ops & op) || fault_countdown <= 0)
		return false;
	if (--fault_countdown > 0)
		return false;
	fault_fired = true;
	fault_ops = 0;
	return true;
}

ssize_t td_write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;
	size_t done = 0;

	if (hit(TD_FAULT_WRITE)) {
		ssize_t n = write(fd, p, len / 2); /* a torn write */

		(void)n;
		return -ENOSPC;
	}
	while (done < len) {
		ssize_t n = write(fd, p + done, len - done);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			return -EIO;
		done += (size_t)n;
	}
	return (ssize_t)len;
}

int td_fault_io(unsigned op)
{
	return hit(op) ? -ENOSPC : 0;
}

int td_fdatasync(int fd)
{
	if (hit(TD_FAULT_FSYNC))
		return -EIO;
	return fdatasync(fd) < 0 ? -errno : 0;
}

int td_fsync(int fd)
{
	if (hit(TD_FAULT_FSYNC))
		return -EIO;
	return fsync(fd) < 0 ? -errno : 0;
}

int td_renameat(int olddir, const char *oldpath, int newdir, const char *newpath)
{
	if (hit(TD_FAULT_RENAME))
		return -EIO;
	return renameat(olddir, oldpath, newdir, newpath) < 0 ? -errno : 0;
}

int td_renameat_noreplace(int olddir, const char *oldpath, int newdir, const char *newpath)
{
	if (hit(TD_FAULT_RENAME))
		return -EIO;
	if (renameat2(olddir, oldpath, newdir, newpath, RENAME_NOREPLACE) == 0)
		return 0;
	if (errno != EINVAL && errno != ENOSYS)
		return -errno;
	/* no RENAME_NOREPLACE here: a hard link fails the same way on a
	 * taken name */
	if (linkat(olddir, oldpath, newdir, newpath, 0) < 0)
		return -errno;
	unlinkat(olddir, oldpath, 0);
	return 0;
}

void *td_malloc(size_t n)
{
	return hit(TD_FAULT_MALLOC) ? NULL : malloc(n);
}

void *td_calloc(size_t n, size_t size)
{
	return hit(TD_FAULT_MALLOC) ? NULL : calloc(n, size);
}

void *td_realloc(void *p, size_t n)
{
	return hit(TD_FAULT_MALLOC) ? NULL : realloc(p, n);
}
