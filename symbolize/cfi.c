/* SPDX-License-Identifier: GPL-2.0-or-later */
/* A frame's unwind rules in the simplest form the fast unwinder uses
 * (unwind.c): the CFA is rsp or rbp plus a constant, the return address
 * and rbp are saved at constant offsets from it, and no other register
 * matters.
 *
 * Two ways to the same answer:
 *   - sym_rule_libdw() asks libdw (dwarf_cfi_addrframe, then each
 *     register's rule as its unwinder reads it);
 *   - sym_eh_rule() reads .eh_frame itself, finding the FDE by binary
 *     search in .eh_frame_hdr.  libdw 0.188 uses that table only when
 *     .eh_frame_hdr comes before .eh_frame in the section headers; in
 *     libLLVM-14 and libclang-cpp it comes after, and libdw then reads
 *     .eh_frame from its start up to each pc, keeping every FDE it passes
 *     in a tree: 120k entries, 10 MB and about a third of the daemon's CPU
 *     on a clang++ compile.
 * The tests check that both agree on every FDE of the modules they see.
 *
 * x86_64 only, as the rest of the unwinder: DWARF registers 0-16, rbp 6,
 * rsp 7, return address 16.  A PLT entry's CFA expression is worked out
 * for the frame's own pc (plt_cfa).  Anything else unusual (another CFA
 * or register expression, a register saved in another, a signal frame,
 * an encoding not handled here) is SYM_RULE_COMPLEX or, from sym_eh_rule,
 * -ENOTSUP: the caller then leaves the frame to libdw. */
#include "symbolize-internal.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <errno.h>
#include <gelf.h>
#include <stdlib.h>
#include <string.h>

#define DW_RBP 6
#define DW_RSP 7
#define DW_RA 16
#define NREGS 17	   /* libdw's unwinder looks at these (ebl_frame_nregs) */
#define STATE_STACK 8	   /* DW_CFA_remember_state depth */

static bool fits32(int64_t v)
{
	return v >= INT32_MIN && v <= INT32_MAX;
}

/* ---- the rule from its registers' rules, whoever worked them out */

enum reg_kind {
	R_UNSPEC,    /* not mentioned: no read, no value we use */
	R_UNDEFINED, /* lost */
	R_SAME,	     /* unchanged */
	R_OFFSET,    /* saved at CFA + off */
	R_VAL,	     /* the value CFA + off */
	R_OTHER,     /* anything else: in another register, an expression */
};

struct reg_rule {
	enum reg_kind kind;
	int64_t off;
};

/* r from the CFA (reg + off) and the registers' rules. */
static void rule_from(int cfa_reg, int64_t cfa_off, const struct reg_rule *regs,
	struct sym_rule *r)
{
	r->kind = SYM_RULE_COMPLEX;
	r->nslot = 0;
	if ((cfa_reg != DW_RSP && cfa_reg != DW_RBP) || !fits32(cfa_off))
		return;
	r->cfa_reg = (uint8_t)cfa_reg;
	r->cfa_off = (int32_t)cfa_off;
	for (int reg = 0; reg < NREGS; reg++) {
		const struct reg_rule *g = &regs[reg];

		if (g->kind == R_OTHER || ((g->kind == R_OFFSET || g->kind == R_VAL) &&
						  (!fits32(g->off) || !fits32(g->off + 8))))
			return;
		if (g->kind == R_OFFSET) {
			/* libdw reads every saved register's slot, in this order */
			if (r->nslot == SYM_RULE_SLOTS || g->off < INT16_MIN || g->off > INT16_MAX)
				return;
			r->slot[r->nslot++] = (int16_t)g->off;
		}
	}
	if (regs[DW_RSP].kind != R_VAL || regs[DW_RSP].off != 0)
		return;
	switch (regs[DW_RBP].kind) {
	case R_OFFSET:
		r->bp = SYM_BP_SAVED;
		r->bp_off = (int32_t)regs[DW_RBP].off;
		break;
	case R_SAME:
		r->bp = SYM_BP_SAME;
		break;
	case R_UNDEFINED:
		r->bp = SYM_BP_UNDEFINED;
		break;
	default:
		return;
	}
	if (regs[DW_RA].kind == R_UNDEFINED) {
		r->kind = SYM_RULE_OUTERMOST;
	} else if (regs[DW_RA].kind == R_OFFSET) {
		r->ra_off = (int32_t)regs[DW_RA].off;
		r->kind = SYM_RULE_SIMPLE;
	}
}

/* ---- from libdw */

/* A register's rule as dwarf_frame_register() gives it.  libdw writes
 * offset(N) as the location DW_OP_call_frame_cfa [DW_OP_plus_uconst N]
 * (its unwinder reads it), and val_offset(N) as the same followed by
 * DW_OP_stack_value. */
static struct reg_rule libdw_reg(Dwarf_Op *mem, Dwarf_Op *ops, size_t nops)
{
	struct reg_rule g = { R_OTHER, 0 };
	size_t k = 1;

	if (nops == 0) {
		g.kind = ops == mem ? R_UNDEFINED : ops == NULL ? R_SAME : R_OTHER;
		return g;
	}
	if (ops[0].atom != DW_OP_call_frame_cfa)
		return g;
	if (k < nops && ops[k].atom == DW_OP_plus_uconst)
		g.off = (int64_t)ops[k++].number;
	if (k == nops)
		g.kind = R_OFFSET;
	else if (k + 1 == nops && ops[k].atom == DW_OP_stack_value)
		g.kind = R_VAL;
	return g;
}

/* The CFA expression of every PLT entry's FDE (binutils' and lld's):
 *   DW_OP_breg7 K; DW_OP_breg16 0; DW_OP_lit15; DW_OP_and; DW_OP_litN;
 *   DW_OP_ge; DW_OP_lit3; DW_OP_shl; DW_OP_plus
 * that is rsp + K, plus 8 once rip is past the entry's push (rip & 15 >=
 * N).  For that one rip it is rsp plus a constant: *off. */
static bool plt_cfa(const uint8_t *atoms, const int64_t *nums, size_t n, uint64_t rip,
	int64_t *off)
{
	static const uint8_t want[] = { DW_OP_breg7, DW_OP_breg16, DW_OP_lit15, DW_OP_and, 0,
		DW_OP_ge, DW_OP_lit3, DW_OP_shl, DW_OP_plus };

	if (n != sizeof(want))
		return false;
	for (size_t i = 0; i < n; i++)
		if (i != 4 && atoms[i] != want[i])
			return false;
	if (atoms[4] < DW_OP_lit0 || atoms[4] > DW_OP_lit31 || nums[1] != 0)
		return false;
	*off = nums[0] + ((rip & 15) >= (uint64_t)(atoms[4] - DW_OP_lit0) ? 8 : 0);
	return true;
}

void sym_rule_libdw(Dwarf_CFI *cfi, uint64_t pc, uint64_t rip, struct sym_rule *r)
{
	struct reg_rule regs[NREGS];
	Dwarf_Frame *frame = NULL;
	Dwarf_Addr start, end;
	Dwarf_Op *ops, mem[3];
	size_t nops;
	bool signalp;
	int cfa_reg;
	int64_t cfa_off;

	*r = (struct sym_rule){ .kind = SYM_RULE_COMPLEX };
	if (!cfi || dwarf_cfi_addrframe(cfi, pc, &frame) != 0)
		return;
	if (dwarf_frame_info(frame, &start, &end, &signalp) != DW_RA || signalp ||
		dwarf_frame_cfa(frame, &ops, &nops) != 0)
		goto out;
	if (nops == 1 && ops[0].atom == DW_OP_bregx) {
		cfa_reg = (int)ops[0].number;
		cfa_off = (int64_t)ops[0].number2;
	} else {
		uint8_t atoms[16];
		int64_t nums[16];

		if (nops > 16)
			goto out;
		for (size_t i = 0; i < nops; i++) {
			atoms[i] = ops[i].atom;
			nums[i] = (int64_t)ops[i].number;
		}
		if (!plt_cfa(atoms, nums, nops, rip, &cfa_off))
			goto out;
		cfa_reg = DW_RSP;
	}
	for (int reg = 0; reg < NREGS; reg++) {
		Dwarf_Op *rops;
		size_t rn;

		if (dwarf_frame_register(frame, reg, mem, &rops, &rn) != 0)
			goto out;
		regs[reg] = libdw_reg(mem, rops, rn);
	}
	rule_from(cfa_reg, cfa_off, regs, r);
out:
	free(frame);
}

/* ---- from .eh_frame itself */

struct cursor {
	const uint8_t *p, *end;
	uint64_t vaddr; /* of p */
	bool bad;
};

static uint64_t rd(struct cursor *c, size_t n)
{
	uint64_t v = 0;

	if ((size_t)(c->end - c->p) < n) {
		c->bad = true;
		c->p = c->end;
		return 0;
	}
	for (size_t i = 0; i < n; i++)
		v |= (uint64_t)c->p[i] << (8 * i); /* x86_64: little-endian */
	c->p += n;
	c->vaddr += n;
	return v;
}

static uint64_t uleb(struct cursor *c)
{
	uint64_t v = 0;

	for (unsigned shift = 0;; shift += 7) {
		uint8_t b = (uint8_t)rd(c, 1);

		if (c->bad || shift > 63) {
			c->bad = true;
			return 0;
		}
		v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80))
			return v;
	}
}

static int64_t sleb(struct cursor *c)
{
	uint64_t v = 0;
	unsigned shift = 0;
	uint8_t b;

	do {
		b = (uint8_t)rd(c, 1);
		if (c->bad || shift > 63) {
			c->bad = true;
			return 0;
		}
		v |= (uint64_t)(b & 0x7f) << shift;
		shift += 7;
	} while (b & 0x80);
	if (shift < 64 && (b & 0x40))
		v |= ~0ull << shift;
	return (int64_t)v;
}

/* A pointer in encoding enc (DW_EH_PE_*): absolute, pc-relative or
 * relative to datarel; indirect and the rest are not handled. */
static uint64_t pointer(struct cursor *c, uint8_t enc, uint64_t datarel, bool *ok)
{
	uint64_t at = c->vaddr, v;

	switch (enc & 0x0f) {
	case DW_EH_PE_absptr:
		v = rd(c, 8);
		break;
	case DW_EH_PE_udata2:
		v = rd(c, 2);
		break;
	case DW_EH_PE_udata4:
		v = rd(c, 4);
		break;
	case DW_EH_PE_udata8:
		v = rd(c, 8);
		break;
	case DW_EH_PE_sdata2:
		v = (uint64_t)(int64_t)(int16_t)rd(c, 2);
		break;
	case DW_EH_PE_sdata4:
		v = (uint64_t)(int64_t)(int32_t)rd(c, 4);
		break;
	case DW_EH_PE_sdata8:
		v = rd(c, 8);
		break;
	case DW_EH_PE_uleb128:
		v = uleb(c);
		break;
	case DW_EH_PE_sleb128:
		v = (uint64_t)sleb(c);
		break;
	default:
		*ok = false;
		return 0;
	}
	switch (enc & 0x70) {
	case DW_EH_PE_absptr:
		break;
	case DW_EH_PE_pcrel:
		v += at;
		break;
	case DW_EH_PE_datarel:
		v += datarel;
		break;
	default:
		*ok = false;
	}
	if (enc & DW_EH_PE_indirect)
		*ok = false;
	return v;
}

bool sym_elf_section(Elf *elf, const char *want, const uint8_t **data, size_t *len,
	uint64_t *vaddr)
{
	Elf_Scn *scn = NULL;
	size_t shstrndx;

	if (elf_getshdrstrndx(elf, &shstrndx) != 0)
		return false;

	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		const char *name;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS ||
			!(name = elf_strptr(elf, shstrndx, sh.sh_name)) || strcmp(name, want))
			continue;
		d = elf_getdata(scn, NULL);
		if (!d || !d->d_buf || d->d_size != sh.sh_size)
			return false;
		*data = d->d_buf;
		*len = d->d_size;
		*vaddr = sh.sh_addr;
		return true;
	}
	return false;
}

int sym_eh_init(Elf *elf, struct sym_eh *eh)
{
	struct cursor c;
	uint8_t ptr_enc, count_enc;
	bool ok = true;
	GElf_Ehdr eh_mem;

	*eh = (struct sym_eh){ 0 };
	if (!gelf_getehdr(elf, &eh_mem) || eh_mem.e_machine != EM_X86_64 ||
		eh_mem.e_ident[EI_CLASS] != ELFCLASS64 || eh_mem.e_ident[EI_DATA] != ELFDATA2LSB ||
		!sym_elf_section(elf, ".eh_frame", &eh->frame, &eh->frame_len, &eh->frame_vaddr) ||
		!sym_elf_section(elf, ".eh_frame_hdr", &eh->hdr, &eh->hdr_len, &eh->hdr_vaddr))
		return -ENOENT;
	c = (struct cursor){ eh->hdr, eh->hdr + eh->hdr_len, eh->hdr_vaddr, false };
	/* version, eh_frame_ptr_enc, fde_count_enc, table_enc */
	if (rd(&c, 1) != 1)
		return -ENOTSUP;
	ptr_enc = (uint8_t)rd(&c, 1);
	count_enc = (uint8_t)rd(&c, 1);
	/* the table as every linker writes it: 4-byte offsets from the
	 * header's start, which a binary search reads in place */
	if (rd(&c, 1) != (DW_EH_PE_datarel | DW_EH_PE_sdata4) || c.bad)
		return -ENOTSUP;
	pointer(&c, ptr_enc, eh->hdr_vaddr, &ok);
	eh->count = pointer(&c, count_enc, eh->hdr_vaddr, &ok);
	if (!ok || c.bad || eh->count > (size_t)(c.end - c.p) / 8)
		return -ENOTSUP;
	eh->table = c.p;
	return 0;
}

/* The CIE at .eh_frame offset off, as far as the rules need it. */
struct cie {
	uint64_t code_align;
	int64_t data_align;
	uint8_t fde_enc;
	bool z; /* augmentation data present (its length first) */
	const uint8_t *insns, *insns_end;
	uint64_t insns_vaddr;
};

static int cie_at(const struct sym_eh *eh, uint64_t off, struct cie *ci)
{
	struct cursor c;
	const char *aug;
	uint64_t len, ra, version;
	bool ok = true;

	if (off >= eh->frame_len)
		return -ENOTSUP;
	c = (struct cursor){ eh->frame + off, eh->frame + eh->frame_len, eh->frame_vaddr + off,
		false };
	len = rd(&c, 4);
	if (len == 0 || len >= 0xfffffff0u || len > (uint64_t)(c.end - c.p))
		return -ENOTSUP;
	c.end = c.p + len;
	if (rd(&c, 4) != 0) /* a CIE's id */
		return -ENOTSUP;
	version = rd(&c, 1);
	if (version != 1 && version != 3)
		return -ENOTSUP;
	aug = (const char *)c.p;
	while (c.p < c.end && *c.p)
		rd(&c, 1);
	rd(&c, 1);
	*ci = (struct cie){ .fde_enc = DW_EH_PE_absptr };
	ci->code_align = uleb(&c);
	ci->data_align = sleb(&c);
	ra = version == 1 ? rd(&c, 1) : uleb(&c);
	if (c.bad || ra != DW_RA)
		return -ENOTSUP;
	if (aug[0] == 'z') {
		uint64_t alen = uleb(&c);
		struct cursor a = c;

		if (c.bad || alen > (uint64_t)(c.end - c.p))
			return -ENOTSUP;
		a.end = c.p + alen;
		ci->z = true;
		for (const char *s = aug + 1; *s; s++) {
			if (*s == 'R') {
				ci->fde_enc = (uint8_t)rd(&a, 1);
			} else if (*s == 'P') {
				uint8_t penc = (uint8_t)rd(&a, 1);

				/* skipped, but its size is its encoding's */
				pointer(&a, (uint8_t)(penc & ~DW_EH_PE_indirect & 0x0f), 0, &ok);
			} else if (*s == 'L') {
				rd(&a, 1);
			} else {
				return -ENOTSUP; /* 'S' (a signal frame) among them */
			}
		}
		if (a.bad || !ok)
			return -ENOTSUP;
		c.p += alen;
		c.vaddr += alen;
	} else if (aug[0]) {
		return -ENOTSUP;
	}
	ci->insns = c.p;
	ci->insns_end = c.end;
	ci->insns_vaddr = c.vaddr;
	return 0;
}

struct cfa_state {
	int cfa_reg;
	int64_t cfa_off;
	bool cfa_expr;
	const uint8_t *expr; /* a CFA expression's bytes */
	uint64_t expr_len;
	struct reg_rule regs[NREGS];
};

/* The CFA of a PLT entry's expression for rip (see plt_cfa). */
static bool plt_expr(const uint8_t *p, uint64_t len, uint64_t rip, int64_t *off)
{
	struct cursor c = { p, p + len, 0, false };
	uint8_t atoms[16];
	int64_t nums[16];
	size_t n = 0;

	while (c.p < c.end && n < 16 && !c.bad) {
		uint8_t a = (uint8_t)rd(&c, 1);

		atoms[n] = a;
		nums[n] = 0;
		if (a >= DW_OP_breg0 && a <= DW_OP_breg31)
			nums[n] = sleb(&c);
		else if (!(a >= DW_OP_lit0 && a <= DW_OP_lit31) && a != DW_OP_and &&
			 a != DW_OP_ge && a != DW_OP_shl && a != DW_OP_plus)
			return false;
		n++;
	}
	return !c.bad && c.p == c.end && plt_cfa(atoms, nums, n, rip, off);
}

/* Register reg's rule, for one the unwinder looks at (the operand is read
 * by the caller either way). */
static void set_reg(struct cfa_state *st, uint64_t reg, enum reg_kind kind, int64_t off)
{
	if (reg < NREGS)
		st->regs[reg] = (struct reg_rule){ kind, off };
}

/* A row advance (DW_CFA_advance_loc*): true with its delta, in units of
 * the CIE's code alignment, in *ret_adv; false for any other op. */
static bool advance_op(struct cursor *c, uint8_t op, uint64_t *ret_adv)
{
	if (op >> 6 == 1) { /* DW_CFA_advance_loc */
		*ret_adv = op & 0x3f;
		return true;
	}
	if (op >> 6)
		return false;
	switch (op) {
	case DW_CFA_advance_loc1:
		*ret_adv = rd(c, 1);
		return true;
	case DW_CFA_advance_loc2:
		*ret_adv = rd(c, 2);
		return true;
	case DW_CFA_advance_loc4:
		*ret_adv = rd(c, 4);
		return true;
	}
	return false;
}

/* Register reg back to the CIE's rule (init: NULL while running the
 * CIE's own instructions, where there is none to go back to). */
static int restore_reg(struct cfa_state *st, uint64_t reg, const struct cfa_state *init)
{
	if (!init)
		return -ENOTSUP;
	if (reg < NREGS)
		st->regs[reg] = init->regs[reg];
	return 1;
}

/* An op that sets one register's rule: 1 when op is one (its operands
 * read), 0 when it is not, -ENOTSUP. */
static int reg_op(struct cursor *c, const struct cie *ci, uint8_t op, struct cfa_state *st,
	const struct cfa_state *init)
{
	uint64_t reg, n;

	switch (op >> 6) {
	case 2: /* DW_CFA_offset */
		reg = op & 0x3f;
		set_reg(st, reg, R_OFFSET, (int64_t)uleb(c) * ci->data_align);
		return 1;
	case 3: /* DW_CFA_restore */
		return restore_reg(st, op & 0x3f, init);
	}
	switch (op) {
	case DW_CFA_offset_extended:
		reg = uleb(c);
		set_reg(st, reg, R_OFFSET, (int64_t)uleb(c) * ci->data_align);
		return 1;
	case DW_CFA_offset_extended_sf:
		reg = uleb(c);
		set_reg(st, reg, R_OFFSET, sleb(c) * ci->data_align);
		return 1;
	case DW_CFA_GNU_negative_offset_extended:
		reg = uleb(c);
		set_reg(st, reg, R_OFFSET, -((int64_t)uleb(c) * ci->data_align));
		return 1;
	case DW_CFA_val_offset:
		reg = uleb(c);
		set_reg(st, reg, R_VAL, (int64_t)uleb(c) * ci->data_align);
		return 1;
	case DW_CFA_val_offset_sf:
		reg = uleb(c);
		set_reg(st, reg, R_VAL, sleb(c) * ci->data_align);
		return 1;
	case DW_CFA_restore_extended:
		reg = uleb(c);
		return restore_reg(st, reg, init);
	case DW_CFA_undefined:
		set_reg(st, uleb(c), R_UNDEFINED, 0);
		return 1;
	case DW_CFA_same_value:
		set_reg(st, uleb(c), R_SAME, 0);
		return 1;
	case DW_CFA_register:
		reg = uleb(c);
		uleb(c);
		set_reg(st, reg, R_OTHER, 0);
		return 1;
	case DW_CFA_expression:
	case DW_CFA_val_expression:
		reg = uleb(c);
		n = uleb(c);
		if (c->bad || n > (uint64_t)(c->end - c->p))
			return -ENOTSUP;
		c->p += n;
		c->vaddr += n;
		set_reg(st, reg, R_OTHER, 0);
		return 1;
	}
	return 0;
}

/* An op that defines the CFA: 1 when op is one (its operands read), 0
 * when it is not, -ENOTSUP. */
static int cfa_op(struct cursor *c, const struct cie *ci, uint8_t op, struct cfa_state *st)
{
	switch (op) {
	case DW_CFA_def_cfa:
		st->cfa_reg = (int)uleb(c);
		st->cfa_off = (int64_t)uleb(c);
		st->cfa_expr = false;
		return 1;
	case DW_CFA_def_cfa_sf:
		st->cfa_reg = (int)uleb(c);
		st->cfa_off = sleb(c) * ci->data_align;
		st->cfa_expr = false;
		return 1;
	case DW_CFA_def_cfa_register:
		if (st->cfa_expr)
			return -ENOTSUP; /* libdw's call */
		st->cfa_reg = (int)uleb(c);
		return 1;
	case DW_CFA_def_cfa_offset:
		if (st->cfa_expr)
			return -ENOTSUP;
		st->cfa_off = (int64_t)uleb(c);
		return 1;
	case DW_CFA_def_cfa_offset_sf:
		if (st->cfa_expr)
			return -ENOTSUP;
		st->cfa_off = sleb(c) * ci->data_align;
		return 1;
	case DW_CFA_def_cfa_expression:
		st->cfa_expr = true;
		st->expr_len = uleb(c);
		if (c->bad || st->expr_len > (uint64_t)(c->end - c->p))
			return -ENOTSUP;
		st->expr = c->p;
		c->p += st->expr_len;
		c->vaddr += st->expr_len;
		return 1;
	}
	return 0;
}

/* Run the instructions in c up to the row of pc (loc: the row's start so
 * far); init holds the CIE's rules for DW_CFA_restore (NULL while running
 * the CIE's own).  -ENOTSUP for what is not handled.  Row advances, the
 * registers' rules and the CFA's each have their function; the state
 * stack is this one's. */
static int run(struct cursor *c, const struct cie *ci, uint64_t *loc, uint64_t pc,
	struct cfa_state *st, const struct cfa_state *init)
{
	struct cfa_state saved[STATE_STACK];
	unsigned depth = 0;

	while (c->p < c->end && !c->bad) {
		uint8_t op = (uint8_t)rd(c, 1);
		uint64_t adv;
		int k;

		if (advance_op(c, op, &adv)) {
			uint64_t next = *loc + adv * ci->code_align;

			if (next > pc)
				return 0; /* this row holds pc */
			*loc = next;
			continue;
		}
		k = reg_op(c, ci, op, st, init);
		if (k == 0)
			k = cfa_op(c, ci, op, st);
		if (k < 0)
			return -ENOTSUP;
		if (k > 0)
			continue;
		switch (op) {
		case DW_CFA_nop:
			break;
		case DW_CFA_remember_state:
			if (depth == STATE_STACK)
				return -ENOTSUP;
			saved[depth++] = *st;
			break;
		case DW_CFA_restore_state:
			if (depth == 0)
				return -ENOTSUP;
			*st = saved[--depth];
			break;
		case DW_CFA_GNU_args_size:
			uleb(c);
			break;
		default: /* DW_CFA_set_loc and the vendors' */
			return -ENOTSUP;
		}
	}
	return c->bad ? -ENOTSUP : 0;
}

/* The table's i-th (initial location, FDE address). */
static void entry(const struct sym_eh *eh, uint64_t i, uint64_t *loc, uint64_t *fde)
{
	const uint8_t *e = eh->table + i * 8;
	int32_t a, b;

	memcpy(&a, e, 4);
	memcpy(&b, e + 4, 4);
	*loc = eh->hdr_vaddr + (uint64_t)(int64_t)a;
	*fde = eh->hdr_vaddr + (uint64_t)(int64_t)b;
}

/* The FDE that holds pc: *c on its instructions, its CIE and its start.
 * 0, -ENOENT when none does, -ENOTSUP. */
static int fde_find(const struct sym_eh *eh, uint64_t pc, struct cursor *ret_c, struct cie *ci,
	uint64_t *ret_start)
{
	uint64_t lo = 0, hi = eh->count, loc, fde, off, len, cie_off, start, range;
	struct cursor c;
	bool ok = true;

	/* the last entry starting at or below pc */
	while (lo < hi) {
		uint64_t mid = lo + (hi - lo) / 2;

		entry(eh, mid, &loc, &fde);
		if (loc <= pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0)
		return -ENOENT;
	entry(eh, lo - 1, &loc, &fde);
	if (fde < eh->frame_vaddr || fde - eh->frame_vaddr >= eh->frame_len)
		return -ENOTSUP;
	off = fde - eh->frame_vaddr;
	c = (struct cursor){ eh->frame + off, eh->frame + eh->frame_len, fde, false };
	len = rd(&c, 4);
	if (len == 0 || len >= 0xfffffff0u || len > (uint64_t)(c.end - c.p))
		return -ENOTSUP;
	c.end = c.p + len;
	cie_off = rd(&c, 4); /* back from this field to its CIE */
	if (cie_off == 0 || cie_off > off + 4)
		return -ENOTSUP;
	if (cie_at(eh, off + 4 - cie_off, ci) < 0)
		return -ENOTSUP;
	start = pointer(&c, ci->fde_enc, 0, &ok);
	range = pointer(&c, (uint8_t)(ci->fde_enc & 0x0f), 0, &ok);
	if (!ok || c.bad || start != loc)
		return -ENOTSUP;
	if (pc >= start + range)
		return -ENOENT; /* between functions: no FDE holds pc */
	if (ci->z) {
		uint64_t alen = uleb(&c);

		if (c.bad || alen > (uint64_t)(c.end - c.p))
			return -ENOTSUP;
		c.p += alen;
		c.vaddr += alen;
	}
	*ret_c = c;
	*ret_start = start;
	return 0;
}

int sym_eh_function(const struct sym_eh *eh, uint64_t pc, uint64_t *ret_start)
{
	struct cursor c;
	struct cie ci;

	return fde_find(eh, pc, &c, &ci, ret_start);
}

int sym_eh_rule(const struct sym_eh *eh, uint64_t pc, uint64_t rip, struct sym_rule *r)
{
	struct cfa_state init, st;
	struct cursor c;
	struct cie ci;
	uint64_t start, loc;
	int k;

	*r = (struct sym_rule){ .kind = SYM_RULE_COMPLEX };
	k = fde_find(eh, pc, &c, &ci, &start);
	if (k < 0)
		return k;
	/* libdw's start for x86_64 (its ABI CFI): rsp is the CFA, rbp keeps
	 * its value unless said otherwise */
	memset(&init, 0, sizeof(init));
	init.cfa_reg = -1;
	init.regs[DW_RSP] = (struct reg_rule){ R_VAL, 0 };
	init.regs[DW_RBP] = (struct reg_rule){ R_SAME, 0 };
	{
		struct cursor ic = { ci.insns, ci.insns_end, ci.insns_vaddr, false };
		uint64_t cloc = 0;

		k = run(&ic, &ci, &cloc, UINT64_MAX, &init, NULL);
		if (k < 0)
			return k;
	}
	st = init;
	loc = start;
	k = run(&c, &ci, &loc, pc, &st, &init);
	if (k < 0)
		return k;
	if (st.cfa_expr) {
		if (!plt_expr(st.expr, st.expr_len, rip, &st.cfa_off))
			return 0; /* complex */
		st.cfa_reg = DW_RSP;
	}
	/* a return address with no rule: what libdw makes of it is its own
	 * (rule_from leaves it complex) */
	rule_from(st.cfa_reg, st.cfa_off, st.regs, r);
	return 0;
}
