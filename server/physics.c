#include "physics.h"

#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/log.h"

#define MAX_THREADS 64

struct draped_physics {
    const drape_model *m;
    /* per garment: the served settings (the bundle's pull), their substeps --physics-substeps' where it gives some */
    drape_garment_sim_params params[DRAPE_MAX_GARMENTS];
    drape_idcache_extra_ops ops; /* the rigs' maker, the cache's extra slot */
    pthread_t th[MAX_THREADS];
    int threads, started, busy, stopping;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    draped_fairq queue;
};

static int rig_make(void **out, size_t *bytes, int garment, const float *betas, int n_betas, void *ctx,
                    drape_error *err)
{
    draped_physics *p = ctx;
    drape_garment_rig *r = NULL;
    int rc = drape_garment_rig_create(&r, p->m, garment, betas, n_betas, &p->params[garment],
                                      p->params[garment].substeps, err);
    if (rc) return rc;
    *out = r;
    *bytes = drape_garment_rig_bytes(r);
    return DRAPE_OK;
}

static void rig_free(void *r) { drape_garment_rig_free(r); }

static void run_job(draped_physics_job *j)
{
    drape_error err = {0};
    int rc;
    j->reset = 0;
    if (j->first && j->catch_up)
        rc = drape_garment_run_restart(j->run, j->pose, drape_garment_run_substeps(j->run), j->job.frame.out, &err);
    else if (j->first) rc = drape_garment_run_first(j->run, j->pose, j->job.frame.out, &err);
    else rc = drape_garment_run_next(j->run, j->pose, j->job.frame.out, &j->reset, &err);
    j->err = err;
    j->job.t_end_ns = drape_now_ns();
    /* done() is the last use of j: the submitter may reuse it from then on */
    j->job.done(&j->job, rc, rc ? &j->err : NULL);
}

static void *worker_main(void *arg)
{
    draped_physics *p = arg;
    pthread_mutex_lock(&p->mu);
    for (;;) {
        while (!p->queue.n && !p->stopping) pthread_cond_wait(&p->cv, &p->mu);
        draped_fairq_item *it = draped_fairq_pop(&p->queue);
        if (!it) break; /* stopping and drained */
        draped_physics_job *j = (draped_physics_job *)((char *)it - offsetof(draped_physics_job, q));
        p->busy++;
        pthread_mutex_unlock(&p->mu);
        j->job.t_start_ns = drape_now_ns();
        j->job.batch_size = 1;
        run_job(j);
        pthread_mutex_lock(&p->mu);
        p->busy--;
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

/* "GARMENT=N,..." into params[].substeps (the model's garments, N in [1, 64]) */
static int parse_substeps(drape_garment_sim_params *params, const drape_model *m, const char *spec, drape_error *err)
{
    const char *s = spec;
    while (s && *s) {
        const char *eq = strchr(s, '='), *end = strchr(s, ',');
        if (!end) end = s + strlen(s);
        if (!eq || eq > end || eq == s)
            return drape_fail(err, DRAPE_EINVAL, "--physics-substeps: '%.*s' is not GARMENT=N", (int)(end - s), s);
        char name[64];
        snprintf(name, sizeof name, "%.*s", (int)(eq - s) < 63 ? (int)(eq - s) : 63, s);
        int g = drape_model_garment(m, name);
        if (g < 0 || (int)(eq - s) > 63)
            return drape_fail(err, DRAPE_EINVAL, "--physics-substeps: the model has no garment '%.*s'", (int)(eq - s), s);
        char *stop;
        long n = strtol(eq + 1, &stop, 10);
        if (stop != end || eq + 1 == end || n < 1 || n > 64)
            return drape_fail(err, DRAPE_EINVAL, "--physics-substeps: %s: '%.*s' is not a count in [1, 64]", name,
                              (int)(end - eq - 1), eq + 1);
        params[g].substeps = (int)n;
        s = *end ? end + 1 : end;
    }
    return DRAPE_OK;
}

int draped_physics_create(draped_physics **out, const drape_model *m, int threads, const char *substeps,
                          drape_error *err)
{
    *out = NULL;
    if (threads < 1 || threads > MAX_THREADS)
        return drape_fail(err, DRAPE_EINVAL, "physics: threads must be in [1, %d], got %d", MAX_THREADS, threads);
    draped_physics *p = calloc(1, sizeof *p);
    if (!p) return drape_fail(err, DRAPE_ENOMEM, "out of memory");
    p->m = m;
    for (int g = 0; g < m->cfg.n_garments; g++) p->params[g] = drape_garment_sim_served(m, g);
    int rc = parse_substeps(p->params, m, substeps, err);
    if (rc) {
        free(p);
        return rc;
    }
    p->ops = (drape_idcache_extra_ops){rig_make, rig_free, p};
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->cv, NULL);
    for (; p->started < threads; p->started++)
        if (pthread_create(&p->th[p->started], NULL, worker_main, p)) {
            draped_physics_free(p);
            return drape_fail(err, DRAPE_ENOMEM, "physics: cannot start a worker thread");
        }
    p->threads = threads;
    *out = p;
    return DRAPE_OK;
}

void draped_physics_stop(draped_physics *p)
{
    if (!p) return;
    pthread_mutex_lock(&p->mu);
    p->stopping = 1;
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
    for (int i = 0; i < p->started; i++) pthread_join(p->th[i], NULL);
    p->started = 0;
}

void draped_physics_free(draped_physics *p)
{
    if (!p) return;
    draped_physics_stop(p);
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->cv);
    free(p);
}

int draped_physics_submit(draped_physics *p, draped_physics_job *j, const void *owner)
{
    pthread_mutex_lock(&p->mu);
    if (p->stopping) {
        pthread_mutex_unlock(&p->mu);
        return DRAPE_EINVAL;
    }
    j->job.t_submit_ns = drape_now_ns();
    draped_fairq_push(&p->queue, &j->q, owner);
    pthread_cond_signal(&p->cv);
    pthread_mutex_unlock(&p->mu);
    return DRAPE_OK;
}

void draped_physics_get_stats(draped_physics *p, draped_physics_stats *s)
{
    pthread_mutex_lock(&p->mu);
    *s = (draped_physics_stats){p->threads, p->busy, p->queue.n};
    pthread_mutex_unlock(&p->mu);
}

int draped_physics_run_create(draped_physics *p, drape_idcache *cache, drape_idcache_entry *e,
                              drape_garment_run **out, drape_error *err)
{
    void *rig = NULL;
    *out = NULL;
    int rc = drape_idcache_extra(cache, e, DRAPED_PHYSICS_SLOT, &p->ops, &rig, err);
    return rc ? rc : drape_garment_run_create(out, rig, err);
}

const drape_garment_sim_params *draped_physics_params(const draped_physics *p, int g) { return &p->params[g]; }
