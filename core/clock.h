/* The program's one monotonic clock: nanoseconds for latencies, deadlines
 * and benchmarks (never for timestamps a person reads; the log stamps lines
 * with the wall clock). The ms and s forms are the same reading, converted.
 * drape_cpu_ns is not a clock of time passing but this process's CPU time:
 * on a shared machine the monotonic clock also counts other processes'
 * turns. */
#ifndef DRAPE_CLOCK_H
#define DRAPE_CLOCK_H

#include <stdint.h>

int64_t drape_now_ns(void); /* CLOCK_MONOTONIC */
int64_t drape_cpu_ns(void); /* CLOCK_PROCESS_CPUTIME_ID */

static inline double drape_now_ms(void) { return (double)drape_now_ns() * 1e-6; }
static inline double drape_now_s(void) { return (double)drape_now_ns() * 1e-9; }

#endif
