/* SPDX-License-Identifier: GPL-2.0-or-later */
/* tracerd report: golden outputs of every text format on a real recording
 * (a crash), on the synthetic golden chunk and on emergency dumps;
 * invariants; filters; a profile without samples; memory bounded by the
 * input; output files' modes; errors.  Each export format has a file of
 * its own: test_report_pprof.c, _speedscope, _html; emergency dumps' own
 * view, test_report_deaths.c. */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <dirent.h>
#include <fcntl.h>
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

/* Emergency dumps (tracerd-gen --death oom|segv|kill): the death leads, the
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
	/* 1.2: the source of the signal, the sender's comm escaped */
	golden("emergency-kill", "top", NULL);
	golden("emergency-kill", "info", NULL);
	golden("emergency-kill", "threads", NULL);
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

/* -o in a sticky world-writable directory, where another user (nobody)
 * made the name a symbolic link to a file of root's: refused, in one line
 * that says why, exit 3; the link's target keeps its contents and the
 * link stays a link.  A link root made itself is refused too (it is not
 * followed, whoever made it).  Another user's regular file there is
 * replaced by rename, never written through, and the report is not given
 * that file's mode. */
Test(report, output_refuses_a_symbolic_link, .timeout = 30)
{
	char dir[] = "/tmp/tracerd-sticky-XXXXXX", link[96], victim[96], theirs[96], buf[64];
	const char *to_link[] = { "tracerd", "report", GOLD("tcf-v1.0-small.tcf"), "-o", link, NULL };
	const char *to_theirs[] = { "tracerd", "report", GOLD("tcf-v1.0-small.tcf"), "-o", theirs,
		NULL };
	struct run_result r;
	struct stat st, before;
	mode_t old;
	pid_t pid;
	int fd, status;
	ssize_t n;

	if (!is_root())
		cr_skip_test("making another user's files needs root");
	old = umask(022);
	cr_assert_not_null(mkdtemp(dir));
	cr_assert_eq(chmod(dir, 01777), 0);
	snprintf(link, sizeof(link), "%s/report.txt", dir);
	snprintf(victim, sizeof(victim), "%s.victim", dir); /* root's, outside */
	snprintf(theirs, sizeof(theirs), "%s/theirs.txt", dir);
	fd = open(victim, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	cr_assert_geq(fd, 0);
	cr_assert_eq(write(fd, "root's file\n", 12), 12);
	close(fd);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		if (setgid(65534) || setuid(65534) || symlink(victim, link))
			_exit(1);
		fd = open(theirs, O_WRONLY | O_CREAT | O_EXCL, 0666);
		_exit(fd < 0 || fchmod(fd, 0666) || write(fd, "x\n", 2) != 2);
	}
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "nobody made the link");

	run_tracerd(&r, to_link);
	cr_expect_eq(r.status, 3, "exit %d: %s", r.status, r.err);
	cr_expect(strstr(r.err, "is a symbolic link: not followed"), "%s", r.err);
	run_result_free(&r);
	fd = open(victim, O_RDONLY | O_CLOEXEC);
	cr_assert_geq(fd, 0);
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	cr_expect_eq(n, 12);
	cr_expect(n == 12 && !memcmp(buf, "root's file\n", 12), "the link's target is untouched");
	cr_expect_eq(lstat(link, &st), 0);
	cr_expect(S_ISLNK(st.st_mode), "the link is left as it was");

	/* root's own link, in a directory of root's: refused all the same */
	cr_assert_eq(unlink(link), 0);
	cr_assert_eq(chmod(dir, 0700), 0);
	cr_assert_eq(symlink(victim, link), 0);
	run_tracerd(&r, to_link);
	cr_expect_eq(r.status, 3, "exit %d: %s", r.status, r.err);
	cr_expect(strstr(r.err, "is a symbolic link"), "%s", r.err);
	run_result_free(&r);
	cr_assert_eq(stat(victim, &st), 0);
	cr_expect_eq(st.st_size, 12, "the link's target is untouched");

	/* another user's regular file: replaced, a new inode of root's, 0640 */
	cr_assert_eq(chmod(dir, 01777), 0);
	cr_assert_eq(stat(theirs, &before), 0);
	run_tracerd(&r, to_theirs);
	cr_expect_eq(r.status, 0, "%s", r.err);
	run_result_free(&r);
	cr_assert_eq(lstat(theirs, &st), 0);
	cr_expect(S_ISREG(st.st_mode));
	cr_expect_neq(st.st_ino, before.st_ino, "replaced by rename, not written into");
	cr_expect_eq(st.st_uid, 0);
	cr_expect_eq(st.st_mode & 07777, 0640, "not the other user's 0666: %o", st.st_mode & 07777);
	umask(old);
	unlink(victim);
	{
		char cmd[160];

		snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
		cr_expect_eq(system(cmd), 0);
	}
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
	/* times whose nanoseconds do not fit: a usage error, not an overflow */
	when[4] = "9999-01-01T00:00:00Z";
	run_tracerd(&r, when);
	cr_expect_eq(r.status, 1);
	cr_expect(strstr(r.err, "is out of range; give a time from 1970 to 2262"), "%s", r.err);
	run_result_free(&r);
	when[4] = "-16000w";
	run_tracerd(&r, when);
	cr_expect_eq(r.status, 1);
	cr_expect(strstr(r.err, "reaches back further than time does"), "%s", r.err);
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
