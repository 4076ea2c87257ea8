/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Private to service/: what the service loop and its exporter process
 * (export.c) share.  As with a worker, a SOCK_SEQPACKET pair and one
 * struct exp_msg per message, nothing else: no memory is shared after
 * the fork. */
#ifndef TD_EXPORT_INTERNAL_H
#define TD_EXPORT_INTERNAL_H

#include "service-internal.h"

/* The spool takes a share of each rule's MaxSize= (1/EXP_SPOOL_SHARE),
 * which its repository gives up: the two together stay within it. */
#define EXP_SPOOL_SHARE 8
#define EXP_SPOOL_FILES_MAX 65536

enum exp_msg_kind {
	EXP_MSG_FOLLOW, /* loop -> exporter: rule's worker follows (pid, start_time) */
	EXP_MSG_GONE,	/* loop -> exporter: pid exited */
	EXP_MSG_LOG,	/* exporter -> loop: a journal line (prio, text) */
};

struct exp_msg {
	enum exp_msg_kind kind;
	int rule; /* FOLLOW: index in the config the exporter was forked with */
	pid_t pid;
	uint64_t start_time;
	int prio;
	char text[480];
};

/* In the forked child: export for cfg (which it owns as the fork copied
 * it), told by the loop over fd, until SIGTERM or the loop hangs up.
 * Returns the exit status for _exit. */
int export_main(const struct svc_config *cfg, const char *proc_root, int fd);
/* s made safe as a label value into dst (len bytes). */
void exp_label_safe(char *dst, size_t len, const char *s);

/* ---- the spool (export-spool.c): the requests not sent yet.
 * owns: dfd */
struct exp_spool {
	int dfd;
	uint64_t max;	    /* the files' total may not pass it */
	uint64_t bytes;	    /* the files' total */
	uint64_t next_seq;
	unsigned count;	    /* files */
	uint64_t lost;	    /* removed unsent to make room, since open */
};

struct exp_spooled {
	uint64_t seq, bytes;
};

/* Open (making it 0700) the spool at dir, bounded at max bytes. */
int exp_spool_open(struct exp_spool *s, const char *dir, uint64_t max);
void exp_spool_close(struct exp_spool *s);
/* A request: target ("/path?query"), its content type, its body.  The
 * oldest go first when it would not fit; *ret_dropped says how many.
 * -EFBIG: larger than the bound itself. */
int exp_spool_add(struct exp_spool *s, const char *target, const char *type, const void *body,
	size_t len, unsigned *ret_dropped);
/* The requests in order, oldest first, at most max; their count. */
size_t exp_spool_list(struct exp_spool *s, struct exp_spooled *out, size_t max);
/* Its file whole ("TARGET\nTYPE\nBODY") into *ret (malloc'd). */
int exp_spool_read(struct exp_spool *s, const struct exp_spooled *e, char **ret, size_t *ret_len);
void exp_spool_remove(struct exp_spool *s, const struct exp_spooled *e);

/* ---- the loop's side (export-loop.c): the exporter process.
 * owns: fd, the child process */
struct svc_exporter {
	pid_t pid;	   /* 0: none running */
	int fd;		   /* -1: none */
	uint64_t retry_ns; /* after it died: when to start it again (0: not due) */
};

void exp_init(struct svc_exporter *x);
/* Fork the exporter for cfg (nothing if cfg has no [Export]); the child
 * closes fds (the loop's others) first.  0 or -errno. */
int exp_start(struct svc_exporter *x, const struct svc_config *cfg, const char *proc_root,
	const int *fds, unsigned nfds);
/* SIGTERM, then SIGKILL after a second: whatever it was sending stays in
 * the spool, whole, and goes with the next exporter. */
void exp_stop(struct svc_exporter *x);
void exp_tell(struct svc_exporter *x, enum exp_msg_kind kind, int rule,
	const struct td_proc_id *id);
/* Hand each line it sent to log.  Returns false when it hung up. */
bool exp_read(struct svc_exporter *x, void (*log)(void *arg, int prio, const char *msg),
	void *arg);
/* waitpid gave pid: was it the exporter?  Then it is forgotten and due
 * again in a few seconds. */
bool exp_reaped(struct svc_exporter *x, pid_t pid);

#endif
