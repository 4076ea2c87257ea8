/* SPDX-License-Identifier: GPL-2.0-or-later */
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

/* A death in a repository, as tracerd service leaves it: two processes
 * share it, 4242 "victim" (threads victim 4242 serving, io-worker 4243
 * reading, idle 4244 never seen running) and 5252 "bystander" (ticking);
 * a chunk of 10 ticks of 10 ms, then the death chunk (10 ticks, the
 * victim's main thread in alloc_buffer, then the rows of the death),
 * finished as a crash, and the emergency dump of 4242 (path in dump).
 *   OOM:  the death stacks at the exit stops (SIGKILL), the exit, and the
 *         OOM kill (oom_kill count 1);
 *   SEGV: the crash (signal 11 at 0x10, the victim's thread), the death
 *         stacks (io-worker's first, the victim's flagged faulting), the
 *         exit;
 *   KILL: SIGTERM sent with kill() by PID 812, comm "killer\e[31m" (a
 *         terminal escape: target input), uid 1000, taken by io-worker:
 *         the death stacks (io-worker's flagged, with the source: TCF 1.2,
 *         r opened with minor 2), the exit.
 * Times from start_ns (CLOCK_MONOTONIC); the death at start_ns + 200 ms.
 * Each chunk has 30 samples, 20 of them 4242's.  The repository stays
 * open, with no active chunk.  0 or -errno. */
enum synth_death { SYNTH_DEATH_OOM, SYNTH_DEATH_SEGV, SYNTH_DEATH_KILL };
int synth_death(struct repo *r, enum synth_death how, uint64_t start_ns, char *dump,
	size_t dump_len);

#endif
