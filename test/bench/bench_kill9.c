/* SPDX-License-Identifier: GPL-2.0-or-later */
/* make bench: what kill -9 loses.  fx_many with 16 threads (1 spinning,
 * the rest waiting) recorded at 999 Hz, in cpu and in wall mode, on a
 * loaded machine (two busy loops per CPU); tracerd is killed with SIGKILL
 * at a random moment 1 to 3 s after it started (the same moments in both
 * modes: a fixed seed), KILLS times per mode.  For each kill: how long
 * before the kill the last sample on disk was taken (the samples' own
 * CLOCK_MONOTONIC times against the kill's), read from the repository as
 * any reader reads it (whole blocks only).  Prints the median, the 99th
 * percentile (with 30 kills: the worst but none) and the worst.
 *   bench_kill9 TRACERD FIXTURE_DIR [KILLS]
 * With BENCH_VERBOSE set, each kill's moment and figure go to stderr. */
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
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

static pid_t run(const char *const argv[], bool quiet)
{
	pid_t p = fork();

	if (p == 0) {
		int null = open("/dev/null", O_RDWR);

		if (quiet)
			dup2(null, 1);
		dup2(null, 2);
		execv(argv[0], (char *const *)argv);
		_exit(127);
	}
	return p;
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
	printf("  %-5s %9s %9s %9s %s\n", "mode", "median", "p99", "worst", "kills with no sample");
	for (unsigned m = 0; m < 2; m++) {
		double *gap = calloc(kills, sizeof(*gap));
		unsigned n = 0, none = 0;

		srand48(42);
		for (unsigned k = 0; k < kills; k++) {
			const char *targv[] = { argv[1], "record", "--pid", pidarg, "-F", "999",
				"--mode", modes[m], "-r", sub, "-q", NULL };
			struct timespec d;
			double after = 1.0 + 2.0 * drand48();
			uint64_t at, last;
			pid_t t;

			snprintf(cmd, sizeof(cmd), "rm -rf %s", sub);
			if (system(cmd) != 0)
				return 1;
			t = run(targv, true);
			d.tv_sec = (time_t)after;
			d.tv_nsec = (long)((after - (double)d.tv_sec) * 1e9);
			nanosleep(&d, NULL);
			at = td_now_ns();
			kill(t, SIGKILL);
			waitpid(t, NULL, 0);
			last = repo_last(sub);
			if (!last || last > at)
				none++;
			else
				gap[n++] = (double)(at - last) / 1e6;
			if (getenv("BENCH_VERBOSE"))
				fprintf(stderr, "  %s kill at %.2f s: %.0f ms\n", modes[m], after,
					last && last <= at ? (double)(at - last) / 1e6 : -1.0);
		}
		qsort(gap, n, sizeof(*gap), cmp_double);
		if (n)
			printf("  %-5s %6.0f ms %6.0f ms %6.0f ms %u of %u\n", modes[m],
				gap[td_rank(n, 0.5)], gap[td_rank(n, 0.99)], gap[n - 1], none, kills);
		else
			printf("  %-5s no kill left a sample (%u)\n", modes[m], kills);
		free(gap);
	}
	for (unsigned i = 0; i < nload; i++)
		kill(load[i], SIGKILL);
	kill(fx, SIGKILL);
	while (wait(NULL) > 0)
		;
	snprintf(cmd, sizeof(cmd), "rm -rf %s", repo);
	return system(cmd) != 0;
}
