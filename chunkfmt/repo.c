/* The repository: a directory that holds the chunks of one recording, like
 * a flight recorder.  See daemon.h for its states.
 *
 * Safety: the directory is 0750 and refused if it is a symlink or writable
 * by others; every file is opened relative to its fd with O_NOFOLLOW; the
 * lock is an flock() on LOCK, so a second writer is refused while the first
 * lives and a crashed writer's lock dies with it.  Durability: a chunk
 * becomes .tcf only after its trailer is fdatasync'ed, and the directory is
 * fsync'ed after every create, rename and delete. */
#define _GNU_SOURCE
#include "chunkfmt-internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>



#define REPO_MAX_CHUNKS 100000

struct repo {
	struct repo_opts o;
	char *path;
	int dirfd, lockfd;
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

int repo_open(const char *path, const struct repo_opts *opts, struct repo **ret_repo,
	pid_t *ret_owner)
{
	struct repo *r;
	struct stat st;
	char pidbuf[32];
	int n;

	if (lstat(path, &st) < 0) {
		if (errno != ENOENT)
			return -errno;
		if (mkdir(path, 0750) < 0 && errno != EEXIST)
			return -errno;
		if (lstat(path, &st) < 0)
			return -errno;
	}
	if (S_ISLNK(st.st_mode) || (st.st_mode & S_IWOTH))
		return -TD_E_UNSAFE;
	if (!S_ISDIR(st.st_mode))
		return -ENOTDIR;
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
	r->fd = r->lockfd = -1;
	r->path = strdup(path);
	r->dirfd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (!r->path || r->dirfd < 0) {
		n = r->path ? -errno : -ENOMEM;
		goto out_free;
	}
	r->lockfd = openat(r->dirfd, "LOCK", O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0640);
	if (r->lockfd < 0) {
		n = -errno;
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
	if (r->lockfd >= 0)
		close(r->lockfd);
	if (r->dirfd >= 0)
		close(r->dirfd);
	free(r->path);
	free(r);
	return n;
}

static int begin_chunk(struct repo *r)
{
	struct chunk_writer_opts wo = { .chunk_seq = r->next_seq, .target_pid = r->o.target_pid,
		.block_bytes = r->o.block_bytes, .max_dict_bytes = r->o.max_dict_bytes };
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

int repo_rotate(struct repo *r, int reason)
{
	char done[64];
	size_t n;
	int rr;

	if (r->err)
		return r->err;
	if (!r->w)
		return 0;
	rr = chunk_writer_finish(r->w, (enum tcf_end_reason)reason, 0);
	if (rr < 0)
		return repo_fail(r, rr);
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
	n = tcf_dir_scan(r->path, e, REPO_MAX_CHUNKS);
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
	chunk_writer_free(r->w);
	if (r->fd >= 0)
		close(r->fd);
	if (r->lockfd >= 0)
		close(r->lockfd); /* releases the flock */
	if (r->dirfd >= 0)
		close(r->dirfd);
	free(r->path);
	rr = rr < 0 ? rr : r->err;
	free(r);
	return rr;
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
