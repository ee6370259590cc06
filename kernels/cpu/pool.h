/* The CPU backend's per-frame thread pool (docs/design.md §1.2, "Threads
 * under contention").
 *
 * A job is n chunks; the caller and up to team − 1 workers claim them one at
 * a time from a shared counter and run them. The caller returns once every
 * chunk has run: it waits only for chunks a worker has claimed and not yet
 * finished, never for a worker that has not started (one that wakes after
 * the chunks are all taken finds nothing and sleeps again). So on a busy
 * machine, where a woken worker may not run for a scheduler period, a job
 * costs what the running threads can do, not the latency of the slowest
 * one, unlike a parallel region whose end waits for its whole team. Idle
 * workers spin for a few microseconds (the next conv layer follows at once),
 * then sleep on a futex: nothing spins between frames, whatever
 * OMP_WAIT_POLICY says.
 *
 * Which thread runs a chunk never changes what it computes; the results do
 * not depend on the team. One thread drives a pool at a time. */
#ifndef DRAPE_CPU_POOL_H
#define DRAPE_CPU_POOL_H

typedef void (*cpu_pool_fn)(void *arg, int chunk);
typedef struct cpu_pool cpu_pool;

/* A pool of `workers` threads (≥ 0; 0 makes a pool that runs everything on
 * the caller). DRAPE_ENOMEM / DRAPE_EBACKEND (a thread could not start). */
int cpu_pool_create(cpu_pool **out, int workers);
void cpu_pool_free(cpu_pool *p);

/* Runs fn(arg, 0 .. n − 1), each chunk exactly once, with the caller and at
 * most team − 1 workers (team beyond the pool is the pool). */
void cpu_pool_run(cpu_pool *p, int team, int n, cpu_pool_fn fn, void *arg);

/* How many chunks the caller itself ran in the last job (for the tests). */
int cpu_pool_caller_chunks(const cpu_pool *p);

#endif
