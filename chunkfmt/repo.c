/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The repository: a directory that holds the chunks of one recording, like
 * a flight recorder.  See chunkfmt.h for its states.
 *
 * Safety: the repository is opened once, as a descriptor, from its parent,
 * and no symbolic link is followed anywhere on its path (openat2 with
 * RESOLVE_NO_SYMLINKS, or one O_NOFOLLOW step per component on kernels
 * before 5.6); it must belong to the user we run as and be writable by
 * nobody else.  Everything inside (LOCK, chunks, snapshots/ and its files)
 * is created relative to that descriptor with O_NOFOLLOW, and new files
 * with O_EXCL, so nothing can redirect a write.  The lock is an flock() on
 * LOCK, so a second writer is refused while the first lives and a crashed
 * writer's lock dies with it.  A directory that repo_open created is
 * removed again by repo_discard if nothing was recorded into it.
 * Durability: a chunk becomes .tcf only after its trailer is fdatasync'ed,
 * and the directory is fsync'ed after every create, rename and delete.
 * Trust: a chunk another process truncated, wrote into, renamed or
 * removed while we wrote it (repo_check: its size against what we wrote,
 * its name's inode against our descriptor's) is never finished as if
 * whole; repo_abandon sets it aside as .tcf.changed. */
#define _GNU_SOURCE
#include "chunkfmt-internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/magic.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

bool tcf_repo_no_openat2;

#define REPO_MAX_CHUNKS 100000

struct repo {
	struct repo_opts o;
	char *path;
	int dirfd, lockfd;
	bool created;	/* repo_open made the directory: */
	int parentfd;	/* then its parent, and */
	char *name;	/* its name there (for repo_discard) */
	uint8_t session[16];
	uint64_t next_seq;
	struct chunk_writer *w;
	int fd;
	char part[64];
	uint64_t started_ns;
	uint64_t bytes_done; /* of finished chunks, this session */
	int err;
};

static int repo_fail(struct repo *r, int err)
{
	if (!r->err)
		r->err = err;
	return err;
}

static int scan_next_seq(struct repo *r)
{
	struct dirent *de;
	int fd = openat(r->dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;

	if (!d) {
		if (fd >= 0)
			close(fd);
		return -errno;
	}
	while ((de = readdir(d))) {
		uint64_t seq;
		bool part;

		if (tcf_is_chunk_name(de->d_name, &seq, &part) && seq >= r->next_seq)
			r->next_seq = seq + 1;
	}
	closedir(d);
	return 0;
}

/* ENOTDIR from an O_DIRECTORY | O_NOFOLLOW open of name: was it a link? */
static int not_dir_why(int at, const char *name)
{
	struct stat st;

	if (fstatat(at, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode))
		return -TD_E_SYMLINK;
	return -ENOTDIR;
}

/* The directory path (relative to at) without following a symbolic link
 * anywhere on the way: -TD_E_SYMLINK if one is there. */
static int open_dir_nolinks(int at, const char *path)
{
	static const int flags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;
	char comp[NAME_MAX + 1];
	const char *p = path;
	int fd, e;

	if (!tcf_repo_no_openat2) {
		struct open_how how = { .flags = flags, .resolve = RESOLVE_NO_SYMLINKS };

		fd = (int)syscall(SYS_openat2, at, path, &how, sizeof(how));
		if (fd >= 0)
			return fd;
		e = errno;
		if (e == ELOOP)
			return -TD_E_SYMLINK; /* a link before the last component */
		if (e == ENOTDIR)
			return not_dir_why(at, path);
		/* ENOSYS: before Linux 5.6; EPERM: a seccomp filter */
		if (e != ENOSYS && e != EPERM)
			return -e;
	}
	/* one component at a time, none of them a link */
	fd = openat(at, path[0] == '/' ? "/" : ".", flags);
	if (fd < 0)
		return -errno;
	while (*p) {
		size_t n;
		int next;

		while (*p == '/')
			p++;
		n = strcspn(p, "/");
		if (!n)
			break;
		if (n > NAME_MAX) {
			close(fd);
			return -ENAMETOOLONG;
		}
		memcpy(comp, p, n);
		comp[n] = '\0';
		p += n;
		next = openat(fd, comp, flags);
		if (next < 0) {
			e = errno;
			e = e == ENOTDIR ? not_dir_why(fd, comp) : e == ELOOP ? -TD_E_SYMLINK : -e;
			close(fd);
			return e;
		}
		close(fd);
		fd = next;
	}
	return fd;
}

/* Ours, and nobody else may write it. */
static int check_owner_mode(int fd)
{
	struct statfs sf;
	struct stat st;

	/* /proc/PID exists and is root's: without this, the LOCK it cannot
	 * hold came out as "No such file or directory" */
	if (fstatfs(fd, &sf) == 0 && (sf.f_type == PROC_SUPER_MAGIC ||
					     sf.f_type == SYSFS_MAGIC ||
					     sf.f_type == CGROUP2_SUPER_MAGIC ||
					     sf.f_type == CGROUP_SUPER_MAGIC ||
					     sf.f_type == DEBUGFS_MAGIC || sf.f_type == TRACEFS_MAGIC))
		return -TD_E_PSEUDOFS;
	if (fstat(fd, &st) < 0)
		return -errno;
	if (st.st_uid != geteuid())
		return -TD_E_NOTOWNER;
	if (st.st_mode & (S_IWGRP | S_IWOTH))
		return -TD_E_UNSAFE;
	return 0;
}

/* Open (creating it if missing) the repository directory path into
 * r->dirfd; r->created, r->parentfd and r->name if it was made here. */
static int open_repo_dir(struct repo *r, const char *path)
{
	char *copy = strdup(path), *slash, *name;
	const char *parent;
	size_t n;
	int pfd = -1, e;

	if (!copy)
		return -ENOMEM;
	/* "link/" names what link points to: the name is "link" */
	for (n = strlen(copy); n > 1 && copy[n - 1] == '/'; n--)
		copy[n - 1] = '\0';
	slash = strrchr(copy, '/');
	if (!slash) {
		parent = ".";
		name = copy;
	} else if (slash[1] == '\0') {
		parent = "/"; /* the root itself */
		name = NULL;
	} else {
		*slash = '\0';
		parent = slash == copy ? "/" : copy;
		name = slash + 1;
	}
	if (!*path) {
		e = -EINVAL;
		goto out;
	}
	pfd = open_dir_nolinks(AT_FDCWD, parent);
	if (pfd < 0) {
		e = pfd;
		goto out;
	}
	if (!name) {
		r->dirfd = pfd;
		pfd = -1;
	} else {
		if (mkdirat(pfd, name, 0750) == 0)
			r->created = true;
		else if (errno != EEXIST) {
			e = -errno;
			goto out;
		}
		r->dirfd = open_dir_nolinks(pfd, name);
		if (r->dirfd < 0) {
			e = r->dirfd;
			goto out;
		}
	}
	e = check_owner_mode(r->dirfd);
	if (e < 0)
		goto out;
	if (r->created) {
		r->name = strdup(name);
		if (!r->name) {
			e = -ENOMEM;
			goto out;
		}
		r->parentfd = pfd;
		pfd = -1;
	}
	e = 0;
out:
	if (pfd >= 0)
		close(pfd);
	free(copy);
	return e;
}

/* Does the directory hold nothing but LOCK? */
static bool only_lock_inside(int dirfd)
{
	int fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	struct dirent *de;
	bool only = true;

	if (!d) {
		if (fd >= 0)
			close(fd);
		return false;
	}
	while (only && (de = readdir(d)))
		only = !strcmp(de->d_name, ".") || !strcmp(de->d_name, "..") ||
			!strcmp(de->d_name, "LOCK");
	closedir(d);
	return only;
}

/* Remove the directory repo_open made if it holds nothing of value:
 * 1 if removed, 0 if kept. */
static int remove_if_empty(struct repo *r)
{
	struct stat here, there;

	if (!r->created || r->w || r->bytes_done || r->dirfd < 0 || r->parentfd < 0)
		return 0;
	/* the name must still be this very directory */
	if (fstat(r->dirfd, &here) < 0 ||
		fstatat(r->parentfd, r->name, &there, AT_SYMLINK_NOFOLLOW) < 0 ||
		here.st_dev != there.st_dev || here.st_ino != there.st_ino ||
		!only_lock_inside(r->dirfd))
		return 0;
	if (r->lockfd >= 0)
		unlinkat(r->dirfd, "LOCK", 0);
	if (unlinkat(r->parentfd, r->name, AT_REMOVEDIR) < 0)
		return 0; /* something appeared meanwhile: keep it */
	td_fsync(r->parentfd);
	return 1;
}

static void repo_free(struct repo *r)
{
	chunk_writer_free(r->w);
	if (r->fd >= 0)
		close(r->fd);
	if (r->lockfd >= 0)
		close(r->lockfd); /* releases the flock */
	if (r->dirfd >= 0)
		close(r->dirfd);
	if (r->parentfd >= 0)
		close(r->parentfd);
	free(r->name);
	free(r->path);
	free(r);
}

int repo_open(const char *path, const struct repo_opts *opts, struct repo **ret_repo,
	pid_t *ret_owner)
{
	struct repo *r;
	struct stat st;
	char pidbuf[32];
	int n;

	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	r->o = *opts;
	if (!r->o.max_chunk_size)
		r->o.max_chunk_size = 16u << 20;
	if (!r->o.max_chunk_age_ns)
		r->o.max_chunk_age_ns = 600ull * 1000000000u;
	if (!r->o.max_size)
		r->o.max_size = 1ull << 30;
	if (!r->o.max_age_ns)
		r->o.max_age_ns = 86400ull * 1000000000u;
	r->fd = r->lockfd = r->dirfd = r->parentfd = -1;
	r->path = strdup(path);
	if (!r->path) {
		n = -ENOMEM;
		goto out_free;
	}
	n = open_repo_dir(r, path);
	if (n < 0)
		goto out_free;
	r->lockfd = openat(r->dirfd, "LOCK",
		O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0640);
	if (r->lockfd < 0) {
		/* the path had no link: this one is the lock file itself */
		n = errno == ELOOP ? -TD_E_LOCKLINK : -errno;
		goto out_free;
	}
	if (fstat(r->lockfd, &st) < 0 || !S_ISREG(st.st_mode)) {
		n = -TD_E_NOTREG;
		goto out_free;
	}
	if (flock(r->lockfd, LOCK_EX | LOCK_NB) < 0) {
		n = errno == EWOULDBLOCK ? -TD_E_LOCKED : -errno;
		if (n == -TD_E_LOCKED && ret_owner) {
			ssize_t k = pread(r->lockfd, pidbuf, sizeof(pidbuf) - 1, 0);

			pidbuf[k > 0 ? k : 0] = '\0';
			*ret_owner = (pid_t)atoi(pidbuf);
		}
		goto out_free;
	}
	n = snprintf(pidbuf, sizeof(pidbuf), "%d\n", (int)getpid());
	if (ftruncate(r->lockfd, 0) < 0 || pwrite(r->lockfd, pidbuf, (size_t)n, 0) != n) {
		n = -errno;
		goto out_free;
	}
	n = scan_next_seq(r);
	if (n < 0)
		goto out_free;
	*ret_repo = r;
	return 0;
out_free:
	/* a directory made here and left empty goes again; a lock another
	 * writer holds means it was not ours to begin with */
	if (n != -TD_E_LOCKED)
		remove_if_empty(r);
	repo_free(r);
	return n;
}

int repo_discard(struct repo *r)
{
	int removed;

	if (!r)
		return 0;
	removed = remove_if_empty(r);
	repo_free(r);
	return removed;
}

static int begin_chunk(struct repo *r)
{
	struct chunk_writer_opts wo = { .chunk_seq = r->next_seq, .target_pid = r->o.target_pid,
		.block_bytes = r->o.block_bytes, .max_dict_bytes = r->o.max_dict_bytes,
		.minor = r->o.minor };
	static const uint8_t zero[16];
	struct timespec ts;
	struct tm tm;
	char stamp[32];
	int rr;

	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	strftime(stamp, sizeof(stamp), "%Y%m%dT%H%M%SZ", &tm);
	snprintf(r->part, sizeof(r->part), "c%010llu-%s.tcf.part", (unsigned long long)r->next_seq,
		stamp);
	r->fd = openat(r->dirfd, r->part, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
		0640);
	if (r->fd < 0)
		return repo_fail(r, -errno);
	if (fchmod(r->fd, 0640) < 0) {
		rr = -errno;
		goto out_unlink;
	}
	wo.fd = r->fd;
	/* one session id for every chunk this repo_open writes */
	memcpy(wo.session_id, r->session, 16);
	rr = chunk_writer_open(&wo, &r->w);
	if (rr < 0)
		goto out_unlink;
	if (!memcmp(r->session, zero, 16))
		memcpy(r->session, chunk_writer_session(r->w), 16);
	rr = td_fsync(r->dirfd);
	if (rr < 0) {
		chunk_writer_free(r->w);
		r->w = NULL;
		goto out_unlink;
	}
	r->started_ns = td_now_ns();
	return 0;
out_unlink:
	/* nothing in it yet: an empty .part is no evidence worth keeping */
	unlinkat(r->dirfd, r->part, 0);
	close(r->fd);
	r->fd = -1;
	return repo_fail(r, rr);
}

struct chunk_writer *repo_writer(struct repo *r)
{
	if (r->w && chunk_writer_error(r->w))
		repo_fail(r, chunk_writer_error(r->w)); /* disk full and the like */
	if (r->err)
		return NULL;
	if (!r->w && begin_chunk(r) < 0)
		return NULL;
	return r->w;
}

/* The name r->part, as it is now (st_size -1: gone). */
static bool part_is_fd(const struct repo *r, const struct stat *fd_st, struct stat *ret_name)
{
	if (fstatat(r->dirfd, r->part, ret_name, AT_SYMLINK_NOFOLLOW) < 0) {
		ret_name->st_size = -1;
		return false;
	}
	return ret_name->st_dev == fd_st->st_dev && ret_name->st_ino == fd_st->st_ino;
}

int repo_check(const struct repo *r)
{
	struct stat fd_st, name_st;

	/* a failed chunk is the error path's: its torn tail is ours */
	if (!r->w || r->err || chunk_writer_error(r->w))
		return 0;
	if (fstat(r->fd, &fd_st) < 0)
		return 0; /* cannot happen on an open descriptor; trust it */
	/* Someone truncated it (our next block would land past a hole of
	 * zeros, and the header may be gone), wrote into it, or renamed or
	 * removed it: what the trailer would seal is no longer what we
	 * wrote. */
	if ((uint64_t)fd_st.st_size != chunk_writer_bytes(r->w) || !part_is_fd(r, &fd_st, &name_st))
		return -TD_E_CHANGED;
	return 0;
}

int repo_abandon(struct repo *r, struct repo_changed *ret)
{
	struct stat fd_st, name_st;

	if (!r->w)
		return -EINVAL;
	*ret = (struct repo_changed){ .samples = chunk_writer_samples(r->w),
		.written = chunk_writer_bytes(r->w), .size = -1 };
	snprintf(ret->name, sizeof(ret->name), "%s", r->part);
	if (fstat(r->fd, &fd_st) == 0) {
		ret->replaced = !part_is_fd(r, &fd_st, &name_st);
		ret->size = ret->replaced ? name_st.st_size : fd_st.st_size;
	}
	if (!ret->replaced) {
		char changed[64];
		size_t n = strlen(r->part) - 5; /* drop ".part" */

		/* Not finished, not deleted: out of the listing under a name
		 * no reader or retention takes for a chunk (whatever is left
		 * of its header decides nothing), kept for whoever looks
		 * into what changed it.  A name that is another file's now
		 * is not ours to move. */
		snprintf(changed, sizeof(changed), "%.*s.changed", (int)n, r->part);
		if (td_renameat_noreplace(r->dirfd, r->part, r->dirfd, changed) == 0) {
			snprintf(ret->name, sizeof(ret->name), "%s", changed);
			td_fsync(r->dirfd);
		}
	}
	chunk_writer_free(r->w);
	r->w = NULL;
	close(r->fd);
	r->fd = -1;
	r->next_seq++;
	return 0;
}

int repo_rotate(struct repo *r, int reason)
{
	char done[64];
	size_t n;
	int rr;

	if (r->err)
		return r->err;
	if (!r->w)
		return 0;
	if (repo_check(r) < 0)
		return -TD_E_CHANGED; /* never sealed as if whole */
	rr = chunk_writer_finish(r->w, (enum tcf_end_reason)reason, 0);
	if (rr < 0)
		return repo_fail(r, rr);
	/* the trailer went where the file's end was: if it changed
	 * meanwhile, the name stays .part */
	if (repo_check(r) < 0)
		return -TD_E_CHANGED;
	n = strlen(r->part) - 5; /* drop ".part" */
	memcpy(done, r->part, n);
	done[n] = '\0';
	rr = td_renameat(r->dirfd, r->part, r->dirfd, done);
	if (rr < 0)
		return repo_fail(r, rr); /* the .part is whole: snapshot keeps it */
	rr = td_fsync(r->dirfd);
	if (rr < 0)
		return repo_fail(r, rr);
	r->bytes_done += chunk_writer_bytes(r->w);
	chunk_writer_free(r->w);
	r->w = NULL;
	close(r->fd);
	r->fd = -1;
	r->next_seq++;
	rr = repo_retain(r);
	return rr < 0 ? rr : 0;
}

bool repo_due(const struct repo *r, uint64_t now_ns)
{
	return !r->err && r->w &&
	       (chunk_writer_bytes(r->w) >= r->o.max_chunk_size || chunk_writer_full(r->w) ||
		       now_ns - r->started_ns >= r->o.max_chunk_age_ns);
}

int repo_tick(struct repo *r, uint64_t now_ns)
{
	int rr;

	if (r->err)
		return r->err;
	if (!r->w)
		return 0;
	if (chunk_writer_bytes(r->w) >= r->o.max_chunk_size)
		rr = repo_rotate(r, TCF_END_ROTATE);
	else if (chunk_writer_full(r->w))
		rr = repo_rotate(r, TCF_END_DICT_FULL);
	else if (now_ns - r->started_ns >= r->o.max_chunk_age_ns)
		rr = repo_rotate(r, TCF_END_ROTATE);
	else
		return 0;
	return rr < 0 ? rr : 1;
}

static int entry_seq_cmp(const void *a, const void *b)
{
	const struct tcf_dir_entry *x = a, *y = b;

	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

int repo_retain(struct repo *r)
{
	struct tcf_dir_entry *e;
	struct timespec now;
	uint64_t total = 0;
	int n, deleted = 0;

	e = malloc(REPO_MAX_CHUNKS * sizeof(*e));
	if (!e)
		return -ENOMEM;
	n = tcf_dir_scan_fd(r->dirfd, e, REPO_MAX_CHUNKS);
	if (n < 0 && n != -ENOSPC) {
		free(e);
		return n;
	}
	if (n == -ENOSPC)
		n = REPO_MAX_CHUNKS;
	qsort(e, (size_t)n, sizeof(*e), entry_seq_cmp);
	for (int i = 0; i < n; i++)
		total += e[i].size;
	clock_gettime(CLOCK_REALTIME, &now);
	for (int i = 0; i < n; i++) {
		/* A clock stepped backwards makes mtimes look young: keep. */
		int64_t age = (int64_t)now.tv_sec - e[i].mtime;
		bool too_old = age > 0 && (uint64_t)age * 1000000000u > r->o.max_age_ns;

		if (!strcmp(e[i].name, r->part) && r->w)
			continue; /* never the active chunk */
		if (total <= r->o.max_size && !too_old)
			continue;
		if (unlinkat(r->dirfd, e[i].name, 0) == 0) {
			total -= e[i].size;
			deleted++;
		}
	}
	free(e);
	if (deleted)
		td_fsync(r->dirfd);
	return deleted;
}

int repo_close(struct repo *r, int reason)
{
	int rr = 0;

	if (!r)
		return 0;
	if (r->w && !r->err)
		rr = repo_rotate(r, reason);
	if (rr == -TD_E_CHANGED) {
		struct repo_changed lost;

		/* the writer checks and says so before it closes; this is the
		 * last word of a repository closed without it */
		repo_abandon(r, &lost);
	}
	rr = rr < 0 ? rr : r->err;
	repo_free(r);
	return rr;
}

/* snapshots/ inside the repository, made if missing: a directory of ours
 * that nobody else may write, reached without following a link. */
static int open_snapshots_dir(struct repo *r)
{
	int fd, e;

	if (mkdirat(r->dirfd, "snapshots", 0750) < 0 && errno != EEXIST)
		return -errno;
	fd = openat(r->dirfd, "snapshots", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOTDIR ? not_dir_why(r->dirfd, "snapshots") : -errno;
	e = check_owner_mode(fd);
	if (e < 0) {
		close(fd);
		return e;
	}
	return fd;
}

/* Give the finished file tmp (in dfd) a name no other file has:
 * BASE.tcf, else BASE-1.tcf, -2, ...  Never replaces a file. */
static int name_unique(int dfd, const char *tmp, const char *base, char *name, size_t len)
{
	for (unsigned k = 0; k < 10000; k++) {
		int e;

		if (k)
			snprintf(name, len, "%s-%u.tcf", base, k);
		else
			snprintf(name, len, "%s.tcf", base);
		e = td_renameat_noreplace(dfd, tmp, dfd, name);
		if (e != -EEXIST)
			return e;
	}
	return -EEXIST;
}

/* A new temporary file name in dfd, 0640 whatever the umask.  One left
 * there by a writer that died is ours to remove: we hold the lock. */
static int open_tmp(int dfd, const char *tmp)
{
	static const int flags = O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC;
	int fd = openat(dfd, tmp, flags, 0640), e;

	if (fd < 0 && errno == EEXIST) {
		unlinkat(dfd, tmp, 0);
		fd = openat(dfd, tmp, flags, 0640);
	}
	if (fd < 0)
		return errno == ELOOP ? -TD_E_SYMLINK : -errno;
	if (fchmod(fd, 0640) < 0) {
		e = -errno;
		close(fd);
		unlinkat(dfd, tmp, 0);
		return e;
	}
	return fd;
}

static void utc_stamp(char *buf, size_t len)
{
	struct timespec ts;
	struct tm tm;

	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	strftime(buf, len, "%Y%m%dT%H%M%SZ", &tm);
}

int repo_snapshot_into(struct repo *r, char *ret_path, size_t path_len, unsigned *ret_chunks,
	unsigned *ret_repaired, uint64_t *ret_bytes)
{
	static const struct tcf_snap_opts all = { 0 };
	char stamp[32], base[64], tmp[80], name[96];
	int sfd, fd, e;

	if (r->w)
		chunk_writer_flush(r->w); /* what was recorded until now */
	sfd = open_snapshots_dir(r);
	if (sfd < 0)
		return sfd;
	utc_stamp(stamp, sizeof(stamp));
	snprintf(base, sizeof(base), "snapshot-%s", stamp);
	snprintf(tmp, sizeof(tmp), "%s.tcf.tmp", base);
	fd = open_tmp(sfd, tmp);
	if (fd < 0) {
		e = fd;
		goto out;
	}
	e = tcf_snapshot_fd(r->dirfd, fd, &all, ret_chunks, ret_repaired, ret_bytes);
	close(fd);
	if (!e)
		e = name_unique(sfd, tmp, base, name, sizeof(name));
	if (e < 0) {
		unlinkat(sfd, tmp, 0);
		goto out;
	}
	e = td_fsync(sfd);
	snprintf(ret_path, path_len, "%s/snapshots/%s", r->path, name);
out:
	close(sfd);
	return e;
}

/* The dump sits in the repository itself, where whoever looks for the
 * evidence looks first; its name is not a chunk's (tcf_is_chunk_name), so
 * listing, retention and the sequence scan pass it by.  Retention keeps
 * it whatever max_size says: it is the evidence of a death, and a crash
 * loop is bounded by the window of each dump, not by retention. */
static bool is_emergency_name(const char *n)
{
	size_t len = strlen(n);

	return !strncmp(n, "emergency-", 10) && len > 14 && !strcmp(n + len - 4, ".tcf");
}

/* Delete the oldest emergency dumps past max (by mtime, then name): a
 * crash loop leaves at most max.  Bounded memory: a table of max + 1
 * newest, kept sorted.  Quiet: a dump that cannot be deleted stays. */
static void emergency_prune(struct repo *r, uint32_t max)
{
	struct dump {
		struct timespec mtime;
		char name[96];
	} *keep;
	size_t n = 0;
	/* a descriptor of its own: a dup would share the offset */
	int dfd = openat(r->dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = dfd >= 0 ? fdopendir(dfd) : NULL;
	struct dirent *de;

	if (!d) {
		if (dfd >= 0)
			close(dfd);
		return;
	}
	keep = calloc((size_t)max + 1, sizeof(*keep));
	while (keep && (de = readdir(d))) {
		struct stat st;
		struct dump x = { 0 };
		size_t i;

		if (!is_emergency_name(de->d_name) || strlen(de->d_name) >= sizeof(x.name) ||
			fstatat(r->dirfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
			!S_ISREG(st.st_mode))
			continue;
		x.mtime = st.st_mtim;
		strcpy(x.name, de->d_name);
		/* newest first: i is where x goes */
		for (i = n; i > 0; i--) {
			struct dump *y = &keep[i - 1];

			if (y->mtime.tv_sec > x.mtime.tv_sec ||
				(y->mtime.tv_sec == x.mtime.tv_sec &&
					(y->mtime.tv_nsec > x.mtime.tv_nsec ||
						(y->mtime.tv_nsec == x.mtime.tv_nsec &&
							strcmp(y->name, x.name) > 0))))
				break;
		}
		if (n == (size_t)max + 1) {
			/* full: the oldest of max + 1 goes now */
			if (i == n) {
				unlinkat(r->dirfd, x.name, 0);
				continue;
			}
			unlinkat(r->dirfd, keep[n - 1].name, 0);
			n--;
		}
		memmove(&keep[i + 1], &keep[i], (n - i) * sizeof(*keep));
		keep[i] = x;
		n++;
	}
	if (keep && n > max)
		unlinkat(r->dirfd, keep[n - 1].name, 0);
	free(keep);
	closedir(d);
}

int repo_emergency_into(struct repo *r, pid_t pid, uint64_t since_ns, char *ret_path,
	size_t path_len, unsigned *ret_chunks, uint64_t *ret_bytes)
{
	struct tcf_snap_opts so = { .since_real_ns = since_ns, .keep_newest = true,
		.set_flags = TCF_HDR_EMERGENCY, .target_pid = (uint32_t)pid };
	char stamp[32], base[64], tmp[80], name[96];
	unsigned chunks, repaired;
	uint64_t bytes;
	int fd, e;

	if (pid <= 0)
		return -EINVAL;
	if (r->w)
		chunk_writer_flush(r->w); /* a chunk begun since the rotation */
	utc_stamp(stamp, sizeof(stamp));
	snprintf(base, sizeof(base), "emergency-%d-%s", (int)pid, stamp);
	snprintf(tmp, sizeof(tmp), "%s.tcf.tmp", base);
	fd = open_tmp(r->dirfd, tmp);
	if (fd < 0)
		return fd;
	e = tcf_snapshot_fd(r->dirfd, fd, &so, &chunks, &repaired, &bytes);
	close(fd);
	if (!e)
		e = name_unique(r->dirfd, tmp, base, name, sizeof(name));
	if (e < 0) {
		unlinkat(r->dirfd, tmp, 0);
		return e;
	}
	e = td_fsync(r->dirfd);
	if (e < 0)
		return e; /* named, but its name may not last a power cut */
	snprintf(ret_path, path_len, "%s/%s", r->path, name);
	*ret_chunks = chunks;
	*ret_bytes = bytes;
	if (r->o.max_emergency)
		emergency_prune(r, r->o.max_emergency);
	return 0;
}

int repo_error(const struct repo *r)
{
	if (!r->err && r->w)
		return chunk_writer_error(r->w);
	return r->err;
}

uint64_t repo_bytes_written(const struct repo *r)
{
	return r->bytes_done + (r->w ? chunk_writer_bytes(r->w) : 0);
}

const char *repo_path(const struct repo *r)
{
	return r->path;
}
