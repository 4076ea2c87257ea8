/* SPDX-License-Identifier: GPL-2.0-or-later */
/* tracerd-gen: synthetic recordings for tests and benchmarks, until real
 * recordings exist everywhere.
 *   tracerd-gen -o FILE [options]        one finished chunk per --chunks
 *   tracerd-gen -r REPO [options]        chunks in a repository
 * options: --chunks N (1) --seconds S per chunk (60) --threads N (64)
 *   --hz N (99) --stacks N (4000) --functions N (600) --seed N (1)
 *   --zipf S (1.1; smaller spreads samples over more stacks)
 *   --repeat P (0.6; chance a thread keeps its last stack)
 *   --max-samples N (per chunk) --unfinished (leave the last chunk as a
 *   killed writer does: a .part without trailer)
 *   --waits N (0; >= 2: a wall recording in TCF 1.1, N wait episodes per
 *   chunk of every kind, one going on into the next chunk, which then
 *   follows its chunk without a gap; needs --threads >= 2)
 *   --death oom|segv|kill (instead of the above: synth_death's two
 *   processes and the death of one; -o FILE is its emergency dump, -r
 *   REPO keeps the repository with the dump in it; kill writes TCF 1.2)
 *   tracerd-gen bomb SRC MIB DST [pad]    a decompression bomb: a copy of
 *   the ELF file SRC (64-bit) whose .debug_info is SHF_COMPRESSED and
 *   inflates to MIB MiB of zeros; with pad, the same compressed bytes are
 *   only appended, no section pointing at them (a file of the same size
 *   with SRC's own DWARF, for comparison) */
#define _GNU_SOURCE
#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "../../chunkfmt/chunkfmt.h"
#include "../../cli/cli.h"
#include "synth.h"

/* Chunk i of the recording: a new seed each; 100 s apart, or back to back
 * when a wait goes on from one into the next. */
static long long gen_chunk(struct chunk_writer *w, struct synth_opts *so, unsigned i)
{
	uint64_t start = 1000000000ull +
			 (uint64_t)i * (so->waits ? synth_span_ns(so) : 100000000000ull);
	long long n;

	so->seed += 1;
	so->chunk = i;
	n = synth_write(w, so, start);
	if (n == -EINVAL)
		fprintf(stderr, "tracerd-gen: %u waits do not fit: give --threads >= 2 and "
				"at least 4 ticks per wait and thread (--seconds, --hz)\n",
			so->waits);
	else if (n < 0)
		fprintf(stderr, "tracerd-gen: %s\n", td_strerror((int)n));
	return n;
}

/* The repository gen_death made beside its output, with what it holds. */
static void remove_repo(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *de;

	while (d && (de = readdir(d)))
		if (de->d_name[0] != '.') {
			char p[4500];

			snprintf(p, sizeof(p), "%s/%s", dir, de->d_name);
			unlink(p);
		}
	if (d)
		closedir(d);
	rmdir(dir);
}

/* synth_death into REPO (made), or into a repository of its own beside
 * FILE whose dump becomes FILE. */
static int gen_death(const char *out, const char *repo, enum synth_death how)
{
	char tmpdir[4200], dump[4300];
	struct repo_opts ro = { .target_pid = 4242, .minor = how == SYNTH_DEATH_KILL ? 2 : 0 };
	struct repo *r;
	int e;

	if (out) {
		snprintf(tmpdir, sizeof(tmpdir), "%s.repo-XXXXXX", out);
		if (!mkdtemp(tmpdir)) {
			perror(tmpdir);
			return 1;
		}
		repo = tmpdir;
	}
	e = repo_open(repo, &ro, &r, NULL);
	if (e == 0)
		e = synth_death(r, how, 1000000000ull, dump, sizeof(dump));
	if (e == 0)
		e = repo_close(r, TCF_END_STOP);
	else
		repo_close(r, TCF_END_STOP);
	if (e < 0) {
		fprintf(stderr, "tracerd-gen: %s: %s\n", repo, td_strerror(e));
		return 1;
	}
	if (!out) {
		printf("%s\n", dump);
		return 0;
	}
	if (rename(dump, out) < 0) {
		perror(out);
		return 1;
	}
	remove_repo(tmpdir);
	printf("%s\n", out);
	return 0;
}

/* What the command line asks for. */
struct gen_args {
	struct synth_opts so;
	const char *out, *repo;
	unsigned chunks;
	bool unfinished;
	int death; /* enum synth_death, or -1 */
};

/* The command line into *a: 0, or 1 after a message. */
static int parse(int argc, char **argv, struct gen_args *a)
{
	static const struct option opts[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "repo", required_argument, NULL, 'r' },
		{ "chunks", required_argument, NULL, 'c' },
		{ "seconds", required_argument, NULL, 's' },
		{ "threads", required_argument, NULL, 't' },
		{ "hz", required_argument, NULL, 'F' },
		{ "stacks", required_argument, NULL, 'S' },
		{ "functions", required_argument, NULL, 'f' },
		{ "seed", required_argument, NULL, 'x' },
		{ "max-samples", required_argument, NULL, 'm' },
		{ "unfinished", no_argument, NULL, 'u' },
		{ "zipf", required_argument, NULL, 'z' },
		{ "repeat", required_argument, NULL, 'p' },
		{ "waits", required_argument, NULL, 'w' },
		{ "death", required_argument, NULL, 'd' },
		{ 0 },
	};
	struct synth_opts *so = &a->so;
	int c;

	*a = (struct gen_args){ .chunks = 1, .death = -1 };
	while ((c = getopt_long(argc, argv, "o:r:", opts, NULL)) != -1) {
		switch (c) {
		case 'o':
			a->out = optarg;
			break;
		case 'r':
			a->repo = optarg;
			break;
		case 'c':
			a->chunks = (unsigned)atoi(optarg);
			break;
		case 's':
			so->seconds = atof(optarg);
			break;
		case 't':
			so->threads = (unsigned)atoi(optarg);
			break;
		case 'F':
			so->hz = (unsigned)atoi(optarg);
			break;
		case 'S':
			so->stacks = (unsigned)atoi(optarg);
			break;
		case 'f':
			so->functions = (unsigned)atoi(optarg);
			break;
		case 'x':
			so->seed = strtoull(optarg, NULL, 10);
			break;
		case 'm':
			so->max_samples = strtoull(optarg, NULL, 10);
			break;
		case 'u':
			a->unfinished = true;
			break;
		case 'z':
			so->zipf_s = atof(optarg);
			break;
		case 'p':
			so->repeat = atof(optarg);
			break;
		case 'w':
			so->waits = (unsigned)atoi(optarg);
			break;
		case 'd':
			a->death = !strcmp(optarg, "oom")  ? SYNTH_DEATH_OOM :
				   !strcmp(optarg, "segv") ? SYNTH_DEATH_SEGV :
				   !strcmp(optarg, "kill") ? SYNTH_DEATH_KILL :
							     -2;
			if (a->death == -2) {
				fprintf(stderr, "tracerd-gen: --death oom, segv or kill\n");
				return 1;
			}
			break;
		default:
			fprintf(stderr, "usage: tracerd-gen (-o FILE | -r REPO) [options]\n");
			return 1;
		}
	}
	if (!a->out == !a->repo) {
		fprintf(stderr, "tracerd-gen: give -o FILE or -r REPO\n");
		return 1;
	}
	return 0;
}

/* The chunks one after the other in a->out: the samples written, or -1. */
static long long gen_file(struct gen_args *a)
{
	int fd = open(a->out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0640);
	long long total = 0;

	if (fd < 0) {
		perror(a->out);
		return -1;
	}
	for (unsigned i = 0; i < a->chunks; i++) {
		struct chunk_writer_opts wo = { .fd = fd, .chunk_seq = i, .target_pid = 10000,
			.minor = a->so.waits ? 1 : 0 };
		struct chunk_writer *w;
		long long n;

		if (chunk_writer_open(&wo, &w) < 0)
			return -1;
		n = gen_chunk(w, &a->so, i);
		if (n < 0)
			return -1;
		total += n;
		if (a->unfinished && i + 1 == a->chunks)
			chunk_writer_flush(w);
		else if (chunk_writer_finish(w, TCF_END_STOP, 0) < 0)
			return -1;
		chunk_writer_free(w);
	}
	close(fd);
	return total;
}

/* The chunks in the repository a->repo, rotated between them: the samples
 * written, or -1.  Unfinished, it ends the process as kill -9 would. */
static long long gen_repo(struct gen_args *a)
{
	struct repo_opts ro = { .target_pid = 10000, .minor = a->so.waits ? 1 : 0 };
	struct repo *r;
	pid_t owner = 0;
	long long total = 0;
	int e = repo_open(a->repo, &ro, &r, &owner);

	if (e < 0) {
		fprintf(stderr, "tracerd-gen: %s: %s\n", a->repo, td_strerror(e));
		return -1;
	}
	for (unsigned i = 0; i < a->chunks; i++) {
		struct chunk_writer *w = repo_writer(r);
		long long n;

		if (!w)
			return -1;
		n = gen_chunk(w, &a->so, i);
		if (n < 0)
			return -1;
		total += n;
		if (i + 1 < a->chunks && repo_rotate(r, TCF_END_ROTATE) < 0)
			return -1;
	}
	if (a->unfinished) {
		chunk_writer_flush(repo_writer(r));
		_exit(0); /* as kill -9 would: no trailer, lock dies with us */
	}
	if (repo_close(r, TCF_END_STOP) < 0)
		return -1;
	return total;
}

/* A zlib stream of mib MiB of zeros, after a 64-bit compression header:
 * *ret_len bytes, malloc'ed.  Each MiB after a full flush compresses to
 * the same bytes, so the first is made and repeated; the checksum of n
 * zeros is (n mod 65521) << 16 | 1. */
static unsigned char *bomb_payload(unsigned mib, size_t *ret_len)
{
	static unsigned char zeros[1 << 20];
	unsigned char *head = malloc(1 << 16), *out = NULL;
	size_t head_len, rep_len, len;
	uint64_t n = (uint64_t)mib << 20;
	Elf64_Chdr ch = { .ch_type = ELFCOMPRESS_ZLIB, .ch_size = n, .ch_addralign = 1 };
	z_stream z = { 0 };
	uint32_t adler = (uint32_t)(n % 65521) << 16 | 1;

	if (!head || mib < 2 || deflateInit(&z, 9) != Z_OK)
		goto out;
	/* the zlib header and the first MiB, then the second: the unit */
	z.next_in = zeros, z.avail_in = sizeof(zeros);
	z.next_out = head, z.avail_out = 1 << 16;
	deflate(&z, Z_FULL_FLUSH);
	head_len = (1 << 16) - z.avail_out;
	z.next_in = zeros, z.avail_in = sizeof(zeros);
	deflate(&z, Z_FULL_FLUSH);
	rep_len = (1 << 16) - z.avail_out - head_len;
	deflateEnd(&z);
	len = sizeof(ch) + head_len + rep_len * (mib - 1) + 2 + 4;
	out = malloc(len);
	if (!out)
		goto out;
	memcpy(out, &ch, sizeof(ch));
	memcpy(out + sizeof(ch), head, head_len);
	for (unsigned i = 0; i < mib - 1; i++)
		memcpy(out + sizeof(ch) + head_len + i * rep_len, head + head_len, rep_len);
	/* an empty final stored block, then the checksum (big-endian) */
	len = sizeof(ch) + head_len + rep_len * (mib - 1);
	out[len++] = 0x03, out[len++] = 0x00;
	for (int i = 3; i >= 0; i--)
		out[len++] = (unsigned char)(adler >> (8 * i));
	*ret_len = len;
out:
	free(head);
	return out;
}

static int gen_bomb(const char *src, unsigned mib, const char *dst, bool pad)
{
	FILE *f = fopen(src, "rb");
	unsigned char *elf = NULL, *payload = NULL;
	long size = -1;
	size_t plen = 0, off;
	int r = 1;

	if (f && fseek(f, 0, SEEK_END) == 0)
		size = ftell(f);
	if (size > 0 && (elf = malloc((size_t)size)) && fseek(f, 0, SEEK_SET) == 0 &&
		fread(elf, 1, (size_t)size, f) == (size_t)size)
		payload = bomb_payload(mib, &plen);
	if (f)
		fclose(f);
	if (!payload) {
		fprintf(stderr, "tracerd-gen: bomb: cannot read %s or make %u MiB\n", src, mib);
		goto out;
	}
	off = ((size_t)size + 7) & ~(size_t)7;
	if (!pad) {
		Elf64_Ehdr *eh = (Elf64_Ehdr *)elf;
		Elf64_Shdr *sh = (Elf64_Shdr *)(elf + eh->e_shoff), *str = sh + eh->e_shstrndx;
		unsigned i;

		for (i = 0; i < eh->e_shnum; i++)
			if (!strcmp((char *)elf + str->sh_offset + sh[i].sh_name, ".debug_info"))
				break;
		if (memcmp(elf, ELFMAG, SELFMAG) || elf[EI_CLASS] != ELFCLASS64 || i == eh->e_shnum) {
			fprintf(stderr, "tracerd-gen: bomb: %s has no .debug_info\n", src);
			goto out;
		}
		sh[i].sh_offset = off;
		sh[i].sh_size = plen;
		sh[i].sh_flags |= SHF_COMPRESSED;
		sh[i].sh_addralign = 8;
	}
	f = fopen(dst, "wb");
	if (!f || fwrite(elf, 1, (size_t)size, f) != (size_t)size ||
		fwrite("\0\0\0\0\0\0\0", 1, off - (size_t)size, f) != off - (size_t)size ||
		fwrite(payload, 1, plen, f) != plen || fclose(f) != 0 || chmod(dst, 0755) < 0)
		fprintf(stderr, "tracerd-gen: bomb: cannot write %s\n", dst);
	else
		r = 0;
out:
	free(elf);
	free(payload);
	return r;
}

int main(int argc, char **argv)
{
	struct gen_args a;
	long long total;

	if (argc >= 5 && !strcmp(argv[1], "bomb"))
		return gen_bomb(argv[2], (unsigned)strtoul(argv[3], NULL, 10), argv[4],
			argc > 5 && !strcmp(argv[5], "pad"));
	if (parse(argc, argv, &a))
		return 1;
	if (a.death >= 0)
		return gen_death(a.out, a.repo, (enum synth_death)a.death);
	if (a.so.waits == 1) {
		fprintf(stderr, "tracerd-gen: --waits needs at least 2 (one goes on across chunks)\n");
		return 1;
	}
	total = a.out ? gen_file(&a) : gen_repo(&a);
	if (total < 0)
		return 1;
	printf("%lld samples\n", total);
	return 0;
}
