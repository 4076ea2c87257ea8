/* The synthetic recording generator (see synth.h). */
#include "synth.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t rng_next(uint64_t *s)
{
	/* splitmix64 */
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static double rng_unit(uint64_t *s)
{
	return (double)(rng_next(s) >> 11) / (double)(1ull << 53);
}

static const char *const ns[] = { "acme", "storage", "net", "rpc", "util", "detail", "io", "sched" };
static const char *const cls[] = { "Dispatcher", "Handler", "Pool", "Session", "Codec", "Index",
	"Reactor", "Stream" };
static const char *const verbs[] = { "handle_batch", "process", "flush", "poll_once", "decode",
	"lookup", "on_ready", "run" };


long long synth_write(struct chunk_writer *w, const struct synth_opts *in, uint64_t start_ns)
{
	struct synth_opts o = *in;
	uint64_t rng, mapping;
	uint32_t *fn_loc = NULL, **stack_locs = NULL, *stack_ids = NULL, *depth = NULL;
	uint32_t *thread_ids = NULL, *last = NULL;
	double *cdf = NULL, total = 0;
	long long n = 0;
	int err = 0;
	static const uint8_t bid[20] = { 0xde, 0xad, 0xbe, 0xef, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10 };

	if (!o.threads)
		o.threads = 64;
	if (o.seconds <= 0)
		o.seconds = 60;
	if (!o.hz)
		o.hz = 99;
	if (!o.stacks)
		o.stacks = 4000;
	if (!o.min_depth)
		o.min_depth = 20;
	if (o.max_depth < o.min_depth)
		o.max_depth = o.min_depth > 60 ? o.min_depth : 60;
	if (o.zipf_s <= 0)
		o.zipf_s = 1.1;
	if (o.repeat <= 0)
		o.repeat = 0.6;
	if (o.functions < 9)
		o.functions = 600;
	const unsigned NFUNC = o.functions;
	rng = o.seed ? o.seed : 1;

	fn_loc = calloc(NFUNC, sizeof(*fn_loc));
	stack_locs = calloc(o.stacks, sizeof(*stack_locs));
	stack_ids = calloc(o.stacks, sizeof(*stack_ids));
	depth = calloc(o.stacks, sizeof(*depth));
	thread_ids = calloc(o.threads, sizeof(*thread_ids));
	last = calloc(o.threads, sizeof(*last));
	cdf = calloc(o.stacks, sizeof(*cdf));
	if (!fn_loc || !stack_locs || !stack_ids || !depth || !thread_ids || !last || !cdf) {
		err = -ENOMEM;
		goto out;
	}
	mapping = chunk_writer_mapping(w, &(struct chunk_mapping){ .start = 0x555500000000,
		.size = 0x400000, .path = "/usr/bin/acme-server", .build_id = bid,
		.build_id_len = sizeof(bid), .flags = TCF_MAP_HAS_LINES });
	for (unsigned f = 0; f < NFUNC; f++) {
		char name[512], file[128];
		uint32_t fid, inl;
		struct chunk_line lines[2];

		snprintf(name, sizeof(name),
			"%s::%s::%s<std::basic_string<char, std::char_traits<char>, "
			"std::allocator<char> >, %u>::%s_%u(std::vector<%s::Request, "
			"std::allocator<%s::Request> > const&, unsigned long)",
			ns[f % 8], ns[(f / 8) % 8], cls[(f / 3) % 8], f % 13, verbs[f % 8], f,
			ns[f % 8], ns[f % 8]);
		snprintf(file, sizeof(file), "src/%s/%s_%u.cc", ns[f % 8], cls[(f / 3) % 8], f % 50);
		fid = chunk_writer_function(w, name, NULL, file, 10 + f % 400);
		lines[0] = (struct chunk_line){ fid, 20 + f % 300, 0 };
		inl = f % 5 == 0 ? 1 : 0; /* every fifth has an inlined helper */
		if (inl) {
			snprintf(name, sizeof(name), "%s::detail::inline_helper_%u()", ns[f % 8], f);
			lines[1] = lines[0];
			lines[0] = (struct chunk_line){ chunk_writer_function(w, name, NULL, file, 5),
				7, 0 };
		}
		fn_loc[f] = chunk_writer_location(w, (uint32_t)mapping, 0x1000 + 0x40 * f, lines,
			1 + inl);
	}
	/* stacks: a shared root path, then random frames; popular ones are
	 * Zipf-distributed */
	for (unsigned s = 0; s < o.stacks; s++) {
		uint32_t d = o.min_depth + (uint32_t)(rng_next(&rng) % (o.max_depth - o.min_depth + 1));

		stack_locs[s] = calloc(d, sizeof(uint32_t));
		if (!stack_locs[s]) {
			err = -ENOMEM;
			goto out;
		}
		depth[s] = d;
		for (uint32_t k = 0; k < d; k++) {
			/* leaf first: the last 8 frames are the common root */
			uint32_t from_root = d - 1 - k;
			unsigned f = from_root < 8 ? from_root : (unsigned)(rng_next(&rng) % NFUNC);

			stack_locs[s][k] = fn_loc[f];
		}
		total += 1.0 / pow((double)(s + 1), o.zipf_s);
		cdf[s] = total;
	}
	for (unsigned t = 0; t < o.threads; t++) {
		char name[32];

		snprintf(name, sizeof(name), "worker-%u", t);
		thread_ids[t] = chunk_writer_thread(w, 10000 + t, 10000, name);
		chunk_writer_thread_event(w, start_ns, thread_ids[t], TCF_THREAD_START, 0);
	}
	{
		uint64_t ticks = (uint64_t)(o.seconds * o.hz), period = 1000000000u / o.hz;

		for (uint64_t k = 0; k < ticks && !err; k++) {
			uint64_t tick = start_ns + k * period;

			for (unsigned t = 0; t < o.threads && !err; t++) {
				uint32_t sid;
				enum tcf_state st = rng_unit(&rng) < 0.7 ? TCF_STATE_ONCPU :
									   TCF_STATE_SLEEPING;

				if (last[t] && rng_unit(&rng) < o.repeat) {
					sid = last[t];
				} else {
					double u = rng_unit(&rng) * total;
					unsigned lo = 0, hi = o.stacks - 1;

					while (lo < hi) {
						unsigned mid = (lo + hi) / 2;

						if (cdf[mid] < u)
							lo = mid + 1;
						else
							hi = mid;
					}
					if (!stack_ids[lo])
						stack_ids[lo] = chunk_writer_stack(w, stack_locs[lo],
							depth[lo]);
					sid = stack_ids[lo];
				}
				last[t] = sid;
				err = chunk_writer_sample(w,
					tick + (uint64_t)(rng_next(&rng) % 40000) - 20000 + 20000,
					thread_ids[t], st, sid, NULL, 0);
				n++;
				if (o.max_samples && (uint64_t)n >= o.max_samples)
					goto out;
			}
		}
	}
out:
	if (stack_locs)
		for (unsigned s = 0; s < o.stacks; s++)
			free(stack_locs[s]);
	free(stack_locs);
	free(fn_loc);
	free(stack_ids);
	free(depth);
	free(thread_ids);
	free(last);
	free(cdf);
	return err ? err : n;
}
