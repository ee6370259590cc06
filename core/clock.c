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
