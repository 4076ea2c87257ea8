/* tracerd daemon/: the command line, the subcommands and everything that
 * talks to people.  Only this directory prints messages or exits. */
#ifndef TD_DAEMON_H
#define TD_DAEMON_H

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

/* Write the chunks of repo into out (see tracerd snapshot).  -ENODATA: no
 * chunks. */
int td_snapshot(const char *repo, const char *out, uint64_t since_ns, unsigned *ret_chunks,
	unsigned *ret_repaired, uint64_t *ret_bytes);

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
/* Parse a size with optional K/M/G suffix (powers of 1024). */
bool td_parse_size(const char *opt, const char *s, uint64_t min, uint64_t max, uint64_t *ret);
/* Parse a duration: a number with ms, s, m, h or d (default s), in ns. */
bool td_parse_duration(const char *opt, const char *s, uint64_t *ret_ns);

/* ------------------------------------------------------------ repository
 *
 * A directory of chunks: LOCK (flock()ed by the one writer, holding its
 * pid), c<seq>-<UTC>.tcf finished chunks, at most one active
 * c<seq>-<UTC>.tcf.part.  States of the active chunk:
 *
 *   (none) --repo_writer(): open .part O_EXCL, header, fdatasync, fsync dir
 *          --> ACTIVE
 *   ACTIVE --repo_rotate() / repo_tick() past size or age / repo_close():
 *            CHUNK_END, INDEX, trailer, fdatasync, rename .part -> .tcf,
 *            fsync dir, retention --> (none)
 *   ACTIVE --a failed write/fsync/rename--> FAILED: the .part keeps its
 *            whole blocks (snapshot repairs it); recording must stop.
 */
struct repo_opts {
	uint64_t max_chunk_size;   /* default 16 MiB */
	uint64_t max_chunk_age_ns; /* default 10 min */
	uint64_t max_size;	   /* default 1 GiB (>= 2 chunks) */
	uint64_t max_age_ns;	   /* default 24 h */
	uint32_t target_pid;
	uint32_t block_bytes;	   /* writer; 0: default */
	uint64_t max_dict_bytes;   /* writer; 0: default */
};

/* owns: dirfd, lock fd, the active chunk's fd and writer */
struct repo;

/* Open or create (0750) the repository.  -TD_E_UNSAFE: a symlink or
 * writable by others; -TD_E_LOCKED: another writer (its pid in
 * *ret_owner). */
int repo_open(const char *path, const struct repo_opts *opts, struct repo **ret_repo,
	pid_t *ret_owner);
/* The active chunk's writer, starting a chunk if none; NULL on error
 * (repo_error says why). */
struct chunk_writer *repo_writer(struct repo *r);
/* Rotate when the active chunk is past its size, age or dictionary
 * budget.  Returns 1 if it rotated, 0 if not, -errno. */
int repo_tick(struct repo *r, uint64_t now_ns);
int repo_rotate(struct repo *r, int reason);
/* Delete the oldest finished chunks past max_size / max_age. Returns the
 * number deleted or -errno. */
int repo_retain(struct repo *r);
/* Finish the active chunk and release the lock.  NULL-safe. */
int repo_close(struct repo *r, int reason);
int repo_error(const struct repo *r);
uint64_t repo_bytes_written(const struct repo *r);
const char *repo_path(const struct repo *r);

#endif
