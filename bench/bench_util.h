/* What every benchmark program needs: the clock in ms, the median of a
 * set of timings, and a small deterministic random number for inputs. */
#ifndef DRAPE_BENCH_UTIL_H
#define DRAPE_BENCH_UTIL_H

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

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

/* A busy loop in a process group of its own that dies with the benchmark
 * (PR_SET_PDEATHSIG): a competing load. Stop it with bench_busy_stop. */
static inline pid_t bench_busy_start(void)
{
    pid_t parent = getpid();
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        setpgid(0, 0);
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent) _exit(0);
        for (volatile unsigned long x = 0;; x++) {}
    }
    if (pid > 0) setpgid(pid, pid);
    return pid;
}

static inline void bench_busy_stop(pid_t pid)
{
    if (pid <= 0) return;
    kill(-pid, SIGKILL);
    waitpid(pid, NULL, 0);
}

#endif
