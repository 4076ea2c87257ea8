/* SPDX-License-Identifier: GPL-2.0-or-later */
/* tracerd symbolize stage: unwind a captured sample with libdw, seeded from
 * its saved registers, and turn program counters into functions, inline
 * chains and source lines via DWARF.
 *
 * Only this stage includes <elfutils/libdwfl.h>.  It never touches the live
 * process while unwinding, except through the optional read_live callback
 * for reads outside the captured stack window (counted in live_reads).
 *
 * Names: DWARF wins when debuginfo is present (the linkage name demangled,
 * so C++ names are fully qualified like gdb shows them; the plain DWARF name
 * otherwise); the ELF symbol (.symtab, else .dynsym) is the fallback, its
 * @VERSION suffix stripped.  C++ and Rust (legacy and v0) names are
 * demangled by libiberty's cplus_demangle. */
#ifndef TD_SYMBOLIZE_H
#define TD_SYMBOLIZE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

#include "../common/sample.h"
#include "../common/td.h"

#define SYM_MAX_FRAMES 512 /* bound on physical frames of one stack */

/* Why a stack ended.  Stored with every stack: a partial stack is a
 * result, not an error. */
enum sym_end {
	SYM_END_OUTERMOST,   /* the unwind info says there is no caller */
	SYM_END_NO_CFI,	     /* no unwind info for pc in its module */
	SYM_END_NO_MODULE,   /* pc in no known module (JIT, maps changed) */
	SYM_END_WINDOW,	     /* needed stack beyond the captured window */
	SYM_END_READ_FAILED, /* a memory read failed */
	SYM_END_FRAME_LIMIT, /* SYM_MAX_FRAMES or the caller's limit */
	SYM_END_NO_REGS,     /* the sample holds no usable registers */
	SYM_END_OTHER_STACK, /* past a signal frame: the interrupted code's
				stack is another one, not in the window */
	SYM_END_KERNEL_LIMIT, /* WINDOW, the window at the most the kernel
				 copies (perf: PT_PERF_MAX_STACK); set by
				 the caller, who knows the window */
};
#define SYM_END_COUNT (SYM_END_KERNEL_LIMIT + 1)
const char *sym_end_name(enum sym_end end);

/* Physical frames of one stack, innermost first. */
struct sym_unwound {
	uint64_t pc[SYM_MAX_FRAMES];
	bool activation[SYM_MAX_FRAMES]; /* pc is exact, not a return address */
	/* the stack pointer in each frame (sp[0] the sample's; sp[i + 1] is
	 * frame i's CFA), 0 where the unwinder did not know it: the extent of
	 * a frame's own stack slots (python.c reads the evaluator's) */
	uint64_t sp[SYM_MAX_FRAMES];
	unsigned n;
	enum sym_end end;
	unsigned live_reads; /* reads served by read_live */
	uint32_t window_used; /* bytes of the window the unwind read, from its start */
	uint64_t fault_addr; /* WINDOW, READ_FAILED: the address */
	bool fast;	     /* unwound from the session's cached CFI rules alone */
	char detail[96];     /* libdwfl's words, when it gave any */
};

/* One symbolized frame.  Strings are borrowed from the session's cache and
 * stay valid until the next sym_session_unwind() on any session sharing
 * that cache; NULL when unknown (never invented). */
struct sym_frame {
	uint64_t pc;	  /* as unwound (return address for callers) */
	uint64_t offset;  /* address of pc in its ELF file (pc - bias) */
	const char *function;
	const char *file;
	int line;	  /* 0 if unknown */
	int start_line;	  /* where the function is declared; 0 if unknown */
	const char *module;
	const char *build_id; /* hex */
	bool inlined;	      /* an inlined call inside the next frame */
};

typedef ssize_t (*sym_read_fn)(void *arg, pid_t tid, uint64_t addr, void *buf, size_t len);

struct sym_options {
	const char *debuginfo_dir; /* extra dir with .build-id/xx/yyyy.debug */
	sym_read_fn read_live;	   /* may be NULL */
	void *read_arg;
	unsigned max_frames;	   /* 0: SYM_MAX_FRAMES */
	/* ELF symbol names only: no DWARF, so no inline frames and no
	 * file:line, but no inflating of compressed debuginfo either (for
	 * libc6-dbg that is most of a one-shot dump's time). */
	bool no_dwarf;
	/* Absolute directory of decompressed debuginfo, DIR/<build-id>.debug
	 * (debugcache.c; created 0700 with its parents if missing): separate
	 * debuginfo with compressed sections is inflated once into it, then
	 * only mapped.  NULL: no cache, libdw inflates it in every session. */
	const char *cache_dir;
	/* Every stack through libdw's unwinder, none from the cached rules
	 * (the tests compare the two). */
	bool no_fast_unwind;
};

/* What a session's debuginfo cache did (sym_session_debug_stats). */
struct sym_debug_stats {
	unsigned reused;  /* entries used as they were */
	unsigned created; /* entries made (a file inflated into the cache) */
	unsigned failed;  /* lookups that went without the cache */
	unsigned tables_reused, tables_made; /* symbol tables read back, written */
	/* modules read without their DWARF (or not at all, when their
	 * symbol tables are the compressed ones), with or without a cache:
	 * their compressed sections claim more than the bound, 64 times the
	 * file's size, at most 256 MiB (tracerd(8), SECURITY) */
	unsigned over_bound;
	int err;	  /* why the last one failed: -errno, -TD_E_* */
};

/* Create the cache directory dir (absolute) with its missing parents,
 * 0700, and check that it can serve: a directory reached without a
 * symbolic link in its last component (-TD_E_SYMLINK), owned by the
 * effective user (-TD_E_NOTOWNER), writable by nobody else
 * (-TD_E_UNSAFE), writable by us.  Returns 0 or -errno / -TD_E_*. */
int sym_debug_cache_prepare(const char *dir);

/* owns: strings, pc results, symbol tables; bounded (strings and pc
 * results flushed between stacks when over budget; symbol tables, one per
 * binary, kept to their own budget).  Shared by sessions, keyed by
 * build-id + address. */
struct sym_cache;
int sym_cache_new(struct sym_cache **ret_cache);
void sym_cache_free(struct sym_cache *c);
struct sym_cache_stats {
	uint64_t hits, misses, flushes, entries;
	uint64_t bytes;	       /* all of it, symbol tables included */
	uint64_t tables;       /* modules whose symbols are in a table */
	uint64_t table_bytes;  /* of bytes */
	uint64_t table_denied; /* tables not built: over their budget */
};
void sym_cache_stats(const struct sym_cache *c, struct sym_cache_stats *ret);

/* owns: Dwfl; borrows: cache (must outlive the session).  One per process,
 * reused across samples.  Loads every mapped ELF at creation, so stacks
 * captured before the process died can still be symbolized. */
struct sym_session;
int sym_session_new(pid_t pid, const struct sym_options *opt, struct sym_cache *cache,
	struct sym_session **ret_session);
void sym_session_free(struct sym_session *s);
/* Number of modules, how many have an ELF, and how many had their DWARF
 * read so far (it is loaded on first use). */
void sym_session_modules(const struct sym_session *s, unsigned *ret_modules,
	unsigned *ret_with_elf, unsigned *ret_with_dwarf);
/* What the debuginfo cache did for this session so far. */
void sym_session_debug_stats(const struct sym_session *s, struct sym_debug_stats *ret);

/* Code a JIT compiler made (jitmap.c): named from the target's
 * /tmp/perf-PID.map and jit-PID.dump, read again as they grow.  The
 * generation changes when they named more: a pc named before may be named
 * otherwise now (drop what was kept of it). */
uint64_t sym_session_jit_generation(const struct sym_session *s);
/* A JIT file the session refused to read (not the target's user's, a
 * symbolic link, not a regular file, writable by others): once, its -errno
 * / -TD_E_* with its path (in the target's mount namespace) in path;
 * else 0. */
int sym_session_jit_refused(struct sym_session *s, char *path, size_t len);

/* Unwind one sample (pid must be the session's). */
int sym_session_unwind(struct sym_session *s, const struct td_sample *sample,
	struct sym_unwound *ret);

/* Would sym_session_symbolize() give pc a module (a file the session
 * knows, or code a JIT's files name)?  Asked without naming it: no DWARF
 * is read, as the writer's check of an innermost pc that an
 * interpreter's frames may replace needs none (a new pc in CPython's
 * evaluator costs a walk of ceval.c's DIEs). */
bool sym_session_mapped(struct sym_session *s, uint64_t pc, bool activation);

/* Frames for one pc, innermost inline first.  Returns how many were
 * written (>= 1; a pc in no module gives one frame with only pc set). */
int sym_session_symbolize(struct sym_session *s, uint64_t pc, bool activation, bool inlines,
	struct sym_frame *frames, unsigned cap);

/* CPython frames read from outside (python.c).  A sym_py is one
 * process's interpreter, found in the session's modules by its symbols;
 * the reads go through read (process_vm_readv: ptrace/'s), of tid's
 * process. */
struct sym_py;
/* readv: n reads in one call, remote[i] into local[i] in order: the
 * bytes read, short at the first unmapped page (the later ones not
 * read), or -errno; NULL: one read call each */
typedef ssize_t (*sym_readv_fn)(void *arg, pid_t tid, const struct iovec *local,
	const struct iovec *remote, unsigned n);
struct sym_py_reader {
	sym_read_fn read;
	void *arg;
	pid_t tid;
	sym_readv_fn readv;
};
/* One interpreter frame as read: the code object's fields, the last
 * instruction (code units, -1 before the first), and whether it is the
 * first frame of its _PyEval_EvalFrameDefault activation (is_entry).
 * key: a hash of all of them, for a cache of names. */
struct sym_py_frame {
	uint64_t code;
	uint64_t name, file; /* co_qualname, co_filename (adjacent: hashed) */
	uint64_t linetable;
	uint64_t key;
	int32_t lasti;
	int32_t firstline;
	uint32_t size; /* the bytecode's code units */
	bool entry;
	uint64_t addr, previous; /* the frame's, and its previous frame's */
};
struct sym_py_name {
	char function[256];
	char file[1024];
	int line, firstline; /* 0: unknown */
};
/* Find the interpreter in s: 0, -ENOENT (not CPython), -errno. */
int sym_py_open(struct sym_session *s, struct sym_py_reader *r, struct sym_py **ret_py);
void sym_py_free(struct sym_py *py);
/* Py_Version, and whether tracerd has a layout for it. */
uint32_t sym_py_version(const struct sym_py *py, bool *ret_known);
/* The main interpreter's GIL: the addresses of the condition variables
 * a thread waits on for it (ret_conds[0], in take_gil) and, when it was
 * made to let go, for the next holder to take it (ret_conds[1], in
 * drop_gil), and the TID of the thread that holds it (ret_holder, 0 if
 * none or not known).  0, or -ENOTSUP (no layout), -EIO. */
int sym_py_gil(struct sym_py *py, struct sym_py_reader *r, uint64_t ret_conds[2], pid_t *ret_holder);
/* Is the unwound pc in _PyEval_EvalFrameDefault? */
bool sym_py_is_eval(const struct sym_py *py, uint64_t pc, bool activation);
/* The frame chain of r->tid, innermost first, as at the sample (its
 * innermost _PyCFrame read from the sample's stack copy): the count (0:
 * no Python frame), -ENOTSUP for a version without layout, -EIO when a
 * read failed or a check did not hold (torn: keep the stack native). */
int sym_py_stack(struct sym_py *py, struct sym_py_reader *r, const struct td_sample *sample,
	struct sym_py_frame *frames, unsigned cap);
/* The frames of sym_py_stack() that go in place of the native frames of
 * u that run them: frame k replaces u's frame native[k] (the
 * _PyEval_EvalFrameDefault activation that runs it, innermost first).
 * Each activation's innermost frame is the sample's own (a word of
 * sample's registers or of its copy below u->sp[native + 1] points into
 * its bytecode), or the innermost is replaced by the one the sample
 * points into (python.c says when).  The count, 0 (none: not a Python
 * thread), or -errno: the groups do not match the activations, or a
 * frame is not the sample's (torn: keep the stack native), -ENOTSUP. */
int sym_py_merge(struct sym_py *py, struct sym_py_reader *r, const struct td_sample *sample,
	const struct sym_unwound *u, struct sym_py_frame *frames, uint16_t *native, unsigned cap);
/* Function, file and line of f: 0, or -EIO (not what it claimed to be).
 * A code object's names and location table are kept (py owns them) by
 * its address, checked against the fields of it that f read (names'
 * and table's addresses, first line, size): a code object freed and
 * another made at its address reads again. */
int sym_py_name(struct sym_py *py, struct sym_py_reader *r, const struct sym_py_frame *f,
	struct sym_py_name *ret);
/* The line of code unit lasti in a 3.11 location table (t, n bytes) of a
 * function starting at firstline: 0 if it has none. */
int sym_py_line(const uint8_t *t, size_t n, int firstline, int lasti);

/* Demangle C++/Rust; returns a malloc'ed string or NULL if not mangled. */
char *sym_demangle(const char *name);
/* Fold, in place, the marks of a compiler's clone of a function into the
 * function (their samples are its): GCC's .constprop.N, .isra.N, .part.N,
 * .cold, .lto_priv.N and LLVM's .llvm.N on a C symbol, libiberty's
 * " [clone .constprop.0]" on a demangled C++ one; in a Go binary (go), only
 * .abi0.  Returns the new length. */
size_t sym_fold_clone(char *name, bool go);

/* Kernel symbols (kallsyms.c): /proc/kallsyms read once (path NULL),
 * text symbols sorted by address.  0, -errno, or -EPERM where it hides
 * the addresses (not root: kptr_restrict). */
struct sym_kallsyms;
int sym_kallsyms_load(const char *path, struct sym_kallsyms **ret);
void sym_kallsyms_free(struct sym_kallsyms *k); /* NULL-safe */
/* A kernel frame: its function, module ("kernel", or a module's name)
 * and the address's offset in the function; pointers into the table. */
struct sym_kframe {
	const char *name, *module;
	uint64_t offset;
};
/* The function at live kernel address addr; false if none is near. */
bool sym_kallsyms_find(const struct sym_kallsyms *k, uint64_t addr, struct sym_kframe *ret);
/* Names back to addresses, for a kernel stack that gives names and
 * offsets alone (/proc/TID/stack: common/kstack.h).  sym_kallsyms_index
 * sorts an index by name, once, before the table is shared between
 * threads (0 or -ENOMEM); then sym_kallsyms_addr gives the live address
 * of name+offset in module (NULL: the kernel's own), one that
 * sym_kallsyms_find names back as name; false if none is (no index, an
 * unknown name, an offset past the function's reach).  A lookup is a
 * binary search and writes nothing: threads may share the table. */
int sym_kallsyms_index(struct sym_kallsyms *k);
bool sym_kallsyms_addr(const struct sym_kallsyms *k, const char *name, const char *module,
	uint64_t offset, uint64_t *ret_addr);

#endif
