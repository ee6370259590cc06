#include "clock.h"

#include <time.h>

static int64_t read_ns(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int64_t drape_now_ns(void) { return read_ns(CLOCK_MONOTONIC); }
int64_t drape_cpu_ns(void) { return read_ns(CLOCK_PROCESS_CPUTIME_ID); }

int drape_cond_init(pthread_cond_t *cv)
{
    pthread_condattr_t ca;
    int rc = pthread_condattr_init(&ca);
    if (rc) return rc;
    if (!(rc = pthread_condattr_setclock(&ca, CLOCK_MONOTONIC))) rc = pthread_cond_init(cv, &ca);
    pthread_condattr_destroy(&ca);
    return rc;
}

int drape_cond_wait_until(pthread_cond_t *cv, pthread_mutex_t *mu, int64_t deadline_ns)
{
    struct timespec ts = {(time_t)(deadline_ns / 1000000000), (long)(deadline_ns % 1000000000)};
    return pthread_cond_timedwait(cv, mu, &ts);
}
