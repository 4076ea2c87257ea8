/* SPDX-License-Identifier: GPL-2.0-or-later */
/* tracerd record's repository: the first samples published at once, one
 * writer at a time, nothing left by a start that failed, and nothing
 * written through a link (the repository's path, or its snapshots). */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../chunkfmt/chunkfmt.h"
#include "record.h"

TestSuite(record_repository, .init = record_setup, .fini = record_teardown, .timeout = 300);

static bool samples_20(const struct found *f)
{
	return f->samples >= 20;
}

/* kill -9 keeps what was published, so publishing comes early: the first
 * sample of a chunk is a block of its own, on disk as soon as it is
 * written (before the fix the first block came a second later, with every
 * sample of that second in it).  Read from the blocks themselves: each
 * prefix of whole blocks of the first chunk is read on its own.  How
 * many samples kill -9 loses at 0.5 s and 3 s is make bench's figure. */
Test(record_repository, first_samples_are_published_at_once)
{
	pid_t fx = fx_start(FX("fx_threads"), NULL), t;
	struct tcf_dir_entry e[64];
	uint64_t first = 0;
	size_t off = TCF_HEADER_LEN, len = 0;
	char path[256];
	uint8_t *buf;
	int n, fd;
	struct stat st;

	cr_assert_gt(fx, 0);
	t = tracerd_start(fx, "--mode=wall", NULL, NULL);
	cr_assert(repo_until(samples_20), "recording");
	kill(t, SIGKILL);
	tracerd_wait(t);
	n = tcf_dir_scan(repo, e, 64);
	cr_assert_gt(n, 0);
	snprintf(path, sizeof(path), "%s/%.63s", repo, e[0].name); /* sorted: seq 0 first */
	fd = open(path, O_RDONLY | O_CLOEXEC);
	cr_assert_geq(fd, 0);
	cr_assert_eq(fstat(fd, &st), 0);
	buf = malloc((size_t)st.st_size + 1);
	cr_assert_eq(pread(fd, buf, (size_t)st.st_size, 0), st.st_size);
	close(fd);
	/* the prefixes ending after each whole block: the first with samples */
	while (off + TCF_BLOCK_HEADER_LEN <= (size_t)st.st_size && !first) {
		uint32_t plen = (uint32_t)buf[off + 8] | (uint32_t)buf[off + 9] << 8 |
				(uint32_t)buf[off + 10] << 16 | (uint32_t)buf[off + 11] << 24;
		struct chunk_report rep;

		off += TCF_BLOCK_HEADER_LEN + plen;
		if (off > (size_t)st.st_size)
			break;
		chunk_read_buffer(buf, off, NULL, NULL, &rep);
		first = rep.samples;
		len = off;
	}
	cr_expect_eq(first, 1, "the first block with samples (%zu bytes into %s) holds %llu",
		len, e[0].name, (unsigned long long)first);
	free(buf);
	fx_stop(fx);
}

/* Its .part's path once it holds a block with samples (a header and
 * its definitions come first), for wait_for(). */
static bool part_with_samples(void *arg)
{
	struct tcf_dir_entry e[8];
	int n = tcf_dir_scan(repo, e, 8);

	for (int i = 0; i < n; i++) {
		struct chunk_report rep;

		if (!e[i].part)
			continue;
		snprintf(arg, 256, "%s/%.63s", repo, e[i].name);
		if (chunk_read_file(arg, NULL, NULL, &rep) == 0 && rep.samples > 0)
			return true;
	}
	return false;
}

/* The .part truncated during a recording (before the fix: exit 0,
 * "recorded 5.0 s", and a .tcf that verify called "not a tracerd chunk
 * file", every sample gone).  Now tracerd says so, goes on in a new
 * chunk, sets the changed one aside unfinished, and exits 3. */
Test(record_repository, truncated_part_is_set_aside_and_said)
{
	pid_t fx = fx_start(FX("fx_threads"), NULL), t;
	struct tcf_dir_entry e[64];
	char part[256];
	const char *err;
	bool aside = false;
	struct found f;
	DIR *d;
	int n;

	cr_assert_gt(fx, 0);
	t = tracerd_start(fx, NULL, NULL, NULL);
	cr_assert(wait_for(part_with_samples, part, 60000), "a .part with samples");
	cr_assert_eq(truncate(part, 0), 0, "%s", part);
	/* samples again, in a chunk begun after the truncation */
	cr_assert(repo_until(samples_20), "recording goes on");
	cr_expect_eq(tracerd_stop(t), 3, "data was lost: %s", slurp(errfile));
	err = slurp(errfile);
	cr_expect(strstr(err, "changed by another process (0 bytes long where tracerd wrote"),
		"%s", err);
	cr_expect(strstr(err, "set aside unfinished as"), "%s", err);
	cr_expect(strstr(err, "recording goes on in a new chunk"), "%s", err);
	cr_expect(strstr(err, "lost: 1 chunk of"), "the last line: %s", err);
	/* nothing untrusted published: every chunk is a later one, finished
	 * and whole; the changed one is set aside under no chunk's name */
	f = scan_repo();
	cr_expect_geq(f.samples, 20);
	n = tcf_dir_scan(repo, e, 64);
	cr_expect_gt(n, 0);
	for (int i = 0; i < n; i++) {
		cr_expect_not(e[i].part, "%s", e[i].name);
		cr_expect_neq(e[i].seq, 0, "the truncated chunk %s is not published", e[i].name);
	}
	cr_expect_eq(verify_status(), 0);
	d = opendir(repo);
	cr_assert_not_null(d);
	for (struct dirent *de; (de = readdir(d));)
		aside |= !strncmp(de->d_name, "c0000000000-", 12) &&
			 strstr(de->d_name, ".tcf.changed");
	closedir(d);
	cr_expect(aside, "c0000000000-*.tcf.changed");
	fx_stop(fx);
}

/* The repository removed during a recording: tracerd stops and says so
 * (it said "free space" before, for ENOENT). */
Test(record_repository, removed_repository_is_said)
{
	pid_t fx = fx_start(FX("fx_threads"), NULL), t;
	char cmd[128];
	const char *err;

	cr_assert_gt(fx, 0);
	t = tracerd_start(fx, NULL, NULL, NULL);
	cr_assert(repo_until(has_samples), "recording");
	snprintf(cmd, sizeof(cmd), "rm -rf %s", repo);
	cr_assert_eq(system(cmd), 0);
	/* it stops by itself: its next chunk cannot be made */
	cr_expect_eq(tracerd_wait(t), 3);
	err = slurp(errfile);
	cr_expect(strstr(err, "was removed while recording"), "%s", err);
	cr_expect(!strstr(err, "free space"), "%s", err);
	fx_stop(fx);
}

/* A LOCK that is a symbolic link is named as the lock file (it was "a
 * symbolic link on its path", which sent the user looking at the path). */
Test(record_repository, lock_link_is_named_as_the_lock_file)
{
	pid_t fx = fx_start(FX("fx_chain"), NULL);
	char p[32], lock[128], target[128];
	const char *argv[] = { "tracerd", "--pid", p, "-r", repo, NULL };
	struct run_result r;
	struct stat st;

	cr_assert_gt(fx, 0);
	snprintf(p, sizeof(p), "%d", (int)fx);
	snprintf(lock, sizeof(lock), "%s/LOCK", repo);
	snprintf(target, sizeof(target), "%s.elsewhere", repo);
	cr_assert_eq(mkdir(repo, 0750), 0);
	cr_assert_eq(symlink(target, lock), 0);
	run_tracerd(&r, argv);
	cr_expect_eq(r.status, 1, "%s", r.err);
	cr_expect(strstr(r.err, "its lock file") && strstr(r.err, "/LOCK is a symbolic link"),
		"%s", r.err);
	cr_expect(!strstr(r.err, "on its path"), "%s", r.err);
	cr_expect_neq(stat(target, &st), 0, "nothing made through the link");
	run_result_free(&r);
	unlink(lock);
	fx_stop(fx);
}

/* -r /proc/PID, a directory that exists: one clear message, exit 1 (it
 * was "No such file or directory", exit 3, from its LOCK). */
Test(record_repository, proc_is_no_repository)
{
	pid_t fx = fx_start(FX("fx_chain"), NULL);
	char p[32], dir[64];
	const char *argv[] = { "tracerd", "--pid", p, "-r", dir, NULL };
	struct run_result r;

	cr_assert_gt(fx, 0);
	snprintf(p, sizeof(p), "%d", (int)fx);
	snprintf(dir, sizeof(dir), "/proc/%d", (int)fx);
	run_tracerd(&r, argv);
	cr_expect_eq(r.status, 1, "%s", r.err);
	cr_expect(strstr(r.err, "pseudo-filesystem (/proc, /sys)"), "%s", r.err);
	cr_expect(!strstr(r.err, "No such file"), "%s", r.err);
	cr_expect_eq(tracer_of(fx), 0, "not left attached");
	run_result_free(&r);
	fx_stop(fx);
}

Test(record_repository, second_writer_refused)
{
	pid_t fx = fx_start(FX("fx_chain"), NULL), t;
	char p[32];
	const char *argv[] = { "tracerd", "--pid", p, "-r", repo, NULL };
	struct run_result r;

	cr_assert_gt(fx, 0);
	t = tracerd_start(fx, NULL, NULL, NULL);
	snprintf(p, sizeof(p), "%d", (int)fx);
	run_tracerd(&r, argv);
	cr_expect_eq(r.status, 1);
	cr_expect(strstr(r.err, "is in use by tracerd PID"), "%s", r.err);
	run_result_free(&r);
	kill(t, SIGTERM);
	cr_expect_eq(tracerd_wait(t), 0);
	fx_stop(fx);
}

/* A start that fails before recording leaves no repository behind when
 * it made it, and leaves one that was there as it was. */
Test(record_repository, failed_start_leaves_no_repository)
{
	const char *nopid[] = { "tracerd", "--pid", "4194304", "-r", repo, NULL };
	char keep[128];
	struct run_result r;
	struct stat st;
	FILE *f;

	run_tracerd(&r, nopid);
	cr_expect_eq(r.status, 2, "%s", r.err);
	run_result_free(&r);
	cr_expect_neq(stat(repo, &st), 0, "%s was made for nothing and is gone", repo);

	cr_assert_eq(mkdir(repo, 0750), 0);
	snprintf(keep, sizeof(keep), "%s/notes", repo);
	f = fopen(keep, "w");
	cr_assert_not_null(f);
	fclose(f);
	run_tracerd(&r, nopid);
	cr_expect_eq(r.status, 2, "%s", r.err);
	run_result_free(&r);
	cr_expect_eq(stat(keep, &st), 0, "a repository that was there stays");
}

/* The repository cannot be redirected: -r LINK/ (the trailing slash made
 * lstat follow the link), a link on the way, another user's directory. */
Test(record_repository, repository_cannot_be_redirected)
{
	pid_t fx = fx_start(FX("fx_chain"), NULL);
	char p[32], link[128], elsewhere[128], cmd[512];
	const char *argv[] = { "tracerd", "--pid", p, "-r", link, "-d", "1s", "-q", NULL };
	struct run_result r;
	char *ls;

	cr_assert_gt(fx, 0);
	snprintf(p, sizeof(p), "%d", (int)fx);
	snprintf(elsewhere, sizeof(elsewhere), "%s.elsewhere", repo);
	cr_assert_eq(mkdir(elsewhere, 0750), 0);
	cr_assert_eq(mkdir(repo, 0750), 0);
	snprintf(cmd, sizeof(cmd), "%s/to", repo);
	cr_assert_eq(symlink(elsewhere, cmd), 0);
	for (int k = 0; k < 3; k++) {
		snprintf(link, sizeof(link), k == 0 ? "%s/to" : k == 1 ? "%s/to/" : "%s/to/sub", repo);
		run_tracerd(&r, argv);
		cr_expect_eq(r.status, 1, "%s: %s", link, r.err);
		cr_expect(strstr(r.err, "a symbolic link is on its path"), "%s", r.err);
		run_result_free(&r);
	}
	snprintf(cmd, sizeof(cmd), "ls -A %s", elsewhere);
	ls = shell_output(cmd, NULL);
	cr_expect_str_eq(ls, "", "nothing was written through the link: %s", ls);
	free(ls);
	if (geteuid() == 0) {
		snprintf(link, sizeof(link), "%s/theirs", repo);
		cr_assert_eq(mkdir(link, 0750), 0);
		cr_assert_eq(chown(link, 65534, 65534), 0);
		run_tracerd(&r, argv);
		cr_expect_eq(r.status, 1, "%s", r.err);
		cr_expect(strstr(r.err, "belongs to another user"), "%s", r.err);
		run_result_free(&r);
	}
	snprintf(cmd, sizeof(cmd), "rm -rf %s", elsewhere);
	cr_expect_eq(system(cmd), 0);
	fx_stop(fx);
}

/* How many times needle occurs in hay. */
static int occurrences(const char *hay, const char *needle)
{
	int n = 0;

	for (const char *q = hay; (q = strstr(q, needle)); q += strlen(needle))
		n++;
	return n;
}

/* Wait until errfile tells of the n-th snapshot, written or failed. */
static bool wait_notices(int n)
{
	for (int i = 0; i < 1000; i++) {
		const char *e = slurp(errfile);

		if (occurrences(e, "tracerd: snapshot ") >= n) /* written or failed */
			return true;
		usleep(10000);
	}
	return false;
}

/* SIGUSR1 writes into REPO/snapshots/ relative to the repository, never
 * through a link there, and never over an earlier snapshot: names have a
 * one-second stamp, so snapshots taken in the same second get -1, -2. */
Test(record_repository, usr1_snapshots_are_never_redirected_or_overwritten)
{
	pid_t fx = fx_start(FX("fx_chain"), NULL), t;
	char snaps[128], elsewhere[128], cmd[512];
	struct stat st;
	char *ls;
	int files = 0;

	cr_assert_gt(fx, 0);
	snprintf(elsewhere, sizeof(elsewhere), "%s.elsewhere", repo);
	cr_assert_eq(mkdir(elsewhere, 0750), 0);
	t = tracerd_start(fx, NULL, NULL, NULL);
	snprintf(snaps, sizeof(snaps), "%s/snapshots", repo);
	cr_assert_eq(symlink(elsewhere, snaps), 0);
	kill(t, SIGUSR1);
	cr_assert(wait_notices(1), "%s", slurp(errfile));
	cr_expect(strstr(slurp(errfile), "failed: a symbolic link is on the path"), "%s",
		slurp(errfile));
	snprintf(cmd, sizeof(cmd), "ls -A %s", elsewhere);
	ls = shell_output(cmd, NULL);
	cr_expect_str_eq(ls, "", "nothing was written through the link: %s", ls);
	free(ls);
	cr_assert_eq(unlink(snaps), 0);
	/* three, each after the previous one is done: within a second or two */
	for (int i = 0; i < 3; i++) {
		kill(t, SIGUSR1);
		cr_assert(wait_notices(2 + i), "%s", slurp(errfile));
	}
	kill(t, SIGINT);
	cr_expect_eq(tracerd_wait(t), 0, "%s", slurp(errfile));
	cr_expect_eq(occurrences(slurp(errfile), "snapshot written: "), 3, "%s", slurp(errfile));
	{
		DIR *d = opendir(snaps);
		struct dirent *de;

		cr_assert_not_null(d);
		while ((de = readdir(d))) {
			char p[512];

			if (de->d_name[0] == '.')
				continue;
			files++;
			snprintf(p, sizeof(p), "%s/%s", snaps, de->d_name);
			cr_expect_eq(stat(p, &st), 0);
			cr_expect_eq(st.st_mode & 07777, 0640, "%s: %o", p, st.st_mode & 07777);
			cr_expect(!strncmp(de->d_name, "snapshot-", 9), "%s", de->d_name);
		}
		closedir(d);
	}
	cr_expect_eq(files, 3, "three snapshots, three files");
	snprintf(cmd, sizeof(cmd), "rm -rf %s", elsewhere);
	cr_expect_eq(system(cmd), 0);
	fx_stop(fx);
}
