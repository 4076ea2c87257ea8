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

int tcf_dir_scan(const char *dir, struct tcf_dir_entry *entries, unsigned cap)
{
	struct dirent *de;
	unsigned n = 0;
	int dfd, r = 0;
	DIR *d;

	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
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
		bool part;
		int fd;

		if (!tcf_is_chunk_name(de->d_name, &seq, &part))
			continue;
		if (n == cap) {
			r = -ENOSPC;
			break;
		}
		fd = openat(dfd, de->d_name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
			if (fd >= 0)
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
