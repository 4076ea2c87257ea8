/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Private to daemon/: waking a thread of the recorder, the other half of
 * the transport beside the rings (ring.h).  A ring never wakes its
 * consumer; a producer that wants it to look posts to the consumer's wake,
 * and the consumer polls the wake's fd with its other fds and drains it
 * before it looks at its rings.
 *
 * A wake is an eventfd (counter mode, non-blocking): posts add up until
 * one drain empties them, so a post is never lost and never repeated, and
 * neither side ever blocks (wake_post cannot fail but on a counter at its
 * maximum, which is still awake).  Any thread may post; only the thread
 * that polls a wake drains it. */
#ifndef TD_DAEMON_WAKE_H
#define TD_DAEMON_WAKE_H

#include <stdbool.h>

/* owns: fd (-1: none) */
struct wake {
	int fd;
};

/* A wake with nothing posted.  Returns 0 or -errno; w->fd is -1 then. */
int wake_open(struct wake *w);
/* Wake the thread that polls w.  Never blocks; harmless on a wake that
 * is not open (fd -1). */
void wake_post(const struct wake *w);
/* Take every post so far; the fd is not readable after it until the next
 * post.  Never blocks; returns whether anything was posted. */
bool wake_drain(const struct wake *w);
/* NULL-safe on a wake never opened (fd -1) or already closed. */
void wake_close(struct wake *w);

#endif
