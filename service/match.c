/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Which rule of the service's configuration a process falls under.
 *
 * svc_proc_read reads what the rules look at from /proc through one open
 * /proc/PID directory, so that every field is of one process even if its
 * PID is reused meanwhile; each field is bounded (struct svc_proc), and
 * one that cannot be read is empty, which no key matches.
 * svc_config_match picks the first rule that a process matches.  What to
 * do with a match (attach, keep a process on its first rule, restart
 * recordings on reload) is the service loop's; the rules themselves are
 * config.c's. */
#define _GNU_SOURCE
#include "service.h"

#include <errno.h>
#include <dirent.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../common/td.h"

#define SVC_PF_KTHREAD 0x00200000u /* include/linux/sched.h */

/* ---- matching */

unsigned svc_config_needs(const struct svc_config *c)
{
	unsigned need = 0;

	for (unsigned i = 0; c && i < c->nrules; i++) {
		const struct svc_rule *r = &c->rules[i];

		need |= (r->comm ? SVC_NEED_COMM : 0) | (r->exe ? SVC_NEED_EXE : 0) |
			(r->cmdline ? SVC_NEED_CMDLINE : 0) | (r->unit ? SVC_NEED_UNIT : 0);
	}
	return need;
}

/* a slice's name, n bytes long (set_unit refuses a glob on slices) */
static bool is_slice(const char *comp, size_t n)
{
	return n >= 6 && !memcmp(comp + n - 6, ".slice", 6);
}

bool svc_unit_match(const char *glob, const char *cgroup_path)
{
	const char *s = cgroup_path;

	if (!glob || !s)
		return false;
	while (*s) {
		size_t n;
		char comp[256]; /* NAME_MAX + 1: no cgroup is named longer */

		s += strspn(s, "/");
		n = strcspn(s, "/");
		if (n > 0 && n < sizeof(comp)) {
			memcpy(comp, s, n);
			comp[n] = '\0';
			if (!is_slice(comp, n) && fnmatch(glob, comp, 0) == 0)
				return true;
		}
		s += n;
	}
	return false;
}

static bool rule_matches(const struct svc_rule *r, const struct svc_proc *p)
{
	if (r->comm && (!p->comm[0] || fnmatch(r->comm, p->comm, 0) != 0))
		return false;
	if (r->exe && (!p->exe[0] || (fnmatch(r->exe, p->exe, 0) != 0 &&
					     (!r->exe_real || fnmatch(r->exe_real, p->exe, 0) != 0))))
		return false;
	if (r->cmdline && (!p->cmdline[0] || regexec(&r->cmdline_re, p->cmdline, 0, NULL, 0)))
		return false;
	if (r->unit && (!p->cgroup[0] || !svc_unit_match(r->unit, p->cgroup)))
		return false;
	return true;
}

int svc_config_match(const struct svc_config *c, const struct svc_proc *p)
{
	if (!c || !p || p->kernel)
		return -1;
	for (unsigned i = 0; i < c->nrules; i++)
		if (rule_matches(&c->rules[i], p))
			return (int)i;
	return -1;
}

/* ---- reading a process */

/* pid, start_time, kernel and comm from stat.  comm (field 2) may hold
 * spaces and parentheses: it ends at the last ')'. */
static int read_stat(int dfd, struct svc_proc *p)
{
	char buf[4096], *open, *close_paren, *f;
	unsigned long long flags = 0, start = 0;
	size_t n;
	int r;

	r = td_read_text(dfd, "stat", buf, sizeof(buf));
	if (r < 0)
		return r == -ENOENT ? -ESRCH : r;
	open = strchr(buf, '(');
	close_paren = strrchr(buf, ')');
	if (!open || !close_paren || close_paren < open || close_paren[1] != ' ')
		return -TD_E_CORRUPT;
	n = TD_MIN((size_t)(close_paren - open - 1), sizeof(p->comm) - 1);
	memcpy(p->comm, open + 1, n);
	p->comm[n] = '\0';
	f = close_paren + 2; /* field 3, the state */
	for (int field = 3; field <= 22; field++) {
		if (field == 9 && sscanf(f, "%llu", &flags) != 1)
			return -TD_E_CORRUPT;
		if (field == 22 && sscanf(f, "%llu", &start) != 1)
			return -TD_E_CORRUPT;
		if (field < 22) {
			f = strchr(f, ' ');
			if (!f)
				return -TD_E_CORRUPT;
			f++;
		}
	}
	p->kernel = (flags & SVC_PF_KTHREAD) != 0;
	p->start_time = start;
	return 0;
}

static bool gone_err(int err)
{
	return err == -ENOENT || err == -ESRCH;
}

/* exe's target without " (deleted)"; "" if unreadable (a kernel thread, a
 * zombie, no permission). */
static int read_exe(int dfd, struct svc_proc *p)
{
	ssize_t n = readlinkat(dfd, "exe", p->exe, sizeof(p->exe));
	static const char deleted[] = " (deleted)";

	if (n < 0 || (size_t)n >= sizeof(p->exe)) {
		p->exe[0] = '\0';
		return n < 0 ? -errno : 0;
	}
	p->exe[n] = '\0';
	if ((size_t)n >= sizeof(deleted) - 1 &&
		!memcmp(p->exe + n - (sizeof(deleted) - 1), deleted, sizeof(deleted) - 1))
		p->exe[n - (sizeof(deleted) - 1)] = '\0';
	return 0;
}

static int read_cmdline(int dfd, struct svc_proc *p)
{
	int n = td_read_text(dfd, "cmdline", p->cmdline, sizeof(p->cmdline));

	if (n < 0) {
		p->cmdline[0] = '\0';
		return n;
	}
	while (n > 0 && p->cmdline[n - 1] == '\0')
		n--;
	for (int i = 0; i < n; i++)
		if (p->cmdline[i] == '\0')
			p->cmdline[i] = ' ';
	p->cmdline[n] = '\0';
	return 0;
}

/* The path of the first line of buf that is "ID:" then hierarchy then the
 * path, into p->cgroup; false if there is none, or it does not fit.  id
 * NULL: any number. */
static bool cgroup_line(const char *buf, const char *id, const char *hierarchy,
	struct svc_proc *p)
{
	size_t hlen = strlen(hierarchy), n;
	const char *s = buf, *f;

	for (; *s; s += n + (s[n] == '\n')) {
		n = strcspn(s, "\n");
		f = s + strspn(s, "0123456789");
		if (f == s || *f != ':' ||
			(id && (strlen(id) != (size_t)(f - s) || strncmp(s, id, strlen(id)))))
			continue;
		f++;
		if ((size_t)(s + n - f) < hlen || strncmp(f, hierarchy, hlen))
			continue;
		f += hlen;
		if (f == s + n || (size_t)(s + n - f) >= sizeof(p->cgroup))
			return false;
		memcpy(p->cgroup, f, (size_t)(s + n - f));
		p->cgroup[s + n - f] = '\0';
		return true;
	}
	return false;
}

/* The unified hierarchy's line, "0::PATH"; on a cgroup v1 system, the
 * path systemd keeps in its own named hierarchy, "N:name=systemd:PATH". */
static int read_cgroup(int dfd, struct svc_proc *p)
{
	char buf[16384];
	int n = td_read_text(dfd, "cgroup", buf, sizeof(buf));

	p->cgroup[0] = '\0';
	if (n < 0)
		return n;
	if (!cgroup_line(buf, "0", ":", p))
		cgroup_line(buf, NULL, "name=systemd:", p);
	return 0;
}

int svc_proc_read(const char *proc_root, pid_t pid, unsigned need, struct svc_proc *ret_proc)
{
	struct svc_proc *p;
	char path[4096];
	int dfd, r, gone = 0;

	if (pid <= 0)
		return -ESRCH;
	if ((size_t)snprintf(path, sizeof(path), "%s/%d", proc_root, (int)pid) >= sizeof(path))
		return -ENAMETOOLONG;
	/* the one directory: on procfs, once the process is gone every file
	 * under it fails, even if its PID names a new process */
	dfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return errno == ENOENT ? -ESRCH : -errno;
	p = td_calloc(1, sizeof(*p)); /* 9 KiB: not on a thread's stack twice */
	if (!p) {
		r = -ENOMEM;
		goto out_close;
	}
	p->pid = pid;
	r = read_stat(dfd, p);
	if (r < 0)
		goto out_free;
	if (need & SVC_NEED_EXE) {
		r = read_exe(dfd, p);
		gone |= gone_err(r);
	}
	if (need & SVC_NEED_CMDLINE) {
		r = read_cmdline(dfd, p);
		gone |= gone_err(r);
	}
	if (need & SVC_NEED_UNIT) {
		r = read_cgroup(dfd, p);
		gone |= gone_err(r);
	}
	/* a kernel thread's or a zombie's exe is ENOENT too: only a stat that
	 * is gone as well means the process is */
	if (gone && faccessat(dfd, "stat", F_OK, 0) < 0 && gone_err(-errno)) {
		r = -ESRCH;
		goto out_free;
	}
	*ret_proc = *p;
	r = 0;
out_free:
	free(p);
out_close:
	close(dfd);
	return r;
}

int svc_config_each_match(const struct svc_config *c, const char *proc_root,
	void (*each)(void *arg, int rule, const struct svc_proc *p), void *arg)
{
	unsigned need = svc_config_needs(c) | SVC_NEED_EXE;
	struct svc_proc *p = malloc(sizeof(*p)); /* 9 KiB: one for the walk */
	DIR *d = p ? opendir(proc_root) : NULL;
	struct dirent *de;
	int n = 0, e;

	if (!d) {
		e = p ? -errno : -ENOMEM;
		free(p);
		return e;
	}
	while ((de = readdir(d))) {
		char *end;
		pid_t pid = (pid_t)strtol(de->d_name, &end, 10);
		int r;

		if (*end || pid <= 0 || svc_proc_read(proc_root, pid, need, p) < 0)
			continue;
		r = svc_config_match(c, p);
		if (r >= 0) {
			each(arg, r, p);
			n++;
		}
	}
	closedir(d);
	free(p);
	return n;
}
