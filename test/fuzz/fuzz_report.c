/* SPDX-License-Identifier: GPL-2.0-or-later */
/* libFuzzer entry point for the report path: any input is loaded as a
 * chunk file into a merged profile and rendered in every format.  It must
 * not crash, hang, or use memory or time beyond what its size allows
 * (tracerd-chunk(5), "Bounds"): libFuzzer's -rss_limit_mb and -timeout
 * catch the rest.  Part of make fuzz and make fuzz-check. */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

#include "../../report/report.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static FILE *null;
	struct rp_filter f = { .state = -1 };
	struct rp_load_report rep;
	struct rp_profile *p = NULL;
	const char *paths[1];
	char path[64];
	int fd;

	if (!null && !(null = fopen("/dev/null", "w")))
		return 0;
	fd = memfd_create("fuzz.tcf", MFD_CLOEXEC);
	if (fd < 0)
		return 0;
	if (write(fd, data, size) != (ssize_t)size)
		goto out;
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	paths[0] = path;
	/* once in file order, once keeping every sample's time (speedscope)
	 * and with times relative to the end of the data, which the file
	 * chose (an hour back, to 1 ns before the end) */
	for (int order = 0; order < 2; order++) {
		f.time_order = order;
		f.from_ns = order ? -3600000000000ll : 0;
		f.to_ns = order ? -1 : 0;
		if (rp_load(paths, 1, &f, &p, &rep, NULL) < 0)
			break;
		rp_top(null, p, RP_BY_FUNCTION, 20);
		rp_top(null, p, RP_BY_LINE, 20);
		rp_top(null, p, RP_BY_MODULE, 20);
		rp_tree(null, p, 0);
		rp_folded(null, p, order);
		rp_threads(null, p);
		rp_info(null, p, &rep);
		rp_pprof(null, p);
		rp_speedscope(null, p);
		rp_html(null, p);
		rp_waits(null, p, 0, order);
		rp_free(p);
		p = NULL;
	}
out:
	close(fd);
	return 0;
}
