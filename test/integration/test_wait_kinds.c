/* SPDX-License-Identifier: GPL-2.0-or-later */
/* A wait episode's kind and its stack say the same: fx_owners' posters
 * and reader nap 1 ms and then wait for a lock, in turn, hundreds of
 * times a second, so a kind read at one moment and a stack taken at
 * another would often disagree (a sleep in __lll_lock_wait, an rwlock
 * wait in nanosleep).  The truth is glibc's own code: the innermost of
 * the waiter's user frames that is one of glibc's wait functions says
 * what it waits on.  Over a wall recording of 8 s, in which the build
 * before the fix (2026-11-27, offcpu as root) put 9 to 19 of 631 to 896
 * such episodes under the wrong kind in three runs, none may. */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../helpers.h"

/* The kind a glibc function waits for, by its name without glibc's
 * decorations (__GI_, leading underscores); NULL if it says none. */
static const char *kind_of_function(const char *f)
{
	static const struct {
		const char *prefix, *kind;
	} fns[] = {{"clock_nanosleep", "sleep"}, {"nanosleep", "sleep"}, {"lll_lock_wait", "mutex"},
		{"pthread_mutex_lock", "mutex"}, {"pthread_rwlock_", "rwlock"}};

	if (!strncmp(f, "__GI_", 5))
		f += 5;
	while (*f == '_')
		f++;
	for (size_t i = 0; i < sizeof(fns) / sizeof(fns[0]); i++)
		if (!strncmp(f, fns[i].prefix, strlen(fns[i].prefix)))
			return fns[i].kind;
	return NULL;
}

/* Of a site of report --format waits --json: the kind its stack's
 * innermost wait function says (its user frames, after kernel_frames),
 * into want; false if none says one. */
static bool stack_kind(const char *site, char *want, size_t len)
{
	const char *at = strstr(site, "\"kernel_frames\":"), *st = strstr(site, "\"stack\":[");
	unsigned k = 0, i = 0;

	cr_assert(at && st && sscanf(at, "\"kernel_frames\":%u", &k) == 1, "%s", site);
	for (const char *f = st + 9; *f == '"'; i++) {
		const char *e = strchr(f + 1, '"');
		char name[128];

		cr_assert_not_null(e, "%s", site);
		snprintf(name, sizeof(name), "%.*s", (int)(e - f - 1), f + 1);
		if (i >= k && kind_of_function(name)) {
			snprintf(want, len, "%s", kind_of_function(name));
			return true;
		}
		f = e + 1 + (e[1] == ',');
	}
	return false;
}

Test(lock_waits, kind_agrees_with_the_stack, .timeout = 180)
{
	char text[512], dir[] = "/tmp/tracerd-kinds-XXXXXX", repo[64], p[32], cmd[96];
	const char *rec[] = {
		"tracerd", "--pid", p, "--mode", "wall", "-d", "8s", "-q", "-r", repo, NULL};
	const char *rep[] = {
		"tracerd", "report", repo, "--format", "waits", "--json", "--limit", "0", NULL};
	unsigned checked = 0, wrong = 0, sites = 0;
	char first[1024] = "";
	struct run_result r;
	pid_t fx = fx_start_listing(FX("fx_owners"), NULL, text, sizeof(text));

	cr_assert_gt(fx, 0);
	cr_assert_not_null(mkdtemp(dir));
	snprintf(repo, sizeof(repo), "%s/repo", dir);
	snprintf(p, sizeof(p), "%d", (int)fx);
	run_tracerd(&r, rec);
	fx_stop(fx);
	cr_assert_eq(r.status, 0, "%s", r.err);
	run_result_free(&r);
	run_tracerd(&r, rep);
	cr_assert_eq(r.status, 0, "%s", r.err);
	for (const char *s = strstr(r.out, "{\"kind\":\""); s;
		s = strstr(s + 1, "\n{\"kind\":\"")) {
		char *site, kind[32] = "", want[32];
		unsigned count = 0;

		s += *s == '\n';
		site = strndup(s, strcspn(s, "\n"));
		cr_assert(sscanf(site, "{\"kind\":\"%31[^\"]\"", kind) == 1 &&
				  sscanf(strstr(site, "\"count\":"), "\"count\":%u", &count) == 1,
			"%s", site);
		sites++;
		if (stack_kind(site, want, sizeof(want))) {
			checked += count;
			if (strcmp(kind, want)) {
				wrong += count;
				if (!first[0])
					snprintf(first, sizeof(first), "%s", site);
			}
		}
		free(site);
	}
	cr_log_info(
		"%u episodes whose stack names their wait, %u under another kind", checked, wrong);
	cr_assert_gt(checked, 50, "too few episodes to tell (%u sites):\n%s", sites, r.out);
	cr_expect_eq(wrong, 0, "%u of %u episodes' kind contradicts their stack: %s", wrong,
		checked, first);
	run_result_free(&r);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	cr_expect_eq(system(cmd), 0);
}
