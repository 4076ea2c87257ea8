/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The service's configuration, tracerd.conf(5).
 *
 * svc_config_load/svc_config_parse turn a file shaped like a systemd unit
 * file into a struct svc_config, checking everything before they return:
 * a configuration that loads is one the service can run as it is, so that
 * a reload can be all or nothing.  Each refusal names the file, the line,
 * the text and what to do (struct svc_config_error); the caller words it
 * for the journal.  Every length a file controls is bounded: the file
 * (1 MiB), a line (4096 bytes), a name (63), the rules (SVC_MAX_RULES).
 * Which process a rule takes in is match.c's. */
#define _GNU_SOURCE
#include "service.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../common/parse.h"
#include "../common/td.h"

#define SVC_FILE_MAX (1u << 20)
#define SVC_LINE_MAX 4096
/* Directory= plus "/" NAME "/emergency-PID-TIME.tcf" stays below PATH_MAX */
#define SVC_DIRECTORY_MAX 3968
#define SVC_COMM_MAX 15		/* TASK_COMM_LEN - 1: the kernel cuts longer names */

#define NS_PER_SEC 1000000000ull

enum svc_section { SEC_NONE, SEC_SERVICE, SEC_TARGET, SEC_EXPORT };

struct parser;

struct svc_key {
	const char *name;
	enum svc_section sec;
	int (*set)(struct parser *p, const char *key, char *value);
};

/* borrows: the configuration being built, the error to fill */
struct parser {
	struct svc_config *c;
	struct svc_config_error *err;
	const char *name;
	unsigned line;
	char text[128];	  /* the current line as an error shows it */
	enum svc_section sec;
	unsigned key_line[24]; /* per key of svc_keys: the line it was given on in
				* this section, 0 if not */
	unsigned service_line; /* the [Service] header, 0 if none yet */
	unsigned export_line;  /* the [Export] header, 0 if none yet */
	unsigned key_line_token; /* TokenFile='s line, for end_export's message */
	char header[128];      /* the current [Target]'s header, for its late error */
};

/* ---- messages */

/* s as an error shows it: control characters as '?', cut with "..." */
static void svc_text_set(char *dst, size_t size, const char *s)
{
	size_t i;

	if (!s)
		s = "";
	for (i = 0; s[i] && i + 1 < size; i++)
		dst[i] = (unsigned char)s[i] < 0x20 || s[i] == 0x7f ? '?' : s[i];
	dst[i] = '\0';
	if (s[i] && size > 4)
		memcpy(dst + size - 4, "...", 4);
}

static int svc_verror(struct svc_config_error *err, const char *file, unsigned line,
	const char *text, int code, const char *fmt, va_list ap)
{
	if (!err)
		return code;
	memset(err, 0, sizeof(*err));
	svc_text_set(err->file, sizeof(err->file), file);
	err->line = line;
	svc_text_set(err->text, sizeof(err->text), text);
	vsnprintf(err->reason, sizeof(err->reason), fmt, ap);
	for (char *s = err->reason; *s; s++) /* it may quote the file */
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			*s = '?';
	return code;
}

__attribute__((format(printf, 6, 7))) static int svc_error(struct svc_config_error *err,
	const char *file, unsigned line, const char *text, int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	code = svc_verror(err, file, line, text, code, fmt, ap);
	va_end(ap);
	return code;
}

/* An error on the current line; returns -EINVAL. */
__attribute__((format(printf, 2, 3))) static int fail(struct parser *p, const char *fmt, ...)
{
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = svc_verror(p->err, p->name, p->line, p->text, -EINVAL, fmt, ap);
	va_end(ap);
	return r;
}

static int fail_nomem(struct parser *p)
{
	return svc_error(p->err, p->name, p->line, p->text, -ENOMEM,
		"out of memory while reading the configuration; try again");
}

/* ---- small parsers (no locale: isspace would follow LC_*; sizes and
 * durations are common/parse.c's) */

static bool is_blank(char ch)
{
	return ch == ' ' || ch == '\t' || ch == '\r' || ch == '\v' || ch == '\f';
}

static bool is_digit(char ch)
{
	return ch >= '0' && ch <= '9';
}

static bool is_alpha(char ch)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z');
}

static char *trim(char *s)
{
	size_t n;

	while (is_blank(*s))
		s++;
	n = strlen(s);
	while (n > 0 && is_blank(s[n - 1]))
		s[--n] = '\0';
	return s;
}

static char *svc_strdup(const char *s)
{
	size_t n = strlen(s) + 1;
	char *d = td_malloc(n);

	if (d)
		memcpy(d, s, n);
	return d;
}

static bool has_glob(const char *s)
{
	return strpbrk(s, "*?[\\") != NULL;
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);

	return n >= m && !memcmp(s + n - m, suffix, m);
}

/* ---- [Service] keys */

/* An absolute directory for key (its trailing slashes dropped) into *dir,
 * or, with none_ok, "none": NULL. */
static int set_dir(struct parser *p, const char *key, char *v, bool none_ok, char **dir)
{
	size_t n = strlen(v);
	char *d = NULL;

	if (!none_ok || strcmp(v, "none") != 0) {
		if (v[0] != '/')
			return fail(p, "%s= must be an absolute path (starting with '/'), e.g. %s",
				key, none_ok ? "/var/cache/tracerd, or none" : "/var/lib/tracerd");
		while (n > 1 && v[n - 1] == '/')
			v[--n] = '\0';
		if (n > SVC_DIRECTORY_MAX)
			return fail(p, "%s= is longer than %u bytes; choose a shorter path", key,
				SVC_DIRECTORY_MAX);
		d = svc_strdup(v);
		if (!d)
			return fail_nomem(p);
	}
	free(*dir);
	*dir = d;
	return 0;
}

static int set_directory(struct parser *p, const char *key, char *v)
{
	return set_dir(p, key, v, false, &p->c->directory);
}

static int set_cache_directory(struct parser *p, const char *key, char *v)
{
	return set_dir(p, key, v, true, &p->c->cache_directory);
}

static int set_max_size(struct parser *p, const char *key, char *v)
{
	uint64_t size;

	if (td_size_parse(v, &size) < 0 || size < (1ull << 20) || size > (1ull << 50))
		return fail(p, "%s= must be a size from 1M to 1024T: a whole number of bytes "
			       "or one with K, M, G or T (powers of 1024), e.g. 2G",
			key);
	p->c->max_size = size;
	return 0;
}

static int set_duration(struct parser *p, const char *key, const char *v, uint64_t min_ns,
	uint64_t max_ns, const char *range, uint64_t *ret_ns)
{
	uint64_t ns;

	if (td_duration_parse(v, &ns) < 0 || ns < min_ns || ns > max_ns)
		return fail(p, "%s= must be a duration from %s, a number with a unit "
			       "(ms, s, min, h, d, w), e.g. 30s, 10min or 1h 30min",
			key, range);
	*ret_ns = ns;
	return 0;
}

static int set_max_age(struct parser *p, const char *key, char *v)
{
	return set_duration(p, key, v, 60 * NS_PER_SEC, 365 * 86400 * NS_PER_SEC,
		"1min to 365d", &p->c->max_age_ns);
}

static int set_scan_interval(struct parser *p, const char *key, char *v)
{
	return set_duration(p, key, v, NS_PER_SEC / 10, 10 * NS_PER_SEC, "100ms to 10s",
		&p->c->scan_interval_ns);
}

static int set_emergency_window(struct parser *p, const char *key, char *v)
{
	return set_duration(p, key, v, NS_PER_SEC, 365 * 86400 * NS_PER_SEC, "1s to 365d",
		&p->c->emergency_window_ns);
}

static int set_max_emergency_dumps(struct parser *p, const char *key, char *v)
{
	char *end;
	unsigned long n;

	errno = 0;
	n = strtoul(v, &end, 10);
	if (*v < '0' || *v > '9' || *end || errno || n < 1 || n > 100000)
		return fail(p, "%s= must be a whole number from 1 to 100000: the emergency dumps "
			       "each rule keeps, the oldest deleted first",
			key);
	p->c->max_emergency_dumps = (unsigned)n;
	return 0;
}

/* ---- [Target NAME] keys */

static struct svc_rule *cur_rule(struct parser *p)
{
	return &p->c->rules[p->c->nrules - 1];
}

static int set_string(struct parser *p, char **slot, const char *v)
{
	char *d = svc_strdup(v);

	if (!d)
		return fail_nomem(p);
	*slot = d;
	return 0;
}

static int set_comm(struct parser *p, const char *key, char *v)
{
	if (!has_glob(v) && strlen(v) > SVC_COMM_MAX)
		return fail(p, "%s= '%.40s' is longer than a process name can be (%u characters; "
			       "the kernel cuts longer ones): give its first %u characters, or "
			       "match with Exe= or Cmdline=",
			key, v, SVC_COMM_MAX, SVC_COMM_MAX);
	return set_string(p, &cur_rule(p)->comm, v);
}

/* glob with the symbolic links of its fixed part resolved (the
 * components before the first that holds a glob character, the whole path
 * if none does), the rest appended, into buf: a process's exe is always a
 * resolved path, and /usr/bin/redis-server is a link to redis-check-rdb
 * on Debian.  False when that changes nothing or the fixed part cannot be
 * resolved (not installed yet: resolved again at the next reload). */
static bool exe_resolved(const char *glob, char *buf, size_t len)
{
	size_t fixed = strcspn(glob, "*?[\\");
	char head[PATH_MAX], real[PATH_MAX];

	if (glob[fixed]) {
		while (fixed > 0 && glob[fixed - 1] != '/')
			fixed--; /* back to the component's start */
		if (fixed <= 1)
			return false; /* "/" or "*...": nothing fixed to resolve */
		fixed--;	      /* without the slash */
	}
	if (fixed >= sizeof(head))
		return false;
	memcpy(head, glob, fixed);
	head[fixed] = '\0';
	if (!realpath(head, real) || !strcmp(real, head))
		return false;
	return (size_t)snprintf(buf, len, "%s%s", real, glob + fixed) < len;
}

static int set_exe(struct parser *p, const char *key, char *v)
{
	struct svc_rule *r = cur_rule(p);
	char real[PATH_MAX];
	int e;

	if (!strchr(v, '/'))
		return fail(p, "%s= is matched against the executable's full path: give one "
			       "such as /usr/bin/ledger or */ledger, or match the name with Comm=",
			key);
	e = set_string(p, &r->exe, v);
	if (e < 0 || !exe_resolved(v, real, sizeof(real)))
		return e;
	return set_string(p, &r->exe_real, real);
}

static int set_cmdline(struct parser *p, const char *key, char *v)
{
	struct svc_rule *r = cur_rule(p);
	char why[96];
	int e;

	e = regcomp(&r->cmdline_re, v, REG_EXTENDED | REG_NOSUB);
	if (e == REG_ESPACE)
		return fail_nomem(p);
	if (e) {
		regerror(e, &r->cmdline_re, why, sizeof(why));
		return fail(p, "%s= is not a POSIX extended regular expression: %s; see regex(7)",
			key, why);
	}
	r->cmdline = svc_strdup(v);
	if (!r->cmdline) {
		regfree(&r->cmdline_re);
		return fail_nomem(p);
	}
	return 0;
}

static int set_unit(struct parser *p, const char *key, char *v)
{
	if (strchr(v, '/'))
		return fail(p, "%s= names a unit, not a cgroup path: give a unit name or glob "
			       "such as ledger.service or ledger@*.service",
			key);
	if (ends_with(v, ".slice"))
		return fail(p, "%s= cannot match a slice (slices are skipped so that a glob does "
			       "not take in whole slices): name the units in it, e.g. *.service",
			key);
	if (!has_glob(v) && !strchr(v, '.'))
		return fail(p, "%s= '%.40s' has no unit type: give %.40s.service (or %.40s.scope)",
			key, v, v, v);
	return set_string(p, &cur_rule(p)->unit, v);
}

static int set_frequency(struct parser *p, const char *key, char *v)
{
	size_t n = strspn(v, "0123456789");
	unsigned long hz = 0;

	if (n > 0 && n <= 5 && !v[n])
		hz = strtoul(v, NULL, 10);
	if (hz < 1 || hz > 10000)
		return fail(p, "%s= must be a whole number of samples per second from 1 to 10000 "
			       "(default 99)",
			key);
	cur_rule(p)->hz = (unsigned)hz;
	return 0;
}

static int set_mode(struct parser *p, const char *key, char *v)
{
	if (!strcmp(v, "cpu"))
		cur_rule(p)->mode = REC_MODE_CPU;
	else if (!strcmp(v, "wall"))
		cur_rule(p)->mode = REC_MODE_WALL;
	else
		return fail(p, "%s= must be cpu (where threads use CPU) or wall (every thread, "
			       "running or blocked); see tracerd(8), Modes",
			key);
	return 0;
}

static int set_kernel_frames(struct parser *p, const char *key, char *v)
{
	if (!strcmp(v, "yes"))
		cur_rule(p)->no_kernel = false;
	else if (!strcmp(v, "no"))
		cur_rule(p)->no_kernel = true;
	else
		return fail(p, "%s= must be yes (the kernel's frames below a sample's, where "
			       "perf gives them: the default) or no (user space only, as "
			       "tracerd record --no-kernel)",
			key);
	return 0;
}

static int set_max_processes(struct parser *p, const char *key, char *v)
{
	size_t n = strspn(v, "0123456789");
	unsigned long max = 0;

	if (n > 0 && n <= 6 && !v[n])
		max = strtoul(v, NULL, 10);
	if (max < 1 || max > REC_MAX_PROCS_MAX)
		return fail(p, "%s= must be a whole number of processes from 1 to %u (default %u): "
			       "the most this rule follows at once",
			key, REC_MAX_PROCS_MAX, SVC_MAX_PROCS);
	cur_rule(p)->max_procs = (unsigned)max;
	return 0;
}

/* ---- [Export] keys */

static int set_export_url(struct parser *p, const char *key, char *v)
{
	size_t n = strlen(v), scheme;

	if (strncmp(v, "http://", 7) && strncmp(v, "https://", 8))
		return fail(p, "%s= must start with http:// or https://, e.g. "
			       "http://pyroscope.example:4040",
			key);
	for (const char *s = v; *s; s++)
		if ((unsigned char)*s <= 0x20 || *s == 0x7f || *s == '?' || *s == '#')
			return fail(p, "%s= holds a space, a control character, '?' or '#': give "
				       "the server's base URL alone; tracerd adds the path and query",
				key);
	scheme = v[4] == 's' ? 8 : 7;
	while (n > scheme && v[n - 1] == '/')
		v[--n] = '\0';
	if (n > SVC_EXPORT_URL_MAX)
		return fail(p, "%s= is longer than %u bytes", key, SVC_EXPORT_URL_MAX);
	if (n <= scheme)
		return fail(p, "%s= has no host: give one such as http://pyroscope.example:4040",
			key);
	return set_string(p, &p->c->export.url, v);
}

static int set_export_protocol(struct parser *p, const char *key, char *v)
{
	if (!strcmp(v, "pyroscope"))
		p->c->export.protocol = SVC_EXPORT_PYROSCOPE;
	else if (!strcmp(v, "otlp"))
		p->c->export.protocol = SVC_EXPORT_OTLP;
	else
		return fail(p, "%s= must be pyroscope (Grafana Pyroscope's /ingest, pprof) or "
			       "otlp (OpenTelemetry's profiles signal over HTTP)",
			key);
	return 0;
}

static int set_export_interval(struct parser *p, const char *key, char *v)
{
	return set_duration(p, key, v, NS_PER_SEC, 3600 * NS_PER_SEC, "1s to 1h",
		&p->c->export.interval_ns);
}

static bool label_key_ok(const char *k, size_t n)
{
	if (!n || n > 63 || is_digit(k[0]))
		return false;
	for (size_t i = 0; i < n; i++)
		if (!is_alpha(k[i]) && !is_digit(k[i]) && k[i] != '_')
			return false;
	return true;
}

/* k=v,...: keys as Prometheus labels, values without the characters that
 * delimit Pyroscope's name{k=v,...}, none of the labels tracerd sets */
static int set_export_labels(struct parser *p, const char *key, char *v)
{
	static const char *const own[] = { "host", "rule", "pid", "exe", "unit", "service_name",
		"__name__" };
	unsigned count = 0;

	for (char *item = v; item;) {
		char *next = strchr(item, ','), *eq;
		size_t kn;

		if (next)
			*next = '\0';
		eq = strchr(item, '=');
		kn = eq ? (size_t)(eq - item) : 0;
		if (!eq || !label_key_ok(item, kn) || !eq[1] || strlen(eq + 1) > 127 ||
			strpbrk(eq + 1, "{}=,\"\\ "))
			return fail(p, "%s= must be key=value pairs joined by ',' (keys: letters, "
				       "digits and '_', not first a digit; values: 1 to 127 "
				       "characters, none of {}=,\"\\ or space), e.g. "
				       "env=prod,region=eu",
				key);
		for (size_t i = 0; i < TD_ARRAY_SIZE(own); i++)
			if (strlen(own[i]) == kn && !memcmp(own[i], item, kn))
				return fail(p, "%s= may not set '%s': tracerd sets host, rule, pid, "
					       "exe and unit itself",
					key, own[i]);
		if (++count > SVC_EXPORT_LABELS_MAX)
			return fail(p, "%s= has more than %u labels", key, SVC_EXPORT_LABELS_MAX);
		if (next)
			*next = ',';
		item = next ? next + 1 : NULL;
	}
	return set_string(p, &p->c->export.labels, v);
}

static int set_export_token_file(struct parser *p, const char *key, char *v)
{
	if (v[0] != '/')
		return fail(p, "%s= must be an absolute path to a file holding the token, "
			       "e.g. /etc/tracerd/export-token",
			key);
	return set_string(p, &p->c->export.token_file, v);
}

/* The [Export] section being left: it needs a URL, and its token file
 * must be readable and private now, not at the first push. */
static int end_export(struct parser *p)
{
	char token[SVC_TOKEN_MAX], why[160];
	int e;

	if (!p->c->export.url)
		return svc_error(p->err, p->name, p->c->export.line, "[Export]", -EINVAL,
			"[Export] has no URL=: give the server's, e.g. "
			"URL=http://pyroscope.example:4040, or remove the section");
	if (!p->c->export.token_file)
		return 0;
	e = svc_token_read(p->c->export.token_file, token, sizeof(token), why, sizeof(why));
	memset(token, 0, sizeof(token));
	if (e < 0)
		return svc_error(p->err, p->name, p->key_line_token, p->c->export.token_file, e,
			"TokenFile=: %s", why);
	return 0;
}

static const struct svc_key svc_keys[] = {
	{ "Directory", SEC_SERVICE, set_directory },
	{ "MaxSize", SEC_SERVICE, set_max_size },
	{ "MaxAge", SEC_SERVICE, set_max_age },
	{ "ScanInterval", SEC_SERVICE, set_scan_interval },
	{ "EmergencyWindow", SEC_SERVICE, set_emergency_window },
	{ "MaxEmergencyDumps", SEC_SERVICE, set_max_emergency_dumps },
	{ "CacheDirectory", SEC_SERVICE, set_cache_directory },
	{ "Comm", SEC_TARGET, set_comm },
	{ "Exe", SEC_TARGET, set_exe },
	{ "Cmdline", SEC_TARGET, set_cmdline },
	{ "Unit", SEC_TARGET, set_unit },
	{ "Frequency", SEC_TARGET, set_frequency },
	{ "Mode", SEC_TARGET, set_mode },
	{ "MaxProcesses", SEC_TARGET, set_max_processes },
	{ "KernelFrames", SEC_TARGET, set_kernel_frames },
	{ "URL", SEC_EXPORT, set_export_url },
	{ "Protocol", SEC_EXPORT, set_export_protocol },
	{ "Interval", SEC_EXPORT, set_export_interval },
	{ "Labels", SEC_EXPORT, set_export_labels },
	{ "TokenFile", SEC_EXPORT, set_export_token_file },
};
_Static_assert(TD_ARRAY_SIZE(svc_keys) <= TD_ARRAY_SIZE(((struct parser *)0)->key_line),
	"key_line has a slot per key");

static const char *section_name(enum svc_section sec)
{
	return sec == SEC_SERVICE ? "[Service]" : sec == SEC_EXPORT ? "[Export]" : "[Target NAME]";
}

/* "Directory, MaxSize, ..." for sec */
static void key_list(enum svc_section sec, char *buf, size_t size)
{
	size_t off = 0;
	int n;

	buf[0] = '\0';
	for (size_t i = 0; i < TD_ARRAY_SIZE(svc_keys); i++) {
		if (svc_keys[i].sec != sec)
			continue;
		n = snprintf(buf + off, size - off, "%s%s", off ? ", " : "", svc_keys[i].name);

		if (n < 0 || (size_t)n >= size - off)
			return;
		off += (size_t)n;
	}
}

/* ---- sections */

static bool name_ok(const char *s)
{
	size_t n = strlen(s);

	if (n < 1 || n > 63 || !strcmp(s, ".") || !strcmp(s, ".."))
		return false;
	for (; *s; s++)
		if (!is_alpha(*s) && !is_digit(*s) && *s != '_' && *s != '.' && *s != '-')
			return false;
	return true;
}

/* The section being left: a target must say what it matches. */
static int end_section(struct parser *p)
{
	struct svc_rule *r;

	if (p->sec == SEC_EXPORT)
		return end_export(p);
	if (p->sec != SEC_TARGET)
		return 0;
	r = cur_rule(p);
	if (r->comm || r->exe || r->cmdline || r->unit)
		return 0;
	return svc_error(p->err, p->name, r->line, p->header, -EINVAL,
		"[Target %s] has no matching key: give at least one of Comm=, Exe=, Cmdline= "
		"or Unit= (a target may not take in every process)",
		r->name);
}

static int parse_header(struct parser *p, char *s)
{
	size_t n = strlen(s);
	char *inner, *name;
	struct svc_rule *r;
	int e;

	if (s[n - 1] != ']')
		return fail(p, "a section header must end with ']': [Service] or [Target NAME]");
	s[n - 1] = '\0';
	inner = trim(s + 1);
	e = end_section(p);
	if (e < 0)
		return e;
	memset(p->key_line, 0, sizeof(p->key_line));
	if (!strcmp(inner, "Service")) {
		if (p->service_line)
			return fail(p, "a second [Service] section (the first is on line %u): "
				       "put every service setting in one",
				p->service_line);
		p->service_line = p->line;
		p->sec = SEC_SERVICE;
		return 0;
	}
	if (!strcmp(inner, "Export")) {
		if (p->export_line)
			return fail(p, "a second [Export] section (the first is on line %u): "
				       "tracerd pushes to one server",
				p->export_line);
		p->export_line = p->c->export.line = p->line;
		p->sec = SEC_EXPORT;
		return 0;
	}
	if (strncmp(inner, "Target", 6) || (inner[6] && !is_blank(inner[6])))
		return fail(p, "unknown section [%.40s]: the sections are [Export], "
			       "[Service] and [Target NAME] (names are case-sensitive)",
			inner);
	name = trim(inner + 6);
	n = strlen(name);
	if (n >= 2 && name[0] == '"' && name[n - 1] == '"') {
		name[n - 1] = '\0';
		name++;
	}
	if (!strcmp(name, SVC_EXPORT_SPOOL))
		return fail(p, "the target name %s is the export spool's directory under "
			       "Directory=: choose another",
			name);
	if (!name_ok(name))
		return fail(p, "'%.64s' is not a target name: give 1 to 63 letters, digits, "
			       "'_', '.' or '-' (not . or ..); it names the target's repository",
			name);
	for (unsigned i = 0; i < p->c->nrules; i++)
		if (!strcmp(p->c->rules[i].name, name))
			return fail(p, "target name '%s' is used on line %u too: give each target "
				       "a name of its own (it names its repository)",
				name, p->c->rules[i].line);
	if (p->c->nrules >= SVC_MAX_RULES)
		return fail(p, "more than %u targets: merge some (one glob or regular expression "
			       "can match several programs)",
			SVC_MAX_RULES);
	r = &p->c->rules[p->c->nrules++];
	strcpy(r->name, name); /* name_ok: at most 63 */
	r->hz = 99;
	r->mode = REC_MODE_CPU;
	r->max_procs = SVC_MAX_PROCS;
	r->line = p->line;
	memcpy(p->header, p->text, sizeof(p->header));
	p->sec = SEC_TARGET;
	return 0;
}

/* ---- lines */

static const struct svc_key *find_key(const char *key)
{
	for (size_t i = 0; i < TD_ARRAY_SIZE(svc_keys); i++)
		if (!strcmp(svc_keys[i].name, key))
			return &svc_keys[i];
	return NULL;
}

static int unknown_key(struct parser *p, const char *key)
{
	char keys[128];

	for (size_t i = 0; i < TD_ARRAY_SIZE(svc_keys); i++) {
		if (strcasecmp(svc_keys[i].name, key))
			continue;
		if (svc_keys[i].sec != p->sec)
			break;
		return fail(p, "unknown key '%.40s': keys are case-sensitive; did you mean %s=?",
			key, svc_keys[i].name);
	}
	key_list(p->sec, keys, sizeof(keys));
	return fail(p, "unknown key '%.40s' in %s; the keys there are %s", key,
		section_name(p->sec), keys);
}

static int parse_setting(struct parser *p, char *s, char *eq)
{
	const struct svc_key *k;
	char *key, *value;
	size_t n, idx;

	*eq = '\0';
	key = trim(s);
	value = trim(eq + 1);
	if (!*key)
		return fail(p, "the line has no key before '='; write Key=Value");
	k = find_key(key);
	if (p->sec == SEC_NONE) {
		if (k)
			return fail(p, "%s= is outside any section: put it under %s", k->name,
				section_name(k->sec));
		return fail(p, "a setting outside any section: settings go under [Service] or "
			       "[Target NAME]");
	}
	if (!k || k->sec != p->sec) {
		if (k)
			return fail(p, "%s= belongs in %s, not in %s", k->name,
				section_name(k->sec), section_name(p->sec));
		return unknown_key(p, key);
	}
	idx = (size_t)(k - svc_keys);
	if (p->key_line[idx])
		return fail(p, "%s= is given twice in this section (first on line %u): keep one",
			k->name, p->key_line[idx]);
	p->key_line[idx] = p->line;
	if (k->set == set_export_token_file)
		p->key_line_token = p->line;
	n = strlen(value);
	if (value[0] == '"') {
		if (n < 2 || value[n - 1] != '"')
			return fail(p, "the value of %s= opens a double quote it does not close: "
				       "quote the whole value or none of it",
				k->name);
		value[n - 1] = '\0';
		value++;
	}
	if (!*value)
		return fail(p, "%s= has an empty value: give one or remove the line", k->name);
	return k->set(p, k->name, value);
}

static int parse_line(struct parser *p, char *line)
{
	char *s = trim(line), *eq;

	svc_text_set(p->text, sizeof(p->text), s);
	if (!*s || *s == '#' || *s == ';')
		return 0;
	if (*s == '[')
		return parse_header(p, s);
	eq = strchr(s, '=');
	if (!eq)
		return fail(p, "not a setting: write Key=Value, a [Section] header, or a comment "
			       "starting with # or ;");
	return parse_setting(p, s, eq);
}

int svc_config_parse(const char *name, const char *text, size_t len,
	struct svc_config **ret_config, struct svc_config_error *ret_err)
{
	struct parser p = { .name = name ? name : "-", .err = ret_err };
	struct svc_config *c;
	char buf[SVC_LINE_MAX + 1];
	size_t off = 0;
	int r;

	if (len > SVC_FILE_MAX)
		return svc_error(ret_err, p.name, 0, "", -EFBIG,
			"the file is larger than 1 MiB; a configuration is a few lines");
	c = td_calloc(1, sizeof(*c));
	if (!c)
		goto out_nomem;
	p.c = c;
	/* rules never move once made: regcomp's regex_t may not be copied */
	c->rules = td_calloc(SVC_MAX_RULES, sizeof(*c->rules));
	c->path = svc_strdup(p.name);
	c->directory = svc_strdup("/var/lib/tracerd");
	c->cache_directory = svc_strdup("/var/cache/tracerd");
	if (!c->rules || !c->path || !c->directory || !c->cache_directory)
		goto out_nomem;
	c->max_size = 1ull << 30;
	c->max_age_ns = 86400 * NS_PER_SEC;
	c->scan_interval_ns = 2 * NS_PER_SEC;
	c->emergency_window_ns = 1800 * NS_PER_SEC;
	c->export.interval_ns = 15 * NS_PER_SEC;
	c->max_emergency_dumps = 10;

	if (len >= 3 && !memcmp(text, "\xef\xbb\xbf", 3))
		off = 3; /* a UTF-8 byte order mark, as systemd skips it */
	while (off < len) {
		const char *start = text + off, *nl = memchr(start, '\n', len - off);
		size_t n = nl ? (size_t)(nl - start) : len - off;

		p.line++;
		off += n + (nl != NULL);
		if (n > SVC_LINE_MAX) {
			memcpy(buf, start, sizeof(p.text));
			buf[sizeof(p.text)] = '\0'; /* shown cut, with "..." */
			svc_text_set(p.text, sizeof(p.text), buf);
			r = fail(&p, "the line is longer than %u bytes; shorten it", SVC_LINE_MAX);
			goto out_free;
		}
		if (memchr(start, '\0', n)) {
			svc_text_set(p.text, sizeof(p.text), "");
			r = fail(&p, "the line holds a NUL byte: the file must be text");
			goto out_free;
		}
		memcpy(buf, start, n);
		buf[n] = '\0';
		r = parse_line(&p, buf);
		if (r < 0)
			goto out_free;
	}
	r = end_section(&p);
	if (r < 0)
		goto out_free;
	*ret_config = c;
	return 0;

out_nomem:
	r = fail_nomem(&p);
out_free:
	svc_config_free(c);
	return r;
}

static const char *open_hint(int err)
{
	switch (err) {
	case ENOENT:
		return "create it (see tracerd.conf(5)) or give another path";
	case EACCES:
	case EPERM:
		return "let tracerd read it: run it as root, or check the file's mode and its "
		       "directories'";
	case ELOOP:
		return "a symbolic link loops on the path";
	default:
		return "check the path";
	}
}

int svc_config_load(const char *path, struct svc_config **ret_config,
	struct svc_config_error *ret_err)
{
	struct stat st;
	size_t len = 0;
	char *buf = NULL;
	int fd, r;

	/* O_NONBLOCK: a FIFO put in the file's place does not hang us */
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0) {
		r = -errno;
		return svc_error(ret_err, path, 0, "", r, "cannot open the file: %s; %s",
			td_strerror(r), open_hint(-r));
	}
	if (fstat(fd, &st) < 0) {
		r = -errno;
		svc_error(ret_err, path, 0, "", r, "cannot read the file: %s", td_strerror(r));
		goto out_close;
	}
	if (!S_ISREG(st.st_mode)) {
		r = svc_error(ret_err, path, 0, "", -TD_E_NOTREG,
			"not a regular file: give the path of a configuration file");
		goto out_close;
	}
	/* the file says what root attaches to and where it writes */
	if (st.st_uid != 0 && st.st_uid != geteuid()) {
		r = svc_error(ret_err, path, 0, "", -TD_E_NOTOWNER,
			"the file belongs to uid %u, who could choose what tracerd records and "
			"where it writes: chown it to root",
			(unsigned)st.st_uid);
		goto out_close;
	}
	if (st.st_mode & (S_IWGRP | S_IWOTH)) {
		r = svc_error(ret_err, path, 0, "", -TD_E_UNSAFE,
			"the file is writable by its group or by others, who could choose what "
			"tracerd records and where it writes: chmod go-w it");
		goto out_close;
	}
	if (st.st_size > SVC_FILE_MAX) {
		r = svc_error(ret_err, path, 0, "", -EFBIG,
			"the file is larger than 1 MiB; a configuration is a few lines");
		goto out_close;
	}
	buf = td_malloc(SVC_FILE_MAX + 1);
	if (!buf) {
		r = svc_error(ret_err, path, 0, "", -ENOMEM,
			"out of memory while reading the configuration; try again");
		goto out_close;
	}
	/* read to the end, not to st_size: the file may grow meanwhile */
	while (len <= SVC_FILE_MAX) {
		ssize_t n = read(fd, buf + len, SVC_FILE_MAX + 1 - len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			r = -errno;
			svc_error(ret_err, path, 0, "", r, "cannot read the file: %s; %s",
				td_strerror(r), open_hint(-r));
			goto out_free;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	r = svc_config_parse(path, buf, len, ret_config, ret_err);
out_free:
	free(buf);
out_close:
	close(fd);
	return r;
}

void svc_config_free(struct svc_config *c)
{
	if (!c)
		return;
	for (unsigned i = 0; c->rules && i < c->nrules; i++) {
		struct svc_rule *r = &c->rules[i];

		free(r->comm);
		free(r->exe);
		free(r->exe_real);
		free(r->unit);
		if (r->cmdline)
			regfree(&r->cmdline_re);
		free(r->cmdline);
	}
	free(c->rules);
	free(c->path);
	free(c->directory);
	free(c->cache_directory);
	free(c->export.url);
	free(c->export.labels);
	free(c->export.token_file);
	free(c);
}

bool svc_rule_same_recording(const struct svc_rule *a, const struct svc_rule *b)
{
	return a && b && !strcmp(a->name, b->name) && a->hz == b->hz && a->mode == b->mode &&
	       a->max_procs == b->max_procs && a->no_kernel == b->no_kernel;
}
