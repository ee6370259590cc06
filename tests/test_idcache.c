/* The identity cache: hits, encode-once under concurrency, LRU eviction by
 * bytes, pinning, forgotten and unknown ids, bad input. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../runtime/idcache.h"
#include "util.h"

typedef struct {
    drape_model *m;
    drape_backend *be;
    drape_idcache *c;
    size_t id_bytes;
} fx;

static fx fx_open(double budget_in_identities)
{
    fx f;
    f.m = tu_load("tiny_random");
    f.be = tu_backend(f.m);
    drape_identity *probe = tu_identity(f.be, 0, NULL, 0);
    f.id_bytes = drape_identity_bytes(probe);
    drape_identity_free(f.be, probe);
    cr_assert_eq(drape_idcache_create(&f.c, f.be, 42, (size_t)(budget_in_identities * (double)f.id_bytes), 100), 0);
    return f;
}

static void fx_close(fx *f)
{
    drape_idcache_free(f->c);
    drape_backend_free(f->be);
    drape_model_free(f->m);
}

static drape_idcache_entry *get(fx *f, float beta0, int *hit)
{
    drape_idcache_entry *e = NULL;
    drape_error err = {0};
    float b[1] = {beta0};
    int rc = drape_idcache_acquire(f->c, &e, 0, b, 1, hit, &err);
    cr_assert_eq(rc, 0, "acquire(beta0=%g): %s", beta0, err.msg);
    return e;
}

Test(idcache, second_request_hits_and_ids_are_stable)
{
    fx f = fx_open(10);
    int hit = -1;
    drape_idcache_entry *a = get(&f, 0.5f, &hit);
    cr_assert_eq(hit, 0);
    drape_idcache_entry *b = get(&f, 0.5f, &hit);
    cr_assert_eq(hit, 1);
    cr_assert_eq(a, b);
    char key[17];
    float beta[3] = {0.5f, 0, -0.0f}; /* trailing zeros and -0 name the same identity */
    drape_idcache_key(f.c, key, 0, beta, 3);
    cr_assert_str_eq(key, drape_idcache_entry_key(a));
    drape_idcache_entry *c = get(&f, 0.25f, &hit);
    cr_assert_str_neq(drape_idcache_entry_key(c), drape_idcache_entry_key(a));
    drape_idcache_stats s;
    drape_idcache_get_stats(f.c, &s);
    cr_assert_eq(s.encodes, 2);
    cr_assert_eq(s.hits, 1);
    cr_assert_eq(s.pinned, 2);
    drape_idcache_release(f.c, a);
    drape_idcache_release(f.c, b);
    drape_idcache_release(f.c, c);
    drape_idcache_get_stats(f.c, &s);
    cr_assert_eq(s.pinned, 0);
    fx_close(&f);
}

typedef struct {
    fx *f;
    pthread_barrier_t *go;
    float beta0;
} race;

static void *racer(void *arg)
{
    race *r = arg;
    drape_idcache_entry *e = NULL;
    float b[2] = {r->beta0, -1.0f};
    /* all eight ask at once, not as each thread happens to start */
    pthread_barrier_wait(r->go);
    int rc = drape_idcache_acquire(r->f->c, &e, 0, b, 2, NULL, NULL);
    if (!rc) drape_idcache_release(r->f->c, e);
    return (void *)(intptr_t)rc;
}

/* Rounds of eight requests at once for a new identity each: every round
 * encodes once, and some round has requests that found it encoding (the
 * waits the test is about; one round nearly always does, but the scheduler
 * may run the first encode to its end before the others start) */
Test(idcache, concurrent_requests_encode_once)
{
    fx f = fx_open(10);
    drape_idcache_stats s = {0}, p;
    int round = 0;
    for (; round < 20 && !s.waits; round++) {
        pthread_t t[8];
        pthread_barrier_t go;
        cr_assert_eq(pthread_barrier_init(&go, NULL, 8), 0);
        race r = {&f, &go, 1.0f + 0.1f * (float)round};
        for (int i = 0; i < 8; i++) cr_assert_eq(pthread_create(&t[i], NULL, racer, &r), 0);
        for (int i = 0; i < 8; i++) {
            void *rc;
            pthread_join(t[i], &rc);
            cr_assert_eq((intptr_t)rc, 0);
        }
        pthread_barrier_destroy(&go);
        p = s;
        drape_idcache_get_stats(f.c, &s);
        unsigned long long enc = s.encodes - p.encodes, miss = s.misses - p.misses, wait = s.waits - p.waits,
                           hit = s.hits - p.hits;
        cr_log_info("round %d, 8 requests at once: %llu encode, %llu miss, %llu waits, %llu hits", round, enc, miss,
                    wait, hit);
        cr_assert_eq(enc, 1, "round %d: encoded %llu times", round, enc);
        cr_assert_eq(miss, 1, "round %d: %llu requests missed", round, miss);
        cr_assert_eq(miss + wait + hit, 8);
    }
    cr_assert_gt(s.waits, 0, "in %d rounds no request found an identity encoding: the race never happened", round);
    fx_close(&f);
}

Test(idcache, evicts_least_recently_used_and_reencodes_by_id)
{
    fx f = fx_open(2.5);
    int hit;
    drape_idcache_entry *a = get(&f, 0.1f, &hit);
    char key_a[17];
    strcpy(key_a, drape_idcache_entry_key(a));
    drape_idcache_release(f.c, a);
    drape_idcache_release(f.c, get(&f, 0.2f, &hit));
    drape_idcache_release(f.c, get(&f, 0.1f, &hit)); /* a is now the most recent */
    cr_assert_eq(hit, 1);
    drape_idcache_release(f.c, get(&f, 0.3f, &hit)); /* evicts 0.2, not a */
    drape_idcache_stats s;
    drape_idcache_get_stats(f.c, &s);
    cr_assert_eq(s.evictions, 1);
    cr_assert_eq(s.resident, 2);
    cr_assert_leq(s.bytes, s.max_bytes);
    drape_idcache_release(f.c, get(&f, 0.1f, &hit));
    cr_assert_eq(hit, 1, "the recently used identity was evicted");
    drape_idcache_release(f.c, get(&f, 0.2f, &hit));
    cr_assert_eq(hit, 0, "the least recently used identity was kept");
    /* 0.3 went out for 0.2; its id still works and re-encodes */
    char key3[17];
    float b3[1] = {0.3f};
    drape_idcache_key(f.c, key3, 0, b3, 1);
    drape_idcache_entry *e = NULL;
    drape_error err = {0};
    cr_assert_eq(drape_idcache_acquire_key(f.c, &e, key3, &hit, &err), 0, "%s", err.msg);
    cr_assert_eq(hit, 0);
    cr_assert_not_null(drape_idcache_identity(e));
    drape_idcache_release(f.c, e);
    fx_close(&f);
}

Test(idcache, pinned_identities_are_never_evicted)
{
    fx f = fx_open(1.5);
    int hit;
    drape_idcache_entry *a = get(&f, 0.1f, &hit);
    drape_idcache_entry *b = NULL;
    drape_error err = {0};
    float beta[1] = {0.2f};
    int rc = drape_idcache_acquire(f.c, &b, 0, beta, 1, &hit, &err);
    cr_assert_eq(rc, DRAPE_ERANGE, "rc %d", rc);
    cr_assert(strstr(err.msg, "cache full"), "%s", err.msg);
    cr_assert_null(b);
    cr_assert_not_null(drape_idcache_identity(a), "the pinned identity was disturbed");
    drape_idcache_release(f.c, a);
    /* once unpinned it can go */
    cr_assert_eq(drape_idcache_acquire(f.c, &b, 0, beta, 1, &hit, &err), 0, "%s", err.msg);
    drape_idcache_release(f.c, b);
    drape_idcache_stats s;
    drape_idcache_get_stats(f.c, &s);
    cr_assert_eq(s.refused, 1);
    cr_assert_eq(s.evictions, 1);
    fx_close(&f);
}

Test(idcache, bad_input_is_rejected_without_an_entry)
{
    fx f = fx_open(4);
    drape_idcache_entry *e = NULL;
    drape_error err = {0};
    float big[1] = {1000.0f};
    cr_assert_eq(drape_idcache_acquire(f.c, &e, 0, big, 1, NULL, &err), DRAPE_ERANGE);
    cr_assert_eq(drape_idcache_acquire(f.c, &e, 99, NULL, 0, NULL, &err), DRAPE_ENOTFOUND);
    cr_assert_eq(drape_idcache_acquire_key(f.c, &e, "0123456789abcdef", NULL, &err), DRAPE_ENOTFOUND);
    cr_assert(strstr(err.msg, "unknown identity"), "%s", err.msg);
    cr_assert_eq(drape_idcache_acquire_key(f.c, &e, "short", NULL, &err), DRAPE_ENOTFOUND);
    drape_idcache_stats s;
    drape_idcache_get_stats(f.c, &s);
    cr_assert_eq(s.entries, 0);
    fx_close(&f);
}

/* Extras (what a caller derives from an identity, the server's physics rig):
 * made once per identity, handed to every holder, counted in the budget,
 * freed with the identity when it is evicted, never while it is held; one
 * that finds no room beside the held identities is refused and nothing else
 * is disturbed. The maker sees the identity's garment and betas. */
typedef struct {
    int made, freed;
    size_t bytes;
    float last_beta0;
} extra_log;

static extra_log xlog;

static int extra_make(void **out, size_t *bytes, int garment, const float *betas, int n_betas, void *ctx,
                      drape_error *err)
{
    (void)err;
    extra_log *l = ctx;
    cr_assert_eq(garment, 0);
    cr_assert_geq(n_betas, 1);
    l->made++;
    l->last_beta0 = betas[0];
    *out = malloc(16);
    *bytes = l->bytes;
    return 0;
}

static void extra_free(void *p)
{
    xlog.freed++;
    free(p);
}

Test(idcache, extras_are_made_once_counted_and_go_with_their_identity)
{
    fx f = fx_open(4);
    xlog = (extra_log){.bytes = f.id_bytes}; /* an extra as large as an identity */
    drape_idcache_extra_ops ops = {extra_make, extra_free, &xlog};
    drape_error err = {0};
    drape_idcache_entry *a = get(&f, 0.5f, NULL), *a2 = get(&f, 0.5f, NULL);
    void *p = NULL, *q = NULL;
    cr_assert_eq(drape_idcache_extra(f.c, a, 0, &ops, &p, &err), 0, "%s", err.msg);
    cr_assert_eq(drape_idcache_extra(f.c, a2, 0, &ops, &q, &err), 0, "%s", err.msg);
    cr_assert_eq(p, q, "one extra per identity");
    cr_assert_eq(xlog.made, 1);
    cr_assert_float_eq(xlog.last_beta0, 0.5f, 0);
    drape_idcache_stats s;
    drape_idcache_get_stats(f.c, &s);
    cr_assert_eq(s.bytes, 2 * f.id_bytes, "the extra counts in the budget");
    cr_assert_eq(s.extras[0], 1);
    cr_assert_eq(s.extra_builds[0], 1);
    /* held: other identities cannot push it out; with a's 2 of the 4 units
     * held, a third and a fourth identity fit, a fifth evicts an unheld one */
    for (int k = 1; k <= 4; k++) drape_idcache_release(f.c, get(&f, 0.1f * k, NULL));
    drape_idcache_get_stats(f.c, &s);
    cr_assert_eq(xlog.freed, 0, "a held identity's extra was freed");
    cr_assert_gt(s.evictions, 0);
    /* a second held identity's extra does not fit beside a's: refused, a untouched */
    drape_idcache_entry *b = get(&f, -0.5f, NULL);
    drape_idcache_stats s0;
    drape_idcache_get_stats(f.c, &s0);
    cr_assert_eq(s0.resident, 3, "a, b and one unheld identity");
    xlog.bytes = 2 * f.id_bytes;
    cr_assert_eq(drape_idcache_extra(f.c, b, 0, &ops, &q, &err), DRAPE_ERANGE);
    cr_assert(strstr(err.msg, "identity cache full"), "%s", err.msg);
    cr_assert_eq(xlog.freed, 1, "the refused extra is freed");
    drape_idcache_get_stats(f.c, &s);
    cr_assert_eq(s.extras[0], 1);
    /* evicting the unheld one could not have made room: it stays */
    cr_assert_eq(s.resident, 3, "a refusal evicted an identity it could not make room with");
    cr_assert_eq(s.evictions, s0.evictions);
    cr_assert_leq(s.bytes, s.max_bytes);
    cr_assert_eq(drape_idcache_extra(f.c, a, 0, &ops, &q, &err), 0, "%s", err.msg);
    cr_assert_eq(q, p, "a's extra is still there");
    drape_idcache_release(f.c, b);
    /* released: the next identities evict a, and its extra with it */
    drape_idcache_release(f.c, a);
    drape_idcache_release(f.c, a2);
    xlog.bytes = f.id_bytes;
    for (int k = 5; k <= 9; k++) drape_idcache_release(f.c, get(&f, 0.1f * k, NULL));
    drape_idcache_get_stats(f.c, &s);
    cr_assert_eq(xlog.freed, 2, "the evicted identity's extra is freed");
    cr_assert_eq(s.extras[0], 0);
    /* held again: made again */
    a = get(&f, 0.5f, NULL);
    cr_assert_eq(drape_idcache_extra(f.c, a, 0, &ops, &p, &err), 0, "%s", err.msg);
    cr_assert_eq(xlog.made, 3);
    drape_idcache_release(f.c, a);
    fx_close(&f);
    cr_assert_eq(xlog.freed, 3, "freeing the cache frees its extras");
}

/* An evicted identity is freed after the cache's lock is released: the
 * CUDA backend's free synchronises the device, and under the lock every
 * other avatar's lookup waited for it. Here the evicted identity's extra,
 * as it is freed, has another thread look up an identity in use; on the
 * old code that lookup waited for the lock held around the free (the guard
 * below only keeps a failure from hanging the suite). */
static struct {
    drape_idcache *c;
    char key[DRAPE_IDENTITY_KEY_LEN + 1];
    pthread_mutex_t mu;
    pthread_cond_t cv;
    pthread_t t;
    int looked_up, lookup_rc, frees, during_free;
} probe = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};

static void *probe_lookup(void *arg)
{
    (void)arg;
    drape_idcache_entry *e = NULL;
    int rc = drape_idcache_acquire_key(probe.c, &e, probe.key, NULL, NULL);
    if (!rc) drape_idcache_release(probe.c, e);
    pthread_mutex_lock(&probe.mu);
    probe.looked_up = 1, probe.lookup_rc = rc;
    pthread_cond_broadcast(&probe.cv);
    pthread_mutex_unlock(&probe.mu);
    return NULL;
}

static int probe_make(void **out, size_t *bytes, int garment, const float *betas, int n_betas, void *ctx,
                      drape_error *err)
{
    (void)garment, (void)betas, (void)n_betas, (void)ctx, (void)err;
    *out = malloc(16);
    *bytes = 1;
    return 0;
}

static void probe_free(void *p)
{
    free(p);
    probe.frees++;
    if (!probe.c) return; /* the cache's own free at the end */
    cr_assert_eq(pthread_create(&probe.t, NULL, probe_lookup, NULL), 0);
    struct timespec guard;
    clock_gettime(CLOCK_REALTIME, &guard);
    guard.tv_sec += 10;
    pthread_mutex_lock(&probe.mu);
    while (!probe.looked_up && pthread_cond_timedwait(&probe.cv, &probe.mu, &guard) == 0) {}
    probe.during_free = probe.looked_up;
    pthread_mutex_unlock(&probe.mu);
}

Test(idcache, an_eviction_frees_outside_the_lock)
{
    fx f = fx_open(2.5);
    drape_idcache_extra_ops ops = {probe_make, probe_free, NULL};
    drape_error err = {0};
    drape_idcache_entry *a = get(&f, 0.5f, NULL), *b = get(&f, -0.5f, NULL);
    void *p = NULL;
    cr_assert_eq(drape_idcache_extra(f.c, b, 0, &ops, &p, &err), 0, "%s", err.msg);
    memcpy(probe.key, drape_idcache_entry_key(a), sizeof probe.key);
    probe.c = f.c;
    drape_idcache_release(f.c, b);
    /* a third identity passes the budget: b (unheld) goes, with its extra */
    drape_idcache_entry *c = get(&f, 0.25f, NULL);
    pthread_join(probe.t, NULL); /* on the old code: once get() let go of the lock */
    cr_assert_eq(probe.frees, 1, "b's extra was not freed");
    cr_assert(probe.during_free, "another thread's lookup waited for the free to end (the lock was held around it)");
    cr_assert_eq(probe.lookup_rc, 0, "the lookup of a held identity failed (%d)", probe.lookup_rc);
    drape_idcache_stats s;
    drape_idcache_get_stats(f.c, &s);
    cr_assert_eq(s.evictions, 1);
    cr_assert_eq(s.resident, 2);
    cr_assert_eq(s.extras[0], 0);
    probe.c = NULL;
    drape_idcache_release(f.c, a);
    drape_idcache_release(f.c, c);
    fx_close(&f);
}
