/* Realistic synthetic recordings for tests and benchmarks: many threads,
 * Zipf-distributed stacks 20-60 frames deep sharing prefixes, long
 * C++-style names, threads that keep their previous stack part of the
 * time, timing jitter. Deterministic for a seed. */
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
};

/* Write samples (and thread start events) into w starting at start_ns.
 * Returns the number of samples written, or -errno. */
long long synth_write(struct chunk_writer *w, const struct synth_opts *o, uint64_t start_ns);

#endif
