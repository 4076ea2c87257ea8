/* SPDX-License-Identifier: GPL-2.0-or-later */
/* tracerd dump: the front end.  Parses the options, runs the dump
 * (daemon/dump.c: attach, one capture round, detach, unwind, symbolize),
 * prints the result as text or JSON and chooses the exit status.  If the
 * process died during the dump, what was captured is printed (exit 4). */
#define _GNU_SOURCE
#include "cli.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../common/td.h"
#include "../daemon/dump.h"
#include "../daemon/waits.h"

static void usage(FILE *f)
{
	fputs("usage: tracerd dump --pid PID [--tid TID]... [--no-inline] [--no-dwarf] [--json]\n"
	      "                    [-v] [--debuginfo-dir DIR] [--cache-dir DIR|none]\n"
	      "                    [--debuginfod] [--stack-bytes N] [--no-kernel]\n"
	      "\n"
	      "Print the stack of every thread of PID once.  Each thread is stopped only\n"
	      "while its registers and the top of its stack are copied; unwinding and\n"
	      "symbolization happen after it runs again.  As root, a thread blocked in a\n"
	      "system call shows its kernel stack above it (/proc/TID/stack).\n"
	      "\n"
	      "  -p, --pid PID          process to dump\n"
	      "  -t, --tid TID          only this thread (repeatable)\n"
	      "      --no-inline        do not show inlined frames\n"
	      "      --no-dwarf         ELF symbol names only (no inlines, no file:line);\n"
	      "                         fastest, skips inflating compressed debuginfo\n"
	      "      --json             one JSON object on stdout\n"
	      "  -v, --verbose          add stopped time, live reads and module counts\n"
	      "      --no-kernel        no kernel frames of blocked threads\n"
	      "      --debuginfo-dir DIR  also look for DIR/.build-id/xx/yyyy.debug\n"
	      "      --cache-dir DIR    keep debuginfo decompressed in DIR, for the next\n"
	      "                         runs (default $TRACERD_CACHE_DIR, else\n"
	      "                         ~/.cache/tracerd, /var/cache/tracerd for root);\n"
	      "                         none: no cache\n"
	      "      --debuginfod       fetch missing debuginfo from the servers in\n"
	      "                         DEBUGINFOD_URLS (without it, none is asked)\n"
	      "      --stack-bytes N    stack bytes copied per thread (default 64K)\n"
	      "  -h, --help             this text\n"
	      "\n"
	      "Exit status: 0 ok, 1 usage, 2 cannot attach, 3 error, 4 the process\n"
	      "exited during the dump (what was captured is printed).\n",
		f);
}

static void print_frame_text(const struct dump_result *r, unsigned idx,
	const struct dump_frame *f)
{
	const char *function = dump_string(r, f->function), *file = dump_string(r, f->file);
	const char *module = dump_string(r, f->module);

	/* every name came from the target's files: escaped (td_text_put) */
	if (f->kernel) {
		/* the kernel hides the address: the offset in the function */
		printf("  #%-3u %-18s ", idx, "");
		td_text_put(stdout, function ? function : "??");
		printf("+0x%" PRIx64 " in ", f->offset);
		td_text_put(stdout, module ? module : "[kernel]");
		putchar('\n');
		return;
	}
	printf("  #%-3u 0x%016" PRIx64 " ", idx, f->pc);
	td_text_put(stdout, function ? function : "??");
	if (f->inlined)
		fputs(" [inlined]", stdout);
	if (file) {
		fputs(" at ", stdout);
		td_text_put(stdout, file);
		if (f->line)
			printf(":%d", f->line);
	}
	if (module) {
		fputs(" in ", stdout);
		td_text_put(stdout, module);
	}
	putchar('\n');
}

static void print_frame_json(const struct dump_result *r, bool first, const struct dump_frame *f)
{
	printf("%s{\"pc\": \"0x%" PRIx64 "\"", first ? "" : ", ", f->pc);
	if (f->function) {
		fputs(", \"function\": ", stdout);
		td_json_string(stdout, dump_string(r, f->function), 0);
	}
	printf(", \"inlined\": %s", f->inlined ? "true" : "false");
	if (f->kernel)
		fputs(", \"kernel\": true", stdout);
	if (f->file) {
		fputs(", \"file\": ", stdout);
		td_json_string(stdout, dump_string(r, f->file), 0);
	}
	if (f->line)
		printf(", \"line\": %d", f->line);
	if (f->module) {
		fputs(", \"module\": ", stdout);
		td_json_string(stdout, dump_string(r, f->module), 0);
		printf(", \"offset\": \"0x%" PRIx64 "\"", f->offset);
	}
	if (f->build_id) {
		fputs(", \"build_id\": ", stdout);
		td_json_string(stdout, dump_string(r, f->build_id), 0);
	}
	putchar('}');
}

/* Words for the states whose letter misleads or needs saying, else NULL. */
static const char *state_words(char state)
{
	switch (state) {
	case 'T':
		return "stopped (job control)";
	case 'Z':
	case 'X':
		return "exited";
	}
	return NULL;
}

/* A thread's name (its comm: the target's bytes) for text, escaped. */
struct tname {
	char s[4 * sizeof(((struct dump_thread *)0)->name) + 1];
};

static const char *name_text(struct tname *b, const char *name)
{
	td_text_escape(b->s, sizeof(b->s), name);
	return b->s;
}

static const char *name_of(const struct dump_result *r, pid_t tid, struct tname *b)
{
	const struct dump_thread *th = dump_thread_of(r, tid);

	return th ? name_text(b, th->name) : "?";
}

/* "waiting for mutex 0x... held by 4815 (dl-b)" and the like; "" when the
 * thread waits for nothing we can name. */
static void wait_words(const struct dump_result *r, const struct wait_info *w, char *buf,
	size_t len)
{
	const char *call = wait_syscall_name(w->nr);
	char held[128] = "", what[4 * sizeof(w->what) + 1];
	struct tname b;

	/* what: a descriptor's path, from the target */
	td_text_escape(what, sizeof(what), w->what);
	if (w->owner)
		snprintf(held, sizeof(held), " held by %d (%s)", (int)w->owner,
			name_of(r, w->owner, &b));
	switch (w->kind) {
	case WAIT_MUTEX:
		snprintf(buf, len, "waiting for mutex 0x%" PRIx64 "%s", w->object, held);
		break;
	case WAIT_RWLOCK:
		snprintf(buf, len, "waiting for rwlock 0x%" PRIx64 "%s%s", w->object,
			w->owner ? " (write)" : "", held);
		break;
	case WAIT_CONDVAR:
		snprintf(buf, len, "waiting on condition variable 0x%" PRIx64, w->object);
		break;
	case WAIT_GIL:
		snprintf(buf, len, "waiting for the GIL (condition variable 0x%" PRIx64 ")%s",
			w->object, held);
		break;
	case WAIT_SEMAPHORE:
		snprintf(buf, len, "waiting on semaphore 0x%" PRIx64, w->object);
		break;
	case WAIT_JOIN:
		if (w->owner)
			snprintf(buf, len, "waiting to join thread %d (%s)", (int)w->owner,
				name_of(r, w->owner, &b));
		else
			snprintf(buf, len, "waiting to join a thread (futex 0x%" PRIx64 ")",
				w->object);
		break;
	case WAIT_FUTEX:
		snprintf(buf, len, "waiting on futex 0x%" PRIx64, w->object);
		break;
	case WAIT_FD:
		if (w->object == (uint64_t)-1)
			snprintf(buf, len, "waiting in %s on a set of descriptors",
				call ? call : "a system call");
		else
			snprintf(buf, len, "waiting in %s on fd %d%s%s%s", call ? call : "a system call",
				(int)w->object, what[0] ? " (" : "", what, what[0] ? ")" : "");
		break;
	case WAIT_SLEEP:
		snprintf(buf, len, "sleeping in %s", call ? call : "a system call");
		break;
	case WAIT_SIGNAL:
		snprintf(buf, len, "waiting for a signal in %s", call ? call : "a system call");
		break;
	case WAIT_DISK:
		snprintf(buf, len, "in uninterruptible (disk) sleep%s%s", call ? " in " : "",
			call ? call : "");
		break;
	case WAIT_OTHER:
		if (what[0])
			snprintf(buf, len, "blocked in %s", what);
		else
			snprintf(buf, len, "blocked in system call %ld", w->nr);
		break;
	default:
		buf[0] = '\0';
	}
}

static void print_wait_json(const struct wait_info *w)
{
	if (w->kind == WAIT_NONE)
		return;
	printf(", \"wait\": {\"kind\": \"%s\"", wait_kind_name(w->kind));
	if (w->kind == WAIT_FD)
		printf(", \"fd\": %d", w->object == (uint64_t)-1 ? -1 : (int)w->object);
	else if (w->kind != WAIT_SLEEP && w->kind != WAIT_SIGNAL &&
		 w->kind != WAIT_DISK && w->kind != WAIT_OTHER)
		printf(", \"object\": \"0x%" PRIx64 "\"", w->object);
	if (w->owner)
		printf(", \"owner_tid\": %d", (int)w->owner);
	if (wait_syscall_name(w->nr)) {
		fputs(", \"syscall\": ", stdout);
		td_json_string(stdout, wait_syscall_name(w->nr), 0);
	}
	if (w->what[0] && w->kind == WAIT_FD) {
		fputs(", \"target\": ", stdout);
		td_json_string(stdout, w->what, 0);
	}
	putchar('}');
}

static void print_thread(const struct dump_result *r, const struct dump_thread *th, bool json,
	bool verbose, bool first)
{
	const char *words = state_words(th->state);

	if (json) {
		printf("%s\n    {\"tid\": %d, \"name\": ", first ? "" : ",", (int)th->tid);
		td_json_string(stdout, th->name, 0);
		printf(", \"state\": \"%c\"", th->state);
		if (words)
			printf(", \"state_name\": \"%s\"", words);
	} else {
		struct tname b;

		printf("%sthread %d (%s) %c%s%s", first ? "" : "\n", (int)th->tid,
			name_text(&b, th->name), th->state, words ? " " : "", words ? words : "");
	}
	if (th->capture == DUMP_EXITED) {
		if (json)
			fputs(", \"end\": \"main thread has exited\", \"frames\": []}", stdout);
		else
			fputs("\n  -- main thread has exited; the process lives on in its other "
			      "threads\n",
				stdout);
		return;
	}
	if (th->capture != DUMP_CAPTURED && th->nkernel) {
		/* in D: no stop reached it; its kernel stack from before */
		if (json)
			fputs(", \"end\": \"not stopped: in uninterruptible sleep\", \"frames\": [",
				stdout);
		else
			fputs("\n  -- not stopped (uninterruptible sleep); its kernel stack:\n",
				stdout);
		for (unsigned i = 0; i < th->nframes; i++) {
			if (json)
				print_frame_json(r, i == 0, &r->frames[th->first_frame + i]);
			else
				print_frame_text(r, i, &r->frames[th->first_frame + i]);
		}
		if (json)
			fputs("]}", stdout);
		return;
	}
	if (th->capture != DUMP_CAPTURED) {
		if (json)
			fputs(", \"end\": \"thread exited before it could be captured\", "
			      "\"frames\": []}",
				stdout);
		else
			fputs("\n  -- thread exited before it could be captured\n", stdout);
		return;
	}
	if (json)
		print_wait_json(&th->wait);
	if (json) {
		printf(", \"stopped_ns\": %" PRIu64 ", \"end\": ", th->stopped_ns);
		td_json_string(stdout, sym_end_name(th->end), 0);
		if (verbose)
			printf(", \"live_reads\": %u, \"stack_bytes\": %u", th->live_reads,
				th->stack_bytes);
		fputs(", \"frames\": [", stdout);
	} else {
		char waits[384];

		if (verbose)
			printf("  stopped %.1f us, %u stack bytes copied", th->stopped_ns / 1000.0,
				th->stack_bytes);
		putchar('\n');
		wait_words(r, &th->wait, waits, sizeof(waits));
		if (waits[0])
			printf("  %s\n", waits);
	}
	for (unsigned i = 0; i < th->nframes; i++) {
		const struct dump_frame *f = &r->frames[th->first_frame + i];

		if (json)
			print_frame_json(r, i == 0, f);
		else
			print_frame_text(r, i, f);
	}
	if (json) {
		fputs("]}", stdout);
		return;
	}
	printf("  -- %s", sym_end_name(th->end));
	if (th->end == SYM_END_WINDOW || th->end == SYM_END_READ_FAILED ||
		th->end == SYM_END_OTHER_STACK)
		printf(" at 0x%" PRIx64, th->fault_addr);
	if (verbose && th->detail[0]) {
		fputs(" (", stdout); /* libdwfl's words may quote a file's names */
		td_text_put(stdout, th->detail);
		putchar(')');
	}
	if (verbose && th->live_reads)
		printf("; %u reads outside the stack copy", th->live_reads);
	putchar('\n');
}

/* Deadlocks first, as jstack reports Java's: each cycle, thread by thread,
 * in the order of who waits for whom. */
static void print_deadlocks(const struct dump_result *r, bool json)
{
	if (json)
		fputs(", \"deadlocks\": [", stdout);
	else
		printf("Found %u deadlock%s.\n", r->deadlocks, r->deadlocks == 1 ? "" : "s");
	for (unsigned c = 1; c <= r->deadlocks; c++) {
		unsigned first = 0, i;

		while (r->threads[first].deadlock != c)
			first++;
		if (json)
			printf("%s[", c > 1 ? ", " : "");
		else
			printf("\ndeadlock %u:\n", c);
		i = first;
		do {
			const struct dump_thread *th = &r->threads[i];
			char words[384];

			if (json) {
				printf("%s%d", i == first ? "" : ", ", (int)th->tid);
			} else {
				wait_words(r, &th->wait, words, sizeof(words));
				struct tname b;

				printf("  thread %d (%s) %s\n", (int)th->tid, name_text(&b, th->name),
					words);
			}
			i = (unsigned)(dump_thread_of(r, th->wait.owner) - r->threads);
		} while (i != first);
		if (json)
			putchar(']');
	}
	if (json)
		putchar(']');
	else
		putchar('\n');
}

static void print_result(const struct dump_result *r, bool json, bool verbose,
	const char *cache_dir)
{
	bool first = true;

	if (json) {
		printf("{\"pid\": %d", (int)r->pid);
		if (r->deadlocks)
			print_deadlocks(r, true);
		fputs(", \"threads\": [", stdout);
		for (unsigned i = 0; i < r->nthreads; i++)
			print_thread(r, &r->threads[i], true, verbose, i == 0);
		fputs("\n]}\n", stdout);
	} else {
		if (r->deadlocks)
			print_deadlocks(r, false);
		/* the deadlocked threads' stacks first */
		for (unsigned pass = 0; pass < 2; pass++)
			for (unsigned i = 0; i < r->nthreads; i++)
				if ((r->threads[i].deadlock == 0) == (pass == 1)) {
					print_thread(r, &r->threads[i], false, verbose, first);
					first = false;
				}
	}
	if (verbose && !json) {
		printf("\n%u threads, %u captured, %u gone, %u did not stop in time; "
		       "%u modules, %u with ELF, %u with DWARF used\n",
			r->requested, r->captured, r->gone, r->timeout, r->modules, r->with_elf,
			r->with_dwarf);
		printf("attach %.1f ms, modules %.1f ms, capture %.1f ms, unwind and "
		       "symbolize %.1f ms\n",
			r->attach_ns / 1e6, r->modules_ns / 1e6, r->capture_ns / 1e6,
			r->symbolize_ns / 1e6);
		if (cache_dir) {
			const struct sym_debug_stats *d = &r->debug_cache;

			printf("debuginfo cache %s: %u reused, %u made; symbol tables %u reused, "
			       "%u made",
				cache_dir, d->reused, d->created, d->tables_reused, d->tables_made);
			if (d->failed)
				printf("; %u read without it: %s", d->failed, td_strerror(d->err));
			putchar('\n');
		}
		if (r->kstack_err)
			printf("kernel stacks: /proc/TID/stack %s\n",
				r->kstack_err == -EACCES ? "is not readable without CAP_SYS_ADMIN (root)" :
							   td_strerror(r->kstack_err));
	}
	fflush(stdout);
}

/* The words and exit status for a dump that produced no result. */
static int explain_failure(const struct dump_options *o, const struct dump_failure *f, int err)
{
	switch (f->step) {
	case DUMP_FAIL_ATTACH:
		return td_explain_attach(o->pid, err);
	case DUMP_FAIL_TID:
		td_msg("%d is not a thread of process %d; see ls /proc/%d/task", (int)f->tid,
			(int)o->pid, (int)o->pid);
		return TD_EXIT_USAGE;
	case DUMP_FAIL_MODULES:
		if (f->gone) {
			td_msg("process %d exited before its stacks could be captured",
				(int)o->pid);
			return TD_EXIT_PARTIAL;
		}
		td_msg("cannot read the modules of process %d: %s", (int)o->pid, td_strerror(err));
		return TD_EXIT_IO;
	case DUMP_FAIL_SETUP:
		break;
	}
	if (err == -ENOMEM)
		td_msg("out of memory");
	else
		td_msg("cannot set up tracing: %s", td_strerror(err));
	return TD_EXIT_IO;
}

int cmd_dump(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "pid", required_argument, NULL, 'p' },
		{ "tid", required_argument, NULL, 't' },
		{ "no-inline", no_argument, NULL, 'I' },
		{ "no-dwarf", no_argument, NULL, 'N' },
		{ "json", no_argument, NULL, 'j' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "debuginfo-dir", required_argument, NULL, 'D' },
		{ "stack-bytes", required_argument, NULL, 'S' },
		{ "cache-dir", required_argument, NULL, 'C' },
		{ "debuginfod", no_argument, NULL, 'F' },
		{ "no-kernel", no_argument, NULL, 'K' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct dump_options o = { .inlines = true };
	struct dump_failure fail;
	struct dump_result *res;
	bool json = false, verbose = false, debuginfod = false;
	const char *cache_given = NULL;
	char cache_buf[PATH_MAX];
	int c, r, ret = TD_EXIT_OK;
	uint64_t v;

	optind = 1;
	while ((c = getopt_long(argc, argv, ":p:t:vh", opts, NULL)) != -1) {
		switch (c) {
		case 'p':
			if (!td_parse_pid("--pid", optarg, &o.pid))
				return TD_EXIT_USAGE;
			break;
		case 't':
			if (o.ntids == DUMP_MAX_TIDS) {
				td_msg("--tid: at most %d threads", DUMP_MAX_TIDS);
				return TD_EXIT_USAGE;
			}
			if (!td_parse_pid("--tid", optarg, &o.tids[o.ntids]))
				return TD_EXIT_USAGE;
			o.ntids++;
			break;
		case 'I':
			o.inlines = false;
			break;
		case 'N':
			o.no_dwarf = true;
			break;
		case 'j':
			json = true;
			break;
		case 'v':
			verbose = true;
			break;
		case 'D':
			if (optarg[0] != '/') {
				td_msg("--debuginfo-dir: '%s' is not an absolute path; give one",
					optarg);
				return TD_EXIT_USAGE;
			}
			o.debuginfo_dir = optarg;
			break;
		case 'S':
			if (!td_parse_size("--stack-bytes", optarg, 512, 8u << 20, &v))
				return TD_EXIT_USAGE;
			o.stack_bytes = (uint32_t)v;
			break;
		case 'C':
			cache_given = optarg;
			break;
		case 'F':
			debuginfod = true;
			break;
		case 'K':
			o.no_kernel = true;
			break;
		case 'h':
			usage(stdout);
			return TD_EXIT_OK;
		default:
			return td_bad_option("dump", c, argv);
		}
	}
	if (optind < argc) {
		td_msg("dump: unexpected argument '%s'; see tracerd dump --help", argv[optind]);
		return TD_EXIT_USAGE;
	}
	if (!o.pid) {
		td_msg("dump: --pid is required; see tracerd dump --help");
		return TD_EXIT_USAGE;
	}
	/* before any libdw: its lookups read the environment */
	td_debuginfod_setup(debuginfod);
	/* --no-dwarf inflates nothing: no cache to make ready */
	if (!o.no_dwarf &&
		!td_cache_dir_setup(cache_given, cache_buf, sizeof(cache_buf), &o.cache_dir))
		return TD_EXIT_USAGE;

	r = dump_run(&o, &res, &fail);
	if (r < 0)
		return explain_failure(&o, &fail, r);
	print_result(res, json, verbose, o.cache_dir);
	if (res->debug_cache.over_bound)
		td_msg("%u modules read without their DWARF (no inline frames, no file:line): "
		       "their compressed sections would inflate to more than 64 times their "
		       "size or 256 MiB",
			res->debug_cache.over_bound);
	if (res->process_exited) {
		td_msg("process %d exited during the dump; the stacks above were captured "
		       "before it did (%u of %u threads)",
			(int)res->pid, res->captured, res->requested);
		ret = TD_EXIT_PARTIAL;
	} else if (res->timeout) {
		bool kernel = false;

		for (unsigned i = 0; i < res->nthreads; i++)
			kernel = kernel || (res->threads[i].capture == DUMP_NOT_CAPTURED &&
						   res->threads[i].nkernel);
		td_msg("%u thread(s) of %d did not stop within %d s (uninterruptible sleep?); "
		       "they are shown %s",
			res->timeout, (int)res->pid, DUMP_STOP_TIMEOUT_MS / 1000,
			kernel ? "with their kernel stack alone" : "without a stack");
	}
	dump_result_free(res);
	return ret;
}
