/* SPDX-License-Identifier: GPL-2.0-or-later */
/* make bench, part 1: tracerd dump against eu-stack -p on the same
 * 51-thread fixture (10 parked in different calls, 1 spinning, 40 idle),
 * side by side in interleaved rounds.  Prints wall time medians and their
 * ratio, and tracerd's per-thread stopped time p50/p99/max.
 * usage: bench_dump TRACERD FX_THREADS [ROUNDS] */
#define _GNU_SOURCE
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Run argv, capture stdout into *out (if out), return wall ns. */
static uint64_t run(const char *const argv[], char **out, int *ret_status)
{
	int p[2], st;
	uint64_t t0 = now_ns(), t1;
	size_t len = 0, cap = 1 << 16;
	pid_t pid;

	if (pipe2(p, O_CLOEXEC))
		exit(1);
	pid = fork();
	if (pid == 0) {
		int devnull = open("/dev/null", O_WRONLY);

		dup2(out ? p[1] : devnull, 1);
		dup2(devnull, 2);
		execvp(argv[0], (char *const *)argv);
		_exit(127);
	}
	close(p[1]);
	if (out)
		*out = malloc(cap);
	for (;;) {
		char tmp[65536];
		ssize_t n = read(p[0], tmp, sizeof(tmp));

		if (n <= 0)
			break;
		if (!out)
			continue;
		while (len + (size_t)n + 1 > cap)
			*out = realloc(*out, cap *= 2);
		memcpy(*out + len, tmp, (size_t)n);
		len += (size_t)n;
	}
	if (out)
		(*out)[len] = '\0';
	close(p[0]);
	waitpid(pid, &st, 0);
	t1 = now_ns();
	*ret_status = WIFEXITED(st) ? WEXITSTATUS(st) : 128;
	return t1 - t0;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static uint64_t pct(uint64_t *v, size_t n, double p)
{
	size_t i = (size_t)(p * (double)(n - 1) + 0.5);

	return n ? v[i] : 0;
}

int main(int argc, char **argv)
{
	const char *tracerd = argv[1], *fx = argv[2];
	int rounds = argc > 3 ? atoi(argv[3]) : 15, st, ready_fd[2];
	char pidbuf[32], buf[64];
	uint64_t *w[4], *stopped;
	size_t nstopped = 0, cap_stopped = 1 << 16;
	pid_t fxpid;
	/* Pairs that print the same information: names only; then names,
	 * inline frames and source lines. */
	const char *names[4] = { "tracerd dump --no-dwarf", "eu-stack -p",
		"tracerd dump", "eu-stack -i -s -p" };

	if (argc < 3) {
		fprintf(stderr, "usage: %s TRACERD FX_THREADS [ROUNDS]\n", argv[0]);
		return 1;
	}
	if (pipe(ready_fd))
		return 1;
	fxpid = fork();
	if (fxpid == 0) {
		dup2(ready_fd[1], 1);
		execl(fx, fx, "40", (char *)NULL);
		_exit(127);
	}
	close(ready_fd[1]);
	if (read(ready_fd[0], buf, sizeof(buf)) <= 0) {
		fprintf(stderr, "bench: fixture did not start\n");
		return 1;
	}
	usleep(200000);
	snprintf(pidbuf, sizeof(pidbuf), "%d", (int)fxpid);
	for (int k = 0; k < 4; k++)
		w[k] = calloc((size_t)rounds, sizeof(uint64_t));
	stopped = calloc(cap_stopped, sizeof(*stopped));
	{
		const char *warm[] = { tracerd, "dump", "--pid", pidbuf, NULL };
		const char *ew[] = { "eu-stack", "-p", pidbuf, NULL };

		run(warm, NULL, &st); /* page cache, both tools */
		run(ew, NULL, &st);
	}
	for (int r = 0; r < rounds; r++) {
		const char *t1[] = { tracerd, "dump", "--pid", pidbuf, "--json", "--no-dwarf", NULL };
		const char *e1[] = { "eu-stack", "-p", pidbuf, NULL };
		const char *t2[] = { tracerd, "dump", "--pid", pidbuf, "--json", NULL };
		const char *e2[] = { "eu-stack", "-i", "-s", "-p", pidbuf, NULL };
		const char *const *cmds[4] = { t1, e1, t2, e2 };

		for (int j = 0; j < 4; j++) {
			/* alternate the order each round */
			int k = r % 2 ? 3 - j : j;
			char *out = NULL, *p;

			w[k][r] = run(cmds[k], k % 2 ? NULL : &out, &st);
			if (st != 0) {
				fprintf(stderr, "bench: %s exited %d\n", names[k], st);
				return 1;
			}
			for (p = out; p && (p = strstr(p, "\"stopped_ns\": ")); p++)
				if (nstopped < cap_stopped)
					stopped[nstopped++] = strtoull(p + 14, NULL, 10);
			free(out);
		}
	}
	kill(fxpid, SIGKILL);
	waitpid(fxpid, NULL, 0);
	for (int k = 0; k < 4; k++)
		qsort(w[k], (size_t)rounds, sizeof(uint64_t), cmp_u64);
	qsort(stopped, nstopped, sizeof(*stopped), cmp_u64);
	printf("\n== tracerd dump vs eu-stack -p: 51-thread fixture, %d interleaved rounds\n\n",
		rounds);
	printf("%-28s %12s %12s\n", "command", "median ms", "ratio");
	for (int k = 0; k < 4; k += 2)
		for (int j = 0; j < 2; j++)
			printf("%-28s %12.2f %12.3f\n", names[k + j], pct(w[k + j], (size_t)rounds, 0.5) / 1e6,
				(double)pct(w[k], (size_t)rounds, 0.5) /
					(double)pct(w[k + 1], (size_t)rounds, 0.5));
	printf("\n(ratio = tracerd median / eu-stack median of the pair printing the same "
	       "information; goal <= 0.5)\n");
	printf("\ntracerd stopped time per thread, %zu samples: p50 %.1f us, p99 %.1f us, "
	       "max %.1f us (goal p50 < 100 us)\n",
		nstopped, pct(stopped, nstopped, 0.5) / 1e3, pct(stopped, nstopped, 0.99) / 1e3,
		nstopped ? stopped[nstopped - 1] / 1e3 : 0.0);
	return 0;
}
