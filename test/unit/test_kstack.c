/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Unit tests of kernel stacks read by name (common/kstack.c) and of the
 * names turned back into addresses (symbolize/kallsyms.c's index by name):
 * the file's lines as the kernel writes them, odd ones, a table of our
 * own with duplicate names and a module, and this kernel's own stack of a
 * sleeping thread, named back through its /proc/kallsyms. */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../../common/kstack.h"
#include "../../common/td.h"
#include "../../symbolize/symbolize.h"

Test(kstack, parses_the_kernels_lines)
{
	char text[] = "[<0>] pipe_read+0x2f4/0x460\n"
		      "[<0>] nft_do_chain+0x1a/0x5c0 [nf_tables]\n"
		      "[<ffffffffc0a01234>] 0xffffffffc0a01234\n" /* no name: skipped */
		      "[<0>] entry_SYSCALL_64_after_hwframe+0x76/0x7e\n";
	struct td_kstack_frame f[8];

	cr_assert_eq(td_kstack_parse(text, f, 8), 3);
	cr_expect_str_eq(f[0].name, "pipe_read");
	cr_expect_null(f[0].module);
	cr_expect_eq(f[0].offset, 0x2f4);
	cr_expect_str_eq(f[1].name, "nft_do_chain");
	cr_expect_str_eq(f[1].module, "nf_tables");
	cr_expect_eq(f[1].offset, 0x1a);
	cr_expect_str_eq(f[2].name, "entry_SYSCALL_64_after_hwframe");
	cr_expect_eq(f[2].offset, 0x76);
}

Test(kstack, odd_text_ends_the_parse_and_max_bounds_it)
{
	char bad[] = "[<0>] vfs_read+0x10/0x20\nnot the format\n[<0>] ksys_read+0x1/0x2\n";
	char badoff[] = "[<0>] vfs_read+0xzz/0x20\n";
	char badmod[] = "[<0>] vfs_read+0x1/0x20 []\n";
	char many[] = "[<0>] a+0x1/0x2\n[<0>] b+0x1/0x2\n[<0>] c+0x1/0x2\n";
	struct td_kstack_frame f[4];

	cr_expect_eq(td_kstack_parse(bad, f, 4), 1);
	cr_expect_eq(td_kstack_parse(badoff, f, 4), 0);
	cr_expect_eq(td_kstack_parse(badmod, f, 4), 0);
	cr_expect_eq(td_kstack_parse(many, f, 2), 2);
	cr_expect_str_eq(f[1].name, "b");
}

/* A table of our own: two static functions named alike in the kernel
 * (the second short), one in a module, an alias. */
static struct sym_kallsyms *fake_table(void)
{
	char path[] = "/tmp/td-kallsyms-XXXXXX";
	int fd = mkstemp(path);
	FILE *f = fdopen(fd, "w");
	struct sym_kallsyms *k;

	cr_assert(f);
	fputs("ffffffff81000000 T _stext\n"
	      "ffffffff81000000 T _text\n"
	      "ffffffff81001000 t cleanup\n"
	      "ffffffff81001010 t after_first_cleanup\n"
	      "ffffffff81002000 T pipe_read\n"
	      "ffffffff81003000 t cleanup\n"
	      "ffffffff81003400 D some_data\n"
	      "ffffffff81004000 T vfs_read\n"
	      "ffffffffc0001000 t cleanup\t[nf_tables]\n"
	      "ffffffffc0001100 t nft_do_chain\t[nf_tables]\n",
		f);
	fclose(f);
	cr_assert_eq(sym_kallsyms_load(path, &k), 0);
	unlink(path);
	cr_assert_eq(sym_kallsyms_index(k), 0);
	return k;
}

Test(kstack, names_go_back_to_addresses_that_name_them)
{
	struct sym_kallsyms *k = fake_table();
	struct sym_kframe kf;
	uint64_t a = 0;

	cr_assert(sym_kallsyms_addr(k, "pipe_read", NULL, 0x2f4, &a));
	cr_expect_eq(a, 0xffffffff810022f4);
	cr_assert(sym_kallsyms_find(k, a, &kf));
	cr_expect_str_eq(kf.name, "pipe_read");
	/* the first cleanup ends at 0x10: +0x20 is the second's */
	cr_assert(sym_kallsyms_addr(k, "cleanup", NULL, 0x20, &a));
	cr_expect_eq(a, 0xffffffff81003020);
	cr_assert(sym_kallsyms_addr(k, "cleanup", NULL, 0x4, &a));
	cr_assert(sym_kallsyms_find(k, a, &kf));
	cr_expect_str_eq(kf.name, "cleanup");
	/* a module's, told apart from the kernel's by its module */
	cr_assert(sym_kallsyms_addr(k, "cleanup", "nf_tables", 0x8, &a));
	cr_expect_eq(a, 0xffffffffc0001008);
	cr_assert(sym_kallsyms_find(k, a, &kf));
	cr_expect_str_eq(kf.module, "nf_tables");
	cr_expect_not(sym_kallsyms_addr(k, "nft_do_chain", NULL, 0x8, &a), "not the kernel's");
	cr_expect_not(sym_kallsyms_addr(k, "nosuch", NULL, 0, &a));
	cr_expect_not(sym_kallsyms_addr(k, "some_data", NULL, 0, &a), "not text");
	cr_expect_not(sym_kallsyms_addr(k, "vfs_read", NULL, 1u << 20, &a), "past its reach");
	sym_kallsyms_free(k);
}

static void *nap(void *arg)
{
	struct timespec ts = { 60, 0 };

	__atomic_store_n((pid_t *)arg, gettid(), __ATOMIC_RELEASE);
	nanosleep(&ts, NULL);
	return NULL;
}

/* This kernel: a thread asleep in nanosleep(), read through /proc and
 * named back through /proc/kallsyms, frame for frame. */
Test(kstack, a_sleeping_threads_stack_named_through_kallsyms)
{
	struct td_kstack_frame f[64];
	struct td_task_info info = { 0 };
	struct sym_kallsyms *k;
	char text[TD_KSTACK_TEXT];
	pthread_t t;
	pid_t tid = 0;
	unsigned n = 0;
	bool sleep_seen = false;
	int r = td_kstack_permitted();

	if (r < 0)
		cr_skip_test("/proc/self/stack: %s (it needs CAP_SYS_ADMIN)", strerror(-r));
	if ((r = sym_kallsyms_load(NULL, &k)) < 0)
		cr_skip_test("/proc/kallsyms: %s", strerror(-r));
	cr_assert_eq(sym_kallsyms_index(k), 0);
	cr_assert_eq(pthread_create(&t, NULL, nap, &tid), 0);
	/* until it sleeps in its call (no fixed wait: a loaded machine) */
	for (int i = 0; i < 30000 && !sleep_seen; i++) {
		usleep(1000);
		if (!__atomic_load_n(&tid, __ATOMIC_ACQUIRE) ||
			td_task_info_read(getpid(), tid, &info) < 0 || info.state != 'S')
			continue;
		cr_assert_gt(td_kstack_read(getpid(), tid, text, sizeof(text)), 0);
		n = td_kstack_parse(text, f, 64);
		for (unsigned j = 0; j < n; j++)
			sleep_seen = sleep_seen || strstr(f[j].name, "nanosleep") ||
				strstr(f[j].name, "nsleep");
	}
	cr_assert(sleep_seen, "no nanosleep frame in:\n%s", text);
	for (unsigned j = 0; j < n; j++) {
		struct sym_kframe kf;
		uint64_t a;

		cr_assert(sym_kallsyms_addr(k, f[j].name, f[j].module, f[j].offset, &a),
			"%s+%#llx not in kallsyms", f[j].name, (unsigned long long)f[j].offset);
		cr_assert(sym_kallsyms_find(k, a, &kf));
		cr_expect_str_eq(kf.name, f[j].name);
		cr_expect_eq(kf.offset, f[j].offset);
	}
	pthread_cancel(t);
	pthread_join(t, NULL);
	sym_kallsyms_free(k);
}
