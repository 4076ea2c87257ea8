/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The recorder's wakes (wake.h): an eventfd each, posted by any thread,
 * drained by the one thread that polls it.  Guarantees: neither call ever
 * blocks, and one drain takes every post before it.  Leaves to the
 * caller: polling the fd, and looking at its rings after a drain. */
#include "wake.h"

#include <errno.h>
#include <stdint.h>
#include <sys/eventfd.h>
#include <unistd.h>

int wake_open(struct wake *w)
{
	w->fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	return w->fd < 0 ? -errno : 0;
}

void wake_post(const struct wake *w)
{
	uint64_t one = 1;

	if (write(w->fd, &one, sizeof(one)) < 0)
		(void)0; /* EAGAIN: the counter is full, so the thread is awake */
}

bool wake_drain(const struct wake *w)
{
	uint64_t n;

	/* counter mode: one read returns the sum of the posts and zeroes
	 * it; EAGAIN (non-blocking) when nothing was posted */
	return read(w->fd, &n, sizeof(n)) == (ssize_t)sizeof(n);
}

void wake_close(struct wake *w)
{
	if (w->fd >= 0)
		close(w->fd);
	w->fd = -1;
}
