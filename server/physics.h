/* The stream's physics mode (docs/server.md, "Physics"): the cloth engine
 * run per avatar with the served settings (drape_garment_sim_realtime, what
 * `drape sim garment --realtime` runs), on a pool of its own threads
 * (--physics-threads), never in the neural batcher, so a slow cloth does not
 * delay a neural avatar.
 *
 * The rig of an identity (its shaped rest and body, the cloth system and its
 * factor: sim/garment.h) is an extra of the identity cache's entry, made by
 * the first physics avatar of that identity, shared by all of them, counted
 * in --cache-bytes and freed with the identity; each avatar holds its entry,
 * so a rig in use is never evicted. A run (the avatar's cloth state) belongs
 * to its avatar and is used by one worker at a time: an avatar has at most
 * one job in flight (newest wins, as in server/stream.c). */
#ifndef DRAPED_PHYSICS_H
#define DRAPED_PHYSICS_H

#include "../runtime/batcher.h"
#include "../runtime/idcache.h"
#include "../runtime/sequence.h"
#include "../sim/garment.h"
#include "fairq.h"

/* the identity cache's slot for rigs */
#define DRAPED_PHYSICS_SLOT 0
/* s of skipped poses a cloth is carried across in one frame at most; a
 * physics avatar further behind starts again from skinning at the newest
 * pose (server/stream.c, docs/server.md "Physics") */
#define DRAPED_PHYSICS_MAX_BEHIND 0.25

typedef struct draped_physics draped_physics;

/* One frame of one physics avatar. The submitter fills run, pose, first,
 * job.frame.out, job.done and job.user; the pool sets job's times and calls
 * job.done(&job, status, err) from a worker once the frame is written. */
typedef struct {
    drape_job job;           /* times, done, user; frame.out: [V,3] */
    drape_garment_run *run;
    float pose[DRAPE_FRAME_FLOATS]; /* the pose, then the translation */
    int first;               /* start the run again here (open, reset, a cut) */
    int catch_up;            /* with first: a late avatar's restart, settled for one
                                frame's substeps only (DRAPED_PHYSICS_MAX_BEHIND) */
    int reset;               /* set by the worker: the state diverged, the run started again here */
    drape_error err;
    draped_fairq_item q;     /* private: its place in the queue */
} draped_physics_job;

typedef struct {
    int threads, busy, queued;
} draped_physics_stats;

/* threads workers for frames of the model m, the served settings; substeps
 * (NULL or "": none) is --physics-substeps, "GARMENT=N,...": that garment's
 * rigs take N substeps a frame (1..64). DRAPE_EINVAL names a bad entry. */
int draped_physics_create(draped_physics **out, const drape_model *m, int threads, const char *substeps,
                          drape_error *err);
/* Runs what is queued, then joins the workers. Idempotent. */
void draped_physics_stop(draped_physics *p);
void draped_physics_free(draped_physics *p); /* stops first */
/* Queues j for owner (its stream connection): owners take turns, each
 * owner's jobs in order (fairq.h), so one connection's many avatars do not
 * hold up another's. DRAPE_EINVAL once stopping: the job is not taken and
 * done() is not called. */
int draped_physics_submit(draped_physics *p, draped_physics_job *j, const void *owner);
void draped_physics_get_stats(draped_physics *p, draped_physics_stats *s);

/* The rig of the held entry e (made once per identity) and a new run over
 * it. DRAPE_ERANGE: the cache has no room for the rig. */
int draped_physics_run_create(draped_physics *p, drape_idcache *cache, drape_idcache_entry *e,
                              drape_garment_run **out, drape_error *err);

/* the settings garment g's rigs are made with (drape_garment_sim_served, its
 * substeps the served 4 unless --physics-substeps says) */
const drape_garment_sim_params *draped_physics_params(const draped_physics *p, int g);

#endif
