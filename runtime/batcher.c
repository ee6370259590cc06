#include "batcher.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct drape_batcher {
    drape_backend *be;
    int max_batch, max_delay_us;
    pthread_t worker;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    drape_job *head, *tail;
    int queued, stopping, started;
    drape_job **batch;
    drape_frame *frames;
    int *status;       /* [max_batch] each job's, after its batch */
    drape_error *errs; /* [max_batch] */
    drape_batcher_stats st;
};


/* Takes up to max_batch jobs in arrival order, skipping (and leaving queued)
 * any whose key is already in the batch. O(n·batch) on keys, which is small. */
static int take_batch(drape_batcher *b)
{
    int n = 0;
    drape_job **pp = &b->head, *prev = NULL;
    while (*pp && n < b->max_batch) {
        drape_job *j = *pp;
        int clash = 0;
        for (int i = 0; j->key && i < n && !clash; i++) clash = b->batch[i]->key == j->key;
        if (clash) {
            prev = j;
            pp = &j->next;
            continue;
        }
        *pp = j->next;
        if (b->tail == j) b->tail = prev;
        j->next = NULL;
        b->batch[n++] = j;
    }
    b->queued -= n;
    return n;
}

static int size_bucket(int n)
{
    int k = 0;
    while (n > 1 && k < 7) {
        n >>= 1;
        k++;
    }
    return k;
}

/* Runs the batch's n frames (copied into b->frames) and sets each job's
 * status. A batch that fails on a healthy backend failed for one frame's
 * sake (memory for a large batch, a refine step that met a body that is not
 * finite): each frame then runs again alone, so that only the frames that
 * fail on their own fail, and no other avatar loses its frame. A device
 * error fails the whole batch. Returns the batch's own status. */
static int run_batch(drape_batcher *b, int n)
{
    int rc = drape_backend_run(b->be, b->frames, n, &b->errs[0]);
    if (rc && n > 1 && drape_backend_healthy(b->be)) {
        for (int i = 0; i < n; i++) {
            b->frames[i] = b->batch[i]->frame;
            b->status[i] = drape_backend_run(b->be, &b->frames[i], 1, &b->errs[i]);
        }
        return rc;
    }
    for (int i = 0; i < n; i++) {
        b->status[i] = rc;
        if (rc && i) b->errs[i] = b->errs[0];
    }
    return rc;
}

static void *worker_main(void *arg)
{
    drape_batcher *b = arg;
    pthread_mutex_lock(&b->mu);
    for (;;) {
        while (!b->head && !b->stopping) pthread_cond_wait(&b->cv, &b->mu);
        if (!b->head) break; /* stopping and drained */
        int64_t deadline = b->head->t_submit_ns + (int64_t)b->max_delay_us * 1000;
        while (b->queued < b->max_batch && !b->stopping && drape_now_ns() < deadline)
            drape_cond_wait_until(&b->cv, &b->mu, deadline);
        int n = take_batch(b);
        pthread_mutex_unlock(&b->mu);

        int64_t t0 = drape_now_ns();
        for (int i = 0; i < n; i++) b->frames[i] = b->batch[i]->frame;
        int rc = run_batch(b, n);
        int64_t t1 = drape_now_ns();
        for (int i = 0; i < n; i++) {
            drape_job *j = b->batch[i];
            /* the run's results beside out: whether (and how) it packed the frame */
            j->frame.packed = b->frames[i].packed;
            memcpy(j->frame.bbox, b->frames[i].bbox, sizeof j->frame.bbox);
            j->t_start_ns = t0;
            j->t_end_ns = t1;
            j->batch_size = n;
        }
        pthread_mutex_lock(&b->mu);
        b->st.batches++;
        b->st.frames += (uint64_t)n;
        b->st.failed_batches += rc != 0;
        for (int i = 0; i < n; i++) b->st.failed_frames += b->status[i] != 0;
        b->st.size_hist[size_bucket(n)]++;
        b->st.compute_ns += (uint64_t)(t1 - t0);
        for (int i = 0; i < n; i++) b->st.queue_ns += (uint64_t)(t0 - b->batch[i]->t_submit_ns);
        pthread_mutex_unlock(&b->mu);
        /* done() may resubmit (the avatar's next pose): call it unlocked */
        for (int i = 0; i < n; i++) b->batch[i]->done(b->batch[i], b->status[i], b->status[i] ? &b->errs[i] : NULL);
        pthread_mutex_lock(&b->mu);
    }
    pthread_mutex_unlock(&b->mu);
    return NULL;
}

int drape_batcher_create(drape_batcher **out, drape_backend *be, int max_batch, int max_delay_us,
                         drape_error *err)
{
    *out = NULL;
    if (max_batch < 1 || max_delay_us < 0)
        return drape_fail(err, DRAPE_EINVAL, "batcher: max_batch must be >= 1 and max_delay_us >= 0");
    drape_batcher *b = calloc(1, sizeof *b);
    if (!b) return drape_fail(err, DRAPE_ENOMEM, "batcher: out of memory");
    b->be = be;
    b->max_batch = max_batch;
    b->max_delay_us = max_delay_us;
    b->batch = calloc((size_t)max_batch, sizeof *b->batch);
    b->frames = calloc((size_t)max_batch, sizeof *b->frames);
    b->status = calloc((size_t)max_batch, sizeof *b->status);
    b->errs = calloc((size_t)max_batch, sizeof *b->errs);
    pthread_mutex_init(&b->mu, NULL);
    drape_cond_init(&b->cv);
    if (!b->batch || !b->frames || !b->status || !b->errs || pthread_create(&b->worker, NULL, worker_main, b)) {
        drape_batcher_free(b);
        return drape_fail(err, DRAPE_ENOMEM, "batcher: cannot start the worker thread");
    }
    b->started = 1;
    *out = b;
    return DRAPE_OK;
}

int drape_batcher_submit(drape_batcher *b, drape_job *job)
{
    job->next = NULL;
    job->t_submit_ns = drape_now_ns();
    pthread_mutex_lock(&b->mu);
    if (b->stopping) {
        pthread_mutex_unlock(&b->mu);
        return DRAPE_EINVAL;
    }
    if (b->tail) b->tail->next = job;
    else b->head = job;
    b->tail = job;
    b->queued++;
    /* the worker sleeps until the first job, or until the batch is full */
    if (b->queued == 1 || b->queued >= b->max_batch) pthread_cond_signal(&b->cv);
    pthread_mutex_unlock(&b->mu);
    return DRAPE_OK;
}

void drape_batcher_stop(drape_batcher *b)
{
    pthread_mutex_lock(&b->mu);
    int join = b->started && !b->stopping;
    b->stopping = 1;
    pthread_cond_broadcast(&b->cv);
    pthread_mutex_unlock(&b->mu);
    if (join) pthread_join(b->worker, NULL);
}

void drape_batcher_free(drape_batcher *b)
{
    if (!b) return;
    drape_batcher_stop(b);
    pthread_mutex_destroy(&b->mu);
    pthread_cond_destroy(&b->cv);
    free(b->batch);
    free(b->frames);
    free(b->status);
    free(b->errs);
    free(b);
}

void drape_batcher_get_stats(drape_batcher *b, drape_batcher_stats *s)
{
    pthread_mutex_lock(&b->mu);
    *s = b->st;
    s->queued = b->queued;
    pthread_mutex_unlock(&b->mu);
}
