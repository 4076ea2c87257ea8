/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Finding a module's separate debuginfo: libdwfl's find_debuginfo
 * callback (sym_find_debuginfo), with the debuginfo cache (debugcache.c)
 * in front when the session has one.  For a module with a build-id, when
 * DEBUGINFOD_URLS names no server, libdwfl's standard search is done here
 * without its last step: dwfl_standard_find_debuginfo loads libdebuginfod
 * (with libcurl and gnutls: 10-15 ms) the first time it finds nothing, to
 * ask no server.
 *
 * Guarantees: a file found here by .gnu_debuglink is taken only with the
 * module's build-id; what the standard search finds is stored in the cache
 * for the next session.
 *
 * Left to others: the cache's files (debugcache.c); the module's ELF
 * (session.c's find_elf). */
#define _GNU_SOURCE
#include "symbolize-internal.h"

#include <elfutils/libdwfl.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* Open dir[/sub]/name, else dir[/sub]/alt (if alt), the first with
 * build-id bid that is not file itself. */
static int try_debug(const char *dir, const char *sub, const char *name, const char *alt,
	const struct stat *file, const unsigned char *bid, size_t blen, char **ret_name)
{
	int fd = -ENOENT;

	for (const char *nm = name; nm && fd < 0; nm = nm == name ? alt : NULL) {
		char cand[PATH_MAX];
		struct stat st;
		int n = sub ? snprintf(cand, sizeof(cand), "%s/%s/%s", dir, sub, nm) :
			      snprintf(cand, sizeof(cand), "%s/%s", dir, nm);

		if (n <= 0 || (size_t)n >= sizeof(cand) || stat(cand, &st) < 0)
			continue;
		if (file && st.st_dev == file->st_dev && st.st_ino == file->st_ino)
			continue; /* the module's own file */
		fd = sym_open_by_build_id(cand, bid, blen);
		if (fd >= 0)
			*ret_name = strdup(cand);
	}
	return fd;
}

/* The .gnu_debuglink search of libdwfl's standard find_debuginfo, for a
 * module with a build-id: its debuglink (else FILE's name + ".debug", and
 * then FILE's name itself) in each directory of path as libdwfl reads it:
 * "" FILE's directory, a relative one under it, an absolute one followed
 * by FILE's directory, then by that less its first component, and so on.
 * A file is taken only with the module's build-id.  Done here because
 * dwfl_standard_find_debuginfo loads libdebuginfod (with libcurl and
 * gnutls: 10-15 ms) the first time it finds nothing, to ask no server. */
static int find_debuglink(const char *path, const unsigned char *bid, size_t blen,
	const char *file, const char *debuglink, char **ret_name)
{
	const char *base = file ? strrchr(file, '/') : NULL, *alt;
	char *dir, *paths, *p, *elem, *made = NULL;
	struct stat fst;
	bool have_fst;
	int fd = -ENOENT;

	if (!base || file[0] != '/')
		return -ENOENT;
	base++;
	if (!debuglink) {
		if (asprintf(&made, "%s.debug", base) < 0)
			return -ENOMEM;
		debuglink = made;
	}
	dir = strndup(file, (size_t)(base - 1 - file));
	paths = strdup(path);
	have_fst = stat(file, &fst) == 0;
	/* with a made-up debuglink, FILE's own name is tried after it (but
	 * not in FILE's own directory, where it is FILE) */
	alt = made ? base : NULL;
	for (p = paths; dir && paths && fd < 0 && (elem = strsep(&p, ":"));) {
		const struct stat *f = have_fst ? &fst : NULL;

		if (elem[0] == '+' || elem[0] == '-')
			elem++;
		if (elem[0] == '\0') {
			fd = try_debug(dir, NULL, debuglink, NULL, f, bid, blen, ret_name);
		} else if (elem[0] != '/') {
			fd = try_debug(dir, elem, debuglink, alt, f, bid, blen, ret_name);
		} else {
			/* dir less one leading component at a time */
			for (const char *sub = dir; fd < 0 && sub && *sub;) {
				sub = strchr(sub, '/');
				if (!sub || !*++sub)
					break;
				fd = try_debug(elem, sub, debuglink, alt, f, bid, blen, ret_name);
			}
		}
	}
	free(paths);
	free(dir);
	free(made);
	return fd;
}

/* libdwfl's find_debuginfo, with the debuginfo cache (debugcache.c) in
 * front when opt.cache_dir is set.  A module with a build-id gets the
 * cache's entry, or its original found by build-id (inflated into a new
 * entry on the way when compressed); only what that misses goes to the
 * standard search (.gnu_debuglink, and debuginfod servers where
 * DEBUGINFOD_URLS names some), whose find is stored for the next session.
 * The order matters: libdwfl's own build-id search opens the file it finds
 * into the module itself, so an fd returned after it would be ignored. */
int sym_find_debuginfo(Dwfl_Module *mod, void **userdata, const char *modname,
	GElf_Addr base, const char *file_name, const char *debuglink_file, GElf_Word debuglink_crc,
	char **debuginfo_file_name)
{
	struct sym_module *m = userdata ? *userdata : NULL;
	struct sym_session *s = m ? m->s : NULL;
	const unsigned char *bid, *own_bid;
	GElf_Addr vaddr;
	int len = 0, own_len = 0, fd;

	if (s && s->opt.cache_dir && !s->opt.no_dwarf && !m->debug_found)
		len = dwfl_module_build_id(mod, &bid, &vaddr);
	if (len > 0) {
		fd = sym_debugcache_find(s->opt.cache_dir, s->debuginfo_path, bid, (size_t)len,
			&s->dstats, debuginfo_file_name);
		if (fd >= 0) {
			m->debug_found = true;
			return fd;
		}
		if (fd != -ENOENT)
			len = 0; /* the cache cannot serve: said in dstats once */
	}
	if (s && s->no_debuginfod && !m->debug_found)
		own_len = dwfl_module_build_id(mod, &own_bid, &vaddr);
	if (own_len > 0) {
		/* libdwfl's standard search without its last step, debuginfod */
		fd = dwfl_build_id_find_debuginfo(mod, userdata, modname, base, file_name,
			debuglink_file, debuglink_crc, debuginfo_file_name);
		if (fd < 0)
			fd = find_debuglink(s->debuginfo_path, own_bid, (size_t)own_len,
				file_name, debuglink_file, debuginfo_file_name);
		if (fd < 0 && file_name) {
			/* the debug file may be named for the link's target */
			char *real = realpath(file_name, NULL);

			if (real && strcmp(real, file_name))
				fd = find_debuglink(s->debuginfo_path, own_bid, (size_t)own_len,
					real, debuglink_file, debuginfo_file_name);
			free(real);
		}
		if (fd < 0)
			fd = -1;
	} else {
		fd = dwfl_standard_find_debuginfo(mod, userdata, modname, base, file_name,
			debuglink_file, debuglink_crc, debuginfo_file_name);
	}
	if (fd >= 0 && len > 0)
		sym_debugcache_store(s->opt.cache_dir, bid, (size_t)len, fd, &s->dstats);
	if (fd >= 0 && m)
		m->debug_found = true;
	return fd;
}
