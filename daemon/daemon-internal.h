/* Private to daemon/: the recorder's shared state and its rings. */
#ifndef TD_DAEMON_INTERNAL_H
#define TD_DAEMON_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "../ptrace/ptrace.h"
#include "daemon.h"
#include "ring.h"
#include "../common/td.h"

/* An event from the sampler to the writer (flat). */
enum rec_event_kind {
	REC_EV_THREAD_NEW,
	REC_EV_THREAD_EXIT,
	REC_EV_EXEC,
	REC_EV_PROCESS_EXIT,
	REC_EV_CRASH, /* followed by the stacks of that crash's threads */
	REC_EV_CRASH_DONE,
};

struct rec_event {
	enum rec_event_kind kind;
	pid_t pid, tid, old_tid;
	int signo, status;
	uint64_t addr, time_ns;
	uint32_t crash_id; /* samples with this id belong to the crash */
};

#define REC_STOP_RING 8192

/* Shared by the main, sampler and writer threads.  Counters are atomics
 * written by one thread and read by others. */
struct recorder {
	struct rec_config cfg;
	struct ring samples; /* struct td_sample + window; flags bit 31: crash */
	struct ring events;  /* struct rec_event */
	struct ring notices; /* struct rec_notice: writer -> control loop */
	pthread_t sampler, writer;
	bool sampler_started, writer_started;
	int sfd;	     /* signalfd of the control loop */
	int writer_wake;   /* eventfd */
	int sampler_wake;    /* eventfd */
	int main_wake;	     /* eventfd */
	_Atomic int stop;    /* 1: stop, 2: hurry */
	_Atomic int rotate_req, snapshot_req;
	_Atomic int sampler_done, writer_done;
	/* sampler startup */
	_Atomic int attach_state; /* 0 pending, 1 ok, -1 failed */
	int attach_err;
	pid_t attach_pid;
	/* writer asks the sampler to grow a thread's window */
	_Atomic uint32_t grow[1024]; /* tid % 1024 -> tid */
	/* statistics */
	_Atomic uint64_t samples_taken, samples_written, ticks;
	_Atomic uint64_t lost_ring, lost_not_stopped, lost_events, unwind_partial;
	_Atomic uint64_t threads_seen, threads_live, targets_live;
	_Atomic uint32_t stop_ns[REC_STOP_RING]; /* recent stopped times */
	_Atomic uint64_t stop_n, stop_max;
	_Atomic uint64_t bytes_written;
	_Atomic uint64_t startup_cpu_us, startup_samples; /* at the first written batch */
	_Atomic int io_err;
	_Atomic int crashes;
	_Atomic uint32_t crash_acked; /* the writer synced this crash's chunk */
	int exit_status_of_target;
	void *repo_handle; /* struct repo *, owned by the writer once started */
};

void *sampler_main(void *arg);
void *writer_main(void *arg);
void rec_wake(int fd);

#endif
