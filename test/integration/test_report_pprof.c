/* SPDX-License-Identifier: GPL-2.0-or-later */
/* tracerd report -f pprof, as go tool pprof reads it: the same counts as
 * the top table, mappings with their build-ids, and wait episodes as the
 * contentions and delay sample types. */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../chunkfmt/chunkfmt-internal.h"
#include "../helpers.h"

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

Test(report_pprof, pprof_read_by_go_tool_pprof_real, .timeout = 120)
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

Test(report_pprof, pprof_read_by_go_tool_pprof_synthetic, .timeout = 120)
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
static char *pprof_raw_of(const char *tcf, const char *dir)
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
Test(report_pprof, pprof_wait_samples_synthetic, .timeout = 120)
{
	char dir[] = "/tmp/tracerd-pwaits-XXXXXX", tcf[512], cmd[600], *raw;

	need_command("go", "golang-go");
	cr_assert_not_null(mkdtemp(dir));
	snprintf(tcf, sizeof(tcf), "%s/wall.tcf", dir);

	write_wall_chunk(tcf, 1, true);
	raw = pprof_raw_of(tcf, dir);
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
	raw = pprof_raw_of(tcf, dir);
	cr_expect(strstr(raw, "\nsamples/count[dflt] wall/nanoseconds contentions/count "
			      "delay/nanoseconds\n"),
		"%s", raw);
	cr_expect(strstr(raw, "\n 6 60000000 0 0: "), "%s", raw);
	cr_expect(!strstr(raw, "wait:["), "%s", raw);
	free(raw);

	write_wall_chunk(tcf, 0, false);
	raw = pprof_raw_of(tcf, dir);
	cr_expect(strstr(raw, "\nsamples/count[dflt] wall/nanoseconds\n 6 60000000: "), "%s", raw);
	free(raw);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	cr_expect_eq(system(cmd), 0);
}

/* A program whose samples are all in a thread it started: each stack runs
 * from libc's clone3 and start_thread through the program's worker into
 * libc's memset, and main is never sampled.  pprof's first mapping (its
 * "File:") is still the program, not libc.so.6, though libc holds the
 * heaviest path's outermost frame and its mapping comes first in the
 * chunk. */
Test(report_pprof, pprof_main_mapping_is_the_program, .timeout = 120)
{
	char dir[] = "/tmp/tracerd-pmain-XXXXXX", tcf[512], cmd[600], *raw;
	struct chunk_writer_opts o = { .target_pid = 100 };
	struct chunk_writer *w;
	uint32_t libc, prog, f_clone, f_start, f_worker, f_memset, locs[4], stack, t;

	need_command("go", "golang-go");
	cr_assert_not_null(mkdtemp(dir));
	snprintf(tcf, sizeof(tcf), "%s/prog.tcf", dir);
	o.fd = open(tcf, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0640);
	cr_assert_geq(o.fd, 0);
	cr_assert_eq(chunk_writer_open(&o, &w), 0);
	libc = chunk_writer_mapping(w, &(struct chunk_mapping){ 0x7f0000000000, 0x200000, 0,
		"/usr/lib/x86_64-linux-gnu/libc.so.6", NULL, 0, 0 });
	prog = chunk_writer_mapping(w, &(struct chunk_mapping){ 0x555500000000, 0x10000, 0,
		"/opt/app/bin/prog", NULL, 0, 0 });
	f_clone = chunk_writer_function(w, "clone3", NULL, NULL, 0);
	f_start = chunk_writer_function(w, "start_thread", NULL, NULL, 0);
	f_worker = chunk_writer_function(w, "worker", NULL, "prog.c", 10);
	f_memset = chunk_writer_function(w, "memset", NULL, NULL, 0);
	locs[0] = chunk_writer_location(w, libc, 0x1000, (struct chunk_line[]){ { f_memset, 0, 0 } }, 1);
	locs[1] = chunk_writer_location(w, prog, 0x1100, (struct chunk_line[]){ { f_worker, 12, 0 } }, 1);
	locs[2] = chunk_writer_location(w, libc, 0x2000, (struct chunk_line[]){ { f_start, 0, 0 } }, 1);
	locs[3] = chunk_writer_location(w, libc, 0x3000, (struct chunk_line[]){ { f_clone, 0, 0 } }, 1);
	stack = chunk_writer_stack(w, locs, 4);
	t = chunk_writer_thread(w, 101, 100, "worker");
	for (uint64_t i = 1; i <= 10; i++)
		cr_assert_eq(chunk_writer_sample(w, i * 10000000, t, TCF_STATE_ONCPU, stack, NULL, 0), 0);
	cr_assert_eq(chunk_writer_finish(w, TCF_END_STOP, 0), 0);
	chunk_writer_free(w);
	close(o.fd);

	raw = pprof_raw_of(tcf, dir);
	cr_expect(strstr(raw, "\nMappings\n1: 0x0/0xffffffffffffffff/0x0 /opt/app/bin/prog"),
		"the program's mapping first:\n%s", raw);
	cr_expect(strstr(raw, "/usr/lib/x86_64-linux-gnu/libc.so.6"), "%s", raw);
	free(raw);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	cr_expect_eq(system(cmd), 0);
}
