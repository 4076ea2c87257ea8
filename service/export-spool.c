/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The export spool: the requests the exporter (export.c) has made and not
 * yet sent, one file each in a directory of its own, SEQ.req (SEQ a
 * zero-padded counter, so that names sort as they were made), holding
 * "TARGET\nCONTENT-TYPE\n" and the body.
 *
 * Guarantees: a request is whole or absent (written as .tmp, renamed);
 * the files' total stays within the bound given, the oldest removed first
 * to make room, and each removal counted; nothing is followed through a
 * symbolic link.  It survives the exporter: a new one finds the requests
 * and goes on numbering after them.  Sending them is export.c's. */
#define _GNU_SOURCE
#include "export-internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int spooled_cmp(const void *a, const void *b)
{
	const struct exp_spooled *x = a, *y = b;

	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

size_t exp_spool_list(struct exp_spool *s, struct exp_spooled *out, size_t max)
{
	int dfd = dup(s->dfd);
	DIR *d = dfd >= 0 ? fdopendir(dfd) : NULL;
	struct dirent *de;
	size_t n = 0;

	if (!d) {
		if (dfd >= 0)
			close(dfd);
		return 0;
	}
	rewinddir(d);
	while ((de = readdir(d))) {
		struct stat st;
		char *end;
		unsigned long long seq = strtoull(de->d_name, &end, 10);

		if (end == de->d_name || strcmp(end, ".req"))
			continue;
		if (fstatat(s->dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
			!S_ISREG(st.st_mode))
			continue;
		if (n < max)
			out[n++] = (struct exp_spooled){ seq, (uint64_t)st.st_size };
	}
	closedir(d);
	qsort(out, n, sizeof(*out), spooled_cmp);
	return n;
}

static void spool_name(char *buf, size_t len, uint64_t seq)
{
	snprintf(buf, len, "%016llu.req", (unsigned long long)seq);
}

/* The files' count and total, and the next number, from the directory. */
static int spool_count(struct exp_spool *s)
{
	struct exp_spooled *l = calloc(EXP_SPOOL_FILES_MAX, sizeof(*l));
	size_t n;

	if (!l)
		return -ENOMEM;
	n = exp_spool_list(s, l, EXP_SPOOL_FILES_MAX);
	s->bytes = 0;
	for (size_t i = 0; i < n; i++)
		s->bytes += l[i].bytes;
	s->count = (unsigned)n;
	if (n && l[n - 1].seq >= s->next_seq)
		s->next_seq = l[n - 1].seq + 1;
	free(l);
	return 0;
}

int exp_spool_open(struct exp_spool *s, const char *dir, uint64_t max)
{
	*s = (struct exp_spool){ .dfd = -1, .max = max, .next_seq = 1 };
	if (mkdir(dir, 0700) < 0 && errno != EEXIST)
		return -errno;
	s->dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	if (s->dfd < 0)
		return -errno;
	return spool_count(s);
}

void exp_spool_close(struct exp_spool *s)
{
	if (s->dfd >= 0)
		close(s->dfd);
	s->dfd = -1;
}

/* Remove the oldest until need more bytes and one more file fit; returns
 * how many went. */
static unsigned make_room(struct exp_spool *s, uint64_t need)
{
	struct exp_spooled *l;
	unsigned dropped = 0;
	size_t n;
	char name[32];

	if (s->bytes + need <= s->max && s->count < EXP_SPOOL_FILES_MAX)
		return 0;
	l = calloc(EXP_SPOOL_FILES_MAX, sizeof(*l));
	if (!l)
		return 0;
	n = exp_spool_list(s, l, EXP_SPOOL_FILES_MAX);
	s->bytes = 0;
	for (size_t i = 0; i < n; i++)
		s->bytes += l[i].bytes;
	s->count = (unsigned)n;
	for (size_t i = 0; i < n && (s->bytes + need > s->max || s->count >= EXP_SPOOL_FILES_MAX);
		i++) {
		spool_name(name, sizeof(name), l[i].seq);
		if (unlinkat(s->dfd, name, 0) == 0) {
			s->bytes -= l[i].bytes;
			s->count--;
			s->lost++;
			dropped++;
		}
	}
	free(l);
	return dropped;
}

int exp_spool_add(struct exp_spool *s, const char *target, const char *type, const void *body,
	size_t len, unsigned *ret_dropped)
{
	char name[32], tmp[40];
	size_t hl = strlen(target) + strlen(type) + 2;
	int fd, e = 0;
	FILE *f;

	if (hl + len > s->max)
		return -EFBIG; /* it would empty the spool and still not fit */
	*ret_dropped = make_room(s, hl + len);
	spool_name(name, sizeof(name), s->next_seq);
	snprintf(tmp, sizeof(tmp), "%s.tmp", name);
	fd = openat(s->dfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return -errno;
	f = fdopen(fd, "w");
	if (!f) {
		close(fd);
		return -ENOMEM;
	}
	fprintf(f, "%s\n%s\n", target, type);
	if (fwrite(body, 1, len, f) != len || fflush(f) != 0)
		e = errno ? -errno : -EIO;
	if (fclose(f) != 0 && !e)
		e = -errno;
	if (!e && renameat(s->dfd, tmp, s->dfd, name) < 0)
		e = -errno;
	if (e) {
		unlinkat(s->dfd, tmp, 0);
		return e;
	}
	s->next_seq++;
	s->count++;
	s->bytes += hl + len;
	return 0;
}

int exp_spool_read(struct exp_spool *s, const struct exp_spooled *e, char **ret, size_t *ret_len)
{
	char name[32], *buf;
	ssize_t got;
	int fd;

	spool_name(name, sizeof(name), e->seq);
	fd = openat(s->dfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return -errno;
	buf = malloc(e->bytes + 1);
	got = buf ? pread(fd, buf, e->bytes, 0) : -1;
	close(fd);
	if (got <= 0) {
		free(buf);
		return buf ? -EIO : -ENOMEM;
	}
	*ret = buf;
	*ret_len = (size_t)got;
	return 0;
}

void exp_spool_remove(struct exp_spool *s, const struct exp_spooled *e)
{
	char name[32];

	spool_name(name, sizeof(name), e->seq);
	if (unlinkat(s->dfd, name, 0) == 0) {
		s->bytes = s->bytes > e->bytes ? s->bytes - e->bytes : 0;
		if (s->count)
			s->count--;
	}
}
