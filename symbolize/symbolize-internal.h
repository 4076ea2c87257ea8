/* Private to symbolize/: the cache's internal interface. */
#ifndef TD_SYMBOLIZE_INTERNAL_H
#define TD_SYMBOLIZE_INTERNAL_H

#include "symbolize.h"

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

#endif
