/* SPDX-License-Identifier: GPL-2.0-or-later */
/* tracerd report stage: read chunks (files, snapshots, repositories),
 * merge them into one profile (ids are per chunk: everything is remapped
 * by content), and write what people read.
 *
 * It owns the profile and the output formats.  It never touches a target
 * or unwinds (chunks are symbolized when recorded), never writes a chunk,
 * and reads chunk bytes only through chunkfmt/.
 *
 * The profile keeps a merged prefix tree of frames (each inline level is a
 * frame of its own, as dump prints them) with sample counts at the nodes,
 * per-thread statistics, and the events worth reporting (crashes with
 * their stacks, exits, lost samples). */
#ifndef TD_REPORT_H
#define TD_REPORT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "../chunkfmt/chunkfmt.h"

struct rp_filter {
	int64_t from_ns, to_ns; /* real time; 0: open.  Negative: relative to
				   the end of the data */
	uint32_t pids[16];
	unsigned npids;
	uint32_t tids[64];
	unsigned ntids;
	const char *thread_glob; /* fnmatch on the thread name */
	int state;		 /* -1: any, else enum tcf_state */
	bool time_order;	 /* keep every sample's time and stack, in
				    order (speedscope's time-order view) */
	bool addresses;		 /* frames keep their address: one node per
				    pc, not per line (pprof's Locations) */
};

struct rp_load_report {
	unsigned files, chunks, chunks_damaged, chunks_skipped;
	uint64_t samples_read, samples_kept, bytes_skipped;
	char warning[256]; /* what was skipped, once */
};

/* owns: every table of the merged profile */
struct rp_profile;

/* Load paths (files or repository directories).  -ENOENT and friends for
 * a missing path, -TD_E_CORRUPT when a path holds no readable chunk,
 * -ENODATA for an empty repository. *ret_bad_path names the culprit. */
int rp_load(const char *const *paths, unsigned n, const struct rp_filter *f,
	struct rp_profile **ret, struct rp_load_report *rep, const char **ret_bad_path);
void rp_free(struct rp_profile *p);

enum rp_by { RP_BY_FUNCTION, RP_BY_LINE, RP_BY_MODULE };

int rp_top(FILE *out, const struct rp_profile *p, enum rp_by by, unsigned limit);
int rp_tree(FILE *out, const struct rp_profile *p, double min_percent);
int rp_folded(FILE *out, const struct rp_profile *p, bool per_thread);
int rp_threads(FILE *out, const struct rp_profile *p);
/* gzip-compressed profile.proto, readable by go tool pprof. */
int rp_pprof(FILE *out, const struct rp_profile *p);
/* Who an OTLP profile is of: its resource's attributes (NULL or "": left
 * out); labels "k=v,..." as tracerd.conf's Labels= checks them. */
struct rp_otlp_resource {
	const char *service, *host, *exe, *unit, *labels;
	uint32_t pid;
	uint64_t from_ns, until_ns; /* the window (real time); 0: the samples' span */
};
/* An OTLP ExportProfilesServiceRequest (protobuf, uncompressed) holding
 * the profile as one Profile of res. */
int rp_otlp(FILE *out, const struct rp_profile *p, const struct rp_otlp_resource *res);
/* speedscope JSON: one sampled profile per thread. */
int rp_speedscope(FILE *out, const struct rp_profile *p);
/* One self-contained HTML file with an interactive flame graph. */
int rp_html(FILE *out, const struct rp_profile *p);
/* Wait episodes by site (wall recordings): text, or JSON with json. */
int rp_waits(FILE *out, const struct rp_profile *p, unsigned limit, bool json);
int rp_info(FILE *out, const struct rp_profile *p, const struct rp_load_report *rep);

uint64_t rp_samples(const struct rp_profile *p);

/* A view of p holding only pid's samples and wait episodes (view.c): what
 * rp_load with --pid pid would give to rp_pprof and rp_otlp (not to the
 * formats that read the stack tree's counts), without loading again.  p must outlive it; free it with rp_view_free (NULL-safe). */
int rp_view_pid(const struct rp_profile *p, uint32_t pid, struct rp_profile **ret);
void rp_view_free(struct rp_profile *v);

/* Where a fatal signal came from, as a death's row or a live recorder
 * knows it (signal.c): known false for a row of an older chunk (addr is
 * then si_addr whatever sent it); comm the sender's, already fit to print
 * (NULL or "": not read). */
struct rp_signal_from {
	bool known;
	int32_t code;
	uint32_t pid, uid;
	const char *comm;
};
/* The words after "killed by signal N (Name)" that say where signo came
 * from: the fault address for a fault the kernel raised (style
 * RP_SIG_HEADER " at address 0x10", RP_SIG_INFO ", fault address 0x10"),
 * ", sent by PID N (comm), uid U (kill)" for a signal a process sent,
 * the timer or other source otherwise; for a row of an older chunk the
 * address alone, and only where the signal is one a fault raises.  pid:
 * the dying process's.  The reports and the service's journal say it
 * alike. */
enum rp_sig_style { RP_SIG_HEADER, RP_SIG_INFO };
void rp_signal_from(FILE *out, uint32_t pid, int32_t signo, uint64_t addr,
	const struct rp_signal_from *src, enum rp_sig_style style);

#endif
