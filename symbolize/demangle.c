/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Demangling through libiberty (Debian's libiberty-dev): the GNU v3 C++ ABI
 * and both Rust manglings (legacy and v0), the same code binutils and gdb
 * use.  Return types are dropped, as gdb shows function names.  Compiler
 * clones are folded into the function they were made from. */
#include "symbolize-internal.h"

#include <libiberty/demangle.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

char *sym_demangle(const char *name)
{
	if (!name || name[0] != '_' || (name[1] != 'Z' && name[1] != 'R'))
		return NULL;
	return cplus_demangle(name, DMGL_PARAMS | DMGL_ANSI | DMGL_RET_DROP);
}

/* A clone suffix's words: GCC's (constprop, isra, part, cold, lto_priv,
 * localalias, clone) and LLVM's (llvm). */
static bool clone_word(const char *w, size_t n)
{
	static const char *const words[] = { "constprop", "isra", "part", "cold", "lto_priv",
		"localalias", "clone", "llvm" };

	for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++)
		if (strlen(words[i]) == n && !strncmp(w, words[i], n))
			return true;
	return false;
}

/* Is s (after a '.') a run of clone words and numbers: "constprop.0",
 * "isra.0.cold", "llvm.123"? */
static bool clone_tail(const char *s)
{
	bool word = false;

	while (*s) {
		size_t n = strcspn(s, ".");

		if (n == 0)
			return false;
		if (clone_word(s, n))
			word = true;
		else if (strspn(s, "0123456789") != n)
			return false;
		s += n;
		if (*s == '.')
			s++;
	}
	return word;
}

size_t sym_fold_clone(char *name, bool go)
{
	char *w = name, *c;
	size_t len = strlen(name);

	/* libiberty's form of a C++ clone: "f(int) [clone .constprop.0]" */
	while ((c = strstr(w, " [clone ."))) {
		char *end = strchr(c, ']');

		if (!end)
			break;
		memmove(c, end + 1, strlen(end + 1) + 1);
		w = c;
	}
	len = strlen(name);
	/* Go's ABI0 wrapper of a function is the function; Go's dots are its
	 * own (a package's function may be named cold) */
	if (go) {
		if (len > 5 && !strcmp(name + len - 5, ".abi0")) {
			len -= 5;
			name[len] = '\0';
		}
		return len;
	}
	/* a C symbol's: "msort_with_tmp.part.0" */
	c = strchr(name, '.');
	if (c && c > name && clone_tail(c + 1)) {
		*c = '\0';
		len = (size_t)(c - name);
	}
	return len;
}
