/* tracerd report: golden outputs of every text format on a real recording
 * (a crash) and on the synthetic golden chunk; invariants; filters; errors. */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <ctype.h>
#include <dirent.h>
#include <fcntl.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../../chunkfmt/chunkfmt-internal.h"
#include "../../report/report.h"
#include "../helpers.h"
#include "../tools/synth.h"

#define GOLD(f) TD_SOURCE_DIR "/test/golden/" f

/* The text formats open with the mode ("mode: ...", and in wall mode
 * "time: ..."): what follows it. */
static const char *body(const char *out)
{
	while (!strncmp(out, "mode: ", 6) || !strncmp(out, "time: ", 6)) {
		const char *nl = strchr(out, '\n');

		if (!nl)
			break;
		out = nl + 1;
	}
	return out;
}

static void golden(const char *file, const char *format, const char *extra)
{
	char in[512], want_path[512];
	const char *argv[] = { "tracerd", "report", in, "-f", format, extra, NULL };
	struct run_result r;
	char *want;

	snprintf(in, sizeof(in), GOLD("%s.tcf"), file);
	snprintf(want_path, sizeof(want_path), GOLD("report/%s.%s.txt"), file, format);
	run_tracerd(&r, argv);
	cr_assert_eq(r.status, 0, "%s", r.err);
	want = read_all(want_path);
	cr_expect_str_eq(r.out, want, "%s %s differs from %s", file, format, want_path);
	free(want);
	run_result_free(&r);
}

Test(report, golden_real_recording_with_a_crash)
{
	golden("rec-crash", "top", NULL);
	golden("rec-crash", "tree", NULL);
	golden("rec-crash", "folded", NULL);
	golden("rec-crash", "threads", NULL);
	golden("rec-crash", "info", NULL);
}

Test(report, golden_synthetic)
{
	golden("tcf-v1.0-small", "top", NULL);
	golden("tcf-v1.0-small", "tree", "--min-percent=5");
	golden("tcf-v1.0-small", "folded", NULL);
	golden("tcf-v1.0-small", "threads", NULL);
	golden("tcf-v1.0-small", "info", NULL);
}

/* Emergency dumps (tracerd-gen --death oom|segv): the death leads, the
 * rest is the dead process's. */
Test(report, golden_emergency_dumps)
{
	golden("emergency-oom", "top", NULL);
	golden("emergency-oom", "tree", NULL);
	golden("emergency-oom", "threads", NULL);
	golden("emergency-oom", "info", NULL);
	golden("emergency-oom", "folded", NULL);
	golden("emergency-segv", "top", NULL);
	golden("emergency-segv", "info", NULL);
}

/* The 1.1 golden file's waits, through the report path: 24 WAITS records
 * are 23 episodes, the one that went on from the first chunk into the
 * second joined (747 ms + 374 ms), and 2 of that site's (it goes on at
 * the end too).  Only numbers the file fixes; the layout is the waits
 * format's own business. */
Test(report, golden_waits_join_the_parts_of_an_episode)
{
	const char *argv[] = { "tracerd", "report", GOLD("tcf-v1.1-waits.tcf"), "-f", "waits",
		"--json", NULL };
	struct run_result r;
	const char *site;

	run_tracerd(&r, argv);
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_expect(strstr(r.out, "\"wait_ns\":6282828220,\"episodes\":23,"), "%.300s", r.out);
	site = strstr(r.out, "\"object\":\"0x555500601200\"");
	cr_assert_not_null(site, "%.300s", r.out);
	cr_expect(strstr(site, "\"wait_ns\":1868686850,\"count\":2,") &&
			  strstr(site, "\"max_ns\":1121212110"),
		"%.400s", site);
	run_result_free(&r);
}

/* Sum of the col-th space-separated field of each line after skip lines;
 * col < 0: the last field. */
static unsigned long long sum_column(const char *text, int skip_lines, int col)
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

Test(report, invariants_and_filters)
{
	const char *top[] = { "tracerd", "report", GOLD("tcf-v1.0-small.tcf"), "--limit", "0", NULL };
	const char *fold[] = { "tracerd", "report", GOLD("tcf-v1.0-small.tcf"), "-f", "folded",
		"--per-thread", NULL };
	const char *thr[] = { "tracerd", "report", GOLD("tcf-v1.0-small.tcf"), "--thread",
		"worker-1", NULL };
	const char *tid[] = { "tracerd", "report", GOLD("tcf-v1.0-small.tcf"), "--tid", "10002",
		"--state", "sleeping", NULL };
	const char *rel[] = { "tracerd", "report", GOLD("tcf-v1.0-small.tcf"), "--from", "-2s",
		NULL };
	struct run_result r;

	run_tracerd(&r, top);
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_expect_eq(sum_column(r.out, 3, 2), 1782, "self sums to every sample");
	run_result_free(&r);
	run_tracerd(&r, fold);
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_expect_eq(sum_column(r.out, 0, -1), 1782, "folded counts sum to every sample");
	cr_expect(!strncmp(r.out, "worker-", 7), "thread name first: %.40s", r.out);
	run_result_free(&r);
	run_tracerd(&r, thr);
	cr_expect(!strncmp(body(r.out), "594 samples", 11), "one thread of three: %.40s", r.out);
	run_result_free(&r);
	run_tracerd(&r, tid);
	cr_expect_eq(r.status, 0);
	{
		unsigned long long n = strtoull(body(r.out), NULL, 10);

		cr_expect(n > 100 && n < 594, "sleeping samples of one thread: %llu", n);
	}
	run_result_free(&r);
	run_tracerd(&r, rel);
	{
		unsigned long long n = strtoull(body(r.out), NULL, 10);

		/* the second chunk: 3 s of 3 threads at 99 Hz; its last 2 s */
		cr_expect(n > 400 && n < 900, "last 2 s: %llu samples", n);
	}
	run_result_free(&r);
}

/* A finished chunk that holds a thread and no sample at all. */
static void write_chunk_without_samples(const char *path)
{
	struct chunk_writer_opts o = { .chunk_seq = 0, .target_pid = 4242 };
	struct chunk_writer *w;
	uint32_t th;

	o.fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0640);
	cr_assert_geq(o.fd, 0);
	cr_assert_eq(chunk_writer_open(&o, &w), 0);
	th = chunk_writer_thread(w, 4242, 4242, "idle");
	cr_assert_gt(th, 0);
	cr_assert_eq(chunk_writer_thread_event(w, td_now_ns(), th, TCF_THREAD_START, 0), 0);
	cr_assert_eq(chunk_writer_finish(w, TCF_END_STOP, 0), 0);
	chunk_writer_free(w);
	close(o.fd);
}

/* Every format on a profile with no samples: a chunk that holds none, and
 * filters that keep none.  The empty arrays this sorts and copies must
 * never reach qsort() or memcpy() as NULL (the UBSan build aborts). */
Test(report, no_samples_in_every_format)
{
	static const char *const formats[] = { "top", "tree", "folded", "threads", "info",
		"pprof", "speedscope", "html" };
	char empty[] = "/tmp/tracerd-nosamples-XXXXXX", in[64], out[96];
	const char *argv[] = { "tracerd", "report", in, "-f", NULL, "-o", out, NULL, NULL, NULL };
	struct run_result r;
	int fd = mkstemp(empty);

	cr_assert_geq(fd, 0);
	close(fd);
	snprintf(out, sizeof(out), "%s.out", empty);
	for (int k = 0; k < 2; k++) {
		if (k == 0) {
			write_chunk_without_samples(empty);
			snprintf(in, sizeof(in), "%s", empty);
		} else {
			/* samples in the file, none kept */
			snprintf(in, sizeof(in), "%s", GOLD("tcf-v1.0-small.tcf"));
			argv[7] = "--tid";
			argv[8] = "1";
		}
		for (size_t i = 0; i < sizeof(formats) / sizeof(formats[0]); i++) {
			char *text;

			argv[4] = formats[i];
			run_tracerd(&r, argv);
			cr_expect_eq(r.status, 0, "%s %s: exit %d: %s", in, formats[i], r.status,
				r.err);
			run_result_free(&r);
			text = read_all(out);
			if (!strcmp(formats[i], "top"))
				cr_expect(!strncmp(body(text), "0 samples", 9), "%s", text);
			else if (strcmp(formats[i], "folded"))
				cr_expect_gt(strlen(text), 0, "%s: some output", formats[i]);
			free(text);
		}
	}
	unlink(empty);
	unlink(out);
}

/* Ids read from a file key the report's caches; they never size them.
 * A 200-byte chunk whose events name thread and stack ids near 2^27 once
 * made report allocate and zero a gigabyte per cache (2^32 ids: 16 GiB,
 * 72 s).  The bound is tracerd-chunk(5)'s: memory in proportion to the
 * input.  Measured as the peak RSS of a child that loads and renders it. */
Test(report, ids_from_the_file_size_nothing, .timeout = 60)
{
	enum { BIG = 0x07fffff0 }; /* old caches: 2^28 slots of 4 bytes each */
	uint8_t rec[64], *p = rec, *file, *hdr;
	struct chunk_writer_opts o = { .target_pid = 4242 };
	struct chunk_writer *w;
	struct rusage ru;
	size_t len;
	int status;
	pid_t pid;

	o.fd = memfd_create("crafted", MFD_CLOEXEC);
	cr_assert_geq(o.fd, 0);
	cr_assert_eq(chunk_writer_open(&o, &w), 0);
	chunk_writer_free(w); /* the chunk header alone */
	len = (size_t)lseek(o.fd, 0, SEEK_END);
	hdr = malloc(len);
	cr_assert_eq(pread(o.fd, hdr, len, 0), (ssize_t)len);
	/* THREAD_EVENTS: one exit of thread BIG; PROCESS_EVENT: a crash of
	 * thread BIG with stack BIG.  Record header: type << 1, length. */
	*p++ = TCF_REC_THREAD_EVENTS << 1, *p++ = 8, *p++ = 1, *p++ = 0;
	p += td_varint_encode(p, BIG), *p++ = TCF_THREAD_EXIT, *p++ = 0;
	*p++ = TCF_REC_PROCESS_EVENT << 1, *p++ = 14, *p++ = 0, *p++ = 1, *p++ = TCF_PROC_CRASH,
	*p++ = 0, *p++ = 22, *p++ = 0;
	p += td_varint_encode(p, BIG);
	p += td_varint_encode(p, BIG);
	file = malloc(len + TCF_BLOCK_HEADER_LEN + (size_t)(p - rec));
	memcpy(file, hdr, len);
	tcf_encode_block_header(file + len, tcf_chunk_sync(hdr), 0, 0, 0, rec, (size_t)(p - rec));
	memcpy(file + len + TCF_BLOCK_HEADER_LEN, rec, (size_t)(p - rec));
	len += TCF_BLOCK_HEADER_LEN + (size_t)(p - rec);
	cr_assert_eq(pwrite(o.fd, file, len, 0), (ssize_t)len);

	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		struct rp_filter f = { .state = -1, .time_order = true };
		struct rp_load_report rep;
		struct rp_profile *prof;
		char path[64];
		const char *paths[] = { path };
		FILE *null = fopen("/dev/null", "w");

		snprintf(path, sizeof(path), "/proc/self/fd/%d", o.fd);
		if (!null || rp_load(paths, 1, &f, &prof, &rep, NULL) < 0)
			_exit(2);
		/* the crash is kept, by a thread and a stack nobody defined */
		if (rp_info(null, prof, &rep) < 0 || rp_html(null, prof) < 0 ||
			rp_pprof(null, prof) < 0 || rp_speedscope(null, prof) < 0)
			_exit(3);
		rp_free(prof);
		_exit(0);
	}
	cr_assert_eq(wait4(pid, &status, 0, &ru), pid);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "status %#x", status);
	cr_expect_lt(ru.ru_maxrss, 64 * 1024, "a %zu-byte file took %ld KiB", len, ru.ru_maxrss);
	free(hdr);
	free(file);
	close(o.fd);
}

/* Reports hold symbol names and command lines: a new -o file is 0640
 * like the chunks (less the umask), a replaced one keeps its mode; the
 * same for snapshots. */
Test(report, output_files_are_0640)
{
	char dir[] = "/tmp/tracerd-mode-XXXXXX", out[96], kept[96], snap[96], cmd[512];
	const char *fresh[] = { "tracerd", "report", GOLD("tcf-v1.0-small.tcf"), "-o", out, NULL };
	const char *again[] = { "tracerd", "report", GOLD("tcf-v1.0-small.tcf"), "-o", kept, NULL };
	const char *snapshot[] = { "tracerd", "snapshot", dir, "-o", snap, NULL };
	mode_t old = umask(022);
	struct run_result r;
	struct stat st;

	cr_assert_not_null(mkdtemp(dir));
	snprintf(out, sizeof(out), "%s/new.txt", dir);
	run_tracerd(&r, fresh);
	cr_expect_eq(r.status, 0, "%s", r.err);
	run_result_free(&r);
	cr_assert_eq(stat(out, &st), 0);
	cr_expect_eq(st.st_mode & 07777, 0640, "a new report: %o", st.st_mode & 07777);

	snprintf(kept, sizeof(kept), "%s/kept.txt", dir);
	close(open(kept, O_WRONLY | O_CREAT, 0600));
	cr_assert_eq(chmod(kept, 0604), 0);
	run_tracerd(&r, again);
	cr_expect_eq(r.status, 0, "%s", r.err);
	run_result_free(&r);
	cr_assert_eq(stat(kept, &st), 0);
	cr_expect_eq(st.st_mode & 07777, 0604, "a replaced report keeps its mode: %o",
		st.st_mode & 07777);

	snprintf(cmd, sizeof(cmd), "cp %s %s/c0000000000-20260101T000000Z.tcf",
		GOLD("tcf-v1.0-small.tcf"), dir);
	cr_assert_eq(system(cmd), 0);
	snprintf(snap, sizeof(snap), "%s/snap.tcf", dir);
	run_tracerd(&r, snapshot);
	cr_expect_eq(r.status, 0, "%s", r.err);
	run_result_free(&r);
	cr_assert_eq(stat(snap, &st), 0);
	cr_expect_eq(st.st_mode & 07777, 0640, "a snapshot: %o", st.st_mode & 07777);
	umask(old);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	cr_expect_eq(system(cmd), 0);
}

Test(report, errors)
{
	const char *missing[] = { "tracerd", "report", "/nonexistent/repo", NULL };
	const char *fmt[] = { "tracerd", "report", GOLD("rec-crash.tcf"), "-f", "pdf", NULL };
	const char *junk[] = { "tracerd", "report", GOLD("README"), NULL };
	const char *when[] = { "tracerd", "report", GOLD("rec-crash.tcf"), "--from", "noon", NULL };
	char dir[] = "/tmp/tracerd-empty-XXXXXX";
	const char *empty[] = { "tracerd", "report", dir, NULL };
	struct run_result r;

	run_tracerd(&r, missing);
	cr_expect_eq(r.status, 1);
	cr_expect(strstr(r.err, "No such file or directory; give a chunk file"), "%s", r.err);
	run_result_free(&r);
	run_tracerd(&r, fmt);
	cr_expect_eq(r.status, 1);
	cr_expect(strstr(r.err, "'pdf' is not one of"), "%s", r.err);
	run_result_free(&r);
	run_tracerd(&r, junk);
	cr_expect_eq(r.status, 2);
	cr_expect(strstr(r.err, "is not a tracerd chunk file"), "%s", r.err);
	run_result_free(&r);
	run_tracerd(&r, when);
	cr_expect_eq(r.status, 1);
	cr_expect(strstr(r.err, "'noon' is not a time"), "%s", r.err);
	run_result_free(&r);
	cr_assert_not_null(mkdtemp(dir));
	run_tracerd(&r, empty);
	cr_expect_eq(r.status, 1);
	cr_expect(strstr(r.err, "is an empty repository"), "%s", r.err);
	run_result_free(&r);
	rmdir(dir);
}

/* A report that cannot be written says so in one line, exits 3, and loses
 * nothing: the file it would have replaced keeps its old contents. */
Test(report, output_errors, .timeout = 30)
{
	static const char *const formats[] = { "top", "folded", "pprof", "speedscope", "html" };
	char dir[] = "/tmp/tracerd-full-XXXXXX", out[128], cmd[1024], *text;
	const char *full[] = { "tracerd", "report", GOLD("tcf-v1.0-small.tcf"), "-f", NULL, "-o",
		"/dev/full", NULL };
	const char *tofile[] = { "tracerd", "report", GOLD("tcf-v1.0-small.tcf"), "-f", "html",
		"-o", out, NULL };
	struct run_result r;
	int status;
	DIR *d;
	struct dirent *e;
	int files = 0;

	for (size_t i = 0; i < sizeof(formats) / sizeof(formats[0]); i++) {
		full[4] = formats[i];
		run_tracerd(&r, full);
		cr_expect_eq(r.status, 3, "%s: exit %d", formats[i], r.status);
		cr_expect_str_eq(r.err,
			"tracerd: report: cannot write /dev/full: No space left on device; free "
			"space or choose another -o\n",
			"%s", formats[i]);
		run_result_free(&r);
	}
	/* standard output on a full device: not a silent success */
	snprintf(cmd, sizeof(cmd), "%s/tracerd report %s > /dev/full 2>&1; echo $?", TD_BUILD_DIR,
		GOLD("rec-crash.tcf"));
	text = shell_output(cmd, NULL);
	cr_expect_str_eq(text, "3\n");
	free(text);

	/* a full file system: the old file stays, no temporary file is left */
	if (!is_root())
		cr_skip_test("mounting a small tmpfs needs root");
	cr_assert_not_null(mkdtemp(dir));
	snprintf(cmd, sizeof(cmd), "mount -t tmpfs -o size=8k tracerd-test %s 2>&1", dir);
	text = shell_output(cmd, &status);
	free(text);
	if (status != 0) {
		rmdir(dir);
		cr_skip_test("cannot mount a tmpfs here: the full-disk case is not tested");
	}
	snprintf(out, sizeof(out), "%s/flame.html", dir);
	{
		FILE *f = fopen(out, "w");

		cr_assert_not_null(f);
		fputs("the previous report\n", f);
		fclose(f);
	}
	run_tracerd(&r, tofile); /* ~12 KB of page into 4 KB of space */
	cr_expect_eq(r.status, 3);
	cr_expect(strstr(r.err, "No space left on device; free space or choose another -o"), "%s",
		r.err);
	run_result_free(&r);
	text = read_all(out);
	cr_expect_str_eq(text, "the previous report\n");
	free(text);
	d = opendir(dir);
	cr_assert_not_null(d);
	while ((e = readdir(d)))
		if (e->d_name[0] != '.')
			files++;
	closedir(d);
	cr_expect_eq(files, 1, "only the old file is left");
	snprintf(cmd, sizeof(cmd), "umount %s", dir);
	cr_expect_eq(system(cmd), 0);
	rmdir(dir);
}

/* name -> count from "go tool pprof -top" (flat) or tracerd's top (self) */
struct nc {
	char name[512];
	unsigned long long n;
};

static int parse_counts(const char *text, bool pprof, struct nc *out, int max)
{
	int k = 0;

	for (const char *p = text; *p && k < max;) {
		const char *end = strchrnul(p, '\n');
		char line[2048];
		unsigned long long n;
		int off = 0;

		snprintf(line, sizeof(line), "%.*s", (int)(end - p), p);
		p = *end ? end + 1 : end;
		if (pprof) {
			/* "       984   100%   100%        984   100%  name" */
			if (sscanf(line, " %llu %*s %*s %*s %*s %n", &n, &off) < 1 || !off)
				continue;
			snprintf(out[k].name, sizeof(out[k].name), "%s", line + off);
			if (strstr(out[k].name, " (inline)"))
				*strstr(out[k].name, " (inline)") = '\0';
		} else {
			/* "100.00% 100.00%       984       984  name (module)" */
			char *paren;

			if (sscanf(line, " %*s %*s %llu %*s %n", &n, &off) < 1 || !off ||
				!strchr(line, '%'))
				continue;
			snprintf(out[k].name, sizeof(out[k].name), "%s", line + off);
			paren = strrchr(out[k].name, '(');
			if (paren && paren > out[k].name)
				paren[-1] = '\0';
		}
		out[k++].n = n;
	}
	return k;
}

/* pprof lists C++ names shortened (no template arguments, no parameters):
 * compare under that same normal form. */
static void normalize(char *s)
{
	char out[512];
	size_t k = 0;
	int depth = 0;

	for (const char *p = s; *p && k + 1 < sizeof(out); p++) {
		if (*p == '(' && depth == 0 && p != s)
			break;
		if (*p == '<')
			depth++;
		else if (*p == '>' && depth)
			depth--;
		else if (!depth)
			out[k++] = *p;
	}
	out[k] = '\0';
	strcpy(s, out);
}

static unsigned long long sum_named(struct nc *v, int n, const char *name)
{
	unsigned long long s = 0;

	for (int i = 0; i < n; i++)
		if (!strcmp(v[i].name, name))
			s += v[i].n;
	return s;
}

static void pprof_agrees_with_top(const char *file)
{
	char in[512], pb[] = "/tmp/tracerd-pprof-XXXXXX", cmd[1024];
	const char *top_argv[] = { "tracerd", "report", in, "--limit", "0", NULL };
	const char *pb_argv[] = { "tracerd", "report", in, "-f", "pprof", "-o", pb, NULL };
	struct run_result r;
	static struct nc ours[4096], theirs[4096];
	int no, nt, fd;
	char *text;

	need_command("go", "golang-go");
	snprintf(in, sizeof(in), GOLD("%s.tcf"), file);
	fd = mkstemp(pb);
	close(fd);
	run_tracerd(&r, pb_argv);
	cr_assert_eq(r.status, 0, "%s", r.err);
	run_result_free(&r);
	run_tracerd(&r, top_argv);
	cr_assert_eq(r.status, 0, "%s", r.err);
	no = parse_counts(r.out, false, ours, 4096);
	run_result_free(&r);
	snprintf(cmd, sizeof(cmd), "HOME=/tmp GOFLAGS=-mod=mod go tool pprof -top -nodecount=100000 %s 2>&1",
		pb);
	text = shell_output(cmd, NULL);
	cr_assert(strstr(text, "Type: samples"), "go tool pprof read it: %s", text);
	nt = parse_counts(text, true, theirs, 4096);
	cr_assert_gt(no, 0);
	for (int i = 0; i < no; i++)
		normalize(ours[i].name);
	for (int j = 0; j < nt; j++)
		normalize(theirs[j].name);
	/* every function with self samples: the same count in both (pprof
	 * aggregates by name, we by name and module: sums compare) */
	for (int i = 0; i < no; i++) {
		unsigned long long a, b;

		if (!ours[i].n)
			continue;
		a = sum_named(ours, no, ours[i].name);
		b = sum_named(theirs, nt, ours[i].name);
		cr_expect_eq(a, b, "%s: tracerd self %llu, pprof flat %llu", ours[i].name, a, b);
	}
	{
		unsigned long long a = 0, b = 0;

		for (int i = 0; i < no; i++)
			a += ours[i].n;
		for (int j = 0; j < nt; j++)
			b += theirs[j].n;
		cr_expect_eq(a, b, "the same number of samples");
	}
	free(text);
	unlink(pb);
}

Test(report, pprof_read_by_go_tool_pprof_real, .timeout = 120)
{
	char cmd[512], *raw;

	pprof_agrees_with_top("rec-crash");
	/* mappings with their build-ids, the main binary first, each spanning
	 * the address space from 0 (Locations hold ELF file addresses) */
	snprintf(cmd, sizeof(cmd),
		"%s/tracerd report %s -f pprof -o /tmp/tracerd-pprof-raw.pb.gz && HOME=/tmp go "
		"tool pprof -raw /tmp/tracerd-pprof-raw.pb.gz 2>&1",
		TD_BUILD_DIR, GOLD("rec-crash.tcf"));
	raw = shell_output(cmd, NULL);
	unlink("/tmp/tracerd-pprof-raw.pb.gz");
	cr_expect(strstr(raw, "Mappings\n1: 0x0/0xffffffffffffffff/0x0 /work/main/build/fixtures/fx_crash "
			      "fbb15b1f606950028d224632776088e913a8ac96"),
		"the fixture's mapping, first, with its build-id:\n%s", raw);
	cr_expect(strstr(raw, "libc.so.6 93ac61ec5a8eb1396f9fbd350e3169a558528a40"), "%s", raw);
	free(raw);
}

Test(report, pprof_read_by_go_tool_pprof_synthetic, .timeout = 120)
{
	pprof_agrees_with_top("tcf-v1.0-small");
}

/* A wall chunk (TCF 1.1 when minor, else 1.0) of one waiter w1 (tid 101)
 * and a reader (104), each with a wall sample per 10 ms tick; with waits,
 * w1's three episodes on mutex 0x1000 (held by h1, 102, then h2, 103) and
 * the reader's on fd 0. */
static void write_wall_chunk(const char *path, uint16_t minor, bool waits)
{
	struct chunk_writer_opts o = { .target_pid = 100, .minor = minor };
	struct chunk_writer *w;
	uint32_t f_main, f_lock, f_read, l_main, l_lock, l_read, s_lock, s_read, w1, h1, h2, rd;
	const uint64_t ms = 1000000;

	o.fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0640);
	cr_assert_geq(o.fd, 0);
	cr_assert_eq(chunk_writer_open(&o, &w), 0);
	f_main = chunk_writer_function(w, "main", NULL, "m.c", 1);
	f_lock = chunk_writer_function(w, "lock_it", NULL, "m.c", 5);
	f_read = chunk_writer_function(w, "read_it", NULL, "m.c", 9);
	l_main = chunk_writer_location(w, 0, 0x10, (struct chunk_line[]){ { f_main, 2, 0 } }, 1);
	l_lock = chunk_writer_location(w, 0, 0x20, (struct chunk_line[]){ { f_lock, 6, 0 } }, 1);
	l_read = chunk_writer_location(w, 0, 0x30, (struct chunk_line[]){ { f_read, 10, 0 } }, 1);
	s_lock = chunk_writer_stack(w, (uint32_t[]){ l_lock, l_main }, 2);
	s_read = chunk_writer_stack(w, (uint32_t[]){ l_read, l_main }, 2);
	w1 = chunk_writer_thread(w, 101, 100, "w1");
	h1 = chunk_writer_thread(w, 102, 100, "h1");
	h2 = chunk_writer_thread(w, 103, 100, "h2");
	rd = chunk_writer_thread(w, 104, 100, "reader");
	cr_assert_eq(chunk_writer_meta(w, "sampling.mode", "wall"), 0);
	cr_assert_eq(chunk_writer_meta(w, "sampling.hz", "100"), 0);
	for (uint64_t t = 10; t <= 60; t += 10) {
		cr_assert_eq(chunk_writer_sample(w, t * ms, w1, TCF_STATE_SLEEPING, s_lock, NULL, 0), 0);
		cr_assert_eq(chunk_writer_sample(w, t * ms, rd, TCF_STATE_SLEEPING, s_read, NULL, 0), 0);
	}
	if (waits) {
		/* two episodes held longest by h1 make one sample, one by h2
		 * another */
		struct chunk_wait e = { .time_ns = 10 * ms, .wait_ns = 30 * ms, .thread_id = w1,
			.stack_id = s_lock, .kind = TCF_WAIT_MUTEX, .object = 0x1000, .nowners = 2 };

		e.owners[0] = (struct chunk_wait_owner){ h2, 0, 10 * ms };
		e.owners[1] = (struct chunk_wait_owner){ h1, 0, 20 * ms };
		cr_assert_eq(chunk_writer_wait(w, &e), 0);
		e = (struct chunk_wait){ .time_ns = 40 * ms, .wait_ns = 20 * ms, .thread_id = w1,
			.stack_id = s_lock, .kind = TCF_WAIT_MUTEX, .object = 0x1000, .nowners = 1 };
		e.owners[0] = (struct chunk_wait_owner){ h1, 0, 20 * ms };
		cr_assert_eq(chunk_writer_wait(w, &e), 0);
		e.time_ns = 60 * ms;
		e.wait_ns = 10 * ms;
		e.owners[0] = (struct chunk_wait_owner){ h2, 0, 10 * ms };
		cr_assert_eq(chunk_writer_wait(w, &e), 0);
		e = (struct chunk_wait){ .time_ns = 10 * ms, .wait_ns = 60 * ms, .thread_id = rd,
			.stack_id = s_read, .kind = TCF_WAIT_FD, .object = 0,
			.what = chunk_writer_string(w, "pipe:[9]") };
		cr_assert_eq(chunk_writer_wait(w, &e), 0);
	}
	cr_assert_eq(chunk_writer_finish(w, TCF_END_STOP, 0), 0);
	chunk_writer_free(w);
	close(o.fd);
}

/* go tool pprof -raw of tracerd's pprof of a chunk, runs of spaces made
 * one. */
static char *pprof_raw(const char *tcf, const char *dir)
{
	char pb[512], cmd[2048], *raw;
	const char *argv[] = { "tracerd", "report", tcf, "-f", "pprof", "-o", pb, NULL };
	struct run_result r;
	size_t k = 0;

	snprintf(pb, sizeof(pb), "%s/out.pb.gz", dir);
	run_tracerd(&r, argv);
	cr_assert_eq(r.status, 0, "%s", r.err);
	run_result_free(&r);
	snprintf(cmd, sizeof(cmd),
		"HOME=%s GOCACHE=%s/gocache GOPATH=%s/go GOPROXY=off GOFLAGS=-mod=mod "
		"PPROF_BINARY_PATH=/nonexistent go tool pprof -symbolize=none -raw %s 2>&1",
		dir, dir, dir, pb);
	raw = shell_output(cmd, NULL);
	for (size_t i = 0; raw[i]; i++)
		if (raw[i] != ' ' || (k && raw[k - 1] != ' '))
			raw[k++] = raw[i];
	raw[k] = '\0';
	return raw;
}

/* Wait episodes in pprof, exactly: every sample has four values, a wall
 * sample's last two 0 and an episode's first two; episodes of one waiter,
 * stack, object and top owner make one sample counting them; labels name
 * the kind, the object (an fd too, 0 included), what and the owner.  A
 * wall chunk of 1.1 without waits still has the types (nothing waited); a
 * 1.0 one cannot hold waits and keeps the two types of before. */
Test(report, pprof_wait_samples_synthetic, .timeout = 120)
{
	char dir[] = "/tmp/tracerd-pwaits-XXXXXX", tcf[512], cmd[600], *raw;

	need_command("go", "golang-go");
	cr_assert_not_null(mkdtemp(dir));
	snprintf(tcf, sizeof(tcf), "%s/wall.tcf", dir);

	write_wall_chunk(tcf, 1, true);
	raw = pprof_raw(tcf, dir);
	cr_expect(strstr(raw, "\nsamples/count[dflt] wall/nanoseconds contentions/count "
			      "delay/nanoseconds\n"),
		"%s", raw);
	cr_expect(strstr(raw, "\n 6 60000000 0 0: 1 2 \n state:[sleeping] thread:[w1]\n "
			      "tid:[101]\n"),
		"w1's wall samples:\n%s", raw);
	cr_expect(strstr(raw, "\n 0 0 2 50000000: 1 2 \n object:[0x1000] owner:[h1] "
			      "thread:[w1] wait:[mutex]\n owner_tid:[102] tid:[101]\n"),
		"w1's two episodes held longest by h1:\n%s", raw);
	cr_expect(strstr(raw, "\n 0 0 1 10000000: 1 2 \n object:[0x1000] owner:[h2] "
			      "thread:[w1] wait:[mutex]\n owner_tid:[103] tid:[101]\n"),
		"w1's episode held by h2:\n%s", raw);
	cr_expect(strstr(raw, "\n 0 0 1 60000000: 3 2 \n object:[0] thread:[reader] wait:[fd] "
			      "what:[pipe:[9]]\n tid:[104]\n"),
		"the reader's episode on fd 0:\n%s", raw);
	free(raw);

	write_wall_chunk(tcf, 1, false);
	raw = pprof_raw(tcf, dir);
	cr_expect(strstr(raw, "\nsamples/count[dflt] wall/nanoseconds contentions/count "
			      "delay/nanoseconds\n"),
		"%s", raw);
	cr_expect(strstr(raw, "\n 6 60000000 0 0: "), "%s", raw);
	cr_expect(!strstr(raw, "wait:["), "%s", raw);
	free(raw);

	write_wall_chunk(tcf, 0, false);
	raw = pprof_raw(tcf, dir);
	cr_expect(strstr(raw, "\nsamples/count[dflt] wall/nanoseconds\n 6 60000000: "), "%s", raw);
	free(raw);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	cr_expect_eq(system(cmd), 0);
}

static void speedscope_valid(const char *file)
{
	char in[512], out[] = "/tmp/tracerd-speedscope-XXXXXX", cmd[2048];
	const char *argv[] = { "tracerd", "report", in, "-f", "speedscope", "-o", out, NULL };
	char modules[512], *res;
	struct run_result r;
	int fd, status;

	need_command("node", "nodejs");
	need_command("npm", "npm");
	snprintf(modules, sizeof(modules), "%s/node/node_modules", TD_BUILD_DIR);
	snprintf(cmd, sizeof(cmd), "%s/scripts/install-node-tools %s/node >/dev/null 2>&1",
		TD_SOURCE_DIR, TD_BUILD_DIR);
	if (system(cmd) != 0)
		cr_skip_test("the npm registry is not available: cannot fetch speedscope's "
			     "schema and ajv to validate against it");
	snprintf(in, sizeof(in), GOLD("%s.tcf"), file);
	fd = mkstemp(out);
	close(fd);
	run_tracerd(&r, argv);
	cr_assert_eq(r.status, 0, "%s", r.err);
	run_result_free(&r);
	snprintf(cmd, sizeof(cmd), "node %s/test/tools/validate-speedscope.js %s %s 2>&1",
		TD_SOURCE_DIR, modules, out);
	res = shell_output(cmd, &status);
	cr_expect_eq(status, 0, "%s", res);
	cr_expect(!strncmp(res, "valid", 5), "%s", res);
	free(res);
	unlink(out);
}

Test(report, speedscope_valid_per_schema, .timeout = 180)
{
	speedscope_valid("rec-crash");
	speedscope_valid("tcf-v1.0-small");
}

/* A value as speedscope's sandwich table shows it: "1,553" (a count) or
 * "323.23ms" (nanoseconds), in samples of period_ns. */
static double sandwich_samples(const char *v, double period_ns)
{
	char digits[64];
	size_t k = 0;
	double x;
	const char *p = v;

	for (; *p && (isdigit((unsigned char)*p) || *p == ',' || *p == '.') && k + 1 < 64; p++)
		if (*p != ',')
			digits[k++] = *p;
	digits[k] = '\0';
	x = strtod(digits, NULL);
	if (!*p)
		return x; /* a count */
	if (!strcmp(p, "ns"))
		return x / period_ns;
	if (!strcmp(p, "µs") || !strcmp(p, "us"))
		return x * 1e3 / period_ns;
	if (!strcmp(p, "ms"))
		return x * 1e6 / period_ns;
	if (!strcmp(p, "s"))
		return x * 1e9 / period_ns;
	return -1;
}

/* Import our output into the real speedscope (headless chromium) and
 * compare its sandwich table, function by function, with the top table:
 * the same functions with the same self and total sample counts. */
static void speedscope_imports(const char *file, const char *format, double period_ns)
{
	char in[512], out[600], cmd[2048], modules[512], *res;
	const char *argv[] = { "tracerd", "report", in, "-f", format, "-o", out, NULL };
	const char *top_argv[] = { "tracerd", "report", in, "--limit", "0", NULL };
	struct run_result r, top;
	int rows = 0, functions = 0, status;

	need_command("node", "nodejs");
	need_command("npm", "npm");
	need_command("chromium", "chromium");
	snprintf(modules, sizeof(modules), "%s/node/node_modules", TD_BUILD_DIR);
	snprintf(cmd, sizeof(cmd), "%s/scripts/install-node-tools %s/node >/dev/null 2>&1",
		TD_SOURCE_DIR, TD_BUILD_DIR);
	if (system(cmd) != 0)
		cr_skip_test("the npm registry is not available: cannot fetch speedscope to "
			     "load our output into");
	snprintf(in, sizeof(in), GOLD("%s.tcf"), file);
	snprintf(out, sizeof(out), "%s/test-%s.%s", TD_BUILD_DIR, file,
		!strcmp(format, "folded") ? "folded" : "speedscope.json");
	run_tracerd(&r, argv);
	cr_assert_eq(r.status, 0, "%s", r.err);
	run_result_free(&r);
	run_tracerd(&top, top_argv);
	cr_assert_eq(top.status, 0, "%s", top.err);
	snprintf(cmd, sizeof(cmd), "node %s/test/tools/speedscope-sandwich.js %s %s %s 2>&1",
		TD_SOURCE_DIR, modules, out, TD_BUILD_DIR);
	res = shell_output(cmd, &status);
	cr_assert_eq(status, 0, "speedscope imported %s:\n%s", out, res);
	/* every row of speedscope's table is a function of our top table with
	 * the same self and total */
	for (char *line = res, *next; *line; line = next) {
		char *t1, *t2, want[2100];
		const char *hit;
		unsigned long long self = 0, total = 0;

		next = strchrnul(line, '\n');
		if (*next)
			*next++ = '\0';
		t1 = strchr(line, '\t');
		t2 = t1 ? strchr(t1 + 1, '\t') : NULL;
		cr_assert(t2, "a sandwich row: %s", line);
		*t1 = *t2 = '\0';
		rows++;
		/* "  self%  total%  self  total  NAME (module)" */
		snprintf(want, sizeof(want), "  %s (", t2 + 1);
		hit = strstr(top.out, want);
		cr_assert(hit, "speedscope's function '%s' is in the top table:\n%s", t2 + 1,
			top.out);
		{
			const char *bol = hit;

			while (bol > top.out && bol[-1] != '\n')
				bol--;
			cr_assert_eq(sscanf(bol, " %*s %*s %llu %llu", &self, &total), 2, "%s", bol);
		}
		cr_expect_eq(llround(sandwich_samples(line, period_ns)), (long long)total,
			"%s: speedscope total %s, ours %llu", t2 + 1, line, total);
		cr_expect_eq(llround(sandwich_samples(t1 + 1, period_ns)), (long long)self,
			"%s: speedscope self %s, ours %llu", t2 + 1, t1 + 1, self);
	}
	for (const char *p = top.out; *p; p = *strchrnul(p, '\n') ? strchrnul(p, '\n') + 1 : "") {
		double pct;
		int end = 0;

		/* "  0.00% 100.00% ...": not the sample count, not the header */
		if (sscanf(p, " %lf%%%n", &pct, &end) == 1 && end)
			functions++;
	}
	cr_expect_eq(rows, functions, "speedscope shows %d functions, the top table %d:\n%s",
		rows, functions, top.out);
	run_result_free(&top);
	free(res);
}

/* speedscope's time-order view needs each thread's samples in time order:
 * samples written out of order, two threads interleaved; runs of one stack
 * become one entry weighing the run. */
Test(report, speedscope_samples_in_time_order)
{
	char path[] = "/tmp/tracerd-order-XXXXXX.tcf";
	const char *argv[] = { "tracerd", "report", path, "-f", "speedscope", NULL };
	int fd = mkstemps(path, 4);
	struct chunk_writer_opts o = { .fd = fd, .target_pid = 100 };
	struct chunk_writer *w;
	uint32_t f_main, f_a, f_b, l_main, l_a, l_b, s_a, s_b, t1, t2;
	/* thread 1 in time: A A B A B B (written shuffled); thread 2: B */
	static const struct {
		uint64_t ms;
		int thread, stack;
	} rows[] = { { 30, 1, 'B' }, { 10, 1, 'A' }, { 60, 1, 'B' }, { 20, 1, 'A' },
		{ 15, 2, 'B' }, { 40, 1, 'A' }, { 50, 1, 'B' } };
	struct run_result r;

	cr_assert_geq(fd, 0);
	cr_assert_eq(chunk_writer_open(&o, &w), 0);
	f_main = chunk_writer_function(w, "main", NULL, "m.c", 1);
	f_a = chunk_writer_function(w, "alpha", NULL, "m.c", 5);
	f_b = chunk_writer_function(w, "beta", NULL, "m.c", 9);
	l_main = chunk_writer_location(w, 0, 0x10, (struct chunk_line[]){ { f_main, 2, 0 } }, 1);
	l_a = chunk_writer_location(w, 0, 0x20, (struct chunk_line[]){ { f_a, 6, 0 } }, 1);
	l_b = chunk_writer_location(w, 0, 0x30, (struct chunk_line[]){ { f_b, 10, 0 } }, 1);
	s_a = chunk_writer_stack(w, (uint32_t[]){ l_a, l_main }, 2);
	s_b = chunk_writer_stack(w, (uint32_t[]){ l_b, l_main }, 2);
	t1 = chunk_writer_thread(w, 101, 100, "one");
	t2 = chunk_writer_thread(w, 102, 100, "two");
	cr_assert_eq(chunk_writer_meta(w, "sampling.hz", "100"), 0);
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++)
		cr_assert_eq(chunk_writer_sample(w, rows[i].ms * 1000000, rows[i].thread == 1 ? t1 : t2,
				     TCF_STATE_ONCPU, rows[i].stack == 'A' ? s_a : s_b, NULL, 0),
			0);
	cr_assert_eq(chunk_writer_finish(w, TCF_END_STOP, 0), 0);
	chunk_writer_free(w);
	close(fd);

	run_tracerd(&r, argv);
	cr_assert_eq(r.status, 0, "%s", r.err);
	/* frames in first use: alpha 0, main 1, beta 2 */
	cr_expect(strstr(r.out, "{\"name\": \"alpha\", \"file\": \"m.c\", \"line\": 5}"),
		"function frames with file and start line:\n%s", r.out);
	cr_expect(strstr(r.out, "\"name\": \"one (tid 101)\", \"unit\": \"nanoseconds\", "
				"\"startValue\": 0,\n   \"samples\": [[1,0],[1,2],[1,0],[1,2]],\n"
				"   \"weights\": [20000000,10000000,10000000,20000000],\n"
				"   \"endValue\": 60000000}"),
		"thread one: A A B A B B in time order, runs merged:\n%s", r.out);
	cr_expect(strstr(r.out, "\"name\": \"two (tid 102)\", \"unit\": \"nanoseconds\", "
				"\"startValue\": 0,\n   \"samples\": [[1,2]],\n"
				"   \"weights\": [10000000],"),
		"thread two apart:\n%s", r.out);
	run_result_free(&r);
	unlink(path);
}

Test(report, folded_and_speedscope_imported_by_speedscope, .timeout = 240)
{
	speedscope_imports("rec-crash", "folded", 0);
	speedscope_imports("tcf-v1.0-small", "folded", 0);
	/* the recording is at 99 Hz: a sample weighs 1e9 / 99 ns */
	speedscope_imports("rec-crash", "speedscope", (double)(uint64_t)(1e9 / 99));
}

static int count(const char *hay, const char *needle)
{
	int n = 0;

	for (const char *p = hay; (p = strstr(p, needle)); p++)
		n++;
	return n;
}

/* The class of the frame drawn for name in dom ("" if none). */
static const char *frame_class(const char *dom, const char *name)
{
	static char cls[64];
	char want[256];
	const char *at, *c;

	snprintf(want, sizeof(want), ">%s<", name);
	cls[0] = '\0';
	at = strstr(dom, want);
	for (c = at; c && c > dom && strncmp(c, "class=\"", 7); c--)
		;
	if (c && c > dom)
		sscanf(c + 7, "%63[^\"]", cls);
	return cls;
}

Test(report, html_flame_graph_in_chromium, .timeout = 180)
{
	char html[512], url[1400], shot[600], *dom, *log;
	const char *argv[] = { "tracerd", "report", GOLD("rec-crash.tcf"), "-f", "html", "-o", html,
		NULL };
	struct run_result r;
	FILE *png;

	need_command("chromium", "chromium");
	snprintf(html, sizeof(html), "%s/test-flamegraph.html", TD_BUILD_DIR);
	run_tracerd(&r, argv);
	cr_assert_eq(r.status, 0, "%s", r.err);
	run_result_free(&r);
	{
		char *page = read_all(html);

		cr_expect(!strstr(page, "http://") && !strstr(page, "https://") &&
				!strstr(page, " src="),
			"self-contained: no URL, no external script");
		free(page);
	}

	/* the expected frames render */
	snprintf(url, sizeof(url), "file://%s", html);
	dom = chromium_page(url, "--dump-dom", &log);
	cr_expect(strstr(dom, ">crash_leaf<") && strstr(dom, ">main<") && strstr(dom, ">now<"),
		"frames drawn:\n%.2000s", dom);
	/* coloured by kind: the program's code, the C runtime's */
	cr_expect_str_eq(frame_class(dom, "crash_leaf"), "f k-p");
	cr_expect_str_eq(frame_class(dom, "__libc_start_call_main"), "f k-l");
	cr_expect_str_eq(frame_class(dom, "__vdso_clock_gettime"), "f k-l");
	cr_expect(!strstr(log, "Uncaught") && !strstr(log, ":ERROR:CONSOLE"),
		"no console errors:\n%s", log);
	free(dom);
	free(log);

	/* zoom: the clicked frame spans the full width, like the root */
	snprintf(url, sizeof(url), "file://%s#zoom=now", html);
	dom = chromium_page(url, "--dump-dom", &log);
	{
		const char *root = strstr(dom, ">all<"), *z = strstr(dom, ">now<");
		char wr[32] = "", wz[32] = "";

		cr_assert(root && z, "%.2000s", dom);
		/* style="left: 0px; top: ..px; width: Wpx;" precedes the name */
		for (const char *p = root; p > dom && !wr[0]; p--)
			if (!strncmp(p, "width: ", 7))
				sscanf(p + 7, "%31[^p]", wr);
		for (const char *p = z; p > dom && !wz[0]; p--)
			if (!strncmp(p, "width: ", 7))
				sscanf(p + 7, "%31[^p]", wz);
		cr_expect_str_eq(wz, wr, "zoomed frame width %s, full width %s", wz, wr);
		cr_expect(!strstr(dom, ">crash_leaf<") || strstr(dom, ">crash_leaf<") < z,
			"below the zoomed frame only its callees");
	}
	free(dom);
	free(log);

	/* search: highlight and the matched share (now: 47 of 49 samples) */
	snprintf(url, sizeof(url), "file://%s#search=^now$", html);
	dom = chromium_page(url, "--dump-dom", &log);
	cr_expect(!strcmp(frame_class(dom, "now"), "f k-p m") && strstr(dom, "matched 95.92%"),
		"search highlights 'now' and matches 95.92%%:\n%.3000s", dom);
	/* the highlight is the class m, after the frame's kind */
	cr_expect_eq(count(dom, " m\" data-n=\""), 1, "only 'now' is highlighted");
	free(dom);
	free(log);

	/* the thread filter: on the synthetic recording, each worker's matched
	 * share of one function is what top --thread says of it */
	{
		char sh[600], cmd[1400], want[32];
		const char *gen[] = { "tracerd", "report", GOLD("tcf-v1.0-small.tcf"), "-f", "html",
			"-o", sh, NULL };
		const char *threads[] = { "worker-0", "worker-2" };

		snprintf(sh, sizeof(sh), "%s/test-flamegraph-threads.html", TD_BUILD_DIR);
		run_tracerd(&r, gen);
		cr_assert_eq(r.status, 0, "%s", r.err);
		run_result_free(&r);
		for (int t = 0; t < 2; t++) {
			char *top;

			snprintf(cmd, sizeof(cmd),
				"%s/tracerd report %s --thread %s --limit 0 | "
				"awk '/ net::detail::inline_helper_10\\(\\) / { print $2 }'",
				TD_BUILD_DIR, GOLD("tcf-v1.0-small.tcf"), threads[t]);
			top = shell_output(cmd, NULL);
			cr_assert(sscanf(top, "%31s", want) == 1, "top --thread %s: %s", threads[t], top);
			free(top);
			snprintf(url, sizeof(url),
				"file://%s#thread=%s&search=^net::detail::inline_helper_10..$", sh,
				threads[t]);
			dom = chromium_page(url, "--dump-dom", &log);
			snprintf(cmd, sizeof(cmd), "matched %s<", want);
			cr_expect(strstr(dom, cmd), "%s: want '%s' in:\n%.600s", threads[t], cmd,
				strstr(dom, "id=\"match\"") ? strstr(dom, "id=\"match\"") : dom);
			cr_expect(!strstr(log, "Uncaught"), "no console errors:\n%s", log);
			free(dom);
			free(log);
		}
	}

	/* a screenshot with the test output */
	snprintf(shot, sizeof(shot), "--screenshot=%s/test-flamegraph.png --window-size=1200,500",
		TD_BUILD_DIR);
	snprintf(url, sizeof(url), "file://%s#search=crash", html);
	free(chromium_page(url, shot, &log));
	free(log);
	snprintf(shot, sizeof(shot), "%s/test-flamegraph.png", TD_BUILD_DIR);
	png = fopen(shot, "rb");
	cr_expect_not_null(png, "screenshot saved at %s", shot);
	if (png) {
		fseek(png, 0, SEEK_END);
		cr_expect_gt(ftell(png), 1000);
		fclose(png);
	}
}

/* ---- what a recording names, in the html page */

/* A wall recording whose every name is hostile markup: threads, a
 * function, its file and module, and what a wait waited for. */
#define EVIL_WAITER "</script><script>document.title='pwned'</script>"
#define EVIL_OWNER "\"'&amp;<!--<b>x</b>"
#define EVIL_FUNC "f</SCRIPT ><img src=x onerror=\"document.title='pwned'\">"
#define EVIL_WHAT "pipe:[</script><b>1</b>\"'&]"

static void write_evil_chunk(const char *path)
{
	struct chunk_writer_opts o = { .target_pid = 100, .minor = 1 };
	struct chunk_writer *w;
	struct chunk_wait mutex = { .time_ns = 2000000, .wait_ns = 30000000, .kind = TCF_WAIT_MUTEX,
		.object = 0x1234, .nowners = 1 };
	struct chunk_wait fd = { .time_ns = 3000000, .wait_ns = 20000000, .kind = TCF_WAIT_FD,
		.object = 7 };
	uint32_t map, f_main, f_evil, l_main, l_evil, s_evil, s_main, waiter, owner;

	o.fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0640);
	cr_assert_geq(o.fd, 0);
	cr_assert_eq(chunk_writer_open(&o, &w), 0);
	map = chunk_writer_mapping(w, &(struct chunk_mapping){ 0x1000, 0x1000, 0,
					      "/tmp/</script><b>m</b>/\"lib'.so", NULL, 0, 0 });
	f_main = chunk_writer_function(w, "main", NULL, "m.c", 1);
	f_evil = chunk_writer_function(w, EVIL_FUNC, NULL, "</script>\"'.c", 5);
	l_main = chunk_writer_location(w, map, 0x1010, (struct chunk_line[]){ { f_main, 2, 0 } }, 1);
	l_evil = chunk_writer_location(w, map, 0x1020, (struct chunk_line[]){ { f_evil, 6, 0 } }, 1);
	s_evil = chunk_writer_stack(w, (uint32_t[]){ l_evil, l_main }, 2);
	s_main = chunk_writer_stack(w, (uint32_t[]){ l_main }, 1);
	waiter = chunk_writer_thread(w, 101, 100, EVIL_WAITER);
	owner = chunk_writer_thread(w, 102, 100, EVIL_OWNER);
	cr_assert_eq(chunk_writer_meta(w, "sampling.mode", "wall"), 0);
	cr_assert_eq(chunk_writer_meta(w, "sampling.hz", "100"), 0);
	for (int i = 0; i < 5; i++) {
		cr_assert_eq(chunk_writer_sample(w, (1 + i) * 10000000ull, waiter, TCF_STATE_SLEEPING,
				     s_evil, NULL, 0),
			0);
		cr_assert_eq(chunk_writer_sample(w, (1 + i) * 10000000ull, owner, TCF_STATE_ONCPU,
				     s_main, NULL, 0),
			0);
	}
	mutex.thread_id = waiter;
	mutex.stack_id = s_evil;
	mutex.owners[0] = (struct chunk_wait_owner){ owner, s_evil, 30000000 };
	cr_assert_eq(chunk_writer_wait(w, &mutex), 0);
	fd.thread_id = owner;
	fd.stack_id = s_main;
	fd.what = chunk_writer_string(w, EVIL_WHAT);
	cr_assert_eq(chunk_writer_wait(w, &fd), 0);
	cr_assert_eq(chunk_writer_finish(w, TCF_END_STOP, 0), 0);
	chunk_writer_free(w);
	close(o.fd);
}

/* The page tracerd draws of the evil chunk: its paths (chunk, page: the
 * caller removes both) and the page's text. */
static char *evil_page(char chunk[static 32], char page[static 64])
{
	const char *argv[] = { "tracerd", "report", chunk, "-f", "html", "-o", page, NULL };
	struct run_result r;
	int fd;

	snprintf(chunk, 32, "/tmp/tracerd-evil-XXXXXX");
	fd = mkstemp(chunk);
	cr_assert_geq(fd, 0);
	close(fd);
	snprintf(page, 64, "%s.html", chunk);
	write_evil_chunk(chunk);
	run_tracerd(&r, argv);
	cr_assert_eq(r.status, 0, "%s", r.err);
	run_result_free(&r);
	return read_all(page);
}

static void evil_page_remove(const char *chunk, const char *page)
{
	unlink(chunk);
	unlink(page);
}

/* Every string from the recording reaches the page's data intact and
 * cannot end its script: the page holds its own two scripts and no other
 * end of one, and opens no comment. */
Test(report, html_escapes_what_the_recording_names, .timeout = 120)
{
	char chunk[32], page[64], *text = evil_page(chunk, page);
	int closes = 0;

	for (const char *p = text; *p; p++)
		closes += !strncasecmp(p, "</script", 8);
	cr_expect_eq(closes, 2, "%d ends of a script in the page", closes);
	cr_expect(!strstr(text, "<!--"), "no comment opens in the page");
	free(text);
	evil_page_remove(chunk, page);
}

/* The data read as a browser reads it (up to the first "</script") is
 * JSON and gives back each name exactly. */
Test(report, html_data_gives_back_what_the_recording_names, .timeout = 120)
{
	char chunk[32], page[64], *data;
	int status;

	need_command("node", "nodejs");
	free(evil_page(chunk, page));
	data = html_page_data(page, &status);
	evil_page_remove(chunk, page);
	cr_assert_eq(status, 0, "%s", data);
	/* as JSON.stringify writes them */
	cr_expect(strstr(data, "\t\"</script><script>document.title='pwned'</script>\"\t101\n"),
		"the waiter's name:\n%s", data);
	cr_expect(strstr(data, "\t\"\\\"'&amp;<!--<b>x</b>\"\t102\n"), "the owner's name:\n%s",
		data);
	cr_expect(strstr(data, "\t\"fd\"\t\"7\"\t\"pipe:[</script><b>1</b>\\\"'&]\"\t"
			       "\"fd 7 (pipe:[</script><b>1</b>\\\"'&])\"\t\"fd\"\t"),
		"what the fd was:\n%s", data);
	cr_expect(strstr(data, "\t[\"f</SCRIPT ><img src=x onerror=\\\"document.title='pwned'\\\">\","
			       "\"main\"]\t[[\"\\\"'&amp;<!--<b>x</b>\",102,30000000,"),
		"the mutex's stack and its owner:\n%s", data);
	free(data);
}

/* The page a browser draws shows the names as text, runs none of them
 * (its title is its own) and creates no element from them, in both
 * views. */
Test(report, html_draws_what_the_recording_names_as_text, .timeout = 120)
{
	char chunk[32], page[64], url[128], *dom;
	const char *views[] = { "", "#view=waits" };

	need_command("chromium", "chromium");
	free(evil_page(chunk, page));
	for (int v = 0; v < 2; v++) {
		char *log;

		snprintf(url, sizeof(url), "file://%s%s", page, views[v]);
		dom = chromium_page(url, "--dump-dom", &log);
		cr_expect(strstr(dom, "<title>tracerd flame graph</title>"),
			"%s: no name ran as a script: %.300s", url, dom);
		cr_expect(!strstr(dom, "<img") && !strstr(dom, "<b>x") && !strstr(dom, "<b>1") &&
				  !strstr(dom, "<b>m"),
			"%s: no element from a name:\n%s", url, dom);
		cr_expect(strstr(dom, "&lt;/script&gt;&lt;script&gt;document.title='pwned'"
				      "&lt;/script&gt; (101)"),
			"%s: the waiter's name, as text:\n%s", url, dom);
		cr_expect(!strstr(log, "Uncaught") && !strstr(log, ":ERROR:CONSOLE"),
			"%s: no console errors:\n%s", url, log);
		if (v == 0)
			cr_expect(strstr(dom, ">f&lt;/SCRIPT &gt;&lt;img src=x onerror=\"document.title="
					      "'pwned'\"&gt;<"),
				"the function's frame, as text:\n%s", dom);
		else
			cr_expect(strstr(dom, "<td>pipe:[&lt;/script&gt;&lt;b&gt;1&lt;/b&gt;\"'&amp;]</td>") &&
					  strstr(dom, "<summary>\"'&amp;amp;&lt;!--&lt;b&gt;x&lt;/b&gt; (102): "),
				"the table's what and owner, as text:\n%s", dom);
		free(dom);
		free(log);
	}
	evil_page_remove(chunk, page);
}

/* ---- emergency dumps: the death leads */

/* The repository tracerd service leaves when 4242 dies (synth_death: two
 * processes, the death chunk, the dump of 4242's death into dump), and
 * after the dump 5252 going on for 5 ticks into a new chunk. */
static void death_repo(const char *dir, enum synth_death how, char *dump, size_t len)
{
	struct repo_opts o = { .target_pid = 4242 };
	struct repo *r;
	struct chunk_writer *w;
	struct chunk_report rep;
	uint64_t t = td_now_ns() - 1000000000ull;
	uint32_t tick, th, f, l;

	cr_assert_eq(repo_open(dir, &o, &r, NULL), 0);
	cr_assert_eq(synth_death(r, how, t, dump, len), 0);
	/* both chunks whole, every row's thread and stack defined before it
	 * in its own chunk */
	cr_assert_eq(chunk_read_file(dump, NULL, NULL, &rep), 0);
	cr_expect_eq(rep.chunks, 2);
	cr_expect_eq(rep.chunks_finished, 2);
	cr_expect_eq(rep.blocks_bad + rep.seq_gaps + rep.unknown_refs, 0, "%s", rep.first_damage);

	/* the bystander lives on */
	cr_assert_not_null(w = repo_writer(r));
	f = chunk_writer_function(w, "bystander_tick", NULL, "victim.c", 138);
	l = chunk_writer_location(w, 0, 0x401600, (struct chunk_line[]){ { f, 140, 0 } }, 1);
	tick = chunk_writer_stack(w, &l, 1);
	th = chunk_writer_thread(w, 5252, 5252, "bystander");
	for (unsigned k = 0; k < 5; k++)
		cr_assert_eq(chunk_writer_sample(w, t + 300000000 + 10000000 * k, th,
				     TCF_STATE_ONCPU, tick, NULL, 0),
			0);
	cr_assert_eq(repo_close(r, TCF_END_STOP), 0);
}

/* Times of day in text made "@TIME@": they are the test's own. */
static void mask_times(char *s)
{
	for (char *p = s; strnlen(p, 24) >= 20; p++) {
		size_t n = 0;

		if (!(isdigit((unsigned char)p[0]) && isdigit((unsigned char)p[3]) && p[4] == '-' &&
			    p[10] == 'T' && p[13] == ':' && p[16] == ':'))
			continue;
		n = 19;
		if (p[n] == '.' && strnlen(p, 24) == 24)
			n += 4;
		if (p[n] != 'Z')
			continue;
		memcpy(p, "@TIME@", 6);
		memmove(p + 6, p + n + 1, strlen(p + n + 1) + 1);
		p += 5;
	}
}

static bool starts(const char *s, const char *prefix)
{
	return !strncmp(s, prefix, strlen(prefix));
}

/* tracerd's output with its times masked (exit status in *ret_status). */
static char *run_masked(const char *const *argv, int *ret_status)
{
	struct run_result r;
	char *out;

	run_tracerd(&r, argv);
	*ret_status = r.status;
	if (r.status)
		cr_log_error("%s", r.err);
	out = strdup(r.out);
	run_result_free(&r);
	mask_times(out);
	return out;
}

/* An OOM kill, as it happens (a dump written now into a repository):
 * the default report leads with the death (cause, time, every thread's
 * stack), says it is restricted, and counts only 4242's samples, as the
 * golden dump's does but for the times; the other formats are restricted
 * alike; the repository itself does not read the dump as one of its
 * chunks. */
Test(report, emergency_dump_leads_with_the_death)
{
	char dir[] = "/tmp/tracerd-death-XXXXXX", dump[4300], repo[64];
	const char *top[] = { "tracerd", "report", dump, NULL };
	const char *threads[] = { "tracerd", "report", dump, "-f", "threads", NULL };
	const char *folded[] = { "tracerd", "report", dump, "-f", "folded", NULL };
	const char *info[] = { "tracerd", "report", dump, "-f", "info", NULL };
	const char *other[] = { "tracerd", "report", dump, "--pid", "5252", NULL };
	const char *whole[] = { "tracerd", "report", repo, NULL };
	char *out, *want, cmd[600];
	int st;

	cr_assert_not_null(mkdtemp(dir));
	snprintf(repo, sizeof(repo), "%s/repo", dir);
	death_repo(repo, SYNTH_DEATH_OOM, dump, sizeof(dump));

	out = run_masked(top, &st);
	cr_assert_eq(st, 0);
	want = read_all(GOLD("report/emergency-oom.top.txt"));
	mask_times(want);
	cr_expect_str_eq(out, want, "differs from test/golden/report/emergency-oom.top.txt");
	free(want);
	free(out);

	out = run_masked(threads, &st);
	cr_expect_eq(st, 0);
	cr_expect(starts(out, "pid 4242 (victim) died: "), "%s", out);
	cr_expect(strstr(out, "    4242     4242  victim") && strstr(out, "    4243     4242  io-worker"),
		"%s", out);
	cr_expect_not(strstr(out, "5252  bystander"), "only the dead process's threads: %s", out);
	free(out);

	out = run_masked(folded, &st);
	cr_expect_eq(st, 0);
	cr_expect_eq(sum_column(out, 0, -1), 40, "4242's samples: %s", out);
	cr_expect_not(strstr(out, "bystander_tick"), "%s", out);
	cr_expect_not(strstr(out, "died"), "folded stays folded: %s", out);
	free(out);

	out = run_masked(info, &st);
	cr_expect_eq(st, 0);
	cr_expect(starts(out, "pid 4242 (victim) died: killed by signal 9 (Killed) \u2014 by the OOM "
			      "killer\n"),
		"%s", out);
	cr_expect(strstr(out, "exit:      pid 4242 killed by signal 9 (Killed) by the OOM killer at "),
		"%s", out);
	cr_expect(strstr(out, "samples:   40 (of 60 read)"), "%s", out);
	free(out);

	/* --pid chooses: the death still leads, the profile is 5252's */
	out = run_masked(other, &st);
	cr_expect_eq(st, 0);
	cr_expect(starts(out, "pid 4242 (victim) died: "), "%s", out);
	cr_expect_not(strstr(out, "restricted"), "%s", out);
	cr_expect(strstr(out, "\n20 samples\n") && strstr(out, "bystander_tick"), "%s", out);
	free(out);

	/* the repository: its three chunks, every process, no death section
	 * (the dump sits in it but is not one of its chunks) */
	out = run_masked(whole, &st);
	cr_expect_eq(st, 0);
	cr_expect(starts(out, "mode: cpu"), "%s", out);
	cr_expect(strstr(out, "\n65 samples\n"), "40 + 20 + 5 after the death: %s", out);
	free(out);

	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	cr_expect_eq(system(cmd), 0);
}

/* A SIGSEGV: the cause with its fault address, the crashing thread's stack
 * first though its row came second, and a thread whose stack could not be
 * taken said so. */
Test(report, emergency_dump_of_a_crash)
{
	char dir[] = "/tmp/tracerd-death-XXXXXX", dump[4300], repo[64];
	const char *top[] = { "tracerd", "report", dump, "-f", "tree", NULL };
	const char *victim, *worker, *idle, *samples;
	char *out, cmd[600];
	int st;

	cr_assert_not_null(mkdtemp(dir));
	snprintf(repo, sizeof(repo), "%s/repo", dir);
	death_repo(repo, SYNTH_DEATH_SEGV, dump, sizeof(dump));
	out = run_masked(top, &st);
	cr_assert_eq(st, 0);
	cr_expect(starts(out, "pid 4242 (victim) died: killed by signal 11 (Segmentation fault) at "
			      "address 0x10\n  time: @TIME@\n"),
		"%s", out);
	cr_expect_not(strstr(out, "OOM"), "%s", out);
	victim = strstr(out, "  thread 4242 (victim), the crashing thread:\n    #0   alloc_buffer at "
			     "victim.c:77 in victim\n    #1   handle_request at victim.c:52 in victim\n");
	worker = strstr(out, "  thread 4243 (io-worker):\n    #0   read_block at victim.c:101 in "
			     "victim\n");
	idle = strstr(out, "  thread 4244 (idle): no stack taken\n");
	samples = strstr(out, "40 samples;");
	cr_expect(victim && worker && idle && samples, "%s", out);
	cr_expect(victim < worker && worker < idle && idle < samples, "the crashing thread first: %s",
		out);
	cr_expect(strstr(out, "report restricted to pid 4242, the process that died (--pid to "
			      "choose)\n"),
		"%s", out);
	free(out);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	cr_expect_eq(system(cmd), 0);
}
