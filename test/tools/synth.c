/* SPDX-License-Identifier: GPL-2.0-or-later */
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

static void defaults(struct synth_opts *o)
{
	if (!o->threads)
		o->threads = 64;
	if (o->seconds <= 0)
		o->seconds = 60;
	if (!o->hz)
		o->hz = 99;
	if (!o->stacks)
		o->stacks = 4000;
	if (!o->min_depth)
		o->min_depth = 20;
	if (o->max_depth < o->min_depth)
		o->max_depth = o->min_depth > 60 ? o->min_depth : 60;
	if (o->zipf_s <= 0)
		o->zipf_s = 1.1;
	if (o->repeat <= 0)
		o->repeat = 0.6;
	if (o->functions < 9)
		o->functions = 600;
}

uint64_t synth_span_ns(const struct synth_opts *in)
{
	struct synth_opts o = *in;

	defaults(&o);
	return (uint64_t)(o.seconds * o.hz) * (1000000000u / o.hz);
}

/* ---- wait episodes of a wall recording */

/* What the episodes wait for, in turn: every kind tracerd-chunk(5) names,
 * with the objects, "what" strings and owners the recorder would find,
 * and the libc frames (leaf first) of a thread waiting so. */
static const struct wait_spec {
	enum tcf_wait_kind kind;
	uint64_t object; /* fd: the descriptor */
	const char *what;
	unsigned owners; /* at most */
	const char *frames[2];
} wait_specs[] = {
	{ TCF_WAIT_MUTEX, 0x555500601040, NULL, 3, { "futex_wait", "___pthread_mutex_lock" } },
	{ TCF_WAIT_CONDVAR, 0x555500601080, NULL, 0,
		{ "__futex_abstimed_wait_common64", "___pthread_cond_wait" } },
	{ TCF_WAIT_FD, 7, "pipe:[4711]", 0, { "__GI___libc_read", NULL } },
	{ TCF_WAIT_JOIN, 0x7f3a1c5ff910, NULL, 1,
		{ "__futex_abstimed_wait_common64", "___pthread_join" } },
	{ TCF_WAIT_RWLOCK, 0x5555006010c0, NULL, 1, { "futex_wait", "__pthread_rwlock_rdlock_full64" } },
	{ TCF_WAIT_FD, 12, "socket:[90210]", 0, { "__libc_recv", NULL } },
	{ TCF_WAIT_SEMAPHORE, 0x555500601100, NULL, 0,
		{ "__futex_abstimed_wait_common64", "__new_sem_wait_slow64" } },
	{ TCF_WAIT_FUTEX, 0x555500601140, NULL, 0, { "syscall", NULL } },
	{ TCF_WAIT_SLEEP, 0, NULL, 0, { "__GI___clock_nanosleep", "__GI___nanosleep" } },
	{ TCF_WAIT_FD, UINT64_MAX, NULL, 0, { "__GI___select", NULL } }, /* a set */
	{ TCF_WAIT_SIGNAL, 0, NULL, 0, { "__libc_pause", NULL } },
	{ TCF_WAIT_DISK, 0, NULL, 0, { "__memmove_avx_unaligned_erms", NULL } },
	{ TCF_WAIT_OTHER, 0, "wait4", 0, { "__GI___wait4", NULL } },
	{ TCF_WAIT_FD, 3, "/var/lib/acme/journal", 0, { "__GI_fdatasync", NULL } },
};
/* thread 0's long wait, across chunks */
static const struct wait_spec long_wait = { TCF_WAIT_MUTEX, 0x555500601200, NULL, 2,
	{ "futex_wait", "___pthread_mutex_lock" } };
#define NSPECS (sizeof(wait_specs) / sizeof(wait_specs[0]))

/* Where a stack comes from: 0 none (unknown), pool stack k as k + 1, or
 * FIXED | f: function f called from the common root path, the same in
 * every chunk (a wait that goes on into the next chunk keeps its stacks). */
#define FIXED 0x80000000u

struct synth_wait {
	const struct wait_spec *spec;
	unsigned thread;
	uint64_t first, nticks; /* ticks of this chunk */
	uint64_t began_ns;	/* the first tick's time (an earlier chunk's) */
	uint32_t flags;		/* TCF_WAITF_* */
	uint32_t caller;	/* the stack the wait was called from */
	uint32_t stack;		/* the chunk's, defined at its first tick */
	unsigned nowners;
	unsigned owner[3]; /* thread index */
	uint32_t owner_stack[3];
	uint64_t owner_ticks[3];
};

/* What the waits' helpers share with synth_write (borrowed). */
struct synth_ctx {
	struct chunk_writer *w;
	const uint32_t *fn_loc, *depth, *thread_ids;
	uint32_t *const *stack_locs;
	uint32_t *stack_ids;
	const uint32_t *spec_locs; /* 2 per spec, long_wait's last */
	uint64_t period;
};

static unsigned zipf_pick(const double *cdf, unsigned n, double u)
{
	unsigned lo = 0, hi = n - 1;

	while (lo < hi) {
		unsigned mid = (lo + hi) / 2;

		if (cdf[mid] < u)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* The episodes of this chunk, sorted by thread, then first tick: thread
 * 0's long wait (its part before, if it began in an earlier chunk, and
 * the part that goes on), then o->waits less those spread over threads
 * 1.. in turn, each in its own slot of its thread's ticks. */
static int waits_plan(const struct synth_opts *o, uint64_t ticks, uint64_t start_ns,
	uint64_t period, const double *cdf, double total, uint64_t *rng, struct synth_wait **ret,
	size_t *ret_n)
{
	unsigned carried = o->chunk > 0, nreg, others = o->threads - 1;
	unsigned second = o->threads > 2 ? 2 : 1; /* who holds the long wait's mutex next */
	uint64_t q = ticks / 4;
	struct synth_wait *ep;
	size_t n = 0;

	if (o->waits < 2 || o->threads < 2 || q < 2)
		return -EINVAL;
	nreg = o->waits - 1 - carried;
	/* each thread's slots at least 4 ticks long */
	if ((uint64_t)((nreg + others - 1) / others) * 4 > ticks)
		return -EINVAL;
	ep = calloc(o->waits, sizeof(*ep));
	if (!ep)
		return -ENOMEM;
	/* the long wait: held by thread 1, then by the second, whose stack
	 * is unknown in the chunk where the wait began and known after */
	if (carried)
		ep[n++] = (struct synth_wait){ .spec = &long_wait, .thread = 0, .first = 0,
			.nticks = q / 2, .began_ns = start_ns - q * period,
			.flags = TCF_WAITF_BEGAN_BEFORE, .caller = FIXED | 8, .nowners = 1,
			.owner = { second }, .owner_stack = { FIXED | (10 % o->functions) },
			.owner_ticks = { q / 2 } };
	ep[n++] = (struct synth_wait){ .spec = &long_wait, .thread = 0, .first = ticks - q,
		.nticks = q, .began_ns = start_ns + (ticks - q) * period,
		.flags = TCF_WAITF_GOES_ON, .caller = FIXED | 8, .nowners = second == 2 ? 2 : 1,
		.owner = { 1, second }, .owner_stack = { FIXED | (9 % o->functions), 0 },
		.owner_ticks = { second == 2 ? (q + 1) / 2 : q, q / 2 } };
	for (unsigned t = 1; t < o->threads; t++) {
		/* regular episodes r = t - 1, t - 1 + others, ... */
		unsigned m = nreg >= t ? (nreg - t) / others + 1 : 0;
		uint64_t slot = m ? ticks / m : 0;

		for (unsigned j = 0; j < m; j++) {
			unsigned r = t - 1 + j * others;
			struct synth_wait *e = &ep[n++];

			e->spec = &wait_specs[(r + (size_t)o->chunk * nreg) % NSPECS];
			e->thread = t;
			e->first = j * slot + rng_next(rng) % (slot / 4);
			e->nticks = 1 + rng_next(rng) % (slot / 2);
			e->began_ns = start_ns + e->first * period;
			e->caller = 1 + zipf_pick(cdf, o->stacks, rng_unit(rng) * total);
			e->nowners = e->spec->owners;
			if (e->nowners > others)
				e->nowners = others;
			for (unsigned k = 0; k < e->nowners; k++) {
				/* the holders in turn; the third one's stack unknown */
				e->owner[k] = (t + 1 + k) % o->threads;
				e->owner_stack[k] =
					k < 2 ? 1 + zipf_pick(cdf, o->stacks, rng_unit(rng) * total) : 0;
				e->owner_ticks[k] = e->nticks / e->nowners +
						    (k == 0 ? e->nticks % e->nowners : 0);
			}
		}
	}
	*ret = ep;
	*ret_n = n;
	return 0;
}

/* The locations of stack src (not 0), leaf first, after n of locs. */
static unsigned src_locs(const struct synth_ctx *c, uint32_t src, uint32_t *locs, unsigned n,
	unsigned cap)
{
	if (src & FIXED) {
		locs[n++] = c->fn_loc[src & ~FIXED];
		for (unsigned f = 8; f-- > 0;) /* the root path, as in the pool */
			locs[n++] = c->fn_loc[f];
	} else {
		unsigned d = c->depth[src - 1];

		if (d > cap - n)
			d = cap - n;
		memcpy(locs + n, c->stack_locs[src - 1], d * sizeof(*locs));
		n += d;
	}
	return n;
}

static uint32_t src_stack(const struct synth_ctx *c, uint32_t src)
{
	uint32_t locs[16];

	if (!src)
		return 0;
	if (!(src & FIXED)) {
		if (!c->stack_ids[src - 1])
			c->stack_ids[src - 1] =
				chunk_writer_stack(c->w, c->stack_locs[src - 1], c->depth[src - 1]);
		return c->stack_ids[src - 1];
	}
	return chunk_writer_stack(c->w, locs, src_locs(c, src, locs, 0, 16));
}

/* The waiter's stack: the spec's libc frames on top of its caller's. */
static uint32_t wait_stack(const struct synth_ctx *c, const struct synth_wait *e)
{
	size_t k = e->spec == &long_wait ? NSPECS : (size_t)(e->spec - wait_specs);
	uint32_t locs[512];
	unsigned n = 0;

	for (unsigned f = 0; f < 2 && e->spec->frames[f]; f++)
		locs[n++] = c->spec_locs[2 * k + f];
	n = src_locs(c, e->caller, locs, n, 512);
	return chunk_writer_stack(c->w, locs, n);
}

static int wait_write(const struct synth_ctx *c, const struct synth_wait *e)
{
	struct chunk_wait cw = { .time_ns = e->began_ns, .wait_ns = e->nticks * c->period,
		.thread_id = c->thread_ids[e->thread], .stack_id = e->stack,
		.kind = e->spec->kind, .flags = e->flags, .object = e->spec->object,
		.nowners = e->nowners };

	if (e->spec->what)
		cw.what = chunk_writer_string(c->w, e->spec->what);
	for (unsigned k = 0; k < e->nowners; k++)
		cw.owners[k] = (struct chunk_wait_owner){ c->thread_ids[e->owner[k]],
			src_stack(c, e->owner_stack[k]), e->owner_ticks[k] * c->period };
	return chunk_writer_wait(c->w, &cw);
}

/* ---- the recording (synth_write) */

/* One synth_write's state.  owns: every array (gen_free); borrows: w. */
struct gen {
	struct synth_opts o;
	struct chunk_writer *w;
	uint64_t ticks, period;
	uint64_t rng, wrng; /* the samples' stream; the waits' own */
	uint32_t mapping, libc;
	uint32_t *fn_loc;		  /* function -> its location */
	uint32_t **stack_locs, *depth;	  /* the pool of stacks, leaf first */
	uint32_t *stack_ids;		  /* a pool stack's id once written, else 0 */
	double *cdf, total;		  /* the pool's Zipf weights, summed up */
	uint32_t *thread_ids, *last;	  /* per thread: its id, its last stack */
	struct synth_wait *ep;		  /* the episodes (waits_plan) */
	size_t nep, *cur, *end;		  /* per thread: its episodes [cur, end) */
	uint32_t spec_locs[2 * (NSPECS + 1)]; /* the waits' libc frames */
	struct synth_ctx ctx;
};

static int gen_alloc(struct gen *g)
{
	g->fn_loc = calloc(g->o.functions, sizeof(*g->fn_loc));
	g->stack_locs = calloc(g->o.stacks, sizeof(*g->stack_locs));
	g->stack_ids = calloc(g->o.stacks, sizeof(*g->stack_ids));
	g->depth = calloc(g->o.stacks, sizeof(*g->depth));
	g->thread_ids = calloc(g->o.threads, sizeof(*g->thread_ids));
	g->last = calloc(g->o.threads, sizeof(*g->last));
	g->cdf = calloc(g->o.stacks, sizeof(*g->cdf));
	g->cur = calloc(g->o.threads, sizeof(*g->cur));
	g->end = calloc(g->o.threads, sizeof(*g->end));
	if (!g->fn_loc || !g->stack_locs || !g->stack_ids || !g->depth || !g->thread_ids ||
		!g->last || !g->cdf || !g->cur || !g->end)
		return -ENOMEM;
	return 0;
}

static void gen_free(struct gen *g)
{
	if (g->stack_locs)
		for (unsigned s = 0; s < g->o.stacks; s++)
			free(g->stack_locs[s]);
	free(g->stack_locs);
	free(g->fn_loc);
	free(g->stack_ids);
	free(g->depth);
	free(g->thread_ids);
	free(g->last);
	free(g->cdf);
	free(g->cur);
	free(g->end);
	free(g->ep);
}

/* The META of a wall recording, the mappings, and a location for each
 * function, with long C++-style names (every fifth with an inlined
 * helper). */
static void define_code(struct gen *g)
{
	static const uint8_t bid[20] = { 0xde, 0xad, 0xbe, 0xef, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10 };
	struct chunk_writer *w = g->w;

	if (g->o.waits) {
		char hz[16];

		snprintf(hz, sizeof(hz), "%u", g->o.hz);
		chunk_writer_meta(w, "sampling.hz", hz);
		chunk_writer_meta(w, "sampling.mode", "wall");
		chunk_writer_meta(w, "sampling.capture", "proc+perf");
	}
	g->mapping = chunk_writer_mapping(w, &(struct chunk_mapping){ .start = 0x555500000000,
		.size = 0x400000, .path = "/usr/bin/acme-server", .build_id = bid,
		.build_id_len = sizeof(bid), .flags = TCF_MAP_HAS_LINES });
	if (g->o.waits)
		g->libc = chunk_writer_mapping(w, &(struct chunk_mapping){ .start = 0x7f3a1c600000,
			.size = 0x1c0000, .path = "/usr/lib/x86_64-linux-gnu/libc.so.6" });
	for (unsigned f = 0; f < g->o.functions; f++) {
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
		inl = f % 5 == 0 ? 1 : 0;
		if (inl) {
			snprintf(name, sizeof(name), "%s::detail::inline_helper_%u()", ns[f % 8], f);
			lines[1] = lines[0];
			lines[0] = (struct chunk_line){ chunk_writer_function(w, name, NULL, file, 5),
				7, 0 };
		}
		g->fn_loc[f] = chunk_writer_location(w, g->mapping, 0x1000 + 0x40 * f, lines,
			1 + inl);
	}
}

/* The pool of stacks: a shared root path, then random frames; popular
 * ones are Zipf-distributed.  Only their locations: a stack is defined in
 * the chunk when a sample first takes it. */
static int make_stacks(struct gen *g)
{
	for (unsigned s = 0; s < g->o.stacks; s++) {
		uint32_t d = g->o.min_depth +
			     (uint32_t)(rng_next(&g->rng) % (g->o.max_depth - g->o.min_depth + 1));

		g->stack_locs[s] = calloc(d, sizeof(uint32_t));
		if (!g->stack_locs[s])
			return -ENOMEM;
		g->depth[s] = d;
		for (uint32_t k = 0; k < d; k++) {
			/* leaf first: the last 8 frames are the common root */
			uint32_t from_root = d - 1 - k;
			unsigned f = from_root < 8 ? from_root :
						     (unsigned)(rng_next(&g->rng) % g->o.functions);

			g->stack_locs[s][k] = g->fn_loc[f];
		}
		g->total += 1.0 / pow((double)(s + 1), g->o.zipf_s);
		g->cdf[s] = g->total;
	}
	return 0;
}

static void define_threads(struct gen *g, uint64_t start_ns)
{
	for (unsigned t = 0; t < g->o.threads; t++) {
		char name[32];

		snprintf(name, sizeof(name), "worker-%u", t);
		g->thread_ids[t] = chunk_writer_thread(g->w, 10000 + t, 10000, name);
		chunk_writer_thread_event(g->w, start_ns, g->thread_ids[t], TCF_THREAD_START, 0);
	}
}

/* The episodes of a wall recording, each thread's range of them, and the
 * libc frames of every kind of wait. */
static int plan_waits(struct gen *g, uint64_t start_ns)
{
	int err = waits_plan(&g->o, g->ticks, start_ns, g->period, g->cdf, g->total, &g->wrng,
		&g->ep, &g->nep);

	if (err)
		return err;
	for (size_t e = g->nep; e-- > 0;)
		g->cur[g->ep[e].thread] = e;
	for (size_t e = 0; e < g->nep; e++)
		g->end[g->ep[e].thread] = e + 1;
	for (unsigned k = 0; k <= NSPECS; k++) {
		const struct wait_spec *sp = k < NSPECS ? &wait_specs[k] : &long_wait;

		for (unsigned f = 0; f < 2 && sp->frames[f]; f++) {
			uint32_t fid = chunk_writer_function(g->w, sp->frames[f], NULL, NULL, 0);

			g->spec_locs[2 * k + f] = chunk_writer_location(g->w, g->libc,
				0x7f3a1c628000 + 0x100 * (2 * k + f),
				&(struct chunk_line){ fid, 0, 0 }, 1);
		}
	}
	return 0;
}

/* Thread t's sample at tick k (and the end of its episode, if this tick
 * ends one): 0 or -errno. */
static int sample_one(struct gen *g, unsigned t, uint64_t k, uint64_t tick)
{
	struct synth_wait *e = NULL;
	uint32_t sid;
	double u = rng_unit(&g->rng);
	enum tcf_state st = u < 0.7 ? TCF_STATE_ONCPU : TCF_STATE_SLEEPING;
	int err;

	if (g->last[t] && rng_unit(&g->rng) < g->o.repeat) {
		sid = g->last[t];
	} else {
		unsigned lo = zipf_pick(g->cdf, g->o.stacks, rng_unit(&g->rng) * g->total);

		if (!g->stack_ids[lo])
			g->stack_ids[lo] = chunk_writer_stack(g->w, g->stack_locs[lo], g->depth[lo]);
		sid = g->stack_ids[lo];
	}
	g->last[t] = sid;
	if (g->o.waits) {
		size_t *cur = &g->cur[t];

		/* a wall recording: a thread off its waits runs or waits for a
		 * CPU; in one, it sleeps where it waits */
		st = u < 0.85 ? TCF_STATE_ONCPU : TCF_STATE_RUNNABLE;
		while (*cur < g->end[t] && g->ep[*cur].first + g->ep[*cur].nticks <= k)
			(*cur)++;
		if (*cur < g->end[t] && g->ep[*cur].first <= k)
			e = &g->ep[*cur];
	}
	if (e) {
		if (!e->stack)
			e->stack = wait_stack(&g->ctx, e);
		st = TCF_STATE_SLEEPING;
		sid = e->stack;
	}
	err = chunk_writer_sample(g->w, tick + (uint64_t)(rng_next(&g->rng) % 40000) - 20000 + 20000,
		g->thread_ids[t], st, sid, NULL, 0);
	/* an episode is written when it ends, as the recorder does */
	if (!err && e && e->first + e->nticks == k + 1 && !(e->flags & TCF_WAITF_GOES_ON))
		err = wait_write(&g->ctx, e);
	return err;
}

long long synth_write(struct chunk_writer *w, const struct synth_opts *in, uint64_t start_ns)
{
	struct gen g = { .o = *in, .w = w };
	long long n = 0;
	int err;

	defaults(&g.o);
	g.ticks = (uint64_t)(g.o.seconds * g.o.hz);
	g.period = 1000000000u / g.o.hz;
	g.rng = g.o.seed ? g.o.seed : 1;
	g.wrng = g.rng ^ 0x5741495453ull; /* the waits' own stream: samples stay as without */
	err = gen_alloc(&g);
	if (err)
		goto out;
	define_code(&g);
	err = make_stacks(&g);
	if (err)
		goto out;
	define_threads(&g, start_ns);
	g.ctx = (struct synth_ctx){ w, g.fn_loc, g.depth, g.thread_ids, g.stack_locs, g.stack_ids,
		g.spec_locs, g.period };
	if (g.o.waits && (err = plan_waits(&g, start_ns)))
		goto out;
	for (uint64_t k = 0; k < g.ticks && !err; k++) {
		for (unsigned t = 0; t < g.o.threads && !err; t++) {
			err = sample_one(&g, t, k, start_ns + k * g.period);
			n++;
			if (g.o.max_samples && (uint64_t)n >= g.o.max_samples)
				goto out; /* the episodes going on are not written */
		}
	}
	/* and those still going on when the chunk ends */
	for (size_t e = 0; e < g.nep && !err; e++)
		if (g.ep[e].flags & TCF_WAITF_GOES_ON)
			err = wait_write(&g.ctx, &g.ep[e]);
out:
	gen_free(&g);
	return err ? err : n;
}

/* ---- a death and its emergency dump (synth_death) */

struct death_ids {
	uint32_t serve, alloc, io, tick;	      /* stacks */
	uint32_t victim, worker, idle, bystander; /* threads */
};

static uint32_t death_loc(struct chunk_writer *w, uint32_t map, const char *fn, uint32_t line,
	uint64_t addr)
{
	uint32_t f = chunk_writer_function(w, fn, NULL, "victim.c", line - 2);

	return chunk_writer_location(w, map, addr, &(struct chunk_line){ f, line, 0 }, 1);
}

/* Every chunk defines what it uses. */
static int death_defs(struct chunk_writer *w, struct death_ids *s)
{
	uint32_t map = chunk_writer_mapping(w, &(struct chunk_mapping){ .start = 0x400000,
		.size = 0x10000, .path = "/usr/bin/victim", .flags = TCF_MAP_HAS_LINES });
	uint32_t l_main = death_loc(w, map, "main", 12, 0x401010),
		 l_serve = death_loc(w, map, "serve", 30, 0x401100),
		 l_handle = death_loc(w, map, "handle_request", 52, 0x401200),
		 l_alloc = death_loc(w, map, "alloc_buffer", 77, 0x401300),
		 l_io = death_loc(w, map, "io_loop", 90, 0x401400),
		 l_read = death_loc(w, map, "read_block", 101, 0x401500),
		 l_tick = death_loc(w, map, "bystander_tick", 140, 0x401600);

	*s = (struct death_ids){
		.serve = chunk_writer_stack(w, (uint32_t[]){ l_handle, l_serve, l_main }, 3),
		.alloc = chunk_writer_stack(w, (uint32_t[]){ l_alloc, l_handle, l_serve, l_main }, 4),
		.io = chunk_writer_stack(w, (uint32_t[]){ l_read, l_io, l_main }, 3),
		.tick = chunk_writer_stack(w, (uint32_t[]){ l_tick, l_main }, 2),
		.victim = chunk_writer_thread(w, 4242, 4242, "victim"),
		.worker = chunk_writer_thread(w, 4243, 4242, "io-worker"),
		.idle = chunk_writer_thread(w, 4244, 4242, "idle"),
		.bystander = chunk_writer_thread(w, 5252, 5252, "bystander"),
	};
	chunk_writer_meta(w, "sampling.mode", "cpu");
	chunk_writer_meta(w, "sampling.hz", "100");
	return chunk_writer_error(w);
}

static int death_ticks(struct chunk_writer *w, const struct death_ids *s, uint64_t t,
	uint32_t victim_stack)
{
	int e = 0;

	for (unsigned k = 0; k < 10 && !e; k++, t += 10000000) {
		e = chunk_writer_sample(w, t, s->victim, TCF_STATE_ONCPU, victim_stack, NULL, 0);
		if (!e)
			e = chunk_writer_sample(w, t, s->worker, TCF_STATE_ONCPU, s->io, NULL, 0);
		if (!e)
			e = chunk_writer_sample(w, t, s->bystander, TCF_STATE_ONCPU, s->tick, NULL,
				0);
	}
	return e;
}

int synth_death(struct repo *r, enum synth_death how, uint64_t t, char *dump, size_t dump_len)
{
	struct chunk_writer *w;
	struct death_ids s;
	unsigned chunks;
	uint64_t bytes;
	int e;

	if (!(w = repo_writer(r)))
		return repo_error(r);
	if ((e = death_defs(w, &s)) || (e = death_ticks(w, &s, t, s.serve)) ||
		(e = repo_rotate(r, TCF_END_ROTATE)))
		return e;
	if (!(w = repo_writer(r)))
		return repo_error(r);
	if ((e = death_defs(w, &s)) || (e = death_ticks(w, &s, t + 100000000, s.alloc)))
		return e;
	t += 200000000;
	if (how == SYNTH_DEATH_SEGV) {
		/* at the fatal signal: the crash, then every thread's stack */
		chunk_writer_process_event(w, t, 4242, TCF_PROC_CRASH, 0, 11, 0x10, s.victim,
			s.alloc);
		chunk_writer_death_stack(w, t, 4242, 11, s.worker, s.io, 0, 0);
		chunk_writer_death_stack(w, t, 4242, 11, s.victim, s.alloc, TCF_DEATH_FAULTING,
			0x10);
		chunk_writer_death_stack(w, t, 4242, 11, s.idle, 0, 0, 0);
		chunk_writer_process_event(w, t + 3000000, 4242, TCF_PROC_EXIT, -1, 11, 0, 0, 0);
	} else if (how == SYNTH_DEATH_KILL) {
		/* kill(4242, SIGTERM) from 812: the thread that took it says
		 * so, the others die at their exit stops */
		struct chunk_sigsrc src = { .code = 0 /* SI_USER */, .pid = 812, .uid = 1000,
			.comm = chunk_writer_string(w, "killer\x1b[31m") };

		chunk_writer_death_stack(w, t, 4242, 15, s.victim, s.alloc, 0, 0);
		chunk_writer_process_event_src(w, t, 4242, TCF_PROC_DEATH_STACK,
			TCF_DEATH_FAULTING, 15, 0, s.worker, s.io, &src);
		chunk_writer_death_stack(w, t, 4242, 15, s.idle, 0, 0, 0);
		chunk_writer_process_event(w, t + 3000000, 4242, TCF_PROC_EXIT, -1, 15, 0, 0, 0);
	} else {
		/* SIGKILL: the stacks at the exit stops, the exit, then the
		 * cgroup's oom_kill count that rose */
		chunk_writer_death_stack(w, t, 4242, 9, s.victim, s.alloc, 0, 0);
		chunk_writer_death_stack(w, t, 4242, 9, s.worker, s.io, 0, 0);
		chunk_writer_death_stack(w, t, 4242, 9, s.idle, 0, 0, 0);
		chunk_writer_process_event(w, t + 3000000, 4242, TCF_PROC_EXIT, -1, 9, 0, 0, 0);
		chunk_writer_oom_kill(w, t + 3000000, 4242, 1);
	}
	if ((e = chunk_writer_error(w)) || (e = repo_rotate(r, TCF_END_TARGET_CRASH)))
		return e;
	return repo_emergency_into(r, 4242, 0, dump, dump_len, &chunks, &bytes);
}
