/* SPDX-License-Identifier: GPL-2.0-or-later */
/* tracerd: the size and duration grammars, one for the command line and
 * tracerd.conf(5) alike.
 *
 *   size      a whole number of bytes, optionally followed by K, M, G or T
 *             (powers of 1024, either case), which "B" or "iB" may follow;
 *             "B" alone for bytes: 512, 64K, 2MiB, 1GB, 16B
 *   duration  numbers each followed by a unit, summed, as systemd.time(7)
 *             writes them: us, ms, s, m or min, h, d, w (and their long
 *             forms: usec, msec, sec, second(s), minute(s), hr, hour(s),
 *             day(s), week(s)); a number may have a fraction ("1.5h",
 *             to the nanosecond); a number alone is seconds: 30s, 10m,
 *             1h 30min, 5
 *
 * No locale is consulted (a decimal point is always '.'), no sign or
 * leading space is taken, and a value beyond UINT64_MAX is -ERANGE, never
 * wrapped.  A caller checks its own bounds and words its own message. */
#ifndef TD_PARSE_H
#define TD_PARSE_H

#include <stdint.h>

/* s as a size in bytes.  Returns 0 and *ret_bytes, -EINVAL if s is not a
 * size, -ERANGE if it is one beyond UINT64_MAX bytes. */
int td_size_parse(const char *s, uint64_t *ret_bytes);

/* s as a duration in nanoseconds.  Returns 0 and *ret_ns, -EINVAL if s is
 * not a duration, -ERANGE if it is one beyond UINT64_MAX ns (about 584
 * years). */
int td_duration_parse(const char *s, uint64_t *ret_ns);

#endif
