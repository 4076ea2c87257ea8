/* SPDX-License-Identifier: GPL-2.0-or-later */
/* A rule's worker: the process that records one [Target] rule of the
 * service (service-internal.h says why a process of its own).  It opens a
 * recorder in follow mode on the rule's repository, attaches what the
 * service asks for, and passes its recorder's notices and a heartbeat
 * back.  It ends on SIGTERM, when the service goes (its socket hangs up,
 * or PR_SET_PDEATHSIG's SIGTERM after a kill -9 of the service), or when
 * its recording fails; every end goes through rec_free, which detaches
 * every target and finishes the chunk. */
#define _GNU_SOURCE
#include "service-internal.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <unistd.h>

static void send_msg(int fd, const struct svc_msg *m)
{
	/* the service reads at once; a service gone is seen by the poll */
	while (send(fd, m, sizeof(*m), MSG_NOSIGNAL) < 0 && errno == EINTR)
		;
}

static void on_notice(const struct rec_notice *n, void *arg)
{
	struct svc_msg m = { .kind = SVC_MSG_NOTICE, .notice = *n };

	send_msg(*(int *)arg, &m);
}

static void beat(const struct recorder *r, int fd)
{
	struct svc_msg m = { .kind = SVC_MSG_BEAT };
	struct rec_stats st;
	struct rusage ru;
	uint64_t now = td_now_ns(), hb = rec_heartbeat(r);

	rec_stats(r, &st);
	m.sampler_idle_ns = now > hb ? now - hb : 0;
	m.samples_written = st.samples_written;
	m.lost = st.lost_ring + st.lost_not_stopped + st.lost_events + st.lost_kernel;
	m.threads = (unsigned)st.threads_live;
	m.err = st.io_err;
	if (getrusage(RUSAGE_SELF, &ru) == 0)
		m.cpu_ns = ((uint64_t)ru.ru_utime.tv_sec + (uint64_t)ru.ru_stime.tv_sec) * 1000000000u +
			   ((uint64_t)ru.ru_utime.tv_usec + (uint64_t)ru.ru_stime.tv_usec) * 1000u;
	send_msg(fd, &m);
}

int worker_main(const struct worker_config *wc, int fd)
{
	struct rec_config cfg = { .hz = wc->hz, .mode = wc->mode, .repo = wc->repo,
		.ropts = wc->ropts, .max_window = 64 * 1024, .first_window = 8 * 1024,
		.follow = true, .emergency_window_ns = wc->emergency_window_ns,
		.cache_dir = wc->cache_dir, .max_procs = wc->max_procs,
		.no_kernel = wc->no_kernel };
	struct rec_hooks hooks = { .notice = on_notice };
	struct svc_msg m = { .kind = SVC_MSG_OPENED };
	struct recorder *r = NULL;
	uint64_t last_beat = 0;
	sigset_t sigs;
	int sfd, e;

	prctl(PR_SET_PDEATHSIG, SIGTERM);
	if (getppid() == 1)
		return 1; /* the service died before the line above */
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);
	sfd = signalfd(-1, &sigs, SFD_CLOEXEC | SFD_NONBLOCK);
	e = sfd < 0 ? -errno : rec_open(&cfg, &r, &m.fail);
	m.err = e;
	send_msg(fd, &m);
	if (e < 0)
		return 1;
	for (;;) {
		struct pollfd pfd[3] = { { fd, POLLIN, 0 }, { rec_fd(r), POLLIN, 0 },
			{ sfd, POLLIN, 0 } };
		struct signalfd_siginfo si;
		uint64_t now;

		if (poll(pfd, 3, 250) < 0 && errno != EINTR)
			break;
		if (pfd[2].revents & POLLIN) {
			bool stop = false;

			while (read(sfd, &si, sizeof(si)) == (ssize_t)sizeof(si))
				stop |= si.ssi_signo != SIGHUP; /* HUP: the service's */
			if (stop)
				break;
		}
		if (pfd[0].revents & POLLIN) {
			struct svc_msg in;
			ssize_t n = recv(fd, &in, sizeof(in), MSG_DONTWAIT);

			if (n == 0)
				break; /* the service is gone */
			if (n == (ssize_t)sizeof(in) && in.kind == SVC_MSG_ATTACH &&
				rec_attach(r, in.pid) < 0) {
				struct svc_msg busy = { .kind = SVC_MSG_NOTICE,
					.notice = { .kind = REC_NOTICE_ATTACH, .err = -EAGAIN,
						.id = { .pid = in.pid } } };

				send_msg(fd, &busy);
			}
		} else if (pfd[0].revents & (POLLHUP | POLLERR)) {
			break;
		}
		if (!rec_poll(r, &hooks, &fd))
			break; /* the recording ended: an I/O error */
		now = td_now_ns();
		if (now - last_beat >= 1000000000u) {
			beat(r, fd);
			last_beat = now;
		}
	}
	beat(r, fd);
	{
		struct rec_stats st;

		rec_stats(r, &st);
		e = st.io_err;
	}
	rec_free(r);
	close(sfd);
	return e ? 3 : 0;
}
