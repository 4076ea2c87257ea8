/* SPDX-License-Identifier: GPL-2.0-or-later */
/* tracerd chunk format (TCF v1): writer and reader, and the repository
 * (rotation, retention, snapshots, emergency concatenation).  Specified
 * record by record in tracerd-chunk(5); the design and its reasons are
 * there too.
 *
 * chunkfmt/ owns every file name and every byte on disk; nothing else
 * opens a chunk.  It never touches a target, never sees stack bytes, and
 * never prints to people.
 *
 *   chunk := HEADER(112) BLOCK* [TRAILER(32)]   (trailer iff finished)
 *   file  := chunk+                              (concatenation is valid)
 *   BLOCK := BLOCK_HEADER(40) RECORD*            (the commit unit, CRC32C)
 *
 * Guarantees: the header is never rewritten; a block is written with one
 * write() and trusted only when both its CRCs match, so any byte prefix of a
 * chunk decodes to exactly the samples of its complete blocks; definitions
 * (strings, mappings, functions, locations, stack nodes, threads) precede
 * every use inside the chunk, so each chunk is self-contained; a damaged
 * block costs only itself.  No raw stack memory is ever written: the writer
 * takes frames, not bytes. */
#ifndef TD_CHUNKFMT_H
#define TD_CHUNKFMT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "../common/td.h"

#define TCF_MAJOR 1
#define TCF_MINOR 0
#define TCF_HEADER_LEN 112
#define TCF_BLOCK_HEADER_LEN 40
#define TCF_TRAILER_LEN 32
#define TCF_MAX_PAYLOAD (16u << 20) /* reader bound on one block */
#define TCF_MAX_VALUES 64	    /* reader bound on values per sample and sample types */

/* Record types (tag = type << 1 | must_understand).  Never reuse a number. */
enum tcf_record {
	TCF_REC_META = 1,
	TCF_REC_STRINGS = 2,
	TCF_REC_MAPPINGS = 3,
	TCF_REC_FUNCTIONS = 4,
	TCF_REC_LOCATIONS = 5,
	TCF_REC_STACK_NODES = 6,
	TCF_REC_THREADS = 7,
	TCF_REC_THREAD_EVENTS = 8,
	TCF_REC_SAMPLE_TYPES = 9,
	TCF_REC_SAMPLES = 10,
	TCF_REC_CLOCK_SYNC = 11,
	TCF_REC_LOST = 12,
	TCF_REC_PROCESS_EVENT = 13,
	TCF_REC_CHUNK_END = 14,
	TCF_REC_INDEX = 15,
	TCF_REC_WAITS = 16, /* since 1.1 */
	TCF_REC_MAX_KNOWN = 16,
};

/* What a wait episode waited for (WAITS records); the names are
 * wait_kind_name()'s.  Never renumber. */
enum tcf_wait_kind {
	TCF_WAIT_OTHER = 0,
	TCF_WAIT_MUTEX = 1,
	TCF_WAIT_RWLOCK = 2,
	TCF_WAIT_CONDVAR = 3,
	TCF_WAIT_SEMAPHORE = 4,
	TCF_WAIT_JOIN = 5,
	TCF_WAIT_FUTEX = 6,
	TCF_WAIT_FD = 7,
	TCF_WAIT_SLEEP = 8,
	TCF_WAIT_SIGNAL = 9,
	TCF_WAIT_DISK = 10,
	TCF_WAIT_GIL = 11, /* CPython's global interpreter lock */
	TCF_WAIT_MAX = 11,
};
enum {
	TCF_WAITF_BEGAN_BEFORE = 1u << 0, /* began in an earlier chunk */
	TCF_WAITF_GOES_ON = 1u << 1,	  /* still waiting when the chunk ended */
	/* since 1.2: each owner's stack was taken while it held the object
	 * (after the tick that found it owning, before a tick that saw the
	 * object's words change); stack_id 0: none was.  Without it (1.1),
	 * an owner's stack is its first sample after that tick, which may
	 * come after it let go. */
	TCF_WAITF_OWNERS_HELD = 1u << 2,
};
#define TCF_WAIT_MAX_OWNERS 8

/* One wait episode of a thread: from the first tick that found it blocked
 * on an object to the last, wait_ns = the ticks' periods (tick
 * resolution).  Owners: who held the object at those ticks, with the
 * wait time seen while each held it and its stack then (with
 * TCF_WAITF_OWNERS_HELD: taken while it held it, 0 if none was). */
struct chunk_wait {
	uint64_t time_ns; /* the first tick that saw it */
	uint64_t wait_ns;
	uint32_t thread_id, stack_id; /* the waiter, where it waits */
	enum tcf_wait_kind kind;
	uint32_t flags;	  /* TCF_WAITF_* */
	uint64_t object;  /* address; fd: the descriptor, 2^64-1 a set */
	uint32_t what;	  /* string id: fd target, system call; 0 none */
	unsigned nowners; /* <= TCF_WAIT_MAX_OWNERS */
	struct chunk_wait_owner {
		uint32_t thread_id, stack_id;
		uint64_t wait_ns;
	} owners[TCF_WAIT_MAX_OWNERS];
};

enum tcf_state { /* 3 bits in a sample row */
	TCF_STATE_ONCPU = 0,
	TCF_STATE_RUNNABLE = 1,
	TCF_STATE_SLEEPING = 2,
	TCF_STATE_DISK = 3,
	TCF_STATE_STOPPED = 4,
	TCF_STATE_DEAD = 5,
	TCF_STATE_UNKNOWN = 7,
};

enum tcf_thread_event { TCF_THREAD_START = 0, TCF_THREAD_EXIT = 1, TCF_THREAD_RENAME = 2 };
/* PROCESS_EVENT kinds.  Readers ignore a kind they do not know (every
 * tracerd reader has, since 1.0): new kinds need no new minor.  Never
 * renumber.
 *   EXEC, EXIT (status: exit code or -1; signo: the killing signal), CRASH
 *   (signo, fault_addr, the crashing thread and its stack; at the fatal
 *   signal's delivery, before the process dies of it);
 *   DEATH_STACK: one per thread of a dying process, the stack it had when
 *   the process died (at the fatal signal, or at the exit stop of a
 *   SIGKILL): signo the fatal signal, status TCF_DEATH_* flags, fault_addr
 *   the faulting thread's (else 0), stack_id 0 if it could not be taken;
 *   OOM_KILL: the kernel's OOM killer killed pid (SIGKILL and the oom_kill
 *   count of its cgroup's memory.events rose): signo SIGKILL, the event's
 *   count (the fault_addr field on disk) that oom_kill count, 0 unknown.
 * Since 1.2 a CRASH row, and the DEATH_STACK row of the thread that took
 * the fatal signal, may end with where the signal came from (struct
 * chunk_sigsrc); fault_addr is then a fault's address or 0.  Earlier
 * rows have none: their fault_addr is si_addr whatever the signal's
 * source (for a kill(), the sender's PID and uid). */
enum tcf_process_event {
	TCF_PROC_EXEC = 0,
	TCF_PROC_EXIT = 1,
	TCF_PROC_CRASH = 2,
	TCF_PROC_DEATH_STACK = 3,
	TCF_PROC_OOM_KILL = 4,
};
/* DEATH_STACK status bits; readers ignore bits they do not know. */
enum {
	TCF_DEATH_FAULTING = 1u << 0, /* the thread the fatal signal was for (the
				       * crashing thread; since 1.2 also for a
				       * signal sent); none for SIGKILL */
};
enum tcf_lost_reason {
	TCF_LOST_RING_FULL = 0,
	TCF_LOST_UNWIND_FAILED = 1,
	TCF_LOST_THROTTLED = 2,
	TCF_LOST_NOT_STOPPED = 3,
	/* periods of CPU time (schedstat) that no sample carries: a
	 * ptrace capture that did not catch the thread running; readers
	 * before it ignore it */
	TCF_LOST_CPU_MISSED = 4,
};
enum tcf_end_reason {
	TCF_END_ROTATE = 0,
	TCF_END_STOP = 1,
	TCF_END_TARGET_EXIT = 2,
	TCF_END_TARGET_CRASH = 3,
	TCF_END_SHUTDOWN = 4,
	TCF_END_RECOVERED = 5,
	TCF_END_DICT_FULL = 6,
};
enum { TCF_HDR_RECOVERED = 1u << 0, TCF_HDR_EMERGENCY = 1u << 1 };
enum { TCF_MAP_DELETED = 1u << 0, TCF_MAP_VDSO = 1u << 1, TCF_MAP_HAS_LINES = 1u << 2 };

const char *tcf_record_name(unsigned type);
/* "mutex", "rwlock", ... for enum tcf_wait_kind; "other" if unknown */
const char *tcf_wait_kind_name(unsigned kind);
const char *tcf_end_reason_name(unsigned reason);
const char *tcf_lost_reason_name(unsigned reason);
const char *tcf_state_name(unsigned state);

/* ---------------------------------------------------------------- writer */

/* Output for the writer: one call per block (all or an error).  Default:
 * write(2) to fd through common/'s fault-injectable td_write_all. */
struct chunk_writer_opts {
	int fd;			   /* borrowed */
	uint8_t session_id[16];	   /* zero: random */
	uint64_t chunk_seq;
	uint32_t target_pid;
	uint32_t tick_ns;	   /* 0: 1000 (microseconds) */
	uint32_t block_bytes;	   /* 0: 64 KiB of payload per block */
	uint64_t max_dict_bytes;   /* 0: 32 MiB; past it chunk_writer_full() */
	uint32_t header_flags;	   /* TCF_HDR_* */
	bool sync_every_block;	   /* fdatasync after each block */
	uint16_t minor;		   /* format minor the data needs: 0 (1.0), 1 (WAITS),
				    * 2 (signal sources, owners' stacks while held) */
};

struct chunk_mapping {
	uint64_t start, size, file_offset;
	const char *path;
	const uint8_t *build_id;
	unsigned build_id_len; /* <= 64 */
	uint32_t flags;	       /* TCF_MAP_* */
};

struct chunk_line {
	uint32_t function_id;
	uint32_t line;
	uint32_t column;
};

/* owns: its buffers and dictionaries; borrows: fd. */
struct chunk_writer;

int chunk_writer_open(const struct chunk_writer_opts *opts, struct chunk_writer **ret_writer);
/* NULL-safe; does not finish the chunk (a killed writer leaves the same). */
void chunk_writer_free(struct chunk_writer *w);

/* Definitions: return a dense id (>= 1) that stays valid for this chunk,
 * 0 on failure (out of memory; see chunk_writer_error).  Equal content
 * gives the same id. */
uint32_t chunk_writer_string(struct chunk_writer *w, const char *s);
uint32_t chunk_writer_mapping(struct chunk_writer *w, const struct chunk_mapping *m);
uint32_t chunk_writer_function(struct chunk_writer *w, const char *name,
	const char *system_name, const char *file, uint32_t start_line);
/* lines innermost first (the inline chain), at least one */
uint32_t chunk_writer_location(struct chunk_writer *w, uint32_t mapping_id, uint64_t addr,
	const struct chunk_line *lines, unsigned nlines);
/* locations leaf first, as unwound; returns the stack (leaf node) id */
uint32_t chunk_writer_stack(struct chunk_writer *w, const uint32_t *locations, unsigned n);
uint32_t chunk_writer_thread(struct chunk_writer *w, uint32_t tid, uint32_t pid,
	const char *name);

/* Events and samples; time is CLOCK_MONOTONIC ns.  Return 0 or -errno. */
int chunk_writer_sample(struct chunk_writer *w, uint64_t time_ns, uint32_t thread_id,
	enum tcf_state state, uint32_t stack_id, const uint64_t *values, unsigned nvalues);
int chunk_writer_thread_event(struct chunk_writer *w, uint64_t time_ns, uint32_t thread_id,
	enum tcf_thread_event kind, uint64_t arg);
int chunk_writer_process_event(struct chunk_writer *w, uint64_t time_ns, uint32_t pid,
	enum tcf_process_event kind, int32_t status, int32_t signo, uint64_t fault_addr,
	uint32_t thread_id, uint32_t stack_id);
/* A thread's stack at its process's death (TCF_PROC_DEATH_STACK): one
 * call per thread, the crashing thread with TCF_DEATH_FAULTING and its
 * fault address.  stack_id must be of this chunk (0: not taken). */
int chunk_writer_death_stack(struct chunk_writer *w, uint64_t time_ns, uint32_t pid,
	int32_t signo, uint32_t thread_id, uint32_t stack_id, uint32_t flags, uint64_t fault_addr);
/* Where a fatal signal came from, as its siginfo_t said (since 1.2): the
 * tail of a CRASH row and of the DEATH_STACK row of the thread that took
 * the signal.  code decides the rest: pid and uid the sender's for
 * SI_USER, SI_TKILL, SI_QUEUE and SI_MESGQ (else 0), as the target's PID
 * namespace numbers them; comm (a string id of the chunk) the sender's
 * comm read when the signal came, 0 if not read (gone, another PID
 * namespace, or no sender). */
struct chunk_sigsrc {
	int32_t code; /* si_code */
	uint32_t pid, uid, comm;
};
/* A CRASH or DEATH_STACK row with the signal's source (NULL: none, as
 * chunk_writer_process_event writes), in a chunk opened with minor >= 2:
 * -EINVAL otherwise. */
int chunk_writer_process_event_src(struct chunk_writer *w, uint64_t time_ns, uint32_t pid,
	enum tcf_process_event kind, int32_t status, int32_t signo, uint64_t fault_addr,
	uint32_t thread_id, uint32_t stack_id, const struct chunk_sigsrc *src);
/* The OOM killer killed pid (TCF_PROC_OOM_KILL); oom_kills: its cgroup's
 * memory.events oom_kill count after the kill (0: not read). */
int chunk_writer_oom_kill(struct chunk_writer *w, uint64_t time_ns, uint32_t pid,
	uint64_t oom_kills);
int chunk_writer_lost(struct chunk_writer *w, uint64_t count, enum tcf_lost_reason reason);
/* A WAITS record of one episode (a chunk opened with minor >= 1). */
int chunk_writer_wait(struct chunk_writer *w, const struct chunk_wait *e);
int chunk_writer_clock_sync(struct chunk_writer *w, uint64_t clock_ns, uint64_t real_ns);
int chunk_writer_meta(struct chunk_writer *w, const char *key, const char *value);
/* Names of the sample values (e.g. "cpu"/"nanoseconds"), before any sample
 * that carries values. */
int chunk_writer_sample_types(struct chunk_writer *w, const char *const *types,
	const char *const *units, unsigned n);

/* Commit what is buffered as one block (nothing if empty). */
int chunk_writer_flush(struct chunk_writer *w);
/* Flush, then the final block (CHUNK_END), the INDEX block and the trailer;
 * fdatasync.  The writer accepts nothing after. */
int chunk_writer_finish(struct chunk_writer *w, enum tcf_end_reason reason, int32_t exit_status);
/* The dictionaries passed max_dict_bytes: finish and start a new chunk. */
bool chunk_writer_full(const struct chunk_writer *w);
/* Bytes written to the file so far (committed blocks). */
uint64_t chunk_writer_bytes(const struct chunk_writer *w);
uint64_t chunk_writer_samples(const struct chunk_writer *w);
/* First error that stopped the writer (0 if none). */
int chunk_writer_error(const struct chunk_writer *w);
const uint8_t *chunk_writer_session(const struct chunk_writer *w);

/* ---------------------------------------------------------------- reader */

struct chunk_info {
	uint16_t major, minor;
	uint32_t incompat, compat;
	uint8_t session_id[16];
	uint64_t chunk_seq;
	uint64_t start_clock_ns, start_real_ns;
	uint8_t boot_id[16];
	uint32_t clock_id, tick_ns, target_pid, header_flags;
	uint64_t offset; /* of the chunk in the file */
};

struct chunk_sample {
	uint64_t time_ns; /* clock of the chunk (CLOCK_MONOTONIC) */
	uint32_t thread_id;
	uint32_t stack_id;
	enum tcf_state state;
	unsigned nvalues;
	const uint64_t *values;
};

enum chunk_event_kind {
	CHUNK_EV_THREAD,  /* kind: enum tcf_thread_event */
	CHUNK_EV_PROCESS, /* kind: enum tcf_process_event */
	CHUNK_EV_LOST,
	CHUNK_EV_CLOCK_SYNC,
	CHUNK_EV_META,
	CHUNK_EV_END,
	CHUNK_EV_WAIT, /* wait: the episode (what: a string id of the chunk) */
};

/* PROCESS: status, signo, fault_addr, thread_id, stack_id as the kind
 * uses them (enum tcf_process_event); OOM_KILL's oom_kill count in count;
 * has_src: the row carries its signal's source (1.2) in src.  Ids are the
 * chunk's (0: none). */
struct chunk_event {
	enum chunk_event_kind type;
	unsigned kind;
	uint64_t time_ns;
	uint32_t thread_id, pid, stack_id;
	int32_t status, signo;
	uint64_t arg, count, real_ns, fault_addr;
	const char *key, *value; /* META (NUL-terminated copies) */
	uint64_t total_samples, total_blocks;
	const struct chunk_wait *wait;
	bool has_src;
	struct chunk_sigsrc src;
};

/* One decoded function / location / thread. Strings NUL-terminated, owned
 * by the reader, valid until the next chunk starts. NULL when unknown. */
struct chunk_function {
	const char *name, *system_name, *file;
	uint32_t start_line;
};
struct chunk_location {
	uint32_t mapping_id;
	uint64_t addr;
	unsigned nlines;
	const struct chunk_line *lines; /* innermost first */
};
struct chunk_thread {
	uint32_t tid, pid;
	const char *name;
};
struct chunk_map_info {
	uint64_t start, size, file_offset;
	const char *path;
	const uint8_t *build_id;
	unsigned build_id_len;
	uint32_t flags;
};
/* What a sample's values measure, e.g. "cpu" in "nanoseconds". */
struct chunk_sample_type {
	const char *type, *unit;
};

/* owns: the tables of the chunk being read */
struct chunk_reader;

const struct chunk_info *chunk_reader_info(const struct chunk_reader *r);
const char *chunk_reader_string(const struct chunk_reader *r, uint32_t id);
bool chunk_reader_function(const struct chunk_reader *r, uint32_t id, struct chunk_function *ret);
bool chunk_reader_location(const struct chunk_reader *r, uint32_t id, struct chunk_location *ret);
bool chunk_reader_thread(const struct chunk_reader *r, uint32_t id, struct chunk_thread *ret);
bool chunk_reader_mapping(const struct chunk_reader *r, uint32_t id, struct chunk_map_info *ret);
/* The names of the values sample rows carry, in order (the chunk's latest
 * SAMPLE_TYPES record): returns how many there are (only n written); 0 if
 * the chunk names none.  A name whose string was lost is NULL. */
unsigned chunk_reader_sample_types(const struct chunk_reader *r, struct chunk_sample_type *types,
	unsigned n);
/* Locations of a stack, leaf first; returns the depth (may exceed n, only
 * n written); a node whose definition was lost yields location 0. */
unsigned chunk_reader_stack(const struct chunk_reader *r, uint32_t stack_id, uint32_t *locs,
	unsigned n);

/* Callbacks; any may be NULL.  A non-zero return stops the reading. */
struct chunk_visitor {
	int (*chunk_begin)(void *arg, struct chunk_reader *r);
	int (*sample)(void *arg, struct chunk_reader *r, const struct chunk_sample *s);
	int (*event)(void *arg, struct chunk_reader *r, const struct chunk_event *e);
	int (*chunk_end)(void *arg, struct chunk_reader *r, bool finished);
};

/* What reading found.  Damage is counted, never fatal. */
struct chunk_report {
	unsigned chunks, chunks_finished, chunks_skipped; /* skipped: newer major or incompat */
	unsigned blocks, blocks_bad, seq_gaps;
	uint64_t samples, events, bytes, bytes_skipped;
	uint64_t first_real_ns, last_real_ns;
	uint64_t unknown_refs;	  /* ids referenced but not defined (lost block) */
	bool torn_tail;		  /* bytes after the last whole block: crash or live */
	unsigned trailers_missing; /* unfinished chunks cut at their trailer: the
				    * final and index blocks are there, the
				    * trailer is not */
	unsigned trailers_bad;	  /* trailers with a valid CRC whose length,
				   * index offset or block count disagree with
				   * the chunk (the chunk is not finished) */
	bool newer_reader_needed; /* a must-understand record we do not know */
	unsigned records_skipped; /* unknown optional records */
	char first_damage[160];	  /* where and what, for people */
};

/* Read a buffer holding one or more chunks (a file, a snapshot). Returns 0
 * if at least one chunk header was valid, -TD_E_CORRUPT if none. */
int chunk_read_buffer(const uint8_t *buf, size_t len, const struct chunk_visitor *v, void *arg,
	struct chunk_report *ret_report);
/* Map and read a file. -errno on I/O errors, -EISDIR for a directory,
 * -TD_E_NOTREG for anything else that is not a regular file (a FIFO is
 * never waited on, a device never opened: tcf_open_input). */
int chunk_read_file(const char *path, const struct chunk_visitor *v, void *arg,
	struct chunk_report *ret_report);
/* The same on an open file (borrowed). */
int chunk_read_fd(int fd, const struct chunk_visitor *v, void *arg,
	struct chunk_report *ret_report);

/* Open an input (a chunk file, a snapshot, a repository) for reading:
 * path relative to dirfd (AT_FDCWD), not following a final symbolic link
 * if nofollow.  Only a regular file or a directory is opened at all: the
 * type is taken from an O_PATH descriptor first, so a FIFO cannot block
 * and a device is never opened (-TD_E_NOTREG).  *ret_fd (the caller
 * closes it) and *ret_dir on success; 0 or -errno. */
int tcf_open_input(int dirfd, const char *path, bool nofollow, int *ret_fd, bool *ret_dir);

/* ------------------------------------------------------ repository listing */

/* A chunk file in a repository directory.  Names are
 * c<seq:10 digits>-<UTC start>.tcf, ".part" while being written; they are
 * hints: the order is the sequence in the header. */
struct tcf_dir_entry {
	char name[64];
	uint64_t seq;	 /* from the header; from the name if unreadable */
	uint64_t size;
	int64_t mtime;	 /* seconds */
	uint64_t mtime_ns; /* the same, in ns since the epoch (0 before it) */
	bool part;	 /* .part: unfinished (active, or its writer died) */
	bool header_ok;
};

/* Fill entries (at most cap, fixed storage: no allocation) with the chunk
 * files of dir, sorted by sequence.  Returns the count, -ENOSPC if there
 * are more than cap, or -errno. */
int tcf_dir_scan(const char *dir, struct tcf_dir_entry *entries, unsigned cap);
/* The same on an open directory (borrowed).  Entries that are not regular
 * files (symbolic links, FIFOs, devices) are left out. */
int tcf_dir_scan_fd(int dirfd, struct tcf_dir_entry *entries, unsigned cap);
/* Is name a chunk file name (c<10 digits>-...tcf[.part])? */
bool tcf_is_chunk_name(const char *name, uint64_t *ret_seq, bool *ret_part);

/* ------------------------------------------------------- low-level, shared */

uint32_t tcf_crc32c(uint32_t crc, const void *buf, size_t len);
static inline uint32_t tcf_crc_mask(uint32_t c)
{
	return ((c >> 15) | (c << 17)) + 0xa282ead8u;
}

/* Parse a chunk header at p (len bytes available). */
int tcf_parse_header(const uint8_t *p, size_t len, struct chunk_info *ret);
/* Block header fields */
struct tcf_block {
	uint32_t payload_len, block_seq, raw_len;
	uint64_t base_clock_ns;
	uint16_t flags;
};
/* Valid block header (sync marker and header CRC) at p? */
bool tcf_parse_block_header(const uint8_t *p, size_t len, uint64_t sync, struct tcf_block *ret);
bool tcf_is_trailer(const uint8_t *p, size_t len);
/* Does a trailer t (tcf_is_trailer) found trailer_off bytes after the start
 * of its chunk agree with the chunk?  Its chunk_len must be trailer_off +
 * 32, and its index_offset must name the chunk's INDEX block, which ends
 * where the trailer begins and is block block_count - 1.  index_hdr: the 40
 * bytes at index_offset, or NULL when index_offset does not lie between
 * the header (header_len bytes) and the trailer. */
bool tcf_trailer_agrees(const uint8_t *t, uint64_t trailer_off, uint64_t header_len,
	const uint8_t *index_hdr, uint64_t sync);
uint64_t tcf_chunk_sync(const uint8_t *header);
/* Encode a synthesized final block (CHUNK_END) + empty INDEX + trailer for
 * a chunk cut at chunk_len bytes with next block_seq; into out (>= 256
 * bytes).  Returns the byte count.  Used by repair (snapshot). */
size_t tcf_encode_close(uint8_t *out, uint64_t sync, uint32_t block_seq, uint64_t chunk_len,
	uint64_t last_clock_ns, uint64_t total_samples, enum tcf_end_reason reason);
/* Set header flags in a copy of a header and fix its CRC. */
void tcf_header_set_flags(uint8_t *header, uint32_t flags);

/* ------------------------------------------------------------ repository
 *
 * A directory of chunks: LOCK (flock()ed by the one writer, holding its
 * pid), c<seq>-<UTC>.tcf finished chunks, at most one active
 * c<seq>-<UTC>.tcf.part; beside them, never counted or deleted as
 * chunks, snapshots/ and emergency-<pid>-<UTC>.tcf dumps.  States of the
 * active chunk:
 *
 *   (none) --repo_writer(): open .part O_EXCL, header, fdatasync, fsync dir
 *          --> ACTIVE
 *   ACTIVE --repo_rotate() / repo_tick() past size or age / repo_close():
 *            CHUNK_END, INDEX, trailer, fdatasync, rename .part -> .tcf,
 *            fsync dir, retention --> (none)
 *   ACTIVE --a failed write/fsync/rename--> FAILED: the .part keeps its
 *            whole blocks (snapshot repairs it); recording must stop.
 *   ACTIVE --repo_check() finds the .part changed by another process
 *            (shorter or longer than written, or its name no longer the
 *            file written): repo_abandon() closes it unfinished and
 *            renames it c<seq>-<UTC>.tcf.changed (no chunk's name, out
 *            of listings and retention) --> (none); recording goes on in
 *            the next chunk.
 */
struct repo_opts {
	uint64_t max_chunk_size;   /* default 16 MiB */
	uint64_t max_chunk_age_ns; /* default 10 min */
	uint64_t max_size;	   /* default 1 GiB (>= 2 chunks) */
	uint64_t max_age_ns;	   /* default 24 h */
	uint32_t target_pid;
	uint32_t block_bytes;	   /* writer; 0: default */
	uint64_t max_dict_bytes;   /* writer; 0: default */
	uint16_t minor;		   /* writer: the format minor the data needs */
	uint32_t max_emergency;	   /* emergency dumps kept, the oldest deleted
				    * first; 0: every one */
};

/* owns: dirfd, lock fd, the active chunk's fd and writer */
struct repo;

/* Open or create (0750) the repository at path.  No symbolic link may be
 * on the path (-TD_E_SYMLINK; a trailing slash does not make a link
 * acceptable), the directory must belong to the effective user
 * (-TD_E_NOTOWNER) and be writable by nobody else (-TD_E_UNSAFE).
 * -TD_E_LOCKED: another writer (its pid in *ret_owner); -TD_E_LOCKLINK:
 * its LOCK is a symbolic link (never followed); -TD_E_PSEUDOFS: a
 * directory of /proc, /sys and the like.  On failure a
 * directory made here is removed again. */
int repo_open(const char *path, const struct repo_opts *opts, struct repo **ret_repo,
	pid_t *ret_owner);
/* Instead of repo_close when nothing was recorded (a failed start): if
 * repo_open made the directory and it holds nothing but its LOCK, remove
 * it; a directory that existed before is left as it was.  Frees r
 * (NULL-safe).  Returns 1 if removed, 0 if not. */
int repo_discard(struct repo *r);
/* The active chunk's writer, starting a chunk if none; NULL on error
 * (repo_error says why). */
struct chunk_writer *repo_writer(struct repo *r);
/* Rotate when the active chunk is past its size, age or dictionary
 * budget.  Returns 1 if it rotated, 0 if not, -errno. */
int repo_tick(struct repo *r, uint64_t now_ns);
/* Would repo_tick(r, now_ns) rotate now? */
bool repo_due(const struct repo *r, uint64_t now_ns);
/* Finish the active chunk and give it its .tcf name; -TD_E_CHANGED (and
 * nothing renamed, r still usable) if repo_check finds it changed before
 * or after the trailer is written: repo_abandon it. */
int repo_rotate(struct repo *r, int reason);
/* Is the active chunk's file still all that was written to it: its size
 * what the chunk writer committed, its name the file written?  0 if so
 * (or no chunk is active), -TD_E_CHANGED if not.  Two fstat calls: meant
 * for each publish, not for each record. */
int repo_check(const struct repo *r);
/* What repo_abandon left behind. */
struct repo_changed {
	char name[64];	  /* its name in the repository: .tcf.changed, or
			   * the .part's if that is another file now */
	uint64_t samples; /* samples of the chunk (blocks written and buffered) */
	uint64_t written; /* bytes tracerd wrote */
	int64_t size;	  /* its size found, -1 if the name is gone */
	bool replaced;	  /* the name is another file now (or none) */
};
/* The active chunk changed under us (repo_check): close it unfinished,
 * never renamed to .tcf (to .tcf.changed if its name is still the file we
 * wrote); the next repo_writer starts a new chunk.  Fills *ret with what
 * it held.  0, or -EINVAL with none active. */
int repo_abandon(struct repo *r, struct repo_changed *ret);
/* Delete the oldest finished chunks past max_size / max_age. Returns the
 * number deleted or -errno. */
int repo_retain(struct repo *r);
/* Finish the active chunk and release the lock.  NULL-safe. */
int repo_close(struct repo *r, int reason);
int repo_error(const struct repo *r);
uint64_t repo_bytes_written(const struct repo *r);
const char *repo_path(const struct repo *r);


/* Write the chunks of the repository at repo, in sequence order, into one
 * file out (tracerd snapshot): finished chunks whole, an unfinished one
 * repaired.  Only chunks written in the last since_ns (0: all).  out
 * appears only when complete (mode 0640 less the umask), replacing what
 * was there.  -ENODATA: no chunks. */
int repo_snapshot(const char *repo, const char *out, uint64_t since_ns, unsigned *ret_chunks,
	unsigned *ret_repaired, uint64_t *ret_bytes);
/* The same into the writer's own repository (SIGUSR1): flush the active
 * chunk, then write snapshots/snapshot-<UTC>.tcf (0640; -1, -2, ... when
 * that name is taken: never replaces a snapshot), everything relative to
 * the repository's descriptor, no link followed.  Its path (for people)
 * in ret_path. */
int repo_snapshot_into(struct repo *r, char *ret_path, size_t path_len, unsigned *ret_chunks,
	unsigned *ret_repaired, uint64_t *ret_bytes);
/* The emergency dump of pid's death, on the writer's thread once the death
 * records are written and the chunk rotated: REPO/emergency-PID-UTC.tcf
 * (0640; -1, -2, ... when that name is taken: never replaces a file),
 * relative to the repository's descriptor, no link followed.  It holds
 * the chunks of r that overlap [since_ns, now] (CLOCK_REALTIME ns: last
 * written at or after since_ns; 0: all), and always the newest one, in
 * sequence order: finished ones whole, an unfinished one repaired as
 * snapshot does (an active chunk is flushed first); every header copy
 * has TCF_HDR_EMERGENCY set and target_pid = pid (CRC renewed), so that a
 * reader knows whose death it is.  It appears only when complete
 * (a .tmp file, fsync, rename, directory fsync).  Not a chunk of the
 * repository: listings (tcf_dir_scan, tracerd report REPO) and retention
 * pass it by and it never counts against max_size; past the options'
 * max_emergency dumps, the oldest (by modification time) are deleted.
 * Fixed memory (a table of entries and a 1 MiB copy buffer, allocated up
 * front; a 64 KiB buffer if that fails), whatever the number of chunks.
 * Its path (for people) in ret_path, the chunks and bytes in ret_chunks
 * and ret_bytes.  -ENODATA: no chunks; -EINVAL: pid <= 0. */
int repo_emergency_into(struct repo *r, pid_t pid, uint64_t since_ns, char *ret_path,
	size_t path_len, unsigned *ret_chunks, uint64_t *ret_bytes);

#endif
