#define _GNU_SOURCE /* sched_getaffinity, CPU_* */
#include "cores.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "../core/clock.h"
#include "../core/log.h"
#include "../core/status.h"

static int mask_has(const unsigned char *mask, int bits, long cpu)
{
    return cpu >= 0 && cpu < bits && (mask[cpu / 8] >> (cpu % 8) & 1);
}

int drape_cores_parse_stat(const char *text, const unsigned char *mask, int mask_bits, int count_nice,
                           drape_cpu_times *out)
{
    *out = (drape_cpu_times){0};
    for (const char *line = text; line && *line; line = strchr(line, '\n'), line = line ? line + 1 : NULL) {
        /* "cpuN ..." only: the first line ("cpu  ...") sums every CPU, the mask picks */
        if (strncmp(line, "cpu", 3) || !isdigit((unsigned char)line[3])) continue;
        char *p;
        long cpu = strtol(line + 3, &p, 10);
        if (!mask_has(mask, mask_bits, cpu)) continue;
        uint64_t v[8] = {0}; /* user nice system idle iowait irq softirq steal */
        for (int i = 0; i < 8; i++) {
            while (*p == ' ') p++;
            if (!isdigit((unsigned char)*p)) break; /* older kernels have fewer fields */
            v[i] = strtoull(p, &p, 10);
        }
        uint64_t busy = v[0] + v[2] + v[5] + v[6] + v[7];
        out->busy += busy + (count_nice ? v[1] : 0);
        out->total += busy + v[1] + v[3] + v[4];
        out->cpus++;
    }
    return out->cpus ? DRAPE_OK : DRAPE_EINVAL;
}

double drape_cores_parse_cpu_max(const char *text)
{
    char *end;
    double quota = strtod(text, &end);
    if (end == text) return 0; /* "max", or nothing */
    double period = strtod(end, &end);
    return quota > 0 && period > 0 ? quota / period : 0;
}

double drape_cores_parse_cfs(const char *quota, const char *period)
{
    char *e1, *e2;
    double q = strtod(quota, &e1), p = strtod(period, &e2);
    return e1 != quota && e2 != period && q > 0 && p > 0 ? q / p : 0;
}

double drape_cores_others(const drape_cpu_times *a, const drape_cpu_times *b, int64_t own_ns, int64_t wall_ns)
{
    if (b->total <= a->total || b->busy < a->busy || wall_ns <= 0 || b->cpus != a->cpus) return 0;
    double busy = (double)b->cpus * (double)(b->busy - a->busy) / (double)(b->total - a->total);
    double others = busy - (double)own_ns / (double)wall_ns;
    return others > 0 ? others : 0;
}

double drape_cores_free(int cpus, double quota, double others)
{
    double on_cpus = cpus - (others < cpus ? others : cpus);
    return quota > 0 && quota < on_cpus ? quota : on_cpus;
}

int drape_cores_pick(double free, int max)
{
    int n = (int)(free + 0.5);
    return n < 1 ? 1 : n > max ? max : n;
}

/* The file's text into buf (at most n − 1 bytes), 0-terminated; -1 if it cannot be read. */
static int read_text(const char *path, char *buf, size_t n)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    size_t got = 0;
    ssize_t r;
    while (got + 1 < n && (r = read(fd, buf + got, n - 1 - got)) > 0) got += (size_t)r;
    close(fd);
    buf[got] = 0;
    return got ? 0 : -1;
}

/* the cgroup's CPU quota in cores (0: none): v2's cpu.max, else v1's cfs
 * files, as a container sees its own cgroup at /sys/fs/cgroup */
static double read_quota(void)
{
    char a[64], b[64];
    if (!read_text("/sys/fs/cgroup/cpu.max", a, sizeof a)) return drape_cores_parse_cpu_max(a);
    static const char *v1[] = {"/sys/fs/cgroup/cpu", "/sys/fs/cgroup/cpu,cpuacct"};
    for (int i = 0; i < 2; i++) {
        char q[96], p[96];
        snprintf(q, sizeof q, "%s/cpu.cfs_quota_us", v1[i]);
        snprintf(p, sizeof p, "%s/cpu.cfs_period_us", v1[i]);
        if (!read_text(q, a, sizeof a) && !read_text(p, b, sizeof b)) return drape_cores_parse_cfs(a, b);
    }
    return 0;
}

/* /proc/stat over the mask; the per-CPU lines come first, so a buffer sized
 * for them is enough (the rest, interrupt counts, can be long) */
static int read_stat(const drape_cores *c, drape_cpu_times *t)
{
    char buf[16384];
    if (read_text("/proc/stat", buf, sizeof buf)) return -1;
    return drape_cores_parse_stat(buf, c->mask, DRAPE_CORES_MAX, c->count_nice, t);
}

static double capacity(const drape_cores *c)
{
    return c->quota > 0 && c->quota < c->cpus ? c->quota : c->cpus;
}

void drape_cores_init(drape_cores *c)
{
    memset(c, 0, sizeof *c);
    cpu_set_t *set = CPU_ALLOC(DRAPE_CORES_MAX);
    size_t size = CPU_ALLOC_SIZE(DRAPE_CORES_MAX);
    if (set && !sched_getaffinity(0, size, set)) {
        for (int i = 0; i < DRAPE_CORES_MAX; i++)
            if (CPU_ISSET_S(i, size, set)) c->mask[i / 8] |= (unsigned char)(1u << (i % 8));
        c->cpus = CPU_COUNT_S(size, set);
    }
    if (set) CPU_FREE(set);
    if (c->cpus <= 0) { /* no affinity to read: every online CPU */
        long n = sysconf(_SC_NPROCESSORS_ONLN);
        c->cpus = n > 0 ? (n < DRAPE_CORES_MAX ? (int)n : DRAPE_CORES_MAX) : 1;
        for (int i = 0; i < c->cpus; i++) c->mask[i / 8] |= (unsigned char)(1u << (i % 8));
    }
    c->quota = read_quota();
    errno = 0;
    int nice = getpriority(PRIO_PROCESS, 0);
    c->count_nice = !errno && nice > 0;
    c->free = capacity(c);
    if (read_stat(c, &c->last)) c->last = (drape_cpu_times){0};
    c->last_ns = drape_now_ns();
    c->last_own_ns = drape_cpu_ns();
}

int drape_cores_team(drape_cores *c, int max)
{
    if (max <= 1) return 1;
    int64_t now = drape_now_ns();
    if (now - c->last_ns >= (int64_t)(DRAPE_CORES_PERIOD_S * 1e9)) {
        drape_cpu_times t;
        int64_t own = drape_cpu_ns();
        if (!read_stat(c, &t)) {
            c->free = c->last.total
                          ? drape_cores_free(c->cpus, c->quota,
                                             drape_cores_others(&c->last, &t, own - c->last_own_ns, now - c->last_ns))
                          : capacity(c);
            c->last = t;
        }
        c->last_ns = now;
        c->last_own_ns = own;
    }
    int team = drape_cores_pick(c->free, max);
    if (team != c->team)
        LOG_DEBUG("cores: %.2f of %d free, team %d of %d (was %d)", c->free, c->cpus, team, max, c->team);
    c->team = team;
    return team;
}
