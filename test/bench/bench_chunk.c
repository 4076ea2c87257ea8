/* SPDX-License-Identifier: GPL-2.0-or-later */
/* make bench, part 2: the chunk format on a synthetic recording of 64
 * threads at 99 Hz (Zipf stacks 20-60 deep, long C++ names): bytes per
 * sample all-in and in steady state, writer and reader speed.
 * usage: bench_chunk [SECONDS] */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "../../chunkfmt/chunkfmt.h"
#include "../tools/synth.h"

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 600;
	int fd = memfd_create("bench", MFD_CLOEXEC);
	struct chunk_writer_opts o = { .fd = fd };
	struct chunk_writer *w;
	struct synth_opts so = { .threads = 64, .hz = 99, .seconds = 30, .seed = 1 };
	uint64_t t0, t1, t2, b_warm, s_warm;
	struct chunk_report rep;
	long long n;
	void *map;
	off_t len;

	if (fd < 0 || chunk_writer_open(&o, &w) < 0)
		return 1;
	t0 = td_now_ns();
	if (synth_write(w, &so, 1000000000ull) < 0)
		return 1;
	chunk_writer_flush(w);
	b_warm = chunk_writer_bytes(w);
	s_warm = chunk_writer_samples(w);
	so.seconds = seconds;
	n = synth_write(w, &so, 40000000000ull);
	if (n < 0 || chunk_writer_finish(w, TCF_END_STOP, 0) < 0)
		return 1;
	t1 = td_now_ns();
	len = lseek(fd, 0, SEEK_END);
	map = mmap(NULL, (size_t)len, PROT_READ, MAP_PRIVATE, fd, 0);
	chunk_read_buffer(map, (size_t)len, NULL, NULL, &rep);
	t2 = td_now_ns();
	printf("\n== chunk format: 64 threads, 99 Hz, %.0f s + 30 s warm-up, synthetic Zipf stacks\n\n",
		seconds);
	printf("samples                         %llu\n", (unsigned long long)chunk_writer_samples(w));
	printf("bytes per sample, all-in        %.2f (file %lld bytes, one chunk)\n",
		(double)len / (double)chunk_writer_samples(w), (long long)len);
	printf("bytes per sample, steady state  %.2f (goal <= 4)\n",
		(double)(chunk_writer_bytes(w) - b_warm) / (double)(chunk_writer_samples(w) - s_warm));
	printf("write (generate + encode)       %.2f M samples/s\n",
		chunk_writer_samples(w) / ((t1 - t0) / 1e9) / 1e6);
	printf("read (decode, no visitor)       %.2f M samples/s, %llu samples, %u blocks\n",
		rep.samples / ((t2 - t1) / 1e9) / 1e6, (unsigned long long)rep.samples, rep.blocks);
	chunk_writer_free(w);
	return 0;
}
