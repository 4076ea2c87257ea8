/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Strings that came from a target (symbol, file, thread and module names,
 * comm, exe, cmdline, unit), written where people read them: the one
 * decision of which bytes are safe, and its three writers, for text
 * (td_text_put, td_text_escape), JSON and JSON inside HTML
 * (td_json_string).
 *
 * Guarantees: what these write holds no control character (C0, DEL, C1),
 * no byte of invalid UTF-8 and no character that reorders a line (the
 * bidirectional overrides and isolates), however hostile the input; valid
 * UTF-8 otherwise passes unchanged, so that a non-ASCII name stays
 * readable.  Text escapes a byte as \xNN and the backslash itself as \x5c,
 * so that every backslash in the output begins an escape and the bytes can
 * be read back from it.  JSON keeps the real characters (\uXXXX escapes);
 * a byte of invalid UTF-8, which JSON cannot carry, becomes U+FFFD.
 *
 * Leaves to the callers which strings came from a target: chunks store
 * the bytes as they were, and every reader escapes again, so that an older
 * chunk is as safe to print as a new one. */
#include "td.h"

#include <stdio.h>
#include <string.h>

/* The length of the UTF-8 sequence at p (1..4) and its code point, or 0
 * (and code point 0) for a byte that starts no valid sequence (a stray
 * continuation, an overlong form, a surrogate, beyond U+10FFFF, cut
 * short). */
static unsigned utf8_decode(const unsigned char *p, uint32_t *ret_cp)
{
	unsigned n, i;
	uint32_t cp, min;

	*ret_cp = 0;
	if (p[0] < 0x80) {
		*ret_cp = p[0];
		return 1;
	}
	if (p[0] >= 0xc2 && p[0] <= 0xdf)
		n = 2, cp = p[0] & 0x1f, min = 0x80;
	else if (p[0] >= 0xe0 && p[0] <= 0xef)
		n = 3, cp = p[0] & 0x0f, min = 0x800;
	else if (p[0] >= 0xf0 && p[0] <= 0xf4)
		n = 4, cp = p[0] & 0x07, min = 0x10000;
	else
		return 0;
	for (i = 1; i < n; i++) {
		if ((p[i] & 0xc0) != 0x80) /* a NUL ends the loop here too */
			return 0;
		cp = cp << 6 | (p[i] & 0x3f);
	}
	if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	*ret_cp = cp;
	return n;
}

/* Characters that a terminal acts on or that reorder what follows:
 * controls, and the bidirectional marks, embeddings, overrides and
 * isolates (a name that reads as another). */
static bool unsafe_char(uint32_t cp)
{
	return cp < 0x20 || (cp >= 0x7f && cp <= 0x9f) || cp == 0x200e || cp == 0x200f ||
	       (cp >= 0x202a && cp <= 0x202e) || (cp >= 0x2066 && cp <= 0x2069);
}

/* Walk s: copy(run, n) for each run of safe characters; byte() for each
 * byte of invalid UTF-8 (invalid set), and for an unsafe character: in
 * text once per byte, in JSON once for the whole character (cp).  Shared
 * by every writer below, so that they agree on what is safe. */
struct text_sink {
	void (*copy)(struct text_sink *k, const char *s, size_t n);
	void (*byte)(struct text_sink *k, unsigned char c, bool invalid, uint32_t cp);
};

static void text_walk(struct text_sink *k, const char *s, bool json)
{
	const unsigned char *p = (const unsigned char *)s, *run = p;
	uint32_t cp;

	while (*p) {
		unsigned n = utf8_decode(p, &cp);
		bool special = json ? (cp == '"' || cp == '\\') : cp == '\\';

		if (n && !unsafe_char(cp) && !special) {
			p += n;
			continue;
		}
		if (p > run)
			k->copy(k, (const char *)run, (size_t)(p - run));
		if (!n) {
			k->byte(k, *p, true, 0);
			p++;
		} else if (json) {
			k->byte(k, *p, false, cp); /* the whole character at once */
			p += n;
		} else {
			for (unsigned i = 0; i < n; i++) /* escape every byte of it */
				k->byte(k, *p++, false, 0);
		}
		run = p;
	}
	if (p > run)
		k->copy(k, (const char *)run, (size_t)(p - run));
}

/* ---- text, into a FILE */

struct file_sink {
	struct text_sink k;
	FILE *f;
};

static void file_copy(struct text_sink *k, const char *s, size_t n)
{
	fwrite(s, 1, n, ((struct file_sink *)k)->f);
}

static void file_byte(struct text_sink *k, unsigned char c, bool invalid, uint32_t cp)
{
	(void)invalid, (void)cp;
	fprintf(((struct file_sink *)k)->f, "\\x%02x", c);
}

void td_text_put(FILE *f, const char *s)
{
	struct file_sink k = { { file_copy, file_byte }, f };

	if (s)
		text_walk(&k.k, s, false);
}

/* ---- text, into a buffer */

struct buf_sink {
	struct text_sink k;
	char *buf;
	size_t len;
	size_t off;  /* the whole text's length so far */
	size_t kept; /* what buf holds: every unit before the first that did not fit */
	bool cut;
};

static void buf_add(struct buf_sink *b, const char *s, size_t n)
{
	if (!b->cut && b->off + n < b->len) {
		memcpy(b->buf + b->off, s, n);
		b->kept = b->off + n;
	} else {
		b->cut = true;
	}
	b->off += n;
}

static void buf_copy(struct text_sink *k, const char *s, size_t n)
{
	struct buf_sink *b = (struct buf_sink *)k;
	const unsigned char *p = (const unsigned char *)s, *end = p + n;
	uint32_t cp;

	/* one character at a time, so that a cut never splits one */
	while (p < end) {
		unsigned u = utf8_decode(p, &cp);

		buf_add(b, (const char *)p, u);
		p += u;
	}
}

static void buf_byte(struct text_sink *k, unsigned char c, bool invalid, uint32_t cp)
{
	char esc[5];

	(void)invalid, (void)cp;
	snprintf(esc, sizeof(esc), "\\x%02x", c);
	buf_add((struct buf_sink *)k, esc, 4);
}

size_t td_text_escape(char *buf, size_t len, const char *s)
{
	struct buf_sink b = { { buf_copy, buf_byte }, buf, len, 0, 0, false };

	if (s)
		text_walk(&b.k, s, false);
	if (len)
		buf[b.kept] = '\0';
	return b.off;
}

bool td_text_is_safe(const char *s)
{
	const unsigned char *p = (const unsigned char *)(s ? s : "");
	uint32_t cp;

	while (*p) {
		unsigned n = utf8_decode(p, &cp);

		if (!n || unsafe_char(cp) || cp == '\\')
			return false;
		p += n;
	}
	return true;
}

/* ---- JSON */

struct json_sink {
	struct text_sink k;
	FILE *f;
	bool script;
};

static void json_byte(struct text_sink *k, unsigned char c, bool invalid, uint32_t cp)
{
	struct json_sink *j = (struct json_sink *)k;

	(void)c;
	if (invalid)
		fputs("\\ufffd", j->f); /* JSON is Unicode: the byte has no place */
	else if (cp == '"' || cp == '\\')
		fprintf(j->f, "\\%c", (char)cp);
	else if (!j->script && cp == '\n')
		fputs("\\n", j->f);
	else if (!j->script && cp == '\t')
		fputs("\\t", j->f);
	else if (!j->script && cp == '\r')
		fputs("\\r", j->f);
	else
		fprintf(j->f, "\\u%04x", (unsigned)cp); /* every unsafe one is in the BMP */
}

/* In a <script>: <, > and & too, so that no text closes the element or
 * starts an entity. */
static void json_copy(struct text_sink *k, const char *s, size_t n)
{
	struct json_sink *j = (struct json_sink *)k;

	for (size_t i = 0; i < n; i++) {
		if (j->script && (s[i] == '<' || s[i] == '>' || s[i] == '&'))
			fprintf(j->f, "\\u%04x", (unsigned)s[i]);
		else
			fputc(s[i], j->f);
	}
}

void td_json_string(FILE *f, const char *s, unsigned flags)
{
	struct json_sink j = { { json_copy, json_byte }, f, flags & TD_JSON_IN_SCRIPT };

	fputc('"', f);
	if (s)
		text_walk(&j.k, s, true);
	fputc('"', f);
}
