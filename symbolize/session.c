/* SPDX-License-Identifier: GPL-2.0-or-later */
/* One libdwfl session per target process, and its modules: reported from
 * /proc/PID/maps, each ELF file opened through /proc/PID/map_files (the
 * very inode that is mapped, so deleted or replaced binaries still work)
 * or, failing that, through /proc/PID/root (the target's mount namespace)
 * after checking the file's build-id against the one in the target's
 * memory.  Every module's ELF is loaded when the session is made, so that
 * stacks captured before the process died can still be named.
 *
 * The Dwfl is attached once, with unwind.c's callbacks over the saved
 * sample, and reused for every sample: a fresh Dwfl per sample cost 35-39
 * ms when this was measured, a reused one about 8 us.
 *
 * A process whose main thread has exited (a zombie leader with live
 * threads) is read through one of its live threads' /proc entries: the
 * leader's maps, map_files and root went with it.
 *
 * Also here, for unwind.c and names.c: the module holding an address, and
 * the facts about a module looked up once (its .eh_frame, a Go binary).
 *
 * Left to others: unwinding (unwind.c), naming a pc (names.c), finding
 * separate debuginfo (debuginfo.c), the JIT's files (jitmap.c); when the maps change (dlopen, exec)
 * the caller frees the session and makes a new one. */
#define _GNU_SOURCE
#include "symbolize-internal.h"

#include <elfutils/libdwelf.h>
#include <elfutils/libdwfl.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../common/buf.h"

/* libdwfl's find_elf gets no pointer back to us: the session that reports
 * or loads modules sets this around those calls (same thread). */
static __thread struct sym_session *tls_session;

static int read_vmas(struct sym_session *s)
{
	char path[64], *line = NULL;
	size_t cap = 0, names_len = 0, names_cap = 0, vcap = 0;
	FILE *f;
	int r = 0;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)s->proc);
	f = fopen(path, "re");
	if (!f)
		return errno == ENOENT ? -ESRCH : -errno;
	/* first pass collects into growing buffers; paths are offsets until
	 * the names buffer stops moving */
	while (getline(&line, &cap, f) > 0) {
		unsigned long start, end;
		int off = 0;
		char *p;
		size_t len;

		if (sscanf(line, "%lx-%lx %*s %*s %*s %*s %n", &start, &end, &off) < 2 || !off)
			continue;
		p = line + off;
		len = strcspn(p, "\n");
		if (len == 0 || p[0] != '/')
			continue;
		if (s->nvmas >= 1u << 20) {
			r = -TD_E_LIMIT;
			break;
		}
		if (td_array_grow(s->vmas, vcap, s->nvmas + 1, 64) < 0 ||
			td_array_grow(s->names, names_cap, names_len + len + 1, 4096) < 0) {
			r = -ENOMEM;
			break;
		}
		memcpy(s->names + names_len, p, len);
		s->names[names_len + len] = '\0';
		s->vmas[s->nvmas++] = (struct sym_vma){ .start = start,
			.end = end,
			.path = (const char *)(uintptr_t)names_len };
		names_len += len + 1;
	}
	free(line);
	fclose(f);
	for (unsigned i = 0; i < s->nvmas; i++)
		s->vmas[i].path = s->names + (uintptr_t)s->vmas[i].path;
	return r;
}

static struct sym_vma *vma_at(const struct sym_session *s, uint64_t start)
{
	for (unsigned i = 0; i < s->nvmas; i++)
		if (s->vmas[i].start == start)
			return &s->vmas[i];
	return NULL;
}

/* The build-id note as the target has it mapped, compared with the file's.
 * Returns false only on a proven mismatch. */
static bool build_id_matches(struct sym_session *s, Elf *elf, uint64_t base)
{
	const void *bid;
	ssize_t bid_len = dwelf_elf_gnu_build_id(elf, &bid);
	size_t phnum;
	uint64_t first_load = UINT64_MAX;

	if (bid_len <= 0 || !s->opt.read_live || elf_getphdrnum(elf, &phnum) != 0)
		return true;
	for (size_t i = 0; i < phnum; i++) {
		GElf_Phdr ph;

		if (gelf_getphdr(elf, (int)i, &ph) && ph.p_type == PT_LOAD) {
			first_load = ph.p_vaddr & ~(uint64_t)(ph.p_align ? ph.p_align - 1 : 0);
			break;
		}
	}
	if (first_load == UINT64_MAX)
		return true;
	for (size_t i = 0; i < phnum; i++) {
		GElf_Phdr ph;
		Elf_Data *d;
		GElf_Nhdr nh;
		size_t off = 0, name_off, desc_off;

		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_NOTE)
			continue;
		d = elf_getdata_rawchunk(elf, (int64_t)ph.p_offset, ph.p_filesz,
			ph.p_align == 8 ? ELF_T_NHDR8 : ELF_T_NHDR);
		if (!d)
			continue;
		while ((off = gelf_getnote(d, off, &nh, &name_off, &desc_off)) > 0) {
			unsigned char mem[64];
			uint64_t addr;

			if (nh.n_type != NT_GNU_BUILD_ID || nh.n_namesz != 4 ||
				memcmp((char *)d->d_buf + name_off, "GNU", 4) != 0 ||
				nh.n_descsz != (size_t)bid_len || bid_len > (ssize_t)sizeof(mem))
				continue;
			addr = base + ph.p_vaddr + desc_off - first_load;
			if (s->opt.read_live(s->opt.read_arg, s->proc, addr, mem, (size_t)bid_len) !=
				bid_len)
				return true; /* cannot tell: accept */
			return memcmp(mem, bid, (size_t)bid_len) == 0;
		}
	}
	return true;
}

/* e (fd's, made ELF_C_READ_MMAP), to be handed to libdwfl within the
 * bound (sym_inflate_check): e itself; a new Elf of fd with its debug
 * sections hidden, said once in over_bound (v marked, for the module's
 * sym_find_debuginfo); or NULL, e ended, when its symbol or string tables
 * are over it, or it is over and v is unknown. */
static Elf *elf_bounded(struct sym_session *s, struct sym_vma *v, int fd, Elf *e)
{
	struct stat st;
	enum sym_inflate k;

	if (elf_kind(e) != ELF_K_ELF || fstat(fd, &st) < 0)
		return e;
	k = sym_inflate_check(e, (uint64_t)st.st_size);
	if (k == SYM_INFLATE_OK)
		return e;
	elf_end(e);
	e = NULL;
	if (k == SYM_INFLATE_NO_DWARF && v) {
		e = elf_begin(fd, ELF_C_READ_MMAP_PRIVATE, NULL);
		if (e && sym_inflate_hide_dwarf(e) < 0) {
			elf_end(e);
			e = NULL;
		}
	}
	if (!v || !v->over_bound)
		s->dstats.over_bound++;
	if (v)
		v->over_bound = true;
	return e;
}

static int find_elf(Dwfl_Module *mod, void **userdata, const char *name, Dwarf_Addr base,
	char **file_name, Elf **elfp)
{
	struct sym_session *s = tls_session;
	struct sym_vma *v;
	char path[PATH_MAX + 64];
	const char *deleted;
	size_t plen;
	int fd = -1;

	if (!s || name[0] != '/')
		return dwfl_linux_proc_find_elf(mod, userdata, name, base, file_name, elfp);
	deleted = strstr(name, " (deleted)");
	plen = deleted ? (size_t)(deleted - name) : strlen(name);
	v = vma_at(s, base);
	if (v) {
		/* The mapped inode itself: right even if the file was deleted
		 * or replaced after the target started. */
		snprintf(path, sizeof(path), "/proc/%d/map_files/%lx-%lx", (int)s->proc,
			(unsigned long)v->start, (unsigned long)v->end);
		fd = open(path, O_RDONLY | O_CLOEXEC);
	}
	if (fd < 0 && !deleted) {
		/* The target's mount namespace (containers). */
		snprintf(path, sizeof(path), "/proc/%d/root%.*s", (int)s->proc, (int)plen, name);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd >= 0) {
			Elf *e = elf_begin(fd, ELF_C_READ_MMAP, NULL);

			if (!e || !build_id_matches(s, e, base)) {
				elf_end(e);
				close(fd);
				return -1; /* replaced on disk: symbols would lie */
			}
			e = elf_bounded(s, v, fd, e);
			if (!e) {
				close(fd);
				return -1;
			}
			*elfp = e;
			*file_name = strndup(name, plen);
			return fd;
		}
	}
	if (fd < 0)
		return -1;
	*elfp = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (*elfp)
		*elfp = elf_bounded(s, v, fd, *elfp);
	if (!*elfp) {
		close(fd);
		return -1;
	}
	/* Keep the plain path so .gnu_debuglink is searched beside it. */
	*file_name = strndup(name, plen);
	return fd;
}

static int collect_module(Dwfl_Module *mod, void **userdata, const char *name, Dwarf_Addr start,
	void *arg)
{
	struct sym_session *s = arg;
	struct sym_module *m = &s->modules[s->nmodules++];
	const struct sym_vma *v = vma_at(s, start);

	/* find_elf counted the module if it hid its DWARF */
	*m = (struct sym_module){
		.mod = mod, .s = s, .path = name, .over_bound = v && v->over_bound
	};
	*userdata = m;
	return DWARF_CB_OK;
}

static int count_module(Dwfl_Module *mod, void **userdata, const char *name, Dwarf_Addr start,
	void *arg)
{
	(void)mod, (void)userdata, (void)name, (void)start;
	(*(unsigned *)arg)++;
	return DWARF_CB_OK;
}

static void load_module(struct sym_session *s, struct sym_module *m)
{
	const unsigned char *bid;
	Dwarf_Addr bias = 0;
	GElf_Addr vaddr;
	int len;

	m->path = sym_cache_intern0(s->cache, m->path);
	m->has_elf = dwfl_module_getelf(m->mod, &bias) != NULL;
	m->bias = bias;
	len = dwfl_module_build_id(m->mod, &bid, &vaddr);
	if (len > 0 && len <= 64) {
		char hex[129];

		for (int i = 0; i < len; i++)
			snprintf(hex + 2 * i, 3, "%02x", bid[i]);
		m->build_id = sym_cache_intern0(s->cache, hex);
		m->key = sym_hash(bid, (size_t)len, 1);
	} else {
		m->key = sym_hash(m->path, strlen(m->path), 2);
	}
	/* DWARF stays lazy: it comes from files on our side (the ELF or its
	 * separate debuginfo), not from the target, and inflating a module
	 * no frame lands in (ld.so with libc6-dbg) is wasted time. */
	if (s->opt.no_dwarf)
		m->key = ~m->key; /* its cache entries hold other answers */
}

/* pid itself, or, when its main thread has exited (a zombie leader whose
 * workers live on), one of its live threads; pid if none is found. */
static pid_t live_task(pid_t pid)
{
	struct td_task_info info;
	pid_t found;

	if (td_task_info_read(pid, pid, &info) < 0 || (info.state != 'Z' && info.state != 'X'))
		return pid;
	found = td_task_find_live(pid, pid);
	return found ? found : pid;
}

int sym_session_new(pid_t pid, const struct sym_options *opt, struct sym_cache *cache,
	struct sym_session **ret_session)
{
	static const char default_path[] = ":.debug:/usr/lib/debug";
	struct sym_session *s;
	unsigned count = 0;
	int r;

	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->pid = pid;
	s->proc = live_task(pid);
	s->opt = *opt;
	s->cache = cache;
	s->no_debuginfod = !getenv("DEBUGINFOD_URLS") || !getenv("DEBUGINFOD_URLS")[0];
	s->max_frames = opt->max_frames && opt->max_frames < SYM_MAX_FRAMES ? opt->max_frames :
									       SYM_MAX_FRAMES;
	if (opt->debuginfo_dir) {
		if (asprintf(&s->debuginfo_path, "%s:%s", default_path, opt->debuginfo_dir) < 0)
			s->debuginfo_path = NULL;
	} else {
		s->debuginfo_path = strdup(default_path);
	}
	if (!s->debuginfo_path) {
		r = -ENOMEM;
		goto out_free;
	}
	s->callbacks.find_elf = find_elf;
	s->callbacks.find_debuginfo = sym_find_debuginfo;
	s->callbacks.section_address = dwfl_offline_section_address;
	s->callbacks.debuginfo_path = &s->debuginfo_path;
	r = read_vmas(s);
	if (r < 0)
		goto out_free;
	s->dwfl = dwfl_begin(&s->callbacks);
	if (!s->dwfl) {
		r = -ENOMEM;
		goto out_free;
	}
	tls_session = s;
	dwfl_report_begin(s->dwfl);
	r = dwfl_linux_proc_report(s->dwfl, s->proc);
	dwfl_report_end(s->dwfl, NULL, NULL);
	if (r != 0) {
		r = r > 0 ? -r : -TD_E_DWFL;
		goto out_tls;
	}
	dwfl_getmodules(s->dwfl, count_module, &count, 0);
	s->modules = calloc(count ? count : 1, sizeof(*s->modules));
	if (!s->modules) {
		r = -ENOMEM;
		goto out_tls;
	}
	dwfl_getmodules(s->dwfl, collect_module, s, 0);
	/* Load every ELF now, while the process exists: a dump must still
	 * symbolize what it captured if the target dies right after. */
	for (unsigned i = 0; i < s->nmodules; i++)
		load_module(s, &s->modules[i]);
	if (!dwfl_attach_state(s->dwfl, NULL, pid, &sym_thread_callbacks, s)) {
		r = -TD_E_DWFL;
		goto out_tls;
	}
	tls_session = NULL;
	/* the JIT's files too, while the process is there to find them in */
	sym_jit_open(s);
	*ret_session = s;
	return 0;
out_tls:
	tls_session = NULL;
out_free:
	sym_session_free(s);
	return r;
}

void sym_session_free(struct sym_session *s)
{
	if (!s)
		return;
	if (s->dwfl)
		dwfl_end(s->dwfl);
	for (unsigned i = 0; s->modules && i < s->nmodules; i++) {
		free(s->modules[i].cur);
		sym_module_scopes_free(&s->modules[i]);
	}
	free(s->modules);
	free(s->vmas);
	free(s->names);
	free(s->debuginfo_path);
	free(s->rules);
	sym_jit_free(s->jit);
	free(s);
}

void sym_session_modules(const struct sym_session *s, unsigned *ret_modules,
	unsigned *ret_with_elf, unsigned *ret_with_dwarf)
{
	unsigned e = 0, d = 0;

	for (unsigned i = 0; i < s->nmodules; i++) {
		e += s->modules[i].has_elf;
		d += s->modules[i].has_dwarf;
	}
	*ret_modules = s->nmodules;
	*ret_with_elf = e;
	*ret_with_dwarf = d;
}

void sym_session_debug_stats(const struct sym_session *s, struct sym_debug_stats *ret)
{
	*ret = s->dstats;
}

/* ---- a module's facts, looked up once, for unwind.c and names.c */

/* The module holding addr.  dwfl_addrmodule() also answers for an address
 * past the end of the last module (0.188): a pc from an image an exec
 * replaced since the maps were read would be named in the wrong file. */
Dwfl_Module *sym_addr_module(struct sym_session *s, uint64_t addr)
{
	Dwfl_Module *mod = dwfl_addrmodule(s->dwfl, addr);
	Dwarf_Addr lo, hi;

	if (mod && dwfl_module_info(mod, NULL, &lo, &hi, NULL, NULL, NULL, NULL) &&
		(addr < lo || addr >= hi))
		return NULL;
	return mod;
}

struct sym_module *sym_module_at(struct sym_session *s, uint64_t addr)
{
	Dwfl_Module *mod = sym_addr_module(s, addr);
	void **ud;

	if (!mod || !dwfl_module_info(mod, &ud, NULL, NULL, NULL, NULL, NULL, NULL))
		return NULL;
	return *ud;
}

/* Does a file's mapping hold addr?  The maps list them by address. */
bool sym_file_at(const struct sym_session *s, uint64_t addr)
{
	unsigned lo = 0, hi = s->nvmas;

	while (lo < hi) {
		unsigned mid = lo + (hi - lo) / 2;

		if (s->vmas[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo > 0 && addr < s->vmas[lo - 1].end;
}

/* Whether m's .eh_frame can be read by cfi.c (looked at once). */
bool sym_module_eh_ready(struct sym_module *m)
{
	if (!m->eh_tried) {
		Dwarf_Addr bias;
		Elf *elf = dwfl_module_getelf(m->mod, &bias);

		m->eh_tried = true;
		m->eh_ok = elf && bias == m->bias && sym_eh_init(elf, &m->eh) == 0;
	}
	return m->eh_ok;
}

/* Is m a Go binary (its runtime's tables are there)?  Looked at once. */
bool sym_module_is_go(struct sym_module *m)
{
	if (!m->go_tried) {
		Dwarf_Addr bias;
		Elf *elf = dwfl_module_getelf(m->mod, &bias);
		const uint8_t *d;
		uint64_t at;
		size_t len;

		m->go_tried = true;
		m->go = elf && (sym_elf_section(elf, ".gopclntab", &d, &len, &at) ||
				       sym_elf_section(elf, ".go.buildinfo", &d, &len, &at));
	}
	return m->go;
}
