/* SPDX-License-Identifier: GPL-2.0-or-later */
/* make bench: what recording costs, tracerd and perf side by side, in one
 * table.  For each target and rate, in interleaved rounds: the target
 * alone, under `tracerd record`, and under `perf record --call-graph
 * dwarf` (perf's own cost: recording only; its unwinding and symbols come
 * later, in perf report, where tracerd's CPU includes both).
 *   slowdown      the target's wall time for its fixed work / alone, median;
 *                 and tracerd's - perf's of each round, median with its 95%
 *                 interval (rounds interleaved: a round's pair met the
 *                 same machine)
 *   CPU/sample    the recorder's CPU time (its rusage) / samples, start-up
 *                 included; tracerd also after start-up (steady state)
 *   start-up      tracerd's CPU until its first samples were written
 *   bytes/sample  the repository / perf.data, per sample
 *   stop p50/p99  how long a target thread was stopped per sample
 * Each target is held before its exec until the recorder is attached, so
 * that a compile is recorded from its first instruction.
 * Then wall mode on 1000 parked threads and a spinner (the spinner's CPU
 * time against alone, the daemon's share of a core), and the daemon's
 * resident size per followed process and per thread.
 *   bench_cost TRACERD FIXTURE_DIR ROUNDS CXX_SOURCE */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_ROUNDS 16
#define REPO "/tmp/tracerd-bench-cost-repo"
#define PERF_DATA "/tmp/tracerd-bench-cost.perf.data"
#define TOOL_ERR "/tmp/tracerd-bench-cost.err"
/* cold rounds: tracerd's debuginfo cache, emptied before each */
#define COLD_CACHE "/tmp/tracerd-bench-cost-cache"

enum tool { T_ALONE, T_TRACERD, T_PERF, T_N };
static const char *const tool_names[T_N] = { "alone", "tracerd", "perf --call-graph dwarf" };

struct cell {
	double slow[MAX_ROUNDS];
	double cpu_us[MAX_ROUNDS], steady_us[MAX_ROUNDS], startup_ms[MAX_ROUNDS];
	double bps[MAX_ROUNDS], p50[MAX_ROUNDS], p99[MAX_ROUNDS], samples[MAX_ROUNDS];
	int n;
};

static const char *tracerd;
static bool cold; /* tracerd with an empty debuginfo cache, and no perf */

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

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

static double ru_us(const struct rusage *ru)
{
	return (double)ru->ru_utime.tv_sec * 1e6 + (double)ru->ru_utime.tv_usec +
		(double)ru->ru_stime.tv_sec * 1e6 + (double)ru->ru_stime.tv_usec;
}

static long long du_bytes(const char *dir)
{
	char cmd[256];
	FILE *p;
	long long b = 0;

	snprintf(cmd, sizeof(cmd), "du -sb %s 2> /dev/null", dir);
	p = popen(cmd, "r");
	if (p && fscanf(p, "%lld", &b) != 1)
		b = 0;
	if (p)
		pclose(p);
	return b;
}

static bool traced_by(pid_t pid, pid_t tracer)
{
	char path[64], *p;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	p = strstr(slurp(path), "TracerPid:");
	return p && atoi(p + 10) == tracer;
}

/* Run argv (argv[0] by path, or searched in PATH) with its stdout and
 * stderr into TOOL_ERR. */
static pid_t spawn(const char *const argv[])
{
	pid_t p = fork();

	if (p == 0) {
		int fd = open(TOOL_ERR, O_WRONLY | O_CREAT | O_TRUNC, 0644);

		dup2(fd, 2);
		dup2(fd, 1);
		execvp(argv[0], (char *const *)argv);
		_exit(127);
	}
	return p;
}

/* Start argv held before its exec (reading go[0]); its stdout and stderr to
 * /dev/null, its stdin a pipe holding one byte (fx_work reads it). */
static pid_t start_held(char *const argv[], int go[2])
{
	pid_t f;

	if (pipe(go) < 0)
		exit(1);
	f = fork();
	if (f == 0) {
		int in[2], null = open("/dev/null", O_WRONLY);
		char c;

		close(go[1]);
		if (read(go[0], &c, 1) != 1)
			_exit(127);
		if (pipe(in) < 0 || write(in[1], "x", 1) != 1)
			_exit(127);
		dup2(in[0], 0);
		dup2(null, 1);
		dup2(null, 2);
		execvp(argv[0], argv);
		_exit(127);
	}
	close(go[0]);
	return f;
}

static pid_t start_tool(enum tool t, pid_t target, int hz)
{
	char pidbuf[16], hzbuf[16];
	const char *tr[] = { tracerd, "--pid", pidbuf, "-F", hzbuf, "-r", REPO, "-q",
		cold ? "--cache-dir" : NULL, COLD_CACHE, NULL };
	const char *pf[] = { "perf", "record", "-F", hzbuf, "--call-graph", "dwarf", "-o",
		PERF_DATA, "-p", pidbuf, NULL };

	snprintf(pidbuf, sizeof(pidbuf), "%d", (int)target);
	snprintf(hzbuf, sizeof(hzbuf), "%d", hz);
	return spawn(t == T_TRACERD ? tr : pf);
}

/* One run of argv under tool t at hz: the target's wall time, the tool's
 * figures into c (round k). */
static double run(enum tool t, char *const argv[], int hz, struct cell *c, int k)
{
	int go[2], st;
	pid_t f = start_held(argv, go), p = 0;
	double t0, t1;
	struct rusage ru;

	if (system("rm -rf " REPO " " PERF_DATA " " COLD_CACHE) != 0)
		exit(1);
	if (t != T_ALONE) {
		p = start_tool(t, f, hz);
		if (t == T_TRACERD) {
			for (int i = 0; i < 1000 && !traced_by(f, p); i++)
				usleep(5000);
		} else {
			usleep(500000); /* perf says nothing when attached */
		}
	}
	t0 = now_s();
	if (write(go[1], "g", 1) != 1)
		exit(1);
	close(go[1]);
	waitpid(f, &st, 0);
	t1 = now_s();
	if (p) {
		char *s, *q;

		if (wait4(p, &st, 0, &ru) < 0) /* both stop when the target exits */
			exit(1);
		s = slurp(TOOL_ERR);
		if (t == T_TRACERD) {
			if ((q = strstr(s, " taken")))
				while (q > s && q[-1] >= '0' && q[-1] <= '9')
					q--;
			c->samples[k] = q ? atof(q) : 0;
			if ((q = strstr(s, "stopped      p50 ")))
				sscanf(q, "stopped      p50 %lf us, p99 %lf us", &c->p50[k], &c->p99[k]);
			if ((q = strstr(s, "after start-up: ")))
				c->steady_us[k] = atof(q + 16);
			if ((q = strstr(s, "(start-up ")))
				c->startup_ms[k] = atof(q + 10);
			c->bps[k] = c->samples[k] ? (double)du_bytes(REPO) / c->samples[k] : 0;
		} else {
			q = strstr(s, "perf.data (");
			c->samples[k] = q ? atof(q + 11) : 0;
			if (c->samples[k]) {
				struct stat sb;

				if (stat(PERF_DATA, &sb) == 0)
					c->bps[k] = (double)sb.st_size / c->samples[k];
			}
		}
		c->cpu_us[k] = c->samples[k] ? ru_us(&ru) / c->samples[k] : 0;
	}
	return t1 - t0;
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median(const double *v, int n)
{
	double t[MAX_ROUNDS];

	if (n <= 0)
		return 0;
	memcpy(t, v, (size_t)n * sizeof(*v));
	qsort(t, (size_t)n, sizeof(*t), cmp_d);
	return t[n / 2];
}

/* The distribution-free interval of a median of n values: the k-th
 * smallest to the k-th largest, k the largest rank with P(Binomial(n, 1/2)
 * < k) <= 2.5%, so that the interval holds the true median at least 95% of
 * the time whatever the values' distribution; 0 if n is too small. */
static int ci_rank(int n)
{
	double p = 1, below = 0; /* p: P(X = j) */
	int k = 0;

	for (int j = 0; j < n; j++)
		p /= 2;
	for (int j = 0; j < n / 2; j++) {
		below += p; /* P(X <= j) */
		if (below > 0.025)
			break;
		k = j + 1;
		p = p * (n - j) / (j + 1);
	}
	return k;
}

static void row(const char *target, int hz, enum tool t, struct cell *c)
{
	char cpu[32] = "-", steady[32] = "-", startup[32] = "-", stop[32] = "-";

	if (t != T_ALONE)
		snprintf(cpu, sizeof(cpu), "%.1f us", median(c->cpu_us, c->n));
	if (t == T_TRACERD) {
		snprintf(steady, sizeof(steady), "%.1f us", median(c->steady_us, c->n));
		snprintf(startup, sizeof(startup), "%.0f ms", median(c->startup_ms, c->n));
		snprintf(stop, sizeof(stop), "%.0f/%.0f us", median(c->p50, c->n),
			median(c->p99, c->n));
	}
	printf("%-18s %5d %-24s %8.3f %11s %11s %8s %9.1f %11s %8.0f\n", target, hz,
		tool_names[t], median(c->slow, c->n), cpu, steady, startup,
		t == T_ALONE ? 0.0 : median(c->bps, c->n), stop,
		t == T_ALONE ? 0.0 : median(c->samples, c->n));
}

/* Does recorder t take part (a cold row is tracerd's alone)? */
static bool runs(int t)
{
	return !(cold && t == T_PERF);
}

/* The target and rate, rounds interleaved, a different order each round. */
static void measure(const char *name, char *const argv[], int hz, int rounds)
{
	static struct cell cells[T_N];

	memset(cells, 0, sizeof(cells));
	for (int k = 0; k < rounds && k < MAX_ROUNDS; k++) {
		double e[T_N];

		for (int j = 0; j < T_N; j++) {
			enum tool t = (enum tool)((j + k) % T_N);

			if (runs(t))
				e[t] = run(t, argv, hz, &cells[t], k);
		}
		for (int t = 0; t < T_N; t++)
			if (runs(t))
				cells[t].slow[cells[t].n++] = e[t] / e[T_ALONE];
	}
	for (int t = 0; t < T_N; t++)
		if (runs(t))
			row(name, hz, (enum tool)t, &cells[t]);
	if (!cold && cells[T_TRACERD].n > 1) {
		/* rounds are interleaved: a round's pair met the same machine */
		double d[MAX_ROUNDS];
		int n = cells[T_TRACERD].n, k = ci_rank(n);

		for (int i = 0; i < n; i++)
			d[i] = 100 * (cells[T_TRACERD].slow[i] - cells[T_PERF].slow[i]);
		qsort(d, (size_t)n, sizeof(*d), cmp_d);
		printf("%-18s %5d   slowdown, tracerd - perf, round by round: median %+.2f points",
			name, hz, median(d, n));
		if (k)
			printf(" (95%% interval %+.2f to %+.2f)", d[k - 1], d[n - k]);
		printf(", from %+.2f to %+.2f\n", d[0], d[n - 1]);
	}
	fflush(stdout);
}

/* ---- wall mode on a crowd */

static uint64_t task_cpu_ns(pid_t pid, pid_t tid)
{
	char path[96];

	snprintf(path, sizeof(path), "/proc/%d/task/%d/schedstat", (int)pid, (int)tid);
	return strtoull(slurp(path), NULL, 10);
}

static pid_t task_named(pid_t pid, const char *name)
{
	char path[96];
	struct dirent *de;
	DIR *d;
	pid_t found = 0;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	d = opendir(path);
	while (d && !found && (de = readdir(d))) {
		char *s;

		snprintf(path, sizeof(path), "/proc/%d/task/%d/comm", (int)pid, atoi(de->d_name));
		s = slurp(path);
		s[strcspn(s, "\n")] = '\0';
		if (!strcmp(s, name))
			found = atoi(de->d_name);
	}
	if (d)
		closedir(d);
	return found;
}

/* Start FIXTURE ARG with stdout to a file; wait for its "ready". */
static pid_t start_ready(const char *fx, const char *arg)
{
	pid_t f;

	unlink("/tmp/tracerd-bench-cost.out"); /* not the last fixture's "ready" */
	f = fork();

	if (f == 0) {
		int fd = open("/tmp/tracerd-bench-cost.out", O_WRONLY | O_CREAT | O_TRUNC, 0644);

		dup2(fd, 1);
		execl(fx, fx, arg, (char *)NULL);
		_exit(127);
	}
	for (int i = 0; i < 3000 && !strstr(slurp("/tmp/tracerd-bench-cost.out"), "ready"); i++)
		usleep(10000);
	return f;
}

static void crowd(const char *fxdir, int rounds, double secs)
{
	char fx[512], dur[32];
	pid_t f, spinner;
	double alone[MAX_ROUNDS], rec[MAX_ROUNDS], core[MAX_ROUNDS], rate[MAX_ROUNDS];
	int n = 0;

	snprintf(fx, sizeof(fx), "%s/fx_threads", fxdir);
	snprintf(dur, sizeof(dur), "%.0fs", secs);
	f = start_ready(fx, "1000");
	spinner = task_named(f, "fx-spin");
	if (!spinner) {
		printf("wall mode, fx_threads 1000: the fixture did not start\n");
		kill(f, SIGKILL);
		waitpid(f, NULL, 0);
		return;
	}
	for (int k = 0; k < rounds && k < MAX_ROUNDS; k++, n++) {
		uint64_t c0 = task_cpu_ns(f, spinner), c1, c2;
		char pidbuf[16], *s, *q;
		struct rusage ru;
		double t0;
		pid_t p;
		int st;

		usleep((useconds_t)(secs * 1e6));
		c1 = task_cpu_ns(f, spinner);
		if (system("rm -rf " REPO) != 0)
			exit(1);
		snprintf(pidbuf, sizeof(pidbuf), "%d", (int)f);
		t0 = now_s();
		{
			const char *av[] = { tracerd, "--pid", pidbuf, "-r", REPO, "-d", dur, "--mode",
				"wall", NULL };

			p = spawn(av);
		}
		wait4(p, &st, 0, &ru);
		c2 = task_cpu_ns(f, spinner);
		alone[k] = (double)(c1 - c0) / 1e9;
		rec[k] = (double)(c2 - c1) / 1e9 / (now_s() - t0) * secs;
		core[k] = ru_us(&ru) / 1e6 / (now_s() - t0);
		s = slurp(TOOL_ERR);
		q = strstr(s, "written (");
		rate[k] = q ? atof(q + 9) : 0;
	}
	kill(f, SIGKILL);
	waitpid(f, NULL, 0);
	printf("\nwall mode, fx_threads 1000 (1000 parked threads, a spinner, %d threads in all), "
	       "99 Hz, %.0f s runs, %d rounds:\n", 1011, secs, n);
	printf("  the spinner's CPU recorded / alone: %.3f (slowdown %.1f%%)\n",
		median(rec, n) / median(alone, n), 100 * (1 - median(rec, n) / median(alone, n)));
	printf("  tracerd: %.1f%% of one core, %.0f samples/s written\n", 100 * median(core, n),
		median(rate, n));
}

/* ---- steady state by difference: the daemon's CPU of a long and of a
 * short recording of the same spinning program, over the difference in
 * samples (start-up cancels out) */

/* tracerd on fx_spin pid for dur at hz: its CPU (us) and samples taken */
static void cpu_and_samples(pid_t pid, int hz, const char *dur, double *ret_us,
	double *ret_samples)
{
	char pidbuf[16], hzbuf[16], *q, *s;
	struct rusage ru;
	pid_t p;
	int st;

	snprintf(pidbuf, sizeof(pidbuf), "%d", (int)pid);
	snprintf(hzbuf, sizeof(hzbuf), "%d", hz);
	if (system("rm -rf " REPO) != 0)
		exit(1);
	{
		const char *av[] = { tracerd, "--pid", pidbuf, "-F", hzbuf, "-r", REPO, "-d", dur,
			"-q", NULL };

		p = spawn(av);
	}
	wait4(p, &st, 0, &ru);
	*ret_us = ru_us(&ru);
	s = slurp(TOOL_ERR);
	if ((q = strstr(s, " taken")))
		while (q > s && q[-1] >= '0' && q[-1] <= '9')
			q--;
	*ret_samples = q ? atof(q) : 0;
}

static void steady(const char *fxdir, int rounds)
{
	char fx[512];
	double per[MAX_ROUNDS], start[MAX_ROUNDS];
	int n = 0;
	pid_t f;

	snprintf(fx, sizeof(fx), "%s/fx_spin", fxdir);
	f = start_ready(fx, NULL);
	for (int k = 0; k < rounds && k < MAX_ROUNDS; k++) {
		double c5, s5, c20, s20;

		cpu_and_samples(f, 99, "5s", &c5, &s5);
		cpu_and_samples(f, 99, "20s", &c20, &s20);
		if (s20 <= s5)
			continue;
		per[n] = (c20 - c5) / (s20 - s5);
		start[n] = (c5 - s5 * per[n]) / 1e3;
		n++;
	}
	kill(f, SIGKILL);
	waitpid(f, NULL, 0);
	printf("\nsteady state by difference (fx_spin, 99 Hz, a 20 s and a 5 s recording, %d "
	       "rounds): %.1f us of tracerd's CPU per sample; start-up (the intercept) %.0f ms\n",
		n, median(per, n), median(start, n));
}

/* ---- resident size */

static long maxrss_kb(const char *fxdir, const char *fixture, const char *arg, int nproc)
{
	char fx[512], dur[] = "3s";
	pid_t f[8];
	char pidbuf[8][16];
	const char *args[40];
	struct rusage ru;
	int na = 0, st;
	pid_t p;

	snprintf(fx, sizeof(fx), "%s/%s", fxdir, fixture);
	args[na++] = tracerd;
	for (int i = 0; i < nproc; i++) {
		f[i] = start_ready(fx, arg);
		snprintf(pidbuf[i], sizeof(pidbuf[i]), "%d", (int)f[i]);
		args[na++] = "--pid";
		args[na++] = pidbuf[i];
	}
	args[na++] = "-r";
	args[na++] = REPO;
	args[na++] = "-d";
	args[na++] = dur;
	args[na++] = "-q";
	args[na] = NULL;
	if (system("rm -rf " REPO) != 0)
		exit(1);
	p = spawn(args);
	wait4(p, &st, 0, &ru);
	for (int i = 0; i < nproc; i++) {
		kill(f[i], SIGKILL);
		waitpid(f[i], NULL, 0);
	}
	return ru.ru_maxrss;
}

int main(int argc, char **argv)
{
	int rounds;
	static char fx_work[512], a_iter[] = "4000000", a_busy[] = "1", a_idle[] = "0";
	static char a_cxx[] = "clang++", a_o2[] = "-O2", a_c[] = "-c", a_o[] = "-o",
		a_out[] = "/tmp/tracerd-bench-cost.o";
	char *work_argv[] = { fx_work, a_iter, a_busy, a_idle, NULL };
	char *cxx_argv[] = { a_cxx, a_o2, a_c, NULL, a_o, a_out, NULL };
	long r1, r4, rt;

	if (argc < 5)
		return 1;
	tracerd = argv[1];
	rounds = atoi(argv[3]);
	cxx_argv[3] = argv[4];
	snprintf(fx_work, sizeof(fx_work), "%s/fx_work", argv[2]);
	signal(SIGPIPE, SIG_IGN);
	printf("\n== what recording costs: tracerd and perf record side by side, %d interleaved "
	       "rounds (%d on fx_work), %ld CPUs, load average %.2f\n\n",
		rounds, MAX_ROUNDS, sysconf(_SC_NPROCESSORS_ONLN), atof(slurp("/proc/loadavg")));
	printf("%-18s %5s %-24s %8s %11s %11s %8s %9s %11s %8s\n", "target", "Hz", "recorder",
		"slowdown", "CPU/sample", "steady", "start-up", "bytes/smp", "stop p50/99",
		"samples");
	/* perf and tracerd take the same interrupt per sample: their
	 * slowdowns differ by less than single rounds spread (a point or
	 * two), so these rows get as many rounds as the table holds */
	measure("fx_work (C)", work_argv, 99, MAX_ROUNDS);
	measure("fx_work (C)", work_argv, 999, MAX_ROUNDS);
	if (access(argv[4], R_OK) == 0 && system("command -v clang++ > /dev/null") == 0) {
		measure("clang++ -O2 -c", cxx_argv, 99, rounds);
		/* a machine's first recording of clang: tracerd builds its
		 * symbol tables and inflates libc's debuginfo into the cache */
		cold = true;
		measure("clang++, 1st time", cxx_argv, 99, rounds);
		cold = false;
	} else
		printf("clang++ -O2 -c: skipped (no clang++ or no %s)\n", argv[4]);
	printf("\n(slowdown: the target's wall time / alone, median of the rounds; CPU/sample: "
	       "the recorder's CPU time per sample, start-up included (perf: recording only; "
	       "tracerd: recording, unwinding and symbols); steady: tracerd's after start-up; "
	       "start-up: tracerd's CPU until its first samples were written; 1st time: "
	       "tracerd's debuginfo cache emptied before each round)\n");
	steady(argv[2], rounds > 3 ? 3 : rounds);
	crowd(argv[2], rounds > 3 ? 3 : rounds, 5);
	r1 = maxrss_kb(argv[2], "fx_spin", NULL, 1);
	r4 = maxrss_kb(argv[2], "fx_spin", NULL, 4);
	rt = maxrss_kb(argv[2], "fx_threads", "1000", 1);
	printf("\ntracerd's resident size (peak, 3 s at 99 Hz): %ld KiB for one process of one "
	       "thread; %.0f KiB per more process of the same binary (4: %ld KiB); %.1f KiB per "
	       "more thread (fx_threads 1000, 1011 threads: %ld KiB)\n",
		r1, (double)(r4 - r1) / 3, r4, (double)(rt - r1) / 1010, rt);
	if (system("rm -rf " REPO " " PERF_DATA " " TOOL_ERR " " COLD_CACHE " /tmp/tracerd-bench-cost.o "
		   "/tmp/tracerd-bench-cost.out") != 0)
		return 1;
	return 0;
}
