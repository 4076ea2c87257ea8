/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The service loop's side of the exporter (export.c): starting and
 * stopping its process, telling it what the workers follow, and passing
 * its journal lines on.  The loop never waits on it for longer than a
 * stop: it only sends it short messages without blocking (a message it
 * could not take is dropped: that process is then not exported, which
 * the scan does not repair), so a server that hangs holds only the
 * exporter. */
#define _GNU_SOURCE
#include "export-internal.h"

#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#define EXP_RESTART_NS 5000000000ull
#define EXP_STOP_NS 1000000000ull

void exp_init(struct svc_exporter *x)
{
	*x = (struct svc_exporter){ .fd = -1 };
}

int exp_start(struct svc_exporter *x, const struct svc_config *cfg, const char *proc_root,
	const int *fds, unsigned nfds)
{
	int sp[2];
	pid_t pid;

	x->retry_ns = 0;
	if (!cfg->export.url || x->pid)
		return 0;
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp) < 0)
		return -errno;
	pid = fork();
	if (pid < 0) {
		close(sp[0]);
		close(sp[1]);
		return -errno;
	}
	if (pid == 0) {
		for (unsigned i = 0; i < nfds; i++)
			if (fds[i] >= 0)
				close(fds[i]);
		close(sp[0]);
		prctl(PR_SET_NAME, "tracerd-export");
		_exit(export_main(cfg, proc_root, sp[1]));
	}
	close(sp[1]);
	x->fd = sp[0];
	x->pid = pid;
	return 0;
}

static void forget(struct svc_exporter *x)
{
	if (x->fd >= 0)
		close(x->fd);
	x->fd = -1;
	x->pid = 0;
}

void exp_stop(struct svc_exporter *x)
{
	uint64_t start = td_now_ns();
	bool killed = false;

	if (!x->pid) {
		forget(x);
		return;
	}
	kill(x->pid, SIGTERM);
	/* it may be inside a push that takes up to its timeout: the spool
	 * keeps that profile whole, so a kill loses nothing */
	while (waitpid(x->pid, NULL, WNOHANG) == 0) {
		if (!killed && td_now_ns() - start > EXP_STOP_NS) {
			kill(x->pid, SIGKILL);
			killed = true;
		}
		usleep(10000);
	}
	forget(x);
	x->retry_ns = 0;
}

void exp_tell(struct svc_exporter *x, enum exp_msg_kind kind, int rule,
	const struct td_proc_id *id)
{
	struct exp_msg m = { .kind = kind, .rule = rule, .pid = id->pid,
		.start_time = id->start_time };

	if (x->fd >= 0)
		send(x->fd, &m, sizeof(m), MSG_DONTWAIT | MSG_NOSIGNAL);
}

bool exp_read(struct svc_exporter *x, void (*log)(void *arg, int prio, const char *msg),
	void *arg)
{
	for (;;) {
		struct exp_msg m;
		ssize_t n = x->fd >= 0 ? recv(x->fd, &m, sizeof(m), MSG_DONTWAIT) : 0;

		if (n == 0)
			return false;
		if (n < 0)
			return errno == EAGAIN || errno == EINTR;
		if (n != (ssize_t)sizeof(m) || m.kind != EXP_MSG_LOG)
			continue;
		m.text[sizeof(m.text) - 1] = '\0';
		log(arg, m.prio, m.text);
	}
}

bool exp_reaped(struct svc_exporter *x, pid_t pid)
{
	if (!x->pid || pid != x->pid)
		return false;
	forget(x);
	x->retry_ns = td_now_ns() + EXP_RESTART_NS;
	return true;
}
