/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The service's [Export] (service/export.c, tracerd.conf(5)): the
 * section's refusals, each with its line and what to do; then the service
 * itself pushing to a loopback HTTP receiver that stands in for Pyroscope
 * (a thread of this test): the query string's fields against what the
 * test knows (the rule, the pid, the fixture's path, the labels, the
 * token), the body read back by go tool pprof, and an outage of the
 * receiver for several intervals after which every interval arrives, in
 * order, and a reload that skips none; OTLP's request decoded by protoc
 * against the .proto files kept in third_party/. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../../common/td.h"
#include "../../report/report.h"
#include "../../service/export-internal.h"
#include "../../service/service.h"
#include "../helpers.h"

/* ---- the section's refusals */

static void export_bad(const char *body, unsigned line, const char *want)
{
	char text[1024];
	struct svc_config *c = NULL;
	struct svc_config_error e = { 0 };
	int r;

	snprintf(text, sizeof(text), "[Service]\nDirectory=/tmp\n[Export]\n%s", body);
	r = svc_config_parse("t.conf", text, strlen(text), &c, &e);
	cr_assert_lt(r, 0, "accepted:\n%s", text);
	cr_expect_null(c);
	cr_expect_eq(e.line, line, "line %u, not %u: %s\n--\n%s", e.line, line, e.reason, text);
	cr_expect(strstr(e.reason, want), "reason '%s' does not say '%s'", e.reason, want);
	cr_expect_gt(strlen(e.reason), 30, "a reason that says what to do: '%s'", e.reason);
}

Test(svcexport, section_defaults_and_keys)
{
	const char *text = "[Export]\nURL=http://127.0.0.1:4040/\n[Target a]\nComm=a\n";
	struct svc_config *c = NULL;
	struct svc_config_error e = { 0 };

	cr_assert_eq(svc_config_parse("t.conf", text, strlen(text), &c, &e), 0, "%s", e.reason);
	cr_expect_str_eq(c->export.url, "http://127.0.0.1:4040", "the trailing slash dropped");
	cr_expect_eq(c->export.protocol, SVC_EXPORT_PYROSCOPE);
	cr_expect_eq(c->export.interval_ns, 15000000000ull);
	cr_expect_null(c->export.labels);
	cr_expect_null(c->export.token_file);
	svc_config_free(c);
	text = "[Export]\nURL=https://p.example\nProtocol=otlp\nInterval=1min\n"
	       "Labels=env=prod,region=eu-1\n";
	cr_assert_eq(svc_config_parse("t.conf", text, strlen(text), &c, &e), 0, "%s", e.reason);
	cr_expect_eq(c->export.protocol, SVC_EXPORT_OTLP);
	cr_expect_eq(c->export.interval_ns, 60000000000ull);
	cr_expect_str_eq(c->export.labels, "env=prod,region=eu-1");
	svc_config_free(c);
	text = "[Service]\n[Target a]\nComm=a\n";
	cr_assert_eq(svc_config_parse("t.conf", text, strlen(text), &c, &e), 0, "%s", e.reason);
	cr_expect_null(c->export.url, "no [Export]: no export");
	svc_config_free(c);
}

Test(svcexport, bad_lines_say_each_what_to_do)
{
	export_bad("Interval=1s\n", 3, "no URL=");
	export_bad("URL=ftp://x\n", 4, "http://");
	export_bad("URL=http://\n", 4, "no host");
	export_bad("URL=http://x/a b\n", 4, "space");
	export_bad("URL=http://x?a=1\n", 4, "base URL");
	export_bad("URL=http://x\nProtocol=graphite\n", 5, "pyroscope");
	export_bad("URL=http://x\nInterval=100ms\n", 5, "1s to 1h");
	export_bad("URL=http://x\nInterval=2h\n", 5, "1s to 1h");
	export_bad("URL=http://x\nLabels=env\n", 5, "key=value");
	export_bad("URL=http://x\nLabels=1env=a\n", 5, "key=value");
	export_bad("URL=http://x\nLabels=env=a{b}\n", 5, "key=value");
	export_bad("URL=http://x\nLabels=pid=3\n", 5, "may not set 'pid'");
	export_bad("URL=http://x\nLabels=host=a\n", 5, "may not set 'host'");
	export_bad("URL=http://x\nTokenFile=token\n", 5, "absolute");
	export_bad("URL=http://x\nTokenFile=/nonexistent/token\n", 5, "cannot open");
	export_bad("URL=http://x\nURL=http://y\n", 5, "twice");
	export_bad("URL=http://x\n[Export]\nURL=http://y\n", 5, "second [Export]");
	export_bad("URL=http://x\nComm=a\n", 5, "belongs in [Target NAME]");
	export_bad("URL=http://x\n[Target .export]\nComm=a\n", 5, "spool");
}

static char tmpdir[64];

static void mktmp(void)
{
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/tracerd-exp-XXXXXX");
	cr_assert_not_null(mkdtemp(tmpdir));
}

static void rmtmp(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	free(shell_output(cmd, NULL));
}

static void write_file(const char *path, const char *text, mode_t mode)
{
	FILE *f = fopen(path, "w");

	cr_assert_not_null(f, "%s: %s", path, strerror(errno));
	fputs(text, f);
	fclose(f);
	cr_assert_eq(chmod(path, mode), 0);
}

Test(svcexport, a_token_file_others_can_read_is_refused, .init = mktmp, .fini = rmtmp)
{
	char path[128], body[256], tok[SVC_TOKEN_MAX], why[200];

	snprintf(path, sizeof(path), "%s/token", tmpdir);
	write_file(path, "s3cret\n", 0644);
	snprintf(body, sizeof(body), "URL=http://x\nTokenFile=%s\n", path);
	export_bad(body, 5, "chmod 600");
	write_file(path, "s3cret\n", 0640);
	export_bad(body, 5, "chmod 600");
	write_file(path, "two words\n", 0600);
	export_bad(body, 5, "printable");
	write_file(path, "\n", 0600);
	export_bad(body, 5, "first line");
	write_file(path, "s3cret\r\nignored\n", 0600);
	cr_expect_eq(svc_token_read(path, tok, sizeof(tok), why, sizeof(why)), 0, "%s", why);
	cr_expect_str_eq(tok, "s3cret");
	unlink(path);
	cr_assert_eq(symlink("/etc/hostname", path), 0);
	cr_expect_lt(svc_token_read(path, tok, sizeof(tok), why, sizeof(why)), 0,
		"a symbolic link is not followed");
}

Test(svcexport, the_spool_keeps_order_and_drops_the_oldest_past_its_bound, .init = mktmp,
	.fini = rmtmp)
{
	struct exp_spool sp;
	struct exp_spooled l[16];
	char dir[128], body[150], big[2000], *got;
	unsigned dropped, total_dropped = 0;
	size_t n, len;

	snprintf(dir, sizeof(dir), "%s/spool", tmpdir);
	cr_assert_eq(exp_spool_open(&sp, dir, 1000), 0);
	/* each request 4 + 150 bytes: six fit in 1000 */
	for (unsigned i = 0; i < 10; i++) {
		memset(body, 'a' + (int)i, sizeof(body));
		cr_assert_eq(exp_spool_add(&sp, "t", "x", body, sizeof(body), &dropped), 0);
		total_dropped += dropped;
		cr_expect_leq(sp.bytes, 1000, "the bound holds after request %u", i);
	}
	cr_expect_eq(total_dropped, 4);
	cr_expect_eq(sp.lost, 4);
	cr_expect_eq(sp.count, 6);
	n = exp_spool_list(&sp, l, 16);
	cr_assert_eq(n, 6);
	for (size_t i = 0; i < n; i++)
		cr_expect_eq(l[i].seq, 5 + i, "the oldest went first, the rest in order");
	cr_assert_eq(exp_spool_read(&sp, &l[0], &got, &len), 0);
	cr_expect_eq(len, 154);
	cr_expect(!memcmp(got, "t\nx\neeee", 8), "the fifth request, whole");
	free(got);
	memset(big, 'z', sizeof(big));
	cr_expect_eq(exp_spool_add(&sp, "t", "x", big, sizeof(big), &dropped), -EFBIG,
		"larger than the bound: refused without emptying the spool");
	cr_expect_eq(sp.count, 6);
	exp_spool_remove(&sp, &l[0]);
	exp_spool_close(&sp);
	/* a new exporter finds what is left and numbers after it */
	cr_assert_eq(exp_spool_open(&sp, dir, 1000), 0);
	cr_expect_eq(sp.count, 5);
	cr_expect_eq(sp.bytes, 5 * 154);
	cr_expect_eq(sp.next_seq, 11);
	exp_spool_close(&sp);
}

/* The exporter loads a rule's window once and takes a view per process:
 * each view holds what a load with --pid would, for two recordings of two
 * processes (one with wait episodes) read together. */
Test(svcexport, a_view_per_process_is_a_load_with_its_pid)
{
	const char *paths[] = { GOLD("tcf-v1.1-waits.tcf"), GOLD("rec-crash.tcf") };
	const uint32_t pids[] = { 10000, 17723 };
	struct rp_filter all = { .state = -1, .addresses = true };
	struct rp_load_report rep;
	struct rp_profile *p = NULL, *one = NULL, *view = NULL;
	uint64_t sum = 0;

	cr_assert_eq(rp_load(paths, 2, &all, &p, &rep, NULL), 0);
	for (unsigned i = 0; i < 2; i++) {
		struct rp_filter f = all;
		char *a = NULL, *b = NULL;
		size_t alen = 0, blen = 0;
		FILE *fa, *fb;

		f.pids[0] = pids[i];
		f.npids = 1;
		cr_assert_eq(rp_load(paths, 2, &f, &one, &rep, NULL), 0);
		cr_assert_eq(rp_view_pid(p, pids[i], &view), 0);
		cr_expect_gt(rp_samples(one), 0);
		cr_expect_eq(rp_samples(view), rp_samples(one), "pid %u: %llu samples, not %llu",
			pids[i], (unsigned long long)rp_samples(view),
			(unsigned long long)rp_samples(one));
		sum += rp_samples(view);
		/* its pprof (the first's with wait episodes) as large as the
		 * --pid load's, give or take the order of the shared tables */
		fa = open_memstream(&a, &alen);
		fb = open_memstream(&b, &blen);
		cr_assert_eq(rp_pprof(fa, view), 0);
		cr_assert_eq(rp_pprof(fb, one), 0);
		fclose(fa);
		fclose(fb);
		cr_expect_gt(alen, 100);
		cr_expect(alen * 10 > blen * 9 && alen * 9 < blen * 10, "pid %u: %zu bytes, not %zu",
			pids[i], alen, blen);
		free(a);
		free(b);
		rp_view_free(view);
		rp_free(one);
	}
	cr_expect_eq(sum, rp_samples(p), "the views share out every sample");
	cr_assert_eq(rp_view_pid(p, 4242, &view), 0);
	cr_expect_eq(rp_samples(view), 0, "a process not in it: an empty view");
	rp_view_free(view);
	rp_free(p);
}

/* ---- a loopback receiver standing in for Pyroscope */

struct request {
	char target[2048], auth[128], ctype[64];
	char *body;
	size_t len;
};

struct receiver {
	int port, lfd;
	pthread_t thread;
	bool running;
	pthread_mutex_t lock;
	struct request req[512];
	unsigned n;
};

static size_t header(const char *head, const char *name, char *out, size_t len)
{
	const char *p = strcasestr(head, name), *end;

	out[0] = '\0';
	if (!p)
		return 0;
	p += strlen(name);
	while (*p == ' ')
		p++;
	end = strstr(p, "\r\n");
	if (!end)
		return 0;
	snprintf(out, len, "%.*s", (int)(end - p), p);
	return strlen(out);
}

static void serve_one(struct receiver *rv, int fd)
{
	static const char ok[] = "HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
	char head[8192], num[32];
	size_t got = 0, want;
	char *end = NULL, *body;
	struct request *q;

	while (got < sizeof(head) - 1 && !end) {
		ssize_t n = read(fd, head + got, sizeof(head) - 1 - got);

		if (n <= 0)
			return;
		got += (size_t)n;
		head[got] = '\0';
		end = strstr(head, "\r\n\r\n");
	}
	if (!end)
		return;
	header(head, "\r\nContent-Length:", num, sizeof(num));
	want = strtoul(num, NULL, 10);
	body = malloc(want + 1);
	got -= (size_t)(end + 4 - head);
	memcpy(body, end + 4, got);
	while (got < want) {
		ssize_t n = read(fd, body + got, want - got);

		if (n <= 0) {
			free(body);
			return;
		}
		got += (size_t)n;
	}
	pthread_mutex_lock(&rv->lock);
	if (rv->n < TD_ARRAY_SIZE(rv->req)) {
		q = &rv->req[rv->n++];
		sscanf(head, "POST %2047s", q->target);
		header(head, "\r\nAuthorization:", q->auth, sizeof(q->auth));
		header(head, "\r\nContent-Type:", q->ctype, sizeof(q->ctype));
		q->body = body;
		q->len = want;
		body = NULL;
	}
	pthread_mutex_unlock(&rv->lock);
	free(body);
	if (write(fd, ok, sizeof(ok) - 1) < 0)
		return;
}

static void *receiver_main(void *arg)
{
	struct receiver *rv = arg;

	for (;;) {
		int fd = accept(rv->lfd, NULL, NULL);

		if (fd < 0)
			return NULL; /* the listening socket was shut down */
		serve_one(rv, fd);
		close(fd);
	}
}

/* Listen on 127.0.0.1 (rv->port, or any port when 0) and serve. */
static void receiver_up(struct receiver *rv)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK),
		.sin_port = htons((uint16_t)rv->port) };
	socklen_t alen = sizeof(a);
	int one = 1;

	rv->lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	cr_assert_geq(rv->lfd, 0);
	setsockopt(rv->lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	cr_assert_eq(bind(rv->lfd, (struct sockaddr *)&a, sizeof(a)), 0, "bind: %s",
		strerror(errno));
	cr_assert_eq(listen(rv->lfd, 16), 0);
	getsockname(rv->lfd, (struct sockaddr *)&a, &alen);
	rv->port = ntohs(a.sin_port);
	cr_assert_eq(pthread_create(&rv->thread, NULL, receiver_main, rv), 0);
	rv->running = true;
}

/* Down: connections are refused until receiver_up again. */
static void receiver_down(struct receiver *rv)
{
	if (!rv->running)
		return;
	shutdown(rv->lfd, SHUT_RDWR);
	pthread_join(rv->thread, NULL);
	close(rv->lfd);
	rv->running = false;
}

static unsigned received(struct receiver *rv)
{
	unsigned n;

	pthread_mutex_lock(&rv->lock);
	n = rv->n;
	pthread_mutex_unlock(&rv->lock);
	return n;
}

struct count_wait {
	struct receiver *rv;
	unsigned n;
};

static bool has_received(void *arg)
{
	struct count_wait *w = arg;

	return received(w->rv) >= w->n;
}

/* ---- the service */

struct svc {
	char conf[128], log[128], data[128], token[128];
	pid_t pid;
};

static void svc_start(struct svc *s, const char *export_keys, const char *rules)
{
	char text[2048];
	pid_t pid;

	snprintf(s->conf, sizeof(s->conf), "%s/tracerd.conf", tmpdir);
	snprintf(s->log, sizeof(s->log), "%s/log", tmpdir);
	snprintf(s->data, sizeof(s->data), "%s/data", tmpdir);
	snprintf(text, sizeof(text),
		"[Service]\nDirectory=%s\nCacheDirectory=none\nScanInterval=200ms\n\n"
		"[Export]\n%s\n%s", s->data, export_keys, rules);
	write_file(s->conf, text, 0600);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		int fd = open(s->log, O_WRONLY | O_CREAT | O_TRUNC, 0600);

		prctl(PR_SET_PDEATHSIG, SIGTERM);
		dup2(fd, 1);
		dup2(fd, 2);
		execl(TD_BUILD_DIR "/tracerd", "tracerd", "service", "--config", s->conf, "--verbose",
			(char *)NULL);
		_exit(127);
	}
	s->pid = pid;
}

static char *svc_log(const struct svc *s)
{
	char cmd[256];

	snprintf(cmd, sizeof(cmd), "cat '%s'", s->log);
	return shell_output(cmd, NULL);
}

static void svc_stop(struct svc *s)
{
	int status;

	kill(s->pid, SIGTERM);
	cr_assert_eq(waitpid(s->pid, &status, 0), s->pid);
	cr_expect(WIFEXITED(status) && WEXITSTATUS(status) == 0, "status 0x%x:\n%s", status,
		svc_log(s));
}

static void query_field(const char *target, const char *key, char *out, size_t len)
{
	const char *p = strstr(target, key);

	out[0] = '\0';
	if (p)
		snprintf(out, len, "%.*s", (int)strcspn(p + strlen(key), "&"), p + strlen(key));
}

/* %XX decoded in place */
static void url_decode(char *s)
{
	char *d = s;

	for (; *s; s++, d++) {
		unsigned v;

		if (*s == '%' && sscanf(s + 1, "%2x", &v) == 1) {
			*d = (char)v;
			s += 2;
		} else {
			*d = *s;
		}
	}
	*d = '\0';
}

Test(export, pyroscope_gets_every_interval_across_an_outage, .init = mktmp, .fini = rmtmp,
	.timeout = 180)
{
	static struct receiver rv = { .lock = PTHREAD_MUTEX_INITIALIZER };
	struct svc s;
	char keys[512], rules[256], name[2048], want[512], field[64], path[256], cmd[512];
	unsigned before, last_until = 0;
	pid_t spin;
	char *out, *log;

	need_command("go", "golang-go");
	receiver_up(&rv);
	snprintf(s.token, sizeof(s.token), "%s/token", tmpdir);
	write_file(s.token, "t0ken-42\n", 0600);
	snprintf(keys, sizeof(keys), "URL=http://127.0.0.1:%d\nInterval=1s\nLabels=env=test\n"
		"TokenFile=%s\n", rv.port, s.token);
	snprintf(rules, sizeof(rules), "[Target spin]\nExe=%s/fx_spin\nCmdline=fx_spin 70021$\n",
		TD_FIXTURE_DIR);
	spin = fx_start(TD_FIXTURE_DIR "/fx_spin", "70021");
	svc_start(&s, keys, rules);
	cr_assert(wait_for(has_received, &(struct count_wait){ &rv, 2 }, TEST_PATIENCE_MS),
		"nothing received:\n%s", svc_log(&s));

	/* the first request: what the query string says, against the test's
	 * own knowledge */
	pthread_mutex_lock(&rv.lock);
	struct request q = rv.req[0];
	pthread_mutex_unlock(&rv.lock);
	cr_expect(!strncmp(q.target, "/ingest?", 8), "%s", q.target);
	query_field(q.target, "name=", name, sizeof(name));
	url_decode(name);
	snprintf(want, sizeof(want), "rule=spin,pid=%d,exe=%s/fx_spin,", (int)spin, TD_FIXTURE_DIR);
	cr_expect(!strncmp(name, "spin{host=", 10) && strstr(name, want) &&
			  strstr(name, ",env=test}"),
		"name %s, wanted spin{host=..,%s...,env=test}", name, want);
	query_field(q.target, "format=", field, sizeof(field));
	cr_expect_str_eq(field, "pprof");
	query_field(q.target, "sampleRate=", field, sizeof(field));
	cr_expect_str_eq(field, "99");
	query_field(q.target, "spyName=", field, sizeof(field));
	cr_expect_str_eq(field, "tracerd");
	query_field(q.target, "from=", field, sizeof(field));
	unsigned from = (unsigned)strtoul(field, NULL, 10);
	query_field(q.target, "until=", field, sizeof(field));
	cr_expect_eq(strtoul(field, NULL, 10), from + 1u, "a window of Interval=1s");
	cr_expect_str_eq(q.auth, "Bearer t0ken-42");
	cr_expect_geq(q.len, 2);
	cr_expect(q.body[0] == '\x1f' && q.body[1] == '\x8b', "a gzip body");

	/* go tool pprof reads the body: fx_spin's own function on top */
	snprintf(path, sizeof(path), "%s/first.pb.gz", tmpdir);
	pthread_mutex_lock(&rv.lock);
	{
		FILE *f = fopen(path, "w");

		cr_assert_not_null(f);
		fwrite(rv.req[1].body, 1, rv.req[1].len, f);
		fclose(f);
	}
	pthread_mutex_unlock(&rv.lock);
	snprintf(cmd, sizeof(cmd), "HOME=%s GOCACHE=%s/gocache GOPROXY=off GOFLAGS=-mod=mod "
		"go tool pprof -symbolize=none -top %s 2>&1", tmpdir, tmpdir, path);
	out = shell_output(cmd, NULL);
	cr_expect(strstr(out, "Type: samples") && strstr(out, "fx_spin_user"),
		"go tool pprof -top:\n%s", out);
	free(out);

	/* an outage of four intervals: nothing missing after, in order */
	receiver_down(&rv);
	log = NULL;
	for (int i = 0; i < 600; i++) {
		free(log);
		log = svc_log(&s);
		if (strstr(log, "export: cannot push to"))
			break;
		usleep(10000);
	}
	cr_expect(strstr(log, "export: cannot push to"), "the failure is said:\n%s", log);
	free(log);
	sleep(4); /* the outage itself: four intervals of Interval=1s */
	before = received(&rv);
	receiver_up(&rv);
	cr_assert(wait_for(has_received, &(struct count_wait){ &rv, before + 6 }, TEST_PATIENCE_MS),
		"the spool was not sent:\n%s", svc_log(&s));
	/* the exporter says the recovery through the loop: wait for the line
	 * rather than stop the service before it arrives */
	log = NULL;
	for (int i = 0; i < TEST_PATIENCE_MS / 10; i++) {
		free(log);
		log = svc_log(&s);
		if (strstr(log, "answers again after"))
			break;
		usleep(10000);
	}
	free(log);
	/* a reload starts the exporter anew: it goes on from the last
	 * interval, none skipped */
	kill(s.pid, SIGHUP);
	before = received(&rv);
	cr_assert(wait_for(has_received, &(struct count_wait){ &rv, before + 3 }, TEST_PATIENCE_MS),
		"nothing after the reload:\n%s", svc_log(&s));
	svc_stop(&s);
	receiver_down(&rv);
	kill(spin, SIGKILL);
	waitpid(spin, NULL, 0);
	for (unsigned i = 0; i < rv.n; i++) {
		unsigned f, u;

		query_field(rv.req[i].target, "from=", field, sizeof(field));
		f = (unsigned)strtoul(field, NULL, 10);
		query_field(rv.req[i].target, "until=", field, sizeof(field));
		u = (unsigned)strtoul(field, NULL, 10);
		cr_expect(!last_until || f == last_until, "request %u: from=%u after until=%u: an "
			"interval missing or out of order", i, f, last_until);
		last_until = u;
		free(rv.req[i].body);
	}
	log = svc_log(&s);
	cr_expect(strstr(log, "answers again after"), "the recovery is said:\n%s", log);
	{
		unsigned said = 0;

		for (const char *p = log; (p = strstr(p, "export: cannot push to")); p++)
			said++;
		cr_expect_eq(said, 1, "the failure is said once:\n%s", log);
	}
	free(log);
}

Test(export, otlp_request_decodes_against_opentelemetry_proto, .init = mktmp, .fini = rmtmp,
	.timeout = 120)
{
	static struct receiver rv = { .lock = PTHREAD_MUTEX_INITIALIZER };
	struct svc s;
	char keys[512], rules[256], path[256], cmd[1024], want[64];
	pid_t spin;
	char *out;
	int status;

	need_command("protoc", "protobuf-compiler");
	receiver_up(&rv);
	snprintf(keys, sizeof(keys), "URL=http://127.0.0.1:%d\nProtocol=otlp\nInterval=1s\n"
		"Labels=env=test\n", rv.port);
	snprintf(rules, sizeof(rules), "[Target spin]\nExe=%s/fx_spin\nCmdline=fx_spin 70022$\n",
		TD_FIXTURE_DIR);
	spin = fx_start(TD_FIXTURE_DIR "/fx_spin", "70022");
	svc_start(&s, keys, rules);
	cr_assert(wait_for(has_received, &(struct count_wait){ &rv, 1 }, TEST_PATIENCE_MS),
		"nothing received:\n%s", svc_log(&s));
	svc_stop(&s);
	receiver_down(&rv);
	kill(spin, SIGKILL);
	waitpid(spin, NULL, 0);
	cr_expect_str_eq(rv.req[0].target, "/v1development/profiles");
	cr_expect_str_eq(rv.req[0].ctype, "application/x-protobuf");
	snprintf(path, sizeof(path), "%s/otlp.pb", tmpdir);
	{
		FILE *f = fopen(path, "w");

		cr_assert_not_null(f);
		fwrite(rv.req[0].body, 1, rv.req[0].len, f);
		fclose(f);
	}
	for (unsigned i = 0; i < rv.n; i++)
		free(rv.req[i].body);
	snprintf(cmd, sizeof(cmd), "protoc --proto_path=%s/third_party/opentelemetry-proto "
		"--decode=opentelemetry.proto.collector.profiles.v1development."
		"ExportProfilesServiceRequest opentelemetry/proto/collector/profiles/v1development/"
		"profiles_service.proto < %s 2>&1", TD_SOURCE_DIR, path);
	out = shell_output(cmd, &status);
	cr_assert_eq(status, 0, "protoc --decode refused it:\n%s", out);
	snprintf(want, sizeof(want), "int_value: %d\n", (int)spin);
	cr_expect(strstr(out, "key: \"service.name\"") && strstr(out, "string_value: \"spin\"") &&
			  strstr(out, "key: \"process.pid\"") && strstr(out, want) &&
			  strstr(out, "key: \"env\""),
		"the resource names the rule, the pid %d and the labels:\n%s", (int)spin, out);
	cr_expect(strstr(out, "string_table: \"fx_spin_user\"") &&
			  strstr(out, "string_table: \"samples\"") && strstr(out, "stack_table {") &&
			  strstr(out, "location_table {") && strstr(out, "values: "),
		"samples with stacks through fx_spin_user:\n%s", out);
	cr_expect(strstr(out, "duration_nano: 1000000000\n"), "the window is Interval=1s:\n%s",
		out);
	free(out);
}
