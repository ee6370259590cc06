/* The program's one monotonic clock: nanoseconds for latencies, deadlines
 * and benchmarks (never for timestamps a person reads; the log stamps lines
 * with the wall clock). The ms and s forms are the same reading, converted.
 * drape_cpu_ns is not a clock of time passing but this process's CPU time:
 * on a shared machine the monotonic clock also counts other processes'
 * turns. */
#ifndef DRAPE_CLOCK_H
#define DRAPE_CLOCK_H

#include <pthread.h>
#include <stdint.h>

int64_t drape_now_ns(void); /* CLOCK_MONOTONIC */
int64_t drape_cpu_ns(void); /* CLOCK_PROCESS_CPUTIME_ID */

static inline double drape_now_ms(void) { return (double)drape_now_ns() * 1e-6; }
static inline double drape_now_s(void) { return (double)drape_now_ns() * 1e-9; }

/* A condition variable whose timed waits run on drape_now_ns's clock, so a
 * change of the wall clock moves no deadline. */
int drape_cond_init(pthread_cond_t *cv);
/* Waits on cv until signalled or drape_now_ns() reaches deadline_ns; the
 * pthread return code (ETIMEDOUT when the deadline passed). */
int drape_cond_wait_until(pthread_cond_t *cv, pthread_mutex_t *mu, int64_t deadline_ns);

#endif
