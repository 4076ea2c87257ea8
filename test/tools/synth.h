/* Realistic synthetic recordings for tests and benchmarks: many threads,
 * Zipf-distributed stacks 20-60 frames deep sharing prefixes, long
 * C++-style names, threads that keep their previous stack part of the
 * time, timing jitter; optionally a wall recording with wait episodes
 * (TCF 1.1 WAITS).  Deterministic for a seed. */
#ifndef TD_SYNTH_H
#define TD_SYNTH_H

#include <stdint.h>

#include "../../chunkfmt/chunkfmt.h"

struct synth_opts {
	unsigned threads;     /* default 64 */
	double seconds;	      /* default 60 */
	unsigned hz;	      /* default 99 */
	unsigned stacks;      /* candidate stacks, default 4000 */
	unsigned min_depth;   /* default 20 */
	unsigned max_depth;   /* default 60 */
	double zipf_s;	      /* default 1.1 */
	double repeat;	      /* P(same stack as the thread's last), default 0.6 */
	uint64_t seed;	      /* default 1 */
	uint64_t max_samples; /* stop after this many (0: no limit) */
	unsigned functions;   /* distinct functions, default 600 */
	/* A wall recording (sampling.mode wall) with this many WAITS
	 * episodes per chunk, 0 for none.  The writer must be opened with
	 * minor 1.  Thread 0 waits for a mutex from the last quarter of
	 * each chunk on (GOES_ON); in chunk > 0 that wait began in the
	 * chunk before (BEGAN_BEFORE): chunks are then back to back,
	 * chunk k starting at start_ns + k * synth_span_ns().  The other
	 * threads wait for every kind in turn, one episode at a time. */
	unsigned waits;	      /* >= 2; needs threads >= 2 */
	unsigned chunk;	      /* index of this chunk in the recording */
};

/* The time one chunk of synth_write spans: its ticks at hz. */
uint64_t synth_span_ns(const struct synth_opts *o);

/* Write samples (and thread start events; META and WAITS records for a
 * wall recording) into w starting at start_ns.  Returns the number of
 * samples written, or -errno (-EINVAL: waits that do not fit). */
long long synth_write(struct chunk_writer *w, const struct synth_opts *o, uint64_t start_ns);

#endif
