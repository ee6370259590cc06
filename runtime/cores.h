/* How many cores this process can use now: the CPU backend's team size on a
 * shared machine (docs/design.md §1.2, "Threads under contention").
 *
 * The cores the process may run on (its affinity mask, capped by a cgroup
 * CPU quota) minus what other processes used of them over the last period:
 * /proc/stat's busy jiffies on those CPUs less this process's own CPU time.
 * Work at a positive nice value counts as free for a process that is not
 * niced itself: the scheduler gives it about a tenth of a core against ours
 * (CFS weights, nice 10 against 0), so it does not keep a team member off
 * its core.
 * A team larger than that makes a parallel region wait for a member that is
 * not running; a team of one never waits. The estimate is re-read at most
 * every DRAPE_CORES_PERIOD_S, never per frame. Without /proc (or when a file
 * does not parse) the team is the whole capacity, as before. */
#ifndef DRAPE_CORES_H
#define DRAPE_CORES_H

#include <stdint.h>

#define DRAPE_CORES_MAX 1024     /* CPUs an affinity mask may name */
#define DRAPE_CORES_PERIOD_S 0.5 /* seconds between two readings of /proc/stat */

/* Busy and total jiffies of a set of CPUs, from /proc/stat. */
typedef struct {
    uint64_t busy, total;
    int cpus; /* how many of the set's CPUs have a line */
} drape_cpu_times;

typedef struct {
    unsigned char mask[DRAPE_CORES_MAX / 8]; /* the CPUs this process may run on */
    int cpus;                                /* how many */
    int count_nice;                          /* this process runs niced: niced work competes */
    double quota;                            /* cgroup CPU quota in cores; 0: none */
    drape_cpu_times last;                    /* the last reading (total 0: none yet) */
    int64_t last_ns, last_own_ns;            /* its clock and this process's CPU time */
    double free;                             /* cores free over the last period */
    int team;                                /* the last answer of drape_cores_team */
} drape_cores;

/* Affinity, quota and a first reading. Never fails: what cannot be read is
 * taken as unconstrained (all online CPUs, no quota). */
void drape_cores_init(drape_cores *c);

/* The team for a parallel region of at most max threads: between 1 and max,
 * the cores free rounded (at least one). Re-reads /proc/stat when
 * DRAPE_CORES_PERIOD_S has passed since the last reading, else returns the
 * last answer. */
int drape_cores_team(drape_cores *c, int max);

/* ---- the pure parts, on the files' text (tested on real /proc inputs) ---- */

/* Sums /proc/stat's per-CPU lines ("cpuN user nice system idle iowait irq
 * softirq steal ...") over the CPUs in mask: busy = user + system + irq +
 * softirq + steal (guest time is inside user), and nice when count_nice;
 * total = all of those with nice, idle and iowait. DRAPE_EINVAL when no line
 * of the set is found. */
int drape_cores_parse_stat(const char *text, const unsigned char *mask, int mask_bits, int count_nice,
                           drape_cpu_times *out);

/* A cgroup v2 cpu.max ("max 100000" or "150000 100000") in cores; 0 for no
 * quota or text that does not parse. */
double drape_cores_parse_cpu_max(const char *text);
/* cgroup v1: cpu.cfs_quota_us ("-1" for none) over cpu.cfs_period_us */
double drape_cores_parse_cfs(const char *quota, const char *period);

/* Cores used by other processes between two readings of the same CPU set:
 * the busy share of the set's jiffies, in cores, less this process's CPU
 * time over the wall time (both in ns); never below 0. */
double drape_cores_others(const drape_cpu_times *a, const drape_cpu_times *b, int64_t own_ns, int64_t wall_ns);

/* Cores free for this process: capacity (cpus, or the quota if smaller) less
 * what the others use, the others being able to take only the cpus. */
double drape_cores_free(int cpus, double quota, double others);

/* The team for that many free cores: round to nearest, within [1, max]. */
int drape_cores_pick(double free, int max);

#endif
