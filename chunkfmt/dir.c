/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Listing the chunk files of a repository directory, in the order of the
 * sequence numbers in their headers.  Fixed storage given by the caller:
 * snapshot must work under memory pressure. */
#define _GNU_SOURCE
#include "chunkfmt-internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

bool tcf_is_chunk_name(const char *name, uint64_t *ret_seq, bool *ret_part)
{
	size_t n = strlen(name);
	uint64_t seq = 0;

	if (n < 16 || n >= 64 || name[0] != 'c' || name[11] != '-')
		return false;
	for (int i = 1; i <= 10; i++) {
		if (name[i] < '0' || name[i] > '9')
			return false;
		seq = seq * 10 + (uint64_t)(name[i] - '0');
	}
	if (n > 9 && !strcmp(name + n - 9, ".tcf.part")) {
		*ret_part = true;
	} else if (!strcmp(name + n - 4, ".tcf")) {
		*ret_part = false;
	} else {
		return false;
	}
	*ret_seq = seq;
	return true;
}

static int entry_cmp(const void *a, const void *b)
{
	const struct tcf_dir_entry *x = a, *y = b;

	if (x->seq != y->seq)
		return x->seq < y->seq ? -1 : 1;
	return strcmp(x->name, y->name);
}

int tcf_open_input(int dirfd, const char *path, bool nofollow, int *ret_fd, bool *ret_dir)
{
	int nf = nofollow ? O_NOFOLLOW : 0, pfd, fd, r;
	struct stat st, st2;
	char proc[64];

	/* O_PATH opens nothing: a FIFO does not block, a device is not touched */
	pfd = openat(dirfd, path, O_PATH | O_CLOEXEC | nf);
	if (pfd < 0)
		return -errno;
	if (fstat(pfd, &st) < 0) {
		r = -errno;
		goto out;
	}
	if (!S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode)) {
		r = -TD_E_NOTREG;
		goto out;
	}
	/* reopen that very file for reading; without /proc, by its name */
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", pfd);
	fd = open(proc, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0 && errno == ENOENT)
		fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK | nf);
	if (fd < 0) {
		r = -errno;
		goto out;
	}
	if (fstat(fd, &st2) < 0 || st2.st_dev != st.st_dev || st2.st_ino != st.st_ino) {
		r = -EAGAIN; /* replaced between the two opens */
		close(fd);
		goto out;
	}
	*ret_fd = fd;
	*ret_dir = S_ISDIR(st.st_mode);
	r = 0;
out:
	close(pfd);
	return r;
}

int tcf_dir_scan(const char *dir, struct tcf_dir_entry *entries, unsigned cap)
{
	bool is_dir;
	int fd, r = tcf_open_input(AT_FDCWD, dir, false, &fd, &is_dir);

	if (r < 0)
		return r;
	r = is_dir ? tcf_dir_scan_fd(fd, entries, cap) : -ENOTDIR;
	close(fd);
	return r;
}

int tcf_dir_scan_fd(int dirfd, struct tcf_dir_entry *entries, unsigned cap)
{
	struct dirent *de;
	unsigned n = 0;
	int dfd, r = 0;
	DIR *d;

	/* a descriptor of our own: readdir moves its offset */
	dfd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return -errno;
	d = fdopendir(dfd);
	if (!d) {
		r = -errno;
		close(dfd);
		return r;
	}
	while ((de = readdir(d))) {
		struct tcf_dir_entry *e;
		struct stat st;
		uint8_t h[TCF_HEADER_LEN];
		struct chunk_info ci;
		uint64_t seq;
		bool part, is_dir;
		int fd;

		if (!tcf_is_chunk_name(de->d_name, &seq, &part))
			continue;
		if (n == cap) {
			r = -ENOSPC;
			break;
		}
		/* only regular files: a symbolic link, a FIFO or a device
		 * with a chunk's name is not a chunk */
		if (tcf_open_input(dfd, de->d_name, true, &fd, &is_dir) < 0)
			continue;
		if (is_dir || fstat(fd, &st) < 0) {
			close(fd);
			continue;
		}
		e = &entries[n++];
		memset(e, 0, sizeof(*e));
		memcpy(e->name, de->d_name, strlen(de->d_name) + 1); /* < 64: checked above */
		e->seq = seq;
		e->part = part;
		e->size = (uint64_t)st.st_size;
		e->mtime = st.st_mtime;
		e->mtime_ns = st.st_mtim.tv_sec < 0 ? 0 :
			(uint64_t)st.st_mtim.tv_sec * 1000000000u + (uint64_t)st.st_mtim.tv_nsec;
		if (pread(fd, h, sizeof(h), 0) == (ssize_t)sizeof(h) &&
			tcf_parse_header(h, sizeof(h), &ci) != -TD_E_CORRUPT) {
			e->seq = tcf_rd64(h + 40);
			e->header_ok = true;
		}
		close(fd);
	}
	closedir(d);
	qsort(entries, n, sizeof(*entries), entry_cmp);
	return r < 0 ? r : (int)n;
}
