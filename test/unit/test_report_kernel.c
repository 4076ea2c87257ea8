/* SPDX-License-Identifier: GPL-2.0-or-later */
/* report/kernel.c: which modules are the kernel's, and a stack in one
 * line.  A chunk written here holds stacks as the recorder writes them
 * (kernel frames in a "[kernel]" or "[MODULE]" mapping, leaf first, then
 * the program's), loaded as tracerd report loads any; the truth is the
 * stack written. */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "../../report/report-internal.h"

Test(report_kernel, kernel_modules_are_told_from_the_programs)
{
	static const char *const kernel[] = { "[kernel]", "[nf_tables]", "[bpf]",
		"[__builtin__ftrace]", "[snd-hda]" };
	static const char *const program[] = { "[vdso]", "[python]", "[jit]", "[perf-123.map]",
		"[anon:zone]", "[heap]", "[stack]", "/usr/lib/x86_64-linux-gnu/libc.so.6", "kernel",
		"[]", "[kernel", "", NULL };

	for (size_t i = 0; i < sizeof(kernel) / sizeof(*kernel); i++)
		cr_expect(rp_kernel_module(kernel[i]), "%s is the kernel's", kernel[i]);
	for (size_t i = 0; i < sizeof(program) / sizeof(*program); i++)
		cr_expect(!rp_kernel_module(program[i]), "%s is not the kernel's",
			program[i] ? program[i] : "NULL");
	cr_expect(rp_kernel_scheduler("schedule") && rp_kernel_scheduler("__schedule") &&
		rp_kernel_scheduler("rt_mutex_schedule") &&
		rp_kernel_scheduler("schedule_hrtimeout_range_clock") &&
		rp_kernel_scheduler("io_schedule") && rp_kernel_scheduler("__switch_to_asm"));
	cr_expect(!rp_kernel_scheduler("futex_wait_queue") && !rp_kernel_scheduler("anon_pipe_read") &&
		!rp_kernel_scheduler(NULL));
}

/* A location of one function in a mapping of path (NULL: none). */
static uint32_t loc(struct chunk_writer *w, const char *path, const char *fn)
{
	struct chunk_mapping m = { .path = path };
	uint32_t f = chunk_writer_function(w, fn, NULL, NULL, 0);

	return chunk_writer_location(w, path ? chunk_writer_mapping(w, &m) : 0, 0,
		(struct chunk_line[]){ { f, 0, 0 } }, 1);
}

/* The sampled node whose leaf function is leaf. */
static uint32_t leaf_node(const struct rp_profile *p, const char *leaf)
{
	for (size_t i = 1; i < p->nnodes; i++)
		if (p->nodes[i].count &&
			!strcmp(rp_str(p, p->frames[p->nodes[i].frame].name), leaf))
			return (uint32_t)i;
	cr_assert_fail("no sample ends in %s", leaf);
	return 0;
}

static char *line_of(const struct rp_profile *p, uint32_t node, unsigned max)
{
	char *s = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&s, &len);

	cr_assert_not_null(f);
	rp_stack_line(f, p, node, max);
	fclose(f);
	return s;
}

Test(report_kernel, one_line_shows_the_program_first)
{
	int fd = memfd_create("report-kernel", 0);
	struct chunk_writer_opts o = { .fd = fd, .target_pid = 4242 };
	struct rp_filter filter = { .state = -1 };
	struct rp_load_report rep;
	struct rp_profile *p;
	struct chunk_writer *w;
	char path[64], *s;
	const char *paths[] = { path };
	const char *libc = "/usr/lib/x86_64-linux-gnu/libc.so.6", *prog = "/usr/bin/prog";
	uint32_t th, mutex, kthread, py;

	cr_assert_geq(fd, 0);
	cr_assert_eq(chunk_writer_open(&o, &w), 0);
	th = chunk_writer_thread(w, 4243, 4242, "worker");
	/* perf's switch-out chain: the scheduler innermost, a module's
	 * frame, the system call's entry outermost */
	mutex = chunk_writer_stack(w,
		(uint32_t[]){ loc(w, "[kernel]", "schedule"), loc(w, "[kernel]", "futex_wait_queue"),
			loc(w, "[nf_tables]", "nft_do_chain"), loc(w, "[kernel]", "do_syscall_64"),
			loc(w, "[kernel]", "entry_SYSCALL_64_after_hwframe"),
			loc(w, libc, "___pthread_mutex_lock"), loc(w, prog, "w_mutex"),
			loc(w, libc, "start_thread") },
		8);
	kthread = chunk_writer_stack(w,
		(uint32_t[]){ loc(w, "[kernel]", "worker_thread"), loc(w, "[kernel]", "kthread") },
		2);
	py = chunk_writer_stack(w,
		(uint32_t[]){ loc(w, "[python]", "work"), loc(w, "[vdso]", "__vdso_clock_gettime"),
			loc(w, NULL, "unmapped") },
		3);
	cr_assert_eq(chunk_writer_sample(w, 1000000, th, TCF_STATE_SLEEPING, mutex, NULL, 0), 0);
	cr_assert_eq(chunk_writer_sample(w, 2000000, th, TCF_STATE_SLEEPING, kthread, NULL, 0), 0);
	cr_assert_eq(chunk_writer_sample(w, 3000000, th, TCF_STATE_ONCPU, py, NULL, 0), 0);
	cr_assert_eq(chunk_writer_finish(w, TCF_END_STOP, 0), 0);
	chunk_writer_free(w);
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	cr_assert_eq(rp_load(paths, 1, &filter, &p, &rep, NULL), 0);

	cr_expect_eq(rp_kernel_depth(p, leaf_node(p, "schedule")), 5);
	s = line_of(p, leaf_node(p, "schedule"), 8);
	cr_expect_str_eq(s, "___pthread_mutex_lock <- w_mutex <- start_thread "
			    "[kernel: futex_wait_queue ...]");
	free(s);
	s = line_of(p, leaf_node(p, "schedule"), 2);
	cr_expect_str_eq(s, "___pthread_mutex_lock <- w_mutex <- ... [kernel: futex_wait_queue ...]");
	free(s);

	/* no user frame: nothing to crowd out, the kernel's as they are */
	s = line_of(p, leaf_node(p, "worker_thread"), 8);
	cr_expect_str_eq(s, "worker_thread <- kthread");
	free(s);

	cr_expect_eq(rp_kernel_depth(p, leaf_node(p, "work")), 0);
	s = line_of(p, leaf_node(p, "work"), 8);
	cr_expect_str_eq(s, "work <- __vdso_clock_gettime <- unmapped");
	free(s);
	rp_free(p);
	close(fd);
}

/* A recording's waits in JSON (rp_waits). */
static char *waits_json(int fd)
{
	struct rp_filter filter = { .state = -1 };
	struct rp_load_report rep;
	struct rp_profile *p;
	char path[64], *s = NULL;
	const char *paths[] = { path };
	size_t len = 0;
	FILE *f = open_memstream(&s, &len);

	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	cr_assert_not_null(f);
	cr_assert_eq(rp_load(paths, 1, &filter, &p, &rep, NULL), 0);
	cr_assert_eq(rp_waits(f, p, 0, true), 0);
	fclose(f);
	rp_free(p);
	return s;
}

static unsigned count(const char *hay, const char *needle)
{
	unsigned n = 0;

	for (const char *at = hay; (at = strstr(at, needle)); at++)
		n++;
	return n;
}

/* Two episodes of one waiter at one place of the program, one with the
 * scheduler innermost (perf's switch-out chain) and one without
 * (/proc/TID/stack), their owner's stacks likewise: one site of two
 * episodes, one owner row holding both waits.  Another place is another
 * site. */
Test(report_kernel, one_place_is_one_site_whatever_the_kernel_stack)
{
	int fd = memfd_create("report-kernel-waits", 0);
	struct chunk_writer_opts o = { .fd = fd, .target_pid = 4242, .minor = 2 };
	const char *libc = "/usr/lib/x86_64-linux-gnu/libc.so.6", *prog = "/usr/bin/prog";
	struct chunk_writer *w;
	uint32_t waiter, owner, lock, nap, other, user, sched, plain, held, held_sched;
	char *s;

	cr_assert_geq(fd, 0);
	cr_assert_eq(chunk_writer_open(&o, &w), 0);
	cr_assert_eq(chunk_writer_meta(w, "sampling.mode", "wall"), 0);
	waiter = chunk_writer_thread(w, 4243, 4242, "waiter");
	owner = chunk_writer_thread(w, 4244, 4242, "owner");
	lock = loc(w, libc, "___pthread_mutex_lock");
	user = loc(w, prog, "w_mutex");
	nap = loc(w, "[kernel]", "hrtimer_nanosleep");
	other = loc(w, prog, "elsewhere");
	sched = chunk_writer_stack(w,
		(uint32_t[]){ loc(w, "[kernel]", "schedule"), loc(w, "[kernel]", "futex_wait_queue"),
			lock, user },
		4);
	plain = chunk_writer_stack(w, (uint32_t[]){ loc(w, "[kernel]", "futex_wait_queue"), lock, user },
		3);
	held = chunk_writer_stack(w, (uint32_t[]){ nap, loc(w, prog, "holder") }, 2);
	held_sched = chunk_writer_stack(w,
		(uint32_t[]){ loc(w, "[kernel]", "schedule"), nap, loc(w, prog, "holder") }, 3);
	for (unsigned i = 0; i < 3; i++) {
		struct chunk_wait cw = { .time_ns = 10000000 * (i + 1), .wait_ns = 1000000,
			.thread_id = waiter, .stack_id = i == 0 ? sched : i == 1 ? plain :
				chunk_writer_stack(w, (uint32_t[]){ lock, other }, 2),
			.kind = TCF_WAIT_MUTEX, .flags = TCF_WAITF_OWNERS_HELD, .object = 0x5581a0c0,
			.nowners = 1 };

		cw.owners[0] = (struct chunk_wait_owner){ owner, i ? held : held_sched, 1000000 };
		cr_assert_eq(chunk_writer_wait(w, &cw), 0);
	}
	cr_assert_eq(chunk_writer_finish(w, TCF_END_STOP, 0), 0);
	chunk_writer_free(w);
	s = waits_json(fd);
	cr_expect_eq(count(s, "\"kind\":\"mutex\""), 2, "%s", s);
	cr_expect_eq(count(s, "\"count\":2,"), 1, "two episodes at w_mutex: %s", s);
	cr_expect_eq(count(s, "{\"thread\":\"owner\""), 2, "an owner row a site: %s", s);
	cr_expect_eq(count(s, "\"tid\":4244,\"wait_ns\":2000000,"), 1, "%s", s);
	free(s);
	close(fd);
}
