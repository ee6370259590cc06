/* The CPU backend's thread pool (pool.h): chunks claimed from one counter,
 * workers woken and put to sleep by futexes (Linux). */
#define _GNU_SOURCE
#include "pool.h"

#include <linux/futex.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "../../core/clock.h"
#include "../../core/status.h"

/* How long an idle thread spins before it sleeps: longer than the gap
 * between two conv layers of a frame, far shorter than a frame. */
#define SPIN_NS 50000
/* the chunk index of a job that takes no more claims */
#define CLOSED 0xffffffffu

typedef struct {
    _Alignas(64) atomic_int seq; /* bumped to wake the worker (its futex word) */
    atomic_int sleeping;         /* it is in, or about to enter, futex_wait */
    pthread_t thread;
    cpu_pool *pool;
} worker;

struct cpu_pool {
    /* (generation << 32) | the next chunk: a claim is a compare-and-swap
     * that fails once the generation has moved on, so a worker that wakes
     * late can never take a chunk of the next job for the last one's */
    _Alignas(64) _Atomic uint64_t claim;
    _Alignas(64) atomic_int done; /* chunks finished in this job (the caller's futex word) */
    atomic_int waiting;           /* the caller sleeps on done */
    _Atomic(cpu_pool_fn) fn;      /* the job; written only while the claim is CLOSED */
    _Atomic(void *) arg;
    atomic_int n;
    atomic_int quit;
    uint32_t gen;
    int n_workers, caller_chunks;
    worker *w;
};

static void futex_wait(atomic_int *word, int value)
{
    syscall(SYS_futex, (int *)word, FUTEX_WAIT_PRIVATE, value, NULL, NULL, 0);
}

static void futex_wake(atomic_int *word, int n)
{
    syscall(SYS_futex, (int *)word, FUTEX_WAKE_PRIVATE, n, NULL, NULL, 0);
}

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

/* Spins while *word == value, for at most SPIN_NS; whether it changed. */
static int spin_while(atomic_int *word, int value)
{
    int64_t until = drape_now_ns() + SPIN_NS;
    for (int k = 1;; k++) {
        if (atomic_load(word) != value) return 1;
        if (!(k & 63) && drape_now_ns() > until) return 0;
        cpu_relax();
    }
}

/* Claims and runs chunks of the current job until none is left; how many ran. */
static int work(cpu_pool *p)
{
    int ran = 0;
    uint64_t c = atomic_load(&p->claim);
    for (;;) {
        uint32_t idx = (uint32_t)c;
        int n = atomic_load(&p->n);
        if (idx == CLOSED || idx >= (uint32_t)n) return ran;
        cpu_pool_fn fn = atomic_load(&p->fn);
        void *arg = atomic_load(&p->arg);
        /* success means the claim was still (this generation, idx), so n, fn
         * and arg read above are this job's (they change only after CLOSED) */
        if (atomic_compare_exchange_weak(&p->claim, &c, c + 1)) {
            fn(arg, (int)idx);
            ran++;
            if (atomic_fetch_add(&p->done, 1) + 1 == n && atomic_load(&p->waiting)) futex_wake(&p->done, 1);
            c = atomic_load(&p->claim);
        }
    }
}

static void *worker_main(void *arg)
{
    worker *w = arg;
    cpu_pool *p = w->pool;
    int seen = 0;
    for (;;) {
        if (!spin_while(&w->seq, seen))
            while (atomic_load(&w->seq) == seen) {
                atomic_store(&w->sleeping, 1);
                futex_wait(&w->seq, seen); /* returns at once if seq moved since */
                atomic_store(&w->sleeping, 0);
            }
        seen = atomic_load(&w->seq);
        if (atomic_load(&p->quit)) return NULL;
        work(p);
    }
}

static void wake(worker *w)
{
    atomic_fetch_add(&w->seq, 1);
    if (atomic_load(&w->sleeping)) futex_wake(&w->seq, 1);
}

int cpu_pool_create(cpu_pool **out, int workers)
{
    *out = NULL;
    if (workers < 0) workers = 0;
    cpu_pool *p = aligned_alloc(64, (sizeof *p + 63) / 64 * 64);
    worker *w = workers ? aligned_alloc(64, (sizeof *w * (size_t)workers + 63) / 64 * 64) : NULL;
    if (!p || (workers && !w)) {
        free(p);
        free(w);
        return DRAPE_ENOMEM;
    }
    memset(p, 0, sizeof *p);
    atomic_store(&p->claim, CLOSED);
    p->w = w;
    for (int i = 0; i < workers; i++) {
        memset(&w[i], 0, sizeof w[i]);
        w[i].pool = p;
        if (pthread_create(&w[i].thread, NULL, worker_main, &w[i])) {
            cpu_pool_free(p);
            return DRAPE_EBACKEND;
        }
        p->n_workers = i + 1;
    }
    *out = p;
    return DRAPE_OK;
}

void cpu_pool_free(cpu_pool *p)
{
    if (!p) return;
    atomic_store(&p->quit, 1);
    for (int i = 0; i < p->n_workers; i++) {
        atomic_fetch_add(&p->w[i].seq, 1);
        futex_wake(&p->w[i].seq, 1);
    }
    for (int i = 0; i < p->n_workers; i++) pthread_join(p->w[i].thread, NULL);
    free(p->w);
    free(p);
}

void cpu_pool_run(cpu_pool *p, int team, int n, cpu_pool_fn fn, void *arg)
{
    if (team > p->n_workers + 1) team = p->n_workers + 1;
    if (team > n) team = n;
    if (team <= 1) { /* alone: no claims, no waiting */
        for (int i = 0; i < n; i++) fn(arg, i);
        p->caller_chunks = n > 0 ? n : 0;
        return;
    }
    /* the last job is complete (every chunk claimed and done); close it
     * before its fields change, then open this one */
    atomic_store(&p->claim, (uint64_t)p->gen << 32 | CLOSED);
    atomic_store(&p->fn, fn);
    atomic_store(&p->arg, arg);
    atomic_store(&p->n, n);
    atomic_store(&p->done, 0);
    p->gen++;
    atomic_store(&p->claim, (uint64_t)p->gen << 32);
    for (int i = 0; i < team - 1; i++) wake(&p->w[i]);
    p->caller_chunks = work(p);
    /* only chunks a worker took and has not finished are left to wait for:
     * spin a little (a chunk is short), then sleep until the last one ends */
    int64_t until = drape_now_ns() + SPIN_NS;
    for (int k = 1, d; (d = atomic_load(&p->done)) != n; k++) {
        if ((k & 63) || drape_now_ns() <= until) {
            cpu_relax();
            continue;
        }
        atomic_store(&p->waiting, 1);
        while ((d = atomic_load(&p->done)) != n) futex_wait(&p->done, d);
        atomic_store(&p->waiting, 0);
    }
}

int cpu_pool_caller_chunks(const cpu_pool *p) { return p->caller_chunks; }
