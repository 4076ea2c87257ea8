/* SPDX-License-Identifier: GPL-2.0-or-later */
/* tracerd report -f html: the flame graph page drawn by chromium (frames,
 * zoom, search, the thread filter), and every name from the recording
 * kept as data and shown as text, never run as markup. */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../chunkfmt/chunkfmt-internal.h"
#include "../helpers.h"

static int count(const char *hay, const char *needle)
{
	int n = 0;

	for (const char *p = hay; (p = strstr(p, needle)); p++)
		n++;
	return n;
}

/* The class of the frame drawn for name in dom ("" if none). */
static const char *frame_class(const char *dom, const char *name)
{
	static char cls[64];
	char want[256];
	const char *at, *c;

	snprintf(want, sizeof(want), ">%s<", name);
	cls[0] = '\0';
	at = strstr(dom, want);
	for (c = at; c && c > dom && strncmp(c, "class=\"", 7); c--)
		;
	if (c && c > dom)
		sscanf(c + 7, "%63[^\"]", cls);
	return cls;
}

Test(report_html, html_flame_graph_in_chromium, .timeout = 180)
{
	char html[512], url[1400], shot[600], *dom, *log;
	const char *argv[] = { "tracerd", "report", GOLD("rec-crash.tcf"), "-f", "html", "-o", html,
		NULL };
	struct run_result r;
	FILE *png;

	need_command("chromium", "chromium");
	snprintf(html, sizeof(html), "%s/test-flamegraph.html", TD_BUILD_DIR);
	run_tracerd(&r, argv);
	cr_assert_eq(r.status, 0, "%s", r.err);
	run_result_free(&r);
	{
		char *page = read_all(html);

		cr_expect(!strstr(page, "http://") && !strstr(page, "https://") &&
				!strstr(page, " src="),
			"self-contained: no URL, no external script");
		free(page);
	}

	/* the expected frames render */
	snprintf(url, sizeof(url), "file://%s", html);
	dom = chromium_page(url, "--dump-dom", &log);
	cr_expect(strstr(dom, ">crash_leaf<") && strstr(dom, ">main<") && strstr(dom, ">now<"),
		"frames drawn:\n%.2000s", dom);
	/* coloured by kind: the program's code, the C runtime's */
	cr_expect_str_eq(frame_class(dom, "crash_leaf"), "f k-p");
	cr_expect_str_eq(frame_class(dom, "__libc_start_call_main"), "f k-l");
	cr_expect_str_eq(frame_class(dom, "__vdso_clock_gettime"), "f k-l");
	cr_expect(!strstr(log, "Uncaught") && !strstr(log, ":ERROR:CONSOLE"),
		"no console errors:\n%s", log);
	free(dom);
	free(log);

	/* zoom: the clicked frame spans the full width, like the root */
	snprintf(url, sizeof(url), "file://%s#zoom=now", html);
	dom = chromium_page(url, "--dump-dom", &log);
	{
		const char *root = strstr(dom, ">all<"), *z = strstr(dom, ">now<");
		char wr[32] = "", wz[32] = "";

		cr_assert(root && z, "%.2000s", dom);
		/* style="left: 0px; top: ..px; width: Wpx;" precedes the name */
		for (const char *p = root; p > dom && !wr[0]; p--)
			if (!strncmp(p, "width: ", 7))
				sscanf(p + 7, "%31[^p]", wr);
		for (const char *p = z; p > dom && !wz[0]; p--)
			if (!strncmp(p, "width: ", 7))
				sscanf(p + 7, "%31[^p]", wz);
		cr_expect_str_eq(wz, wr, "zoomed frame width %s, full width %s", wz, wr);
		cr_expect(!strstr(dom, ">crash_leaf<") || strstr(dom, ">crash_leaf<") < z,
			"below the zoomed frame only its callees");
	}
	free(dom);
	free(log);

	/* search: highlight and the matched share (now: 47 of 49 samples) */
	snprintf(url, sizeof(url), "file://%s#search=^now$", html);
	dom = chromium_page(url, "--dump-dom", &log);
	cr_expect(!strcmp(frame_class(dom, "now"), "f k-p m") && strstr(dom, "matched 95.92%"),
		"search highlights 'now' and matches 95.92%%:\n%.3000s", dom);
	/* the highlight is the class m, after the frame's kind */
	cr_expect_eq(count(dom, " m\" data-n=\""), 1, "only 'now' is highlighted");
	free(dom);
	free(log);

	/* the thread filter: on the synthetic recording, each worker's matched
	 * share of one function is what top --thread says of it */
	{
		char sh[600], cmd[1400], want[32];
		const char *gen[] = { "tracerd", "report", GOLD("tcf-v1.0-small.tcf"), "-f", "html",
			"-o", sh, NULL };
		const char *threads[] = { "worker-0", "worker-2" };

		snprintf(sh, sizeof(sh), "%s/test-flamegraph-threads.html", TD_BUILD_DIR);
		run_tracerd(&r, gen);
		cr_assert_eq(r.status, 0, "%s", r.err);
		run_result_free(&r);
		for (int t = 0; t < 2; t++) {
			char *top;

			snprintf(cmd, sizeof(cmd),
				"%s/tracerd report %s --thread %s --limit 0 | "
				"awk '/ net::detail::inline_helper_10\\(\\) / { print $2 }'",
				TD_BUILD_DIR, GOLD("tcf-v1.0-small.tcf"), threads[t]);
			top = shell_output(cmd, NULL);
			cr_assert(sscanf(top, "%31s", want) == 1, "top --thread %s: %s", threads[t], top);
			free(top);
			snprintf(url, sizeof(url),
				"file://%s#thread=%s&search=^net::detail::inline_helper_10..$", sh,
				threads[t]);
			dom = chromium_page(url, "--dump-dom", &log);
			snprintf(cmd, sizeof(cmd), "matched %s<", want);
			cr_expect(strstr(dom, cmd), "%s: want '%s' in:\n%.600s", threads[t], cmd,
				strstr(dom, "id=\"match\"") ? strstr(dom, "id=\"match\"") : dom);
			cr_expect(!strstr(log, "Uncaught"), "no console errors:\n%s", log);
			free(dom);
			free(log);
		}
	}

	/* a screenshot with the test output */
	snprintf(shot, sizeof(shot), "--screenshot=%s/test-flamegraph.png --window-size=1200,500",
		TD_BUILD_DIR);
	snprintf(url, sizeof(url), "file://%s#search=crash", html);
	free(chromium_page(url, shot, &log));
	free(log);
	snprintf(shot, sizeof(shot), "%s/test-flamegraph.png", TD_BUILD_DIR);
	png = fopen(shot, "rb");
	cr_expect_not_null(png, "screenshot saved at %s", shot);
	if (png) {
		fseek(png, 0, SEEK_END);
		cr_expect_gt(ftell(png), 1000);
		fclose(png);
	}
}

/* ---- what a recording names, in the html page */

/* A wall recording whose every name is hostile markup: threads, a
 * function, its file and module, and what a wait waited for. */
#define EVIL_WAITER "</script><script>document.title='pwned'</script>"

#define EVIL_OWNER "\"'&amp;<!--<b>x</b>"

#define EVIL_FUNC "f</SCRIPT ><img src=x onerror=\"document.title='pwned'\">"

#define EVIL_WHAT "pipe:[</script><b>1</b>\"'&]"

static void write_evil_chunk(const char *path)
{
	struct chunk_writer_opts o = { .target_pid = 100, .minor = 1 };
	struct chunk_writer *w;
	struct chunk_wait mutex = { .time_ns = 2000000, .wait_ns = 30000000, .kind = TCF_WAIT_MUTEX,
		.object = 0x1234, .nowners = 1 };
	struct chunk_wait fd = { .time_ns = 3000000, .wait_ns = 20000000, .kind = TCF_WAIT_FD,
		.object = 7 };
	uint32_t map, f_main, f_evil, l_main, l_evil, s_evil, s_main, waiter, owner;

	o.fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0640);
	cr_assert_geq(o.fd, 0);
	cr_assert_eq(chunk_writer_open(&o, &w), 0);
	map = chunk_writer_mapping(w, &(struct chunk_mapping){ 0x1000, 0x1000, 0,
					      "/tmp/</script><b>m</b>/\"lib'.so", NULL, 0, 0 });
	f_main = chunk_writer_function(w, "main", NULL, "m.c", 1);
	f_evil = chunk_writer_function(w, EVIL_FUNC, NULL, "</script>\"'.c", 5);
	l_main = chunk_writer_location(w, map, 0x1010, (struct chunk_line[]){ { f_main, 2, 0 } }, 1);
	l_evil = chunk_writer_location(w, map, 0x1020, (struct chunk_line[]){ { f_evil, 6, 0 } }, 1);
	s_evil = chunk_writer_stack(w, (uint32_t[]){ l_evil, l_main }, 2);
	s_main = chunk_writer_stack(w, (uint32_t[]){ l_main }, 1);
	waiter = chunk_writer_thread(w, 101, 100, EVIL_WAITER);
	owner = chunk_writer_thread(w, 102, 100, EVIL_OWNER);
	cr_assert_eq(chunk_writer_meta(w, "sampling.mode", "wall"), 0);
	cr_assert_eq(chunk_writer_meta(w, "sampling.hz", "100"), 0);
	for (int i = 0; i < 5; i++) {
		cr_assert_eq(chunk_writer_sample(w, (1 + i) * 10000000ull, waiter, TCF_STATE_SLEEPING,
				     s_evil, NULL, 0),
			0);
		cr_assert_eq(chunk_writer_sample(w, (1 + i) * 10000000ull, owner, TCF_STATE_ONCPU,
				     s_main, NULL, 0),
			0);
	}
	mutex.thread_id = waiter;
	mutex.stack_id = s_evil;
	mutex.owners[0] = (struct chunk_wait_owner){ owner, s_evil, 30000000 };
	cr_assert_eq(chunk_writer_wait(w, &mutex), 0);
	fd.thread_id = owner;
	fd.stack_id = s_main;
	fd.what = chunk_writer_string(w, EVIL_WHAT);
	cr_assert_eq(chunk_writer_wait(w, &fd), 0);
	cr_assert_eq(chunk_writer_finish(w, TCF_END_STOP, 0), 0);
	chunk_writer_free(w);
	close(o.fd);
}

/* The page tracerd draws of the evil chunk: its paths (chunk, page: the
 * caller removes both) and the page's text. */
static char *evil_page(char chunk[static 32], char page[static 64])
{
	const char *argv[] = { "tracerd", "report", chunk, "-f", "html", "-o", page, NULL };
	struct run_result r;
	int fd;

	snprintf(chunk, 32, "/tmp/tracerd-evil-XXXXXX");
	fd = mkstemp(chunk);
	cr_assert_geq(fd, 0);
	close(fd);
	snprintf(page, 64, "%s.html", chunk);
	write_evil_chunk(chunk);
	run_tracerd(&r, argv);
	cr_assert_eq(r.status, 0, "%s", r.err);
	run_result_free(&r);
	return read_all(page);
}

static void evil_page_remove(const char *chunk, const char *page)
{
	unlink(chunk);
	unlink(page);
}

/* Every string from the recording reaches the page's data intact and
 * cannot end its script: the page holds its own two scripts and no other
 * end of one, and opens no comment. */
Test(report_html, html_escapes_what_the_recording_names, .timeout = 120)
{
	char chunk[32], page[64], *text = evil_page(chunk, page);
	int closes = 0;

	for (const char *p = text; *p; p++)
		closes += !strncasecmp(p, "</script", 8);
	cr_expect_eq(closes, 2, "%d ends of a script in the page", closes);
	cr_expect(!strstr(text, "<!--"), "no comment opens in the page");
	free(text);
	evil_page_remove(chunk, page);
}

/* The data read as a browser reads it (up to the first "</script") is
 * JSON and gives back each name exactly. */
Test(report_html, html_data_gives_back_what_the_recording_names, .timeout = 120)
{
	char chunk[32], page[64], *data;
	int status;

	need_command("node", "nodejs");
	free(evil_page(chunk, page));
	data = html_page_data(page, &status);
	evil_page_remove(chunk, page);
	cr_assert_eq(status, 0, "%s", data);
	/* as JSON.stringify writes them */
	cr_expect(strstr(data, "\t\"</script><script>document.title='pwned'</script>\"\t101\n"),
		"the waiter's name:\n%s", data);
	cr_expect(strstr(data, "\t\"\\\"'&amp;<!--<b>x</b>\"\t102\n"), "the owner's name:\n%s",
		data);
	cr_expect(strstr(data, "\t\"fd\"\t\"7\"\t\"pipe:[</script><b>1</b>\\\"'&]\"\t"
			       "\"fd 7 (pipe:[</script><b>1</b>\\\"'&])\"\t\"fd\"\t"),
		"what the fd was:\n%s", data);
	cr_expect(strstr(data, "\t[\"f</SCRIPT ><img src=x onerror=\\\"document.title='pwned'\\\">\","
			       "\"main\"]\t[[\"\\\"'&amp;<!--<b>x</b>\",102,30000000,"),
		"the mutex's stack and its owner:\n%s", data);
	free(data);
}

/* The page a browser draws shows the names as text, runs none of them
 * (its title is its own) and creates no element from them, in both
 * views. */
Test(report_html, html_draws_what_the_recording_names_as_text, .timeout = 120)
{
	char chunk[32], page[64], url[128], *dom;
	const char *views[] = { "", "#view=waits" };

	need_command("chromium", "chromium");
	free(evil_page(chunk, page));
	for (int v = 0; v < 2; v++) {
		char *log;

		snprintf(url, sizeof(url), "file://%s%s", page, views[v]);
		dom = chromium_page(url, "--dump-dom", &log);
		cr_expect(strstr(dom, "<title>tracerd flame graph</title>"),
			"%s: no name ran as a script: %.300s", url, dom);
		cr_expect(!strstr(dom, "<img") && !strstr(dom, "<b>x") && !strstr(dom, "<b>1") &&
				  !strstr(dom, "<b>m"),
			"%s: no element from a name:\n%s", url, dom);
		cr_expect(strstr(dom, "&lt;/script&gt;&lt;script&gt;document.title='pwned'"
				      "&lt;/script&gt; (101)"),
			"%s: the waiter's name, as text:\n%s", url, dom);
		cr_expect(!strstr(log, "Uncaught") && !strstr(log, ":ERROR:CONSOLE"),
			"%s: no console errors:\n%s", url, log);
		if (v == 0)
			cr_expect(strstr(dom, ">f&lt;/SCRIPT &gt;&lt;img src=x onerror=\"document.title="
					      "'pwned'\"&gt;<"),
				"the function's frame, as text:\n%s", dom);
		else
			cr_expect(strstr(dom, "<td>pipe:[&lt;/script&gt;&lt;b&gt;1&lt;/b&gt;\"'&amp;]</td>") &&
					  strstr(dom, "<summary>\"'&amp;amp;&lt;!--&lt;b&gt;x&lt;/b&gt; (102): "),
				"the table's what and owner, as text:\n%s", dom);
		free(dom);
		free(log);
	}
	evil_page_remove(chunk, page);
}
