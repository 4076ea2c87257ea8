/* One libdwfl session per target process: module reporting from
 * /proc/PID/maps, ELF files opened through /proc/PID/map_files (the very
 * inode that is mapped, so deleted or replaced binaries still work) or,
 * failing that, through /proc/PID/root (the target's mount namespace) after
 * checking the file's build-id against the one in the target's memory.
 *
 * Unwinding goes through dwfl_attach_state callbacks over the saved sample:
 * the registers seed the first frame, memory_read serves the captured stack
 * window.  The Dwfl is attached once and reused: only the "current sample"
 * pointer changes between dwfl_getthread_frames() calls (ptrace-notes.md:
 * a fresh Dwfl per sample costs 35-39 ms, a reused one ~8 us).
 *
 * A process whose main thread has exited (a zombie leader with live
 * threads) is read through one of its live threads' /proc entries: the
 * leader's maps, map_files and root went with it.
 *
 * Left to others: when the maps change (dlopen, exec) the caller frees the
 * session and makes a new one. */
#define _GNU_SOURCE
#include "symbolize-internal.h"

#include <dwarf.h>
#include <elfutils/libdwelf.h>
#include <elfutils/libdwfl.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stddef.h>
#include <sys/stat.h>
#include <sys/ucontext.h>
#include <unistd.h>

#include "../common/buf.h"

struct sym_vma {
	uint64_t start, end;
	const char *path; /* interned in names */
};

/* A range of a CU's addresses (ELF addresses), and the CU's DIE offset. */
struct cu_range {
	uint64_t lo, hi;
	Dwarf_Off die;
};

/* Per-module facts, set as the module's userdata.  borrows: symtab (the
 * cache's) */
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
	bool go_tried, go;    /* a Go binary (is_go) */
	bool cur_tried;	      /* cur: its CUs by range (cu_by_ranges) */
	struct cu_range *cur;
	size_t ncur;
	struct sym_eh eh;
	/* its code, for sigreturn_code: the executable sections (the first
	 * few), looked up once */
	struct {
		uint64_t addr, size;
		const uint8_t *data;
	} code[4];
	uint8_t ncode;
	bool code_tried;
	bool debug_found; /* find_debuginfo gave its debuginfo: a later call
			   * looks for a dwz alternate file */
};

/* owns: dwfl, modules, vmas, debuginfo path; borrows: cache, the strings
 * of opt */
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
};

/* libdwfl's find_elf gets no pointer back to us: the session that reports
 * or loads modules sets this around those calls (same thread). */
static __thread struct sym_session *tls_session;

const char *sym_end_name(enum sym_end end)
{
	switch (end) {
	case SYM_END_OUTERMOST:
		return "outermost frame reached";
	case SYM_END_NO_CFI:
		return "no unwind info for pc in module";
	case SYM_END_NO_MODULE:
		return "pc outside any known module";
	case SYM_END_WINDOW:
		return "stack window exhausted";
	case SYM_END_READ_FAILED:
		return "memory read failed";
	case SYM_END_FRAME_LIMIT:
		return "frame limit reached";
	case SYM_END_NO_REGS:
		return "no registers captured";
	case SYM_END_OTHER_STACK:
		return "interrupted stack not copied";
	}
	return "unknown";
}

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
		s->vmas[s->nvmas++] = (struct sym_vma){ start, end, (const char *)(uintptr_t)names_len };
		names_len += len + 1;
	}
	free(line);
	fclose(f);
	for (unsigned i = 0; i < s->nvmas; i++)
		s->vmas[i].path = s->names + (uintptr_t)s->vmas[i].path;
	return r;
}

static const struct sym_vma *vma_at(const struct sym_session *s, uint64_t start)
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

static int find_elf(Dwfl_Module *mod, void **userdata, const char *name, Dwarf_Addr base,
	char **file_name, Elf **elfp)
{
	struct sym_session *s = tls_session;
	const struct sym_vma *v;
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
			*elfp = e;
			*file_name = strndup(name, plen);
			return fd;
		}
	}
	if (fd < 0)
		return -1;
	*elfp = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!*elfp) {
		close(fd);
		return -1;
	}
	/* Keep the plain path so .gnu_debuglink is searched beside it. */
	*file_name = strndup(name, plen);
	return fd;
}

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
static int find_debuginfo(Dwfl_Module *mod, void **userdata, const char *modname,
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

static pid_t cb_next_thread(Dwfl *dwfl, void *arg, void **thread_argp)
{
	struct sym_session *s = arg;

	(void)dwfl;
	if (*thread_argp || !s->cur)
		return 0;
	*thread_argp = s;
	return s->cur->tid;
}

static bool cb_get_thread(Dwfl *dwfl, pid_t tid, void *arg, void **thread_argp)
{
	struct sym_session *s = arg;

	(void)dwfl;
	if (!s->cur || tid != s->cur->tid)
		return false;
	*thread_argp = s;
	return true;
}

/* The word at addr from the sample's window, or false. */
static bool window_word(const struct td_sample *t, uint64_t addr, uint64_t *ret)
{
	if (addr < t->stack_addr || addr - t->stack_addr > t->stack_len ||
		t->stack_len - (addr - t->stack_addr) < sizeof(*ret))
		return false;
	memcpy(ret, t->stack + (addr - t->stack_addr), sizeof(*ret));
	return true;
}

/* A read outside the window that no live read served: the stack past the
 * copy (window), or memory that is no stack (failed).  libdw's reads and
 * the fast path's count them alike. */
static void missed(const struct td_sample *t, uint64_t addr, struct sym_unwound *ret,
	bool *window, bool *failed)
{
	ret->fault_addr = addr;
	if (addr >= t->stack_addr + t->stack_len && (t->stack_end == 0 || addr < t->stack_end) &&
		addr - t->stack_addr < (64u << 20))
		*window = true;
	else
		*failed = true;
}

static bool cb_memory_read(Dwfl *dwfl, Dwarf_Addr addr, Dwarf_Word *result, void *arg)
{
	struct sym_session *s = arg;
	const struct td_sample *t = s->cur;
	uint64_t v;

	(void)dwfl;
	if (window_word(t, addr, &v)) {
		*result = v;
		return true;
	}
	if (s->opt.read_live &&
		s->opt.read_live(s->opt.read_arg, t->tid, addr, result, sizeof(*result)) ==
			(ssize_t)sizeof(*result)) {
		s->out->live_reads++;
		return true;
	}
	missed(t, addr, s->out, &s->window_exhausted, &s->read_failed);
	return false;
}

static bool cb_set_initial_registers(Dwfl_Thread *thread, void *arg)
{
	struct sym_session *s = arg;
	const struct user_regs_struct *r = s->cur_regs;
	/* DWARF register order on x86_64 (psABI): rax rdx rcx rbx rsi rdi rbp
	 * rsp r8..r15, then the return address column (rip). */
	Dwarf_Word regs[17] = { r->rax, r->rdx, r->rcx, r->rbx, r->rsi, r->rdi, r->rbp, r->rsp,
		r->r8, r->r9, r->r10, r->r11, r->r12, r->r13, r->r14, r->r15, r->rip };

	/* A thread copied while blocked: only rsp and rip are known; the
	 * others stay undefined rather than wrongly zero. */
	if (s->cur_partial)
		return dwfl_thread_state_registers(thread, 7, 1, &regs[7]) &&
			dwfl_thread_state_registers(thread, 16, 1, &regs[16]);
	return dwfl_thread_state_registers(thread, 0, 17, regs);
}

static const Dwfl_Thread_Callbacks thread_callbacks = {
	.next_thread = cb_next_thread,
	.get_thread = cb_get_thread,
	.memory_read = cb_memory_read,
	.set_initial_registers = cb_set_initial_registers,
};

static int collect_module(Dwfl_Module *mod, void **userdata, const char *name, Dwarf_Addr start,
	void *arg)
{
	struct sym_session *s = arg;
	struct sym_module *m = &s->modules[s->nmodules++];

	(void)start;
	*m = (struct sym_module){ .mod = mod, .s = s, .path = name };
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
	s->callbacks.find_debuginfo = find_debuginfo;
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
	if (!dwfl_attach_state(s->dwfl, NULL, pid, &thread_callbacks, s)) {
		r = -TD_E_DWFL;
		goto out_tls;
	}
	tls_session = NULL;
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
	for (unsigned i = 0; s->modules && i < s->nmodules; i++)
		free(s->modules[i].cur);
	free(s->modules);
	free(s->vmas);
	free(s->names);
	free(s->debuginfo_path);
	free(s->rules);
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

/* ---- signal frames
 *
 * A signal handler returns into its sa_restorer, which calls
 * rt_sigreturn; the kernel's signal frame, a ucontext, lies at the
 * restorer's sp, and the interrupted code's registers in it.  glibc's
 * __restore_rt carries CFI that says so; Go's runtime.sigreturn (the
 * restorer of every Go program: it handles its signals on their own
 * stack) has none, and libdw stopped there.  A restorer is known by its
 * code, as gdb and libgcc know it: mov $15, %rax; syscall (rule_make
 * says where it looks).  glibc's restorer is a signal frame in its CFI:
 * libdw goes through it, and the frame after it is an activation. */

#define DW_RSP 7
#define DW_RBP 6

static const struct sym_rule *rule_at(struct sym_session *s, uint64_t pc, bool act);

/* Does the code at pc, in module m's file, say rt_sigreturn? */
static bool sigreturn_code(struct sym_module *m, uint64_t pc)
{
	static const uint8_t code[9] = { 0x48, 0xc7, 0xc0, 0x0f, 0, 0, 0, 0x0f, 0x05 };
	uint64_t v = pc - m->bias;

	if (!m->code_tried) {
		Dwarf_Addr bias;
		Elf *elf = dwfl_module_getelf(m->mod, &bias);
		Elf_Scn *scn = NULL;

		m->code_tried = true;
		while (elf && bias == m->bias && m->ncode < TD_ARRAY_SIZE(m->code) &&
			(scn = elf_nextscn(elf, scn))) {
			GElf_Shdr sh;
			Elf_Data *d;

			if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_PROGBITS ||
				!(sh.sh_flags & SHF_EXECINSTR) || !(d = elf_getdata(scn, NULL)) ||
				!d->d_buf)
				continue;
			m->code[m->ncode].addr = sh.sh_addr;
			m->code[m->ncode].size = TD_MIN(sh.sh_size, (uint64_t)d->d_size);
			m->code[m->ncode++].data = d->d_buf;
		}
	}
	for (unsigned i = 0; i < m->ncode; i++)
		if (v >= m->code[i].addr && v - m->code[i].addr < m->code[i].size)
			return m->code[i].size - (v - m->code[i].addr) >= sizeof(code) &&
				!memcmp(m->code[i].data + (v - m->code[i].addr), code, sizeof(code));
	return false;
}

/* Is rip in a signal restorer, its sp still the ucontext's address: a
 * return address at its entry, or (act) a pc of its own, at either
 * instruction or just past the system call?  Whatever its CFI says: Go's
 * runtime.sigreturn has an FDE, of an ordinary frame. */
static bool sigreturn_in(struct sym_module *m, uint64_t rip, bool act)
{
	return sigreturn_code(m, rip) ||
		(act && ((rip >= 7 && sigreturn_code(m, rip - 7)) ||
				(rip >= 9 && sigreturn_code(m, rip - 9))));
}

/* The registers the kernel saved in the ucontext at uc (a restorer's sp),
 * from the window: false if it is not all there (*ret_addr: the first
 * word missing). */
static bool ucontext_regs(const struct td_sample *t, uint64_t uc, struct user_regs_struct *r,
	uint64_t *ret_addr)
{
	static const struct {
		int greg;
		size_t at;
	} map[] = {
		{ REG_R8, offsetof(struct user_regs_struct, r8) },
		{ REG_R9, offsetof(struct user_regs_struct, r9) },
		{ REG_R10, offsetof(struct user_regs_struct, r10) },
		{ REG_R11, offsetof(struct user_regs_struct, r11) },
		{ REG_R12, offsetof(struct user_regs_struct, r12) },
		{ REG_R13, offsetof(struct user_regs_struct, r13) },
		{ REG_R14, offsetof(struct user_regs_struct, r14) },
		{ REG_R15, offsetof(struct user_regs_struct, r15) },
		{ REG_RDI, offsetof(struct user_regs_struct, rdi) },
		{ REG_RSI, offsetof(struct user_regs_struct, rsi) },
		{ REG_RBP, offsetof(struct user_regs_struct, rbp) },
		{ REG_RBX, offsetof(struct user_regs_struct, rbx) },
		{ REG_RDX, offsetof(struct user_regs_struct, rdx) },
		{ REG_RAX, offsetof(struct user_regs_struct, rax) },
		{ REG_RCX, offsetof(struct user_regs_struct, rcx) },
		{ REG_RSP, offsetof(struct user_regs_struct, rsp) },
		{ REG_RIP, offsetof(struct user_regs_struct, rip) },
	};

	memset(r, 0, sizeof(*r));
	for (size_t i = 0; i < TD_ARRAY_SIZE(map); i++) {
		uint64_t a = uc + offsetof(ucontext_t, uc_mcontext.gregs) +
			(uint64_t)map[i].greg * sizeof(greg_t), v;

		if (!window_word(t, a, &v)) {
			*ret_addr = a;
			return false;
		}
		memcpy((char *)r + map[i].at, &v, sizeof(v));
	}
	return true;
}

static int cb_frame(Dwfl_Frame *state, void *arg)
{
	struct sym_session *s = arg;
	struct sym_unwound *u = s->out;
	Dwarf_Addr pc;
	bool isact;

	if (!dwfl_frame_pc(state, &pc, &isact))
		return DWARF_CB_ABORT;
	if (u->n >= s->max_frames) {
		s->frame_limit = true;
		return DWARF_CB_ABORT;
	}
	u->pc[u->n] = pc;
	u->activation[u->n] = isact;
	u->n++;
	/* A return into a signal restorer (or a sample in it): the frame it
	 * returns to is the interrupted one, whose registers the kernel
	 * saved at the restorer's sp; sym_session_unwind reads them.  libdw
	 * would follow the restorer's CFI at pc - 1, an ordinary frame's or
	 * none, and then guess from rbp.  (An activation past the first
	 * frame follows a signal frame libdw read from CFI: nothing to do.) */
	if (isact ? u->n == 1 : u->n > 1) {
		const struct sym_rule *r = rule_at(s, pc, isact);
		Dwarf_Word sp;

		if (r && r->kind == SYM_RULE_SIGRETURN && dwfl_frame_reg(state, DW_RSP, &sp) == 0) {
			u->activation[u->n - 1] = true; /* its pc is its own */
			s->sig_frame = true;
			s->sig_sp = sp;
			return DWARF_CB_ABORT;
		}
	}
	return DWARF_CB_OK;
}

/* Functions where a thread's stack begins: nothing above them is a
 * caller.  glibc marks its own with CFI (the return address undefined);
 * Go's runtime does not, and a sample that stops in one of these may
 * unwind into garbage past it.  runtime.mcall and runtime.morestack
 * switch to the thread's g0 stack: what is above them there is not their
 * caller (Go's own tracebacks stop at them too), nor above runtime.gogo,
 * which jumps into a goroutine's saved context; so do runtime.nanotime1
 * and runtime.walltime around a vDSO call (their Go caller is found only
 * through m.vdsoSP, which is not read here: the stack ends at them). */
static bool is_entry_symbol(const char *name)
{
	static const char *const entries[] = { "_start", "__clone3", "__clone", "clone3", "clone",
		"runtime.goexit", "runtime.mstart", "runtime.clone", "runtime.rt0_go",
		"runtime.newosproc0", "runtime.mcall", "runtime.morestack", "runtime.nanotime1",
		"runtime.walltime", "runtime.gogo" };
	size_t len;

	if (!name)
		return false;
	/* Go's ABI wrappers: runtime.goexit.abi0 is runtime.goexit */
	len = strlen(name);
	if (len > 5 && !strcmp(name + len - 5, ".abi0"))
		len -= 5;
	for (size_t i = 0; i < TD_ARRAY_SIZE(entries); i++)
		if (strlen(entries[i]) == len && !strncmp(name, entries[i], len))
			return true;
	return false;
}

/* A table of fewer symbols is built (under about 2 ms) as fast as a file
 * is found, mapped and checked: it is not kept on disk. */
#define SYM_TABLE_STORE_MIN 2048

/* m's symbol table, kept by the cache: the one the debuginfo cache holds
 * for its build-id and symbols, else one built (and stored there).  A
 * clang++ run spends 17 ms building libLLVM's and libclang-cpp's. */
static const struct sym_table *table_of(struct sym_session *s, struct sym_module *m)
{
	const unsigned char *bid;
	struct sym_table *t = NULL;
	uint64_t nsyms = 0, fg = 0;
	GElf_Addr vaddr;
	int len = 0;

	if (s->opt.cache_dir && m->build_id && sym_table_source(m->mod, &nsyms, &fg) == 0 &&
		nsyms >= SYM_TABLE_STORE_MIN)
		len = dwfl_module_build_id(m->mod, &bid, &vaddr);
	if (len > 0 && sym_debugcache_table(s->opt.cache_dir, bid, (size_t)len, nsyms, fg,
			       &s->dstats, &t) == 0)
		return sym_cache_table_add(s->cache, m->key, t);
	if (sym_table_build(m->mod, &t) < 0)
		return NULL;
	if (len > 0)
		sym_debugcache_table_store(s->opt.cache_dir, bid, (size_t)len, nsyms, fg, t,
			&s->dstats);
	return sym_cache_table_add(s->cache, m->key, t);
}

/* The raw name (with any @VERSION) of the ELF symbol holding addr, as
 * dwfl_module_addrinfo() gives it.  From the module's symbol table, built
 * on its first lookup and shared through the cache with every session
 * mapping the same binary: elfutils' own lookup reads every symbol of the
 * module on every call.  That lookup stays for a module denied a table
 * (over the tables' budget, out of memory). */
static const char *symbol_at(struct sym_session *s, struct sym_module *m, uint64_t addr)
{
	GElf_Off off;
	GElf_Sym sym;

	if (!m->symtab_tried && m->has_elf) {
		m->symtab_tried = true;
		m->symtab = sym_cache_table(s->cache, m->key);
		if (!m->symtab && sym_cache_table_room(s->cache))
			m->symtab = table_of(s, m);
	}
	if (m->symtab)
		return sym_table_lookup(m->symtab, addr - m->bias);
	return dwfl_module_addrinfo(m->mod, addr, &off, &sym, NULL, NULL, NULL);
}

/* The module holding addr.  dwfl_addrmodule() also answers for an address
 * past the end of the last module (0.188): a pc from an image an exec
 * replaced since the maps were read would be named in the wrong file. */
static Dwfl_Module *addr_module(struct sym_session *s, uint64_t addr)
{
	Dwfl_Module *mod = dwfl_addrmodule(s->dwfl, addr);
	Dwarf_Addr lo, hi;

	if (mod && dwfl_module_info(mod, NULL, &lo, &hi, NULL, NULL, NULL, NULL) &&
		(addr < lo || addr >= hi))
		return NULL;
	return mod;
}

static struct sym_module *module_at(struct sym_session *s, uint64_t addr)
{
	Dwfl_Module *mod = addr_module(s, addr);
	void **ud;

	if (!mod || !dwfl_module_info(mod, &ud, NULL, NULL, NULL, NULL, NULL, NULL))
		return NULL;
	return *ud;
}

/* A stack that ended badly right after a known entry function ended well:
 * keep the frames up to it. */
static void end_at_entry(struct sym_session *s, struct sym_unwound *ret)
{
	unsigned from = ret->n > 3 ? ret->n - 3 : 0;

	for (unsigned i = ret->n; i-- > from;) {
		uint64_t pc = ret->activation[i] ? ret->pc[i] : ret->pc[i] - 1;
		struct sym_module *m = module_at(s, pc);

		if (m && is_entry_symbol(symbol_at(s, m, pc))) {
			ret->n = i + 1;
			ret->end = SYM_END_OUTERMOST;
			ret->detail[0] = '\0';
			return;
		}
	}
}

/* ---- the fast path: each pc's CFI rules, worked out once
 *
 * libdw evaluates a frame's CFI afresh every time: about 10 us a frame,
 * 300 us for one of clang's 30-frame stacks.  Most frames follow the
 * simplest rules (cfi.c): the CFA is rsp or rbp plus a constant, the
 * return address and rbp are saved at constant offsets from it, and every
 * other register is saved, unchanged or lost.  Those rules are kept per
 * pc, and a stack made only of such frames is unwound from them alone.
 * Anything else (a CFA expression other than a PLT entry's, a signal
 * frame, a register saved in another, no CFI, a pc outside the modules,
 * a frame past the frame limit, a live read) sends the whole stack to
 * libdw's unwinder, so the answer is libdw's own in every case: the same
 * frames, the same end, the same fault address (the tests compare them;
 * only libdwfl's words for an end are not given here).
 *
 * Only rip, rsp and rbp are followed: a rule that needs another register
 * is not simple, so no frame that is unwound here ever needs one.  libdw
 * reads the slot of every register saved in a frame, and one outside the
 * window marks the stack's end as "window exhausted": the rule keeps the
 * slots so that this path marks it the same. */

#define SYM_RULES 8192 /* per session, direct-mapped by pc: 256 KiB, touched as used */

/* Whether m's .eh_frame can be read by cfi.c (looked at once). */
static bool eh_ready(struct sym_module *m)
{
	if (!m->eh_tried) {
		Dwarf_Addr bias;
		Elf *elf = dwfl_module_getelf(m->mod, &bias);

		m->eh_tried = true;
		m->eh_ok = elf && bias == m->bias && sym_eh_init(elf, &m->eh) == 0;
	}
	return m->eh_ok;
}

/* The rule for pc (already less one for a return address) in mod (m: its
 * session's, or NULL), as libdw's unwinder would apply it first: from the
 * module's .eh_frame, found with .eh_frame_hdr (cfi.c), else as libdw
 * works it out. */
static void rule_cfi(Dwfl_Module *mod, struct sym_module *m, uint64_t pc, uint64_t rip,
	struct sym_rule *r)
{
	Dwarf_Addr bias;
	Dwarf_CFI *cfi;

	if (m && eh_ready(m)) {
		int k = sym_eh_rule(&m->eh, pc - m->bias, rip - m->bias, r);

		/* no FDE: complex, and libdw (which may look in .debug_frame
		 * then) takes the stack */
		if (k == 0 || k == -ENOENT)
			return;
	}
	/* libdw's order: .eh_frame, and .debug_frame only where there is
	 * none (Go binaries have .debug_frame alone) */
	cfi = dwfl_module_eh_cfi(mod, &bias);
	if (cfi)
		sym_rule_libdw(cfi, pc - bias, rip - bias, r);
	else if ((cfi = dwfl_module_dwarf_cfi(mod, &bias)))
		sym_rule_libdw(cfi, pc - bias, rip - bias, r);
}

static bool is_go(struct sym_module *m);

/* The rule for pc (already less one for a return address; rip the
 * frame's own pc): its CFI's, or a signal restorer's.  The restorer's
 * code is looked at where the CFI is not simple, and in Go binaries
 * (runtime.sigreturn, as a sample's own pc, has an ordinary frame's FDE),
 * not everywhere: it faults in a page of code per pc. */
static void rule_make(struct sym_session *s, uint64_t pc, uint64_t rip, struct sym_rule *r)
{
	Dwfl_Module *mod = addr_module(s, pc);
	struct sym_module *m = NULL;
	void **ud;

	*r = (struct sym_rule){ .kind = SYM_RULE_COMPLEX };
	if (!mod)
		return;
	if (dwfl_module_info(mod, &ud, NULL, NULL, NULL, NULL, NULL, NULL))
		m = *ud;
	rule_cfi(mod, m, pc, rip, r);
	if (m && (r->kind == SYM_RULE_COMPLEX || is_go(m)) && sigreturn_in(m, rip, rip == pc))
		r->kind = SYM_RULE_SIGRETURN;
}

/* The rule of the frame at pc: its own pc in the innermost frame (act),
 * else a return address, looked up less one.  Kept by both: a PLT entry's
 * CFA depends on the frame's own pc. */
static const struct sym_rule *rule_at(struct sym_session *s, uint64_t pc, bool act)
{
	uint64_t key = act ? pc : pc - 1, hkey = key ^ (act ? 1ull << 63 : 0);
	struct sym_rule *r;

	if (!s->rules && !(s->rules = calloc(SYM_RULES, sizeof(*s->rules))))
		return NULL;
	r = &s->rules[sym_hash(&hkey, sizeof(hkey), 3) & (SYM_RULES - 1)];
	if (r->kind == SYM_RULE_EMPTY || r->key != hkey) {
		rule_make(s, key, pc, r);
		r->key = hkey;
	}
	return r;
}

/* Unwind sample from the rules alone: true with ret filled, false when
 * libdw must do it.  A slot outside the window ends or marks the stack as
 * libdw's unwinder would: a saved register it cannot read is lost (rbp:
 * unknown from then on), a return address it cannot read ends the stack,
 * and any such read makes the end "window exhausted" (or "memory read
 * failed" for memory that is no stack), even where the stack went on. */
static bool fast_unwind(struct sym_session *s, const struct td_sample *t, struct sym_unwound *ret)
{
	uint64_t pc = s->cur_regs->rip, sp = s->cur_regs->rsp, bp = s->cur_regs->rbp;
	bool bp_known = !s->cur_partial, window = false, failed = false;

	for (unsigned n = 0;; n++) {
		const struct sym_rule *r;
		uint64_t cfa, v, ra = 0;
		bool ra_ok = false;

		/* libdw looks past the last frame it keeps (whether it is a
		 * signal frame): rare enough to leave to it */
		if (n >= s->max_frames)
			return false;
		ret->pc[n] = pc;
		ret->activation[n] = n == 0;
		r = rule_at(s, pc, n == 0);
		if (!r || r->kind == SYM_RULE_COMPLEX || r->kind == SYM_RULE_SIGRETURN ||
			(r->cfa_reg == DW_RBP && !bp_known))
			return false;
		cfa = (r->cfa_reg == DW_RSP ? sp : bp) + (uint64_t)(int64_t)r->cfa_off;
		/* every slot libdw reads for this frame, in its order */
		for (unsigned i = 0; i < r->nslot; i++) {
			uint64_t a = cfa + (uint64_t)(int64_t)r->slot[i];

			if (!window_word(t, a, &v)) {
				if (s->opt.read_live)
					return false; /* libdw's reads go on live */
				missed(t, a, ret, &window, &failed);
				continue;
			}
			/* the return address's is the last (register 16) */
			if (r->kind == SYM_RULE_SIMPLE && i + 1 == r->nslot) {
				ra = v;
				ra_ok = true;
			}
		}
		if (r->bp == SYM_BP_SAVED) {
			bp_known = window_word(t, cfa + (uint64_t)(int64_t)r->bp_off, &bp);
		} else if (r->bp == SYM_BP_UNDEFINED) {
			bp_known = false;
		}
		ret->n = n + 1;
		if (r->kind == SYM_RULE_OUTERMOST || (ra_ok && ra == 0)) {
			/* libdw: no return address, or 0, is the end */
			ret->end = window ? SYM_END_WINDOW :
				   failed ? SYM_END_READ_FAILED :
					    SYM_END_OUTERMOST;
			return true;
		}
		if (!ra_ok) {
			/* libdw stops here, with the frame's module known */
			ret->end = window ? SYM_END_WINDOW : SYM_END_READ_FAILED;
			return true;
		}
		pc = ra;
		sp = cfa;
	}
}

/* Unwind from the registers s->cur_regs, with sample's window, into ret
 * (its frames from 0, its end); s->sig_frame says whether it stopped at a
 * signal restorer. */
static void unwind_regs(struct sym_session *s, const struct td_sample *sample,
	struct sym_unwound *ret)
{
	int r;

	ret->n = 0;
	ret->fault_addr = 0;
	ret->detail[0] = '\0';
	s->cur = sample;
	s->out = ret;
	s->sig_frame = false;
	ret->fast = !s->opt.no_fast_unwind && fast_unwind(s, sample, ret);
	if (ret->fast)
		goto out;
	ret->n = 0;
	s->window_exhausted = s->read_failed = s->frame_limit = false;
	r = dwfl_getthread_frames(s->dwfl, sample->tid, cb_frame, s);
	if (s->sig_frame) {
		ret->end = SYM_END_NO_CFI; /* unless the signal frame is read */
	} else if (r == 0 && !s->window_exhausted && !s->read_failed) {
		ret->end = SYM_END_OUTERMOST;
	} else if (r == 0) {
		/* libdw takes a return address it could not read for "no
		 * caller"; the stack was cut short, not finished. */
		ret->end = s->window_exhausted ? SYM_END_WINDOW : SYM_END_READ_FAILED;
	} else if (s->frame_limit) {
		ret->end = SYM_END_FRAME_LIMIT;
	} else {
		/* The frame we could not get past: its pc says why first (no
		 * module means no CFI; the frame-pointer fallback's failed
		 * read after it is a consequence, not the cause). */
		uint64_t last = ret->n ? ret->pc[ret->n - 1] : s->cur_regs->rip;

		if (ret->n && !ret->activation[ret->n - 1])
			last--;
		if (!dwfl_addrmodule(s->dwfl, last))
			ret->end = SYM_END_NO_MODULE;
		else if (s->window_exhausted)
			ret->end = SYM_END_WINDOW;
		else if (s->read_failed)
			ret->end = SYM_END_READ_FAILED;
		else
			ret->end = SYM_END_NO_CFI;
		snprintf(ret->detail, sizeof(ret->detail), "%s", dwfl_errmsg(-1));
	}
out:
	s->cur = NULL;
	s->out = NULL;
}

/* Past the signal restorer that ended ret: the interrupted frame and its
 * callers, unwound from the registers in the ucontext at s->sig_sp, added
 * to ret.  The interrupted code's stack may be another one (Go handles
 * signals on a stack of their own) that the window does not hold: the
 * stack then ends there, "interrupted stack not copied", which a larger
 * window would not mend.  false: ret is final. */
static bool through_signal_frame(struct sym_session *s, const struct td_sample *sample,
	struct sym_unwound *ret)
{
	struct user_regs_struct regs;
	struct sym_unwound *more;
	unsigned max = s->max_frames;
	/* the sample's stack as far as known: its mapping, else the copy */
	uint64_t a, span = sample->stack_end > sample->stack_addr ?
				   sample->stack_end - sample->stack_addr :
				   sample->stack_len;

	if (!ucontext_regs(sample, s->sig_sp, &regs, &a)) {
		bool window = false, failed = false;

		missed(sample, a, ret, &window, &failed);
		ret->end = window ? SYM_END_WINDOW : SYM_END_READ_FAILED;
		return false;
	}
	if (ret->n >= max) {
		ret->end = SYM_END_FRAME_LIMIT;
		return false;
	}
	more = malloc(sizeof(*more));
	if (!more)
		return false; /* ret ends at the restorer, "no unwind info" */
	s->cur_regs = &regs;
	s->cur_partial = false;
	s->max_frames = max - ret->n;
	unwind_regs(s, sample, more);
	s->max_frames = max;
	memcpy(&ret->pc[ret->n], more->pc, more->n * sizeof(more->pc[0]));
	memcpy(&ret->activation[ret->n], more->activation, more->n * sizeof(more->activation[0]));
	ret->n += more->n;
	ret->end = more->end;
	if ((more->end == SYM_END_WINDOW || more->end == SYM_END_READ_FAILED) &&
		(regs.rsp < sample->stack_addr || regs.rsp - sample->stack_addr >= span))
		ret->end = SYM_END_OTHER_STACK;
	ret->fault_addr = more->fault_addr;
	ret->fast = false;
	memcpy(ret->detail, more->detail, sizeof(ret->detail));
	free(more);
	return s->sig_frame;
}

int sym_session_unwind(struct sym_session *s, const struct td_sample *sample,
	struct sym_unwound *ret)
{
	sym_cache_begin(s->cache);
	ret->n = 0;
	ret->live_reads = 0;
	ret->fault_addr = 0;
	ret->detail[0] = '\0';
	ret->fast = false;
	if (sample->regs.rip == 0 && sample->regs.rsp == 0) {
		ret->end = SYM_END_NO_REGS;
		return 0;
	}
	s->cur_regs = &sample->regs;
	s->cur_partial = sample->flags & TD_SAMPLE_NOSTOP;
	unwind_regs(s, sample, ret);
	/* a handler interrupted by another signal: a few levels */
	for (unsigned k = 0; k < 4 && s->sig_frame && through_signal_frame(s, sample, ret); k++)
		;
	s->cur_regs = NULL;
	if (ret->end != SYM_END_OUTERMOST && ret->n)
		end_at_entry(s, ret);
	if (ret->n == 0 && ret->end == SYM_END_OUTERMOST)
		ret->end = SYM_END_NO_CFI;
	return 0;
}

/* The DIE that carries the declaration: inlined and out-of-line instances
 * point to their abstract origin, definitions to their specification. */
static Dwarf_Die decl_die(Dwarf_Die *die)
{
	Dwarf_Die d = *die, next;
	Dwarf_Attribute a;

	for (int i = 0; i < 8; i++) {
		if (dwarf_attr(&d, DW_AT_abstract_origin, &a) && dwarf_formref_die(&a, &next))
			d = next;
		else if (dwarf_attr(&d, DW_AT_specification, &a) && dwarf_formref_die(&a, &next))
			d = next;
		else
			break;
	}
	return d;
}

/* A closure type: an unnamed class whose member is operator(). */
static bool has_call_operator(Dwarf_Die *cls)
{
	Dwarf_Die child;
	const char *n;

	if (dwarf_child(cls, &child) != 0)
		return false;
	do {
		if (dwarf_tag(&child) == DW_TAG_subprogram && (n = dwarf_diename(&child)) &&
			!strcmp(n, "operator()"))
			return true;
	} while (dwarf_siblingof(&child, &child) == 0);
	return false;
}

static bool is_cxx(Dwarf_Die *cu)
{
	int lang = dwarf_srclang(cu);

	return lang == DW_LANG_C_plus_plus || lang == DW_LANG_C_plus_plus_03 ||
		lang == DW_LANG_C_plus_plus_11 || lang == DW_LANG_C_plus_plus_14;
}

/* Is cu's language C, where no function is inside a namespace or a class? */
static bool is_c(Dwarf_Die *cu)
{
	int lang = dwarf_srclang(cu);

	return lang == DW_LANG_C89 || lang == DW_LANG_C || lang == DW_LANG_C99 ||
	       lang == DW_LANG_C11;
}

/* Fully qualified DWARF name from the enclosing namespaces, classes and
 * functions (GCC gives inline-only template instances no linkage name):
 * "std::__sort<...>", "main::<lambda(int)>::operator()".  In C (!scoped)
 * the name alone: dwarf_getscopes_die walks the unit from its first DIE,
 * which in a large unit (CPython's ceval.c) was most of the CPU of
 * symbolizing a new pc. */
static const char *qualified_name(struct sym_session *s, Dwarf_Die *die, bool scoped)
{
	Dwarf_Die d = decl_die(die), *scopes = NULL;
	const char *name = dwarf_diename(&d);
	char buf[SYM_MAX_NAME];
	size_t len = 0;
	int n;

	if (!name)
		return NULL;
	if (!scoped)
		return sym_cache_intern0(s->cache, name);
	n = dwarf_getscopes_die(&d, &scopes);
	for (int i = n - 1; i >= 1; i--) {
		const char *part;
		int tag = dwarf_tag(&scopes[i]);

		if (tag != DW_TAG_namespace && tag != DW_TAG_class_type &&
			tag != DW_TAG_structure_type && tag != DW_TAG_union_type &&
			tag != DW_TAG_subprogram)
			continue;
		part = dwarf_diename(&scopes[i]);
		if (!part && tag == DW_TAG_namespace)
			part = "(anonymous namespace)";
		else if (!part)
			part = has_call_operator(&scopes[i]) ? "{lambda}" : "{unnamed type}";
		len += (size_t)snprintf(buf + len, sizeof(buf) - len, "%s::", part);
		if (len >= sizeof(buf))
			break;
	}
	free(scopes);
	if (len < sizeof(buf))
		snprintf(buf + len, sizeof(buf) - len, "%s", name);
	return sym_cache_intern0(s->cache, buf);
}

/* The linkage name of a DIE, demangled (fully qualified with parameters,
 * as gdb shows it), or NULL when DWARF has none. */
static const char *linkage_name(struct sym_session *s, Dwarf_Die *die)
{
	Dwarf_Attribute a;
	const char *link;
	char *d;

	link = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_linkage_name, &a));
	if (!link)
		link = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &a));
	if (!link)
		return NULL;
	d = sym_demangle(link);
	if (d) {
		const char *r = sym_cache_intern0(s->cache, d);

		free(d);
		return r;
	}
	return sym_cache_intern0(s->cache, link);
}

/* Is m a Go binary (its runtime's tables are there)?  Looked at once. */
static bool is_go(struct sym_module *m)
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

static const char *elf_name(struct sym_session *s, struct sym_module *m, uint64_t addr)
{
	const char *name = symbol_at(s, m, addr);
	char buf[SYM_MAX_NAME + 1], *d;
	const char *r;
	size_t n;

	if (!name)
		return NULL;
	n = strcspn(name, "@"); /* pthread_cond_wait@@GLIBC_2.3.2 */
	if (n > SYM_MAX_NAME)
		n = SYM_MAX_NAME;
	memcpy(buf, name, n);
	buf[n] = '\0';
	d = sym_demangle(buf);
	sym_fold_clone(d ? d : buf, is_go(m));
	r = sym_cache_intern0(s->cache, d ? d : buf);
	free(d);
	return r;
}

#define SYM_MAX_NEST_SCOPES 64

/* The scopes holding pc under parent, outermost first, from path[depth]
 * on: the functions, inlined calls and blocks whose ranges hold it, found
 * through the DIEs that hold code without ranges of their own
 * (namespaces, classes, a dwz partial unit imported); returns the new
 * depth. */
static int find_scopes(Dwarf_Die *parent, Dwarf_Addr pc, Dwarf_Die *path, int depth, int hops)
{
	Dwarf_Die child;

	if (hops > 8 || dwarf_child(parent, &child) != 0)
		return depth;
	do {
		int tag = dwarf_tag(&child), d;
		Dwarf_Attribute a;
		Dwarf_Die unit;

		switch (tag) {
		case DW_TAG_subprogram:
		case DW_TAG_inlined_subroutine:
		case DW_TAG_lexical_block:
			if (dwarf_haspc(&child, pc) <= 0)
				break;
			path[depth] = child;
			return depth + 1 < SYM_MAX_NEST_SCOPES ?
				       find_scopes(&child, pc, path, depth + 1, hops) :
				       depth + 1;
		case DW_TAG_namespace:
		case DW_TAG_module:
		case DW_TAG_class_type:
		case DW_TAG_structure_type:
		case DW_TAG_union_type:
			if ((d = find_scopes(&child, pc, path, depth, hops + 1)) > depth)
				return d;
			break;
		case DW_TAG_imported_unit:
			if (dwarf_attr(&child, DW_AT_import, &a) && dwarf_formref_die(&a, &unit) &&
				(d = find_scopes(&unit, pc, path, depth, hops + 1)) > depth)
				return d;
			break;
		}
	} while (dwarf_siblingof(&child, &child) == 0);
	return depth;
}

/* The functions, inlined calls and blocks holding pc (a CU-relative
 * address) in cu, innermost first, found by walking its DIEs (as
 * dwarf_getscopes_die() gives them, less the namespaces and classes); the
 * count (0: none) with *ret malloc'ed.  dwarf_getscopes() of elfutils
 * 0.188 leaks 32 bytes each time it finds nothing (Go's assembly
 * functions, any code without a DIE), finds nothing in an LTO build's
 * <artificial> CU, whose concrete functions point across CUs to their
 * abstract origins, and with dwarf_getscopes_die walked a large unit twice
 * more per new pc: this is the only search. */
static int walk_scopes(Dwarf_Die *cu, Dwarf_Addr pc, Dwarf_Die **ret)
{
	Dwarf_Die path[SYM_MAX_NEST_SCOPES];
	int depth = find_scopes(cu, pc, path, 0, 0);

	*ret = NULL;
	if (depth == 0)
		return 0;
	*ret = malloc((size_t)depth * sizeof(**ret));
	if (!*ret)
		return 0;
	for (int i = 0; i < depth; i++)
		(*ret)[i] = path[depth - 1 - i];
	return depth;
}

/* The name of the function at addr: its ELF symbol's, else, where no
 * symbol names it (a stripped binary, a static function of one without
 * .symtab), its place, as MODULE+0xSTART: the start of the function that
 * .eh_frame gives (an FDE per function, kept in stripped binaries too), so
 * that its samples stay together and apart from the module's other
 * functions; else the address itself, as perf shows it. */
static const char *function_name(struct sym_session *s, struct sym_module *m, uint64_t addr)
{
	const char *name = elf_name(s, m, addr), *base;
	uint64_t at = addr - m->bias;
	char buf[PATH_MAX + 32];

	if (name || !m->path)
		return name;
	if (eh_ready(m))
		sym_eh_function(&m->eh, at, &at); /* at stays where no FDE holds it */
	base = strrchr(m->path, '/');
	snprintf(buf, sizeof(buf), "%s+%#llx", base ? base + 1 : m->path, (unsigned long long)at);
	return sym_cache_intern0(s->cache, buf);
}

static int cmp_cu_range(const void *a, const void *b)
{
	const struct cu_range *x = a, *y = b;

	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/* The CU holding addr (an address in the process) found by the CUs' own
 * ranges, for DWARF without .debug_aranges (Go's): libdwfl finds no CU
 * there.  The table is built once per module.  NULL if none. */
static Dwarf_Die *cu_by_ranges(struct sym_module *m, uint64_t addr, Dwarf_Die *mem,
	Dwarf_Addr *ret_bias)
{
	Dwarf *dw = dwfl_module_getdwarf(m->mod, ret_bias);
	size_t l = 0, u;

	if (!dw)
		return NULL;
	if (!m->cur_tried) {
		Dwarf_Off off = 0, next;
		size_t hsize, cap = 0, nar = 0;
		Dwarf_Aranges *ar;

		m->cur_tried = true;
		/* with .debug_aranges, libdwfl's miss is no CU at all */
		if (dwarf_getaranges(dw, &ar, &nar) == 0 && nar > 0)
			return NULL;
		while (dwarf_nextcu(dw, off, &next, &hsize, NULL, NULL, NULL) == 0) {
			Dwarf_Die cu;
			Dwarf_Addr base, lo, hi;
			ptrdiff_t it = 0;

			if (dwarf_offdie(dw, off + hsize, &cu))
				while ((it = dwarf_ranges(&cu, it, &base, &lo, &hi)) > 0) {
					if (td_array_grow(m->cur, cap, m->ncur + 1, 64) < 0)
						break;
					m->cur[m->ncur++] = (struct cu_range){ lo, hi, off + hsize };
				}
			off = next;
		}
		if (m->ncur > 1)
			qsort(m->cur, m->ncur, sizeof(*m->cur), cmp_cu_range);
	}
	addr -= *ret_bias;
	u = m->ncur;
	while (l < u) {
		size_t i = l + (u - l) / 2;

		if (m->cur[i].lo <= addr)
			l = i + 1;
		else
			u = i;
	}
	/* ranges may nest or overlap (rarely): look back a little */
	for (size_t i = l; i-- > 0 && l - i <= 8;)
		if (addr >= m->cur[i].lo && addr < m->cur[i].hi)
			return dwarf_offdie(dw, m->cur[i].die, mem);
	return NULL;
}

/* The inline chain of addr, innermost first, ending with the function that
 * physically holds it.  Returns the number of lines. */
static unsigned lines_of(struct sym_session *s, struct sym_module *m, uint64_t addr,
	struct sym_line *out)
{
	Dwfl_Module *mod = m->mod;
	Dwarf_Addr bias;
	Dwarf_Die cu_mem, *cu = s->opt.no_dwarf ? NULL : dwfl_module_addrdie(mod, addr, &bias);
	Dwfl_Line *dl = NULL;
	const char *file = NULL;
	int line = 0;
	unsigned n = 0;

	if (cu) {
		dl = dwfl_module_getsrc(mod, addr);
	} else if (!s->opt.no_dwarf && (cu = cu_by_ranges(m, addr, &cu_mem, &bias))) {
		Dwarf_Line *l = dwarf_getsrc_die(cu, addr - bias);

		if (l) {
			file = sym_cache_intern0(s->cache, dwarf_linesrc(l, NULL, NULL));
			dwarf_lineno(l, &line);
		}
	}
	if (cu)
		m->has_dwarf = true;
	if (dl) {
		const char *f = dwfl_lineinfo(dl, NULL, &line, NULL, NULL, NULL);

		file = sym_cache_intern0(s->cache, f);
	}
	if (cu) {
		/* the concrete chain of scopes holding the pc (the callers the
		 * code was inlined into), as eu-addr2line -i gives it */
		Dwarf_Die *scopes = NULL;
		int ns = walk_scopes(cu, addr - bias, &scopes);
		Dwarf_Files *files = NULL;
		size_t nfiles = 0;
		bool cxx = is_cxx(cu), c = !cxx && is_c(cu);

		if (ns > 0)
			dwarf_getsrcfiles(cu, &files, &nfiles);
		for (int i = 0; i < ns && n < SYM_MAX_INLINE; i++) {
			int tag = dwarf_tag(&scopes[i]);
			Dwarf_Attribute a;
			Dwarf_Word v;
			const char *fn;
			int decl = 0;

			if (tag != DW_TAG_inlined_subroutine && tag != DW_TAG_subprogram)
				continue;
			fn = linkage_name(s, &scopes[i]);
			/* A physical C++ function without a linkage name: its
			 * symbol has the parameters a DWARF name lacks.  C keeps
			 * its DWARF name (msort_with_tmp, not a .part clone). */
			if (!fn && tag == DW_TAG_subprogram && cxx)
				fn = elf_name(s, m, addr);
			if (!fn)
				fn = qualified_name(s, &scopes[i], !c);
			if (dwarf_decl_line(&scopes[i], &decl) != 0)
				decl = 0;
			out[n++] = (struct sym_line){ .function = fn,
				.file = file,
				.line = line,
				.start_line = decl,
				.inlined = tag == DW_TAG_inlined_subroutine };
			if (tag == DW_TAG_subprogram)
				break;
			/* The caller's position is the inlined call site. */
			file = NULL;
			line = 0;
			if (files &&
				dwarf_formudata(dwarf_attr(&scopes[i], DW_AT_call_file, &a), &v) == 0)
				file = sym_cache_intern0(s->cache, dwarf_filesrc(files, v, NULL, NULL));
			if (dwarf_formudata(dwarf_attr(&scopes[i], DW_AT_call_line, &a), &v) == 0)
				line = (int)v;
		}
		free(scopes);
		if (n && out[n - 1].inlined && n < SYM_MAX_INLINE) {
			/* inline chain without its outer subprogram in
			 * DWARF: the ELF symbol holds it */
			out[n++] = (struct sym_line){ .function = function_name(s, m, addr),
				.file = file,
				.line = line };
		}
	}
	if (n == 0)
		out[n++] = (struct sym_line){ .function = function_name(s, m, addr),
			.file = file,
			.line = line };
	return n;
}

int sym_session_symbolize(struct sym_session *s, uint64_t pc, bool activation, bool inlines,
	struct sym_frame *frames, unsigned cap)
{
	/* A return address points after the call: look up the call. */
	uint64_t addr = activation ? pc : pc - 1;
	Dwfl_Module *mod = addr_module(s, addr);
	struct sym_line tmp[SYM_MAX_INLINE];
	const struct sym_line *lines;
	struct sym_module *m;
	void **ud;
	unsigned n, k = 0;

	if (cap == 0)
		return 0;
	if (!mod || !dwfl_module_info(mod, &ud, NULL, NULL, NULL, NULL, NULL, NULL) || !*ud) {
		frames[0] = (struct sym_frame){ .pc = pc };
		return 1;
	}
	m = *ud;
	if (!m->has_elf) {
		frames[0] = (struct sym_frame){ .pc = pc, .module = m->path,
			.offset = pc - m->bias };
		return 1;
	}
	if (!sym_cache_lookup(s->cache, m->key, addr - m->bias, &lines, &n)) {
		n = lines_of(s, m, addr, tmp);
		sym_cache_insert(s->cache, m->key, addr - m->bias, tmp, n);
		lines = tmp;
	}
	for (unsigned i = inlines ? 0 : n - 1; i < n && k < cap; i++, k++)
		frames[k] = (struct sym_frame){
			.pc = pc,
			.offset = pc - m->bias,
			.function = lines[i].function,
			.file = lines[i].file,
			.line = lines[i].line,
			.start_line = lines[i].start_line,
			.module = m->path,
			.build_id = m->build_id,
			.inlined = lines[i].inlined,
		};
	if (!inlines && k == 1 && lines[n - 1].inlined)
		frames[0].inlined = false;
	return (int)k;
}
