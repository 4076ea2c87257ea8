/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The kernel's process events connector (netlink, CN_IDX_PROC): the
 * service hears of each exec and fork as it happens, so that a process
 * that lives 100 ms is matched and followed from its start rather than
 * found, or missed, by the next /proc scan.
 *
 * Guarantees: a non-blocking socket; svc_procconn_read never waits and
 * hands out the processes (thread-group ids) that exec'ed or were forked,
 * never a thread; an overrun (the kernel dropped events: ENOBUFS) is
 * reported so that the caller scans /proc at once.  Leaves to the service
 * loop what to do with a PID, and to the scan what the connector cannot
 * give: it needs CAP_NET_ADMIN and the initial network and PID namespaces
 * (svc_procconn_open fails elsewhere and the scan alone serves). */
#define _GNU_SOURCE
#include "service-internal.h"

#include <errno.h>
#include <linux/cn_proc.h>
#include <linux/connector.h>
#include <linux/netlink.h>
#include <stdalign.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* One netlink message to the connector: listen or ignore. */
static int mcast(int fd, enum proc_cn_mcast_op op)
{
	struct {
		alignas(NLMSG_ALIGNTO) struct nlmsghdr nl;
		struct cn_msg cn;
		enum proc_cn_mcast_op op;
	} __attribute__((packed)) m;

	memset(&m, 0, sizeof(m));
	m.nl.nlmsg_len = sizeof(m);
	m.nl.nlmsg_type = NLMSG_DONE;
	m.nl.nlmsg_pid = 0; /* the kernel names the socket */
	m.cn.id.idx = CN_IDX_PROC;
	m.cn.id.val = CN_VAL_PROC;
	m.cn.len = sizeof(m.op);
	m.op = op;
	return send(fd, &m, sizeof(m), 0) == (ssize_t)sizeof(m) ? 0 : -errno;
}

int svc_procconn_open(void)
{
	struct sockaddr_nl sa = { .nl_family = AF_NETLINK, .nl_groups = CN_IDX_PROC };
	int fd = socket(AF_NETLINK, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, NETLINK_CONNECTOR);
	int e, big = 1 << 20;

	if (fd < 0)
		return -errno;
	/* a fork storm fills the default buffer in a moment: an overrun
	 * costs a scan, so make it rare */
	setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &big, sizeof(big));
	e = bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ? -errno :
								  mcast(fd, PROC_CN_MCAST_LISTEN);
	if (e < 0) {
		close(fd);
		return e;
	}
	return fd;
}

void svc_procconn_close(int fd)
{
	if (fd < 0)
		return;
	mcast(fd, PROC_CN_MCAST_IGNORE);
	close(fd);
}

/* The process an event is about, 0 if none of ours: an exec's, a new
 * process's (a fork, not a new thread). */
static pid_t event_pid(const struct proc_event *ev)
{
	switch (ev->what) {
	case PROC_EVENT_EXEC:
		return ev->event_data.exec.process_tgid;
	case PROC_EVENT_FORK:
		if (ev->event_data.fork.child_pid == ev->event_data.fork.child_tgid)
			return ev->event_data.fork.child_tgid;
		return 0;
	default:
		return 0;
	}
}

int svc_procconn_read(int fd, pid_t *pids, unsigned cap, bool *ret_overrun)
{
	alignas(struct nlmsghdr) char buf[8192];
	unsigned n = 0;

	*ret_overrun = false;
	while (n < cap) {
		ssize_t len = recv(fd, buf, sizeof(buf), 0);

		if (len < 0) {
			if (errno == ENOBUFS) {
				*ret_overrun = true;
				continue;
			}
			if (errno == EINTR)
				continue;
			break; /* EAGAIN: all read */
		}
		for (struct nlmsghdr *h = (struct nlmsghdr *)buf; NLMSG_OK(h, (size_t)len) && n < cap;
			h = NLMSG_NEXT(h, len)) {
			const struct cn_msg *cn = NLMSG_DATA(h);
			struct proc_event ev;
			pid_t pid;

			if (h->nlmsg_type == NLMSG_ERROR || h->nlmsg_type == NLMSG_NOOP)
				continue;
			if (h->nlmsg_len < NLMSG_LENGTH(sizeof(*cn) + sizeof(struct proc_event)) ||
				cn->id.idx != CN_IDX_PROC || cn->id.val != CN_VAL_PROC ||
				cn->len < sizeof(struct proc_event))
				continue;
			/* the event sits 4 bytes past an 8-byte boundary: copied
			 * out, not read in place */
			memcpy(&ev, cn->data, sizeof(ev));
			pid = event_pid(&ev);
			if (pid > 0)
				pids[n++] = pid;
		}
	}
	return (int)n;
}
