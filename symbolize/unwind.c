/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Unwinding one captured sample (sym_session_unwind).  libdw's unwinder
 * reads it through dwfl_attach_state callbacks (sym_thread_callbacks): the
 * registers seed the first frame, memory_read serves the captured stack
 * window, and only the "current sample" pointer changes between
 * dwfl_getthread_frames() calls.  Before it, the fast path follows each
 * pc's CFI rules, worked out once (cfi.c), for a stack made only of simple
 * frames.  Past a signal restorer, the interrupted code's registers are
 * read from the kernel's ucontext in the window and the unwind goes on
 * from them.
 *
 * Guarantees: a stack unwound fast is the one libdw's unwinder gives (the
 * same frames, end and fault address); a partial stack is a result, ended
 * with why; the live process is read only through opt.read_live, and
 * counted.
 *
 * Left to others: the session and its modules (session.c), naming the pcs
 * (names.c), reading .eh_frame (cfi.c). */
#define _GNU_SOURCE
#include "symbolize-internal.h"

#include <elfutils/libdwfl.h>
#include <errno.h>
#include <gelf.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ucontext.h>

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
	case SYM_END_KERNEL_LIMIT:
		return TD_CUT_KERNEL_LIMIT;
	}
	return "unknown";
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

/* The word at addr from the sample's window, or false.  u->window_used
 * keeps how far into the window the unwind read: what a copy must hold
 * for the same stack (the recorder sizes each thread's copies by it). */
static bool window_word(const struct td_sample *t, uint64_t addr, uint64_t *ret,
	struct sym_unwound *u)
{
	if (addr < t->stack_addr || addr - t->stack_addr > t->stack_len ||
		t->stack_len - (addr - t->stack_addr) < sizeof(*ret))
		return false;
	memcpy(ret, t->stack + (addr - t->stack_addr), sizeof(*ret));
	if (addr - t->stack_addr + sizeof(*ret) > u->window_used)
		u->window_used = (uint32_t)(addr - t->stack_addr + sizeof(*ret));
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
	if (window_word(t, addr, &v, s->out)) {
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

const Dwfl_Thread_Callbacks sym_thread_callbacks = {
	.next_thread = cb_next_thread,
	.get_thread = cb_get_thread,
	.memory_read = cb_memory_read,
	.set_initial_registers = cb_set_initial_registers,
};

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
	uint64_t *ret_addr, struct sym_unwound *u)
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

		if (!window_word(t, a, &v, u)) {
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
	Dwarf_Word sp_now;
	bool isact;

	if (!dwfl_frame_pc(state, &pc, &isact))
		return DWARF_CB_ABORT;
	if (u->n >= s->max_frames) {
		s->frame_limit = true;
		return DWARF_CB_ABORT;
	}
	u->pc[u->n] = pc;
	u->activation[u->n] = isact;
	if (dwfl_frame_reg(state, DW_RSP, &sp_now) != 0)
		sp_now = 0;
	u->sp[u->n] = sp_now;
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

/* A stack that ended badly right after a known entry function ended well:
 * keep the frames up to it. */
static void end_at_entry(struct sym_session *s, struct sym_unwound *ret)
{
	unsigned from = ret->n > 3 ? ret->n - 3 : 0;

	for (unsigned i = ret->n; i-- > from;) {
		uint64_t pc = ret->activation[i] ? ret->pc[i] : ret->pc[i] - 1;
		struct sym_module *m = sym_module_at(s, pc);

		if (m && is_entry_symbol(sym_symbol_at(s, m, pc))) {
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

/* The rule for pc (already less one for a return address) in mod (m: its
 * session's, or NULL), as libdw's unwinder would apply it first: from the
 * module's .eh_frame, found with .eh_frame_hdr (cfi.c), else as libdw
 * works it out. */
static void rule_cfi(Dwfl_Module *mod, struct sym_module *m, uint64_t pc, uint64_t rip,
	struct sym_rule *r)
{
	Dwarf_Addr bias;
	Dwarf_CFI *cfi;

	if (m && sym_module_eh_ready(m)) {
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

/* The rule for pc (already less one for a return address; rip the
 * frame's own pc): its CFI's, or a signal restorer's.  The restorer's
 * code is looked at where the CFI is not simple, and in Go binaries
 * (runtime.sigreturn, as a sample's own pc, has an ordinary frame's FDE),
 * not everywhere: it faults in a page of code per pc. */
static void rule_make(struct sym_session *s, uint64_t pc, uint64_t rip, struct sym_rule *r)
{
	Dwfl_Module *mod = sym_addr_module(s, pc);
	struct sym_module *m = NULL;
	void **ud;

	*r = (struct sym_rule){ .kind = SYM_RULE_COMPLEX };
	if (!mod)
		return;
	if (dwfl_module_info(mod, &ud, NULL, NULL, NULL, NULL, NULL, NULL))
		m = *ud;
	rule_cfi(mod, m, pc, rip, r);
	if (m && (r->kind == SYM_RULE_COMPLEX || sym_module_is_go(m)) && sigreturn_in(m, rip, rip == pc))
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
		ret->sp[n] = sp;
		r = rule_at(s, pc, n == 0);
		if (!r || r->kind == SYM_RULE_COMPLEX || r->kind == SYM_RULE_SIGRETURN ||
			(r->cfa_reg == DW_RBP && !bp_known))
			return false;
		cfa = (r->cfa_reg == DW_RSP ? sp : bp) + (uint64_t)(int64_t)r->cfa_off;
		/* every slot libdw reads for this frame, in its order */
		for (unsigned i = 0; i < r->nslot; i++) {
			uint64_t a = cfa + (uint64_t)(int64_t)r->slot[i];

			if (!window_word(t, a, &v, ret)) {
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
			bp_known = window_word(t, cfa + (uint64_t)(int64_t)r->bp_off, &bp, ret);
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
		/* JIT code a perf map or jitdump names is followed by its
		 * frame pointer (libdw's fallback where there is no CFI): a
		 * read that failed there is the cause */
		if (!dwfl_addrmodule(s->dwfl, last) && !sym_jit_holds(s, last))
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

	if (!ucontext_regs(sample, s->sig_sp, &regs, &a, ret)) {
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
	more->window_used = ret->window_used;
	unwind_regs(s, sample, more);
	ret->window_used = more->window_used;
	s->max_frames = max;
	memcpy(&ret->pc[ret->n], more->pc, more->n * sizeof(more->pc[0]));
	memcpy(&ret->activation[ret->n], more->activation, more->n * sizeof(more->activation[0]));
	memcpy(&ret->sp[ret->n], more->sp, more->n * sizeof(more->sp[0]));
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
	ret->window_used = 0;
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
