/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Private to symbolize/: what its files share (the cache, the symbol
 * tables, the unwind rules, the debuginfo cache, the session). */
#ifndef TD_SYMBOLIZE_INTERNAL_H
#define TD_SYMBOLIZE_INTERNAL_H

#include "symbolize.h"

#include "../common/map.h"

#include <elfutils/libdwfl.h>
#include <gelf.h>
#include <libelf.h>

#define SYM_MAX_INLINE 64     /* bound on inline depth kept per pc */
#define SYM_MAX_NAME 4096     /* bound on one name's length */

struct sym_line {
	const char *function; /* interned */
	const char *file;     /* interned, may be NULL */
	int line;
	int start_line; /* the function's DW_AT_decl_line; 0 if unknown */
	bool inlined;
};

/* Flush everything if over budget.  Call only between stacks. */
void sym_cache_begin(struct sym_cache *c);
/* Interned copy of s[0..len), valid until the next flush. */
const char *sym_cache_intern(struct sym_cache *c, const char *s, size_t len);
static inline const char *sym_cache_intern0(struct sym_cache *c, const char *s)
{
	size_t n = 0;

	if (!s)
		return NULL;
	while (s[n] && n < SYM_MAX_NAME)
		n++;
	return sym_cache_intern(c, s, n);
}
bool sym_cache_lookup(struct sym_cache *c, uint64_t modkey, uint64_t vaddr,
	const struct sym_line **ret_lines, unsigned *ret_n);
void sym_cache_insert(struct sym_cache *c, uint64_t modkey, uint64_t vaddr,
	const struct sym_line *lines, unsigned n);
uint64_t sym_hash(const void *p, size_t len, uint64_t seed);

/* A module's ELF symbols by address (symtab.c), so that naming a pc is a
 * binary search, not dwfl_module_addrinfo()'s scan of every symbol.
 * owns: its names.  Never changes once built. */
struct sym_table;
/* Read mod's symbols once: 0, -ENOMEM or -TD_E_LIMIT.  A module without
 * symbols gives an empty table (every lookup NULL). */
int sym_table_build(struct Dwfl_Module *mod, struct sym_table **ret_table);
void sym_table_free(struct sym_table *t);
size_t sym_table_bytes(const struct sym_table *t);
/* The raw name (any @VERSION kept) of the symbol dwfl_module_addrinfo()
 * names for the module-relative vaddr (pc - load bias); NULL if none.
 * Valid as long as the table. */
const char *sym_table_lookup(const struct sym_table *t, uint64_t vaddr);
/* What a table of mod is built from: its symbol count and first global
 * (dwfl_module_getsymtab), -ENOENT if it has no symbols. */
int sym_table_source(struct Dwfl_Module *mod, uint64_t *ret_nsyms, uint64_t *ret_first_global);
/* A table as a file, and back: sym_table_write writes t to fd (0 or
 * -errno); sym_table_map maps a file written so, 0 or -errno, or
 * -TD_E_CORRUPT when it is not one or was built from another symbol table
 * (nsyms, first_global).  A mapped table is checked whole before use. */
int sym_table_write(const struct sym_table *t, uint64_t nsyms, uint64_t first_global, int fd);
int sym_table_map(int fd, uint64_t nsyms, uint64_t first_global, struct sym_table **ret_table);

/* A frame's unwind rules in the form the fast unwinder follows (cfi.c):
 * CFA = cfa_reg (rsp 7 or rbp 6) + cfa_off, the return address at
 * CFA + ra_off, rbp kept, saved at CFA + bp_off or lost.  libdw's unwinder
 * reads the slot of every register saved, in register order: slot[] holds
 * their CFA offsets so, rbp's and the return address's among them. */
#define SYM_RULE_SLOTS 8
enum { SYM_RULE_EMPTY, SYM_RULE_SIMPLE, SYM_RULE_OUTERMOST, SYM_RULE_COMPLEX,
	SYM_RULE_SIGRETURN /* unwind.c: a signal restorer, whatever its CFI */ };
enum { SYM_BP_SAME, SYM_BP_SAVED, SYM_BP_UNDEFINED };
struct sym_rule {
	uint64_t key; /* the caller's */
	int32_t cfa_off, ra_off, bp_off;
	int16_t slot[SYM_RULE_SLOTS];
	uint8_t nslot, kind, cfa_reg, bp;
};
/* The rule at pc (an ELF address of cfi's file) as libdw works it out;
 * rip is the frame's own (pc, or pc + 1 for a return address), which a
 * PLT entry's CFA depends on. */
void sym_rule_libdw(Dwarf_CFI *cfi, uint64_t pc, uint64_t rip, struct sym_rule *r);
/* A module's .eh_frame and the binary search table of .eh_frame_hdr. */
struct sym_eh {
	const uint8_t *frame, *hdr, *table;
	size_t frame_len, hdr_len;
	uint64_t frame_vaddr, hdr_vaddr, count;
};
/* elf's section named want, with contents (its data, size and address),
 * or false. */
bool sym_elf_section(Elf *elf, const char *want, const uint8_t **data, size_t *len,
	uint64_t *vaddr);
/* 0 when elf's .eh_frame can be read so, -ENOENT / -ENOTSUP if not. */
int sym_eh_init(Elf *elf, struct sym_eh *eh);
/* The rule at pc (an ELF address) from .eh_frame: 0 (r set, maybe
 * SYM_RULE_COMPLEX), -ENOENT when no FDE holds pc, -ENOTSUP for what is
 * not read here (libdw can say). */
int sym_eh_rule(const struct sym_eh *eh, uint64_t pc, uint64_t rip, struct sym_rule *r);
/* Where the function holding pc starts (its FDE's first address): 0,
 * -ENOENT, -ENOTSUP. */
int sym_eh_function(const struct sym_eh *eh, uint64_t pc, uint64_t *ret_start);

/* Symbol tables in the cache, by module key.  They are not part of the
 * flushed budget (a flush between stacks would leave sessions holding
 * freed tables); they have their own and live until sym_cache_free(). */
const struct sym_table *sym_cache_table(const struct sym_cache *c, uint64_t modkey);
/* Whether one more table may be built; a no is counted (table_denied). */
bool sym_cache_table_room(struct sym_cache *c);
/* The sessions' scope indexes (names.c) share one budget through the
 * cache: take bytes of it (false: over it, nothing taken), or give back
 * what was taken. */
bool sym_cache_scopes_take(struct sym_cache *c, size_t bytes);
void sym_cache_scopes_give(struct sym_cache *c, size_t bytes);
/* Hand t over (the cache frees it) and get modkey's table: t, or the one
 * the cache had (t then freed), or NULL when t is not kept (over the
 * tables' budget, out of memory; t freed). */
const struct sym_table *sym_cache_table_add(struct sym_cache *c, uint64_t modkey,
	struct sym_table *t);

/* The ceiling on what a target's files may cost (debuginfo.c): libelf
 * and libdw inflate a compressed section whole, to the size its header
 * claims.  A file may claim SYM_INFLATE_RATIO times its size in all, at
 * most SYM_INFLATE_MAX: the debuginfo of Debian's -dbg packages claims at
 * most 13 times its size; deflate reaches 1,032 times on zeros. */
#define SYM_INFLATE_RATIO 64
#define SYM_INFLATE_MAX (256ull << 20)
enum sym_inflate {
	SYM_INFLATE_OK,	      /* within the bound: read it all */
	SYM_INFLATE_NO_DWARF, /* its debug sections are over it: read it without them */
	SYM_INFLATE_REFUSED,  /* its symbol or string tables are: do not read it */
};
/* The bound for a file of file_size bytes. */
uint64_t sym_inflate_bound(uint64_t file_size);
/* What elf (file_size bytes) would inflate to, against the bound: read
 * from the section and compression headers before anything inflates. */
enum sym_inflate sym_inflate_check(Elf *elf, uint64_t file_size);
/* Hide elf's debug sections from libdw (elf opened ELF_C_READ_MMAP_PRIVATE,
 * after sym_inflate_check said SYM_INFLATE_NO_DWARF): 0 or -TD_E_CORRUPT. */
int sym_inflate_hide_dwarf(Elf *elf);

/* The debuginfo cache (debugcache.c).  The separate debuginfo of build-id
 * bid (len bytes): the valid entry of dir if there is one, else the
 * original found by build-id under the absolute directories of
 * debuginfo_path (":"-separated, as libdwfl takes it), inflated into a new
 * entry when it has compressed sections (the original itself when not, or
 * when the entry cannot be made).  Returns an fd and *ret_name (malloc'ed,
 * may be NULL); -ENOENT when there is no such original (the caller then
 * searches as libdwfl does, and may sym_debugcache_store what it finds);
 * another -errno / -TD_E_* when the cache cannot serve (counted as failed
 * in *st, with the reason). */
int sym_debugcache_find(const char *dir, const char *debuginfo_path, const unsigned char *bid,
	size_t len, struct sym_debug_stats *st, char **ret_name);
/* Make dir's entry for bid from src_fd (debuginfo found elsewhere), for
 * the sessions to come; src_fd is only read (pread, its own Elf).
 * Nothing to do if it has no compressed section. */
void sym_debugcache_store(const char *dir, const unsigned char *bid, size_t len, int src_fd,
	struct sym_debug_stats *st);
/* The separate debuginfo of build-id bid as libdwfl's build-id search
 * finds it, DIR/.build-id/xx/yyyy.debug for each absolute DIR of
 * debuginfo_path, without libdwfl's own Elf of it (which it would then
 * use whatever the find_debuginfo callback answers): an fd and
 * *ret_name (malloc'ed, may be NULL), or -ENOENT, -ENOMEM. */
int sym_build_id_search(const char *debuginfo_path, const unsigned char *bid, size_t len,
	char **ret_name);
/* An fd of the ELF file at path if its build-id is bid (len bytes), else
 * -errno (absent, unreadable) or -TD_E_CORRUPT (another build's). */
int sym_open_by_build_id(const char *path, const unsigned char *bid, size_t len);
/* The symbol table of build-id bid built from the symbol table (nsyms,
 * first_global) (sym_table_source), kept in dir by
 * sym_debugcache_table_store: 0 and *ret_table (mapped, checked), -ENOENT
 * if there is none, another -errno / -TD_E_* if the one there cannot
 * serve (a later store replaces it).  Counted in *st as reused. */
int sym_debugcache_table(const char *dir, const unsigned char *bid, size_t len, uint64_t nsyms,
	uint64_t first_global, struct sym_debug_stats *st, struct sym_table **ret_table);
/* Keep t in dir for the sessions to come (made aside, renamed into
 * place, then the cache's bounds applied as for debuginfo). */
void sym_debugcache_table_store(const char *dir, const unsigned char *bid, size_t len,
	uint64_t nsyms, uint64_t first_global, const struct sym_table *t,
	struct sym_debug_stats *st);

/* ---- the session (symbolize.h's struct sym_session), shared by the files
 * that make it (session.c), find its debuginfo (debuginfo.c), unwind with
 * it (unwind.c) and name pcs with it (names.c) */

struct sym_vma {
	uint64_t start, end;
	const char *path; /* interned in names */
	bool over_bound;  /* find_elf hid its file's DWARF (sym_inflate_check) */
};

/* A range of a CU's addresses (ELF addresses), and the CU's DIE offset. */
struct cu_range {
	uint64_t lo, hi;
	Dwarf_Off die;
};

/* One CU's functions by address (names.c's scope index): each range of
 * each function DIE, sorted by lo; n == SIZE_MAX: not indexed (over the
 * bound, out of memory), searched DIE by DIE. */
struct fn_range {
	Dwarf_Addr lo, hi;
	size_t seq; /* DIE order, first wins where ranges overlap */
	Dwarf_Die die;
};
struct fn_table {
	struct fn_range *f;
	size_t n;
};

/* Per-module facts, set as the module's userdata.  owns: cur; borrows:
 * symtab (the cache's), the bytes of eh and code (the module's Elf, which
 * the Dwfl owns).  Its *_tried facts are looked up on first use, by
 * session.c, unwind.c and names.c alike. */
struct sym_module {
	Dwfl_Module *mod;
	struct sym_session *s;
	uint64_t key;	      /* hash of the build-id (or path) */
	uint64_t bias;
	const char *path;     /* as in /proc/PID/maps */
	const char *build_id; /* hex, NULL if none */
	const struct sym_table *symtab; /* NULL: none (yet, or denied) */
	bool has_elf, has_dwarf;
	bool symtab_tried;
	bool eh_tried, eh_ok; /* eh: its .eh_frame, read by cfi.c */
	bool go_tried, go;    /* a Go binary (sym_module_is_go) */
	bool cur_tried;	      /* cur: its CUs by range (cu_by_ranges) */
	struct cu_range *cur;
	size_t ncur;
	/* its CUs' functions by address, each CU's built when a pc in it is
	 * first named: the DIEs are of this session's Dwfl, so a session
	 * renewed (a module reloaded) builds them again; at most
	 * SYM_FN_INDEX_BYTES per module, the ranges taken from the cache's
	 * budget (fn_bytes of it).  owns: fn_tabs and their ranges */
	struct td_map fn_cus; /* the CU DIE's offset -> 1 + index into fn_tabs */
	struct fn_table *fn_tabs;
	size_t nfn_tabs, capfn_tabs, fn_bytes;
	struct sym_eh eh;
	/* its code, for sigreturn_code: the executable sections (the first
	 * few), looked up once */
	struct {
		uint64_t addr, size;
		const uint8_t *data;
	} code[4];
	uint8_t ncode;
	bool code_tried;
	bool debug_found; /* sym_find_debuginfo gave its debuginfo: a later
			   * call looks for a dwz alternate file */
	bool over_bound;  /* read without its DWARF (sym_inflate_check) */
};

/* owns: dwfl, modules, vmas, names, debuginfo path, rules; borrows:
 * cache, the strings of opt.  session.c builds it; from cur on, the
 * fields are unwind.c's, for the sample being unwound. */
struct sym_session {
	pid_t pid;
	/* whose /proc entry shows the process: pid, or a live thread when the
	 * main thread has exited (its maps, map_files, root and mem are gone
	 * with it, the process's are not) */
	pid_t proc;
	struct sym_options opt;
	struct sym_cache *cache;
	struct sym_debug_stats dstats;
	Dwfl_Callbacks callbacks;
	char *debuginfo_path;
	Dwfl *dwfl;
	struct sym_module *modules;
	unsigned nmodules;
	struct sym_vma *vmas;
	unsigned nvmas;
	char *names; /* NUL-separated paths of vmas */
	/* the sample being unwound: its window, and the registers the unwind
	 * starts from (the sample's, or a signal frame's) */
	const struct td_sample *cur;
	const struct user_regs_struct *cur_regs;
	bool cur_partial; /* only rip and rsp known (TD_SAMPLE_NOSTOP) */
	struct sym_unwound *out;
	struct sym_rule *rules; /* SYM_RULES of them, NULL until the first use */
	unsigned max_frames;
	bool window_exhausted, read_failed, frame_limit;
	/* libdw's unwind stopped at a return into a signal restorer (its last
	 * frame) whose sp, the kernel's ucontext, is sig_sp */
	bool sig_frame;
	uint64_t sig_sp;
	bool no_debuginfod; /* DEBUGINFOD_URLS names no server */
	struct sym_jit *jit; /* jitmap.c's: code named by perf maps, jitdump */
};

/* The module holding addr, or NULL.  dwfl_addrmodule() also answers for
 * an address past the end of the last module: this does not. */
Dwfl_Module *sym_addr_module(struct sym_session *s, uint64_t addr);
/* The facts of the module holding addr, or NULL. */
struct sym_module *sym_module_at(struct sym_session *s, uint64_t addr);
/* Does a file's mapping (s->vmas) hold addr? */
bool sym_file_at(const struct sym_session *s, uint64_t addr);
/* Whether m's .eh_frame can be read by cfi.c (m->eh set; looked at once). */
bool sym_module_eh_ready(struct sym_module *m);
/* Is m a Go binary (its runtime's tables are there)?  Looked at once. */
bool sym_module_is_go(struct sym_module *m);
/* Free m's scope index (names.c). */
void sym_module_scopes_free(struct sym_module *m);
/* libdwfl's find_debuginfo callback, the debuginfo cache in front
 * (debuginfo.c); userdata is the module's struct sym_module. */
int sym_find_debuginfo(Dwfl_Module *mod, void **userdata, const char *modname,
	GElf_Addr base, const char *file_name, const char *debuglink_file,
	GElf_Word debuglink_crc, char **debuginfo_file_name);
/* The callbacks through which libdw's unwinder reads the sample being
 * unwound (unwind.c); their argument is the session. */
extern const Dwfl_Thread_Callbacks sym_thread_callbacks;
/* The raw name (with any @VERSION) of the ELF symbol holding addr, as
 * dwfl_module_addrinfo() gives it, or NULL (names.c). */
const char *sym_symbol_at(struct sym_session *s, struct sym_module *m, uint64_t addr);

/* Code a JIT announced (jitmap.c): the session's perf map and jitdump,
 * read when it is made (s->jit; NULL when the target's status could not
 * be read), freed with it. */
struct sym_jit;
void sym_jit_open(struct sym_session *s);
void sym_jit_free(struct sym_jit *j);
/* The frame of addr (pc, less one for a return address) in JIT code:
 * true with *f set (strings the cache's), false when no file names it. */
bool sym_jit_frame(struct sym_session *s, uint64_t pc, uint64_t addr, struct sym_frame *f);
/* Does a JIT file name addr (as last read)? */
bool sym_jit_holds(struct sym_session *s, uint64_t addr);

#endif
