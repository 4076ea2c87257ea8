/* SPDX-License-Identifier: GPL-2.0-or-later */
/* tracerd: definitions shared by every stage (error codes, clocks, small
 * /proc helpers).  Library code returns 0/positive on success and -errno or
 * -TD_E_* on failure; only cli/ turns an error into words for people.
 *
 * common/ owns the pieces every stage uses once: the sample record
 * (sample.h), the byte buffer and varints (buf.h), the hash map (map.h),
 * the escaping of target strings for text and JSON (text.c), the /proc
 * readers.  It never includes another folder of tracerd and knows nothing
 * of any stage. */
#ifndef TD_COMMON_H
#define TD_COMMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* The one version string: --version, chunk META, exporters. */
#ifndef TD_VERSION
#define TD_VERSION "0.1.0"
#endif

/* tracerd's own causes, beyond errno.  Kept in one table (td_strerror). */
enum td_error {
	TD_E_BASE = 10000,
	TD_E_ZOMBIE,	/* target is a zombie */
	TD_E_SELF,	/* target is tracerd itself */
	TD_E_TRACED,	/* target already has a tracer */
	TD_E_GONE,	/* thread or process vanished */
	TD_E_NOTHREADS, /* no thread could be attached */
	TD_E_TIMEOUT,	/* a thread did not stop in time */
	TD_E_LIMIT,	/* a configured bound was reached */
	TD_E_DWFL,	/* libdw/libdwfl reported an error */
	TD_E_CORRUPT,	/* malformed input */
	TD_E_FULL,	/* ring or table full */
	TD_E_LOCKED,	/* repository in use by another writer */
	TD_E_UNSAFE,	/* directory writable by its group or by others */
	TD_E_NOTREG,	/* neither a regular file nor a directory */
	TD_E_SYMLINK,	/* a symbolic link on a path that must have none */
	TD_E_NOTOWNER,	/* owned by another user than the one we run as */
	TD_E_ATTACHED,	/* this tracer is attached to that process already */
	TD_E_CHANGED,	/* a file we write was truncated, replaced or removed by another */
	TD_E_LOCKLINK,	/* a repository's lock file is a symbolic link */
	TD_E_PSEUDOFS,	/* a directory of /proc, /sys and the like: no files of ours */
	TD_E_MAX
};

/* Message for -err or err (errno or TD_E_*).  Never NULL. */
const char *td_strerror(int err);

/* ISO 8601 UTC ("2026-11-22T13:00:00Z") of a CLOCK_REALTIME time in ns;
 * "-" for 0. */
void td_fmt_utc(uint64_t real_ns, char *buf, size_t len);

/* CLOCK_MONOTONIC in nanoseconds. */
uint64_t td_now_ns(void);
/* CLOCK_REALTIME in ns: wall-clock time, for names and windows of files. */
uint64_t td_real_ns(void);

/* Read at most len-1 bytes of PATH (relative to dirfd) into buf and
 * NUL-terminate.  Returns the byte count or -errno. */
int td_read_text(int dirfd, const char *path, char *buf, size_t len);

/* Per-thread facts from /proc/PID/task/TID: one-letter state and comm. */
struct td_task_info {
	char state;	  /* R S D T t Z X I ..., '?' if unknown */
	char name[16];	  /* comm, NUL-terminated */
	pid_t tracer;	  /* TracerPid from status, 0 if none */
	pid_t ppid;
};
int td_task_info_read(pid_t pid, pid_t tid, struct td_task_info *ret_info);
/* The one walk of a process's live task list, /proc/PID/task: calls
 * fn(tid, arg) for each thread id, in the directory's order, until fn
 * returns non-zero, and returns that value; 0 when every task was seen;
 * -ESRCH when the process is gone, -errno when the list cannot be read.
 * Allocates (opendir): not while a target thread is held stopped. */
int td_tasks_each(pid_t pid, int (*fn)(pid_t tid, void *arg), void *arg);
/* A thread of pid other than skip that is neither a zombie nor dead, 0 if
 * there is none (or the process is gone). */
pid_t td_task_find_live(pid_t pid, pid_t skip);
/* Which process: its PID and its start time (field 22 of /proc/PID/stat,
 * clock ticks after boot).  Once a process is reaped its PID may name a
 * later process, which started later; a PID reused within the same clock
 * tick (10 ms at USER_HZ 100) is not told apart. */
struct td_proc_id {
	pid_t pid;
	uint64_t start_time;
};
/* The identity of the process pid names now.  Returns 0, -ESRCH if there
 * is none, -TD_E_CORRUPT, or -errno. */
int td_proc_id_read(pid_t pid, struct td_proc_id *ret_id);
/* Does id->pid still name the process id was taken from?  1 yes; 0 no (it
 * is gone, or the PID names a later process); -errno when /proc cannot
 * tell.  A zombie not yet reaped is still the process. */
int td_proc_id_check(const struct td_proc_id *id);
/* Does a mapping of a file (a path in /proc/PID/maps) hold addr now?  1
 * yes, 0 no (anonymous memory, or nothing), -ESRCH if the process is gone,
 * -errno.  Reads the maps in pieces: no allocation. */
int td_maps_file_at(pid_t pid, uint64_t addr);
/* The process (thread group) of a thread id, 0 if it is gone.  TracerPid
 * in /proc names a thread: this gives its process. */
pid_t td_tgid_of(pid_t tid);

/* Strings that came from a target, for people (text.c).  Text: every
 * control character (C0, DEL, C1), every byte of invalid UTF-8, the
 * bidirectional overrides and the backslash itself written as \xNN, one
 * escape per byte; valid UTF-8 otherwise unchanged.  So a backslash in the
 * output always begins an escape, and the output is never a terminal
 * command.  NULL writes nothing. */
#include <stdio.h>
void td_text_put(FILE *f, const char *s);
/* The same into buf (len bytes, NUL-terminated; a cut falls between whole
 * escapes and characters); returns the length of the whole, as snprintf. */
size_t td_text_escape(char *buf, size_t len, const char *s);
/* Would td_text_put write s unchanged?  (NULL: yes.) */
bool td_text_is_safe(const char *s);
/* s as a JSON string (RFC 8259): quotes and backslash escaped, the same
 * unsafe characters as text as \u00XX (\n, \t, \r by name), a byte of
 * invalid UTF-8 as \ufffd; NULL as "".  TD_JSON_IN_SCRIPT: also <, > and
 * &, and every control character, as \u00XX, so that the text can sit
 * inside an HTML <script> element. */
enum { TD_JSON_IN_SCRIPT = 1u << 0 };
void td_json_string(FILE *f, const char *s, unsigned flags);

/* I/O and allocation that tests can make fail (SQLite's countdown fault
 * injector): td_fault_arm(ops, n) fails the n-th call among ops from now
 * on (1 = the next), once.  An injected write failure writes half of the
 * bytes first, as a full disk does.  Disarmed: plain system calls. */
enum td_fault_op {
	TD_FAULT_WRITE = 1u << 0,
	TD_FAULT_FSYNC = 1u << 1,
	TD_FAULT_RENAME = 1u << 2,
	TD_FAULT_MALLOC = 1u << 3,
	TD_FAULT_ALL = 0xf,
};
void td_fault_arm(unsigned ops, long countdown);
bool td_fault_fired(void);
ssize_t td_write_all(int fd, const void *buf, size_t len); /* len or -errno */
/* After I/O a library did (libelf writing a file): -ENOSPC if the
 * injector fails this op, else 0. */
int td_fault_io(unsigned op);
/* The index of the q-quantile (0 < q <= 1) of n > 0 sorted values, by
 * nearest rank: the smallest value with at least q * n values at or below
 * it.  A higher q never gives a lower index. */
size_t td_rank(size_t n, double q);
/* "s" unless n is 1: "%u chunk%s", n, td_plural(n). */
static inline const char *td_plural(uint64_t n)
{
	return n == 1 ? "" : "s";
}
int td_fdatasync(int fd);
int td_fsync(int fd);
int td_renameat(int olddir, const char *oldpath, int newdir, const char *newpath);
/* The same, never over an existing file: -EEXIST if newpath is taken
 * (RENAME_NOREPLACE; link and unlink where the file system lacks it). */
int td_renameat_noreplace(int olddir, const char *oldpath, int newdir, const char *newpath);
void *td_malloc(size_t n);
void *td_calloc(size_t n, size_t size);
void *td_realloc(void *p, size_t n);

#define TD_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define TD_MIN(a, b) ((a) < (b) ? (a) : (b))
#define TD_MAX(a, b) ((a) > (b) ? (a) : (b))

#endif
