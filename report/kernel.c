/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The report layer's one notion of a kernel frame, and the one-line
 * summary of a stack that every place printing a stack in one line uses.
 *
 * A kernel frame is a frame of a mapping the recorder names "[kernel]"
 * or "[MODULE]" after a kernel module (tracerd-chunk(5)): its module is
 * all a chunk marks it by.  Those names are told apart from the other
 * bracketed names a chunk holds, which are the program's ("[vdso]",
 * "[python]", "[jit]", "[perf-PID.map]"), by the characters a kernel
 * module's name may have and a list of the program's names.  A stack
 * lists its kernel frames before (inside) its user ones.
 *
 * Guarantees: a line shows the innermost user frames first, so that the
 * program's place is never pushed out of view by the kernel's frames
 * (the scheduler's and the system call's entry); the kernel part stays
 * in the line as one short mark naming its innermost function that is
 * not the scheduler's.  Leaves the full stacks (folded, tree, pprof,
 * flame graphs, dumps) to their formats, which keep every kernel frame. */
#define _GNU_SOURCE
#include "report-internal.h"

#include <string.h>

/* The bracketed names of the program's own mappings (the kernel has no
 * module of these names): the vDSO, tracerd's Python and JIT frames, and
 * the kernel's names of anonymous regions in /proc/PID/maps. */
static const char *const program_names[] = { "vdso", "vsyscall", "vvar", "python", "jit", "heap",
	"stack", "uprobes" };

bool rp_kernel_module(const char *path)
{
	size_t len = path ? strlen(path) : 0;

	if (len < 3 || path[0] != '[' || path[len - 1] != ']')
		return false;
	/* a module's name: letters, digits, '_' and '-' (kallsyms' names) */
	for (size_t i = 1; i + 1 < len; i++)
		if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-",
			    path[i]))
			return false;
	for (size_t i = 0; i < sizeof(program_names) / sizeof(*program_names); i++)
		if (len - 2 == strlen(program_names[i]) &&
			!strncmp(path + 1, program_names[i], len - 2))
			return false;
	return true;
}

static const struct rp_frame *frame_of(const struct rp_profile *p, uint32_t node)
{
	return &p->frames[p->nodes[node].frame];
}

unsigned rp_kernel_depth(const struct rp_profile *p, uint32_t node)
{
	unsigned n = 0;

	for (uint32_t k = node; k && frame_of(p, k)->kernel; k = p->nodes[k].parent)
		n++;
	return n;
}

uint32_t rp_user_node(const struct rp_profile *p, uint32_t node)
{
	uint32_t k = node;

	while (k && frame_of(p, k)->kernel)
		k = p->nodes[k].parent;
	return k ? k : node;
}

/* The scheduler's functions (schedule, io_schedule, rt_mutex_schedule,
 * schedule_hrtimeout_range, poll_schedule_timeout, the switch itself),
 * which a blocked thread's kernel stack may show innermost (perf's
 * switch-out chain does; /proc/TID/stack skips the core ones) and which
 * say nothing of what it waits for. */
bool rp_kernel_scheduler(const char *name)
{
	return name && (strstr(name, "schedule") || !strncmp(name, "__switch_to", 11) ||
			       !strncmp(name, "finish_task_switch", 18));
}

/* The kernel part of a stack (depth frames from node) as one mark: its
 * innermost function that is not the scheduler's ("..." if it has more
 * frames). */
static void kernel_mark(FILE *out, const struct rp_profile *p, uint32_t node, unsigned depth)
{
	uint32_t named = node, k = node;

	for (unsigned i = 0; i < depth; i++, k = p->nodes[k].parent)
		if (!rp_kernel_scheduler(rp_str(p, frame_of(p, k)->name))) {
			named = k;
			break;
		}
	fprintf(out, "[kernel: %s%s]", rp_text(p, frame_of(p, named)->name) ?: "??",
		depth > 1 ? " ..." : "");
}

void rp_stack_line(FILE *out, const struct rp_profile *p, uint32_t node, unsigned max)
{
	/* kernel frames alone: nothing to crowd out, rp_user_node gives node */
	uint32_t user = rp_user_node(p, node);
	unsigned depth = user == node ? 0 : rp_kernel_depth(p, node), i = 0;

	for (uint32_t k = user; k; k = p->nodes[k].parent, i++) {
		if (i == max) {
			fputs(" <- ...", out);
			break;
		}
		fprintf(out, "%s%s", i ? " <- " : "", rp_text(p, frame_of(p, k)->name) ?: "??");
	}
	if (depth) {
		fputc(' ', out);
		kernel_mark(out, p, node, depth);
	}
}
