/* SPDX-License-Identifier: GPL-2.0-or-later */
/* What threads blocked on fx_locks' objects wait for: tracerd dump names
 * each wait's kind, its object (the address the program prints) and the
 * thread that holds it, and finds a deadlock; a wall recording carries
 * the same waits, with their owners, into report's waits format, pprof's
 * contentions and delay, and the html page's waits view. */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../helpers.h"

/* Start fx_locks (with arg), read its objects' addresses ("NAME 0xADDR"
 * lines up to "end") into text. */
static pid_t start_locks(const char *arg, char *text, size_t len)
{
	pid_t pid = fx_start_listing(FX("fx_locks"), arg, text, len);

	/* "ready" comes as the waiters are about to block: wait until they do */
	cr_assert(wait_parked(pid, NULL, TEST_PATIENCE_MS), "fx_locks' threads did not park");
	return pid;
}

/* Record fx_locks (pid) for a second in mode (wall or cpu) into repo. */
static void record_locks(pid_t pid, const char *mode, const char *repo)
{
	char p[32];
	const char *argv[] = { "tracerd", "--pid", p, "--mode", mode, "-d", "1s", "-q", "-r", repo,
		NULL };
	struct run_result r;

	snprintf(p, sizeof(p), "%d", (int)pid);
	run_tracerd(&r, argv);
	cr_assert_eq(r.status, 0, "%s", r.err);
	run_result_free(&r);
}

/* The html page of the recording in repo, written to page. */
static void html_of(const char *repo, const char *page)
{
	const char *argv[] = { "tracerd", "report", repo, "-f", "html", "-o", page, NULL };
	struct run_result r;

	run_tracerd(&r, argv);
	cr_assert_eq(r.status, 0, "%s", r.err);
	run_result_free(&r);
}

/* The JSON object of thread name in a dump --json (up to the next one). */
static char *thread_json(const char *out, const char *name)
{
	char key[64];
	const char *p, *end;

	snprintf(key, sizeof(key), "\"name\": \"%s\"", name);
	p = strstr(out, key);
	cr_assert_not_null(p, "no thread %s in\n%s", name, out);
	end = strstr(p, "\n    {");
	return strndup(p, end ? (size_t)(end - p) : strlen(p));
}

static void expect_wait(const char *out, const char *name, const char *kind,
	unsigned long long object, pid_t owner)
{
	char *t = thread_json(out, name), want[96];

	snprintf(want, sizeof(want), "\"wait\": {\"kind\": \"%s\"", kind);
	cr_expect(strstr(t, want), "%s: not a %s wait: %.300s", name, kind, t);
	if (object) {
		snprintf(want, sizeof(want), "\"object\": \"0x%llx\"", object);
		cr_expect(strstr(t, want), "%s: %s is not 0x%llx: %.300s", name, kind, object, t);
	}
	if (owner) {
		snprintf(want, sizeof(want), "\"owner_tid\": %d", (int)owner);
		cr_expect(strstr(t, want), "%s: not held by %d: %.300s", name, (int)owner, t);
	}
	free(t);
}

/* Each waiter of fx_locks: what it waits for, the object's address (as
 * the program prints it) and the thread that holds it. */
Test(lock_waits, says_what_each_thread_waits_for, .timeout = 60)
{
	char text[1024], p[32];
	const char *argv[] = { "tracerd", "dump", "--pid", p, "--json", NULL };
	pid_t pid = start_locks(NULL, text, sizeof(text));
	struct run_result r;

	snprintf(p, sizeof(p), "%d", (int)pid);
	run_tracerd(&r, argv);
	cr_assert_eq(r.status, 0, "%s", r.err);
	expect_wait(r.out, "lk-mutex", "mutex", fx_listed_addr(text, "mutex"),
		task_by_name(pid, "lk-mholder"));
	expect_wait(r.out, "lk-pi", "mutex", fx_listed_addr(text, "pi"), task_by_name(pid, "lk-piholder"));
	expect_wait(r.out, "lk-rdlock", "rwlock", fx_listed_addr(text, "rwlock"),
		task_by_name(pid, "lk-wholder"));
	expect_wait(r.out, "lk-cond", "condvar", fx_listed_addr(text, "cond"), 0);
	expect_wait(r.out, "lk-sem", "semaphore", fx_listed_addr(text, "sem"), 0);
	expect_wait(r.out, "lk-join", "join", 0, task_by_name(pid, "lk-long"));
	expect_wait(r.out, "lk-pipe", "fd", 0, 0);
	expect_wait(r.out, "lk-long", "sleep", 0, 0);
	expect_wait(r.out, "fx_locks", "signal", 0, 0);
	{
		char *t = thread_json(r.out, "lk-pipe");

		cr_expect(strstr(t, "\"target\": \"pipe:["), "%.300s", t);
		free(t);
	}
	cr_expect(!strstr(r.out, "\"deadlocks\""), "no deadlock here");
	run_result_free(&r);
	fx_stop(pid);
}

/* Two threads that took two mutexes in opposite orders: the text dump
 * opens with the cycle, each thread waiting for the mutex the other
 * holds, and their stacks come first; --json lists the cycle's tids. */
Test(lock_waits, finds_a_deadlock, .timeout = 60)
{
	char text[1024], p[32], want[160];
	pid_t pid = start_locks("deadlock", text, sizeof(text));
	pid_t d1 = task_by_name(pid, "lk-dead1"), d2 = task_by_name(pid, "lk-dead2");
	const char *argv[] = { "tracerd", "dump", "--pid", p, "--json", NULL };
	struct run_result r;
	const char *first;

	cr_assert(d1 > 0 && d2 > 0);
	dump_text(pid, &r, NULL, NULL);
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_expect(!strncmp(r.out, "Found 1 deadlock.\n", 18), "%.400s", r.out);
	snprintf(want, sizeof(want), "thread %d (lk-dead1) waiting for mutex 0x%llx held by %d (lk-dead2)",
		(int)d1, fx_listed_addr(text, "dl_b"), (int)d2);
	cr_expect(strstr(r.out, want), "no \"%s\" in\n%.600s", want, r.out);
	snprintf(want, sizeof(want), "thread %d (lk-dead2) waiting for mutex 0x%llx held by %d (lk-dead1)",
		(int)d2, fx_listed_addr(text, "dl_a"), (int)d1);
	cr_expect(strstr(r.out, want), "no \"%s\" in\n%.600s", want, r.out);
	/* the first stacks printed are the deadlocked threads' */
	first = strstr(r.out, "\nthread ");
	cr_assert_not_null(first);
	cr_expect(!strncmp(first, "\nthread ", 8) &&
			  (strstr(first, "(lk-dead1)") == strchr(first + 8, '(') ||
				  strstr(first, "(lk-dead2)") == strchr(first + 8, '(')),
		"%.300s", first);
	run_result_free(&r);
	snprintf(p, sizeof(p), "%d", (int)pid);
	run_tracerd(&r, argv);
	cr_assert_eq(r.status, 0, "%s", r.err);
	{
		char a[64], b[64];

		snprintf(a, sizeof(a), "\"deadlocks\": [[%d, %d]]", (int)d1, (int)d2);
		snprintf(b, sizeof(b), "\"deadlocks\": [[%d, %d]]", (int)d2, (int)d1);
		cr_expect(strstr(r.out, a) || strstr(r.out, b), "%.300s", r.out);
	}
	run_result_free(&r);
	fx_stop(pid);
}

/* ---- waits recorded in wall mode, read back by report --format waits */

/* The JSON line of report --format waits --json whose waiters include
 * thread name (one site per line). */
static char *site_of(const char *out, const char *name)
{
	char key[64];
	const char *p, *b, *e;

	snprintf(key, sizeof(key), "\"name\":\"%s\"}", name);
	p = strstr(out, key);
	cr_assert_not_null(p, "no wait site of %s in\n%s", name, out);
	for (b = p; b > out && b[-1] != '\n'; b--)
		;
	e = strchr(p, '\n');
	return strndup(b, e ? (size_t)(e - b) : strlen(b));
}

static void expect_site(const char *out, const char *name, const char *kind,
	unsigned long long object, pid_t owner, const char *owner_name)
{
	char *s = site_of(out, name), want[128];

	snprintf(want, sizeof(want), "{\"kind\":\"%s\",", kind);
	cr_expect(!strncmp(s, want, strlen(want)), "%s: not a %s wait: %.400s", name, kind, s);
	if (object) {
		snprintf(want, sizeof(want), "\"object\":\"0x%llx\"", object);
		cr_expect(strstr(s, want), "%s: not 0x%llx: %.400s", name, object, s);
	}
	if (owner) {
		/* the owner that held it longest comes first */
		snprintf(want, sizeof(want), "\"owners\":[{\"thread\":\"%s\",\"tid\":%d,", owner_name,
			(int)owner);
		cr_expect(strstr(s, want), "%s: not held by %d: %.400s", name, (int)owner, s);
	} else {
		cr_expect(strstr(s, "\"owners\":[]"), "%s: no owner: %.400s", name, s);
	}
	cr_expect(!strstr(s, "\"wait_ns\":0,"), "%s: some wait: %.400s", name, s);
	cr_expect(!strstr(s, "\"stack\":[]"), "%s: a stack: %.400s", name, s);
	free(s);
}

/* A wall recording of fx_locks: each waiter's episode names its object
 * (the address the program prints), the thread that holds it, and both
 * stacks; the waits JSON says so for every kind.  Any length of recording
 * will do: every waiter waits all of it. */
Test(lock_waits, waits_recorded_with_their_owners, .timeout = 120)
{
	char text[1024], dir[] = "/tmp/tracerd-waits-XXXXXX", repo[64];
	pid_t pid = start_locks(NULL, text, sizeof(text));
	const char *rep[] = { "tracerd", "report", repo, "--format", "waits", "--json", NULL };
	const char *txt[] = { "tracerd", "report", repo, "--format", "waits", NULL };
	struct run_result r;
	char cmd[128];

	cr_assert_not_null(mkdtemp(dir));
	snprintf(repo, sizeof(repo), "%s/repo", dir);
	record_locks(pid, "wall", repo);
	run_tracerd(&r, rep);
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_expect(!strncmp(r.out, "{\"mode\":\"wall\",", 15), "%.200s", r.out);
	expect_site(r.out, "lk-mutex", "mutex", fx_listed_addr(text, "mutex"),
		task_by_name(pid, "lk-mholder"), "lk-mholder");
	expect_site(r.out, "lk-pi", "mutex", fx_listed_addr(text, "pi"), task_by_name(pid, "lk-piholder"),
		"lk-piholder");
	expect_site(r.out, "lk-rdlock", "rwlock", fx_listed_addr(text, "rwlock"),
		task_by_name(pid, "lk-wholder"), "lk-wholder");
	expect_site(r.out, "lk-cond", "condvar", fx_listed_addr(text, "cond"), 0, NULL);
	expect_site(r.out, "lk-sem", "semaphore", fx_listed_addr(text, "sem"), 0, NULL);
	expect_site(r.out, "lk-join", "join", 0, task_by_name(pid, "lk-long"), "lk-long");
	expect_site(r.out, "lk-pipe", "fd", 0, 0, NULL);
	expect_site(r.out, "lk-long", "sleep", 0, 0, NULL);
	{
		char *s = site_of(r.out, "lk-pipe");

		cr_expect(strstr(s, "\"what\":\"pipe:["), "%.300s", s);
		free(s);
		s = site_of(r.out, "lk-mutex");
		/* where it waits, and where its owner is */
		cr_expect(strstr(s, "\"pthread_mutex_lock") || strstr(s, "___pthread_mutex_lock"),
			"%.400s", s);
		cr_expect(strstr(s, "\"holder\""), "the owner's stack: %.400s", s);
		free(s);
	}
	run_result_free(&r);
	run_tracerd(&r, txt);
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_expect(strstr(r.out, "at tick resolution"), "%.300s", r.out);
	cr_expect(strstr(r.out, "(lk-mholder) for "), "%.2000s", r.out);
	run_result_free(&r);
	fx_stop(pid);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	cr_expect_eq(system(cmd), 0);
}

/* ---- the waits in pprof, as go tool pprof reads them */

/* Sum of a JSON number field over the waits --json sites of thread name
 * (one site a line). */
static unsigned long long sites_sum(const char *out, const char *name, const char *field)
{
	char key[64], fkey[32];
	unsigned long long sum = 0;
	unsigned n = 0;

	snprintf(key, sizeof(key), "\"name\":\"%s\"}", name);
	snprintf(fkey, sizeof(fkey), "\"%s\":", field);
	for (const char *p = out; (p = strstr(p, key)); n++) {
		const char *b = p, *f;

		while (b > out && b[-1] != '\n')
			b--;
		f = strstr(b, fkey);
		cr_assert(f && f < p, "no %s in the site of %s", field, name);
		sum += strtoull(f + strlen(fkey), NULL, 10);
		p = strchrnul(p, '\n');
	}
	cr_assert_gt(n, 0, "no wait site of %s in\n%s", name, out);
	return sum;
}

/* A top-level JSON number (the first field of that name). */
static unsigned long long json_u64(const char *out, const char *field)
{
	char key[32];
	const char *p;

	snprintf(key, sizeof(key), "\"%s\":", field);
	p = strstr(out, key);
	cr_assert_not_null(p, "no %s in %.300s", field, out);
	return strtoull(p + strlen(key), NULL, 10);
}

/* The total of a go tool pprof -top: "... of 11999999880ns total". */
static double pprof_total(const char *top)
{
	const char *p = strstr(top, "% of ");

	cr_assert_not_null(p, "no total in\n%s", top);
	return strtod(p + 5, NULL);
}

/* The cum column of function fn in a go tool pprof -top (the largest, if
 * several rows name it); leading underscores and " (inline)" are ignored,
 * since libc's symbols differ between versions.  -1 if no row names it. */
static double pprof_cum(const char *top, const char *fn)
{
	double best = -1;

	for (const char *p = top; *p;) {
		const char *end = strchrnul(p, '\n'), *q = p, *cols[5];
		char name[256];
		int k;

		for (k = 0; k < 5; k++) {
			while (q < end && *q == ' ')
				q++;
			cols[k] = q;
			while (q < end && *q != ' ')
				q++;
		}
		while (q < end && *q == ' ')
			q++;
		snprintf(name, sizeof(name), "%.*s", (int)(end - q), q);
		if (strstr(name, " (inline)"))
			*strstr(name, " (inline)") = '\0';
		if (q < end && (cols[0][0] >= '0' && cols[0][0] <= '9') &&
			!strcmp(name + strspn(name, "_"), fn) && strtod(cols[3], NULL) > best)
			best = strtod(cols[3], NULL);
		p = *end ? end + 1 : end;
	}
	return best;
}

/* The values of label key in a go tool pprof -tags: its section, up to
 * the blank line after it. */
static char *tag_section(const char *tags, const char *key)
{
	char k[64];
	const char *p, *e;

	snprintf(k, sizeof(k), " %s: Total", key);
	p = strstr(tags, k);
	cr_assert_not_null(p, "no label %s in\n%s", key, tags);
	e = strstr(p, "\n\n");
	return strndup(p, e ? (size_t)(e + 1 - p) : strlen(p));
}

static void expect_tag(const char *tags, const char *key, const char *value)
{
	char *s = tag_section(tags, key), want[96];

	snprintf(want, sizeof(want), "): %s\n", value);
	cr_expect(strstr(s, want), "label %s has no value %s:\n%s", key, value, s);
	free(s);
}

/* A wall recording of fx_locks in pprof: the wall profile is the default
 * view as before, and its wait episodes are the delay (wait time) and
 * contentions (episodes) views of go tool pprof, with the totals of the
 * waits report, the fixture's waiting functions, and labels naming the
 * object and its owner. */
Test(lock_waits, waits_in_pprof_read_by_go_tool_pprof, .timeout = 180)
{
	char text[1024], dir[] = "/tmp/tracerd-waitspb-XXXXXX", repo[64], pb[96];
	const char *js[] = { "tracerd", "report", repo, "--format", "waits", "--json", NULL };
	const char *top[] = { "tracerd", "report", repo, "--limit", "1", NULL };
	const char *pprof[] = { "tracerd", "report", repo, "-f", "pprof", "-o", pb, NULL };
	unsigned long long wait_ns, episodes, tick_ns, samples = 0, mutex_ns, pi_ns, mutex_n;
	char go[512], cmd[1024], want[64], *out;
	struct run_result r;
	pid_t pid, holder;
	double v;

	need_command("go", "golang-go");
	cr_assert_not_null(mkdtemp(dir));
	snprintf(repo, sizeof(repo), "%s/repo", dir);
	snprintf(pb, sizeof(pb), "%s/wall.pb.gz", dir);
	/* offline and inside dir: no binary to symbolize, no module cache */
	snprintf(go, sizeof(go),
		"HOME=%s GOCACHE=%s/gocache GOPATH=%s/go GOPROXY=off GOFLAGS=-mod=mod "
		"PPROF_BINARY_PATH=/nonexistent go tool pprof -symbolize=none -nodefraction=0 "
		"-nodecount=1000",
		dir, dir, dir);
	pid = start_locks(NULL, text, sizeof(text));
	record_locks(pid, "wall", repo);

	/* what tracerd itself says of this recording */
	run_tracerd(&r, js);
	cr_assert_eq(r.status, 0, "%s", r.err);
	wait_ns = json_u64(r.out, "wait_ns");
	episodes = json_u64(r.out, "episodes");
	tick_ns = json_u64(r.out, "tick_ns");
	mutex_ns = sites_sum(r.out, "lk-mutex", "wait_ns");
	mutex_n = sites_sum(r.out, "lk-mutex", "count");
	pi_ns = sites_sum(r.out, "lk-pi", "wait_ns");
	cr_assert_gt(mutex_ns, 0, "%s", r.out);
	cr_assert_gt(episodes, 0);
	run_result_free(&r);
	run_tracerd(&r, top);
	cr_assert_eq(r.status, 0, "%s", r.err);
	for (const char *l = r.out; l && !samples; l = strchr(l, '\n'), l = l ? l + 1 : NULL) {
		unsigned long long n;
		int end = 0;

		if (sscanf(l, "%llu samples%n", &n, &end) == 1 && end)
			samples = n; /* the header line "1188 samples" */
	}
	cr_assert_gt(samples, 0, "%s", r.out);
	run_result_free(&r);
	run_tracerd(&r, pprof);
	cr_assert_eq(r.status, 0, "%s", r.err);
	run_result_free(&r);
	holder = task_by_name(pid, "lk-mholder");
	fx_stop(pid);

	/* four sample types, the wall profile's count the default */
	snprintf(cmd, sizeof(cmd), "%s -raw %s 2>&1", go, pb);
	out = shell_output(cmd, NULL);
	cr_expect(strstr(out, "\nsamples/count[dflt] wall/nanoseconds contentions/count "
			      "delay/nanoseconds\n"),
		"%.600s", out);
	free(out);
	/* the default view: the wall samples, as many as tracerd counts */
	snprintf(cmd, sizeof(cmd), "%s -top %s 2>&1", go, pb);
	out = shell_output(cmd, NULL);
	cr_assert(strstr(out, "Type: samples\n"), "%s", out);
	cr_expect_eq((unsigned long long)pprof_total(out), samples, "%s", out);
	free(out);
	snprintf(cmd, sizeof(cmd), "%s -sample_index=wall -unit=ns -top %s 2>&1", go, pb);
	out = shell_output(cmd, NULL);
	cr_expect_eq((unsigned long long)pprof_total(out), samples * tick_ns, "%s", out);
	free(out);
	/* delay: the waits report's time, all of it and per waiter: lk-mutex
	 * waits in w_mutex and pthread_mutex_lock, lk-pi in w_pi */
	snprintf(cmd, sizeof(cmd), "%s -sample_index=delay -unit=ns -top %s 2>&1", go, pb);
	out = shell_output(cmd, NULL);
	cr_assert(strstr(out, "Type: delay\n"), "%s", out);
	v = pprof_total(out);
	cr_expect(v >= 0.999 * (double)wait_ns && v <= 1.001 * (double)wait_ns,
		"delay total %.0f ns, the waits report %llu ns:\n%s", v, wait_ns, out);
	v = pprof_cum(out, "w_mutex");
	cr_expect(v >= 0.999 * (double)mutex_ns && v <= 1.001 * (double)mutex_ns,
		"w_mutex %.0f ns, lk-mutex waited %llu ns:\n%s", v, mutex_ns, out);
	v = pprof_cum(out, "w_pi");
	cr_expect(v >= 0.999 * (double)pi_ns && v <= 1.001 * (double)pi_ns,
		"w_pi %.0f ns, lk-pi waited %llu ns:\n%s", v, pi_ns, out);
	/* lk-pi's too where pthread_mutex_lock calls the PI path (glibc 2.36
	 * jumps there: a tail call leaves no frame) */
	v = pprof_cum(out, "pthread_mutex_lock");
	cr_expect((v >= 0.999 * (double)mutex_ns && v <= 1.001 * (double)mutex_ns) ||
			(v >= 0.999 * (double)(mutex_ns + pi_ns) &&
				v <= 1.001 * (double)(mutex_ns + pi_ns)),
		"pthread_mutex_lock %.0f ns, lk-mutex waited %llu ns, lk-pi %llu ns:\n%s", v,
		mutex_ns, pi_ns, out);
	cr_expect_gt(pprof_cum(out, "w_rdlock"), 0, "%s", out);
	cr_expect_gt(pprof_cum(out, "w_pipe"), 0, "%s", out);
	free(out);
	/* contentions: the episodes */
	snprintf(cmd, sizeof(cmd), "%s -sample_index=contentions -top %s 2>&1", go, pb);
	out = shell_output(cmd, NULL);
	cr_assert(strstr(out, "Type: contentions\n"), "%s", out);
	cr_expect_eq((unsigned long long)pprof_total(out), episodes, "%s", out);
	cr_expect_eq((unsigned long long)pprof_cum(out, "w_mutex"), mutex_n, "%s", out);
	free(out);
	/* lk-mutex's wait: its kind, object and owner as labels */
	snprintf(cmd, sizeof(cmd), "%s -sample_index=delay -tagfocus='thread=^lk-mutex$' -tags %s 2>&1",
		go, pb);
	out = shell_output(cmd, NULL);
	expect_tag(out, "wait", "mutex");
	snprintf(want, sizeof(want), "0x%llx", fx_listed_addr(text, "mutex"));
	expect_tag(out, "object", want);
	expect_tag(out, "owner", "lk-mholder");
	snprintf(want, sizeof(want), "%d", (int)holder);
	expect_tag(out, "owner_tid", want);
	cr_expect(!strstr(out, "lk-pi"), "lk-mutex's wait alone:\n%s", out);
	free(out);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	cr_expect_eq(system(cmd), 0);
}

/* ---- the same waits in the html page (test/tools/html-data.js reads its
 * data as a browser does) */

/* The tab-separated fields of a line of html-data.js' output (modified in
 * place): up to n, their count. */
static int fields(char *line, char **f, int n)
{
	int k = 0;

	for (char *s = line; s && k < n; k++) {
		f[k] = s;
		s = strchr(s, '\t');
		if (s)
			*s++ = '\0';
	}
	return k;
}

/* The JSON list that follows key in text, as a string ("[...]", no list
 * inside it). */
static char *list_after(const char *text, const char *key)
{
	const char *p = strstr(text, key), *e;

	cr_assert_not_null(p, "no %s in %.400s", key, text);
	p += strlen(key);
	e = strchr(p, ']');
	cr_assert(*p == '[' && e, "no list after %s in %.400s", key, text);
	return strndup(p, (size_t)(e - p + 1));
}

/* The page's site of kind and object whose waiting stack is stack (a copy
 * of its line), or NULL. */
static char *page_site(const char *data, const char *kind, const char *object, const char *stack)
{
	char key[160];

	snprintf(key, sizeof(key), "\t\"%s\"\t\"%s\"\t", kind, object);
	for (const char *p = data; (p = strstr(p, "site\t")); p++) {
		const char *e = strchr(p, '\n');
		char *line = strndup(p, e ? (size_t)(e - p) : strlen(p)), *f[12];

		if (strstr(line, key) && fields(line, f, 12) == 12 && !strcmp(f[10], stack)) {
			free(line);
			return strndup(p, e ? (size_t)(e - p) : strlen(p));
		}
		free(line);
	}
	return NULL;
}

/* The waits view of a wall recording's page: its sites are --format
 * waits' sites; the mutex's leaf in the waits flame graph weighs the time
 * --format waits says it was waited for, under the kind and the waiter's
 * stack; its owner is lk-mholder, with its stack.  A cpu recording's page
 * has no waits view. */
Test(lock_waits, waits_in_the_html_page, .timeout = 180)
{
	char text[1024], dir[] = "/tmp/tracerd-hwaits-XXXXXX", repo[64], page[80];
	char cpu_repo[64], cpu_page[80], obj[32], want[256], cmd[512], *data, *site, *f[12];
	const char *json[] = { "tracerd", "report", repo, "-f", "waits", "--json", "--limit", "0",
		NULL };
	unsigned long long nsites = 0, wait_ns = 0, graph_ns = 0, site_ns;
	struct run_result r;
	int status, n = 0;
	pid_t pid, holder;

	need_command("node", "nodejs");
	pid = start_locks(NULL, text, sizeof(text));
	holder = task_by_name(pid, "lk-mholder");
	cr_assert_gt(holder, 0);
	cr_assert_not_null(mkdtemp(dir));
	snprintf(repo, sizeof(repo), "%s/wall", dir);
	snprintf(page, sizeof(page), "%s/wall.html", dir);
	record_locks(pid, "wall", repo);
	html_of(repo, page);
	data = html_page_data(page, &status);
	cr_assert_eq(status, 0, "%s", data);
	run_tracerd(&r, json);
	cr_assert_eq(r.status, 0, "%s", r.err);

	/* every site of --format waits, and only those, all the time waited */
	for (const char *s = r.out; (s = strstr(s, "\n{\"kind\":")); s++)
		n++;
	cr_assert(sscanf(r.out, "{\"mode\":\"wall\",\"tick_ns\":%*u,\"wait_ns\":%llu", &wait_ns) == 1,
		"%.200s", r.out);
	{
		const char *w = strstr(data, "\nwaits\t");

		cr_assert(w && sscanf(w, "\nwaits\t%llu\t%llu\t%llu", &nsites, &site_ns, &graph_ns) == 3,
			"%s", data);
	}
	cr_expect_eq(nsites, (unsigned long long)n, "%llu sites in the page, %d in --format waits",
		nsites, n);
	cr_expect_eq(site_ns, wait_ns, "the page's waits add up to %llu ns, --format waits' to %llu",
		site_ns, wait_ns);
	cr_expect_eq(graph_ns, wait_ns, "the waits flame graph weighs %llu ns of %llu", graph_ns,
		wait_ns);
	cr_expect_gt(wait_ns, 0);

	/* the mutex: the same site in both, weighed the same in the graph */
	{
		char *s = site_of(r.out, "lk-mutex"), *stack = list_after(s, "\"stack\":");
		char *owners = strstr(s, "\"owners\":"), *ostack;
		unsigned long long json_ns = 0;

		cr_assert(sscanf(strstr(s, "\"wait_ns\":"), "\"wait_ns\":%llu", &json_ns) == 1);
		cr_assert_not_null(owners, "%s", s);
		ostack = list_after(owners, "\"stack\":");
		snprintf(obj, sizeof(obj), "0x%llx", fx_listed_addr(text, "mutex"));
		site = page_site(data, "mutex", obj, stack);
		cr_assert_not_null(site, "no mutex %s waited for in %s in the page:\n%s", obj, stack,
			data);
		cr_assert_eq(fields(site, f, 12), 12);
		snprintf(want, sizeof(want), "\"mutex %s\"", obj);
		cr_expect_str_eq(f[5], want, "the leaf names the kind and the object");
		cr_expect_str_eq(f[6], "\"mutex\"", "the graph's root below all waits is the kind");
		cr_expect_eq(strtoull(f[7], NULL, 10), json_ns, "the leaf weighs %s ns, --format waits "
								 "says %llu", f[7], json_ns);
		cr_expect_eq(strtoull(f[8], NULL, 10), json_ns, "the site's total: %s ns", f[8]);
		cr_expect_gt(json_ns, 0);
		/* the owner, by name and tid, and where it was */
		snprintf(want, sizeof(want), "[[\"lk-mholder\",%d,", (int)holder);
		cr_expect(!strncmp(f[11], want, strlen(want)), "owner %s, want lk-mholder (%d)", f[11],
			(int)holder);
		cr_expect(strstr(f[11], ostack), "the owner's stack %s in %s", ostack, f[11]);
		cr_expect(strstr(ostack, "\"holder\""), "lk-mholder sleeps in holder(): %s", ostack);
		free(s);
		free(stack);
		free(ostack);
		free(site);
	}
	run_result_free(&r);
	free(data);

	/* a cpu recording of the same threads: no waits view */
	snprintf(cpu_repo, sizeof(cpu_repo), "%s/cpu", dir);
	snprintf(cpu_page, sizeof(cpu_page), "%s/cpu.html", dir);
	record_locks(pid, "cpu", cpu_repo);
	html_of(cpu_repo, cpu_page);
	data = html_page_data(cpu_page, &status);
	cr_assert_eq(status, 0, "%s", data);
	cr_expect(!strncmp(data, "mode\t\"cpu\"\n", 11) && strstr(data, "\nnowaits\n"),
		"a cpu recording's page has no waits:\n%s", data);
	free(data);

	fx_stop(pid);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	cr_expect_eq(system(cmd), 0);
}

/* What a browser draws of a wall recording's page: the waits table names
 * lk-mholder in the mutex's row, and w_mutex where lk-mutex waits. */
Test(lock_waits, waits_table_names_the_owner_in_chromium, .timeout = 180)
{
	char text[1024], dir[] = "/tmp/tracerd-hwaits-XXXXXX", repo[64], page[80], url[128];
	char want[256], cmd[128], *dom, *log, *row, *end;
	const char *td;
	pid_t pid, holder;

	need_command("chromium", "chromium");
	pid = start_locks(NULL, text, sizeof(text));
	holder = task_by_name(pid, "lk-mholder");
	cr_assert_gt(holder, 0);
	cr_assert_not_null(mkdtemp(dir));
	snprintf(repo, sizeof(repo), "%s/wall", dir);
	snprintf(page, sizeof(page), "%s/wall.html", dir);
	record_locks(pid, "wall", repo);
	fx_stop(pid);
	html_of(repo, page);
	snprintf(url, sizeof(url), "file://%s#view=waits", page);
	dom = chromium_page(url, "--dump-dom", &log);
	snprintf(want, sizeof(want), "<td>0x%llx</td>", fx_listed_addr(text, "mutex"));
	td = strstr(dom, want);
	cr_assert_not_null(td, "no row of %s in the table:\n%.3000s", want,
		strstr(dom, "id=\"waits\"") ? strstr(dom, "id=\"waits\"") : dom);
	for (row = dom + (td - dom); row > dom && strncmp(row, "<tr>", 4); row--)
		;
	end = strstr(td, "</tr>");
	cr_assert_not_null(end);
	*end = '\0';
	snprintf(want, sizeof(want), "<summary>lk-mholder (%d): ", (int)holder);
	cr_expect(strstr(row, want), "the mutex's row names its owner: %s", row);
	/* where the wait began: the waiter's function and the lock's, before
	 * the kernel's frames (where they were recorded) */
	cr_expect(strstr(row, "<summary>w_mutex \u2192 ") &&
			  !strstr(row, "entry_SYSCALL_64_after_hwframe</summary>"),
		"the mutex's row names where lk-mutex waits: %s", row);
	/* kernel frames, where the recording has them, drawn as the kernel's */
	if (strstr(row, " [kernel: "))
		cr_expect(strstr(dom, "class=\"f k-k w\""), "no kernel frame drawn as one");
	free(dom);
	free(log);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	cr_expect_eq(system(cmd), 0);
}
