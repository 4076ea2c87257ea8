/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Where the signal a process died of came from, for people: the fault
 * address for a fault the kernel raised, the sender (PID, comm, uid, and
 * by which call) for a signal a process sent, the timer or other source
 * otherwise, all decided by si_code as the chunk's row recorded it
 * (TCF 1.2).
 *
 * Guarantees: nothing but what the row says; a row of an older chunk,
 * which kept si_addr whatever sent the signal, shows it only for a signal
 * a fault raises, as reports did before.  The sender's comm is the
 * sender's bytes: escaped as every target string is (rp_text; the
 * service's journal escapes its whole line).  Leaves to text.c, and to
 * the service, where the phrase goes. */
#define _GNU_SOURCE
#include "report-internal.h"

#include <signal.h>
#include <stdio.h>

/* si_code names of the kernel's own codes (code > 0), by signal. */
static const char *const segv_codes[] = { NULL, "SEGV_MAPERR", "SEGV_ACCERR", "SEGV_BNDERR",
	"SEGV_PKUERR", "SEGV_ACCADI", "SEGV_ADIDERR", "SEGV_ADIPERR", "SEGV_MTEAERR",
	"SEGV_MTESERR", "SEGV_CPERR" };
static const char *const bus_codes[] = { NULL, "BUS_ADRALN", "BUS_ADRERR", "BUS_OBJERR",
	"BUS_MCEERR_AR", "BUS_MCEERR_AO" };
static const char *const ill_codes[] = { NULL, "ILL_ILLOPC", "ILL_ILLOPN", "ILL_ILLADR",
	"ILL_ILLTRP", "ILL_PRVOPC", "ILL_PRVREG", "ILL_COPROC", "ILL_BADSTK", "ILL_BADIADDR" };
static const char *const fpe_codes[] = { NULL, "FPE_INTDIV", "FPE_INTOVF", "FPE_FLTDIV",
	"FPE_FLTOVF", "FPE_FLTUND", "FPE_FLTRES", "FPE_FLTINV", "FPE_FLTSUB", NULL, NULL, NULL,
	NULL, NULL, "FPE_FLTUNK", "FPE_CONDTRAP" };
static const char *const trap_codes[] = { NULL, "TRAP_BRKPT", "TRAP_TRACE", "TRAP_BRANCH",
	"TRAP_HWBKPT", "TRAP_UNK", "TRAP_PERF" };
static const char *const cld_codes[] = { NULL, "CLD_EXITED", "CLD_KILLED", "CLD_DUMPED",
	"CLD_TRAPPED", "CLD_STOPPED", "CLD_CONTINUED" };
static const char *const poll_codes[] = { NULL, "POLL_IN", "POLL_OUT", "POLL_MSG", "POLL_ERR",
	"POLL_PRI", "POLL_HUP" };
static const char *const sys_codes[] = { NULL, "SYS_SECCOMP", "SYS_USER_DISPATCH" };

#define CODE_NAME(table, code) \
	((code) < (int32_t)TD_ARRAY_SIZE(table) ? (table)[(code)] : NULL)

/* The name of a code the kernel gives signo (code > 0), NULL if unknown. */
static const char *kernel_code_name(int32_t signo, int32_t code)
{
	switch (signo) {
	case SIGSEGV: return CODE_NAME(segv_codes, code);
	case SIGBUS: return CODE_NAME(bus_codes, code);
	case SIGILL: return CODE_NAME(ill_codes, code);
	case SIGFPE: return CODE_NAME(fpe_codes, code);
	case SIGTRAP: return CODE_NAME(trap_codes, code);
	case SIGCHLD: return CODE_NAME(cld_codes, code);
	case SIGPOLL: return CODE_NAME(poll_codes, code);
	case SIGSYS: return CODE_NAME(sys_codes, code);
	}
	return NULL;
}

/* Signals whose si_addr says where a fault was. */
static bool fault_signal(int32_t signo)
{
	return signo == SIGSEGV || signo == SIGBUS || signo == SIGFPE || signo == SIGILL;
}

static void put_address(FILE *out, uint64_t addr, enum rp_sig_style style)
{
	fprintf(out, style == RP_SIG_HEADER ? " at address 0x%llx" : ", fault address 0x%llx",
		(unsigned long long)addr);
}

static void put_sender(FILE *out, uint32_t pid, const struct rp_signal_from *src)
{
	const char *how = src->code == SI_USER	? "kill" :
			  src->code == SI_TKILL ? "tgkill" :
			  src->code == SI_QUEUE ? "sigqueue; PID and uid as the sender gave them" :
						  "a message queue's notification, SI_MESGQ";
	const char *comm = src->comm;

	if (!src->pid) {
		/* the kernel's 0: the sender is not in the target's namespace */
		fprintf(out, ", sent by a process outside its PID namespace, uid %u (%s)", src->uid,
			how);
		return;
	}
	fprintf(out, ", sent by PID %u", src->pid);
	if (comm && *comm) {
		fprintf(out, " (%s)", comm);
	}
	fprintf(out, ", uid %u (%s)%s", src->uid, how,
		src->pid == pid ? ", by the process itself" : "");
}

void rp_signal_source(FILE *out, const struct rp_profile *p, uint32_t pid, int32_t signo,
	uint64_t addr, const struct rp_sigsrc *src, enum rp_sig_style style)
{
	if (!src)
		return;
	rp_signal_from(out, pid, signo, addr,
		&(struct rp_signal_from){ .known = src->known, .code = src->code,
			.pid = src->pid, .uid = src->uid, .comm = rp_text(p, src->comm) },
		style);
}

void rp_signal_from(FILE *out, uint32_t pid, int32_t signo, uint64_t addr,
	const struct rp_signal_from *src, enum rp_sig_style style)
{
	int32_t code;
	const char *name;

	if (!src)
		return;
	if (!src->known) {
		/* an older chunk: si_addr, which for a kill() held the sender */
		if (fault_signal(signo) || signo == SIGTRAP)
			put_address(out, addr, style);
		return;
	}
	code = src->code;
	switch (code) {
	case SI_USER:
	case SI_TKILL:
	case SI_QUEUE:
	case SI_MESGQ:
		put_sender(out, pid, src);
		return;
	case SI_TIMER:
		fputs(", from a POSIX timer (SI_TIMER)", out);
		return;
	case SI_KERNEL:
		fputs(signo == SIGALRM || signo == SIGVTALRM || signo == SIGPROF ?
			      ", from alarm() or setitimer() (SI_KERNEL)" :
		      signo == SIGXCPU ? ", from the CPU time limit (SI_KERNEL)" :
		      fault_signal(signo) ?
			      ", a fault the kernel gives no address for (SI_KERNEL: a general "
			      "protection fault, say)" :
			      ", raised by the kernel (SI_KERNEL)",
			out);
		return;
	case SI_ASYNCIO:
		fputs(", from asynchronous I/O (SI_ASYNCIO)", out);
		return;
	case SI_SIGIO:
		fputs(", from I/O readiness (SI_SIGIO)", out);
		return;
	case SI_ASYNCNL:
		fputs(", from an asynchronous name lookup (SI_ASYNCNL)", out);
		return;
	case SI_DETHREAD:
		fputs(", from an exec's killing of the other threads (SI_DETHREAD)", out);
		return;
	}
	name = code > 0 ? kernel_code_name(signo, code) : NULL;
	if (code > 0 && fault_signal(signo)) {
		put_address(out, addr, style);
		if (name)
			fprintf(out, " (%s)", name);
		else
			fprintf(out, " (si_code %d)", code);
	} else if (code > 0) {
		if (name)
			fprintf(out, ", raised by the kernel (%s)", name);
		else
			fprintf(out, ", raised by the kernel (si_code %d)", code);
	} else {
		fprintf(out, ", of si_code %d", code);
	}
}
