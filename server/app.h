/* The daemon's shared state: one model, one backend with its batcher and
 * identity cache, the HTTP daemon, the open streams, the counters. */
#ifndef DRAPED_APP_H
#define DRAPED_APP_H

#include <pthread.h>
#include <stdatomic.h>

#include "../runtime/batcher.h"
#include "../runtime/idcache.h"
#include "../runtime/sequence.h"
#include "../core/log.h"
#include "config.h"
#include "metrics.h"
#include "physics.h"

#define DRAPED_VERSION "0.2.0"

typedef struct stream_conn stream_conn;
typedef struct draped_admit draped_admit;

typedef struct {
    draped_config cfg;
    drape_model *model;
    uint64_t digest;
    drape_backend *be;
    drape_idcache *cache;
    drape_batcher *batcher;
    draped_physics *physics; /* the physics mode's workers (physics.c) */
    struct MHD_Daemon *mhd;
    draped_admit *admit; /* per-IP counts and header deadlines (admit.c) */
    int port;
    char instance[160];
    char **keys; /* API keys; NULL: auth off */
    int n_keys;
    atomic_int stopping; /* SIGTERM: drain and close streams */
    atomic_int healthy;  /* 0 after a backend failure: /readyz says so */
    pthread_mutex_t mu;  /* streams list and count */
    pthread_cond_t cv;
    stream_conn *streams;
    int n_streams;
    draped_metrics met;
} draped;

/* The pose bounds of the config table, for drape_pose_validate: every way a
 * pose comes in (stream, POST /v1/frames) checks it against the same ones. */
static inline drape_pose_limits draped_pose_limits(const draped *d)
{
    return (drape_pose_limits){(double)d->cfg.pose_max_angle, (double)d->cfg.pose_max_trans};
}

/* http.c */
int draped_http_start(draped *d);
void draped_http_stop(draped *d);

/* stream.c: called by the HTTP layer for GET /v1/stream once the upgrade is
 * accepted; the stream runs on its own thread. */
struct MHD_Connection;
int draped_stream_upgrade(draped *d, struct MHD_Connection *c, const char *ws_key);
/* The streams list's lock and condition variable (on CLOCK_MONOTONIC). */
void draped_streams_init(draped *d);
/* Asks every stream to drain and close (1001), waits up to drain_ms + 3 s. */
void draped_streams_shutdown(draped *d);
/* Waits up to ms for every stream's thread to be gone; returns how many are
 * left (they still use the cache, the batcher and the pools). */
int draped_streams_wait(draped *d, int64_t ms);

/* identity.c: an id, a garment + betas, or both (the recipe re-creates an
 * id this replica does not know) → a pinned cache entry; *code is the
 * stream/HTTP error code on failure (proto/errors.h). */
int draped_identity_resolve(draped *d, const char *id, const char *garment, const float *betas, int n_betas,
                            drape_idcache_entry **out, drape_errcode *code, drape_error *err);
/* identity.c: whether garment g runs in mode (DRAPE_MODE_*): neural needs a
 * trained network (the config's "untrained" lists those without,
 * docs/garments.md). 0, or 1 with msg naming the garment and its modes (the
 * caller answers DRAPE_EC_MODE_UNAVAILABLE). */
int draped_mode_refused(const draped *d, int g, int mode, char *msg, size_t cap);

/* http.c: whether a request carries a valid API key (the Authorization
 * header, or the ?token= of GET /v1/stream); always, with auth off */
int draped_check_key(const draped *d, const char *authorization, const char *token);

#endif
