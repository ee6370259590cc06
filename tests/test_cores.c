/* runtime/cores.c: the free-core estimate, on /proc and cgroup text in the
 * kernel's formats (the first /proc/stat below is a real one, from a 2-CPU
 * machine, its interrupt line shortened), then live on this machine. */
#define _GNU_SOURCE /* CPU_COUNT */
#include <criterion/criterion.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>

#include "../runtime/cores.h"
#include "../core/status.h"

static const char STAT_A[] =
    "cpu  162814 208861 113806 124623 705 0 623 0 0 0\n"
    "cpu0 75692 109084 54851 65868 87 0 139 0 0 0\n"
    "cpu1 87122 99776 58954 58754 617 0 484 0 0 0\n"
    "intr 2308210 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 1 1 9 0 0 0 0 612 161 0 62 1 134253 0 11663\n"
    "ctxt 10136755\n"
    "btime 1796217744\n"
    "processes 42386\n"
    "procs_running 8\n"
    "procs_blocked 0\n"
    "softirq 1190803 0 230359 4 66955 134229 0 4 148392 454 610406\n";

static void mask_of(unsigned char *mask, const int *cpus, int n)
{
    memset(mask, 0, DRAPE_CORES_MAX / 8);
    for (int i = 0; i < n; i++) mask[cpus[i] / 8] |= (unsigned char)(1u << (cpus[i] % 8));
}

Test(cores, parse_stat_sums_the_masked_cpus)
{
    unsigned char mask[DRAPE_CORES_MAX / 8];
    drape_cpu_times t;
    mask_of(mask, (int[]){0, 1}, 2);
    cr_assert_eq(drape_cores_parse_stat(STAT_A, mask, DRAPE_CORES_MAX, 0, &t), DRAPE_OK);
    /* the aggregate "cpu " line is not a CPU of its own */
    cr_assert_eq(t.cpus, 2);
    /* busy: user system irq softirq steal; total adds nice, idle and iowait */
    uint64_t busy0 = 75692 + 54851 + 0 + 139 + 0, busy1 = 87122 + 58954 + 0 + 484 + 0;
    cr_assert_eq(t.busy, busy0 + busy1);
    cr_assert_eq(t.total, busy0 + 109084 + 65868 + 87 + busy1 + 99776 + 58754 + 617);
    /* niced work counts as busy for a niced process */
    mask_of(mask, (int[]){0}, 1);
    cr_assert_eq(drape_cores_parse_stat(STAT_A, mask, DRAPE_CORES_MAX, 1, &t), DRAPE_OK);
    cr_assert_eq(t.busy, busy0 + 109084);
    cr_assert_eq(t.total, busy0 + 109084 + 65868 + 87);
    mask_of(mask, (int[]){1}, 1);
    cr_assert_eq(drape_cores_parse_stat(STAT_A, mask, DRAPE_CORES_MAX, 0, &t), DRAPE_OK);
    cr_assert_eq(t.cpus, 1);
    cr_assert_eq(t.busy, busy1);
    /* a set whose CPUs have no line */
    mask_of(mask, (int[]){5}, 1);
    cr_assert_eq(drape_cores_parse_stat(STAT_A, mask, DRAPE_CORES_MAX, 0, &t), DRAPE_EINVAL);
    cr_assert_eq(drape_cores_parse_stat("", mask, DRAPE_CORES_MAX, 0, &t), DRAPE_EINVAL);
    /* an old kernel's four fields (no iowait, irq, softirq, steal) */
    mask_of(mask, (int[]){0}, 1);
    cr_assert_eq(drape_cores_parse_stat("cpu  1 2 3 4\ncpu0 1 2 3 4\n", mask, DRAPE_CORES_MAX, 0, &t), DRAPE_OK);
    cr_assert_eq(t.busy, 4);
    cr_assert_eq(t.total, 10);
}

/* Half a second later (50 jiffies per CPU at USER_HZ 100): cpu0 was busy 40
 * of them, cpu1 25 (20 user, 5 system), and niced work ran 10 on cpu1; this
 * process used 0.2 s of CPU. */
Test(cores, others_and_team_from_two_readings)
{
    char b[1024];
    snprintf(b, sizeof b,
             "cpu  162879 208861 113811 124658 705 0 623 0 0 0\n"
             "cpu0 %d 109084 54851 %d 87 0 139 0 0 0\n"
             "cpu1 %d %d %d %d 617 0 484 0 0 0\n"
             "intr 2308999 0 0 0\nctxt 10137000\n",
             75692 + 40, 65868 + 10, 87122 + 20, 99776 + 10, 58954 + 5, 58754 + 15);
    unsigned char mask[DRAPE_CORES_MAX / 8];
    drape_cpu_times ta, tb;
    mask_of(mask, (int[]){0, 1}, 2);
    cr_assert_eq(drape_cores_parse_stat(STAT_A, mask, DRAPE_CORES_MAX, 0, &ta), DRAPE_OK);
    cr_assert_eq(drape_cores_parse_stat(b, mask, DRAPE_CORES_MAX, 0, &tb), DRAPE_OK);
    int64_t own = 200000000, wall = 500000000;
    /* busy 65 of 100 jiffies on 2 CPUs = 1.3 cores, ours 0.4 */
    double others = drape_cores_others(&ta, &tb, own, wall);
    cr_assert_float_eq(others, 1.3 - 0.4, 1e-9);
    double free = drape_cores_free(2, 0, others);
    cr_assert_float_eq(free, 2 - 0.9, 1e-9);
    cr_assert_eq(drape_cores_pick(free, 2), 1);
    /* alone on the machine the same readings leave both cores */
    cr_assert_eq(drape_cores_pick(drape_cores_free(2, 0, drape_cores_others(&ta, &tb, 650000000, wall)), 2), 2);
    /* a quota below what is free is the limit */
    cr_assert_float_eq(drape_cores_free(2, 0.5, others), 0.5, 1e-9);
    /* to a niced process the niced work is busy too: 75 of 100 */
    mask_of(mask, (int[]){0, 1}, 2);
    drape_cores_parse_stat(STAT_A, mask, DRAPE_CORES_MAX, 1, &ta);
    drape_cores_parse_stat(b, mask, DRAPE_CORES_MAX, 1, &tb);
    cr_assert_float_eq(drape_cores_others(&ta, &tb, own, wall), 1.5 - 0.4, 1e-9);
    /* cpu1 alone: 25 of 50 busy = 0.5 core, less ours 0.4 */
    mask_of(mask, (int[]){1}, 1);
    drape_cores_parse_stat(STAT_A, mask, DRAPE_CORES_MAX, 0, &ta);
    drape_cores_parse_stat(b, mask, DRAPE_CORES_MAX, 0, &tb);
    cr_assert_float_eq(drape_cores_others(&ta, &tb, own, wall), 0.1, 1e-9);
    /* our own time above the busy share (it ran on other CPUs): no others, not fewer */
    cr_assert_float_eq(drape_cores_others(&ta, &tb, wall, wall), 0, 0);
    /* no time passed, or the counters went back: nothing known, nothing taken */
    cr_assert_float_eq(drape_cores_others(&ta, &ta, 0, wall), 0, 0);
    cr_assert_float_eq(drape_cores_others(&tb, &ta, 0, wall), 0, 0);
}

Test(cores, pick_rounds_within_bounds)
{
    cr_assert_eq(drape_cores_pick(0, 4), 1); /* never no thread */
    cr_assert_eq(drape_cores_pick(-3, 4), 1);
    cr_assert_eq(drape_cores_pick(1.49, 4), 1);
    cr_assert_eq(drape_cores_pick(1.5, 4), 2);
    cr_assert_eq(drape_cores_pick(3.9, 4), 4);
    cr_assert_eq(drape_cores_pick(15.2, 4), 4);
    cr_assert_float_eq(drape_cores_free(4, 0, 9), 0, 0); /* others beyond our CPUs */
}

Test(cores, cgroup_quota_text)
{
    cr_assert_float_eq(drape_cores_parse_cpu_max("max 100000\n"), 0, 0);
    cr_assert_float_eq(drape_cores_parse_cpu_max("150000 100000\n"), 1.5, 1e-12);
    cr_assert_float_eq(drape_cores_parse_cpu_max("50000 100000\n"), 0.5, 1e-12);
    cr_assert_float_eq(drape_cores_parse_cpu_max(""), 0, 0);
    cr_assert_float_eq(drape_cores_parse_cpu_max("200000\n"), 0, 0); /* no period */
    cr_assert_float_eq(drape_cores_parse_cfs("-1\n", "100000\n"), 0, 0);
    cr_assert_float_eq(drape_cores_parse_cfs("200000\n", "100000\n"), 2, 1e-12);
    cr_assert_float_eq(drape_cores_parse_cfs("x", "100000\n"), 0, 0);
}

/* On this machine: the mask is the affinity, this /proc/stat parses over it,
 * and the team is within its bounds. */
Test(cores, live)
{
    drape_cores c;
    drape_cores_init(&c);
    cpu_set_t set;
    cr_assert_eq(sched_getaffinity(0, sizeof set, &set), 0);
    cr_assert_eq(c.cpus, CPU_COUNT(&set));
    cr_assert_gt(c.last.total, 0, "/proc/stat did not parse over the affinity mask");
    cr_assert_eq(c.last.cpus, c.cpus);
    int max = c.cpus + 2, team = drape_cores_team(&c, max);
    cr_assert(team >= 1 && team <= c.cpus, "team %d of %d CPUs", team, c.cpus);
    cr_assert_eq(drape_cores_team(&c, 1), 1);
}
