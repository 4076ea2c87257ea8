/* tracerd report [PATH]...: the command line of the report stage. */
#define _GNU_SOURCE
#include "cli.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../report/report.h"

static void usage(FILE *f)
{
	fputs("usage: tracerd report [PATH]... [--format FORMAT] [-o FILE]\n"
	      "                      [--from TIME] [--to TIME] [--pid PID]... [--tid TID]...\n"
	      "                      [--thread GLOB] [--state STATE]\n"
	      "                      [--by function|line|module] [--limit N]\n"
	      "                      [--min-percent P] [--per-thread] [--json]\n"
	      "\n"
	      "Read chunk files, snapshots and repositories (default ./tracerd-repo), merge\n"
	      "them, and print what they hold.\n"
	      "\n"
	      "  -f, --format FORMAT  top (default), tree, folded, threads, info, pprof,\n"
	      "                       speedscope, html, waits\n"
	      "  -o, --output FILE    write there instead of stdout\n"
	      "      --from, --to TIME  2026-11-22T13:00:00Z, or relative to the end of\n"
	      "                       the data: -5m\n"
	      "      --pid, --tid N   only these processes / threads (repeatable)\n"
	      "      --thread GLOB    only threads whose name matches\n"
	      "      --state STATE    on-cpu, runnable, sleeping, disk, stopped\n"
	      "      --by KEY         top: function (default), line or module\n"
	      "      --limit N        top, waits: the first N rows (default 30, 0: all)\n"
	      "      --min-percent P  tree: prune paths below P% (default 0.5)\n"
	      "      --per-thread     folded: the thread name as the root frame\n"
	      "      --json           waits: JSON instead of text\n",
		f);
}

/* Where the report goes.  A regular file (or a new one) is written as a
 * temporary file beside it and renamed over it only when complete, so a
 * full disk or a failed report never leaves a truncated file or destroys
 * the previous one; anything else (a pipe, a device, a symbolic link) is
 * written directly.  A new file is 0640 less the umask; a replaced one
 * keeps its mode. */
struct output {
	const char *path; /* NULL: stdout */
	char *tmp;	  /* the temporary file, or NULL */
	FILE *f;
};

static int output_open(struct output *o, const char *path)
{
	struct stat st;
	mode_t mode;
	int fd;

	*o = (struct output){ .path = path, .f = stdout };
	if (!path)
		return 0;
	if (lstat(path, &st) == 0) {
		if (!S_ISREG(st.st_mode)) {
			o->f = fopen(path, "w");
			return o->f ? 0 : -errno;
		}
		mode = st.st_mode & 07777; /* the replacement keeps it */
	} else {
		/* reports name functions and hold command lines: 0640 like
		 * the chunks, less what the umask takes away */
		mode = umask(0);
		umask(mode);
		mode = 0640 & ~mode;
	}
	if (asprintf(&o->tmp, "%s.tmp.XXXXXX", path) < 0) {
		o->tmp = NULL;
		return -ENOMEM;
	}
	fd = mkstemp(o->tmp);
	if (fd < 0) {
		int e = errno;

		free(o->tmp);
		o->tmp = NULL;
		return -e;
	}
	(void)fchmod(fd, mode); /* not mkstemp's 0600 */
	o->f = fdopen(fd, "w");
	if (!o->f) {
		int e = errno;

		close(fd);
		unlink(o->tmp);
		free(o->tmp);
		o->tmp = NULL;
		return -e;
	}
	return 0;
}

/* Finish the output, right after the report was written (ok: it
 * succeeded): 0, or the -errno of the write that failed; the temporary
 * file is then removed and the old file left as it was.  A writer whose
 * write failed returns -EIO and leaves the stream in error, errno saying
 * why: read it before anything else can change it. */
static int output_close(struct output *o, bool ok)
{
	int r = ferror(o->f) ? -(errno ? errno : EIO) : 0;

	if (!r && fflush(o->f) != 0)
		r = -errno;
	if (o->path && fclose(o->f) != 0 && !r)
		r = -errno;
	if (o->tmp) {
		if (ok && !r && rename(o->tmp, o->path) < 0)
			r = -errno;
		if (!ok || r)
			unlink(o->tmp);
		free(o->tmp);
	}
	return r;
}

static bool parse_time(const char *opt, const char *s, int64_t *ret)
{
	struct tm tm = { 0 };
	const char *end;
	uint64_t d;

	if (s[0] == '-') {
		if (!td_parse_duration(opt, s + 1, &d))
			return false;
		*ret = -(int64_t)d;
		return true;
	}
	end = strptime(s, "%Y-%m-%dT%H:%M:%S", &tm);
	if (!end || (*end && strcmp(end, "Z"))) {
		td_msg("%s: '%s' is not a time; give 2026-11-22T13:00:00Z (UTC) or -5m", opt, s);
		return false;
	}
	*ret = (int64_t)timegm(&tm) * 1000000000;
	return true;
}

int cmd_report(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "format", required_argument, NULL, 'f' },
		{ "output", required_argument, NULL, 'o' },
		{ "from", required_argument, NULL, 1 },
		{ "to", required_argument, NULL, 2 },
		{ "pid", required_argument, NULL, 3 },
		{ "tid", required_argument, NULL, 4 },
		{ "thread", required_argument, NULL, 5 },
		{ "state", required_argument, NULL, 6 },
		{ "by", required_argument, NULL, 7 },
		{ "limit", required_argument, NULL, 8 },
		{ "min-percent", required_argument, NULL, 9 },
		{ "per-thread", no_argument, NULL, 10 },
		{ "json", no_argument, NULL, 11 },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	static const char *const states[] = { "on-cpu", "runnable", "sleeping", "disk", "stopped",
		"dead" };
	struct rp_filter f = { .state = -1 };
	struct rp_load_report rep;
	struct rp_profile *p = NULL;
	const char *format = "top", *output = NULL, *bad = NULL;
	const char *def[] = { "tracerd-repo" };
	enum rp_by by = RP_BY_FUNCTION;
	unsigned limit = 30;
	double min_percent = 0.5;
	bool per_thread = false, json = false;
	FILE *out;
	struct output o;
	uint64_t v;
	pid_t id;
	int c, r, w;

	optind = 1;
	while ((c = getopt_long(argc, argv, ":f:o:h", opts, NULL)) != -1) {
		switch (c) {
		case 'f':
			format = optarg;
			break;
		case 'o':
			output = optarg;
			break;
		case 1:
			if (!parse_time("--from", optarg, &f.from_ns))
				return TD_EXIT_USAGE;
			break;
		case 2:
			if (!parse_time("--to", optarg, &f.to_ns))
				return TD_EXIT_USAGE;
			break;
		case 3:
			if (f.npids == 16 || !td_parse_pid("--pid", optarg, &id))
				return TD_EXIT_USAGE;
			f.pids[f.npids++] = (uint32_t)id;
			break;
		case 4:
			if (f.ntids == 64 || !td_parse_pid("--tid", optarg, &id))
				return TD_EXIT_USAGE;
			f.tids[f.ntids++] = (uint32_t)id;
			break;
		case 5:
			f.thread_glob = optarg;
			break;
		case 6:
			for (f.state = 0; f.state < 6 && strcmp(optarg, states[f.state]); f.state++)
				;
			if (f.state == 6) {
				td_msg("--state: '%s' is not a state; give on-cpu, runnable, sleeping, "
				       "disk or stopped",
					optarg);
				return TD_EXIT_USAGE;
			}
			break;
		case 7:
			if (!strcmp(optarg, "function"))
				by = RP_BY_FUNCTION;
			else if (!strcmp(optarg, "line"))
				by = RP_BY_LINE;
			else if (!strcmp(optarg, "module"))
				by = RP_BY_MODULE;
			else {
				td_msg("--by: give function, line or module, not '%s'", optarg);
				return TD_EXIT_USAGE;
			}
			break;
		case 8:
			if (!td_parse_size("--limit", optarg, 0, 1000000, &v))
				return TD_EXIT_USAGE;
			limit = (unsigned)v;
			break;
		case 9:
			min_percent = atof(optarg);
			if (min_percent < 0 || min_percent > 100) {
				td_msg("--min-percent: give 0 to 100, not '%s'", optarg);
				return TD_EXIT_USAGE;
			}
			break;
		case 10:
			per_thread = true;
			break;
		case 11:
			json = true;
			break;
		case 'h':
			usage(stdout);
			return TD_EXIT_OK;
		default:
			return td_bad_option("report", c, argv);
		}
	}
	if (strcmp(format, "top") && strcmp(format, "tree") && strcmp(format, "folded") &&
		strcmp(format, "threads") && strcmp(format, "info") && strcmp(format, "pprof") &&
		strcmp(format, "speedscope") && strcmp(format, "html") && strcmp(format, "waits")) {
		td_msg("--format: '%s' is not one of top, tree, folded, threads, info, pprof, "
		       "speedscope, html, waits",
			format);
		return TD_EXIT_USAGE;
	}
	if (json && strcmp(format, "waits")) {
		td_msg("--json goes with --format waits");
		return TD_EXIT_USAGE;
	}
	if (!strcmp(format, "pprof") && !output && isatty(STDOUT_FILENO)) {
		td_msg("--format pprof writes gzip'ed protobuf: give -o FILE.pb.gz");
		return TD_EXIT_USAGE;
	}
	f.time_order = !strcmp(format, "speedscope");
	f.addresses = !strcmp(format, "pprof");
	r = optind < argc ? rp_load((const char *const *)argv + optind,
				    (unsigned)(argc - optind), &f, &p, &rep, &bad) :
			    rp_load(def, 1, &f, &p, &rep, &bad);
	if (!bad)
		bad = optind < argc ? argv[optind] : def[0];
	switch (r) {
	case 0:
		break;
	case -ENOENT:
		td_msg("report: %s: No such file or directory; give a chunk file, a snapshot or a "
		       "repository (default ./tracerd-repo)",
			bad);
		return TD_EXIT_USAGE;
	case -ENODATA:
		td_msg("report: %s is an empty repository: nothing recorded yet", bad);
		return TD_EXIT_USAGE;
	case -TD_E_NOTREG:
		td_msg("report: %s is not a regular file or directory; give a chunk file, a "
		       "snapshot or a repository",
			bad);
		return TD_EXIT_USAGE;
	case -TD_E_CORRUPT:
		td_msg("report: %s is not a tracerd chunk file (no valid chunk header); check the "
		       "path, or run tracerd verify on it",
			bad);
		return TD_EXIT_ATTACH;
	default:
		td_msg("report: cannot read %s: %s", bad, td_strerror(r));
		return TD_EXIT_IO;
	}
	if (rep.warning[0])
		td_msg("report: warning: %s", rep.warning);
	if ((r = output_open(&o, output)) < 0) {
		td_msg("report: cannot write %s: %s; choose another -o", output, td_strerror(r));
		rp_free(p);
		return TD_EXIT_IO;
	}
	out = o.f;
	errno = 0; /* so that a failed write's errno is the writer's */
	if (!strcmp(format, "top"))
		r = rp_top(out, p, by, limit);
	else if (!strcmp(format, "tree"))
		r = rp_tree(out, p, min_percent);
	else if (!strcmp(format, "folded"))
		r = rp_folded(out, p, per_thread);
	else if (!strcmp(format, "threads"))
		r = rp_threads(out, p);
	else if (!strcmp(format, "pprof"))
		r = rp_pprof(out, p);
	else if (!strcmp(format, "speedscope"))
		r = rp_speedscope(out, p);
	else if (!strcmp(format, "html"))
		r = rp_html(out, p);
	else if (!strcmp(format, "waits"))
		r = rp_waits(out, p, limit, json);
	else
		r = rp_info(out, p, &rep);
	w = output_close(&o, r == 0);
	rp_free(p);
	if (w < 0) {
		td_msg("report: cannot write %s: %s; free space or choose another -o",
			output ? output : "the standard output", td_strerror(w));
		return TD_EXIT_IO;
	}
	if (r < 0) {
		td_msg("report: %s", td_strerror(r));
		return TD_EXIT_IO;
	}
	return TD_EXIT_OK;
}
