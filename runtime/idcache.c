#include "idcache.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { ST_NONE = 0, ST_ENCODING, ST_RESIDENT };

struct drape_idcache_entry {
    char key[DRAPE_IDENTITY_KEY_LEN + 1];
    int garment;
    float betas[DRAPE_MAX_BETAS];
    drape_identity *id;
    size_t bytes, device_bytes;
    int refs, state;
    drape_error last; /* why the last encode failed, for the waiters */
    struct {
        void *p;
        size_t bytes;
        int state; /* ST_NONE, ST_ENCODING (being made), ST_RESIDENT */
        const drape_idcache_extra_ops *ops;
    } extra[DRAPE_IDCACHE_EXTRAS];
    drape_idcache_entry *hnext, *prev, *next;
};

struct drape_idcache {
    drape_backend *be;
    const drape_model *m;
    uint64_t digest;
    size_t max_bytes, bytes, device_bytes;
    int max_known, n, resident;
    drape_idcache_entry **buckets;
    size_t nbuckets;
    drape_idcache_entry *head, *tail; /* LRU: most recent at head */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    drape_idcache_stats st;
};

uint64_t drape_hash64(uint64_t h, const void *data, size_t n)
{
    const unsigned char *p = data;
    for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 0x100000001b3ULL;
    return h;
}

int drape_idcache_create(drape_idcache **out, drape_backend *be, uint64_t model_digest, size_t max_bytes,
                         int max_known)
{
    *out = NULL;
    drape_idcache *c = calloc(1, sizeof *c);
    if (!c) return DRAPE_ENOMEM;
    c->be = be;
    c->m = drape_backend_model(be);
    c->digest = model_digest;
    c->max_bytes = max_bytes;
    c->max_known = max_known > 0 ? max_known : 1;
    c->nbuckets = 64;
    while (c->nbuckets < (size_t)c->max_known) c->nbuckets *= 2;
    c->buckets = calloc(c->nbuckets, sizeof *c->buckets);
    if (!c->buckets) {
        free(c);
        return DRAPE_ENOMEM;
    }
    pthread_mutex_init(&c->mu, NULL);
    pthread_cond_init(&c->cv, NULL);
    *out = c;
    return DRAPE_OK;
}

/* What an eviction frees, kept until the cache's lock is released: the
 * CUDA backend's identity free synchronises the device, and under the lock
 * it stalled every other avatar's lookup behind it. Counted out of the
 * budget when collected, so the memory briefly outlives its count. */
typedef struct doomed {
    drape_identity *id;      /* or an extra: */
    void *p;
    void (*free)(void *p);
    struct doomed *next;
} doomed;

/* Adds to *dead what to free; frees it now when dead is NULL (no lock held:
 * drape_idcache_free) or no node can be had (a stall beats a leak). */
static void dispose(drape_idcache *c, doomed **dead, drape_identity *id, void *p, void (*fr)(void *))
{
    doomed *d = dead ? malloc(sizeof *d) : NULL;
    if (!d) {
        if (id) drape_identity_free(c->be, id);
        else fr(p);
        return;
    }
    *d = (doomed){id, p, fr, *dead};
    *dead = d;
}

/* Frees what dispose collected; called without the cache's lock. */
static void bury(drape_idcache *c, doomed *dead)
{
    while (dead) {
        doomed *n = dead->next;
        if (dead->id) drape_identity_free(c->be, dead->id);
        else dead->free(dead->p);
        free(dead);
        dead = n;
    }
}

static void entry_drop_extras(drape_idcache *c, drape_idcache_entry *e, doomed **dead)
{
    for (int k = 0; k < DRAPE_IDCACHE_EXTRAS; k++) {
        if (e->extra[k].state != ST_RESIDENT) continue;
        dispose(c, dead, NULL, e->extra[k].p, e->extra[k].ops->free);
        c->bytes -= e->extra[k].bytes;
        c->st.extras[k]--;
        e->extra[k].p = NULL, e->extra[k].bytes = 0, e->extra[k].state = ST_NONE;
    }
}

static void entry_drop_identity(drape_idcache *c, drape_idcache_entry *e, doomed **dead)
{
    entry_drop_extras(c, e, dead); /* derived from the identity: they go with it */
    if (e->state != ST_RESIDENT) return;
    dispose(c, dead, e->id, NULL, NULL);
    e->id = NULL;
    c->bytes -= e->bytes;
    c->device_bytes -= e->device_bytes;
    c->resident--;
    e->bytes = e->device_bytes = 0;
    e->state = ST_NONE;
}

void drape_idcache_free(drape_idcache *c)
{
    if (!c) return;
    drape_idcache_entry *e = c->head;
    while (e) {
        drape_idcache_entry *n = e->next;
        entry_drop_identity(c, e, NULL);
        free(e);
        e = n;
    }
    free(c->buckets);
    pthread_mutex_destroy(&c->mu);
    pthread_cond_destroy(&c->cv);
    free(c);
}

static size_t bucket_of(const drape_idcache *c, const char *key)
{
    return (size_t)drape_hash64(DRAPE_HASH64_INIT, key, DRAPE_IDENTITY_KEY_LEN) & (c->nbuckets - 1);
}

static drape_idcache_entry *find(drape_idcache *c, const char *key)
{
    for (drape_idcache_entry *e = c->buckets[bucket_of(c, key)]; e; e = e->hnext)
        if (!strcmp(e->key, key)) return e;
    return NULL;
}

static void lru_unlink(drape_idcache *c, drape_idcache_entry *e)
{
    if (e->prev) e->prev->next = e->next;
    else c->head = e->next;
    if (e->next) e->next->prev = e->prev;
    else c->tail = e->prev;
    e->prev = e->next = NULL;
}

static void lru_push_front(drape_idcache *c, drape_idcache_entry *e)
{
    e->next = c->head;
    e->prev = NULL;
    if (c->head) c->head->prev = e;
    c->head = e;
    if (!c->tail) c->tail = e;
}

static void forget(drape_idcache *c, drape_idcache_entry *e, doomed **dead)
{
    entry_drop_identity(c, e, dead);
    lru_unlink(c, e);
    drape_idcache_entry **pp = &c->buckets[bucket_of(c, e->key)];
    while (*pp != e) pp = &(*pp)->hnext;
    *pp = e->hnext;
    c->n--;
    free(e);
}

void drape_idcache_key(const drape_idcache *c, char out[DRAPE_IDENTITY_KEY_LEN + 1], int garment, const float *betas,
                       int n_betas)
{
    float full[DRAPE_MAX_BETAS] = {0};
    int S = c->m->cfg.betas;
    for (int i = 0; i < n_betas && i < S; i++) full[i] = betas[i] == 0.0f ? 0.0f : betas[i]; /* -0 == 0 */
    const char *name = c->m->garments[garment].name;
    uint64_t h = drape_hash64(DRAPE_HASH64_INIT, &c->digest, sizeof c->digest);
    h = drape_hash64(h, name, strlen(name) + 1);
    h = drape_hash64(h, full, (size_t)S * sizeof(float));
    snprintf(out, DRAPE_IDENTITY_KEY_LEN + 1, "%016llx", (unsigned long long)h);
}

/* An entry's bytes with its extras': what evicting it frees. */
static size_t entry_bytes(const drape_idcache_entry *e)
{
    size_t b = e->bytes;
    for (int k = 0; k < DRAPE_IDCACHE_EXTRAS; k++)
        if (e->extra[k].state == ST_RESIDENT) b += e->extra[k].bytes;
    return b;
}

static int evictable(const drape_idcache_entry *e) { return !e->refs && e->state == ST_RESIDENT; }

/* Evicts unpinned resident entries, least recently used first, until the
 * budget holds. Returns 1 when it holds; when evicting every unpinned entry
 * would not be enough, evicts nothing and returns 0, so that a refused
 * identity leaves the others cached. */
static int evict_to_budget(drape_idcache *c, doomed **dead)
{
    if (c->bytes <= c->max_bytes) return 1;
    size_t freeable = 0;
    for (drape_idcache_entry *e = c->head; e; e = e->next)
        if (evictable(e)) freeable += entry_bytes(e);
    if (c->bytes - freeable > c->max_bytes) return 0;
    for (drape_idcache_entry *e = c->tail; e && c->bytes > c->max_bytes; e = e->prev) {
        if (!evictable(e)) continue; /* an extra's maker holds a reference */
        entry_drop_identity(c, e, dead);
        c->st.evictions++;
    }
    return c->bytes <= c->max_bytes;
}

/* Forgets the least recently used unpinned recipes beyond max_known. */
static void trim_known(drape_idcache *c, doomed **dead)
{
    drape_idcache_entry *e = c->tail;
    while (e && c->n > c->max_known) {
        drape_idcache_entry *p = e->prev;
        if (!e->refs && e->state != ST_ENCODING) {
            if (e->state == ST_RESIDENT) c->st.evictions++;
            forget(c, e, dead);
        }
        e = p;
    }
}

/* With c->mu held and a reference on e: makes e resident (encoding it, or
 * waiting for the thread that does); what it evicts goes to *dead. */
static int make_resident(drape_idcache *c, drape_idcache_entry *e, int *hit, doomed **dead, drape_error *err)
{
    if (e->state == ST_RESIDENT) {
        c->st.hits++;
        *hit = 1;
        return DRAPE_OK;
    }
    *hit = 0;
    if (e->state == ST_ENCODING) {
        c->st.waits++;
        while (e->state == ST_ENCODING) pthread_cond_wait(&c->cv, &c->mu);
        if (e->state == ST_RESIDENT) return DRAPE_OK;
        if (err) *err = e->last;
        return e->last.code ? e->last.code : DRAPE_EBACKEND;
    }
    c->st.misses++;
    e->state = ST_ENCODING;
    pthread_mutex_unlock(&c->mu);
    drape_identity *id = NULL;
    drape_error local = {0};
    int rc = drape_identity_create(c->be, &id, e->garment, e->betas, c->m->cfg.betas, &local);
    pthread_mutex_lock(&c->mu);
    if (rc == DRAPE_OK) {
        c->st.encodes++;
        e->id = id;
        e->bytes = drape_identity_bytes(id);
        e->device_bytes = drape_identity_device_bytes(id);
        e->state = ST_RESIDENT;
        c->bytes += e->bytes;
        c->device_bytes += e->device_bytes;
        c->resident++;
        if (!evict_to_budget(c, dead)) {
            c->st.refused++;
            entry_drop_identity(c, e, dead);
            rc = drape_fail(&local, DRAPE_ERANGE,
                            "identity cache full: %zu bytes are held by identities in use (budget %zu bytes)",
                            c->bytes, c->max_bytes);
        }
    } else {
        c->st.failures++;
        e->state = ST_NONE;
    }
    e->last = local;
    pthread_cond_broadcast(&c->cv);
    if (rc && err) *err = local;
    return rc;
}

static int acquire_entry(drape_idcache *c, drape_idcache_entry *e, drape_idcache_entry **out, int *hit,
                         doomed **dead, drape_error *err)
{
    e->refs++;
    lru_unlink(c, e);
    lru_push_front(c, e);
    int rc = make_resident(c, e, hit, dead, err);
    if (rc) {
        e->refs--;
        *out = NULL;
    } else {
        *out = e;
    }
    return rc;
}

int drape_idcache_acquire(drape_idcache *c, drape_idcache_entry **out, int garment, const float *betas, int n_betas,
                          int *hit, drape_error *err)
{
    *out = NULL;
    int dummy;
    if (!hit) hit = &dummy;
    if (garment < 0 || garment >= c->m->cfg.n_garments)
        return drape_fail(err, DRAPE_ENOTFOUND, "garment index %d out of range", garment);
    int rc = drape_model_check_betas(c->m, betas, n_betas, err);
    if (rc) return rc;
    char key[DRAPE_IDENTITY_KEY_LEN + 1];
    drape_idcache_key(c, key, garment, betas, n_betas);
    doomed *dead = NULL;
    pthread_mutex_lock(&c->mu);
    drape_idcache_entry *e = find(c, key);
    if (!e) {
        e = calloc(1, sizeof *e);
        if (!e) {
            pthread_mutex_unlock(&c->mu);
            return drape_fail(err, DRAPE_ENOMEM, "identity cache: out of memory");
        }
        memcpy(e->key, key, sizeof key);
        e->garment = garment;
        for (int i = 0; i < n_betas && i < DRAPE_MAX_BETAS; i++) e->betas[i] = betas[i];
        size_t b = bucket_of(c, key);
        e->hnext = c->buckets[b];
        c->buckets[b] = e;
        lru_push_front(c, e);
        c->n++;
        e->refs++; /* keeps it out of trim_known */
        trim_known(c, &dead);
        e->refs--;
    }
    rc = acquire_entry(c, e, out, hit, &dead, err);
    pthread_mutex_unlock(&c->mu);
    bury(c, dead);
    return rc;
}

int drape_idcache_acquire_key(drape_idcache *c, drape_idcache_entry **out, const char *key, int *hit,
                              drape_error *err)
{
    *out = NULL;
    int dummy;
    if (!hit) hit = &dummy;
    if (!key || strlen(key) != DRAPE_IDENTITY_KEY_LEN)
        return drape_fail(err, DRAPE_ENOTFOUND, "unknown identity: ids are %d hex digits", DRAPE_IDENTITY_KEY_LEN);
    doomed *dead = NULL;
    pthread_mutex_lock(&c->mu);
    drape_idcache_entry *e = find(c, key);
    int rc;
    if (!e) rc = drape_fail(err, DRAPE_ENOTFOUND, "unknown identity '%s' (create it with POST /v1/identities)", key);
    else rc = acquire_entry(c, e, out, hit, &dead, err);
    pthread_mutex_unlock(&c->mu);
    bury(c, dead);
    return rc;
}

void drape_idcache_release(drape_idcache *c, drape_idcache_entry *e)
{
    if (!e) return;
    pthread_mutex_lock(&c->mu);
    e->refs--;
    pthread_mutex_unlock(&c->mu);
}

int drape_idcache_extra(drape_idcache *c, drape_idcache_entry *e, int slot, const drape_idcache_extra_ops *ops,
                        void **out, drape_error *err)
{
    *out = NULL;
    if (slot < 0 || slot >= DRAPE_IDCACHE_EXTRAS) return drape_fail(err, DRAPE_EINVAL, "identity cache: no extra slot %d", slot);
    pthread_mutex_lock(&c->mu);
    while (e->extra[slot].state == ST_ENCODING) pthread_cond_wait(&c->cv, &c->mu);
    if (e->extra[slot].state == ST_RESIDENT) {
        *out = e->extra[slot].p;
        pthread_mutex_unlock(&c->mu);
        return DRAPE_OK;
    }
    e->extra[slot].state = ST_ENCODING;
    float betas[DRAPE_MAX_BETAS];
    memcpy(betas, e->betas, sizeof betas);
    int garment = e->garment, S = c->m->cfg.betas;
    pthread_mutex_unlock(&c->mu);
    void *p = NULL;
    size_t bytes = 0;
    drape_error local = {0};
    int rc = ops->make(&p, &bytes, garment, betas, S, ops->ctx, &local);
    doomed *dead = NULL;
    pthread_mutex_lock(&c->mu);
    if (rc == DRAPE_OK) {
        e->extra[slot].p = p, e->extra[slot].bytes = bytes, e->extra[slot].ops = ops;
        e->extra[slot].state = ST_RESIDENT;
        c->bytes += bytes;
        c->st.extras[slot]++;
        c->st.extra_builds[slot]++;
        if (!evict_to_budget(c, &dead)) {
            c->st.refused++;
            dispose(c, &dead, NULL, p, ops->free);
            c->bytes -= bytes;
            c->st.extras[slot]--;
            e->extra[slot].p = NULL, e->extra[slot].bytes = 0;
            rc = drape_fail(&local, DRAPE_ERANGE,
                            "identity cache full: %zu bytes are held by identities in use (budget %zu bytes)",
                            c->bytes + bytes, c->max_bytes);
        }
    }
    if (rc) e->extra[slot].state = ST_NONE; /* the next caller tries again */
    else *out = p;
    pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->mu);
    bury(c, dead);
    if (rc && err) *err = local;
    return rc;
}

const drape_identity *drape_idcache_identity(const drape_idcache_entry *e) { return e->id; }
const char *drape_idcache_entry_key(const drape_idcache_entry *e) { return e->key; }
int drape_idcache_entry_garment(const drape_idcache_entry *e) { return e->garment; }

void drape_idcache_get_stats(drape_idcache *c, drape_idcache_stats *s)
{
    pthread_mutex_lock(&c->mu);
    *s = c->st;
    s->bytes = c->bytes;
    s->device_bytes = c->device_bytes;
    s->max_bytes = c->max_bytes;
    s->entries = c->n;
    s->resident = c->resident;
    int pinned = 0;
    for (drape_idcache_entry *e = c->head; e; e = e->next) pinned += e->refs > 0;
    s->pinned = pinned;
    pthread_mutex_unlock(&c->mu);
}
