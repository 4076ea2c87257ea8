/* SPDX-License-Identifier: GPL-2.0-or-later */
/* tracerd report [PATH]...: the command line of the report stage.  Parses
 * the options (which samples apart from how they are shown), loads the
 * inputs through report/, and writes the chosen format to stdout or to
 * -o's file, which is replaced whole or not at all.  What each format
 * holds is report/'s to decide; the words of every error and the exit
 * status are this file's. */
#define _GNU_SOURCE
#include "cli.h"

#include <errno.h>
#include <fcntl.h>
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
	      "  -o, --output FILE    write there instead of stdout (replaced whole when\n"
	      "                       complete; a symbolic link is refused)\n"
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
 * temporary file beside it (mkstemp: a name of our own, O_EXCL) and
 * renamed over it only when complete, so a full disk or a failed report
 * never leaves a truncated file or destroys the previous one, and no file
 * is ever opened at the name itself.  A symbolic link is refused: in a
 * world-writable directory another user may have made it to point at a
 * file of root's (issue 32.6).  A pipe or a device is written in place,
 * opened without following a link.  A new file is 0640 less the umask; a
 * replaced one keeps its mode if it was ours. */
struct output {
	const char *path; /* NULL: stdout */
	char *tmp;	  /* the temporary file, or NULL */
	FILE *f;
};

static mode_t current_umask(void)
{
	mode_t m = umask(0);

	umask(m);
	return m;
}

static int output_open(struct output *o, const char *path)
{
	struct stat st;
	mode_t mode;
	int fd;

	*o = (struct output){ .path = path, .f = stdout };
	if (!path)
		return 0;
	if (lstat(path, &st) == 0) {
		if (S_ISLNK(st.st_mode))
			return -TD_E_SYMLINK; /* refused, never followed */
		if (!S_ISREG(st.st_mode)) {
			/* a pipe or a device: written in place, never created,
			 * never truncated, not through a link that took its
			 * place since lstat */
			fd = open(path, O_WRONLY | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC);
			if (fd < 0)
				return errno == ELOOP ? -TD_E_SYMLINK : -errno;
			o->f = fdopen(fd, "w");
			if (!o->f) {
				int e = errno;

				close(fd);
				return -e;
			}
			return 0;
		}
		/* the replacement keeps the mode of a file of ours; another
		 * user's (a world-writable directory's) gives it no say */
		mode = st.st_uid == geteuid() ? st.st_mode & 07777 : 0640 & ~current_umask();
	} else {
		/* reports name functions and hold command lines: 0640 like
		 * the chunks, less what the umask takes away */
		mode = 0640 & ~current_umask();
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
	time_t secs;
	uint64_t d;

	if (s[0] == '-') {
		if (!td_parse_duration(opt, s + 1, &d))
			return false;
		if (d > (uint64_t)INT64_MAX) { /* negating it would overflow */
			td_msg("%s: '%s' reaches back further than time does; give at most "
			       "-15000w",
				opt, s);
			return false;
		}
		*ret = -(int64_t)d;
		return true;
	}
	end = strptime(s, "%Y-%m-%dT%H:%M:%S", &tm);
	if (!end || (*end && strcmp(end, "Z"))) {
		td_msg("%s: '%s' is not a time; give 2026-11-22T13:00:00Z (UTC) or -5m", opt, s);
		return false;
	}
	secs = timegm(&tm);
	/* nanoseconds in an int64_t: until 2262 (the multiplication must not overflow) */
	if (secs < 0 || secs > INT64_MAX / 1000000000) {
		td_msg("%s: '%s' is out of range; give a time from 1970 to 2262", opt, s);
		return false;
	}
	*ret = (int64_t)secs * 1000000000;
	return true;
}

/* What the command line asks for.  borrows: every string (argv's). */
struct report_args {
	struct rp_filter f;
	const char *format, *output;
	const char *const *paths; /* the inputs: argv's, or the default repository */
	unsigned npaths;
	enum rp_by by;
	unsigned limit;
	double min_percent;
	bool per_thread, json;
};

enum {
	OPT_FROM = 1,
	OPT_TO,
	OPT_PID,
	OPT_TID,
	OPT_THREAD,
	OPT_STATE,
	OPT_BY,
	OPT_LIMIT,
	OPT_MIN_PERCENT,
	OPT_PER_THREAD,
	OPT_JSON,
};

static const char *const formats[] = { "top", "tree", "folded", "threads", "info", "pprof",
	"speedscope", "html", "waits" };

/* --state: false (and a message) if arg names no state. */
static bool parse_state(const char *arg, int *ret)
{
	static const char *const states[] = { "on-cpu", "runnable", "sleeping", "disk",
		"stopped", "dead" };

	for (int i = 0; i < (int)TD_ARRAY_SIZE(states); i++)
		if (!strcmp(arg, states[i])) {
			*ret = i;
			return true;
		}
	td_msg("--state: '%s' is not a state; give on-cpu, runnable, sleeping, disk or stopped",
		arg);
	return false;
}

static bool parse_by(const char *arg, enum rp_by *ret)
{
	if (!strcmp(arg, "function"))
		*ret = RP_BY_FUNCTION;
	else if (!strcmp(arg, "line"))
		*ret = RP_BY_LINE;
	else if (!strcmp(arg, "module"))
		*ret = RP_BY_MODULE;
	else {
		td_msg("--by: give function, line or module, not '%s'", arg);
		return false;
	}
	return true;
}

/* One option of the filter (which samples): false (and a message) if its
 * argument is wrong. */
static bool filter_option(int c, const char *arg, struct rp_filter *f)
{
	pid_t id;

	switch (c) {
	case OPT_FROM:
		return parse_time("--from", arg, &f->from_ns);
	case OPT_TO:
		return parse_time("--to", arg, &f->to_ns);
	case OPT_PID:
		if (f->npids == 16 || !td_parse_pid("--pid", arg, &id))
			return false;
		f->pids[f->npids++] = (uint32_t)id;
		return true;
	case OPT_TID:
		if (f->ntids == 64 || !td_parse_pid("--tid", arg, &id))
			return false;
		f->tids[f->ntids++] = (uint32_t)id;
		return true;
	case OPT_THREAD:
		f->thread_glob = arg;
		return true;
	case OPT_STATE:
		return parse_state(arg, &f->state);
	}
	return false;
}

/* One option of the output (how it is shown): false (and a message) if
 * its argument is wrong. */
static bool output_option(int c, const char *arg, struct report_args *a)
{
	uint64_t v;

	switch (c) {
	case 'f':
		a->format = arg;
		return true;
	case 'o':
		a->output = arg;
		return true;
	case OPT_BY:
		return parse_by(arg, &a->by);
	case OPT_LIMIT:
		if (!td_parse_size("--limit", arg, 0, 1000000, &v))
			return false;
		a->limit = (unsigned)v;
		return true;
	case OPT_MIN_PERCENT:
		a->min_percent = atof(arg);
		if (a->min_percent < 0 || a->min_percent > 100) {
			td_msg("--min-percent: give 0 to 100, not '%s'", arg);
			return false;
		}
		return true;
	case OPT_PER_THREAD:
		a->per_thread = true;
		return true;
	case OPT_JSON:
		a->json = true;
		return true;
	}
	return false;
}

/* The options that only make sense together, checked once all are read. */
static bool check_format(const struct report_args *a)
{
	size_t i;

	for (i = 0; i < TD_ARRAY_SIZE(formats) && strcmp(a->format, formats[i]); i++)
		;
	if (i == TD_ARRAY_SIZE(formats)) {
		td_msg("--format: '%s' is not one of top, tree, folded, threads, info, pprof, "
		       "speedscope, html, waits",
			a->format);
		return false;
	}
	if (a->json && strcmp(a->format, "waits")) {
		td_msg("--json goes with --format waits");
		return false;
	}
	if (!strcmp(a->format, "pprof") && !a->output && isatty(STDOUT_FILENO)) {
		td_msg("--format pprof writes gzip'ed protobuf: give -o FILE.pb.gz");
		return false;
	}
	return true;
}

/* The command line into *a: 0 to go on, -1 once --help is shown, else the
 * exit status of a usage error. */
static int parse(int argc, char **argv, struct report_args *a)
{
	static const struct option opts[] = {
		{ "format", required_argument, NULL, 'f' },
		{ "output", required_argument, NULL, 'o' },
		{ "from", required_argument, NULL, OPT_FROM },
		{ "to", required_argument, NULL, OPT_TO },
		{ "pid", required_argument, NULL, OPT_PID },
		{ "tid", required_argument, NULL, OPT_TID },
		{ "thread", required_argument, NULL, OPT_THREAD },
		{ "state", required_argument, NULL, OPT_STATE },
		{ "by", required_argument, NULL, OPT_BY },
		{ "limit", required_argument, NULL, OPT_LIMIT },
		{ "min-percent", required_argument, NULL, OPT_MIN_PERCENT },
		{ "per-thread", no_argument, NULL, OPT_PER_THREAD },
		{ "json", no_argument, NULL, OPT_JSON },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	static const char *const def[] = { "tracerd-repo" };
	int c;

	*a = (struct report_args){ .f = { .state = -1 }, .format = "top", .by = RP_BY_FUNCTION,
		.limit = 30, .min_percent = 0.5 };
	optind = 1;
	while ((c = getopt_long(argc, argv, ":f:o:h", opts, NULL)) != -1) {
		bool ok;

		switch (c) {
		case OPT_FROM:
		case OPT_TO:
		case OPT_PID:
		case OPT_TID:
		case OPT_THREAD:
		case OPT_STATE:
			ok = filter_option(c, optarg, &a->f);
			break;
		case 'f':
		case 'o':
		case OPT_BY:
		case OPT_LIMIT:
		case OPT_MIN_PERCENT:
		case OPT_PER_THREAD:
		case OPT_JSON:
			ok = output_option(c, optarg, a);
			break;
		case 'h':
			usage(stdout);
			return -1;
		default:
			return td_bad_option("report", c, argv);
		}
		if (!ok)
			return TD_EXIT_USAGE;
	}
	if (!check_format(a))
		return TD_EXIT_USAGE;
	a->f.time_order = !strcmp(a->format, "speedscope");
	a->f.addresses = !strcmp(a->format, "pprof");
	if (optind < argc) {
		a->paths = (const char *const *)argv + optind;
		a->npaths = (unsigned)(argc - optind);
	} else {
		a->paths = def;
		a->npaths = 1;
	}
	return 0;
}

/* What a failed load says, and its exit status. */
static int load_failed(int r, const char *bad)
{
	switch (r) {
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
}

/* The report in a's format: 0 or -errno (-EIO: a write failed). */
static int write_report(FILE *out, const struct rp_profile *p, const struct rp_load_report *rep,
	const struct report_args *a)
{
	if (!strcmp(a->format, "top"))
		return rp_top(out, p, a->by, a->limit);
	if (!strcmp(a->format, "tree"))
		return rp_tree(out, p, a->min_percent);
	if (!strcmp(a->format, "folded"))
		return rp_folded(out, p, a->per_thread);
	if (!strcmp(a->format, "threads"))
		return rp_threads(out, p);
	if (!strcmp(a->format, "pprof"))
		return rp_pprof(out, p);
	if (!strcmp(a->format, "speedscope"))
		return rp_speedscope(out, p);
	if (!strcmp(a->format, "html"))
		return rp_html(out, p);
	if (!strcmp(a->format, "waits"))
		return rp_waits(out, p, a->limit, a->json);
	return rp_info(out, p, rep);
}

int cmd_report(int argc, char **argv)
{
	struct report_args a;
	struct rp_load_report rep;
	struct rp_profile *p = NULL;
	const char *bad = NULL;
	struct output o;
	int r, w;

	r = parse(argc, argv, &a);
	if (r)
		return r < 0 ? TD_EXIT_OK : r;
	r = rp_load(a.paths, a.npaths, &a.f, &p, &rep, &bad);
	if (r < 0)
		return load_failed(r, bad ? bad : a.paths[0]);
	if (rep.warning[0])
		td_msg("report: warning: %s", rep.warning);
	if ((r = output_open(&o, a.output)) == -TD_E_SYMLINK) {
		td_msg("report: %s is a symbolic link: not followed, nor replaced (it may "
		       "point anywhere); remove it or choose another -o",
			a.output);
		rp_free(p);
		return TD_EXIT_IO;
	} else if (r < 0) {
		td_msg("report: cannot write %s: %s; choose another -o", a.output, td_strerror(r));
		rp_free(p);
		return TD_EXIT_IO;
	}
	errno = 0; /* so that a failed write's errno is the writer's */
	r = write_report(o.f, p, &rep, &a);
	w = output_close(&o, r == 0);
	rp_free(p);
	if (w < 0) {
		td_msg("report: cannot write %s: %s; free space or choose another -o",
			a.output ? a.output : "the standard output", td_strerror(w));
		return TD_EXIT_IO;
	}
	if (r < 0) {
		td_msg("report: %s", td_strerror(r));
		return TD_EXIT_IO;
	}
	return TD_EXIT_OK;
}
