/* tracerd dump: stacks of every thread of a process, once.
 *
 * Order of work, chosen so that each thread is stopped only for the copy:
 *   1. seize every thread (no stop yet) and read names and states;
 *   2. open the process's modules (libdwfl session, every ELF loaded);
 *   3. interrupt all threads together; as each stop arrives copy registers
 *      and the stack window, then detach it at once;
 *   4. with every thread running again, unwind and symbolize the copies.
 * If the process dies after step 3 the captured stacks are still printed
 * (exit 4). */
#define _GNU_SOURCE
#include "cli.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../common/td.h"
#include "../ptrace/ptrace.h"
#include "../symbolize/symbolize.h"

#define DUMP_MAX_THREADS 8192
#define DUMP_MAX_TIDS 256
#define DUMP_DEFAULT_WINDOW (64u * 1024)

struct dump_thread {
	pid_t tid;
	struct td_task_info info;
	struct td_sample *sample; /* into dump.slots */
	bool captured;
};

/* owns: threads, slots */
struct dump {
	pid_t pid;
	uint32_t window;
	struct dump_thread *threads;
	unsigned nthreads;
	unsigned char *slots;
	bool process_exited;
	unsigned threads_exited;
};

static struct td_sample *dump_slot_get(void *arg, pid_t pid, pid_t tid, uint32_t *ret_window)
{
	struct dump *d = arg;

	(void)pid;
	for (unsigned i = 0; i < d->nthreads; i++)
		if (d->threads[i].tid == tid && !d->threads[i].captured) {
			*ret_window = d->window;
			return d->threads[i].sample;
		}
	return NULL;
}

static void dump_slot_put(void *arg, struct td_sample *s)
{
	struct dump *d = arg;

	for (unsigned i = 0; i < d->nthreads; i++)
		if (d->threads[i].sample == s)
			d->threads[i].captured = true;
}

static void dump_event(void *arg, const struct pt_event *ev)
{
	struct dump *d = arg;

	if (ev->kind == PT_EVENT_PROCESS_EXIT && ev->pid == d->pid)
		d->process_exited = true;
	else if (ev->kind == PT_EVENT_THREAD_EXIT)
		d->threads_exited++;
}

static const struct pt_round_ops dump_ops = {
	.slot_get = dump_slot_get,
	.slot_put = dump_slot_put,
	.event = dump_event,
};

static ssize_t read_live(void *arg, pid_t tid, uint64_t addr, void *buf, size_t len)
{
	(void)arg;
	return pt_read_memory(tid, addr, buf, len);
}

static void usage(FILE *f)
{
	fputs("usage: tracerd dump --pid PID [--tid TID]... [--no-inline] [--no-dwarf] [--json]\n"
	      "                    [-v] [--debuginfo-dir DIR] [--stack-bytes N]\n"
	      "\n"
	      "Print the stack of every thread of PID once.  Each thread is stopped only\n"
	      "while its registers and the top of its stack are copied; unwinding and\n"
	      "symbolization happen after it runs again.\n"
	      "\n"
	      "  -p, --pid PID          process to dump\n"
	      "  -t, --tid TID          only this thread (repeatable)\n"
	      "      --no-inline        do not show inlined frames\n"
	      "      --no-dwarf         ELF symbol names only (no inlines, no file:line);\n"
	      "                         fastest, skips inflating compressed debuginfo\n"
	      "      --json             one JSON object on stdout\n"
	      "  -v, --verbose          add stopped time, live reads and module counts\n"
	      "      --debuginfo-dir DIR  also look for DIR/.build-id/xx/yyyy.debug\n"
	      "      --stack-bytes N    stack bytes copied per thread (default 64K)\n"
	      "  -h, --help             this text\n"
	      "\n"
	      "Exit status: 0 ok, 1 usage, 2 cannot attach, 3 error, 4 the process\n"
	      "exited during the dump (what was captured is printed).\n",
		f);
}

static void print_frame_text(unsigned idx, const struct sym_frame *f)
{
	printf("  #%-3u 0x%016" PRIx64 " %s%s", idx, f->pc, f->function ? f->function : "??",
		f->inlined ? " [inlined]" : "");
	if (f->file) {
		if (f->line)
			printf(" at %s:%d", f->file, f->line);
		else
			printf(" at %s", f->file);
	}
	if (f->module)
		printf(" in %s", f->module);
	putchar('\n');
}

static void print_frame_json(bool first, const struct sym_frame *f)
{
	printf("%s{\"pc\": \"0x%" PRIx64 "\"", first ? "" : ", ", f->pc);
	if (f->function) {
		fputs(", \"function\": ", stdout);
		td_json_string(stdout, f->function, 0);
	}
	printf(", \"inlined\": %s", f->inlined ? "true" : "false");
	if (f->file) {
		fputs(", \"file\": ", stdout);
		td_json_string(stdout, f->file, 0);
	}
	if (f->line)
		printf(", \"line\": %d", f->line);
	if (f->module) {
		fputs(", \"module\": ", stdout);
		td_json_string(stdout, f->module, 0);
		printf(", \"offset\": \"0x%" PRIx64 "\"", f->offset);
	}
	if (f->build_id) {
		fputs(", \"build_id\": ", stdout);
		td_json_string(stdout, f->build_id, 0);
	}
	putchar('}');
}

static void print_thread(struct sym_session *ss, const struct dump_thread *th, bool json,
	bool inlines, bool verbose, bool first, struct sym_unwound *u, struct sym_frame *frames)
{
	const struct td_sample *s = th->sample;
	unsigned idx = 0;

	if (json) {
		printf("%s\n    {\"tid\": %d, \"name\": ", first ? "" : ",", (int)th->tid);
		td_json_string(stdout, th->info.name, 0);
		printf(", \"state\": \"%c\"", th->info.state);
	} else {
		printf("%sthread %d (%s) %c", first ? "" : "\n", (int)th->tid, th->info.name,
			th->info.state);
	}
	if (!th->captured) {
		if (json)
			fputs(", \"end\": \"thread exited before it could be captured\", "
			      "\"frames\": []}",
				stdout);
		else
			fputs("\n  -- thread exited before it could be captured\n", stdout);
		return;
	}
	sym_session_unwind(ss, s, u);
	if (json) {
		printf(", \"stopped_ns\": %" PRIu64 ", \"end\": ", s->stopped_ns);
		td_json_string(stdout, sym_end_name(u->end), 0);
		if (verbose)
			printf(", \"live_reads\": %u, \"stack_bytes\": %u", u->live_reads,
				s->stack_len);
		fputs(", \"frames\": [", stdout);
	} else {
		if (verbose)
			printf("  stopped %.1f us, %u stack bytes copied", s->stopped_ns / 1000.0,
				s->stack_len);
		putchar('\n');
	}
	for (unsigned i = 0; i < u->n; i++) {
		int n = sym_session_symbolize(ss, u->pc[i], u->activation[i], inlines, frames,
			SYM_MAX_FRAMES);

		for (int k = 0; k < n; k++, idx++) {
			if (json)
				print_frame_json(idx == 0, &frames[k]);
			else
				print_frame_text(idx, &frames[k]);
		}
	}
	if (json) {
		fputs("]}", stdout);
		return;
	}
	printf("  -- %s", sym_end_name(u->end));
	if (u->end == SYM_END_WINDOW || u->end == SYM_END_READ_FAILED)
		printf(" at 0x%" PRIx64, u->fault_addr);
	if (verbose && u->detail[0])
		printf(" (%s)", u->detail);
	if (verbose && u->live_reads)
		printf("; %u reads outside the stack copy", u->live_reads);
	putchar('\n');
}

static bool process_gone(pid_t pid)
{
	struct td_task_info info;

	return td_task_info_read(pid, pid, &info) < 0 || info.state == 'Z' || info.state == 'X';
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
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct pt_config pcfg = { .max_threads = DUMP_MAX_THREADS, .round_nice = -10 };
	struct sym_options sopt = { .read_live = read_live };
	struct dump d = { .window = DUMP_DEFAULT_WINDOW };
	pid_t want_tids[DUMP_MAX_TIDS], *tids = NULL;
	unsigned nwant = 0;
	bool json = false, inlines = true, verbose = false;
	struct pt_tracer *tr = NULL;
	struct sym_cache *cache = NULL;
	struct sym_session *ss = NULL;
	struct sym_unwound *u = NULL;
	struct sym_frame *frames = NULL;
	struct pt_round_stats stats;
	size_t slot_size;
	uint64_t t_start = td_now_ns(), t_attach = 0, t_modules = 0, t_capture = 0;
	int c, r, n, ret = TD_EXIT_IO;
	uint64_t v;

	optind = 1;
	while ((c = getopt_long(argc, argv, ":p:t:vh", opts, NULL)) != -1) {
		switch (c) {
		case 'p':
			if (!td_parse_pid("--pid", optarg, &d.pid))
				return TD_EXIT_USAGE;
			break;
		case 't':
			if (nwant == DUMP_MAX_TIDS) {
				td_msg("--tid: at most %d threads", DUMP_MAX_TIDS);
				return TD_EXIT_USAGE;
			}
			if (!td_parse_pid("--tid", optarg, &want_tids[nwant]))
				return TD_EXIT_USAGE;
			nwant++;
			break;
		case 'I':
			inlines = false;
			break;
		case 'N':
			sopt.no_dwarf = true;
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
			sopt.debuginfo_dir = optarg;
			break;
		case 'S':
			if (!td_parse_size("--stack-bytes", optarg, 512, 8u << 20, &v))
				return TD_EXIT_USAGE;
			d.window = (uint32_t)v;
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
	if (!d.pid) {
		td_msg("dump: --pid is required; see tracerd dump --help");
		return TD_EXIT_USAGE;
	}

	r = pt_tracer_new(&pcfg, &tr);
	if (r < 0) {
		td_msg("cannot set up tracing: %s", td_strerror(r));
		return TD_EXIT_IO;
	}
	r = pt_tracer_attach(tr, d.pid);
	if (r < 0) {
		ret = td_explain_attach(d.pid, r);
		goto out;
	}
	t_attach = td_now_ns();
	tids = calloc(DUMP_MAX_THREADS, sizeof(*tids));
	if (!tids)
		goto out_nomem;
	n = pt_tracer_threads(tr, d.pid, tids, DUMP_MAX_THREADS);
	for (unsigned i = 0; i < nwant; i++) {
		bool found = false;

		for (int k = 0; k < n && !found; k++)
			found = tids[k] == want_tids[i];
		if (!found) {
			td_msg("%d is not a thread of process %d; see ls /proc/%d/task",
				(int)want_tids[i], (int)d.pid, (int)d.pid);
			ret = TD_EXIT_USAGE;
			goto out;
		}
	}
	if (nwant) {
		memcpy(tids, want_tids, nwant * sizeof(*tids));
		n = (int)nwant;
	}
	/* Sort for a stable, readable order (the leader first). */
	for (int i = 1; i < n; i++)
		for (int k = i; k > 0 && tids[k] < tids[k - 1]; k--) {
			pid_t tmp = tids[k];

			tids[k] = tids[k - 1];
			tids[k - 1] = tmp;
		}
	slot_size = td_sample_size(d.window);
	d.threads = calloc((size_t)n, sizeof(*d.threads));
	d.slots = calloc((size_t)n, slot_size);
	u = malloc(sizeof(*u));
	frames = calloc(SYM_MAX_FRAMES, sizeof(*frames));
	if (!d.threads || !d.slots || !u || !frames)
		goto out_nomem;
	d.nthreads = (unsigned)n;
	for (int i = 0; i < n; i++) {
		d.threads[i].tid = tids[i];
		d.threads[i].sample = (struct td_sample *)(d.slots + (size_t)i * slot_size);
		if (td_task_info_read(d.pid, tids[i], &d.threads[i].info) < 0)
			d.threads[i].info.state = '?';
	}

	r = sym_cache_new(&cache);
	if (r == 0)
		r = sym_session_new(d.pid, &sopt, cache, &ss);
	if (r < 0) {
		if (process_gone(d.pid)) {
			td_msg("process %d exited before its stacks could be captured", (int)d.pid);
			ret = TD_EXIT_PARTIAL;
		} else {
			td_msg("cannot read the modules of process %d: %s", (int)d.pid,
				td_strerror(r));
		}
		goto out;
	}

	t_modules = td_now_ns();
	pt_tracer_sample(tr, tids, (unsigned)n, &dump_ops, &d, 2000, PT_ROUND_DETACH, &stats);
	t_capture = td_now_ns();
	/* Detach whatever is left (threads born meanwhile, stragglers). */
	pt_tracer_free(tr);
	tr = NULL;

	if (json)
		printf("{\"pid\": %d, \"threads\": [", (int)d.pid);
	for (unsigned i = 0; i < d.nthreads; i++)
		print_thread(ss, &d.threads[i], json, inlines, verbose, i == 0, u, frames);
	if (json)
		fputs("\n]}\n", stdout);
	if (verbose && !json) {
		unsigned m, e, w;

		sym_session_modules(ss, &m, &e, &w);
		printf("\n%u threads, %u captured, %u gone, %u did not stop in time; "
		       "%u modules, %u with ELF, %u with DWARF used\n",
			stats.requested, stats.captured, stats.gone, stats.timeout, m, e, w);
		printf("attach %.1f ms, modules %.1f ms, capture %.1f ms, unwind and "
		       "symbolize %.1f ms\n",
			(t_attach - t_start) / 1e6, (t_modules - t_attach) / 1e6,
			(t_capture - t_modules) / 1e6, (td_now_ns() - t_capture) / 1e6);
	}
	fflush(stdout);
	ret = TD_EXIT_OK;
	if (d.process_exited || process_gone(d.pid)) {
		td_msg("process %d exited during the dump; the stacks above were captured "
		       "before it did (%u of %u threads)",
			(int)d.pid, stats.captured, stats.requested);
		ret = TD_EXIT_PARTIAL;
	} else if (stats.timeout) {
		td_msg("%u thread(s) of %d did not stop within 2 s (uninterruptible sleep?); "
		       "they are shown without a stack",
			stats.timeout, (int)d.pid);
	}
	goto out;
out_nomem:
	td_msg("out of memory");
	ret = TD_EXIT_IO;
out:
	pt_tracer_free(tr);
	sym_session_free(ss);
	sym_cache_free(cache);
	free(tids);
	free(d.threads);
	free(d.slots);
	free(u);
	free(frames);
	return ret;
}
