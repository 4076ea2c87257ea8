/* tracerd [record] --pid PID...: the recording daemon's main thread.
 *
 * Threads: this one (signals through a signalfd, the status line, the
 * summary), the sampler (the only tracer: daemon/sampler.c) and the
 * unwinder (symbolizer, chunk writer and repository: daemon/unwinder.c).
 * Every signal is blocked in every thread before any is created; handlers
 * never run, the main loop reads them:
 *   INT/TERM  stop sampling, resume and detach every thread, finish the
 *             chunk, exit 0; a second INT/TERM hurries (samples not yet
 *             written are dropped) but still detaches
 *   HUP       rotate the chunk
 *   USR1      write a snapshot into REPO/snapshots/
 * kill -9 leaves the targets running: the kernel detaches its tracees, and
 * PTRACE_O_EXITKILL is never set. */
#define _GNU_SOURCE
#include "daemon-internal.h"

#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "../chunkfmt/chunkfmt.h"

int spsc_init(struct spsc *q, uint32_t cap, uint32_t slot_size)
{
	uint32_t c = 1;

	while (c < cap)
		c <<= 1;
	q->cap = c;
	q->slot_size = (slot_size + 15) & ~15u;
	q->mem = calloc(c, q->slot_size);
	atomic_init(&q->head, 0);
	atomic_init(&q->tail, 0);
	return q->mem ? 0 : -ENOMEM;
}

void spsc_free(struct spsc *q)
{
	free(q->mem);
	q->mem = NULL;
}

void rec_wake(int fd)
{
	uint64_t one = 1;

	if (write(fd, &one, sizeof(one)) < 0)
		(void)0; /* an eventfd only fails when its counter is full: still awake */
}

static void usage(FILE *f)
{
	fputs("usage: tracerd [record] --pid PID [--pid PID]... [-F HZ] [--duration DUR]\n"
	      "                [-r DIR] [--max-chunk-size SIZE] [--max-chunk-age DUR]\n"
	      "                [--max-size SIZE] [--max-age DUR] [--stack-bytes N]\n"
	      "                [--debuginfo-dir DIR] [-q]\n"
	      "\n"
	      "Sample the threads of PID from one sampler thread and write chunks into the\n"
	      "repository DIR until DUR ends, every target exits, or SIGINT/SIGTERM.\n"
	      "\n"
	      "  -p, --pid PID            process to record (up to 16)\n"
	      "  -F, --frequency HZ       samples per second per running thread (default 99)\n"
	      "  -d, --duration DUR       stop after DUR (e.g. 30s, 10m)\n"
	      "  -r, --repo DIR           repository (default ./tracerd-repo)\n"
	      "      --max-chunk-size SIZE  rotate chunks at SIZE (default 16M)\n"
	      "      --max-chunk-age DUR  rotate chunks at DUR (default 10m)\n"
	      "      --max-size SIZE      keep at most SIZE of chunks (default 1G)\n"
	      "      --max-age DUR        delete chunks older than DUR (default 24h)\n"
	      "      --stack-bytes N      largest stack copy per sample (default 64K)\n"
	      "      --debuginfo-dir DIR  also look for DIR/.build-id/xx/yyyy.debug\n"
	      "  -q, --quiet              no status line\n"
	      "\n"
	      "Signals: INT/TERM stop (twice: hurry), HUP rotate, USR1 snapshot.\n"
	      "Exit status: 0 ok, 1 usage, 2 attach failed, 3 I/O error.\n",
		f);
}

static int parse(int argc, char **argv, struct rec_config *c)
{
	static const struct option opts[] = {
		{ "pid", required_argument, NULL, 'p' },
		{ "frequency", required_argument, NULL, 'F' },
		{ "duration", required_argument, NULL, 'd' },
		{ "repo", required_argument, NULL, 'r' },
		{ "max-chunk-size", required_argument, NULL, 1 },
		{ "max-chunk-age", required_argument, NULL, 2 },
		{ "max-size", required_argument, NULL, 3 },
		{ "max-age", required_argument, NULL, 4 },
		{ "stack-bytes", required_argument, NULL, 5 },
		{ "debuginfo-dir", required_argument, NULL, 6 },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	uint64_t v;
	int ch;

	*c = (struct rec_config){ .hz = 99, .repo = "tracerd-repo", .max_window = 64 * 1024 };
	optind = 1;
	while ((ch = getopt_long(argc, argv, ":p:F:d:r:qh", opts, NULL)) != -1) {
		switch (ch) {
		case 'p':
			if (c->npids == REC_MAX_PIDS) {
				td_msg("--pid: at most %d processes", REC_MAX_PIDS);
				return TD_EXIT_USAGE;
			}
			if (!td_parse_pid("--pid", optarg, &c->pids[c->npids]))
				return TD_EXIT_USAGE;
			c->npids++;
			break;
		case 'F':
			if (!td_parse_size("-F", optarg, 1, 10000, &v))
				return TD_EXIT_USAGE;
			c->hz = (unsigned)v;
			break;
		case 'd':
			if (!td_parse_duration("--duration", optarg, &c->duration_ns))
				return TD_EXIT_USAGE;
			break;
		case 'r':
			c->repo = optarg;
			break;
		case 1:
			if (!td_parse_size("--max-chunk-size", optarg, 64 * 1024, 1ull << 40, &v))
				return TD_EXIT_USAGE;
			c->ropts.max_chunk_size = v;
			break;
		case 2:
			if (!td_parse_duration("--max-chunk-age", optarg, &c->ropts.max_chunk_age_ns))
				return TD_EXIT_USAGE;
			break;
		case 3:
			if (!td_parse_size("--max-size", optarg, 128 * 1024, 1ull << 50, &v))
				return TD_EXIT_USAGE;
			c->ropts.max_size = v;
			break;
		case 4:
			if (!td_parse_duration("--max-age", optarg, &c->ropts.max_age_ns))
				return TD_EXIT_USAGE;
			break;
		case 5:
			if (!td_parse_size("--stack-bytes", optarg, 4096, 8u << 20, &v))
				return TD_EXIT_USAGE;
			c->max_window = (uint32_t)v;
			break;
		case 6:
			if (optarg[0] != '/') {
				td_msg("--debuginfo-dir: '%s' is not an absolute path; give one",
					optarg);
				return TD_EXIT_USAGE;
			}
			c->debuginfo_dir = optarg;
			break;
		case 'q':
			c->quiet = true;
			break;
		case 'h':
			usage(stdout);
			return -1;
		default:
			return td_bad_option("record", ch, argv);
		}
	}
	if (optind < argc) {
		td_msg("unexpected argument '%s'; see tracerd record --help", argv[optind]);
		return TD_EXIT_USAGE;
	}
	if (!c->npids) {
		td_msg("record: --pid is required; see tracerd record --help");
		return TD_EXIT_USAGE;
	}
	{
		uint64_t chunk = c->ropts.max_chunk_size ? c->ropts.max_chunk_size : 16u << 20;
		uint64_t total = c->ropts.max_size ? c->ropts.max_size : 1ull << 30;

		if (total < 2 * chunk) {
			td_msg("--max-size must be at least twice --max-chunk-size (%llu bytes)",
				(unsigned long long)(2 * chunk));
			return TD_EXIT_USAGE;
		}
	}
	c->first_window = c->max_window < 16384 ? c->max_window : 16384;
	return 0;
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

/* Percentile of the recent stopped times (us resolution kept in ns). */
static void stop_percentiles(struct rec *r, double *p50, double *p99)
{
	static uint32_t v[REC_STOP_RING];
	uint64_t n = atomic_load(&r->stop_n);
	size_t k = n < REC_STOP_RING ? (size_t)n : REC_STOP_RING;

	for (size_t i = 0; i < k; i++)
		v[i] = atomic_load_explicit(&r->stop_ns[i], memory_order_relaxed);
	qsort(v, k, sizeof(*v), cmp_u32);
	*p50 = k ? v[k / 2] / 1e3 : 0;
	*p99 = k ? v[(size_t)((double)(k - 1) * 0.99)] / 1e3 : 0;
}

static void status_line(struct rec *r, uint64_t *last_samples, uint64_t *last_ns)
{
	uint64_t now = td_now_ns(), s = atomic_load(&r->samples_taken);
	double p50, p99;

	stop_percentiles(r, &p50, &p99);
	fprintf(stderr,
		"\rtracerd: %.0f samples/s, %llu threads, %llu lost, stop p99 %.0f us      ",
		(double)(s - *last_samples) * 1e9 / (double)(now - *last_ns),
		(unsigned long long)atomic_load(&r->threads_live),
		(unsigned long long)(atomic_load(&r->lost_ring) + atomic_load(&r->lost_not_stopped)),
		p99);
	*last_samples = s;
	*last_ns = now;
}

static void summary(struct rec *r, uint64_t elapsed_ns, FILE *f)
{
	uint64_t taken = atomic_load(&r->samples_taken), written = atomic_load(&r->samples_written);
	uint64_t bytes = atomic_load(&r->bytes_written);
	struct rusage ru;
	double p50, p99, cpu;

	stop_percentiles(r, &p50, &p99);
	getrusage(RUSAGE_SELF, &ru);
	cpu = (double)ru.ru_utime.tv_sec * 1e6 + (double)ru.ru_utime.tv_usec +
		(double)ru.ru_stime.tv_sec * 1e6 + (double)ru.ru_stime.tv_usec;
	fprintf(f, "tracerd: recorded %.1f s into %s\n", elapsed_ns / 1e9, r->cfg.repo);
	fprintf(f, "  samples      %llu taken, %llu written (%.1f/s) in %llu ticks\n",
		(unsigned long long)taken, (unsigned long long)written,
		elapsed_ns ? taken * 1e9 / (double)elapsed_ns : 0.0,
		(unsigned long long)atomic_load(&r->ticks));
	fprintf(f,
		"  lost         %llu ring full, %llu did not stop in time, %llu events; "
		"%llu stacks partial\n",
		(unsigned long long)atomic_load(&r->lost_ring),
		(unsigned long long)atomic_load(&r->lost_not_stopped),
		(unsigned long long)atomic_load(&r->lost_events),
		(unsigned long long)atomic_load(&r->unwind_partial));
	fprintf(f, "  threads      %llu seen\n", (unsigned long long)atomic_load(&r->threads_seen));
	fprintf(f, "  stopped      p50 %.1f us, p99 %.1f us, max %.1f us per sample\n", p50, p99,
		atomic_load(&r->stop_max) / 1e3);
	{
		uint64_t s0 = atomic_load(&r->startup_samples);
		double c0 = (double)atomic_load(&r->startup_cpu_us);

		fprintf(f, "  daemon CPU   %.1f us per sample (%.2f s in all); after start-up: %.1f "
			   "us per sample (start-up %.0f ms)\n",
			taken ? cpu / (double)taken : 0.0, cpu / 1e6,
			taken > s0 ? (cpu - c0) / (double)(taken - s0) : 0.0, c0 / 1e3);
	}
	fprintf(f, "  written      %llu bytes, %.2f bytes per sample\n", (unsigned long long)bytes,
		written ? (double)bytes / (double)written : 0.0);
}

int cmd_record(int argc, char **argv)
{
	struct rec *r = calloc(1, sizeof(*r));
	pthread_t sampler, unwinder;
	bool sampler_started = false, unwinder_started = false;
	struct repo *repo = NULL;
	sigset_t sigs;
	struct rlimit rl;
	uint64_t start, last_ns, last_samples = 0;
	pid_t owner = 0;
	int sfd = -1, ret = TD_EXIT_IO, e;

	if (!r)
		return TD_EXIT_IO;
	e = parse(argc, argv, &r->cfg);
	if (e) {
		free(r);
		return e < 0 ? TD_EXIT_OK : e;
	}
	/* one fd per thread for schedstat */
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGHUP);
	sigaddset(&sigs, SIGUSR1);
	sigaddset(&sigs, SIGCHLD);
	sigaddset(&sigs, SIGPIPE);
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);
	sigdelset(&sigs, SIGCHLD);
	sigdelset(&sigs, SIGPIPE);
	sfd = signalfd(-1, &sigs, SFD_CLOEXEC | SFD_NONBLOCK);
	r->unwinder_wake = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	r->sampler_wake = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	r->main_wake = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (sfd < 0 || r->unwinder_wake < 0 || r->sampler_wake < 0 || r->main_wake < 0 ||
		spsc_init(&r->samples,
			TD_MAX(64u, TD_MIN(4096u, (64u << 20) / td_sample_size(r->cfg.max_window))),
			(uint32_t)td_sample_size(r->cfg.max_window)) < 0 ||
		spsc_init(&r->events, 65536, sizeof(struct rec_event)) < 0) {
		td_msg("cannot set up: %s", strerror(errno ? errno : ENOMEM));
		goto out;
	}
	r->cfg.ropts.target_pid = (uint32_t)r->cfg.pids[0];
	e = repo_open(r->cfg.repo, &r->cfg.ropts, &repo, &owner);
	if (e == -TD_E_LOCKED) {
		td_msg("repository %s is in use by tracerd PID %d; stop it or give another -r DIR",
			r->cfg.repo, (int)owner);
		ret = TD_EXIT_USAGE;
		goto out;
	} else if (e == -TD_E_UNSAFE) {
		td_msg("refusing repository %s: it is a symbolic link or writable by others; give "
		       "a directory only its owner can write",
			r->cfg.repo);
		ret = TD_EXIT_USAGE;
		goto out;
	} else if (e < 0) {
		td_msg("cannot open repository %s: %s", r->cfg.repo, td_strerror(e));
		goto out;
	}
	r->repo_handle = repo;

	/* The sampler attaches (the tracer must be the thread that seizes). */
	if (pthread_create(&sampler, NULL, sampler_main, r) != 0) {
		td_msg("cannot start the sampler thread: %s", strerror(errno));
		goto out;
	}
	sampler_started = true;
	while (!atomic_load(&r->attach_state)) {
		struct pollfd pfd = { r->main_wake, POLLIN, 0 };
		uint64_t junk;

		if (poll(&pfd, 1, 1000) > 0 && read(r->main_wake, &junk, sizeof(junk)) < 0)
			junk = 0;
	}
	if (atomic_load(&r->attach_state) < 0) {
		ret = r->attach_pid ? td_explain_attach(r->attach_pid, r->attach_err) :
				      (td_msg("cannot trace: %s", td_strerror(r->attach_err)),
					      TD_EXIT_ATTACH);
		goto out;
	}
	if (pthread_create(&unwinder, NULL, unwinder_main, r) != 0) {
		td_msg("cannot start the unwinder thread: %s", strerror(errno));
		atomic_store(&r->stop, 1);
		goto out;
	}
	unwinder_started = true;
	start = last_ns = td_now_ns();
	if (!r->cfg.quiet)
		td_msg("recording %u process%s into %s; Ctrl-C to stop", r->cfg.npids,
			r->cfg.npids > 1 ? "es" : "", r->cfg.repo);

	while (!atomic_load(&r->unwinder_done)) {
		struct pollfd pfd[2] = { { sfd, POLLIN, 0 }, { r->main_wake, POLLIN, 0 } };
		struct signalfd_siginfo si;
		uint64_t junk;

		poll(pfd, 2, 1000);
		if (pfd[1].revents & POLLIN && read(r->main_wake, &junk, sizeof(junk)) < 0)
			junk = 0;
		while (read(sfd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
			switch (si.ssi_signo) {
			case SIGINT:
			case SIGTERM:
				if (atomic_fetch_add(&r->stop, 1) >= 1)
					atomic_store(&r->stop, 2); /* hurry */
				rec_wake(r->sampler_wake);
				rec_wake(r->unwinder_wake);
				break;
			case SIGHUP:
				atomic_store(&r->rotate_req, 1);
				rec_wake(r->unwinder_wake);
				break;
			case SIGUSR1:
				atomic_store(&r->snapshot_req, 1);
				rec_wake(r->unwinder_wake);
				break;
			}
		}
		if (!r->cfg.quiet && isatty(STDERR_FILENO) && td_now_ns() - last_ns >= 1000000000u)
			status_line(r, &last_samples, &last_ns);
	}
	if (!r->cfg.quiet && isatty(STDERR_FILENO))
		fputc('\n', stderr);
	ret = TD_EXIT_OK;
	e = atomic_load(&r->io_err);
	if (e) {
		td_msg("recording stopped: cannot write to %s: %s; free space, then tracerd "
		       "snapshot %s keeps what was written",
			r->cfg.repo, td_strerror(e), r->cfg.repo);
		ret = TD_EXIT_IO;
	}
	summary(r, td_now_ns() - start, stderr);
out:
	atomic_store(&r->stop, 1);
	if (sampler_started) {
		rec_wake(r->sampler_wake);
		pthread_join(sampler, NULL);
	}
	if (unwinder_started)
		pthread_join(unwinder, NULL);
	if (r->repo_handle)
		repo_close(r->repo_handle, TCF_END_STOP);
	spsc_free(&r->samples);
	spsc_free(&r->events);
	if (sfd >= 0)
		close(sfd);
	close(r->unwinder_wake);
	close(r->sampler_wake);
	close(r->main_wake);
	free(r);
	return ret;
}
