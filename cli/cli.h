/* SPDX-License-Identifier: GPL-2.0-or-later */
/* tracerd cli/: the command line.  main() picks a command; one front end
 * per command parses its options, calls the library (daemon/, chunkfmt/,
 * report/, ptrace/ + symbolize/), prints to people and chooses the exit
 * status.  Only this folder parses options, prints to people or calls
 * exit(); it never touches a target or a chunk's bytes itself. */
#ifndef TD_CLI_H
#define TD_CLI_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

/* Documented exit status (tracerd(8)). */
enum td_exit {
	TD_EXIT_OK = 0,
	TD_EXIT_USAGE = 1,
	TD_EXIT_ATTACH = 2,  /* cannot attach: no process, not permitted, ... */
	TD_EXIT_IO = 3,	     /* I/O or internal error */
	TD_EXIT_PARTIAL = 4, /* target exited during the operation */
};

int cmd_dump(int argc, char **argv);
int cmd_verify(int argc, char **argv);
int cmd_snapshot(int argc, char **argv);
int cmd_record(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_service(int argc, char **argv);

/* One line on stderr, prefixed "tracerd: ". */
void td_msg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Say why attaching to pid failed (err from pt_tracer_attach) in words
 * that say what to do.  Returns TD_EXIT_ATTACH. */
int td_explain_attach(pid_t pid, int err);

/* The one-line message for what getopt_long (with an optstring starting
 * with ':') returned as c, '?' or ':', for subcommand cmd.  Returns
 * TD_EXIT_USAGE. */
int td_bad_option(const char *cmd, int c, char *const *argv);

/* Parse a PID or TID argument; false (and a message) if it is not one. */
bool td_parse_pid(const char *opt, const char *s, pid_t *ret);
/* The value of option opt as a size from min to max bytes, or a duration
 * in ns (common/parse.h has the grammars); false, after a line that says
 * what to give, if it is none (too large to count included).  The caller
 * returns TD_EXIT_USAGE then. */
bool td_parse_size(const char *opt, const char *s, uint64_t min, uint64_t max, uint64_t *ret);
bool td_parse_duration(const char *opt, const char *s, uint64_t *ret_ns);

/* The default directory of the debuginfo cache (tracerd(8), FILES):
 * $TRACERD_CACHE_DIR if set, else /var/cache/tracerd for root, else
 * ${XDG_CACHE_HOME:-$HOME/.cache}/tracerd (a relative XDG_CACHE_HOME is
 * ignored, as the XDG spec says).  Written into buf; NULL when it is
 * "none" or no home is known. */
const char *td_cache_dir_default(char *buf, size_t len);
/* The cache directory to use, made ready (symbolize/'s
 * sym_debug_cache_prepare): given, from --cache-dir (NULL: not given),
 * else the default.  *ret_dir is NULL for none.  A directory given that
 * cannot serve is a usage error: false, after saying why; a default one
 * that cannot serve is said and left out (the run goes without). */
bool td_cache_dir_setup(const char *given, char *buf, size_t len, const char **ret_dir);
/* Without --debuginfod: drop DEBUGINFOD_URLS before libdw runs, so that
 * no debuginfo is fetched from a server. */
void td_debuginfod_setup(bool wanted);

#endif
