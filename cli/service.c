/* SPDX-License-Identifier: GPL-2.0-or-later */
/* tracerd service [--config FILE] [--check] [--verbose]: the front end of
 * the system service (service/service.c does the work).
 *
 * What it adds: the journal and the service manager.  Under systemd
 * ($JOURNAL_STREAM names our stdout) each message is one stdout line with
 * a "<N>" syslog-priority prefix, which journald stores as the priority;
 * elsewhere, "tracerd: " lines on stderr.  sd_notify is a dozen lines of
 * our own rather than libsystemd: one datagram to $NOTIFY_SOCKET is the
 * whole protocol (sd_notify(3) documents it as stable), and the service
 * then links nothing a plain `tracerd record` does not. */
#define _GNU_SOURCE
#include "cli.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <syslog.h>
#include <unistd.h>

#include "../common/buf.h"
#include "../service/service.h"

#define DEFAULT_CONFIG "/etc/tracerd/tracerd.conf"

static void usage(FILE *f)
{
	fputs("usage: tracerd service [--config FILE] [--check] [--verbose]\n"
	      "\n"
	      "Run as a system service: follow the processes the config's rules name,\n"
	      "record each rule's into DIRECTORY/NAME/, write an emergency dump when one\n"
	      "dies of a fatal signal.  SIGHUP reloads the config; SIGTERM detaches from\n"
	      "every process and stops.  Speaks sd_notify(3) under systemd.\n"
	      "\n"
	      "  -c, --config FILE    the config (default " DEFAULT_CONFIG ");\n"
	      "                       see tracerd.conf(5)\n"
	      "      --check          check the config, say what it would follow, and exit\n"
	      "  -v, --verbose        debug messages too\n",
		f);
}

struct front {
	bool journal; /* stdout is the journal's stream */
	bool verbose;
	int notify_fd;
	struct sockaddr_un notify_addr;
	socklen_t notify_len;
};

/* Is stdout the stream $JOURNAL_STREAM ("DEV:INODE") names? */
static bool stdout_is_journal(void)
{
	const char *js = getenv("JOURNAL_STREAM");
	unsigned long long dev, ino;
	struct stat st;

	return js && sscanf(js, "%llu:%llu", &dev, &ino) == 2 && fstat(STDOUT_FILENO, &st) == 0 &&
	       (unsigned long long)st.st_dev == dev && (unsigned long long)st.st_ino == ino;
}

/* The service's messages quote the processes it follows (comm, exe,
 * cmdline) and the config's text: the whole line is escaped as target
 * strings are (td_text_put), so that no name can start a journal line of
 * its own, forge a <N> priority, or reach a terminal as a command.  Its
 * own words have no control character and pass unchanged. */
static void on_log(void *arg, int prio, const char *msg)
{
	struct front *f = arg;
	char safe[4096];

	if (prio >= LOG_DEBUG && !f->verbose)
		return;
	td_text_escape(safe, sizeof(safe), msg);
	if (f->journal) {
		printf("<%d>%s\n", prio, safe);
		fflush(stdout);
	} else {
		td_msg("%s", safe);
	}
}

/* sd_notify(3): a datagram to $NOTIFY_SOCKET, a path or "@abstract". */
static void notify_open(struct front *f)
{
	const char *s = getenv("NOTIFY_SOCKET");
	size_t len;

	f->notify_fd = -1;
	if (!s || (s[0] != '/' && s[0] != '@') || (len = strlen(s)) >= sizeof(f->notify_addr.sun_path))
		return;
	f->notify_addr.sun_family = AF_UNIX;
	memcpy(f->notify_addr.sun_path, s, len);
	if (s[0] == '@')
		f->notify_addr.sun_path[0] = '\0';
	f->notify_len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len);
	f->notify_fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
}

static void on_notify(void *arg, const char *state)
{
	struct front *f = arg;

	if (f->notify_fd >= 0)
		sendto(f->notify_fd, state, strlen(state), MSG_NOSIGNAL,
			(struct sockaddr *)&f->notify_addr, f->notify_len);
}

/* $WATCHDOG_USEC, if it is meant for this process. */
static uint64_t watchdog_ns(void)
{
	const char *us = getenv("WATCHDOG_USEC"), *pid = getenv("WATCHDOG_PID");

	if (!us || (pid && atol(pid) != (long)getpid()))
		return 0;
	return strtoull(us, NULL, 10) * 1000u;
}

/* What --check lists of the processes a rule matches now. */
#define CHECK_LIST_MAX 20

struct check_match {
	int rule;
	pid_t pid;
	char comm[16];
	char *exe; /* NULL: out of memory */
};

struct check_matches {
	struct check_match *m;
	size_t n, cap;
	unsigned per_rule[SVC_MAX_RULES];
	bool oom;
};

static void check_each(void *arg, int rule, const struct svc_proc *p)
{
	struct check_matches *cm = arg;
	struct check_match *x;

	if (p->pid == getpid())
		return; /* this check itself, were a rule to match it */
	cm->per_rule[rule]++;
	if (cm->per_rule[rule] > CHECK_LIST_MAX)
		return;
	if (td_array_grow(cm->m, cm->cap, cm->n + 1, 64) < 0) {
		cm->oom = true;
		return;
	}
	x = &cm->m[cm->n++];
	x->rule = rule;
	x->pid = p->pid;
	snprintf(x->comm, sizeof(x->comm), "%s", p->comm);
	x->exe = strdup(p->exe[0] ? p->exe : "?");
}

static void check_rule(const struct svc_config *c, unsigned i, const struct check_matches *cm,
	int walked)
{
	const struct svc_rule *r = &c->rules[i];

	printf("  [Target %s] %s mode, %u Hz%s%s%s%s%s%s%s%s%s", r->name,
		r->mode == REC_MODE_WALL ? "wall" : "cpu", r->hz,
		r->no_kernel ? ", no kernel frames" : "", r->comm ? ", Comm=" : "",
		r->comm ? r->comm : "", r->exe ? ", Exe=" : "", r->exe ? r->exe : "",
		r->cmdline ? ", Cmdline=" : "", r->cmdline ? r->cmdline : "",
		r->unit ? ", Unit=" : "", r->unit ? r->unit : "");
	if (r->exe_real)
		printf(" (also %s: its links resolved)", r->exe_real);
	putchar('\n');
	if (walked < 0)
		return;
	if (!cm->per_rule[i]) {
		printf("    matches no process now\n");
		return;
	}
	printf("    matches %u process%s now:\n", cm->per_rule[i], cm->per_rule[i] == 1 ? "" : "es");
	for (size_t k = 0; k < cm->n; k++) {
		if (cm->m[k].rule != (int)i)
			continue;
		printf("      %d ", (int)cm->m[k].pid);
		td_text_put(stdout, cm->m[k].comm);
		putchar(' ');
		td_text_put(stdout, cm->m[k].exe ? cm->m[k].exe : "?");
		putchar('\n');
	}
	if (cm->per_rule[i] > CHECK_LIST_MAX)
		printf("      ... and %u more\n", cm->per_rule[i] - CHECK_LIST_MAX);
}

static int check(const char *path)
{
	struct svc_config *c = NULL;
	struct svc_config_error err = { 0 };
	struct check_matches cm = { 0 };
	int e = svc_config_load(path, &c, &err), walked;

	if (e < 0) {
		td_msg("%s:%u: %s%s%s", err.file, err.line, err.reason, err.text[0] ? ": " : "",
			err.text);
		return TD_EXIT_USAGE;
	}
	walked = svc_config_each_match(c, "/proc", check_each, &cm);
	printf("%s: %u rule%s, repositories under %s\n", path, c->nrules, c->nrules == 1 ? "" : "s",
		c->directory);
	if (c->export.url)
		printf("  [Export] %s to %s every %.0f s%s%s%s\n",
			c->export.protocol == SVC_EXPORT_OTLP ? "otlp" : "pyroscope", c->export.url,
			(double)c->export.interval_ns / 1e9, c->export.labels ? ", Labels=" : "",
			c->export.labels ? c->export.labels : "",
			c->export.token_file ? ", with a bearer token" : "");
	for (unsigned i = 0; i < c->nrules; i++)
		check_rule(c, i, &cm, walked);
	if (walked < 0)
		td_msg("cannot read /proc: %s; the processes each rule matches are not listed",
			strerror(-walked));
	else if (cm.oom)
		td_msg("out of memory: the lists of processes are incomplete");
	for (size_t k = 0; k < cm.n; k++)
		free(cm.m[k].exe);
	free(cm.m);
	svc_config_free(c);
	return TD_EXIT_OK;
}

int cmd_service(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "check", no_argument, NULL, 'k' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct front f = { .journal = stdout_is_journal() };
	struct svc_options o = { .config_path = DEFAULT_CONFIG };
	struct svc_hooks hooks = { on_log, on_notify };
	struct svc_config_error err = { 0 };
	bool only_check = false;
	int c, e;

	optind = 1;
	while ((c = getopt_long(argc, argv, ":c:vh", opts, NULL)) != -1) {
		switch (c) {
		case 'c':
			o.config_path = optarg;
			break;
		case 'k':
			only_check = true;
			break;
		case 'v':
			f.verbose = true;
			break;
		case 'h':
			usage(stdout);
			return TD_EXIT_OK;
		default:
			return td_bad_option("service", c, argv);
		}
	}
	if (optind != argc) {
		td_msg("service: unexpected argument '%s'; see tracerd service --help", argv[optind]);
		return TD_EXIT_USAGE;
	}
	if (only_check)
		return check(o.config_path);
	/* the service has no --debuginfod: no server is asked, and the
	 * installed unit gives it no network anyway */
	td_debuginfod_setup(false);
	notify_open(&f);
	o.watchdog_ns = watchdog_ns();
	e = svc_run(&o, &hooks, &f, &err);
	if (f.notify_fd >= 0)
		close(f.notify_fd);
	if (e == 0)
		return TD_EXIT_OK;
	if (err.file[0]) {
		char msg[800];

		snprintf(msg, sizeof(msg), "%s:%u: %s%s%s; not started", err.file, err.line,
			err.reason, err.text[0] ? ": " : "", err.text);
		on_log(&f, LOG_ERR, msg);
		return TD_EXIT_USAGE;
	}
	return TD_EXIT_IO;
}
