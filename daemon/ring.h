/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Private to daemon/: the single-producer single-consumer ring that carries
 * flat records from one thread to another.  The recorder has five:
 * samples and events (sampler -> writer), notices (writer -> control
 * loop), and in follow mode asks (control loop -> sampler) and answers
 * (sampler -> control loop).  A ring never wakes its consumer: the
 * producer posts the consumer's wake (wake.h) when it wants it to look.
 *
 * The contract, for every ring:
 *
 * - One producer thread and one consumer thread, fixed when the ring is
 *   set up; nobody else calls ring_reserve/ring_publish or ring_peek/
 *   ring_pop.  ring_used() may be called from either side.
 * - Slots are fixed-size and allocated once by ring_init (zeroed pages,
 *   faulted in at first use, or all at once by ring_prefault); the ring
 *   owns them.  Nothing is ever allocated, locked or waited for afterwards, so
 *   the producer may run while a target thread is stopped.
 * - Producer: ring_reserve() gives the next free slot, or NULL when the
 *   ring is full.  Full means drop: the producer counts the record as
 *   lost and goes on; it never waits for the consumer.  It writes the
 *   whole record into the slot, then ring_publish() makes it visible by
 *   advancing tail with a release store.  Until published, the slot is
 *   the producer's alone; a reserved slot that is never published is
 *   simply reused by the next reserve.
 * - Consumer: ring_peek() loads tail with acquire and returns the oldest
 *   published slot (or NULL): every byte the producer wrote before its
 *   publish is visible, nothing written after it is promised.  The slot
 *   stays valid and unchanged until ring_pop(), which hands it back by
 *   advancing head with a release store; the producer's acquire load of
 *   head in ring_reserve() orders its next write to that slot after the
 *   consumer's last read of it.
 * - Records are flat and pointer-free (struct td_sample + stack bytes,
 *   struct rec_event, struct rec_notice, a pid_t): nothing in a slot needs
 *   freeing.
 * - ring_free() frees the slots; it is called by the thread that set the
 *   ring up (the control loop, in rec_free) after both producer and
 *   consumer have been joined. */
#ifndef TD_DAEMON_RING_H
#define TD_DAEMON_RING_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

/* owns: mem (cap slots of slot_size bytes; or, a byte ring, cap bytes) */
struct ring {
	_Atomic uint64_t head; /* written by the consumer only */
	_Atomic uint64_t tail; /* written by the producer only */
	uint32_t cap;	       /* slots (bytes in a byte ring), a power of two */
	uint32_t slot_size;    /* bytes, a multiple of 16; 0 in a byte ring */
	uint32_t skip;	       /* byte ring, producer's: bytes its reserve wraps past */
	uint32_t warm;	       /* byte ring: bytes the producer keeps to while the
				* consumer keeps up (ring_keep_warm); cap: all */
	uint8_t *mem;
};

/* A byte ring: records of any size up to what each reserve asks, each
 * taking only the bytes it uses (a sample's window rounded to 16, plus a
 * 16-byte header), in bytes rounded up to a power of two.  The same
 * contract as slots (one producer, one consumer, full means drop). */
int ring_init_bytes(struct ring *q, size_t bytes);

/* At least cap slots (rounded up to a power of two) of slot_size bytes
 * (rounded up to 16), zeroed.  Returns 0 or -ENOMEM. */
int ring_init(struct ring *q, uint32_t cap, uint32_t slot_size);
/* A byte ring: the producer goes back to the start whenever it finds the
 * ring empty past its first warm bytes (rounded down to 16), so that while
 * the consumer keeps up the same pages come round, faulted in already and
 * likely in a cache, and the rest of the ring is touched only by a backlog
 * (a page fault per page at its first touch: a quarter of the daemon's CPU
 * at 999 Hz when records of tens of KiB walked a 64 MiB ring from end to
 * end, measured). */
void ring_keep_warm(struct ring *q, size_t warm);
/* Faults every slot's pages in now (a byte ring's warm bytes), so that
 * the producer does not take a page fault per slot on its first pass. */
void ring_prefault(struct ring *q);
/* Frees the slots; NULL-safe on a ring that ring_init never filled (a
 * zeroed struct ring) or already freed.  Both sides must be done. */
void ring_free(struct ring *q);

/* Producer: the next free slot, or NULL if the ring is full. */
static inline void *ring_reserve(struct ring *q)
{
	uint64_t t = atomic_load_explicit(&q->tail, memory_order_relaxed);

	if (t - atomic_load_explicit(&q->head, memory_order_acquire) >= q->cap)
		return NULL;
	return q->mem + (size_t)(t & (q->cap - 1)) * q->slot_size;
}

/* Producer: the slot ring_reserve gave is complete; the consumer may read
 * it. */
static inline void ring_publish(struct ring *q)
{
	atomic_store_explicit(&q->tail, atomic_load_explicit(&q->tail, memory_order_relaxed) + 1,
		memory_order_release);
}

/* Consumer: the oldest published slot, or NULL if there is none. */
static inline void *ring_peek(struct ring *q)
{
	uint64_t h = atomic_load_explicit(&q->head, memory_order_relaxed);

	if (h == atomic_load_explicit(&q->tail, memory_order_acquire))
		return NULL;
	return q->mem + (size_t)(h & (q->cap - 1)) * q->slot_size;
}

/* Consumer: done with the slot ring_peek gave; the producer may reuse it. */
static inline void ring_pop(struct ring *q)
{
	atomic_store_explicit(&q->head, atomic_load_explicit(&q->head, memory_order_relaxed) + 1,
		memory_order_release);
}

/* ---- byte rings: a record is a 16-byte header (its length, or
 * RING_WRAP: the rest up to the end is unused) and its bytes, 16-aligned */
#define RING_WRAP UINT32_MAX

static inline uint64_t ring_rec_bytes(uint64_t len)
{
	return 16 + ((len + 15) & ~(uint64_t)15);
}

/* Producer: room for a record of up to len bytes, or NULL if full. */
static inline void *ring_reserve_bytes(struct ring *q, size_t len)
{
	uint64_t t = atomic_load_explicit(&q->tail, memory_order_relaxed);
	uint64_t used = t - atomic_load_explicit(&q->head, memory_order_acquire);
	uint64_t pos = t & (q->cap - 1), need = ring_rec_bytes(len);

	q->skip = 0;
	/* not split: wrap to the start; or early, when the consumer has
	 * caught up past the warm bytes (ring_keep_warm) */
	if (pos + need > q->cap || (!used && pos >= q->warm && need <= pos)) {
		q->skip = (uint32_t)(q->cap - pos);
		pos = 0;
	}
	if (q->cap - used < q->skip + need)
		return NULL;
	return q->mem + pos + 16;
}

/* Producer: the record ring_reserve_bytes gave is complete, len bytes
 * (at most those reserved). */
static inline void ring_publish_bytes(struct ring *q, size_t len)
{
	uint64_t t = atomic_load_explicit(&q->tail, memory_order_relaxed);
	uint64_t pos = t & (q->cap - 1);

	if (q->skip) {
		*(uint32_t *)(q->mem + pos) = RING_WRAP;
		t += q->skip;
		pos = 0;
	}
	*(uint32_t *)(q->mem + pos) = (uint32_t)len;
	atomic_store_explicit(&q->tail, t + ring_rec_bytes(len), memory_order_release);
}

/* Consumer: the oldest published record, or NULL. */
static inline void *ring_peek_bytes(struct ring *q)
{
	uint64_t h = atomic_load_explicit(&q->head, memory_order_relaxed);
	uint64_t pos = h & (q->cap - 1);

	if (h == atomic_load_explicit(&q->tail, memory_order_acquire))
		return NULL;
	if (*(uint32_t *)(q->mem + pos) == RING_WRAP) {
		/* a record follows at the start: the producer published
		 * both with one store of tail */
		atomic_store_explicit(&q->head, h + (q->cap - pos), memory_order_release);
		pos = 0;
	}
	return q->mem + pos + 16;
}

/* Consumer: done with the record ring_peek_bytes gave. */
static inline void ring_pop_bytes(struct ring *q)
{
	uint64_t h = atomic_load_explicit(&q->head, memory_order_relaxed);
	uint32_t len = *(uint32_t *)(q->mem + (h & (q->cap - 1)));

	atomic_store_explicit(&q->head, h + ring_rec_bytes(len), memory_order_release);
}

/* Published records not yet popped (bytes in a byte ring): exact on the consumer's side, a
 * momentary estimate on the producer's. */
static inline uint64_t ring_used(struct ring *q)
{
	uint64_t h = atomic_load_explicit(&q->head, memory_order_acquire);

	return atomic_load_explicit(&q->tail, memory_order_acquire) - h;
}

#endif
