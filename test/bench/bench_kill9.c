/* SPDX-License-Identifier: GPL-2.0-or-later */
/* make bench: what kill -9 loses.  fx_many with 16 threads (1 spinning,
 * the rest waiting) recorded at 999 Hz, in cpu and in wall mode, on a
 * machine loaded with two busy loops per CPU and nothing else of this
 * program's; tracerd is killed with SIGKILL at a random moment 1 to 3 s
 * after it said it records (its "recording" line: attached, sampling; the
 * same moments in both modes: a fixed seed), KILLS times per mode.  For
 * each kill: how long before the kill the last sample on disk was taken
 * (the samples' own CLOCK_MONOTONIC times against the kill's), read from
 * the repository as any reader reads it (whole blocks only); a kill that
 * left no sample on disk lost all since the recording began, and counts
 * that long.  Prints the median, the 99th percentile (with 30 kills: the
 * worst but none) and the worst, and the load average before and after:
 * other work on the machine shows there.
 *   bench_kill9 TRACERD FIXTURE_DIR [KILLS]
 * With BENCH_VERBOSE set, each kill's moment and figure go to stderr. */
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../../chunkfmt/chunkfmt.h"

static int last_sample(void *arg, struct chunk_reader *r, const struct chunk_sample *s)
{
	uint64_t *last = arg;

	(void)r;
	if (s->time_ns > *last)
		*last = s->time_ns;
	return 0;
}

/* The time of the last sample in repo's chunks, 0 if none. */
static uint64_t repo_last(const char *repo)
{
	struct chunk_visitor v = { .sample = last_sample };
	struct dirent *de;
	uint64_t last = 0;
	DIR *d = opendir(repo);

	if (!d)
		return 0;
	while ((de = readdir(d))) {
		struct chunk_report rep;
		char path[512];
		uint64_t seq;
		bool part;

		if (!tcf_is_chunk_name(de->d_name, &seq, &part))
			continue;
		snprintf(path, sizeof(path), "%s/%s", repo, de->d_name);
		chunk_read_file(path, &v, &last, &rep);
	}
	closedir(d);
	return last;
}

/* Start tracerd (argv) with its stderr on a pipe and wait until it says
 * it records; its pid, and in *ret_start when it said so (0: it did not
 * within 30 s, or said something else: then it is killed). */
static pid_t run(const char *const argv[], uint64_t *ret_start)
{
	char line[512];
	size_t len = 0;
	int err[2];
	pid_t p;

	*ret_start = 0;
	if (pipe2(err, O_CLOEXEC) < 0)
		return -1;
	p = fork();
	if (p == 0) {
		int null = open("/dev/null", O_RDWR);

		dup2(null, 1);
		dup2(err[1], 2);
		execv(argv[0], (char *const *)argv);
		_exit(127);
	}
	close(err[1]);
	while (p > 0 && len < sizeof(line) - 1) {
		struct pollfd pfd = { err[0], POLLIN, 0 };
		ssize_t n;

		if (poll(&pfd, 1, 30000) <= 0)
			break;
		n = read(err[0], line + len, sizeof(line) - 1 - len);
		if (n <= 0)
			break;
		len += (size_t)n;
		line[len] = '\0';
		if (strstr(line, "recording")) {
			*ret_start = td_now_ns();
			break;
		}
	}
	close(err[0]); /* tracerd's later messages: EPIPE, ignored */
	if (p > 0 && !*ret_start) {
		fprintf(stderr, "bench_kill9: tracerd did not start recording: %s\n", line);
		kill(p, SIGKILL);
		waitpid(p, NULL, 0);
		return -1;
	}
	return p;
}

static void print_load(const char *when)
{
	char b[128] = "";
	FILE *f = fopen("/proc/loadavg", "r");

	if (f && fgets(b, sizeof(b), f))
		b[strcspn(b, "\n")] = '\0';
	if (f)
		fclose(f);
	printf("  load average %s: %s\n", when, b);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	static const char *const modes[] = { "cpu", "wall" };
	char fxpath[512], pidarg[32], repo[] = "/tmp/tracerd-bench-kill9-XXXXXX", sub[64], cmd[128];
	unsigned kills = argc > 3 ? (unsigned)atoi(argv[3]) : 30;
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	pid_t fx, load[64];
	unsigned nload = 0;
	int out[2];
	char b[64];

	if (argc < 3 || !kills || !mkdtemp(repo)) {
		fprintf(stderr, "usage: bench_kill9 TRACERD FIXTURE_DIR [KILLS]\n");
		return 1;
	}
	snprintf(fxpath, sizeof(fxpath), "%s/fx_many", argv[2]);
	if (pipe(out) < 0)
		return 1;
	fx = fork();
	if (fx == 0) {
		dup2(out[1], 1);
		execl(fxpath, fxpath, "16", "1", (char *)NULL);
		_exit(127);
	}
	close(out[1]);
	if (read(out[0], b, sizeof(b)) <= 0 || !strstr(b, "ready")) {
		fprintf(stderr, "bench_kill9: %s did not start\n", fxpath);
		kill(fx, SIGKILL);
		rmdir(repo);
		return 1;
	}
	for (long i = 0; i < 2 * ncpu && nload < 64; i++) {
		load[nload] = fork();
		if (load[nload] == 0)
			for (volatile unsigned long x = 0;; x++)
				;
		nload++;
	}
	snprintf(pidarg, sizeof(pidarg), "%d", (int)fx);
	snprintf(sub, sizeof(sub), "%s/repo", repo);
	printf("kill -9 at a random moment, 1-3 s into a recording (fx_many 16 threads, 1 "
	       "spinning, 999 Hz, %ld busy loops on %ld CPUs, %u kills per mode):\n"
	       "  how long before the kill the last sample on disk was taken\n",
		2 * ncpu, ncpu, kills);
	print_load("before");
	printf("  %-5s %9s %9s %9s %s\n", "mode", "median", "p99", "worst",
		"kills with no sample on disk");
	for (unsigned m = 0; m < 2; m++) {
		double *gap = calloc(kills, sizeof(*gap));
		unsigned n = 0, none = 0;

		srand48(42);
		for (unsigned k = 0; k < kills; k++) {
			const char *targv[] = { argv[1], "record", "--pid", pidarg, "-F", "999",
				"--mode", modes[m], "-r", sub, NULL };
			double after = 1.0 + 2.0 * drand48();
			uint64_t at, last, start;
			struct timespec d;
			pid_t t;

			snprintf(cmd, sizeof(cmd), "rm -rf %s", sub);
			if (system(cmd) != 0)
				return 1;
			t = run(targv, &start);
			if (t < 0)
				break;
			at = start + (uint64_t)(after * 1e9);
			d.tv_sec = (time_t)(at / 1000000000u);
			d.tv_nsec = (long)(at % 1000000000u);
			clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &d, NULL);
			at = td_now_ns();
			kill(t, SIGKILL);
			waitpid(t, NULL, 0);
			last = repo_last(sub);
			if (!last || last > at) {
				/* nothing on disk: all since it began is lost */
				none++;
				last = start;
			}
			gap[n++] = (double)(at - last) / 1e6;
			if (getenv("BENCH_VERBOSE"))
				fprintf(stderr, "  %s kill at %.2f s: %.0f ms\n", modes[m], after,
					gap[n - 1]);
		}
		qsort(gap, n, sizeof(*gap), cmp_double);
		if (n)
			printf("  %-5s %6.0f ms %6.0f ms %6.0f ms %u of %u\n", modes[m],
				gap[td_rank(n, 0.5)], gap[td_rank(n, 0.99)], gap[n - 1], none, n);
		else
			printf("  %-5s tracerd did not start\n", modes[m]);
		free(gap);
	}
	print_load("after");
	for (unsigned i = 0; i < nload; i++)
		kill(load[i], SIGKILL);
	kill(fx, SIGKILL);
	while (wait(NULL) > 0)
		;
	snprintf(cmd, sizeof(cmd), "rm -rf %s", repo);
	return system(cmd) != 0;
}
