/* SPDX-License-Identifier: GPL-2.0-or-later */
/* libFuzzer entry point for the chunk reader: any input must decode
 * without a crash, a hang or an allocation beyond its declared bounds, and
 * the accessors must stay in bounds on whatever the tables hold.
 * make fuzz (long run) / part of make check (short run on the golden
 * corpus). */
#include <stddef.h>
#include <stdint.h>

#include "../../chunkfmt/chunkfmt.h"

static int on_sample(void *arg, struct chunk_reader *r, const struct chunk_sample *s)
{
	uint32_t locs[256];
	unsigned n = chunk_reader_stack(r, s->stack_id, locs, 256);
	struct chunk_thread t;

	(void)arg;
	chunk_reader_thread(r, s->thread_id, &t);
	for (unsigned i = 0; i < n && i < 256; i++) {
		struct chunk_location l;
		struct chunk_map_info m;

		if (!chunk_reader_location(r, locs[i], &l))
			continue;
		chunk_reader_mapping(r, l.mapping_id, &m);
		for (unsigned k = 0; k < l.nlines; k++) {
			struct chunk_function f;

			if (chunk_reader_function(r, l.lines[k].function_id, &f) && f.name)
				(void)f.name[0];
		}
	}
	return 0;
}

static int on_event(void *arg, struct chunk_reader *r, const struct chunk_event *e)
{
	uint32_t locs[64];

	(void)arg;
	if (e->type == CHUNK_EV_PROCESS)
		chunk_reader_stack(r, e->stack_id, locs, 64);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const struct chunk_visitor v = { NULL, on_sample, on_event, NULL };
	struct chunk_report rep;

	chunk_read_buffer(data, size, &v, NULL, &rep);
	return 0;
}
