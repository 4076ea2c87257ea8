/* SPDX-License-Identifier: GPL-2.0-or-later */
/* tracerd verify and tracerd snapshot from the command line, and the
 * golden files every future reader must keep reading. */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include "../../chunkfmt/chunkfmt.h"
#include "../helpers.h"

#define GEN TD_BUILD_DIR "/tools/tracerd-gen"

static char dir[64];

static void gen(const char *args)
{
	char cmd[512], *out;
	int status;

	/* what it says goes into the failure message, not onto the terminal */
	snprintf(cmd, sizeof(cmd), "%s -r %s %s 2>&1", GEN, dir, args);
	out = shell_output(cmd, &status);
	cr_assert_eq(status, 0, "%s:\n%s", cmd, out);
	free(out);
}

static void setup(void)
{
	snprintf(dir, sizeof(dir), "/tmp/tracerd-cli-XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
	rmdir(dir);
}

static void teardown(void)
{
	char cmd[256];

	snprintf(cmd, sizeof(cmd), "rm -rf %s %s.snap %s.bad", dir, dir, dir);
	if (system(cmd) != 0)
		cr_log_warn("cleanup failed");
}

TestSuite(chunk_cli, .init = setup, .fini = teardown, .timeout = 60);

Test(chunk_cli, verify_clean_repository)
{
	const char *argv[] = { "tracerd", "verify", dir, NULL };
	struct run_result r;

	gen("--chunks 3 --seconds 5 --threads 4 --functions 40 --stacks 50");
	run_tracerd(&r, argv);
	cr_expect_eq(r.status, 0, "%s%s", r.out, r.err);
	cr_expect(strstr(r.out, "total: 3 files, 3 chunks (3 finished)"), "%s", r.out);
	cr_expect(strstr(r.out, "bytes/sample"), "%s", r.out);
	cr_expect(strstr(r.out, "time "), "%s", r.out);
	run_result_free(&r);
}

Test(chunk_cli, verify_damage_and_unreadable)
{
	char file[128], junk[128];
	const char *argv[] = { "tracerd", "verify", file, NULL };
	const char *argj[] = { "tracerd", "verify", junk, NULL };
	const char *argn[] = { "tracerd", "verify", "/nonexistent/x.tcf", NULL };
	struct tcf_dir_entry e[8];
	struct run_result r;
	FILE *f;

	gen("--chunks 1 --seconds 20 --threads 4 --functions 40 --stacks 50");
	cr_assert_eq(tcf_dir_scan(dir, e, 8), 1);
	snprintf(file, sizeof(file), "%s/%s", dir, e[0].name);
	f = fopen(file, "r+");
	fseek(f, (long)(e[0].size / 2), SEEK_SET);
	fputc(0x55 ^ fgetc(f), f); /* one flipped byte in the middle */
	fclose(f);
	run_tracerd(&r, argv);
	cr_expect_eq(r.status, 1, "damaged but partly readable: %s", r.out);
	cr_expect(strstr(r.out, "damaged blocks: 1"), "%s", r.out);
	run_result_free(&r);

	snprintf(junk, sizeof(junk), "%s.bad", dir);
	f = fopen(junk, "w");
	fputs("definitely not a chunk\n", f);
	fclose(f);
	run_tracerd(&r, argj);
	cr_expect_eq(r.status, 2, "%s", r.out);
	cr_expect(strstr(r.out, "not a tracerd chunk file"), "%s", r.out);
	run_result_free(&r);
	run_tracerd(&r, argn);
	cr_expect_eq(r.status, 2);
	cr_expect(strstr(r.err, "No such file or directory; give a chunk file or a repository"),
		"%s", r.err);
	run_result_free(&r);
}

/* Copy src to dst, cut to len bytes. */
static void copy_cut(const char *src, const char *dst, long len)
{
	char cmd[1024];

	snprintf(cmd, sizeof(cmd), "head -c %ld '%s' > '%s'", len, src, dst);
	cr_assert_eq(system(cmd), 0, "%s", cmd);
}

/* A finished chunk cut exactly where its trailer begins, and one whose
 * trailer has a valid CRC but values that disagree with the chunk, are
 * not clean: verify says what is wrong and exits 1; snapshot repairs
 * them.  A .part cut at its trailer is a writer that died while finishing
 * the chunk: not damage. */
Test(chunk_cli, verify_trailer_cut_or_lying)
{
	char file[128], cut[160], lie[160], part[160], snap[160];
	const char *v_cut[] = { "tracerd", "verify", cut, NULL };
	const char *v_lie[] = { "tracerd", "verify", lie, NULL };
	const char *v_dir[] = { "tracerd", "verify", dir, NULL };
	const char *v_snap[] = { "tracerd", "verify", snap, NULL };
	const char *s_dir[] = { "tracerd", "snapshot", dir, "-o", snap, NULL };
	struct tcf_dir_entry e[4];
	struct run_result r;
	uint8_t t[TCF_TRAILER_LEN];
	int fd;

	gen("--chunks 1 --seconds 5 --threads 2 --functions 20 --stacks 20");
	cr_assert_eq(tcf_dir_scan(dir, e, 4), 1);
	snprintf(file, sizeof(file), "%s/%s", dir, e[0].name);
	snprintf(cut, sizeof(cut), "%s.bad", dir);
	snprintf(lie, sizeof(lie), "%s.snap", dir); /* both removed by teardown */
	copy_cut(file, cut, (long)e[0].size - TCF_TRAILER_LEN);
	run_tracerd(&r, v_cut);
	cr_expect_eq(r.status, 1, "%s", r.out);
	cr_expect(strstr(r.out, "0 finished"), "%s", r.out);
	cr_expect(strstr(r.out, "cut at its trailer"), "%s", r.out);
	run_result_free(&r);

	/* the trailer says the chunk has one block more than it has */
	copy_cut(file, lie, (long)e[0].size);
	fd = open(lie, O_RDWR);
	cr_assert_eq(pread(fd, t, sizeof(t), (off_t)(e[0].size - TCF_TRAILER_LEN)),
		(ssize_t)sizeof(t));
	t[24]++;
	t[28] = t[29] = t[30] = t[31] = 0;
	{
		uint32_t c = tcf_crc_mask(tcf_crc32c(0, t, 28));

		for (int i = 0; i < 4; i++)
			t[28 + i] = (uint8_t)(c >> (8 * i));
	}
	cr_assert(tcf_is_trailer(t, sizeof(t)));
	cr_assert_eq(pwrite(fd, t, sizeof(t), (off_t)(e[0].size - TCF_TRAILER_LEN)),
		(ssize_t)sizeof(t));
	close(fd);
	run_tracerd(&r, v_lie);
	cr_expect_eq(r.status, 1, "%s", r.out);
	cr_expect(strstr(r.out, "damaged trailer"), "%s", r.out);
	run_result_free(&r);

	/* in the repository: the lying .tcf is damage, and snapshot does not
	 * copy its trailer as if it were good */
	cr_assert_eq(rename(lie, file), 0);
	run_tracerd(&r, v_dir);
	cr_expect_eq(r.status, 1, "%s", r.out);
	run_result_free(&r);
	snprintf(snap, sizeof(snap), "%s.snap", dir);
	run_tracerd(&r, s_dir);
	cr_expect_eq(r.status, 0, "%s", r.err);
	cr_expect(strstr(r.out, "1 chunk (1 repaired)"), "%s", r.out);
	run_result_free(&r);
	run_tracerd(&r, v_snap);
	cr_expect_eq(r.status, 0, "the repaired snapshot is clean: %s", r.out);
	run_result_free(&r);

	/* the same cut in a .part: the writer died finishing it */
	snprintf(part, sizeof(part), "%s.part", file);
	cr_assert_eq(rename(cut, part), 0);
	cr_assert_eq(unlink(file), 0);
	run_tracerd(&r, v_dir);
	cr_expect_eq(r.status, 0, "%s", r.out);
	cr_expect(strstr(r.out, "cut at its trailer"), "%s", r.out);
	run_result_free(&r);
}

/* tracerd CMD ARGS under timeout(1): status and stderr + stdout. */
static char *run_bounded(const char *args, int *ret_status)
{
	char cmd[1024];
	char *out;
	int st;

	snprintf(cmd, sizeof(cmd), "timeout 10 %s/tracerd %s 2>&1", TD_BUILD_DIR, args);
	out = shell_output(cmd, &st);
	*ret_status = WIFEXITED(st) ? WEXITSTATUS(st) : 128;
	return out;
}

/* A FIFO is never waited on and a device is never opened or taken for a
 * directory: verify, report and snapshot say what the path is and what
 * to give instead.  The same inside a repository: a FIFO or a link with
 * a chunk's name is not a chunk. */
Test(chunk_cli, inputs_that_are_not_files)
{
	char fifo[128], args[512], inrepo[256];
	char *out;
	int st;

	snprintf(fifo, sizeof(fifo), "%s.bad", dir);
	cr_assert_eq(mkfifo(fifo, 0600), 0);
	snprintf(args, sizeof(args), "verify %s", fifo);
	out = run_bounded(args, &st);
	cr_expect_eq(st, 2, "verify FIFO: exit %d: %s", st, out);
	cr_expect(strstr(out, "is not a regular file or directory; give a chunk file or a "
			      "repository"),
		"%s", out);
	free(out);
	out = run_bounded("verify /dev/null", &st);
	cr_expect_eq(st, 2, "%s", out);
	cr_expect(strstr(out, "/dev/null is not a regular file or directory"), "%s", out);
	cr_expect_not(strstr(out, "Is a directory"), "%s", out);
	free(out);
	snprintf(args, sizeof(args), "report %s", fifo);
	out = run_bounded(args, &st);
	cr_expect_eq(st, 1, "report FIFO: exit %d: %s", st, out);
	cr_expect(strstr(out, "is not a regular file or directory"), "%s", out);
	free(out);
	out = run_bounded("report /dev/null", &st);
	cr_expect_eq(st, 1, "%s", out);
	cr_expect(strstr(out, "is not a regular file or directory"), "%s", out);
	free(out);
	snprintf(args, sizeof(args), "snapshot %s -o %s.snap", fifo, dir);
	out = run_bounded(args, &st);
	cr_expect_eq(st, 1, "snapshot FIFO: exit %d: %s", st, out);
	cr_expect(strstr(out, "is not a regular file or directory"), "%s", out);
	free(out);

	/* in a repository */
	gen("--chunks 1 --seconds 2 --threads 2 --functions 20 --stacks 20");
	snprintf(inrepo, sizeof(inrepo), "%s/c0000000007-20260101T000000Z.tcf", dir);
	cr_assert_eq(rename(fifo, inrepo), 0);
	snprintf(inrepo, sizeof(inrepo), "%s/c0000000008-20260101T000000Z.tcf", dir);
	cr_assert_eq(symlink("/dev/zero", inrepo), 0);
	snprintf(args, sizeof(args), "verify %s", dir);
	out = run_bounded(args, &st);
	cr_expect_eq(st, 0, "only the real chunk is verified: exit %d: %s", st, out);
	free(out);
	snprintf(args, sizeof(args), "report %s -f info", dir);
	out = run_bounded(args, &st);
	cr_expect_eq(st, 0, "report: exit %d: %s", st, out);
	free(out);
	snprintf(args, sizeof(args), "snapshot %s -o %s.snap", dir, dir);
	out = run_bounded(args, &st);
	cr_expect_eq(st, 0, "snapshot: exit %d: %s", st, out);
	cr_expect(strstr(out, "1 chunk (0 repaired)"), "%s", out);
	free(out);
}

Test(chunk_cli, snapshot_repairs_a_killed_writer)
{
	char snap[128];
	const char *argv[] = { "tracerd", "snapshot", dir, "-o", snap, NULL };
	const char *argv_v[] = { "tracerd", "verify", snap, NULL };
	const char *argv_r[] = { "tracerd", "verify", dir, NULL };
	struct chunk_report rep_dir, rep_snap;
	struct tcf_dir_entry e[8];
	struct run_result r;
	uint64_t samples = 0;
	int n;

	gen("--chunks 3 --seconds 5 --threads 4 --functions 40 --stacks 50 --unfinished");
	n = tcf_dir_scan(dir, e, 8);
	cr_assert_eq(n, 3);
	cr_expect(e[2].part, "the killed writer left a .part");
	for (int i = 0; i < n; i++) {
		char p[1024];

		snprintf(p, sizeof(p), "%s/%s", dir, e[i].name);
		chunk_read_file(p, NULL, NULL, &rep_dir);
		samples += rep_dir.samples;
	}
	run_tracerd(&r, argv_r);
	cr_expect_eq(r.status, 0, "an unfinished chunk with a clean end is not damage: %s", r.out);
	run_result_free(&r);
	snprintf(snap, sizeof(snap), "%s.snap", dir);
	run_tracerd(&r, argv);
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_expect(strstr(r.out, "3 chunks (1 repaired)"), "%s", r.out);
	run_result_free(&r);
	cr_assert_eq(chunk_read_file(snap, NULL, NULL, &rep_snap), 0);
	cr_expect_eq(rep_snap.chunks, 3);
	cr_expect_eq(rep_snap.chunks_finished, 3, "the repaired chunk is closed");
	cr_expect_eq(rep_snap.samples, samples, "every sample kept");
	run_tracerd(&r, argv_v);
	cr_expect_eq(r.status, 0, "%s", r.out);
	run_result_free(&r);
	/* the repository itself is unchanged */
	cr_expect_eq(tcf_dir_scan(dir, e, 8), 3);
	cr_expect(e[2].part);
}

Test(chunk_cli, snapshot_errors_and_since)
{
	char snap[128];
	const char *empty[] = { "tracerd", "snapshot", "/tmp", "-o", snap, NULL };
	const char *noout[] = { "tracerd", "snapshot", dir, NULL };
	const char *since[] = { "tracerd", "snapshot", dir, "-o", snap, "--since", "1h", NULL };
	const char *badd[] = { "tracerd", "snapshot", dir, "-o", snap, "--since", "soon", NULL };
	struct run_result r;

	snprintf(snap, sizeof(snap), "%s.snap", dir);
	run_tracerd(&r, empty);
	cr_expect_eq(r.status, 1);
	cr_expect(strstr(r.err, "holds no chunks"), "%s", r.err);
	run_result_free(&r);
	run_tracerd(&r, noout);
	cr_expect_eq(r.status, 1);
	run_result_free(&r);
	run_tracerd(&r, badd);
	cr_expect_eq(r.status, 1);
	cr_expect(strstr(r.err, "'soon' is not a duration"), "%s", r.err);
	run_result_free(&r);
	gen("--chunks 2 --seconds 2 --threads 2 --functions 20 --stacks 20");
	{
		struct tcf_dir_entry e[4];
		char p[1024];
		struct timespec old[2] = { { time(NULL) - 7200, 0 }, { time(NULL) - 7200, 0 } };

		cr_assert_eq(tcf_dir_scan(dir, e, 4), 2);
		snprintf(p, sizeof(p), "%s/%s", dir, e[0].name);
		utimensat(AT_FDCWD, p, old, 0);
	}
	run_tracerd(&r, since);
	cr_expect_eq(r.status, 0, "%s", r.err);
	cr_expect(strstr(r.out, "1 chunk (0 repaired)"), "only the recent chunk: %s", r.out);
	run_result_free(&r);
}

/* ---- golden files */

/* What a reader finds in a golden file, as text: counts and the first
 * sample's root; for files with WAITS (TCF 1.1) also each chunk's version
 * and every wait episode, field by field, in file order; for files with
 * deaths (G_DEATHS) every PROCESS_EVENT row, with its signal's source
 * (TCF 1.2). */
enum { G_WAITS = 1u << 0, G_DEATHS = 1u << 1 };
struct gsum {
	unsigned chunks, finished;
	uint64_t samples, thread_events, waits;
	char names[512], versions[128];
	FILE *wait_lines; /* open_memstream */
	FILE *proc_lines; /* open_memstream, G_DEATHS */
};

/* A stack as LEAF/DEPTH/HASH: the innermost function, the depth in
 * locations, and an FNV-1a hash of every line's function name and line
 * number, leaf first; "-" for none. */
static void g_stack(struct chunk_reader *rd, uint32_t stack_id, char *buf, size_t len)
{
	uint32_t locs[1024], h = 2166136261u;
	unsigned n = stack_id ? chunk_reader_stack(rd, stack_id, locs, 1024) : 0;
	const char *leaf = "?";

	if (!n) {
		snprintf(buf, len, "-");
		return;
	}
	for (unsigned i = 0; i < n && i < 1024; i++) {
		struct chunk_location l;
		struct chunk_function f;

		if (!chunk_reader_location(rd, locs[i], &l))
			continue;
		for (unsigned k = 0; k < l.nlines; k++) {
			char line[16];

			if (!chunk_reader_function(rd, l.lines[k].function_id, &f) || !f.name)
				continue;
			if (i == 0 && k == 0)
				leaf = f.name;
			snprintf(line, sizeof(line), ":%u;", l.lines[k].line);
			for (const char *c = f.name; *c; c++)
				h = (h ^ (uint8_t)*c) * 16777619u;
			for (const char *c = line; *c; c++)
				h = (h ^ (uint8_t)*c) * 16777619u;
		}
	}
	snprintf(buf, len, "%s/%u/%08x", leaf, n, h);
}

static unsigned g_tid(struct chunk_reader *rd, uint32_t thread_id)
{
	struct chunk_thread t;

	return chunk_reader_thread(rd, thread_id, &t) ? t.tid : 0;
}

static int g_begin(void *arg, struct chunk_reader *rd)
{
	struct gsum *g = arg;
	const struct chunk_info *in = chunk_reader_info(rd);
	size_t n = strlen(g->versions);

	snprintf(g->versions + n, sizeof(g->versions) - n, " %u.%u", in->major, in->minor);
	return 0;
}

static int g_sample(void *arg, struct chunk_reader *rd, const struct chunk_sample *s)
{
	struct gsum *g = arg;
	uint32_t locs[64];
	struct chunk_location l;
	struct chunk_function f;
	unsigned n = chunk_reader_stack(rd, s->stack_id, locs, 64);

	if (g->samples++ == 0 && n && chunk_reader_location(rd, locs[n - 1], &l) &&
		chunk_reader_function(rd, l.lines[l.nlines - 1].function_id, &f))
		snprintf(g->names, sizeof(g->names), "root=%s depth=%u", f.name, n);
	return 0;
}

static void g_wait(struct gsum *g, struct chunk_reader *rd, const struct chunk_wait *w)
{
	const char *what = w->what ? chunk_reader_string(rd, w->what) : NULL;
	char stack[512];

	g->waits++;
	if (!g->wait_lines)
		return;
	g_stack(rd, w->stack_id, stack, sizeof(stack));
	fprintf(g->wait_lines,
		"wait chunk %u at %llu for %llu tid %u %s flags %u%s%s object 0x%llx what %s in %s\n",
		g->chunks, (unsigned long long)w->time_ns, (unsigned long long)w->wait_ns,
		g_tid(rd, w->thread_id), tcf_wait_kind_name(w->kind), w->flags,
		w->flags & TCF_WAITF_BEGAN_BEFORE ? " began_before" : "",
		w->flags & TCF_WAITF_GOES_ON ? " goes_on" : "", (unsigned long long)w->object,
		what ? what : "-", stack);
	for (unsigned i = 0; i < w->nowners; i++) {
		g_stack(rd, w->owners[i].stack_id, stack, sizeof(stack));
		fprintf(g->wait_lines, "  held by tid %u for %llu in %s\n",
			g_tid(rd, w->owners[i].thread_id), (unsigned long long)w->owners[i].wait_ns,
			stack);
	}
}

static void g_process(struct gsum *g, struct chunk_reader *rd, const struct chunk_event *e)
{
	char stack[512];

	if (!g->proc_lines)
		return;
	g_stack(rd, e->stack_id, stack, sizeof(stack));
	fprintf(g->proc_lines,
		"process chunk %u at %llu pid %u kind %u status %d signo %d addr 0x%llx count %llu "
		"tid %u in %s",
		g->chunks, (unsigned long long)e->time_ns, e->pid, e->kind, e->status, e->signo,
		(unsigned long long)e->fault_addr, (unsigned long long)e->count,
		g_tid(rd, e->thread_id), stack);
	if (e->has_src) {
		const char *comm = chunk_reader_string(rd, e->src.comm);

		fprintf(g->proc_lines, " src code %d pid %u uid %u comm ", e->src.code, e->src.pid,
			e->src.uid);
		for (const char *c = comm ? comm : "-"; *c; c++)
			fprintf(g->proc_lines, isprint((unsigned char)*c) ? "%c" : "\\x%02x",
				(unsigned char)*c);
	}
	fputc('\n', g->proc_lines);
}

static int g_event(void *arg, struct chunk_reader *rd, const struct chunk_event *e)
{
	if (e->type == CHUNK_EV_THREAD)
		((struct gsum *)arg)->thread_events++;
	else if (e->type == CHUNK_EV_WAIT)
		g_wait(arg, rd, e->wait);
	else if (e->type == CHUNK_EV_PROCESS)
		g_process(arg, rd, e);
	return 0;
}

static int g_end(void *arg, struct chunk_reader *rd, bool finished)
{
	struct gsum *g = arg;

	(void)rd;
	g->chunks++;
	g->finished += finished;
	return 0;
}

/* Read test/golden/NAME.tcf and compare what was found with NAME.txt:
 * the 1.0 summary (two lines); with G_WAITS or G_DEATHS, then the
 * chunks' versions, the records skipped, and every episode or process
 * row.  versions: " 1.0 1.0" etc. */
static void golden_read(const char *name, unsigned what, const char *versions)
{
	static const struct chunk_visitor v = { g_begin, g_sample, g_event, g_end };
	bool waits = what & (G_WAITS | G_DEATHS);
	struct gsum g = { 0 };
	struct chunk_report rep;
	char path[512], *lines = NULL, *got = NULL, *want = NULL;
	size_t nlines = 0, ngot = 0, nwant = 0;
	FILE *f;

	if (what & G_WAITS)
		cr_assert_not_null(g.wait_lines = open_memstream(&lines, &nlines));
	else if (what & G_DEATHS)
		cr_assert_not_null(g.proc_lines = open_memstream(&lines, &nlines));
	snprintf(path, sizeof(path), TD_SOURCE_DIR "/test/golden/%s.tcf", name);
	cr_assert_eq(chunk_read_file(path, &v, &g, &rep), 0, "%s", path);
	if (g.wait_lines)
		fclose(g.wait_lines);
	if (g.proc_lines)
		fclose(g.proc_lines);
	cr_expect_str_eq(g.versions, versions, "%s: the chunks' versions", name);
	cr_expect_not(rep.newer_reader_needed, "%s", name);
	cr_assert_not_null(f = open_memstream(&got, &ngot));
	fprintf(f, "chunks %u finished %u samples %llu thread_events %llu blocks %u damage %u\n%s\n",
		g.chunks, g.finished, (unsigned long long)g.samples,
		(unsigned long long)g.thread_events, rep.blocks,
		rep.blocks_bad + rep.seq_gaps + (unsigned)rep.unknown_refs, g.names);
	if (waits)
		fprintf(f, "versions%s\nrecords skipped %u\nwaits %llu\n%s", g.versions,
			rep.records_skipped, (unsigned long long)g.waits, lines);
	fclose(f);
	snprintf(path, sizeof(path), TD_SOURCE_DIR "/test/golden/%s.txt", name);
	f = fopen(path, "r");
	cr_assert_not_null(f, "golden summary %s missing", path);
	cr_assert_gt(getdelim(&want, &nwant, '\0', f), 0, "%s is empty", path);
	fclose(f);
	cr_expect_str_eq(got, want, "%s reads differently from %s; it reads:\n%s", name, path, got);
	free(lines);
	free(got);
	free(want);
}

Test(golden, v1_0_small_reads_the_same_forever)
{
	golden_read("tcf-v1.0-small", 0, " 1.0 1.0");
}

/* Wall recording (minor 1): every kind of wait, owners with and without
 * stacks, an episode going on into the next chunk (its first tick lies
 * before that chunk's first block: a negative time offset) and one still
 * going on at the end. */
Test(golden, v1_1_waits_reads_the_same_forever)
{
	golden_read("tcf-v1.1-waits", G_WAITS, " 1.1 1.1");
}

/* Deaths with their signal's source (minor 2): an emergency dump of a
 * process killed by SIGTERM sent with kill(), the row of the thread that
 * took it carrying code, sender PID, uid and comm (escaped here). */
Test(golden, v1_2_death_sources_read_the_same_forever)
{
	golden_read("emergency-kill", G_DEATHS, " 1.2 1.2");
}
