/* What every benchmark program needs: the clock in ms, the median of a
 * set of timings, and a small deterministic random number for inputs. */
#ifndef DRAPE_BENCH_UTIL_H
#define DRAPE_BENCH_UTIL_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../core/clock.h"

/* the benchmarks' clock: the program's one (core/clock.h), in ms */
#define now_ms drape_now_ms

static inline int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* sorts v in place */
static inline double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_d);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* uniform in [-1, 1) from a 32-bit LCG state */
static inline float rnd(unsigned *s)
{
    *s = *s * 1103515245u + 12345u;
    return ((*s >> 8) & 0xffff) / 32768.0f - 1.0f;
}

/* The port a draped started with --port 0 names on the stream fd (its
 * stdout: "... listening on HOST:PORT"); 0 when it exits first. Closes fd. */
static inline int bench_draped_port(int fd)
{
    FILE *f = fdopen(fd, "r");
    char line[256];
    int port = 0;
    while (f && !port && fgets(line, sizeof line, f)) {
        char *p = strstr(line, "listening on ");
        if (p && (p = strrchr(p, ':'))) port = atoi(p + 1);
    }
    if (f) fclose(f);
    return port;
}

#endif
