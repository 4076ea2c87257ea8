/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Unit tests of common/ (errors, JSON, buffer and varints, hash map,
 * /proc) and the command line's argument parsers. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../../common/buf.h"
#include "../../common/map.h"
#include "../../common/td.h"

Test(common, strerror_table)
{
	cr_expect_str_eq(td_strerror(-TD_E_TRACED), "process is already being traced");
	cr_expect_str_eq(td_strerror(TD_E_ZOMBIE), "process is a zombie");
	cr_expect_str_eq(td_strerror(-ENOENT), strerror(ENOENT));
	cr_expect_str_eq(td_strerror(-TD_E_MAX), "unknown error");
	for (int e = TD_E_BASE + 1; e < TD_E_MAX; e++)
		cr_expect_str_neq(td_strerror(-e), "unknown error", "code %d has a message", e);
}

/* ---- the JSON string writer */

static char *json_of(const char *s, unsigned flags)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	cr_assert_not_null(f);
	td_json_string(f, s, flags);
	fclose(f);
	return buf;
}

static void expect_json(const char *s, unsigned flags, const char *want)
{
	char *got = json_of(s, flags);

	cr_expect_str_eq(got, want, "json of [%s] flags %u", s ? s : "(null)", flags);
	free(got);
}

Test(json, escapes_quotes_backslash_and_controls)
{
	expect_json("a\"b\\c\nd\te\x01", 0, "\"a\\\"b\\\\c\\nd\\te\\u0001\"");
	expect_json("\r\x1f\x7f/", 0, "\"\\r\\u001f\\u007f/\"");
	expect_json("", 0, "\"\"");
	expect_json(NULL, 0, "\"\"");
	expect_json("<a href=\"x\">&</a>", 0, "\"<a href=\\\"x\\\">&</a>\"");
	/* every control character: named or \u00XX, never raw */
	for (int c = 1; c < 0x20; c++) {
		char in[2] = { (char)c, 0 }, want[16];

		if (c == '\n' || c == '\t' || c == '\r')
			snprintf(want, sizeof(want), "\"\\%c\"", c == '\n' ? 'n' : c == '\t' ? 't' : 'r');
		else
			snprintf(want, sizeof(want), "\"\\u%04x\"", c);
		expect_json(in, 0, want);
	}
}

Test(json, in_script_escapes_markup_and_every_control)
{
	expect_json("</script><b>&amp;", TD_JSON_IN_SCRIPT,
		"\"\\u003c/script\\u003e\\u003cb\\u003e\\u0026amp;\"");
	expect_json("a\nb\tc\rd\"e\\f", TD_JSON_IN_SCRIPT,
		"\"a\\u000ab\\u0009c\\u000dd\\\"e\\\\f\"");
	expect_json(NULL, TD_JSON_IN_SCRIPT, "\"\"");
}

Test(json, utf8_kept_invalid_bytes_replaced)
{
	/* UTF-8 is copied; a byte of an invalid sequence (a lone continuation
	 * byte, a truncated lead, 0xff) has no place in JSON: U+FFFD each */
	expect_json("caf\xc3\xa9 \xe6\x97\xa5 \xf0\x9f\x98\x80", 0,
		"\"caf\xc3\xa9 \xe6\x97\xa5 \xf0\x9f\x98\x80\"");
	expect_json("\x80\xc3(\xff\xfe", 0, "\"\\ufffd\\ufffd(\\ufffd\\ufffd\"");
	expect_json("\x80\xc3<\xff", TD_JSON_IN_SCRIPT, "\"\\ufffd\\ufffd\\u003c\\ufffd\"");
	/* overlong, surrogate, beyond U+10FFFF */
	expect_json("\xc0\xaf\xed\xa0\x80\xf4\x90\x80\x80", 0,
		"\"\\ufffd\\ufffd\\ufffd\\ufffd\\ufffd\\ufffd\\ufffd\\ufffd\\ufffd\"");
	/* DEL, C1 (CSI) and a bidirectional override: the character, escaped */
	expect_json("a\x7f\xc2\x9b\xe2\x80\xae", 0, "\"a\\u007f\\u009b\\u202e\"");
}

/* ---- the text escaper */

static void expect_text(const char *s, const char *want)
{
	char *buf = NULL, small[8];
	size_t len = 0, n;
	FILE *f = open_memstream(&buf, &len);

	cr_assert_not_null(f);
	td_text_put(f, s);
	fclose(f);
	cr_expect_str_eq(buf, want, "text of [%s]", s ? s : "(null)");
	cr_expect_eq(td_text_is_safe(s), !strcmp(buf, s ? s : ""), "is_safe of [%s]", s ? s : "(null)");
	/* the buffer form: the same text, its whole length, cut between units */
	{
		char big[256];

		cr_expect_eq(td_text_escape(big, sizeof(big), s), strlen(want));
		cr_expect_str_eq(big, want);
	}
	n = td_text_escape(small, sizeof(small), s);
	cr_expect_eq(n, strlen(want));
	cr_expect_leq(strlen(small), sizeof(small) - 1);
	cr_expect(!strncmp(small, want, strlen(small)), "a prefix of the whole: [%s]", small);
	free(buf);
}

Test(text, escapes_controls_invalid_utf8_and_backslash)
{
	expect_text("plain name_1", "plain name_1");
	expect_text(NULL, "");
	expect_text("EVIL\x1b]0;owned\x07\x1b[2J\x1b[31m",
		"EVIL\\x1b]0;owned\\x07\\x1b[2J\\x1b[31m");
	expect_text("a\nb\tc\rd\x7f", "a\\x0ab\\x09c\\x0dd\\x7f");
	/* the backslash is escaped: every backslash of the output starts \xNN */
	expect_text("a\\x1b", "a\\x5cx1b");
	/* valid UTF-8 stays readable; C1 (CSI), invalid bytes and overrides do not */
	expect_text("caf\xc3\xa9 \xe6\x97\xa5", "caf\xc3\xa9 \xe6\x97\xa5");
	expect_text("\xc2\x9b" "2J", "\\xc2\\x9b2J");
	expect_text("\x80\xc3(\xff", "\\x80\\xc3(\\xff");
	expect_text("abc\xe2\x80\xae" "cba", "abc\\xe2\\x80\\xaecba");
	expect_text("\xe2\x80", "\\xe2\\x80");
	expect_text("\xc0\xaf", "\\xc0\\xaf");
}

Test(text, every_byte_leaves_no_control_byte)
{
	/* every byte value, alone and after a lead byte */
	for (int c = 1; c < 256; c++) {
		for (int lead = 0; lead < 3; lead++) {
			char in[3] = { 0 }, out[64];
			int k = 0;

			if (lead)
				in[k++] = (char)(lead == 1 ? 0xc2 : 0xe2);
			in[k] = (char)c;
			td_text_escape(out, sizeof(out), in);
			for (const unsigned char *p = (const unsigned char *)out; *p; p++)
				cr_assert(*p >= 0x20 && *p != 0x7f, "byte %#x after %d: [%s]", c, lead, out);
			cr_assert(!strstr(out, "\xc2\x9b") && !strstr(out, "\xc2\x85"));
		}
	}
}

Test(text, cut_never_splits_an_escape_or_a_character)
{
	char buf[6];

	cr_expect_eq(td_text_escape(buf, sizeof(buf), "ab\x1b"), 6);
	cr_expect_str_eq(buf, "ab");
	cr_expect_eq(td_text_escape(buf, sizeof(buf), "abc\xc3\xa9z"), 6);
	cr_expect_str_eq(buf, "abc\xc3\xa9");
	cr_expect_eq(td_text_escape(buf, sizeof(buf), "abcd\xc3\xa9"), 6);
	cr_expect_str_eq(buf, "abcd");
	cr_expect_eq(td_text_escape(buf, 0, "abc"), 3);
}

/* ---- the byte buffer and varints */

static void expect_varint(uint64_t v, const uint8_t *want, size_t n)
{
	uint8_t out[TD_VARINT_MAX + 1];
	const uint8_t *p = out;
	struct td_buf b = { 0 };
	uint64_t back = 1;

	memset(out, 0xaa, sizeof(out));
	cr_assert_eq(td_varint_encode(out, v), n, "length of %llu", (unsigned long long)v);
	cr_expect_arr_eq(out, want, n, "bytes of %llu", (unsigned long long)v);
	cr_expect_eq(out[n], 0xaa, "nothing written past the varint");
	cr_expect(td_varint_get(&p, out + n, &back));
	cr_expect_eq(back, v);
	cr_expect_eq(p, out + n, "consumes exactly its bytes");
	td_buf_put_varint(&b, v);
	cr_assert_eq(b.len, n);
	cr_expect_arr_eq(b.p, want, n);
	td_buf_free(&b);
}

Test(buf, varint_edge_values)
{
	static const uint8_t v0[] = { 0x00 }, v127[] = { 0x7f }, v128[] = { 0x80, 0x01 },
			     v16383[] = { 0xff, 0x7f }, v16384[] = { 0x80, 0x80, 0x01 },
			     v2_63[] = { 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01 },
			     vmax[] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01 };

	expect_varint(0, v0, 1);
	expect_varint(127, v127, 1);
	expect_varint(128, v128, 2);
	expect_varint(16383, v16383, 2);
	expect_varint(16384, v16384, 3);
	expect_varint(1ull << 63, v2_63, 10);
	expect_varint(UINT64_MAX, vmax, 10);
}

Test(buf, varint_truncated_and_overlong_input)
{
	uint8_t enc[TD_VARINT_MAX], junk[12];
	size_t n = td_varint_encode(enc, UINT64_MAX);
	const uint8_t *p;
	uint64_t v = 1;

	/* every proper prefix is truncated: false, cursor at the end */
	for (size_t cut = 0; cut < n; cut++) {
		p = enc;
		cr_expect_not(td_varint_get(&p, enc + cut, &v), "prefix of %zu bytes", cut);
		cr_expect_eq(p, enc + cut);
		cr_expect_eq(v, 0);
	}
	/* a varint that goes on past 10 bytes: false after those 10 */
	memset(junk, 0x80, sizeof(junk));
	p = junk;
	cr_expect_not(td_varint_get(&p, junk + sizeof(junk), &v));
	cr_expect_eq(p, junk + TD_VARINT_MAX);
	/* bits past the 64th in a tenth byte are dropped, as readers did */
	memset(junk, 0xff, 9);
	junk[9] = 0x7f;
	p = junk;
	cr_expect(td_varint_get(&p, junk + 10, &v));
	cr_expect_eq(v, UINT64_MAX);
}

Test(buf, grows_and_keeps_its_bytes)
{
	struct td_buf b = { 0 };
	size_t total = 0;

	for (unsigned i = 0; i < 5000; i++) {
		uint8_t chunk[40];

		for (unsigned k = 0; k < i % 40; k++)
			chunk[k] = (uint8_t)(total + k);
		td_buf_put(&b, chunk, i % 40);
		total += i % 40;
	}
	td_buf_put(&b, NULL, 0); /* an empty append touches nothing */
	cr_assert_not(b.failed);
	cr_assert_eq(b.len, total);
	cr_expect_geq(b.cap, total);
	cr_expect_eq(b.cap & (b.cap - 1), 0, "doubling from 256");
	for (size_t i = 0; i < total; i++)
		if (b.p[i] != (uint8_t)i)
			cr_assert_fail("byte %zu", i);
	b.len = 0; /* reset keeps the storage */
	td_buf_put_varint(&b, 300);
	cr_expect_eq(b.len, 2);
	td_buf_free(&b);
	cr_expect_null(b.p);
	td_buf_free(NULL);
}

Test(buf, fixed_buffer_never_grows)
{
	uint8_t mem[8] = { 0 };
	struct td_buf b = TD_BUF_FIXED(mem, 4);

	td_buf_put(&b, "abc", 3);
	cr_expect_not(b.failed);
	td_buf_put(&b, "de", 2);
	cr_expect(b.failed, "an append that does not fit fails");
	cr_expect_eq(b.len, 3);
	cr_expect_eq(mem[3], 0, "nothing written past what fitted");
	cr_expect_eq(b.p, mem);
	td_buf_put(&b, "f", 1);
	cr_expect_eq(b.len, 3, "a failed buffer drops every later append");
	td_buf_free(&b); /* borrowed storage: not freed (ASan would say) */
}

Test(buf, failed_allocation_is_sticky)
{
	struct td_buf b = { 0 };

	td_fault_arm(TD_FAULT_MALLOC, 1);
	td_buf_put(&b, "x", 1);
	td_fault_arm(0, 0);
	cr_expect(b.failed);
	cr_expect_eq(b.len, 0);
	td_buf_put(&b, "y", 1);
	cr_expect(b.failed);
	cr_expect_eq(b.len, 0);
	td_buf_free(&b);
}

/* ---- the hash map */

Test(map, growable_holds_many_keys)
{
	struct td_map m = { 0 };
	uint64_t v, k, n = 0, sum = 0;
	size_t cur = 0;

	cr_expect_not(td_map_get(&m, 0, &v), "an empty map finds nothing");
	for (uint64_t i = 0; i < 100000; i++)
		cr_assert_eq(td_map_set(&m, i * 7, i), 1);
	cr_expect_eq(m.count, 100000);
	cr_expect_geq(m.cap, 2 * m.count, "at most half full");
	cr_expect_eq(m.cap & (m.cap - 1), 0);
	cr_expect_gt(td_map_bytes(&m), m.cap * 16);
	for (uint64_t i = 0; i < 100000; i++) {
		cr_assert(td_map_get(&m, i * 7, &v), "key %llu", (unsigned long long)(i * 7));
		cr_assert_eq(v, i);
	}
	cr_expect_not(td_map_get(&m, 3, &v));
	cr_expect(td_map_get(&m, 0, &v), "0 is a key like any other");
	cr_expect_eq(td_map_set(&m, 14, 99), 0, "a replace");
	cr_expect(td_map_get(&m, 14, &v));
	cr_expect_eq(v, 99);
	while (td_map_next(&m, &cur, &k, &v)) {
		n++;
		sum += k;
	}
	cr_expect_eq(n, 100000, "the walk visits every entry once");
	cr_expect_eq(sum, 7ull * 99999 * 100000 / 2);
	td_map_clear(&m);
	cr_expect_eq(m.count, 0);
	cr_expect_not(td_map_get(&m, 14, &v));
	cr_expect_gt(m.cap, 0, "clear keeps the storage");
	td_map_free(&m);
	cr_expect_eq(m.cap, 0);
	td_map_free(NULL);
}

Test(map, upsert_adds_zero_then_finds)
{
	struct td_map m = { 0 };
	uint64_t *v, got;

	cr_assert_eq(td_map_upsert(&m, 42, &v), 1);
	cr_expect_eq(*v, 0);
	*v = 5;
	cr_assert_eq(td_map_upsert(&m, 42, &v), 0);
	cr_expect_eq(*v, 5);
	(*v)++;
	cr_expect(td_map_get(&m, 42, &got));
	cr_expect_eq(got, 6);
	td_map_free(&m);
}

Test(map, equal_keys_collide_and_are_all_found)
{
	struct td_map m = { 0 };
	uint64_t v, seen = 0;
	size_t cur = 0;
	unsigned n = 0;

	/* content-keyed use: one hash, several entries, probed one by one */
	cr_assert_eq(td_map_init_fixed(&m, 20), 0);
	for (uint64_t i = 0; i < 12; i++)
		cr_assert_eq(td_map_add(&m, 77, i), 0);
	cr_assert_eq(td_map_add(&m, 78, 100), 0);
	while (td_map_find_next(&m, 77, &cur, &v)) {
		n++;
		seen |= 1ull << v;
	}
	cr_expect_eq(n, 12);
	cr_expect_eq(seen, 0xfff);
	/* removal in the middle of the run keeps the rest reachable */
	for (unsigned k = 0; k < 6; k++)
		cr_assert(td_map_remove(&m, 77));
	cur = n = 0;
	while (td_map_find_next(&m, 77, &cur, &v))
		n++;
	cr_expect_eq(n, 6);
	cr_expect(td_map_get(&m, 78, &v));
	cr_expect_eq(v, 100);
	cr_expect_eq(m.count, 7);
	td_map_free(&m);
}

/* Random inserts and removals against a plain array: backward-shift
 * deletion leaves every remaining key reachable, wrap-around included. */
static void churn(struct td_map *m, unsigned keys, unsigned ops, uint64_t seed)
{
	uint64_t *ref = calloc(keys, sizeof(*ref)); /* value + 1, 0: absent */
	size_t live = 0;

	cr_assert_not_null(ref);
	for (unsigned op = 0; op < ops; op++) {
		uint64_t k, v;

		seed = seed * 6364136223846793005ull + 1442695040888963407ull;
		k = (seed >> 33) % keys;
		if (seed >> 63) {
			bool had = ref[k] != 0;

			cr_assert_eq(td_map_remove(m, k), had, "op %u: remove %llu", op,
				(unsigned long long)k);
			live -= had;
			ref[k] = 0;
		} else if (live < (m->max ? m->max : keys) || ref[k]) {
			int r = td_map_set(m, k, op);

			cr_assert_eq(r, ref[k] ? 0 : 1, "op %u: set %llu", op, (unsigned long long)k);
			live += !ref[k];
			ref[k] = (uint64_t)op + 1;
		}
		if (op % 64 == 0) {
			for (uint64_t q = 0; q < keys; q++) {
				bool found = td_map_get(m, q, &v);

				cr_assert_eq(found, ref[q] != 0, "op %u: key %llu", op,
					(unsigned long long)q);
				if (found)
					cr_assert_eq(v + 1, ref[q]);
			}
			cr_assert_eq(m->count, live);
		}
	}
	free(ref);
}

Test(map, removal_keeps_every_key_reachable)
{
	struct td_map grow = { 0 }, fixed;

	churn(&grow, 3000, 200000, 1);
	td_map_free(&grow);
	/* a small fixed table: long runs, wrap-around at the end */
	cr_assert_eq(td_map_init_fixed(&fixed, 8), 0);
	cr_expect_eq(fixed.cap, 16);
	churn(&fixed, 40, 200000, 2);
	td_map_free(&fixed);
}

Test(map, fixed_table_never_allocates_and_refuses_when_full)
{
	struct td_map m;
	const void *storage;
	size_t bytes;
	uint64_t *vp, v;

	cr_expect_eq(td_map_init_fixed(&m, 0), -EINVAL);
	cr_assert_eq(td_map_init_fixed(&m, 1000), 0);
	storage = m.slots;
	bytes = td_map_bytes(&m);
	/* any allocation from here on would fail and show */
	td_fault_arm(TD_FAULT_MALLOC, 1);
	for (uint64_t tid = 1; tid <= 1000; tid++)
		cr_assert_eq(td_map_set(&m, tid, tid * 2), 1, "tid %llu", (unsigned long long)tid);
	cr_expect_eq(td_map_set(&m, 5000, 1), -TD_E_FULL);
	cr_expect_eq(td_map_add(&m, 5000, 1), -TD_E_FULL);
	cr_expect_eq(td_map_upsert(&m, 5000, &vp), -TD_E_FULL);
	cr_expect_not(td_map_get(&m, 5000, &v), "a refused key is not there");
	cr_expect_eq(td_map_set(&m, 500, 7), 0, "a replace in a full table works");
	cr_expect_eq(td_map_upsert(&m, 501, &vp), 0);
	cr_expect_eq(*vp, 1002);
	cr_expect_eq(m.count, 1000);
	/* thread churn: tids keep growing, the table never degrades */
	for (uint64_t tid = 1001; tid < 200000; tid++) {
		cr_assert(td_map_remove(&m, tid - 1000));
		cr_assert_eq(td_map_set(&m, tid, tid), 1);
	}
	cr_expect_eq(m.count, 1000);
	cr_expect(td_map_get(&m, 199999, &v));
	cr_expect_not(td_map_get(&m, 1000, &v));
	cr_expect_not(td_fault_fired(), "the fixed table never asked for memory");
	td_fault_arm(0, 0);
	cr_expect_eq(m.slots, storage);
	cr_expect_eq(td_map_bytes(&m), bytes);
	td_map_free(&m);
}

Test(map, growable_allocation_failure_keeps_the_contents)
{
	struct td_map m = { 0 };
	uint64_t v;

	td_fault_arm(TD_FAULT_MALLOC, 1);
	cr_expect_eq(td_map_set(&m, 1, 1), -ENOMEM);
	td_fault_arm(0, 0);
	cr_expect_eq(m.count, 0);
	for (uint64_t k = 0; k < 512; k++)
		cr_assert_eq(td_map_set(&m, k, k), 1); /* exactly half of 1024 */
	td_fault_arm(TD_FAULT_MALLOC, 1);
	cr_expect_eq(td_map_set(&m, 9999, 1), -ENOMEM, "growing failed");
	td_fault_arm(0, 0);
	cr_expect_eq(m.count, 512);
	for (uint64_t k = 0; k < 512; k++)
		cr_assert(td_map_get(&m, k, &v) && v == k);
	cr_expect_eq(td_map_set(&m, 9999, 1), 1, "and works once memory is back");
	td_map_free(&m);
}

Test(common, task_info_of_self)
{
	struct td_task_info info;

	cr_assert_eq(td_task_info_read(getpid(), getpid(), &info), 0);
	cr_expect_eq(info.state, 'R');
	cr_expect_eq(info.ppid, getppid());
	cr_expect_eq(td_task_info_read(0x3ffffff0, 0x3ffffff0, &info), -ESRCH);
}

/* td_maps_file_at against a reading of this process's maps by stdio: at
 * both ends of every mapping, a file's say 1, the others 0; a gone process
 * -ESRCH.  The kernel hands the maps out in whole lines, but a line longer
 * than td_maps_file_at's 4 KiB buffer comes in pieces: a file mapped from
 * a path of over 5000 bytes makes one. */
Test(common, maps_file_at_agrees_with_the_maps)
{
	char top[] = "/tmp/tracerd-test-maps-XXXXXX", name[201], cmd[128], line[8192];
	unsigned files = 0, anon = 0, long_lines = 0;
	int dir, fd;
	void *m;
	FILE *f;
	pid_t child;

	cr_assert_not_null(mkdtemp(top));
	memset(name, 'd', 200);
	name[200] = '\0';
	dir = open(top, O_RDONLY | O_DIRECTORY);
	for (int i = 0; i < 26 && dir >= 0; i++) {
		int sub;

		cr_assert_eq(mkdirat(dir, name, 0700), 0);
		sub = openat(dir, name, O_RDONLY | O_DIRECTORY);
		close(dir);
		dir = sub;
	}
	cr_assert_geq(dir, 0);
	fd = openat(dir, "f", O_RDWR | O_CREAT, 0600);
	close(dir);
	cr_assert_geq(fd, 0);
	cr_assert_eq(ftruncate(fd, 4096), 0);
	m = mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, 0);
	close(fd);
	cr_assert_neq(m, MAP_FAILED);

	f = fopen("/proc/self/maps", "re");
	cr_assert_not_null(f);
	while (fgets(line, sizeof(line), f)) {
		unsigned long long start, end;
		int off = 0;

		long_lines += strlen(line) > 4096;
		cr_assert_geq(sscanf(line, "%llx-%llx %*s %*s %*s %*s %n", &start, &end, &off), 2);
		if (start >= 0xffffffffff600000ull)
			continue; /* vsyscall: not in the task's own maps for long */
		files += line[off] == '/';
		anon += line[off] != '/';
		cr_expect_eq(td_maps_file_at(getpid(), start), line[off] == '/', "%s", line);
		cr_expect_eq(td_maps_file_at(getpid(), end - 1), line[off] == '/', "%s", line);
	}
	fclose(f);
	cr_expect_eq(long_lines, 1);
	cr_expect_eq(td_maps_file_at(getpid(), (uintptr_t)m), 1);
	munmap(m, 4096);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", top);
	cr_expect_eq(system(cmd), 0);
	cr_expect_gt(files, 10);
	cr_expect_gt(anon, 2);
	cr_expect_eq(td_maps_file_at(getpid(), (uintptr_t)&td_maps_file_at), 1);
	cr_expect_eq(td_maps_file_at(getpid(), 0), 0);
	child = fork();
	if (child == 0)
		_exit(0);
	cr_assert_eq(waitpid(child, NULL, 0), child);
	cr_expect_eq(td_maps_file_at(child, (uintptr_t)&td_maps_file_at), -ESRCH);
}

/* Percentiles by nearest rank: with 2 values p50 is the lower and p99 the
 * higher (it was the other way round), and a higher quantile is never a
 * lower value. */
Test(common, ranks_are_nearest_and_monotone)
{
	cr_expect_eq(td_rank(1, 0.5), 0);
	cr_expect_eq(td_rank(1, 0.99), 0);
	cr_expect_eq(td_rank(2, 0.5), 0);
	cr_expect_eq(td_rank(2, 0.99), 1);
	cr_expect_eq(td_rank(100, 0.5), 49);
	cr_expect_eq(td_rank(100, 0.99), 98);
	cr_expect_eq(td_rank(1000, 0.99), 989);
	cr_expect_eq(td_rank(7, 1.0), 6);
	for (size_t n = 1; n <= 300; n++) {
		size_t last = 0;

		for (int p = 1; p <= 100; p++) {
			size_t k = td_rank(n, p / 100.0);

			cr_assert_lt(k, n);
			cr_assert_geq(k, last, "n %zu: p%d below p%d", n, p, p - 1);
			last = k;
		}
	}
}
