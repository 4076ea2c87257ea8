/* SPDX-License-Identifier: GPL-2.0-or-later */
/* tracerd verify PATH...: check chunk files and repositories and say what
 * they hold and what is damaged.  Exit 0 clean, 1 damaged but partly
 * readable, 2 unreadable. */
#define _GNU_SOURCE
#include "cli.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../chunkfmt/chunkfmt.h"

#define VERIFY_MAX_CHUNKS 100000

struct vtotal {
	unsigned files, chunks, finished, blocks, bad;
	uint64_t samples, bytes;
	int worst;
};

/* A chunk still being written (or whose writer died) is named .part. */
static bool is_part(const char *path)
{
	size_t n = strlen(path);

	return n >= 5 && !strcmp(path + n - 5, ".part");
}

/* The file open as fd (borrowed), shown as path. */
static int verify_file(int fd, const char *path, bool part, struct vtotal *t)
{
	struct chunk_report rep;
	char a[32], b[32], shown[8192];
	int r = chunk_read_fd(fd, NULL, NULL, &rep), status = 0;
	bool damaged;

	/* a name read from a directory may hold anything: escaped */
	td_text_escape(shown, sizeof(shown), path);
	path = shown;
	t->files++;
	if (r == -TD_E_CORRUPT) {
		printf("%s: not a tracerd chunk file (no valid chunk header)\n", path);
		return 2;
	}
	if (r < 0) {
		printf("%s: cannot read: %s\n", path, td_strerror(r));
		return 2;
	}
	/* Only a .part (a chunk being written, or whose writer died) may end
	 * unfinished: a .tcf is renamed after its trailer is on disk, and a
	 * snapshot closes every chunk. */
	damaged = rep.blocks_bad || rep.seq_gaps || rep.unknown_refs || rep.chunks_skipped ||
		rep.newer_reader_needed || (rep.bytes_skipped && !rep.torn_tail) ||
		rep.trailers_bad || (!part && (rep.torn_tail || rep.chunks_finished < rep.chunks));
	printf("%s: %u chunk%s (%u finished), %u block%s, %llu sample%s, %llu byte%s", path,
		rep.chunks, td_plural(rep.chunks), rep.chunks_finished, rep.blocks,
		td_plural(rep.blocks), (unsigned long long)rep.samples, td_plural(rep.samples),
		(unsigned long long)rep.bytes, td_plural(rep.bytes));
	if (rep.samples)
		printf(", %.2f bytes/sample", (double)rep.bytes / (double)rep.samples);
	putchar('\n');
	if (rep.first_real_ns) {
		td_fmt_utc(rep.first_real_ns, a, sizeof(a));
		td_fmt_utc(rep.last_real_ns, b, sizeof(b));
		printf("  time %s .. %s (%.1f s)\n", a, b,
			(rep.last_real_ns - rep.first_real_ns) / 1e9);
	}
	if (rep.trailers_missing)
		printf("  unfinished chunk: cut at its trailer (the final blocks are there, the "
		       "trailer is not)%s\n",
			part ? "; its writer died while finishing it (tracerd snapshot repairs it)" :
			       "");
	if (rep.chunks_finished + rep.trailers_bad + rep.trailers_missing < rep.chunks)
		printf("  unfinished chunk: %s\n",
			part ? "still being written, or its writer died (tracerd snapshot repairs it)" :
			       "no trailer (tracerd snapshot repairs it)");
	if (rep.trailers_bad)
		printf("  damaged trailer: its length, index offset or block count disagree with "
		       "the chunk (the blocks were read)\n");
	if (rep.torn_tail)
		printf("  torn tail: %llu bytes after the last whole block are ignored\n",
			(unsigned long long)rep.bytes_skipped);
	if (rep.blocks_bad)
		printf("  damaged blocks: %u (skipped; the others were read)\n", rep.blocks_bad);
	if (rep.seq_gaps)
		printf("  block sequence gaps: %u\n", rep.seq_gaps);
	if (rep.unknown_refs)
		printf("  references to undefined entries: %llu (shown as unknown frames)\n",
			(unsigned long long)rep.unknown_refs);
	if (rep.chunks_skipped || rep.newer_reader_needed)
		printf("  parts need a newer tracerd (%u chunk%s skipped)\n", rep.chunks_skipped,
			td_plural(rep.chunks_skipped));
	if (rep.records_skipped)
		printf("  %u optional records of newer versions skipped\n", rep.records_skipped);
	if (rep.first_damage[0])
		printf("  first problem: %s\n", rep.first_damage);
	if (damaged)
		status = 1;
	t->chunks += rep.chunks;
	t->finished += rep.chunks_finished;
	t->blocks += rep.blocks;
	t->bad += rep.blocks_bad;
	t->samples += rep.samples;
	t->bytes += rep.bytes;
	return status;
}

/* The repository open as dirfd (borrowed), shown as path. */
static int verify_dir(int dirfd, const char *path, struct vtotal *t)
{
	struct tcf_dir_entry *e = malloc(VERIFY_MAX_CHUNKS * sizeof(*e));
	int n, worst = 0;

	if (!e)
		return 2;
	n = tcf_dir_scan_fd(dirfd, e, VERIFY_MAX_CHUNKS);
	if (n == -ENOSPC) {
		td_msg("%s: more than %d chunk files; verify them in parts", path, VERIFY_MAX_CHUNKS);
		n = VERIFY_MAX_CHUNKS;
	}
	if (n < 0) {
		td_msg("cannot read %s: %s", path, td_strerror(n));
		free(e);
		return 2;
	}
	if (n == 0) {
		printf("%s: empty repository (no chunk files)\n", path);
		free(e);
		return 2;
	}
	for (int i = 0; i < n; i++) {
		char full[4096 + 64];
		bool is_dir;
		int fd, s;

		snprintf(full, sizeof(full), "%s/%s", path, e[i].name);
		/* by the name the scan saw, never through a link */
		s = tcf_open_input(dirfd, e[i].name, true, &fd, &is_dir);
		if (s == 0 && !is_dir) {
			s = verify_file(fd, full, e[i].part, t);
			close(fd);
		} else {
			if (s == 0)
				close(fd);
			td_text_put(stdout, full);
			printf(": cannot read: %s\n", td_strerror(s < 0 ? s : -EISDIR));
			s = 2;
		}
		worst = s > worst ? s : worst;
		if (i && e[i].seq != e[i - 1].seq + 1) {
			fputs("  chunk sequence gap before ", stdout);
			td_text_put(stdout, e[i].name);
			fputs(" (chunks deleted by retention or lost)\n", stdout);
		}
	}
	free(e);
	return worst;
}

int cmd_verify(int argc, char **argv)
{
	struct vtotal t = { 0 };
	int worst = 0;

	if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
		fputs("usage: tracerd verify PATH...\n"
		      "\n"
		      "Check chunk files, snapshots and repositories: CRCs, definitions before\n"
		      "use, sequence gaps.  Prints chunks, blocks, samples, time range, damage\n"
		      "and bytes per sample.  Exit 0 clean, 1 damaged but partly readable,\n"
		      "2 unreadable.\n",
			argc < 2 ? stderr : stdout);
		return argc < 2 ? TD_EXIT_USAGE : TD_EXIT_OK;
	}
	for (int i = 1; i < argc; i++) {
		bool is_dir;
		int fd, s = tcf_open_input(AT_FDCWD, argv[i], false, &fd, &is_dir);

		if (s == -TD_E_NOTREG) {
			td_msg("%s is not a regular file or directory; give a chunk file or a "
			       "repository",
				argv[i]);
			worst = 2;
			continue;
		}
		if (s < 0) {
			td_msg("%s: %s; give a chunk file or a repository directory", argv[i],
				td_strerror(s));
			worst = 2;
			continue;
		}
		s = is_dir ? verify_dir(fd, argv[i], &t) :
			     verify_file(fd, argv[i], is_part(argv[i]), &t);
		close(fd);
		worst = s > worst ? s : worst;
	}
	if (t.files > 1)
		printf("total: %u files, %u chunk%s (%u finished), %u block%s (%u damaged), %llu "
		       "sample%s, %llu byte%s\n",
			t.files, t.chunks, td_plural(t.chunks), t.finished, t.blocks,
			td_plural(t.blocks), t.bad, (unsigned long long)t.samples, td_plural(t.samples),
			(unsigned long long)t.bytes, td_plural(t.bytes));
	return worst;
}
