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

#endif
