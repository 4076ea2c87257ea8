/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Private to report/: the merged profile. */
#ifndef TD_REPORT_INTERNAL_H
#define TD_REPORT_INTERNAL_H

#include "report.h"
#include "../common/buf.h"
#include "../common/map.h"

#include <stdlib.h>

struct rp_frame {
	uint64_t addr; /* the pc's address in its module's ELF file (its
			  location's); 0 unless the filter asked for addresses */
	uint32_t func, file, module; /* string ids; 0: unknown */
	/* string id of what every output that prints a stack calls it: func,
	 * or "func at FILE" where frames of one module give func two files
	 * (two static functions of one name): set once the chunks are read
	 * (name_frames), 0 while loading */
	uint32_t name;
	uint32_t line;
	uint32_t start_line; /* the function's; 0: unknown */
	bool inlined;
	bool kernel; /* a kernel frame: its module is one rp_kernel_module()
			names (set at loading, from the module) */
};

struct rp_node {
	uint32_t parent, frame;
	uint32_t first_child, next_sibling; /* built after loading */
	uint64_t count;			    /* samples ending here */
	uint64_t total;			    /* samples through here */
};

struct rp_thread {
	uint32_t pid, tid, name;
	uint64_t samples, first_ns, last_ns;
	uint64_t state_samples[8]; /* samples kept, by TCF_STATE_* */
	bool exited;
	int32_t exit_status;
};

/* Where a death's signal came from: a 1.2 row's tail (struct
 * chunk_sigsrc; comm a string id of the profile, 0 not read).  Unknown
 * for a row of an older chunk, whose address is si_addr whatever sent
 * the signal. */
struct rp_sigsrc {
	bool known;
	int32_t code;
	uint32_t pid, uid, comm;
};

struct rp_crash {
	uint32_t pid, tid, thread_name, node;
	int32_t signo;
	uint64_t addr, real_ns;
	struct rp_sigsrc src;
};

struct rp_exit {
	uint32_t pid;
	int32_t status, signo;
	uint64_t real_ns;
};

/* A thread's stack at its process's death: a DEATH_STACK row, or a CRASH
 * row (RP_DEATH_FROM_CRASH; the crashing thread's, the only one a
 * recording without death stacks has). */
enum { RP_DEATH_FROM_CRASH = 1u << 31 };
struct rp_death_stack {
	uint32_t pid, tid, name; /* name: string id */
	uint32_t node;		 /* line-level node; 0: not taken */
	uint32_t flags;		 /* TCF_DEATH_*, RP_DEATH_FROM_CRASH */
	int32_t signo;
	uint64_t addr, real_ns;
	struct rp_sigsrc src;
};

/* The OOM killer killed pid (an OOM_KILL row). */
struct rp_oom {
	uint32_t pid;
	uint64_t count, real_ns;
};

/* One kept sample, when the filter asked for time order. */
struct rp_seq {
	uint64_t real_ns;
	uint32_t thread, node;
};

/* What the chunks said of a module (by its short name). */
struct rp_module {
	uint32_t name, path, build_id; /* string ids; build-id in hex */
};

/* Is a mapping of this path the kernel's or a kernel module's (kernel.c)?
 * One rule for the whole report layer: frames whose module it names are
 * kernel frames (rp_frame.kernel). */
bool rp_kernel_module(const char *path);
/* One line for the stack of line-level node (leaf first, " <- " between
 * frames, escaped for text) that keeps the program's part in view: its
 * innermost max user frames, then "..." if more, then the kernel frames
 * below them folded to one mark "[kernel: NAME ...]" (kernel.c).  A
 * stack of kernel frames alone prints them as they are, max at most;
 * node 0 prints none (the caller says why). */
void rp_stack_line(FILE *out, const struct rp_profile *p, uint32_t node, unsigned max);
/* Is name one of the scheduler's functions (schedule, io_schedule,
 * rt_mutex_schedule, the switch...), which say nothing of what a blocked
 * thread waits for?  rp_stack_line's mark names the first other one. */
bool rp_kernel_scheduler(const char *name);
/* The node of the stack's innermost user frame: node less its kernel
 * frames; node itself when it has no user frame. */
uint32_t rp_user_node(const struct rp_profile *p, uint32_t node);
/* How many of the stack's frames, from its leaf, are kernel frames: a
 * stack lists its kernel frames before (inside) its user ones. */
unsigned rp_kernel_depth(const struct rp_profile *p, uint32_t node);

/* One wait episode (WAITS records; the parts of an episode that crossed
 * chunks merged), and who held its object. */
struct rp_wait {
	uint32_t thread, node; /* the waiter (index into threads), its stack */
	uint32_t kind;	       /* enum tcf_wait_kind */
	uint32_t what;	       /* string id: fd target, call; 0 none */
	uint64_t object, start_ns, wait_ns;
	uint32_t owner0, nowners; /* owners[owner0 .. +nowners) */
	bool began;		  /* its first part was read */
};
/* Where an owner's stack was taken (WAITS flag TCF_WAITF_OWNERS_HELD). */
enum rp_held {
	RP_HELD_UNKNOWN, /* before TCF 1.2: its first sample after the tick that
			  * found it owning, maybe after it let go */
	RP_HELD_STACK,	 /* while it held the object */
	RP_HELD_NONE,	 /* none was taken while it held it (node 0) */
};
struct rp_wait_owner {
	uint32_t thread, node;
	uint64_t wait_ns;
	uint32_t next; /* index + 1 of the next owner of the same episode */
	uint8_t held;  /* enum rp_held */
};

struct rp_profile {
	/* strings */
	char **strs;
	size_t nstrs, capstrs;
	struct td_map str_index; /* hash -> id (one entry per string: equal hashes repeat) */
	struct rp_frame *frames;
	size_t nframes, capframes;
	struct td_map frame_index; /* hash -> id, as str_index */
	struct rp_node *nodes; /* node 0 is the root; frames with lines */
	size_t nnodes, capnodes;
	struct td_map node_index; /* (parent, frame) -> id; only while loading */
	/* the same tree merged by function (no lines): what tree prints */
	struct rp_node *fnodes;
	size_t nfnodes;
	uint32_t *fnode_of;  /* line-level node -> function-level node */
	uint32_t *fnode_file; /* function-level node -> file string id */
	uint32_t *fnode_line;
	struct rp_thread *threads;
	size_t nthreads, capthreads;
	struct td_map thread_index;
	struct td_map thread_node; /* RP_TN_KEY(thread, state, node) -> count */
	struct rp_module *modules;
	size_t nmodules, capmodules;
	struct td_map module_index; /* name string id -> index + 1 */
	struct rp_crash *crashes;
	size_t ncrashes, capcrashes;
	struct rp_exit *exits;
	size_t nexits, capexits;
	/* deaths: read whatever the filters, shown for the dead processes */
	struct rp_death_stack *dstacks;
	size_t ndstacks, capdstacks;
	struct rp_oom *ooms;
	size_t nooms, capooms;
	/* The processes whose deaths the emergency dumps read record (their
	 * chunks' target_pid), and whether their chunks' samples were kept
	 * for them alone (no --pid given). */
	uint32_t dead_pids[16];
	unsigned ndead;
	bool restricted;
	/* the processes the report shows, as --pid or the restriction chose
	 * them (none: every one) */
	uint32_t shown_pids[16];
	unsigned nshown;
	struct rp_seq *seq; /* sorted by thread, then time */
	size_t nseq, capseq;
	uint64_t lost[5]; /* by enum tcf_lost_reason */
	uint64_t samples;
	uint64_t samples_all; /* read, whatever the filters: lost[]'s share is of these */
	uint64_t first_ns, last_ns;
	uint64_t execs;
	/* META kept as "key=value" strings, last one wins per key */
	uint32_t meta_hz, meta_host, meta_version, meta_capture;
	unsigned modes; /* RP_MODE_* bits of every sampling.mode read */
	uint64_t state_samples[8]; /* samples kept, by TCF_STATE_* */
	uint32_t cmdlines[16];
	uint32_t cmdline_pids[16];
	unsigned ncmdlines;
	struct rp_wait *waits;
	size_t nwaits, capwaits;
	struct rp_wait_owner *wowners;
	size_t nwowners, capwowners;
	struct td_map wait_index; /* hash(pid, tid, start, object) -> index + 1 */
	/* a wall chunk of TCF 1.1 or later was read: its waits were recorded,
	 * so none at all means nothing waited (not that nobody looked) */
	bool waits_recorded;
};

/* The wait episodes grouped by site: what was waited for (kind and
 * object) and the stack where the wait began, function by function and
 * without its kernel frames (rp_place), since every view prints a site's
 * stack by function with its kernel frames folded: the kernel's part of
 * one place in the program differs with the source of the stack (perf's
 * switch-out chain has the scheduler innermost, /proc/TID/stack not),
 * and would split one site into two rows that read the same.  Every view of the waits
 * (waits.c's text and JSON, the html page) reads them from here, so that
 * they agree.
 * owns: the sites, each one's durs and owners, site_of; borrows nothing
 * (indices into the profile's threads and nodes). */
/* The function-level node of a stack's user part (rp_user_node): what
 * tells two wait sites, or two stacks of an owner, apart. */
uint32_t rp_place(const struct rp_profile *p, uint32_t node);
struct rp_wait_site_owner {
	uint32_t thread, node; /* index into threads; its stack (line-level node) */
	uint64_t wait_ns;      /* of the site's waits, seen while it held the object */
	uint8_t held;	       /* enum rp_held of the stack */
};
struct rp_wait_site {
	uint32_t kind, node, what; /* enum tcf_wait_kind; the waiters' stack (its
				    * first episode's); string id */
	uint32_t place;		   /* the key's stack: rp_place() of node */
	uint64_t object, total_ns;
	uint64_t *durs; /* each episode's, shortest first */
	size_t n, cap;
	uint32_t threads[8]; /* the first waiters, indices into threads */
	unsigned nthreads, more_threads;
	/* one per owner and stack (function-level), longest first */
	struct rp_wait_site_owner *owners;
	size_t nowners, capowners;
};
struct rp_wait_sites {
	struct rp_wait_site *s; /* longest total first; ties in order of appearance */
	size_t n, cap;
	uint32_t *site_of;	  /* p->waits[i] belongs to s[site_of[i]] */
	uint64_t wait_ns, episodes; /* of every site */
};

/* Group p's wait episodes by site into *ret (free with
 * rp_wait_sites_free): 0 or -ENOMEM. */
int rp_wait_sites_build(const struct rp_profile *p, struct rp_wait_sites *ret);
/* NULL-safe; leaves an empty set. */
void rp_wait_sites_free(struct rp_wait_sites *S);
/* The duration below which q of the site's episodes fall (nearest rank). */
uint64_t rp_wait_site_quantile(const struct rp_wait_site *x, double q);

#define RP_TN_KEY(thread, state, node) ((((uint64_t)(thread) << 35) | ((uint64_t)(state) << 32) | (node)) + 1)
#define RP_TN_THREAD(key) ((uint32_t)(((key)-1) >> 35))
#define RP_TN_STATE(key) ((unsigned)((((key)-1) >> 32) & 7))
#define RP_TN_NODE(key) ((uint32_t)(((key)-1) & 0xffffffffu))

/* A string of the recording as its chunk holds it (JSON, pprof, html and
 * filters want the real bytes); NULL for id 0. */
const char *rp_str(const struct rp_profile *p, uint32_t id);
/* The same for a text format: control characters, invalid UTF-8 and '\\'
 * escaped (td_text_put), since it came from a target. */
const char *rp_text(const struct rp_profile *p, uint32_t id);
/* Does the report show process pid (--pid, or an emergency dump's)? */
bool rp_pid_shown(const struct rp_profile *p, uint32_t pid);
/* The death of each process an emergency dump records, for people: what
 * killed it, when, every thread's stack then (the crashing thread first),
 * and whether the report is restricted to it.  Nothing without a dump.
 * The text formats open with it (text.c). */
void rp_death_header(FILE *out, const struct rp_profile *p);
/* rp_signal_from (report.h) for a row of p (its comm a string id of p). */
void rp_signal_source(FILE *out, const struct rp_profile *p, uint32_t pid, int32_t signo,
	uint64_t addr, const struct rp_sigsrc *src, enum rp_sig_style style);
/* What a wait's object is, as the waits report prints it: an address
 * "0x...", a descriptor's number, "a set of fds", or "" (no object). */
void rp_wait_object_text(char *buf, size_t len, uint32_t kind, uint64_t object);
/* Children lists and totals (count plus the children's totals) of a tree
 * whose parents precede their children; node 0 is the root. */
void rp_link_tree(struct rp_node *nodes, size_t n);
const struct rp_module *rp_module_of(const struct rp_profile *p, uint32_t name);
/* Nanoseconds between samples of a running thread: the recording's rate
 * (META), else tracerd's default of 99 Hz. */
uint64_t rp_period_ns(const struct rp_profile *p);

/* What the recording's samples mean, from its sampling.mode META: one
 * mode, both (chunks of cpu and of wall recordings given together), or
 * none (recorded before tracerd had modes). */
#define RP_MODE_CPU 1u
#define RP_MODE_WALL 2u
/* The mode as a word: "cpu", "wall", "cpu+wall" or "unknown". */
const char *rp_mode_name(const struct rp_profile *p);
/* One sentence saying what a sample and a percentage mean. */
const char *rp_mode_meaning(const struct rp_profile *p);
/* The header of the text formats: the mode with its meaning, and in wall
 * mode where the threads' time went by state. */
void rp_mode_header(FILE *out, const struct rp_profile *p);

/* A 64-bit mixer (splitmix64's finalizer) for keys made of several
 * fields. */
static inline uint64_t rp_mix64(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

/* Sorting arrays that may be empty.  An empty array is often a NULL
 * pointer, and qsort(3) must never see one: its pointer arguments are
 * declared nonnull (the UBSan build aborts on any profile without
 * samples).  Every sort in report/ goes through these. */
static inline void rp_sort(void *base, size_t n, size_t size,
	int (*cmp)(const void *, const void *))
{
	if (n > 1)
		qsort(base, n, size, cmp);
}

static inline void rp_sort_r(void *base, size_t n, size_t size,
	int (*cmp)(const void *, const void *, void *), void *arg)
{
	if (n > 1)
		qsort_r(base, n, size, cmp, arg);
}

#endif
