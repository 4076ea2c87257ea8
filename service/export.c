/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The service's exporter: the process that pushes each interval's profiles
 * to the server [Export] names (tracerd.conf(5)).
 *
 *   service loop --FOLLOW/GONE (struct exp_msg)--> exporter process
 *     every Interval, for each rule and each process it followed in the
 *     window: the rule's recent chunks (report/, rp_load with the window
 *     and the pid) -> gzipped pprof (rp_pprof) -> one request in the
 *     spool (Directory/.export/SEQ.req) -> libcurl POST, oldest first
 *   exporter --LOG--> service loop (the journal)
 *
 * A process of its own, forked by the loop like the workers, so that a
 * slow or dead server, TLS and libcurl's resolver never hold the loop or
 * a sampler; it only reads the repositories.  What it guarantees: a
 * request is spooled (written whole, then renamed) before it is sent and
 * removed only once the server took it, so an outage shorter than the
 * spool's bound loses no interval and they go out in order; past the
 * bound the oldest are dropped and counted.  A failure and the recovery
 * are said once each, with counts.  What it leaves: matching and
 * attaching (the loop and the workers), the recording (the workers). */
#define _GNU_SOURCE
#include "export-internal.h"

#include <curl/curl.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <syslog.h>
#include <unistd.h>

#include "../common/buf.h"
#include "../report/report.h"

#define NS 1000000000ull
/* A window is read once every rule that followed a process in it has
 * recorded past its end (the writer unwinds late, more so under load, and
 * writes in time order), EXP_LAG_NS after its end at the soonest; a rule
 * with nothing more to write (its processes idle in cpu mode) is waited
 * for EXP_MAX_LAG_NS at the most. */
#define EXP_LAG_NS (NS / 2)
#define EXP_MAX_LAG_NS (15 * NS)
#define EXP_PAST_NS (NS / 4)
#define EXP_CONNECT_S 5L
#define EXP_TIMEOUT_S 30L
#define EXP_RETRY_MIN_NS NS
#define EXP_PROCS_MAX 4096
#define EXP_CATCH_UP_NS (3600 * NS) /* windows older than this are not made late */

/* A process a rule followed: exported for every window it lived in. */
struct exp_proc {
	int rule;
	pid_t pid;
	uint64_t start_time;
	uint64_t gone_ns; /* real time it was said gone, 0: alive */
	char exe[256], unit[128]; /* label values, already made safe */
};

/* owns: procs, the spool's descriptor, the curl handle */
struct exporter {
	const struct svc_config *cfg;
	const char *proc_root;
	int fd;		     /* the loop's socket */
	struct exp_spool sp; /* Directory/.export */
	struct exp_proc *procs;
	size_t nprocs, cap;
	uint64_t until_ns;   /* the end of the next window (real time) */
	uint64_t retry_ns;   /* monotonic: when to try sending again */
	uint64_t backoff_ns;
	char host[64];
	CURL *curl;
	/* an outage, said when it starts and when it ends */
	bool failing;
	uint64_t fail_start_ns, sent_in_outage, lost_in_outage, rejected;
	bool full_said, rejected_said;
};

static void say(struct exporter *x, int prio, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void say(struct exporter *x, int prio, const char *fmt, ...)
{
	struct exp_msg m = { .kind = EXP_MSG_LOG, .prio = prio };
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(m.text, sizeof(m.text), fmt, ap);
	va_end(ap);
	while (send(x->fd, &m, sizeof(m), MSG_NOSIGNAL) < 0 && errno == EINTR)
		;
}

/* s as a label value: what Pyroscope's name{k=v,...} and a journal line
 * take without ambiguity; everything else '_', cut to len - 1 bytes (a
 * target chooses its exe's path and its cgroup's name) */
void exp_label_safe(char *dst, size_t len, const char *s)
{
	size_t i;

	for (i = 0; s[i] && i + 1 < len; i++) {
		unsigned char ch = (unsigned char)s[i];

		dst[i] = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
				 (ch >= '0' && ch <= '9') || strchr("_./:@+-", ch) ?
			(char)ch : '_';
	}
	dst[i] = '\0';
}

/* ---- the token */

int svc_token_read(const char *path, char *buf, size_t len, char *why, size_t why_len)
{
	struct stat st;
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK | O_NOFOLLOW), e;

	if (fd < 0) {
		e = -errno;
		snprintf(why, why_len, "cannot open %s: %s%s", path, strerror(-e),
			e == -ELOOP ? " (a symbolic link: give the file itself)" : "");
		return e;
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		snprintf(why, why_len, "%s is not a regular file", path);
		e = -TD_E_NOTREG;
		goto out;
	}
	if (st.st_uid != 0 && st.st_uid != geteuid()) {
		snprintf(why, why_len, "%s belongs to uid %u: chown it to root", path,
			(unsigned)st.st_uid);
		e = -TD_E_NOTOWNER;
		goto out;
	}
	if (st.st_mode & 077) {
		snprintf(why, why_len, "%s can be read or written by its group or others, who "
			"could push as this machine: chmod 600 it", path);
		e = -TD_E_UNSAFE;
		goto out;
	}
	n = read(fd, buf, len);
	if (n < 0) {
		e = -errno;
		snprintf(why, why_len, "cannot read %s: %s", path, strerror(-e));
		goto out;
	}
	if ((size_t)n >= len) {
		snprintf(why, why_len, "%s is longer than %zu bytes; a token is one line", path,
			len - 1);
		e = -EFBIG;
		goto out;
	}
	buf[n] = '\0';
	buf[strcspn(buf, "\r\n")] = '\0';
	e = 0;
	for (char *s = buf; *s; s++)
		if ((unsigned char)*s <= 0x20 || (unsigned char)*s >= 0x7f)
			e = -EINVAL;
	if (e || !buf[0]) {
		snprintf(why, why_len, "%s must hold the token on its first line: printable "
			"ASCII, no spaces", path);
		e = -EINVAL;
	}
out:
	close(fd);
	return e;
}

/* The spool took a request, dropping dropped older ones to make room. */
static void spooled_dropping(struct exporter *x, unsigned dropped)
{
	if (!dropped)
		return;
	x->lost_in_outage += dropped;
	if (!x->full_said)
		say(x, LOG_WARNING, "export: the spool is full (%llu KiB, a share of MaxSize=): "
			"the oldest profiles not yet sent are dropped; %llu so far",
			(unsigned long long)(x->sp.max >> 10), (unsigned long long)x->sp.lost);
	x->full_said = true;
}

/* ---- sending */

static size_t discard_body(char *p, size_t size, size_t n, void *arg)
{
	(void)p;
	(void)arg;
	return size * n; /* the server's answer is not ours to keep */
}

/* POST one spooled request.  0: the server took it (2xx); 1: it refused
 * it for good (a 4xx other than 401, 403, 408, 429: resending cannot
 * help); -errno / -TD_E_* with why filled: try again later. */
static int post(struct exporter *x, const char *req, size_t len, char *why, size_t why_len)
{
	const char *nl1 = memchr(req, '\n', len), *nl2;
	char url[SVC_EXPORT_URL_MAX + 2100], ctype[96], auth[SVC_TOKEN_MAX + 32];
	struct curl_slist *h = NULL;
	long status = 0;
	CURLcode c;
	int e;

	nl2 = nl1 ? memchr(nl1 + 1, '\n', len - (size_t)(nl1 + 1 - req)) : NULL;
	if (!nl2 || (size_t)(nl1 - req) > 2048 || (size_t)(nl2 - nl1) > 64)
		return 1; /* not one of ours: dropped */
	snprintf(url, sizeof(url), "%s%.*s", x->cfg->export.url, (int)(nl1 - req), req);
	snprintf(ctype, sizeof(ctype), "Content-Type: %.*s", (int)(nl2 - nl1 - 1), nl1 + 1);
	h = curl_slist_append(h, ctype);
	h = curl_slist_append(h, "Expect:");
	if (x->cfg->export.token_file) {
		char token[SVC_TOKEN_MAX];

		/* read at each push: a token rotated on disk is taken at once */
		e = svc_token_read(x->cfg->export.token_file, token, sizeof(token), why, why_len);
		if (e < 0) {
			curl_slist_free_all(h);
			return e;
		}
		snprintf(auth, sizeof(auth), "Authorization: Bearer %s", token);
		memset(token, 0, sizeof(token));
		h = curl_slist_append(h, auth);
		memset(auth, 0, sizeof(auth));
	}
	curl_easy_reset(x->curl);
	curl_easy_setopt(x->curl, CURLOPT_URL, url);
	curl_easy_setopt(x->curl, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(x->curl, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(x->curl, CURLOPT_CONNECTTIMEOUT, EXP_CONNECT_S);
	curl_easy_setopt(x->curl, CURLOPT_TIMEOUT, EXP_TIMEOUT_S);
	curl_easy_setopt(x->curl, CURLOPT_HTTPHEADER, h);
	curl_easy_setopt(x->curl, CURLOPT_POST, 1L);
	curl_easy_setopt(x->curl, CURLOPT_POSTFIELDS, nl2 + 1);
	curl_easy_setopt(x->curl, CURLOPT_POSTFIELDSIZE_LARGE,
		(curl_off_t)(len - (size_t)(nl2 + 1 - req)));
	curl_easy_setopt(x->curl, CURLOPT_WRITEFUNCTION, discard_body);
	curl_easy_setopt(x->curl, CURLOPT_USERAGENT, "tracerd");
	c = curl_easy_perform(x->curl);
	curl_slist_free_all(h);
	if (c != CURLE_OK) {
		snprintf(why, why_len, "%s%s", curl_easy_strerror(c),
			c == CURLE_COULDNT_CONNECT || c == CURLE_COULDNT_RESOLVE_HOST ?
				" (under the installed unit the network opens only with the export "
				"drop-in: see tracerd.conf(5), [Export])" : "");
		return -EIO;
	}
	curl_easy_getinfo(x->curl, CURLINFO_RESPONSE_CODE, &status);
	if (status >= 200 && status < 300)
		return 0;
	snprintf(why, why_len, "the server answered HTTP %ld%s", status,
		status == 401 || status == 403 ? " (check TokenFile=)" : "");
	if (status >= 400 && status < 500 && status != 401 && status != 403 && status != 408 &&
		status != 429)
		return 1;
	return -EIO;
}

/* Send the spool, oldest first, until it is empty, a push fails, or a
 * second has passed (the loop then looks at the next window and comes
 * back). */
static void send_spool(struct exporter *x)
{
	struct exp_spooled *l = calloc(EXP_SPOOL_FILES_MAX, sizeof(*l));
	size_t n = l ? exp_spool_list(&x->sp, l, EXP_SPOOL_FILES_MAX) : 0;
	char why[300] = "";
	uint64_t start = td_now_ns();

	for (size_t i = 0; i < n; i++) {
		char *buf = NULL;
		size_t len = 0;
		int e;

		if (td_now_ns() - start > NS)
			break; /* a look at the next window, then the rest */
		e = exp_spool_read(&x->sp, &l[i], &buf, &len) == 0 ?
			post(x, buf, len, why, sizeof(why)) : 1;
		free(buf);
		if (e < 0) {
			x->backoff_ns = x->backoff_ns ?
				TD_MIN(x->backoff_ns * 2, x->cfg->export.interval_ns) : EXP_RETRY_MIN_NS;
			x->retry_ns = td_now_ns() + x->backoff_ns;
			if (!x->failing) {
				x->failing = true;
				x->fail_start_ns = td_now_ns();
				x->sent_in_outage = x->lost_in_outage = 0;
				say(x, LOG_WARNING, "export: cannot push to %s: %s; keeping the "
					"profiles in %s/%s (at most %llu MiB) and retrying",
					x->cfg->export.url, why, x->cfg->directory, SVC_EXPORT_SPOOL,
					(unsigned long long)(x->sp.max >> 20));
			}
			break;
		}
		if (e == 1) {
			/* said once until one is taken again: a server that
			 * refuses every profile would fill the journal */
			x->rejected++;
			if (!x->rejected_said)
				say(x, LOG_WARNING, "export: %s refused a profile for good (%s); "
					"dropped, %llu so far; the next refusals are counted, not said",
					x->cfg->export.url, why[0] ? why : "unreadable",
					(unsigned long long)x->rejected);
			x->rejected_said = true;
		} else {
			x->rejected_said = false;
		}
		exp_spool_remove(&x->sp, &l[i]);
		x->backoff_ns = 0;
		if (x->failing) {
			x->sent_in_outage++;
			if (!x->sp.count) {
				say(x, LOG_NOTICE, "export: %s answers again after %.0f s: %llu kept "
					"profile%s sent, %llu lost (the spool was full)",
					x->cfg->export.url,
					(double)(td_now_ns() - x->fail_start_ns) / 1e9,
					(unsigned long long)x->sent_in_outage,
					x->sent_in_outage == 1 ? "" : "s",
					(unsigned long long)x->lost_in_outage);
				x->failing = false;
				x->full_said = false;
			}
		}
	}
	free(l);
}

/* ---- one window */

/* The chunk files of the rule's repository written since from_ns (a
 * finished chunk's mtime is its last block): the window never needs the
 * older ones, and the repository may hold a gigabyte of them. */
static unsigned recent_chunks(const char *repo, uint64_t from_ns, char **paths, unsigned max)
{
	DIR *d = opendir(repo);
	struct dirent *de;
	unsigned n = 0;

	if (!d)
		return 0;
	while ((de = readdir(d)) && n < max) {
		size_t len = strlen(de->d_name);
		struct stat st;
		char path[PATH_MAX];

		if (de->d_name[0] != 'c' ||
			!(len > 4 && (!strcmp(de->d_name + len - 4, ".tcf") ||
				      (len > 9 && !strcmp(de->d_name + len - 9, ".tcf.part")))))
			continue;
		if ((size_t)snprintf(path, sizeof(path), "%s/%s", repo, de->d_name) >= sizeof(path))
			continue;
		if (lstat(path, &st) < 0 || !S_ISREG(st.st_mode) ||
			(uint64_t)st.st_mtim.tv_sec * NS + (uint64_t)st.st_mtim.tv_nsec + NS < from_ns)
			continue;
		paths[n] = strdup(path);
		if (paths[n])
			n++;
	}
	closedir(d);
	return n;
}

/* The window of rule's repository, every process of it: loaded once,
 * each process's profile a view of it (rp_view_pid).  0, -ENODATA for
 * nothing, -errno. */
static int window_load(struct exporter *x, int rule, uint64_t from, uint64_t until,
	struct rp_profile **ret)
{
	struct rp_filter f = { .from_ns = (int64_t)from, .to_ns = (int64_t)until - 1,
		.state = -1, .addresses = true };
	struct rp_load_report rep;
	char repo[PATH_MAX], *paths[64];
	unsigned n;
	int e = -ENODATA;

	snprintf(repo, sizeof(repo), "%s/%s", x->cfg->directory, x->cfg->rules[rule].name);
	/* a chunk renamed from .part meanwhile: list again */
	for (int attempt = 0; attempt < 3 && e == -ENODATA; attempt++) {
		n = recent_chunks(repo, from, paths, TD_ARRAY_SIZE(paths));
		e = n ? rp_load((const char *const *)paths, n, &f, ret, &rep, NULL) : -ENODATA;
		for (unsigned i = 0; i < n; i++)
			free(paths[i]);
		if (e == -ENOENT)
			e = -ENODATA;
		else if (e < 0 || !n)
			break;
	}
	return e;
}

/* proc's profile in the window (all: its rule's, window_load's) into
 * *ret (malloc'd): gzipped pprof or an OTLP request.  0, -ENODATA for no
 * sample, -errno. */
static int proc_encode(struct exporter *x, const struct rp_profile *all,
	const struct exp_proc *pr, uint64_t from, uint64_t until, char **ret, size_t *ret_len)
{
	const struct svc_rule *rule = &x->cfg->rules[pr->rule];
	struct rp_profile *p = NULL;
	FILE *mem;
	int e = rp_view_pid(all, (uint32_t)pr->pid, &p);

	if (e < 0)
		return e;
	if (!rp_samples(p)) {
		rp_view_free(p);
		return -ENODATA;
	}
	mem = open_memstream(ret, ret_len);
	if (!mem) {
		rp_view_free(p);
		return -ENOMEM;
	}
	if (x->cfg->export.protocol == SVC_EXPORT_OTLP) {
		struct rp_otlp_resource res = { .service = rule->name, .host = x->host,
			.exe = pr->exe, .unit = pr->unit, .labels = x->cfg->export.labels,
			.pid = (uint32_t)pr->pid, .from_ns = from, .until_ns = until };

		e = rp_otlp(mem, p, &res);
	} else {
		e = rp_pprof(mem, p);
	}
	if (fclose(mem) != 0 && e >= 0)
		e = -ENOMEM;
	rp_view_free(p);
	if (e < 0) {
		free(*ret);
		*ret = NULL;
	}
	return e < 0 ? e : 0;
}

/* Has rule recorded past until (by EXP_PAST_NS)? */
static bool rule_past(struct exporter *x, int rule, uint64_t until)
{
	struct rp_filter f = { .from_ns = (int64_t)(until + EXP_PAST_NS), .state = -1 };
	struct rp_load_report rep;
	struct rp_profile *p = NULL;
	char repo[PATH_MAX], *paths[64];
	unsigned n;
	bool past;

	snprintf(repo, sizeof(repo), "%s/%s", x->cfg->directory, x->cfg->rules[rule].name);
	n = recent_chunks(repo, until, paths, TD_ARRAY_SIZE(paths));
	past = n && rp_load((const char *const *)paths, n, &f, &p, &rep, NULL) == 0 &&
	       rp_samples(p) > 0;
	for (unsigned i = 0; i < n; i++)
		free(paths[i]);
	rp_free(p);
	return past;
}

/* May the window ending until be read now? */
static bool window_ready(struct exporter *x, uint64_t until, uint64_t real)
{
	bool seen[SVC_MAX_RULES] = { false };

	if (real >= until + EXP_MAX_LAG_NS)
		return true;
	for (size_t i = 0; i < x->nprocs; i++) {
		int r = x->procs[i].rule;

		if (seen[r] || (x->procs[i].gone_ns && x->procs[i].gone_ns < until -
								 x->cfg->export.interval_ns))
			continue;
		seen[r] = true;
		if (!rule_past(x, r, until))
			return false;
	}
	return true;
}

/* Pyroscope's /ingest target: name=RULE{labels}, the window in seconds */
static int pyroscope_target(struct exporter *x, const struct exp_proc *pr, uint64_t from,
	uint64_t until, char *buf, size_t len)
{
	const struct svc_rule *rule = &x->cfg->rules[pr->rule];
	char name[1400];
	char *esc;
	int n;

	n = snprintf(name, sizeof(name), "%s{host=%s,rule=%s,pid=%d%s%s%s%s%s%s}", rule->name,
		x->host, rule->name, (int)pr->pid, pr->exe[0] ? ",exe=" : "", pr->exe,
		pr->unit[0] ? ",unit=" : "", pr->unit, x->cfg->export.labels ? "," : "",
		x->cfg->export.labels ? x->cfg->export.labels : "");
	if (n < 0 || (size_t)n >= sizeof(name))
		return -ENAMETOOLONG;
	esc = curl_easy_escape(x->curl, name, 0);
	if (!esc)
		return -ENOMEM;
	n = snprintf(buf, len, "/ingest?name=%s&from=%llu&until=%llu&format=pprof&sampleRate=%u"
		"&spyName=tracerd", esc, (unsigned long long)(from / NS),
		(unsigned long long)(until / NS), rule->hz);
	curl_free(esc);
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

static bool proc_in_window(const struct exp_proc *pr, uint64_t from)
{
	return !pr->gone_ns || pr->gone_ns >= from;
}

static void export_proc(struct exporter *x, const struct rp_profile *all,
	const struct exp_proc *pr, uint64_t from, uint64_t until)
{
	char target[2048], *body = NULL;
	size_t len = 0;
	int e = proc_encode(x, all, pr, from, until, &body, &len);

	if (e == -ENODATA)
		return;
	if (e == 0) {
		if (x->cfg->export.protocol == SVC_EXPORT_OTLP)
			snprintf(target, sizeof(target), "/v1development/profiles");
		else
			e = pyroscope_target(x, pr, from, until, target, sizeof(target));
	}
	if (e == 0) {
		unsigned dropped = 0;

		e = exp_spool_add(&x->sp, target,
			x->cfg->export.protocol == SVC_EXPORT_OTLP ? "application/x-protobuf" :
								     "application/octet-stream",
			body, len, &dropped);
		spooled_dropping(x, dropped);
	}
	free(body);
	if (e < 0)
		say(x, LOG_WARNING, "export: rule %s: the profile of %d for the interval ending %llu "
			"is lost: %s", x->cfg->rules[pr->rule].name, (int)pr->pid,
			(unsigned long long)(until / NS), td_strerror(e));
}

/* Spool the window's profiles: per rule one load, per process one view. */
static void export_window(struct exporter *x, uint64_t from, uint64_t until)
{
	for (unsigned r = 0; r < x->cfg->nrules; r++) {
		struct rp_profile *all = NULL;
		bool any = false;
		int e;

		for (size_t i = 0; i < x->nprocs && !any; i++)
			any = x->procs[i].rule == (int)r && proc_in_window(&x->procs[i], from);
		if (!any)
			continue;
		e = window_load(x, (int)r, from, until, &all);
		if (e == -ENODATA)
			continue;
		if (e < 0) {
			say(x, LOG_WARNING, "export: rule %s: cannot read the interval ending %llu: "
				"%s; its profiles are lost", x->cfg->rules[r].name,
				(unsigned long long)(until / NS), td_strerror(e));
			continue;
		}
		for (size_t i = 0; i < x->nprocs; i++)
			if (x->procs[i].rule == (int)r && proc_in_window(&x->procs[i], from))
				export_proc(x, all, &x->procs[i], from, until);
		rp_free(all);
	}
	/* a process gone before this window's end has nothing after it; one
	 * whose exit the loop did not tell (the scan forgot it) is found
	 * gone here, so that the table holds only the living */
	for (size_t i = 0; i < x->nprocs; i++) {
		struct td_proc_id id = { x->procs[i].pid, x->procs[i].start_time };

		if (!x->procs[i].gone_ns && td_proc_id_check(&id) == 0)
			x->procs[i].gone_ns = until;
	}
	for (size_t i = 0; i < x->nprocs;)
		if (x->procs[i].gone_ns && x->procs[i].gone_ns < until)
			x->procs[i] = x->procs[--x->nprocs];
		else
			i++;
}

/* Keep the end of the window just spooled, for the next exporter. */
static void window_done(struct exporter *x)
{
	char text[32];
	int fd = openat(x->sp.dfd, "window.tmp", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC |
		O_NOFOLLOW, 0600);
	int n = snprintf(text, sizeof(text), "%llu\n", (unsigned long long)x->until_ns);

	if (fd < 0)
		return;
	if (write(fd, text, (size_t)n) == n)
		renameat(x->sp.dfd, "window.tmp", x->sp.dfd, "window");
	close(fd);
}

/* ---- what the loop says */

static void on_follow(struct exporter *x, const struct exp_msg *m)
{
	struct svc_proc *p;
	struct exp_proc *pr = NULL;

	if (m->rule < 0 || (unsigned)m->rule >= x->cfg->nrules)
		return;
	for (size_t i = 0; i < x->nprocs; i++)
		if (x->procs[i].pid == m->pid && x->procs[i].start_time == m->start_time)
			pr = &x->procs[i];
	if (!pr) {
		if (x->nprocs >= EXP_PROCS_MAX ||
			td_array_grow(x->procs, x->cap, x->nprocs + 1, 64) < 0)
			return;
		pr = &x->procs[x->nprocs++];
	}
	*pr = (struct exp_proc){ .rule = m->rule, .pid = m->pid, .start_time = m->start_time };
	p = malloc(sizeof(*p));
	if (p && svc_proc_read(x->proc_root, m->pid, SVC_NEED_EXE | SVC_NEED_UNIT, p) == 0 &&
		p->start_time == m->start_time) {
		char *unit = strrchr(p->cgroup, '/');

		exp_label_safe(pr->exe, sizeof(pr->exe), p->exe);
		/* the innermost cgroup that is not a slice: the unit's */
		while (unit && unit > p->cgroup && strlen(unit) > 6 &&
			!strcmp(unit + strlen(unit) - 6, ".slice")) {
			*unit = '\0';
			unit = strrchr(p->cgroup, '/');
		}
		if (unit && unit[1])
			exp_label_safe(pr->unit, sizeof(pr->unit), unit + 1);
	}
	free(p);
}

static void on_gone(struct exporter *x, const struct exp_msg *m)
{
	for (size_t i = 0; i < x->nprocs; i++)
		if (x->procs[i].pid == m->pid && !x->procs[i].gone_ns)
			x->procs[i].gone_ns = td_real_ns();
}

/* Returns false when the loop hung up. */
static bool read_loop(struct exporter *x)
{
	for (;;) {
		struct exp_msg m;
		ssize_t n = recv(x->fd, &m, sizeof(m), MSG_DONTWAIT);

		if (n == 0)
			return false;
		if (n < 0)
			return errno == EAGAIN || errno == EINTR;
		if (n != (ssize_t)sizeof(m))
			continue;
		if (m.kind == EXP_MSG_FOLLOW)
			on_follow(x, &m);
		else if (m.kind == EXP_MSG_GONE)
			on_gone(x, &m);
	}
}

int export_main(const struct svc_config *cfg, const char *proc_root, int fd)
{
	struct exporter x = { .cfg = cfg, .proc_root = proc_root, .fd = fd, .sp = { .dfd = -1 } };
	char dir[PATH_MAX];
	sigset_t sigs;
	int sfd, e;
	uint64_t share = cfg->max_size / EXP_SPOOL_SHARE, next_check = 0;

	prctl(PR_SET_PDEATHSIG, SIGTERM);
	if (getppid() == 1)
		return 1;
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGHUP);
	sigprocmask(SIG_BLOCK, &sigs, NULL);
	sfd = signalfd(-1, &sigs, SFD_CLOEXEC | SFD_NONBLOCK);

	if (gethostname(x.host, sizeof(x.host)) < 0)
		snprintf(x.host, sizeof(x.host), "unknown");
	x.host[sizeof(x.host) - 1] = '\0';
	exp_label_safe(x.host, sizeof(x.host), x.host);
	snprintf(dir, sizeof(dir), "%s/%s", cfg->directory, SVC_EXPORT_SPOOL);
	e = exp_spool_open(&x.sp, dir, share * TD_MAX(cfg->nrules, 1u));
	if (e < 0) {
		say(&x, LOG_ERR, "export: cannot use the spool %s/%s: %s; nothing is exported",
			cfg->directory, SVC_EXPORT_SPOOL, strerror(-e));
		return 1;
	}
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != 0 || !(x.curl = curl_easy_init())) {
		say(&x, LOG_ERR, "export: libcurl cannot start; nothing is exported");
		return 1;
	}
	{
		/* tracerd.service alone allows AF_UNIX only: say the fix now
		 * rather than one failed push later */
		int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

		if (s >= 0)
			close(s);
		else
			say(&x, LOG_ERR, "export: the service may not open network sockets (%s): "
				"install the drop-in that make install leaves in "
				"PREFIX/share/tracerd/tracerd-export.conf as "
				"/etc/systemd/system/tracerd.service.d/export.conf, then "
				"systemctl daemon-reload and restart tracerd", strerror(errno));
	}
	/* windows on multiples of Interval: the same on every machine; after
	 * a restart or a reload, from where the last exporter stopped */
	x.until_ns = (td_real_ns() / cfg->export.interval_ns + 1) * cfg->export.interval_ns;
	{
		char text[32];
		uint64_t last;

		if (td_read_text(x.sp.dfd, "window", text, sizeof(text)) > 0 &&
			(last = strtoull(text, NULL, 10)) % cfg->export.interval_ns == 0 &&
			last < x.until_ns && last + EXP_CATCH_UP_NS > x.until_ns)
			x.until_ns = last + cfg->export.interval_ns;
	}
	if (x.sp.count)
		say(&x, LOG_INFO, "export: %u profile%s kept in the spool from before are sent "
			"first", x.sp.count, x.sp.count == 1 ? "" : "s");
	for (;;) {
		struct pollfd pfd[2] = { { fd, POLLIN, 0 }, { sfd, POLLIN, 0 } };
		struct signalfd_siginfo si;
		uint64_t real = td_real_ns(), due = x.until_ns + EXP_LAG_NS;
		int timeout = due > real ? (int)TD_MIN((due - real) / 1000000 + 1, 1000) : 250;

		if (x.sp.count && td_now_ns() >= x.retry_ns)
			timeout = 0;
		if (poll(pfd, 2, timeout) < 0 && errno != EINTR)
			break;
		if (pfd[1].revents & POLLIN) {
			bool stop = false;

			while (read(sfd, &si, sizeof(si)) == (ssize_t)sizeof(si))
				stop |= si.ssi_signo != SIGHUP;
			if (stop)
				break;
		}
		if ((pfd[0].revents & (POLLIN | POLLHUP | POLLERR)) && !read_loop(&x))
			break;
		if (td_real_ns() >= due && td_now_ns() >= next_check) {
			next_check = td_now_ns() + NS / 4;
			if (!window_ready(&x, x.until_ns, td_real_ns()))
				goto send;
			export_window(&x, x.until_ns - cfg->export.interval_ns, x.until_ns);
			window_done(&x);
			x.until_ns += cfg->export.interval_ns;
			/* a machine that slept: no backlog of empty windows */
			if (x.until_ns + EXP_CATCH_UP_NS < td_real_ns())
				x.until_ns = (td_real_ns() / cfg->export.interval_ns + 1) *
					     cfg->export.interval_ns;
		}
send:
		if (x.sp.count && td_now_ns() >= x.retry_ns)
			send_spool(&x);
	}
	curl_easy_cleanup(x.curl);
	curl_global_cleanup();
	free(x.procs);
	exp_spool_close(&x.sp);
	close(sfd);
	return 0;
}
