/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Unit tests of the repository: lock, unsafe paths, permissions, rotation
 * (size, age, many per second), retention (size, age, clock stepped back,
 * never the active chunk), and the countdown fault injector over writes,
 * fsyncs, renames and allocations. */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../../chunkfmt/chunkfmt-internal.h"

#include "../tools/synth.h"

static char dir[64];

static void mkrepo(void)
{
	snprintf(dir, sizeof(dir), "/tmp/tracerd-repo-XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
	rmdir(dir); /* repo_open creates it */
}

static void rmrepo(void)
{
	char cmd[512];

	snprintf(cmd, sizeof(cmd), "rm -rf %s %s.snap", dir, dir);
	if (system(cmd) != 0)
		cr_log_warn("could not remove %s", dir);
}

static long long write_some(struct repo *r, unsigned samples, uint64_t seed)
{
	struct chunk_writer *w = repo_writer(r);
	struct synth_opts so = { .threads = 4, .seconds = 1000, .stacks = 40, .min_depth = 5,
		.max_depth = 10, .functions = 30, .seed = seed, .max_samples = samples };

	if (!w)
		return repo_error(r);
	return synth_write(w, &so, 1000000000ull + seed * 1000000000000ull);
}

struct census {
	unsigned finished, part, other;
	uint64_t samples;
	bool damage;
};

/* Every file: a finished chunk that reads clean, or a .part whose blocks
 * are whole (a torn tail is allowed, nothing else). */
static struct census census(void)
{
	struct census c = { 0 };
	struct dirent *de;
	DIR *d = opendir(dir);

	cr_assert_not_null(d);
	while ((de = readdir(d))) {
		char path[512];
		struct chunk_report rep;
		uint64_t seq;
		bool part;
		int r;

		if (de->d_name[0] == '.' || !strcmp(de->d_name, "LOCK"))
			continue;
		if (!tcf_is_chunk_name(de->d_name, &seq, &part)) {
			c.other++;
			continue;
		}
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		r = chunk_read_file(path, NULL, NULL, &rep);
		if (r < 0) {
			c.damage = true;
			continue;
		}
		c.samples += rep.samples;
		if (rep.blocks_bad || rep.seq_gaps || rep.unknown_refs)
			c.damage = true;
		if (part) {
			c.part++;
		} else {
			c.finished++;
			if (rep.chunks_finished != 1 || rep.torn_tail)
				c.damage = true;
		}
	}
	closedir(d);
	return c;
}

Test(repo, create_lock_permissions)
{
	struct repo_opts o = { 0 };
	struct repo *r, *r2;
	pid_t owner = 0;
	struct stat st;
	char path[512];

	mkrepo();
	cr_assert_eq(repo_open(dir, &o, &r, NULL), 0);
	cr_assert_eq(stat(dir, &st), 0);
	cr_expect_eq(st.st_mode & 0777, 0750);
	cr_expect_eq(repo_open(dir, &o, &r2, &owner), -TD_E_LOCKED, "a second writer is refused");
	cr_expect_eq(owner, getpid(), "the lock names its holder");
	cr_assert_gt(write_some(r, 100, 1), 0);
	cr_assert_eq(repo_close(r, TCF_END_STOP), 0);
	snprintf(path, sizeof(path), "%s/c0000000000-", dir);
	{
		struct tcf_dir_entry e[4];
		int n = tcf_dir_scan(dir, e, 4);

		cr_assert_eq(n, 1);
		cr_expect_not(e[0].part);
		cr_expect_eq(e[0].seq, 0);
		snprintf(path, sizeof(path), "%s/%s", dir, e[0].name);
		cr_assert_eq(stat(path, &st), 0);
		cr_expect_eq(st.st_mode & 0777, 0640);
	}
	/* the lock died with the writer: a new one may open, and continues
	 * the sequence */
	cr_assert_eq(repo_open(dir, &o, &r, NULL), 0);
	cr_assert_gt(write_some(r, 100, 2), 0);
	cr_assert_eq(repo_close(r, TCF_END_STOP), 0);
	{
		struct tcf_dir_entry e[4];

		cr_assert_eq(tcf_dir_scan(dir, e, 4), 2);
		cr_expect_eq(e[1].seq, 1);
	}
	rmrepo();
}

/* Nothing may redirect the repository: no symbolic link anywhere on its
 * path (with or without a trailing slash, at the end or in the middle),
 * a directory of another user, or one its group or others can write. */
static void unsafe_paths(bool no_openat2)
{
	struct repo_opts o = { 0 };
	struct repo *r;
	char link[96], path[160], elsewhere[96];
	struct stat st;

	tcf_repo_no_openat2 = no_openat2;
	mkrepo();
	cr_assert_eq(mkdir(dir, 0777), 0);
	cr_assert_eq(chmod(dir, 0777), 0);
	cr_expect_eq(repo_open(dir, &o, &r, NULL), -TD_E_UNSAFE, "writable by others");
	cr_assert_eq(chmod(dir, 0770), 0);
	cr_expect_eq(repo_open(dir, &o, &r, NULL), -TD_E_UNSAFE, "writable by its group");
	cr_assert_eq(chmod(dir, 0750), 0);
	if (geteuid() == 0) {
		cr_assert_eq(chown(dir, 65534, 65534), 0);
		cr_expect_eq(repo_open(dir, &o, &r, NULL), -TD_E_NOTOWNER, "another user's");
		cr_assert_eq(chown(dir, 0, 0), 0);
	} else {
		cr_expect_eq(repo_open("/usr", &o, &r, NULL), -TD_E_NOTOWNER, "root's /usr");
	}

	/* links: the target must stay untouched */
	snprintf(elsewhere, sizeof(elsewhere), "%s.elsewhere", dir);
	cr_assert_eq(mkdir(elsewhere, 0750), 0);
	snprintf(link, sizeof(link), "%s/link", dir);
	cr_assert_eq(symlink(elsewhere, link), 0);
	cr_expect_eq(repo_open(link, &o, &r, NULL), -TD_E_SYMLINK, "a symlink");
	snprintf(path, sizeof(path), "%s/", link);
	cr_expect_eq(repo_open(path, &o, &r, NULL), -TD_E_SYMLINK, "a symlink with a slash");
	snprintf(path, sizeof(path), "%s//", link);
	cr_expect_eq(repo_open(path, &o, &r, NULL), -TD_E_SYMLINK, "and two");
	snprintf(path, sizeof(path), "%s/sub", link);
	cr_expect_eq(repo_open(path, &o, &r, NULL), -TD_E_SYMLINK, "a symlink on the way");
	snprintf(path, sizeof(path), "%s/sub", elsewhere);
	cr_expect_neq(stat(path, &st), 0, "nothing was made through the link");
	snprintf(path, sizeof(path), "%s/LOCK", elsewhere);
	cr_expect_neq(stat(path, &st), 0, "nothing was written through the link");

	/* a plain path with a trailing slash is fine */
	snprintf(path, sizeof(path), "%s/real/", dir);
	cr_expect_eq(repo_open(path, &o, &r, NULL), 0);
	repo_close(r, TCF_END_STOP);
	snprintf(path, sizeof(path), "rm -rf %s", elsewhere);
	cr_expect_eq(system(path), 0);
	rmrepo();
	tcf_repo_no_openat2 = false;
}

Test(repo, unsafe_paths_refused)
{
	unsafe_paths(false);
}

Test(repo, unsafe_paths_refused_without_openat2)
{
	unsafe_paths(true);
}

/* A snapshots/ link inside the repository is not followed; two
 * snapshots in the same second are two files; snapshots are 0640 like
 * the chunks, whatever the umask. */
Test(repo, snapshots_into_the_repository)
{
	struct repo_opts o = { 0 };
	struct repo *r;
	char path[4200], first[4200], elsewhere[96], link[160];
	unsigned chunks, repaired;
	uint64_t bytes;
	struct stat st;
	mode_t old = umask(0);

	mkrepo();
	cr_assert_eq(repo_open(dir, &o, &r, NULL), 0);
	cr_assert_gt(write_some(r, 100, 1), 0);

	snprintf(elsewhere, sizeof(elsewhere), "%s.elsewhere", dir);
	cr_assert_eq(mkdir(elsewhere, 0750), 0);
	snprintf(link, sizeof(link), "%s/snapshots", dir);
	cr_assert_eq(symlink(elsewhere, link), 0);
	cr_expect_eq(repo_snapshot_into(r, path, sizeof(path), &chunks, &repaired, &bytes),
		-TD_E_SYMLINK);
	cr_expect_eq(rmdir(elsewhere), 0, "nothing was written through the link");
	cr_assert_eq(unlink(link), 0);

	cr_assert_eq(repo_snapshot_into(r, first, sizeof(first), &chunks, &repaired, &bytes), 0);
	cr_expect_eq(chunks, 1);
	cr_expect_eq(repaired, 1, "the active chunk is repaired in the copy");
	cr_assert_eq(repo_snapshot_into(r, path, sizeof(path), &chunks, &repaired, &bytes), 0);
	cr_expect_str_neq(path, first, "a second snapshot never replaces the first");
	for (int i = 0; i < 2; i++) {
		const char *p = i ? path : first;
		struct chunk_report rep;

		cr_assert_eq(stat(p, &st), 0, "%s", p);
		cr_expect_eq(st.st_mode & 07777, 0640, "%s: %o", p, st.st_mode & 07777);
		cr_assert_eq(chunk_read_file(p, NULL, NULL, &rep), 0);
		cr_expect_eq(rep.samples, 100);
		cr_expect_eq(rep.chunks_finished, 1);
	}
	cr_expect(strstr(first, "/snapshots/snapshot-"), "%s", first);
	{
		char third[4200];

		cr_assert_eq(repo_snapshot_into(r, third, sizeof(third), &chunks, &repaired, &bytes),
			0);
		cr_expect_str_neq(third, path);
		cr_expect_str_neq(third, first);
	}
	snprintf(link, sizeof(link), "%s/snapshots", dir);
	cr_assert_eq(stat(link, &st), 0);
	cr_expect_eq(st.st_mode & 07777, 0750);
	umask(old);
	cr_assert_eq(repo_close(r, TCF_END_STOP), 0);
	rmrepo();
}

/* A repository made by a start that then failed goes again; one that
 * existed, or holds a chunk, stays as it was. */
Test(repo, discard_what_was_made_for_nothing)
{
	struct repo_opts o = { 0 };
	struct repo *r;
	struct stat st;

	mkrepo();
	cr_assert_eq(repo_open(dir, &o, &r, NULL), 0);
	cr_expect_eq(repo_discard(r), 1);
	cr_expect_neq(stat(dir, &st), 0, "made here, nothing in it: removed");

	cr_assert_eq(mkdir(dir, 0750), 0);
	cr_assert_eq(repo_open(dir, &o, &r, NULL), 0);
	cr_expect_eq(repo_discard(r), 0);
	cr_expect_eq(stat(dir, &st), 0, "it was there before: kept");
	rmrepo();

	mkrepo();
	cr_assert_eq(repo_open(dir, &o, &r, NULL), 0);
	cr_assert_gt(write_some(r, 10, 1), 0);
	chunk_writer_flush(repo_writer(r));
	cr_expect_eq(repo_discard(r), 0);
	cr_expect_eq(stat(dir, &st), 0, "it holds a chunk: kept");
	rmrepo();
	cr_expect_eq(repo_discard(NULL), 0);
}

Test(repo, rotation_by_size_many_per_second)
{
	struct repo_opts o = { .max_chunk_size = 2000 };
	struct repo *r;
	struct tcf_dir_entry e[128];
	int n;

	mkrepo();
	cr_assert_eq(repo_open(dir, &o, &r, NULL), 0);
	for (int i = 0; i < 40; i++) {
		cr_assert_gt(write_some(r, 50, (uint64_t)i + 1), 0);
		chunk_writer_flush(repo_writer(r));
		cr_assert_geq(repo_tick(r, td_now_ns()), 0);
	}
	cr_assert_eq(repo_close(r, TCF_END_STOP), 0);
	n = tcf_dir_scan(dir, e, 128);
	cr_expect_geq(n, 30, "chunks rotated by size: %d", n);
	for (int i = 0; i < n; i++) {
		cr_expect_eq(e[i].seq, (uint64_t)i, "names sort by sequence, no gaps");
		cr_expect_not(e[i].part);
	}
	cr_expect_not(census().damage);
	rmrepo();
}

/* The .part's name, as the repository lists it (the first, or only, one). */
static void part_path(char *path, size_t len)
{
	struct tcf_dir_entry e[8];
	int n = tcf_dir_scan(dir, e, 8);

	cr_assert_gt(n, 0);
	for (int i = 0; i < n; i++)
		if (e[i].part) {
			snprintf(path, len, "%s/%.63s", dir, e[i].name);
			return;
		}
	cr_assert_fail("no .part in %s", dir);
}

/* A chunk changed by another process while written (truncated, or its
 * name given to another file) is never finished as if whole: rotation
 * refuses, abandon sets it aside, and the next chunk is whole. */
Test(repo, chunk_changed_under_the_writer)
{
	struct repo_opts o = { 0 };
	struct repo_changed c;
	struct repo *r;
	char part[256], other[300];
	struct census cs;
	struct stat st;

	mkrepo();
	cr_assert_eq(repo_open(dir, &o, &r, NULL), 0);
	/* truncated: shorter than what was written */
	cr_assert_gt(write_some(r, 50, 1), 0);
	cr_assert_eq(chunk_writer_flush(repo_writer(r)), 0);
	cr_expect_eq(repo_check(r), 0, "as written");
	part_path(part, sizeof(part));
	cr_assert_eq(truncate(part, 0), 0);
	cr_expect_eq(repo_check(r), -TD_E_CHANGED);
	cr_expect_eq(repo_rotate(r, TCF_END_ROTATE), -TD_E_CHANGED, "never sealed");
	cr_expect_eq(repo_error(r), 0, "the repository goes on");
	cr_assert_eq(repo_abandon(r, &c), 0);
	cr_expect_eq(c.samples, 50);
	cr_expect_eq(c.size, 0);
	cr_expect_not(c.replaced);
	cr_expect_str_eq(c.name + strlen(c.name) - 12, ".tcf.changed", "%s", c.name);
	snprintf(other, sizeof(other), "%s/%s", dir, c.name);
	cr_expect_eq(stat(other, &st), 0, "set aside as %s", c.name);
	cr_expect_neq(stat(part, &st), 0, "no .part left to read as a prefix");

	/* replaced: the name is another file's, which stays as it is */
	cr_assert_gt(write_some(r, 30, 2), 0);
	cr_assert_eq(chunk_writer_flush(repo_writer(r)), 0);
	part_path(part, sizeof(part));
	snprintf(other, sizeof(other), "%s/moved", dir);
	cr_assert_eq(rename(part, other), 0);
	cr_assert_eq(close(open(part, O_WRONLY | O_CREAT | O_EXCL, 0600)), 0);
	cr_expect_eq(repo_check(r), -TD_E_CHANGED);
	cr_assert_eq(repo_abandon(r, &c), 0);
	cr_expect(c.replaced);
	cr_expect_eq(c.samples, 30);
	cr_expect_eq(stat(part, &st), 0, "another's file is not moved");
	cr_expect_eq(st.st_size, 0, "nor written to");
	cr_assert_eq(unlink(part), 0);
	cr_assert_eq(unlink(other), 0);

	/* the next chunk is whole */
	cr_assert_gt(write_some(r, 20, 3), 0);
	cr_assert_eq(repo_close(r, TCF_END_STOP), 0);
	cs = census();
	cr_expect_eq(cs.finished, 1);
	cr_expect_eq(cs.part, 0);
	cr_expect_eq(cs.samples, 20, "the samples after the changes, and only those");
	cr_expect_not(cs.damage);
	cr_expect_eq(cs.other, 1, "the .tcf.changed");
	rmrepo();
}

Test(repo, rotation_by_age)
{
	/* repo_tick takes the time: the chunk's age does not depend on how
	 * fast this machine writes it */
	struct repo_opts o = { .max_chunk_age_ns = 3600ull * 1000000000u };
	struct repo *r;
	uint64_t now;

	mkrepo();
	cr_assert_eq(repo_open(dir, &o, &r, NULL), 0);
	cr_assert_gt(write_some(r, 50, 1), 0);
	now = td_now_ns();
	cr_expect_eq(repo_tick(r, now), 0, "young");
	cr_expect_eq(repo_tick(r, now + o.max_chunk_age_ns - 1000000000u), 0, "still young");
	cr_expect_eq(repo_tick(r, now + o.max_chunk_age_ns), 1, "old enough: rotated");
	cr_assert_eq(repo_close(r, TCF_END_STOP), 0);
	rmrepo();
}

Test(repo, retention_by_size_keeps_active)
{
	struct repo_opts o = { .max_chunk_size = 1 << 30, .max_size = 30000 };
	struct repo *r;
	struct tcf_dir_entry e[128];
	uint64_t total = 0;
	int n;

	mkrepo();
	cr_assert_eq(repo_open(dir, &o, &r, NULL), 0);
	for (int i = 0; i < 20; i++) {
		cr_assert_gt(write_some(r, 300, (uint64_t)i + 1), 0);
		cr_assert_eq(repo_rotate(r, TCF_END_ROTATE), 0);
	}
	cr_assert_gt(write_some(r, 300, 99), 0);
	chunk_writer_flush(repo_writer(r));
	cr_assert_geq(repo_retain(r), 0);
	n = tcf_dir_scan(dir, e, 128);
	for (int i = 0; i < n; i++)
		total += e[i].size;
	cr_expect_lt(n, 21, "old chunks deleted");
	cr_expect(e[n - 1].part, "the active chunk is never deleted");
	cr_expect_leq(total, 30000 + e[n - 1].size + 1);
	cr_expect_eq(e[n - 1].seq, 20);
	for (int i = 1; i < n; i++)
		cr_expect_eq(e[i].seq, e[i - 1].seq + 1, "the oldest go first");
	cr_assert_eq(repo_close(r, TCF_END_STOP), 0);
	rmrepo();
}

static void set_mtime(const char *name, time_t t)
{
	char path[512];
	struct timespec ts[2] = { { t, 0 }, { t, 0 } };

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	cr_assert_eq(utimensat(AT_FDCWD, path, ts, 0), 0);
}

Test(repo, retention_by_age_and_clock_steps)
{
	struct repo_opts o = { .max_age_ns = 3600ull * 1000000000u };
	struct repo *r;
	struct tcf_dir_entry e[16];
	int n;

	mkrepo();
	cr_assert_eq(repo_open(dir, &o, &r, NULL), 0);
	for (int i = 0; i < 4; i++) {
		cr_assert_gt(write_some(r, 50, (uint64_t)i + 1), 0);
		cr_assert_eq(repo_rotate(r, TCF_END_ROTATE), 0);
	}
	n = tcf_dir_scan(dir, e, 16);
	cr_assert_eq(n, 4);
	set_mtime(e[0].name, time(NULL) - 2 * 86400);	/* two days old */
	set_mtime(e[1].name, time(NULL) + 10 * 86400); /* clock was ahead */
	cr_expect_eq(repo_retain(r), 1, "only the old chunk goes");
	n = tcf_dir_scan(dir, e, 16);
	cr_expect_eq(n, 3);
	cr_expect_eq(e[0].seq, 1, "a chunk from the future is kept");
	cr_assert_eq(repo_close(r, TCF_END_STOP), 0);
	rmrepo();
}

Test(repo, disk_full_keeps_what_was_written)
{
	struct repo_opts o = { .block_bytes = 1024 };
	struct repo *r;
	struct census c;
	long long n;

	mkrepo();
	cr_assert_eq(repo_open(dir, &o, &r, NULL), 0);
	cr_assert_gt(write_some(r, 2000, 1), 0);
	chunk_writer_flush(repo_writer(r));
	td_fault_arm(TD_FAULT_WRITE, 3);
	n = write_some(r, 5000, 2);
	td_fault_arm(0, 0);
	cr_expect_eq(n, -ENOSPC);
	cr_expect_eq(repo_error(r), -ENOSPC);
	cr_expect_null(repo_writer(r), "recording stops");
	cr_expect_eq(repo_close(r, TCF_END_STOP), -ENOSPC);
	c = census();
	cr_expect_not(c.damage);
	cr_expect_eq(c.part, 1, "the chunk stays as a .part of whole blocks");
	cr_expect_geq(c.samples, 2000, "nothing already written is lost");
	rmrepo();
}

/* A recording of 3 chunks with rotations; stops at the first error as the
 * daemon does. */
static void scenario(void)
{
	struct repo_opts o = { .max_chunk_size = 6000, .block_bytes = 1024 };
	struct repo *r;

	if (repo_open(dir, &o, &r, NULL) < 0)
		return;
	for (int i = 0; i < 6; i++) {
		if (write_some(r, 200, (uint64_t)i + 1) < 0)
			break;
		if (chunk_writer_flush(repo_writer(r)) < 0 || repo_tick(r, td_now_ns()) < 0)
			break;
	}
	repo_close(r, TCF_END_STOP);
}

static void fault_sweep(unsigned ops)
{
	unsigned fired = 0;

	for (long n = 1; n < 400; n++) {
		struct census c;
		char snap[96];
		unsigned nchunks, nrepaired;
		uint64_t nbytes;
		struct chunk_report rep;

		mkrepo();
		td_fault_arm(ops, n);
		scenario();
		if (!td_fault_fired()) {
			td_fault_arm(0, 0);
			rmrepo();
			break;
		}
		td_fault_arm(0, 0);
		fired++;
		c = census();
		cr_expect_not(c.damage, "fault %ld: only whole chunks or clean prefixes", n);
		cr_expect_eq(c.other, 0, "fault %ld: no stray files", n);
		if (c.finished + c.part) {
			snprintf(snap, sizeof(snap), "%s.snap", dir);
			cr_expect_eq(repo_snapshot(dir, snap, 0, &nchunks, &nrepaired, &nbytes), 0,
				"fault %ld: snapshot", n);
			cr_expect_eq(chunk_read_file(snap, NULL, NULL, &rep), 0);
			cr_expect_eq(rep.chunks_finished, rep.chunks, "fault %ld: repaired", n);
			cr_expect_eq(rep.blocks_bad + rep.seq_gaps + rep.unknown_refs, 0);
			cr_expect_eq(rep.samples, c.samples, "fault %ld: the snapshot keeps all", n);
		}
		rmrepo();
	}
	cr_expect_gt(fired, 3, "the injector reached several points (%u)", fired);
}

Test(repo_faults, writes, .timeout = 120)
{
	fault_sweep(TD_FAULT_WRITE);
}

Test(repo_faults, fsyncs, .timeout = 120)
{
	fault_sweep(TD_FAULT_FSYNC);
}

Test(repo_faults, renames, .timeout = 120)
{
	fault_sweep(TD_FAULT_RENAME);
}

Test(repo_faults, mallocs, .timeout = 120)
{
	fault_sweep(TD_FAULT_MALLOC);
}

Test(repo, dictionary_cap_rotates)
{
	struct repo_opts o = { .max_dict_bytes = 30 * 1024 }; /* table 24 KiB + names */
	struct repo *r;
	struct tcf_dir_entry e[64];
	int rotated = 0, last = 0, n;

	mkrepo();
	cr_assert_eq(repo_open(dir, &o, &r, NULL), 0);
	for (int i = 0; i < 20; i++) {
		cr_assert_gt(write_some(r, 200, (uint64_t)i + 1), 0);
		last = repo_tick(r, td_now_ns());
		rotated += last == 1;
	}
	cr_assert_eq(repo_close(r, TCF_END_STOP), 0);
	cr_expect_gt(rotated, 0, "the writer's memory cap forced rotation");
	n = tcf_dir_scan(dir, e, 64);
	/* one file per rotation, plus the chunk closed at the end if any */
	cr_expect_eq(n, rotated + (last == 1 ? 0 : 1));
	cr_expect_not(census().damage, "every chunk is self-contained after a reset");
	rmrepo();
}

/* ---- emergency dumps (repo_emergency_into) */

/* What an emergency dump holds, chunk by chunk. */
struct edump {
	unsigned n;
	uint64_t seq[64];
	uint32_t flags[64], pid[64];
	struct chunk_report rep;
};

static int e_begin(void *arg, struct chunk_reader *rd)
{
	struct edump *d = arg;
	const struct chunk_info *ci = chunk_reader_info(rd);

	if (d->n < 64) {
		d->seq[d->n] = ci->chunk_seq;
		d->flags[d->n] = ci->header_flags;
		d->pid[d->n] = ci->target_pid;
	}
	d->n++;
	return 0;
}

/* Read the dump at path; every chunk must be finished and undamaged. */
static struct edump read_dump(const char *path)
{
	static const struct chunk_visitor v = { .chunk_begin = e_begin };
	struct edump d = { 0 };

	cr_assert_eq(chunk_read_file(path, &v, &d, &d.rep), 0, "%s", path);
	cr_expect_eq(d.rep.chunks, d.n);
	cr_expect_eq(d.rep.chunks_finished, d.rep.chunks, "%s: every chunk finished", path);
	cr_expect_eq(d.rep.blocks_bad + d.rep.seq_gaps + d.rep.unknown_refs, 0, "%s: %s", path,
		d.rep.first_damage);
	cr_expect_not(d.rep.torn_tail);
	return d;
}

/* The emergency-* files in dir: dumps and leftovers (.tmp). */
static unsigned emergency_files(unsigned *ret_tmp)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	unsigned n = 0, tmp = 0;

	cr_assert_not_null(d);
	while ((de = readdir(d)))
		if (!strncmp(de->d_name, "emergency-", 10)) {
			n++;
			tmp += strstr(de->d_name, ".tmp") != NULL;
		}
	closedir(d);
	if (ret_tmp)
		*ret_tmp = tmp;
	return n;
}

/* Three finished chunks and an active one whose last block was torn (a
 * writer killed mid-write): the dump holds all four in sequence order,
 * the active one repaired, every header marked for the dead process with
 * a CRC that still holds; the repository reads as before and its listing
 * does not see the dump. */
Test(repo, emergency_dump_in_order_marked_for_the_dead)
{
	struct repo_opts o = { .target_pid = 1000 };
	struct repo *r;
	char path[4200], part[600];
	unsigned chunks, nf;
	uint64_t bytes, samples;
	struct tcf_dir_entry e[8];
	struct edump d;
	struct stat st;
	mode_t old = umask(077);
	int fd;

	mkrepo();
	cr_assert_eq(repo_open(dir, &o, &r, NULL), 0);
	for (int i = 0; i < 3; i++) {
		cr_assert_gt(write_some(r, 200, (uint64_t)i + 1), 0);
		cr_assert_eq(repo_rotate(r, i == 2 ? TCF_END_TARGET_CRASH : TCF_END_ROTATE), 0);
	}
	cr_assert_gt(write_some(r, 150, 9), 0);
	cr_assert_eq(chunk_writer_flush(repo_writer(r)), 0);
	cr_assert_eq(tcf_dir_scan(dir, e, 8), 4);
	cr_assert(e[3].part);
	snprintf(part, sizeof(part), "%s/%.63s", dir, e[3].name);
	fd = open(part, O_WRONLY | O_APPEND);
	cr_assert_geq(fd, 0);
	cr_assert_eq(write(fd, "\x01\x02torn", 6), 6);
	close(fd);
	samples = census().samples;

	cr_assert_eq(repo_emergency_into(r, 4321, 0, path, sizeof(path), &chunks, &bytes), 0);
	umask(old);
	cr_expect_eq(chunks, 4);
	cr_expect(!strncmp(path, dir, strlen(dir)) &&
			  !strncmp(path + strlen(dir), "/emergency-4321-", 16) &&
			  !strcmp(path + strlen(path) - 4, ".tcf"),
		"%s", path);
	cr_assert_eq(stat(path, &st), 0);
	cr_expect_eq(st.st_mode & 07777, 0640, "whatever the umask: %o", st.st_mode & 07777);
	cr_expect_eq((uint64_t)st.st_size, bytes);
	d = read_dump(path);
	cr_assert_eq(d.n, 4);
	cr_expect_eq(d.rep.samples, samples, "every whole block of every chunk");
	for (unsigned i = 0; i < 4; i++) {
		cr_expect_eq(d.seq[i], i, "sequence order");
		cr_expect(d.flags[i] & TCF_HDR_EMERGENCY, "chunk %u flagged", i);
		cr_expect_eq(d.pid[i], 4321, "chunk %u names the dead process", i);
		cr_expect_eq(!!(d.flags[i] & TCF_HDR_RECOVERED), i == 3, "only the active one repaired");
	}
	/* the repository is as it was, and does not list the dump */
	cr_expect_eq(tcf_dir_scan(dir, e, 8), 4);
	cr_expect_eq(emergency_files(&nf), 1);
	cr_expect_eq(nf, 0, "no temporary file left");
	for (int i = 0; i < 3; i++) {
		struct chunk_report rep;
		uint8_t h[TCF_HEADER_LEN];
		struct chunk_info ci;

		snprintf(part, sizeof(part), "%s/%.63s", dir, e[i].name);
		fd = open(part, O_RDONLY);
		cr_assert_eq(pread(fd, h, sizeof(h), 0), (ssize_t)sizeof(h));
		close(fd);
		cr_assert_gt(tcf_parse_header(h, sizeof(h), &ci), 0);
		cr_expect_eq(ci.header_flags, 0, "the chunk's own header is never touched");
		cr_expect_eq(ci.target_pid, 1000);
		cr_expect_eq(chunk_read_file(part, NULL, NULL, &rep), 0);
	}
	repo_discard(r);
	rmrepo();
}

/* The window: chunks last written at or after since_ns; the newest is in
 * every dump, however the clocks moved; 0 takes every chunk. */
Test(repo, emergency_dump_window)
{
	struct repo_opts o = { 0 };
	struct repo *r;
	struct tcf_dir_entry e[8];
	char path[4200];
	unsigned chunks;
	uint64_t bytes, now;
	struct edump d;

	mkrepo();
	cr_assert_eq(repo_open(dir, &o, &r, NULL), 0);
	for (int i = 0; i < 4; i++) {
		cr_assert_gt(write_some(r, 50, (uint64_t)i + 1), 0);
		cr_assert_eq(repo_rotate(r, TCF_END_ROTATE), 0);
	}
	cr_assert_eq(tcf_dir_scan(dir, e, 8), 4);
	set_mtime(e[0].name, time(NULL) - 3600);
	set_mtime(e[1].name, time(NULL) - 3600);
	now = (uint64_t)time(NULL) * 1000000000u;

	cr_assert_eq(repo_emergency_into(r, 7, now - 60000000000ull, path, sizeof(path), &chunks,
			     &bytes),
		0);
	d = read_dump(path);
	cr_expect_eq(chunks, 2);
	cr_assert_eq(d.n, 2);
	cr_expect(d.seq[0] == 2 && d.seq[1] == 3, "the last minute's: %llu %llu",
		(unsigned long long)d.seq[0], (unsigned long long)d.seq[1]);

	for (int i = 2; i < 4; i++)
		set_mtime(e[i].name, time(NULL) - 3600);
	cr_assert_eq(repo_emergency_into(r, 7, now - 60000000000ull, path, sizeof(path), &chunks,
			     &bytes),
		0);
	d = read_dump(path);
	cr_expect_eq(chunks, 1);
	cr_expect(d.n == 1 && d.seq[0] == 3, "the newest, always");

	cr_assert_eq(repo_emergency_into(r, 7, 0, path, sizeof(path), &chunks, &bytes), 0);
	cr_expect_eq(chunks, 4, "no window: every chunk");
	cr_expect_eq(emergency_files(NULL), 3, "three dumps of the same death, three files");
	cr_assert_eq(repo_close(r, TCF_END_STOP), 0);
	rmrepo();
}

/* max_emergency: a crash loop leaves the newest dumps only, by
 * modification time (dumps of other PIDs and older names among them),
 * and never a chunk or another file. */
Test(repo, emergency_dumps_capped_oldest_out)
{
	struct repo_opts o = { .max_emergency = 3 };
	struct repo *r;
	char path[4200], kept[3][4200], other[600];
	unsigned chunks;
	uint64_t bytes;
	int fd;

	mkrepo();
	cr_assert_eq(repo_open(dir, &o, &r, NULL), 0);
	cr_assert_gt(write_some(r, 50, 1), 0);
	cr_assert_eq(repo_rotate(r, TCF_END_ROTATE), 0);
	/* not a dump: stays whatever its age */
	snprintf(other, sizeof(other), "%s/emergency-notes.txt", dir);
	fd = open(other, O_CREAT | O_WRONLY, 0600);
	cr_assert_geq(fd, 0);
	close(fd);
	for (int i = 0; i < 6; i++) {
		DIR *d;
		struct dirent *de;

		cr_assert_eq(repo_emergency_into(r, 900 - i, 0, path, sizeof(path), &chunks, &bytes),
			0);
		/* every earlier dump an hour older than the one before it */
		d = opendir(dir);
		cr_assert_not_null(d);
		while ((de = readdir(d))) {
			struct stat st;
			char p2[600];

			snprintf(p2, sizeof(p2), "%s/%.255s", dir, de->d_name);
			if (strncmp(de->d_name, "emergency-", 10) || strstr(de->d_name, ".txt") ||
				!strcmp(p2, path) || stat(p2, &st) < 0)
				continue;
			set_mtime(de->d_name, st.st_mtime - 3600);
		}
		closedir(d);
		if (i >= 3)
			snprintf(kept[i - 3], sizeof(kept[0]), "%s", path);
	}
	cr_expect_eq(emergency_files(NULL), 4, "three dumps and the other file: %u", emergency_files(NULL));
	for (int i = 0; i < 3; i++)
		cr_expect_eq(access(kept[i], F_OK), 0, "the newest kept: %s", kept[i]);
	cr_expect_eq(access(other, F_OK), 0);
	{
		struct tcf_dir_entry e[4];

		cr_expect_eq(tcf_dir_scan(dir, e, 4), 1, "the chunk stays");
	}
	unlink(other);
	cr_assert_eq(repo_close(r, TCF_END_STOP), 0);
	rmrepo();
}

/* A dump never replaces a file, whoever made it; an empty repository has
 * nothing to dump. */
Test(repo, emergency_dump_never_replaces)
{
	struct repo_opts o = { 0 };
	struct repo *r;
	char path[4200], first[4200], mine[2][600];
	unsigned chunks;
	uint64_t bytes;

	mkrepo();
	cr_assert_eq(repo_open(dir, &o, &r, NULL), 0);
	cr_expect_eq(repo_emergency_into(r, 55, 0, path, sizeof(path), &chunks, &bytes), -ENODATA);
	cr_expect_eq(emergency_files(NULL), 0, "nothing left behind");
	cr_expect_eq(repo_emergency_into(r, 0, 0, path, sizeof(path), &chunks, &bytes), -EINVAL);
	cr_assert_gt(write_some(r, 50, 1), 0);
	cr_assert_eq(repo_rotate(r, TCF_END_ROTATE), 0);
	/* the names this second and the next would take are someone's */
	for (int k = 0; k < 2; k++) {
		time_t t = time(NULL) + k;
		struct tm tm;
		char stamp[32];
		FILE *f;

		gmtime_r(&t, &tm);
		strftime(stamp, sizeof(stamp), "%Y%m%dT%H%M%SZ", &tm);
		snprintf(mine[k], sizeof(mine[k]), "%s/emergency-55-%s.tcf", dir, stamp);
		cr_assert_not_null(f = fopen(mine[k], "w"));
		fputs("precious", f);
		fclose(f);
	}
	cr_assert_eq(repo_emergency_into(r, 55, 0, first, sizeof(first), &chunks, &bytes), 0);
	cr_assert_eq(repo_emergency_into(r, 55, 0, path, sizeof(path), &chunks, &bytes), 0);
	cr_expect_str_neq(path, first);
	for (int k = 0; k < 2; k++) {
		char *text = NULL;
		size_t cap = 0;
		FILE *f = fopen(mine[k], "r");

		cr_assert_not_null(f);
		cr_expect_eq(getdelim(&text, &cap, '\0', f), 8);
		cr_expect_str_eq(text, "precious", "%s was replaced", mine[k]);
		cr_expect_str_neq(first, mine[k]);
		cr_expect_str_neq(path, mine[k]);
		free(text);
		fclose(f);
	}
	read_dump(first);
	read_dump(path);
	cr_assert_eq(repo_close(r, TCF_END_STOP), 0);
	rmrepo();
}

/* Retention keeps the dumps: not deleted past max_size or max_age, and
 * not counted against max_size (the chunks alone are kept under it). */
Test(repo, emergency_dump_kept_by_retention)
{
	struct repo_opts o = { .max_size = 30000, .max_age_ns = 3600ull * 1000000000u };
	struct repo *r;
	struct tcf_dir_entry e[128];
	char path[4200], name[600];
	unsigned chunks;
	uint64_t bytes, total = 0;
	struct stat st;
	int n;

	mkrepo();
	cr_assert_eq(repo_open(dir, &o, &r, NULL), 0);
	for (int i = 0; i < 8; i++) {
		cr_assert_gt(write_some(r, 300, (uint64_t)i + 1), 0);
		cr_assert_eq(repo_rotate(r, TCF_END_ROTATE), 0);
	}
	cr_assert_eq(repo_emergency_into(r, 99, 0, path, sizeof(path), &chunks, &bytes), 0);
	cr_assert_gt(bytes, 20000, "a dump of the size of the chunks");
	snprintf(name, sizeof(name), "%s", strrchr(path, '/') + 1);
	{
		struct timespec ts[2] = { { time(NULL) - 2 * 86400, 0 },
			{ time(NULL) - 2 * 86400, 0 } };

		cr_assert_eq(utimensat(AT_FDCWD, path, ts, 0), 0); /* two days old */
	}
	for (int i = 0; i < 8; i++) {
		cr_assert_gt(write_some(r, 300, (uint64_t)i + 20), 0);
		cr_assert_eq(repo_rotate(r, TCF_END_ROTATE), 0);
	}
	cr_assert_geq(repo_retain(r), 0);
	cr_assert_eq(stat(path, &st), 0, "the dump is kept");
	cr_expect_eq((uint64_t)st.st_size, bytes);
	n = tcf_dir_scan(dir, e, 128);
	for (int i = 0; i < n; i++) {
		total += e[i].size;
		cr_expect_str_neq(e[i].name, name);
	}
	cr_expect_leq(total, 30000, "the chunks are kept under max_size");
	cr_expect_gt(total + (uint64_t)st.st_size, 30000, "the dump is not counted");
	cr_expect_gt(n, 0);
	cr_assert_eq(repo_close(r, TCF_END_STOP), 0);
	rmrepo();
}

/* A write, fsync, rename or allocation that fails leaves no dump and no
 * temporary file, or (a failed directory fsync after the rename) a whole
 * one; the repository is untouched and the next dump succeeds. */
static void emergency_faults(unsigned ops)
{
	unsigned fired = 0;

	for (long n = 1; n < 200; n++) {
		struct repo_opts o = { .block_bytes = 1024 };
		struct repo *r;
		char path[4200];
		unsigned chunks, tmp, files;
		uint64_t bytes, before;
		int e;

		mkrepo();
		cr_assert_eq(repo_open(dir, &o, &r, NULL), 0);
		for (int i = 0; i < 3; i++) {
			cr_assert_gt(write_some(r, 200, (uint64_t)i + 1), 0);
			cr_assert_eq(repo_rotate(r, TCF_END_ROTATE), 0);
		}
		before = census().samples;
		td_fault_arm(ops, n);
		e = repo_emergency_into(r, 31, 0, path, sizeof(path), &chunks, &bytes);
		if (!td_fault_fired()) {
			td_fault_arm(0, 0);
			cr_expect_eq(e, 0);
			repo_close(r, TCF_END_STOP);
			rmrepo();
			break;
		}
		td_fault_arm(0, 0);
		fired++;
		files = emergency_files(&tmp);
		cr_expect_eq(tmp, 0, "fault %ld: no temporary file left", n);
		if (e < 0) {
			cr_expect_leq(files, 1, "fault %ld", n);
		} else {
			cr_expect_eq(files, 1, "fault %ld", n);
			read_dump(path);
		}
		cr_expect_eq(census().samples, before, "fault %ld: the chunks are untouched", n);
		cr_expect_not(census().damage);
		cr_expect_eq(repo_emergency_into(r, 31, 0, path, sizeof(path), &chunks, &bytes), 0,
			"fault %ld: the next dump", n);
		cr_expect_eq(chunks, 3);
		read_dump(path);
		cr_expect_eq(repo_close(r, TCF_END_STOP), 0);
		rmrepo();
	}
	cr_expect_gt(fired, 0, "the injector reached the dump");
}

Test(repo_faults, emergency_writes, .timeout = 120)
{
	emergency_faults(TD_FAULT_WRITE);
}

Test(repo_faults, emergency_fsyncs, .timeout = 120)
{
	emergency_faults(TD_FAULT_FSYNC);
}

Test(repo_faults, emergency_renames, .timeout = 120)
{
	emergency_faults(TD_FAULT_RENAME);
}

Test(repo_faults, emergency_mallocs, .timeout = 120)
{
	emergency_faults(TD_FAULT_MALLOC);
}
