/* The identity cache (docs/design.md §7): module B's outputs per (garment, betas),
 * keyed by an identity id, bounded in bytes, LRU.
 *
 * - Concurrent requests for one identity encode it once: the first caller
 *   encodes outside the lock, the others wait for it.
 * - Entries in use (an open avatar, a frame in flight) are pinned by a
 *   reference and never evicted; eviction frees the LRU unpinned entries.
 *   When the pinned entries alone would exceed the budget, the new identity
 *   is refused (DRAPE_ERANGE), and nothing already cached is disturbed.
 *   What eviction frees is freed after the lock is released.
 * - An evicted identity's recipe (garment, betas) is remembered, so a
 *   client holding its id keeps working: the next use re-encodes it.
 *
 * Identity ids are 16 hex digits of a 64-bit hash of the model's digest, the
 * garment name and the betas (zero-padded to the model's S): idempotent and
 * distinct across models. */
#ifndef DRAPE_IDCACHE_H
#define DRAPE_IDCACHE_H

#include <stddef.h>
#include <stdint.h>

#include "backend.h"

#define DRAPE_IDENTITY_KEY_LEN 16

typedef struct drape_idcache drape_idcache;
typedef struct drape_idcache_entry drape_idcache_entry;

typedef struct {
    uint64_t hits, misses, encodes, evictions, refused, failures, waits;
    size_t bytes, max_bytes;
    size_t device_bytes; /* of bytes, those in device memory (the CUDA backend's identities) */
    int entries, resident, pinned;
    int extras[2];              /* resident extras by slot (DRAPE_IDCACHE_EXTRAS) */
    uint64_t extra_builds[2];   /* extras made, by slot */
} drape_idcache_stats;

/* 64-bit FNV-1a over bytes; the model digest is this over the bundle file. */
uint64_t drape_hash64(uint64_t h, const void *data, size_t n);
#define DRAPE_HASH64_INIT 0xcbf29ce484222325ULL

/* max_known: how many identity recipes (resident or evicted) are remembered. */
int drape_idcache_create(drape_idcache **out, drape_backend *be, uint64_t model_digest, size_t max_bytes,
                         int max_known);
void drape_idcache_free(drape_idcache *c); /* every reference must have been released */

/* The id for (garment, betas), written as 16 hex digits + NUL. */
void drape_idcache_key(const drape_idcache *c, char out[DRAPE_IDENTITY_KEY_LEN + 1], int garment, const float *betas,
                       int n_betas);

/* Finds or encodes the identity and returns a pinned reference. Validates
 * garment and betas (clear message in err). Blocks while it (or another
 * thread) encodes. *hit is 1 when no encoding was needed. */
int drape_idcache_acquire(drape_idcache *c, drape_idcache_entry **out, int garment, const float *betas, int n_betas,
                          int *hit, drape_error *err);
/* The same by id: DRAPE_ENOTFOUND when the id was never made here. */
int drape_idcache_acquire_key(drape_idcache *c, drape_idcache_entry **out, const char *key, int *hit,
                              drape_error *err);
void drape_idcache_release(drape_idcache *c, drape_idcache_entry *e);

/* An extra of an identity: what a caller derives from its (garment, betas)
 * and wants cached with it (the server's physics rig, docs/design.md §7.2).
 * In a slot of its own, made once per identity by the first caller (the
 * others wait), counted in the byte budget, freed with the identity's module
 * B output when the identity is evicted or the cache freed. A pinned entry
 * (a held reference) keeps its extras. make() runs without the cache's lock
 * and returns 0 with *out and *bytes, or a status with err. */
#define DRAPE_IDCACHE_EXTRAS 2
typedef struct {
    int (*make)(void **out, size_t *bytes, int garment, const float *betas, int n_betas, void *ctx, drape_error *err);
    void (*free)(void *p);
    void *ctx;
} drape_idcache_extra_ops;

/* The extra of slot for e (held by the caller), made with ops unless there;
 * ops must outlive the cache, and one slot always takes the same ops.
 * DRAPE_ERANGE when the identities in use leave no room for it (nothing
 * else is disturbed), or make()'s status. */
int drape_idcache_extra(drape_idcache *c, drape_idcache_entry *e, int slot, const drape_idcache_extra_ops *ops,
                        void **out, drape_error *err);

const drape_identity *drape_idcache_identity(const drape_idcache_entry *e);
const char *drape_idcache_entry_key(const drape_idcache_entry *e);
int drape_idcache_entry_garment(const drape_idcache_entry *e);

void drape_idcache_get_stats(drape_idcache *c, drape_idcache_stats *s);

#endif
