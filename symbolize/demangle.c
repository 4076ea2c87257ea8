/* Demangling through libiberty (Debian's libiberty-dev): the GNU v3 C++ ABI
 * and both Rust manglings (legacy and v0), the same code binutils and gdb
 * use.  Return types are dropped, as gdb shows function names. */
#include "symbolize-internal.h"

#include <libiberty/demangle.h>
#include <stdlib.h>

char *sym_demangle(const char *name)
{
	if (!name || name[0] != '_' || (name[1] != 'Z' && name[1] != 'R'))
		return NULL;
	return cplus_demangle(name, DMGL_PARAMS | DMGL_ANSI | DMGL_RET_DROP);
}
