/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Helpers for every test: start and stop fixtures, run tracerd and capture
 * what it says, read threads' states and counters from /proc, parse a
 * dump's frames, sum a report's column, and meet a missing tool with
 * need_command(), the one way a test skips for one.  A helper that cannot
 * go on fails the calling test through Criterion's asserts; what a suite
 * shares alone stays with it (record.h: the record suites' harness). */
#define _GNU_SOURCE
#include "helpers.h"
#include "../common/buf.h"
#include "../common/td.h"

#include <criterion/criterion.h>
#include <dirent.h>
#include <grp.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static pid_t start(const char *path, const char *arg1, int *ret_stdin)
{
	int p[2], in[2] = { -1, -1 };
	pid_t pid;
	char buf[64];
	size_t got = 0;
	uint64_t deadline = now_ms() + TEST_PATIENCE_MS;

	if (pipe2(p, O_CLOEXEC))
		return -1;
	if (ret_stdin && pipe2(in, O_CLOEXEC)) {
		close(p[0]);
		close(p[1]);
		return -1;
	}
	pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		int devnull = open("/dev/null", O_RDWR);

		dup2(p[1], 1);
		dup2(ret_stdin ? in[0] : devnull, 0);
		/* fixtures have nothing to say on stderr in a passing run */
		dup2(devnull, 2);
		execl(path, path, arg1, (char *)NULL);
		_exit(127);
	}
	close(p[1]);
	if (ret_stdin)
		close(in[0]);
	while (now_ms() < deadline) {
		struct pollfd pfd = { .fd = p[0], .events = POLLIN };
		ssize_t n;

		if (poll(&pfd, 1, 100) <= 0)
			continue;
		n = read(p[0], buf + got, sizeof(buf) - 1 - got);
		if (n <= 0)
			break;
		got += (size_t)n;
		buf[got] = '\0';
		if (strstr(buf, "ready\n")) {
			close(p[0]);
			if (ret_stdin)
				*ret_stdin = in[1];
			return pid;
		}
	}
	close(p[0]);
	if (ret_stdin)
		close(in[1]);
	fx_stop(pid);
	return -1;
}

pid_t fx_start(const char *path, const char *arg1)
{
	return start(path, arg1, NULL);
}

pid_t fx_start_piped(const char *path, const char *arg1, int *ret_stdin)
{
	return start(path, arg1, ret_stdin);
}

void fx_stop(pid_t pid)
{
	if (pid <= 0)
		return;
	kill(pid, SIGKILL);
	kill(pid, SIGCONT);
	waitpid(pid, NULL, 0);
}

static void slurp2(int fo, int fe, char **out, char **err)
{
	size_t lo = 0, le = 0, co = 4096, ce = 4096;
	bool open_o = true, open_e = true;

	*out = calloc(1, co);
	*err = calloc(1, ce);
	while (open_o || open_e) {
		struct pollfd pfd[2] = { { .fd = open_o ? fo : -1, .events = POLLIN },
			{ .fd = open_e ? fe : -1, .events = POLLIN } };

		if (poll(pfd, 2, 60000) <= 0)
			break;
		for (int i = 0; i < 2; i++) {
			char **b = i ? err : out;
			size_t *l = i ? &le : &lo, *c = i ? &ce : &co;
			ssize_t n;

			if (!(pfd[i].revents & (POLLIN | POLLHUP)))
				continue;
			cr_assert_eq(td_array_grow(*b, *c, *l + 4096 + 1, 4096), 0,
				"no memory for tracerd's output");
			n = read(pfd[i].fd, *b + *l, *c - *l - 1);
			if (n <= 0) {
				if (i)
					open_e = false;
				else
					open_o = false;
				continue;
			}
			*l += (size_t)n;
			(*b)[*l] = '\0';
		}
	}
}

void tracerd_test_env(void)
{
	setenv("TRACERD_CACHE_DIR", TEST_CACHE_DIR, 0);
}

static int run(struct run_result *r, const char *const *argv, bool nobody)
{
	char path[4096];
	int po[2], pe[2], st;
	pid_t pid;
	int argc = 0;
	const char *args[64];

	snprintf(path, sizeof(path), "%s/tracerd", TD_BUILD_DIR);
	args[argc++] = path;
	for (int i = 1; argv[i] && argc < 63; i++)
		args[argc++] = argv[i];
	args[argc] = NULL;
	if (pipe2(po, O_CLOEXEC) || pipe2(pe, O_CLOEXEC))
		return -1;
	pid = fork();
	if (pid == 0) {
		dup2(po[1], 1);
		dup2(pe[1], 2);
		if (nobody && (setgroups(0, NULL) || setgid(65534) || setuid(65534)))
			_exit(126);
		/* nobody could not write the build's cache: none */
		if (nobody)
			setenv("TRACERD_CACHE_DIR", "none", 0);
		tracerd_test_env();
		execv(path, (char *const *)args);
		_exit(127);
	}
	close(po[1]);
	close(pe[1]);
	slurp2(po[0], pe[0], &r->out, &r->err);
	close(po[0]);
	close(pe[0]);
	waitpid(pid, &st, 0);
	r->status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
	return 0;
}

int run_tracerd(struct run_result *r, const char *const *argv)
{
	return run(r, argv, false);
}

int run_tracerd_as_nobody(struct run_result *r, const char *const *argv)
{
	return run(r, argv, true);
}

void dump_text(pid_t pid, struct run_result *r, const char *extra1, const char *extra2)
{
	char p[32];
	const char *argv[8] = { "tracerd", "dump", "--pid", p, extra1, extra2, NULL };

	snprintf(p, sizeof(p), "%d", (int)pid);
	cr_assert_eq(run_tracerd(r, argv), 0);
}

void run_result_free(struct run_result *r)
{
	free(r->out);
	free(r->err);
	r->out = r->err = NULL;
}

static int read_small(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n < 0)
		return -1;
	buf[n] = '\0';
	return (int)n;
}

char task_state(pid_t pid, pid_t tid)
{
	char path[128], buf[1024], *p;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/stat", (int)pid, (int)tid);
	if (read_small(path, buf, sizeof(buf)) < 0)
		return '?';
	p = strrchr(buf, ')');
	return p && p[1] ? p[2] : '?';
}

static void task_name(pid_t pid, pid_t tid, char *buf, size_t len)
{
	char path[128];

	snprintf(path, sizeof(path), "/proc/%d/task/%d/comm", (int)pid, (int)tid);
	if (read_small(path, buf, len) < 0)
		buf[0] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
}

int task_list(pid_t pid, pid_t *tids, int n)
{
	char path[64];
	struct dirent *de;
	DIR *d;
	int k = 0;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	d = opendir(path);
	if (!d)
		return 0;
	while ((de = readdir(d)) && k < n)
		if (de->d_name[0] != '.')
			tids[k++] = atoi(de->d_name);
	closedir(d);
	return k;
}

pid_t task_by_name(pid_t pid, const char *name)
{
	pid_t tids[256];
	int n = task_list(pid, tids, 256);
	char buf[64];

	for (int i = 0; i < n; i++) {
		task_name(pid, tids[i], buf, sizeof(buf));
		if (!strcmp(buf, name))
			return tids[i];
	}
	return 0;
}

bool wait_parked(pid_t pid, const char *except, int timeout_ms)
{
	uint64_t deadline = now_ms() + (uint64_t)timeout_ms;

	while (now_ms() < deadline) {
		pid_t tids[256];
		int n = task_list(pid, tids, 256), ok = 0;
		char name[64];

		for (int i = 0; i < n; i++) {
			task_name(pid, tids[i], name, sizeof(name));
			if ((except && strstr(name, except)) || task_state(pid, tids[i]) == 'S')
				ok++;
		}
		if (n > 0 && ok == n)
			return true;
		usleep(10000);
	}
	return false;
}

bool wait_all_state(pid_t pid, char c, int timeout_ms)
{
	uint64_t deadline = now_ms() + (uint64_t)timeout_ms;

	while (now_ms() < deadline) {
		pid_t tids[256];
		int n = task_list(pid, tids, 256), ok = 0;

		for (int i = 0; i < n; i++)
			ok += task_state(pid, tids[i]) == c;
		if (n > 0 && ok == n)
			return true;
		usleep(10000);
	}
	return false;
}

/* Field k (0: run time, 1: wait time, 2: times run) of schedstat. */
static uint64_t schedstat(pid_t pid, pid_t tid, int k)
{
	char path[128], buf[256], *p = buf;
	uint64_t v = 0;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/schedstat", (int)pid, (int)tid);
	if (read_small(path, buf, sizeof(buf)) < 0)
		return 0;
	for (int i = 0; i <= k; i++)
		v = strtoull(p, &p, 10);
	return v;
}

uint64_t task_runtime(pid_t pid, pid_t tid)
{
	return schedstat(pid, tid, 0);
}

uint64_t task_switches(pid_t pid, pid_t tid)
{
	return schedstat(pid, tid, 2);
}

bool task_signal_pending(pid_t pid, pid_t tid, int signo)
{
	static const char *const keys[] = { "\nSigPnd:", "\nShdPnd:" };
	char path[128], buf[4096];
	bool pending = false;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/status", (int)pid, (int)tid);
	if (read_small(path, buf, sizeof(buf)) < 0)
		return false;
	for (int i = 0; i < 2; i++) {
		const char *p = strstr(buf, keys[i]);

		if (p && strtoull(p + strlen(keys[i]), NULL, 16) >> (signo - 1) & 1)
			pending = true;
	}
	return pending;
}

/* Address of the symbol name in the running pid: its value in the
 * executable plus where the executable is loaded (PIE or not). */
static uint64_t symbol_address(pid_t pid, const char *name)
{
	char path[64], line[512];
	uint64_t value = 0, base = 0, first_load = UINT64_MAX;
	bool found = false;
	Elf_Scn *scn = NULL;
	GElf_Ehdr eh;
	size_t nph;
	Elf *e;
	FILE *f;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/exe", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	elf_version(EV_CURRENT);
	e = elf_begin(fd, ELF_C_READ, NULL);
	while (e && (scn = elf_nextscn(e, scn)) && !found) {
		GElf_Shdr sh;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_SYMTAB ||
			!(d = elf_getdata(scn, NULL)))
			continue;
		for (size_t i = 0; sh.sh_entsize && i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Sym sym;
			const char *n;

			if (!gelf_getsym(d, (int)i, &sym))
				continue;
			n = elf_strptr(e, sh.sh_link, sym.st_name);
			if (n && !strcmp(n, name)) {
				value = sym.st_value;
				found = true;
				break;
			}
		}
	}
	if (e && gelf_getehdr(e, &eh) && !elf_getphdrnum(e, &nph)) {
		for (size_t i = 0; i < nph; i++) {
			GElf_Phdr ph;

			if (gelf_getphdr(e, (int)i, &ph) && ph.p_type == PT_LOAD &&
				ph.p_vaddr < first_load)
				first_load = ph.p_vaddr & ~(uint64_t)0xfff;
		}
		if (eh.e_type == ET_DYN) {
			/* the executable's mapping at file offset 0 */
			char exe[256];
			ssize_t l;

			snprintf(path, sizeof(path), "/proc/%d/exe", (int)pid);
			l = readlink(path, exe, sizeof(exe) - 1);
			exe[l > 0 ? l : 0] = '\0';
			snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
			f = fopen(path, "re");
			while (f && l > 0 && fgets(line, sizeof(line), f)) {
				unsigned long s, off;
				int at = 0;

				if (sscanf(line, "%lx-%*x %*s %lx %*s %*s %n", &s, &off, &at) == 2 &&
					at && off == 0 && !strncmp(line + at, exe, (size_t)l)) {
					base = s - first_load;
					break;
				}
			}
			if (f)
				fclose(f);
		}
	}
	if (e)
		elf_end(e);
	close(fd);
	return found ? base + value : 0;
}

uint64_t fx_counter(pid_t pid)
{
	char path[64];
	uint64_t addr = symbol_address(pid, "fx_progress"), v;
	int fd;
	ssize_t n;

	if (!addr)
		return UINT64_MAX;
	snprintf(path, sizeof(path), "/proc/%d/mem", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return UINT64_MAX;
	n = pread(fd, &v, sizeof(v), (off_t)addr);
	close(fd);
	return n == sizeof(v) ? v : UINT64_MAX;
}

bool wait_for(bool (*cond)(void *arg), void *arg, int timeout_ms)
{
	uint64_t deadline = now_ms() + (uint64_t)timeout_ms;

	for (;;) {
		if (cond(arg))
			return true;
		if (now_ms() >= deadline)
			return false;
		usleep(2000);
	}
}

int parse_thread(const char *text, pid_t tid, struct pframe *frames, int n)
{
	char hdr[64];
	const char *p;
	int k = 0;

	/* at the start of a line: "thread N (" also stands in wait lines */
	snprintf(hdr, sizeof(hdr), "\nthread %d (", (int)tid);
	p = strncmp(text, hdr + 1, strlen(hdr + 1)) ? strstr(text, hdr) : text;
	if (!p)
		return -1;
	if (*p == '\n')
		p++;
	p = strchr(p, '\n');
	/* what the thread waits for, if it does: "  waiting for ..." */
	if (p && p[1] == ' ' && p[2] == ' ' && p[3] >= 'a' && p[3] <= 'z')
		p = strchr(p + 1, '\n');
	while (p && p[1] == ' ' && p[2] == ' ' && p[3] == '#' && k < n) {
		const char *line = p + 1, *end = strchr(line, '\n');
		char buf[4096], *q, *in, *at;
		size_t len = end ? (size_t)(end - line) : strlen(line);
		struct pframe *f = &frames[k++];

		memset(f, 0, sizeof(*f));
		if (len >= sizeof(buf))
			len = sizeof(buf) - 1;
		memcpy(buf, line, len);
		buf[len] = '\0';
		/* a kernel frame ("  #N   function+0xOFF in [kernel]", no pc):
		 * not one of the user's, which the callers compare */
		if (!strstr(buf, " 0x0") && strstr(buf, " in [")) {
			k--;
			p = end;
			continue;
		}
		/* "  #N   0xPC function [inlined] at file:line in module" */
		q = strstr(buf, " 0x");
		q = q ? strchr(q + 1, ' ') : NULL;
		if (!q)
			break;
		q++;
		in = strstr(q, " in /");
		if (in) {
			snprintf(f->module, sizeof(f->module), "%s", in + 4);
			*in = '\0';
		}
		at = strstr(q, " at ");
		if (at) {
			char *colon = strrchr(at + 4, ':');

			if (colon) {
				f->line = atoi(colon + 1);
				*colon = '\0';
			}
			snprintf(f->file, sizeof(f->file), "%s", at + 4);
			*at = '\0';
		}
		if (strlen(q) > 10 && !strcmp(q + strlen(q) - 10, " [inlined]")) {
			f->inlined = true;
			q[strlen(q) - 10] = '\0';
		}
		snprintf(f->function, sizeof(f->function), "%s", q);
		p = end;
	}
	return k;
}

void own_chain(const struct pframe *f, int n, const char *module, char *buf, size_t len)
{
	size_t l = 0;

	buf[0] = '\0';
	for (int i = 0; i < n && l < len; i++) {
		const char *m = f[i].module;

		if (strncmp(m, module, strlen(module)) != 0)
			continue;
		l += (size_t)snprintf(buf + l, len - l, "%s%s", l ? " " : "", f[i].function);
	}
}

int source_line(const char *path, const char *marker)
{
	char full[4096], line[4096];
	FILE *f;
	int n = 0;

	snprintf(full, sizeof(full), "%s/%s", TD_SOURCE_DIR, path);
	f = fopen(full, "r");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		n++;
		if (strstr(line, marker)) {
			fclose(f);
			return n;
		}
	}
	fclose(f);
	return 0;
}

bool is_root(void)
{
	return geteuid() == 0;
}

char *shell_output(const char *cmd, int *ret_status)
{
	FILE *f = popen(cmd, "r");
	char *text = NULL;
	size_t cap = 0;
	int st = -1;

	if (f) {
		if (getdelim(&text, &cap, '\0', f) < 0) {
			free(text); /* getdelim may allocate before it fails */
			text = NULL;
		}
		st = pclose(f);
	}
	if (ret_status)
		*ret_status = st;
	return text ? text : strdup("");
}

/* Sum of the col-th space-separated field of each line after skip lines;
 * col < 0: the last field. */
unsigned long long sum_column(const char *text, int skip_lines, int col)
{
	unsigned long long s = 0;
	int i = 0;

	for (const char *p = text; *p; i++) {
		const char *end = strchrnul(p, '\n');
		char line[256];

		snprintf(line, sizeof(line), "%.*s", (int)(end - p), p);
		if (i >= skip_lines && end > p) {
			if (col < 0) {
				/* lines can be long (deep C++ names): no copy */
				const char *q = end;

				while (q > p && q[-1] != ' ')
					q--;
				s += strtoull(q, NULL, 10);
			} else {
				char *save, *tok = strtok_r(line, " ", &save);

				for (int c = 0; tok && c < col; c++)
					tok = strtok_r(NULL, " ", &save);
				if (tok)
					s += strtoull(tok, NULL, 10);
			}
		}
		p = *end ? end + 1 : end;
	}
	return s;
}

bool have_command(const char *name)
{
	char cmd[256];

	snprintf(cmd, sizeof(cmd), "command -v '%s' >/dev/null 2>&1", name);
	return system(cmd) == 0;
}

char *read_all(const char *path)
{
	FILE *f = fopen(path, "r");
	char *buf = NULL;
	size_t cap = 0;

	cr_assert_not_null(f, "missing %s", path);
	if (getdelim(&buf, &cap, '\0', f) < 0) {
		free(buf);
		buf = strdup("");
	}
	fclose(f);
	return buf;
}

/* Headless Debian chromium: --dump-dom runs the page's script and prints
 * the DOM it built; the URL hash applies the same zoom and search as a click
 * and typing. */
char *chromium_page(const char *url, const char *extra, char **ret_log)
{
	char cmd[2048], *text, *log;

	snprintf(cmd, sizeof(cmd),
		"timeout 60 chromium --headless --no-sandbox --disable-gpu --no-first-run "
		"--disable-background-networking --disable-component-update --disable-sync "
		"--user-data-dir=%s/chromium-profile --enable-logging=stderr --v=0 %s '%s' "
		"2>%s/chromium.log",
		TD_BUILD_DIR, extra, url, TD_BUILD_DIR);
	text = shell_output(cmd, NULL);
	snprintf(cmd, sizeof(cmd), "%s/chromium.log", TD_BUILD_DIR);
	log = read_all(cmd);
	*ret_log = log;
	return text;
}

char *html_page_data(const char *page, int *ret_status)
{
	char cmd[1024];

	snprintf(cmd, sizeof(cmd), "node '%s/test/tools/html-data.js' '%s' 2>&1", TD_SOURCE_DIR, page);
	return shell_output(cmd, ret_status);
}

unsigned long nm_addr(const char *file, const char *name)
{
	char cmd[512], *out;
	unsigned long a = 0;
	int status;

	snprintf(cmd, sizeof(cmd), "nm %s | awk '$3 == \"%s\" { print $1; exit }'", file, name);
	out = shell_output(cmd, &status);
	if (out && status == 0)
		a = strtoul(out, NULL, 16);
	free(out);
	return a;
}

void need_command(const char *name, const char *package)
{
	if (!have_command(name))
		cr_skip_test("no %s on this machine (apt-get install %s)", name, package);
}

void need_python311(const char *python)
{
	char cmd[512], *out;
	int status;

	if (access(python, X_OK))
		cr_skip_test("no %s on this machine (apt-get install python3)", python);
	snprintf(cmd, sizeof(cmd), "%s -c 'import sys; print(sys.version_info[:2])'", python);
	out = shell_output(cmd, &status);
	if (status || !out || strcmp(out, "(3, 11)\n")) {
		free(out);
		cr_skip_test("%s is not CPython 3.11, the version tracerd reads", python);
	}
	free(out);
}

void go_fixture_build(const char *bin)
{
	char cmd[1024], *out;
	int status;

	need_command("go", "golang-go");
	snprintf(cmd, sizeof(cmd),
		"cd %s/test/fixtures/fx_go && GOCACHE=/tmp/tracerd-test-gocache GOFLAGS=-mod=mod "
		"go build -o %s . 2>&1",
		TD_SOURCE_DIR, bin);
	out = shell_output(cmd, &status);
	cr_assert_eq(status, 0, "go build: %s", out);
	free(out);
}

static pid_t load_pids[64];
static unsigned load_n;

void load_start(void)
{
	long cores = sysconf(_SC_NPROCESSORS_ONLN);
	pid_t parent = getpid();

	for (long i = 0; i < 3 * (cores > 0 ? cores : 1) && load_n < TD_ARRAY_SIZE(load_pids);
		i++) {
		pid_t pid = fork();

		cr_assert_geq(pid, 0);
		if (pid == 0) {
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			if (getppid() != parent)
				_exit(0);
			for (volatile unsigned long spin = 0;; spin++)
				;
		}
		load_pids[load_n++] = pid;
	}
}

void load_stop(void)
{
	for (unsigned i = 0; i < load_n; i++) {
		kill(load_pids[i], SIGKILL);
		waitpid(load_pids[i], NULL, 0);
	}
	load_n = 0;
}

pid_t fx_start_listing(const char *path, const char *arg1, char *text, size_t len)
{
	size_t got = 0;
	int p[2];
	pid_t pid;

	cr_assert_eq(pipe(p), 0);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		dup2(p[1], 1);
		close(p[0]);
		execl(path, path, arg1, (char *)NULL);
		_exit(127);
	}
	close(p[1]);
	text[0] = '\0';
	while (!strstr(text, "end\n")) {
		ssize_t n = read(p[0], text + got, len - 1 - got);

		cr_assert_gt(n, 0, "%s did not start: %s", path, text);
		got += (size_t)n;
		text[got] = '\0';
	}
	close(p[0]);
	return pid;
}

unsigned long long fx_listed_addr(const char *text, const char *name)
{
	char key[64];
	const char *p;

	snprintf(key, sizeof(key), "\n%s 0x", name);
	p = strstr(text, key);
	cr_assert_not_null(p, "no %s in %s", name, text);
	return strtoull(p + strlen(key), NULL, 16);
}
