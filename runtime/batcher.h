/* The request batcher (docs/design.md §7): frames from every connection go to one
 * batcher per backend device, whose worker thread runs a batch when
 * max_batch frames wait or the oldest has waited max_delay_us, whichever
 * comes first. It never puts two frames with the same key (avatar) into one
 * batch; Bone-Net and the conv run across garments, so it does not group.
 *
 * Jobs are owned by the submitter; the batcher only links them. done() is
 * called from the worker thread once per job, after its batch ran, with the
 * job's own status: when a batch fails on a healthy backend, its frames run
 * again one by one, so one frame's failure is not another avatar's. */
#ifndef DRAPE_BATCHER_H
#define DRAPE_BATCHER_H

#include <stdint.h>

#include "backend.h"
#include "../core/clock.h"

typedef struct drape_job drape_job;
struct drape_job {
    drape_frame frame; /* inputs and output buffer, filled by the submitter */
    uint64_t key;      /* avatar key; 0 = none (stateless requests never collide) */
    void (*done)(drape_job *job, int status, const drape_error *err);
    void *user;
    int64_t t_submit_ns, t_start_ns, t_end_ns; /* CLOCK_MONOTONIC, set by the batcher */
    int batch_size;                            /* of the batch it ran in */
    drape_job *next;                           /* private */
};

typedef struct drape_batcher drape_batcher;

typedef struct {
    uint64_t batches, frames, failed_batches;
    uint64_t failed_frames; /* frames done() got an error for: a failed batch's frames run again alone */
    uint64_t size_hist[8]; /* batches of size 1, 2-3, 4-7, ..., ≥128 */
    uint64_t compute_ns, queue_ns;
    int queued;
} drape_batcher_stats;

int drape_batcher_create(drape_batcher **out, drape_backend *be, int max_batch, int max_delay_us,
                         drape_error *err);
/* DRAPE_EINVAL once stopping: the job is not taken and done() is not called. */
int drape_batcher_submit(drape_batcher *b, drape_job *job);
/* Runs what is queued, then stops the worker. Idempotent. */
void drape_batcher_stop(drape_batcher *b);
void drape_batcher_free(drape_batcher *b); /* stops first */
void drape_batcher_get_stats(drape_batcher *b, drape_batcher_stats *s);


#endif
