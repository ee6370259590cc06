/* The request batcher: results equal a direct backend run, full batches go
 * at once, a lone frame waits for the deadline, one avatar never appears
 * twice in a batch, stopping drains, one failing frame fails only itself. */
#include <criterion/criterion.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../proto/pack.h"
#include "../runtime/batcher.h"
#include "util.h"

#define NJ 12

typedef struct {
    drape_model *m;
    drape_backend *be;
    drape_identity *id;
    int V;
    float poses[NJ][75];
    drape_job jobs[NJ];
    float *out;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int done, failed;
    int status[NJ];
    char msg[NJ][DRAPE_ERRMSG_MAX];
} fx;

static void on_done(drape_job *j, int status, const drape_error *err)
{
    fx *f = j->user;
    pthread_mutex_lock(&f->mu);
    int i = (int)(j - f->jobs);
    f->status[i] = status;
    snprintf(f->msg[i], sizeof f->msg[i], "%s", err ? err->msg : "");
    f->done++;
    f->failed += status != 0;
    pthread_cond_broadcast(&f->cv);
    pthread_mutex_unlock(&f->mu);
}

/* refine_iters > 0 turns the refine step on for the tiny model's garment */
static void fx_open_refining(fx *f, int refine_iters)
{
    memset(f, 0, sizeof *f);
    f->m = tu_load("tiny_random");
    f->m->cfg.refine[0].iters = refine_iters;
    f->m->cfg.refine[0].stiffness = 100.0f;
    f->be = tu_backend(f->m);
    f->id = tu_identity(f->be, 0, NULL, 0);
    f->V = f->m->garments[0].V;
    f->out = calloc((size_t)NJ * f->V * 3, sizeof(float));
    tu_random_poses(&f->poses[0][0], NJ, 0.3f, 0.2f, 5);
    pthread_mutex_init(&f->mu, NULL);
    pthread_cond_init(&f->cv, NULL);
    for (int i = 0; i < NJ; i++) {
        drape_job *j = &f->jobs[i];
        j->frame.id = f->id;
        for (int k = 0; k < 3; k++) {
            j->frame.pose[k] = f->poses[i];
            j->frame.trans[k] = f->poses[i] + 72;
        }
        j->frame.out = f->out + (size_t)i * f->V * 3;
        j->key = (uint64_t)i + 1;
        j->done = on_done;
        j->user = f;
    }
}

static void fx_open(fx *f) { fx_open_refining(f, 0); }

static void wait_done(fx *f, int n)
{
    pthread_mutex_lock(&f->mu);
    while (f->done < n) pthread_cond_wait(&f->cv, &f->mu);
    pthread_mutex_unlock(&f->mu);
}

static void fx_close(fx *f)
{
    free(f->out);
    drape_identity_free(f->be, f->id);
    drape_backend_free(f->be);
    drape_model_free(f->m);
    pthread_mutex_destroy(&f->mu);
    pthread_cond_destroy(&f->cv);
}

Test(batcher, results_equal_a_direct_run)
{
    fx f;
    fx_open(&f);
    drape_batcher *b;
    cr_assert_eq(drape_batcher_create(&b, f.be, 5, 1000, NULL), 0);
    for (int i = 0; i < NJ; i++) cr_assert_eq(drape_batcher_submit(b, &f.jobs[i]), 0);
    wait_done(&f, NJ);
    cr_assert_eq(f.failed, 0);
    float *ref = malloc(sizeof(float) * f.V * 3);
    for (int i = 0; i < NJ; i++) {
        drape_frame fr = f.jobs[i].frame;
        fr.out = ref;
        cr_assert_eq(drape_backend_run(f.be, &fr, 1, NULL), 0);
        double d = tu_max_abs_diff(ref, f.jobs[i].frame.out, f.V * 3);
        cr_assert_leq(d, 1e-5, "job %d differs by %g", i, d);
        cr_assert_leq(f.jobs[i].batch_size, 5);
        cr_assert_geq(f.jobs[i].t_start_ns, f.jobs[i].t_submit_ns);
    }
    drape_batcher_stats s;
    drape_batcher_get_stats(b, &s);
    cr_assert_eq(s.frames, NJ);
    cr_assert_geq(s.batches, 3); /* 12 frames, at most 5 per batch */
    free(ref);
    drape_batcher_free(b);
    fx_close(&f);
}

/* a job that asks for f16 or q16 comes back packed, its box beside it: the
 * run's results reach the submitter's frame, not only its output buffer */
Test(batcher, packed_jobs_come_back_packed)
{
    fx f;
    fx_open(&f);
    for (int i = 0; i < NJ; i++) f.jobs[i].frame.pack = i % 3;
    drape_batcher *b;
    cr_assert_eq(drape_batcher_create(&b, f.be, 5, 1000, NULL), 0);
    for (int i = 0; i < NJ; i++) cr_assert_eq(drape_batcher_submit(b, &f.jobs[i]), 0);
    wait_done(&f, NJ);
    cr_assert_eq(f.failed, 0);
    float *ref = malloc(sizeof(float) * f.V * 3), *back = malloc(sizeof(float) * f.V * 3), box[6];
    uint8_t *want = malloc((size_t)f.V * 6);
    for (int i = 0; i < NJ; i++) {
        drape_frame fr = f.jobs[i].frame;
        fr.out = ref;
        fr.pack = DRAPE_PACK_NONE;
        cr_assert_eq(drape_backend_run(f.be, &fr, 1, NULL), 0);
        cr_assert_eq(f.jobs[i].frame.packed, i % 3 ? 1 : 0, "job %d", i);
        if (!(i % 3)) continue;
        /* a batch and a frame alone agree to rounding (above), so: decoded, within the format's bound */
        int fmt = i % 3 == DRAPE_PACK_F16 ? DRAPE_FMT_F16 : DRAPE_FMT_Q16;
        cr_assert_eq(drape_unpack(back, f.V, fmt, f.jobs[i].frame.bbox, (const uint8_t *)f.jobs[i].frame.out,
                                  (size_t)f.V * 6), 0);
        double d = tu_max_abs_diff(back, ref, f.V * 3), bound = drape_pack_error_bound(fmt, f.jobs[i].frame.bbox);
        cr_assert_leq(d, bound + 1e-5, "job %d: decoded %g off, bound %g", i, d, bound);
        cr_assert_eq(drape_pack16(want, box, i % 3, ref, f.V), 0);
        for (int k = 0; k < 6; k++) cr_assert_leq(fabsf(box[k] - f.jobs[i].frame.bbox[k]), 1e-5, "job %d's box", i);
    }
    free(back);
    free(ref);
    free(want);
    drape_batcher_free(b);
    fx_close(&f);
}

Test(batcher, full_batch_runs_without_waiting_for_the_deadline)
{
    fx f;
    fx_open(&f);
    drape_batcher *b;
    /* a 60 s deadline: only a full batch can make these run */
    cr_assert_eq(drape_batcher_create(&b, f.be, 4, 60000000, NULL), 0);
    for (int i = 0; i < 4; i++) drape_batcher_submit(b, &f.jobs[i]);
    wait_done(&f, 4);
    for (int i = 0; i < 4; i++) cr_assert_eq(f.jobs[i].batch_size, 4);
    /* after the deadline the same four would run together too: what tells
     * the two apart is when they started. 10 s is no speed bound, only far
     * short of the 60 s a batcher waiting for the deadline takes */
    for (int i = 0; i < 4; i++) {
        int64_t waited = f.jobs[i].t_start_ns - f.jobs[i].t_submit_ns;
        cr_assert_lt(waited, 10000000000LL, "job %d ran %lld ns after its submit: the batcher waited for the deadline", i,
                     (long long)waited);
    }
    drape_batcher_free(b);
    fx_close(&f);
}

Test(batcher, lone_frame_waits_for_the_deadline)
{
    fx f;
    fx_open(&f);
    drape_batcher *b;
    cr_assert_eq(drape_batcher_create(&b, f.be, 64, 30000, NULL), 0);
    drape_batcher_submit(b, &f.jobs[0]);
    drape_batcher_submit(b, &f.jobs[1]);
    wait_done(&f, 2);
    cr_assert_eq(f.jobs[0].batch_size, 2, "the two frames were not batched together");
    int64_t waited = f.jobs[0].t_start_ns - f.jobs[0].t_submit_ns;
    cr_assert_geq(waited, 30000000, "ran after %lld ns, before the 30 ms deadline", (long long)waited);
    drape_batcher_free(b);
    fx_close(&f);
}

Test(batcher, one_avatar_never_twice_in_a_batch)
{
    fx f;
    fx_open(&f);
    f.jobs[1].key = f.jobs[0].key; /* two frames of one avatar */
    drape_batcher *b;
    cr_assert_eq(drape_batcher_create(&b, f.be, 8, 20000, NULL), 0);
    for (int i = 0; i < 3; i++) drape_batcher_submit(b, &f.jobs[i]);
    wait_done(&f, 3);
    cr_assert_neq(f.jobs[0].t_start_ns, f.jobs[1].t_start_ns, "same avatar in one batch");
    cr_assert_eq(f.jobs[0].batch_size, 2);
    cr_assert_eq(f.jobs[1].batch_size, 1);
    cr_assert_leq(f.jobs[0].t_start_ns, f.jobs[1].t_start_ns, "an avatar's frames ran out of order");
    drape_batcher_free(b);
    fx_close(&f);
}

Test(batcher, stop_drains_and_then_refuses)
{
    fx f;
    fx_open(&f);
    drape_batcher *b;
    cr_assert_eq(drape_batcher_create(&b, f.be, 64, 60000000, NULL), 0);
    for (int i = 0; i < 6; i++) drape_batcher_submit(b, &f.jobs[i]);
    drape_batcher_stop(b);
    cr_assert_eq(f.done, 6, "stop lost queued frames");
    cr_assert_eq(drape_batcher_submit(b, &f.jobs[6]), DRAPE_EINVAL);
    drape_batcher_free(b);
    fx_close(&f);
}

/* A frame that fails on its own (a pose that is not finite, which the refine
 * step refuses; the server refuses such poses at its boundary, a library
 * caller may not) fails only its own job: the eleven other avatars in its
 * batch get their frames, equal to a run of each alone. */
Test(batcher, one_failing_frame_fails_only_itself)
{
    fx f;
    fx_open_refining(&f, 4);
    f.poses[3][0] = NAN; /* the root: every body vertex */
    drape_batcher *b;
    /* a 60 s deadline and a batch of NJ: the twelve run as one batch */
    cr_assert_eq(drape_batcher_create(&b, f.be, NJ, 60000000, NULL), 0);
    for (int i = 0; i < NJ; i++) cr_assert_eq(drape_batcher_submit(b, &f.jobs[i]), 0);
    wait_done(&f, NJ);
    cr_assert_eq(f.failed, 1, "%d of %d jobs failed; only the one with a NaN pose should", f.failed, NJ);
    cr_assert_neq(f.status[3], 0);
    cr_assert(strstr(f.msg[3], "not finite"), "job 3's error: %s", f.msg[3]);
    float *ref = malloc(sizeof(float) * f.V * 3);
    for (int i = 0; i < NJ; i++) {
        cr_assert_eq(f.jobs[i].batch_size, NJ);
        if (i == 3) continue;
        cr_assert_eq(f.status[i], 0, "job %d: %s", i, f.msg[i]);
        drape_frame fr = f.jobs[i].frame;
        fr.out = ref;
        cr_assert_eq(drape_backend_run(f.be, &fr, 1, NULL), 0);
        double d = tu_max_abs_diff(ref, f.jobs[i].frame.out, f.V * 3);
        cr_assert_leq(d, 1e-5, "job %d differs from a run alone by %g", i, d);
    }
    drape_batcher_stats s;
    drape_batcher_get_stats(b, &s);
    cr_assert_eq(s.batches, 1);
    cr_assert_eq(s.failed_batches, 1);
    cr_assert_eq(s.failed_frames, 1);
    free(ref);
    drape_batcher_free(b);
    fx_close(&f);
}
