/* make bench, part 3: what recording costs the target, measured from the
 * target's side (fx_work times its own fixed work), in interleaved rounds:
 * alone, tracerd at 99 and 999 Hz, perf record --call-graph dwarf and -g
 * at the same rates.  Medians of slowdown ratios against "alone" in the
 * same round; tracerd's stopped time and CPU per sample from its summary;
 * bytes per sample of tracerd's repository against perf.data.
 * usage: bench_record TRACERD FX_WORK ROUNDS ITER BUSY IDLE */
#define _GNU_SOURCE
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

enum { C_ALONE, C_T99, C_T999, C_PD99, C_PD999, C_PG99, C_PG999, C_N };
static const char *const names[C_N] = { "alone", "tracerd -F 99", "tracerd -F 999",
	"perf --call-graph dwarf -F 99", "perf --call-graph dwarf -F 999", "perf -g -F 99",
	"perf -g -F 999" }; /* -g is --call-graph fp */

struct res {
	double slow[32];
	double p50, p99, cpu, bps;
	int n;
};

static char *slurp(const char *path)
{
	static char buf[1 << 16];
	int fd = open(path, O_RDONLY);
	ssize_t n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : 0;

	buf[n > 0 ? n : 0] = '\0';
	if (fd >= 0)
		close(fd);
	return buf;
}

static pid_t tgid_of_tracer(pid_t pid)
{
	char path[64], *p, *q;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	p = strstr(slurp(path), "TracerPid:");
	if (!p || !atoi(p + 10))
		return 0;
	snprintf(path, sizeof(path), "/proc/%d/status", atoi(p + 10));
	q = strstr(slurp(path), "Tgid:");
	return q ? atoi(q + 5) : 0;
}

static double run(int c, const char *tracerd, const char *fx, const char *iter, const char *busy,
	const char *idle, struct res *r)
{
	int in[2], out[2], st;
	pid_t f, p = 0;
	char buf[256] = "", pidbuf[32], hz[8];
	ssize_t n, got = 0;
	double elapsed;

	if (pipe(in) || pipe(out))
		exit(1);
	f = fork();
	if (f == 0) {
		dup2(in[0], 0);
		dup2(out[1], 1);
		close(in[1]);
		close(out[0]);
		execl(fx, fx, iter, busy, idle, (char *)NULL);
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	while (!memchr(buf, '\n', (size_t)got)) { /* "ready\n", maybe in pieces */
		n = read(out[0], buf + got, sizeof(buf) - 1 - (size_t)got);
		if (n <= 0)
			exit(1);
		got += n;
	}
	got = 0;
	snprintf(pidbuf, sizeof(pidbuf), "%d", (int)f);
	snprintf(hz, sizeof(hz), "%s", c == C_T99 || c == C_PD99 || c == C_PG99 ? "99" : "999");
	if (c != C_ALONE) {
		p = fork();
		if (p == 0) {
			int fd = open("/tmp/tracerd-bench.err", O_WRONLY | O_CREAT | O_TRUNC, 0644);

			dup2(fd, 2);
			dup2(fd, 1);
			if (c == C_T99 || c == C_T999)
				execl(tracerd, tracerd, "--pid", pidbuf, "-F", hz, "-r",
					"/tmp/tracerd-bench-repo", "-q", (char *)NULL);
			else
				execlp("perf", "perf", "record", "-F", hz, "--call-graph",
					c == C_PG99 || c == C_PG999 ? "fp" : "dwarf", "-o",
					"/tmp/tracerd-bench.perf.data", "-p", pidbuf, (char *)NULL);
			_exit(127);
		}
		if (c == C_T99 || c == C_T999) {
			for (int i = 0; i < 500 && tgid_of_tracer(f) != p; i++)
				usleep(10000);
		} else {
			usleep(500000); /* perf has no "attached" signal: give it time */
		}
	}
	if (write(in[1], "x", 1) != 1)
		exit(1);
	while ((n = read(out[0], buf + got, sizeof(buf) - 1 - (size_t)got)) > 0)
		got += n;
	buf[got] = '\0';
	waitpid(f, &st, 0);
	elapsed = strstr(buf, "elapsed ") ? atof(strstr(buf, "elapsed ") + 8) : 0;
	if (p) {
		waitpid(p, &st, 0); /* both stop when the target exits */
		if (c == C_T99 || c == C_T999) {
			char *s = slurp("/tmp/tracerd-bench.err"), *q;

			if ((q = strstr(s, "stopped      p50 ")))
				sscanf(q, "stopped      p50 %lf us, p99 %lf us", &r->p50, &r->p99);
			if ((q = strstr(s, "after start-up: ")))
				r->cpu = atof(q + 16);
			if ((q = strstr(s, "bytes, ")))
				r->bps = atof(q + 7);
			if (system("rm -rf /tmp/tracerd-bench-repo") != 0)
				exit(1);
		} else {
			char *s = slurp("/tmp/tracerd-bench.err"), *q = strstr(s, "perf.data (");
			struct stat sb;

			if (q && stat("/tmp/tracerd-bench.perf.data", &sb) == 0 && atof(q + 11) > 0)
				r->bps = (double)sb.st_size / atof(q + 11);
			unlink("/tmp/tracerd-bench.perf.data");
		}
	}
	close(in[1]);
	close(out[0]);
	return elapsed;
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	const char *tracerd = argv[1], *fx = argv[2];
	int rounds = atoi(argv[3]);
	static struct res res[C_N];

	if (argc < 7)
		return 1;
	if (system("rm -rf /tmp/tracerd-bench-repo") != 0)
		return 1;
	for (int k = 0; k < rounds && k < 32; k++) {
		double alone = 0, e[C_N];

		for (int j = 0; j < C_N; j++) {
			/* a different order each round */
			int c = (j + k) % C_N;

			e[c] = run(c, tracerd, fx, argv[4], argv[5], argv[6], &res[c]);
		}
		alone = e[C_ALONE];
		for (int c = 0; c < C_N; c++)
			res[c].slow[res[c].n++] = e[c] / alone;
	}
	printf("\n== recording cost: fx_work %s iterations, %s busy + %s idle threads, %d "
	       "interleaved rounds\n\n",
		argv[4], argv[5], argv[6], rounds);
	printf("%-32s %9s %10s %10s %12s %12s\n", "configuration", "slowdown", "stop p50",
		"stop p99", "CPU/sample", "bytes/sample");
	for (int c = 0; c < C_N; c++) {
		qsort(res[c].slow, (size_t)res[c].n, sizeof(double), cmp_d);
		printf("%-32s %9.3f", names[c], res[c].slow[res[c].n / 2]);
		if (c == C_T99 || c == C_T999)
			printf(" %8.1fus %8.1fus %10.1fus %12.2f\n", res[c].p50, res[c].p99,
				res[c].cpu, res[c].bps);
		else if (c != C_ALONE)
			printf(" %10s %10s %12s %12.1f\n", "-", "-", "-", res[c].bps);
		else
			printf("\n");
	}
	printf("\n(slowdown = the target's own time for its fixed work / the same alone, "
	       "median; tracerd figures from its summary of the last round; CPU/sample is the "
	       "daemon's, after start-up)\n");
	return 0;
}
