/* The CPU backend: the vtable over module_a.c and module_b.c. */
#include <stdlib.h>

#include "cpu_backend.h"

static void cpu_destroy(drape_backend *b)
{
    cpu_backend *be = (cpu_backend *)b;
    free(be->X); free(be->h1); free(be->h2); free(be->net); free(be->phi);
    free(be->T_hat); free(be->q); free(be->Hf);
    free(be->M); free(be->phat); free(be->delta);
    free(be->map_in); free(be->map_a); free(be->map_b); free(be->conv_packed);
    cpu_pool_free(be->pool);
    pthread_mutex_destroy(&be->cores_mu);
    free(be);
}

static int cpu_create(drape_backend **out, const drape_model *m, const drape_backend_opts *opts, drape_error *err)
{
    const drape_config *c = &m->cfg;
    cpu_backend *be = calloc(1, sizeof *be);
    if (!be) return drape_fail(err, DRAPE_ENOMEM, "out of memory");
    be->base.ops = &drape_backend_cpu;
    be->base.model = m;
    /* The conv runs on the backend's own pool (pool.h), the GEMM row blocks
     * and module B on OpenMP; both with the team of the cores free now
     * (runtime/cores.h), at most opts->threads (resolved). OpenBLAS runs one
     * thread inside them (set once per process, runtime/omp_env.h), so two
     * pools never spin against each other. */
    drape_cores_init(&be->cores);
    pthread_mutex_init(&be->cores_mu, NULL);
    be->team = 1;
    if (opts->threads > 1 && cpu_pool_create(&be->pool, opts->threads - 1)) {
        cpu_destroy(&be->base);
        return drape_fail(err, DRAPE_EBACKEND, "cpu backend: cannot start %d worker threads", opts->threads - 1);
    }
    int Vmax = 1, Cmax = 3;
    for (int i = 0; i < c->n_garments; i++)
        if (m->garments[i].V > Vmax) Vmax = m->garments[i].V;
    for (int l = 0; l < c->n_conv; l++)
        if (c->conv[l] > Cmax) Cmax = c->conv[l];
    /* padded maps start zeroed: their border must stay zero (conv.c) */
    size_t P = (size_t)(c->uv_h + 2) * (c->uv_w + 2);
    be->M = malloc((size_t)12 * c->bones * sizeof(float));
    be->phat = malloc((size_t)3 * Vmax * sizeof(float));
    be->delta = malloc((size_t)3 * Vmax * sizeof(float));
    be->map_in = calloc(P * (3 + c->feat_dim + c->pose_dim + 1), sizeof(float));
    be->map_a = calloc(P * Cmax, sizeof(float));
    be->map_b = calloc(P * Cmax, sizeof(float));
    size_t packed = 0;
    for (int l = 0; l < c->n_conv; l++) packed += (size_t)18 * m->net.conv[l].in * m->net.conv[l].out;
    be->conv_packed = malloc(packed * sizeof(float));
    size_t off = 0;
    for (int l = 0; be->conv_packed && l < c->n_conv; l++) {
        const drape_conv *cv = &m->net.conv[l];
        float *taps = be->conv_packed + off, *wt = taps + (size_t)9 * cv->in * cv->out;
        cpu_conv_pack(taps, wt, cv->w, cv->in, cv->out);
        be->conv[l] = (cpu_conv){.b = cv->b, .taps = taps, .wt = wt, .in = cv->in, .out = cv->out};
        off += (size_t)18 * cv->in * cv->out;
    }
    if (!be->conv_packed || !be->M || !be->phat || !be->delta || !be->map_in || !be->map_a || !be->map_b) {
        cpu_destroy(&be->base);
        return drape_fail(err, DRAPE_ENOMEM, "cpu backend: cannot allocate the UV maps (%zu texels)", P);
    }
    *out = &be->base;
    return DRAPE_OK;
}

static int cpu_identity_create(drape_backend *b, drape_identity **out, int garment, const float *betas, drape_error *err)
{
    cpu_backend *be = (cpu_backend *)b;
    cpu_identity *id;
    pthread_mutex_lock(&be->cores_mu);
    int team = drape_cores_team(&be->cores, b->threads);
    pthread_mutex_unlock(&be->cores_mu);
    int rc = cpu_module_b(&id, b->model, garment, betas, team, err);
    *out = rc ? NULL : &id->base;
    return rc;
}

static void cpu_identity_free(drape_backend *b, drape_identity *id)
{
    (void)b;
    free(id);
}

static int cpu_run(drape_backend *b, drape_frame *frames, int n, drape_error *err)
{
    cpu_backend *be = (cpu_backend *)b;
    pthread_mutex_lock(&be->cores_mu);
    be->team = drape_cores_team(&be->cores, b->threads);
    pthread_mutex_unlock(&be->cores_mu);
    return cpu_module_a(be, frames, n, err);
}

const drape_backend_ops drape_backend_cpu = {
    .name = "cpu",
    .kind = DRAPE_BACKEND_CPU,
    .create = cpu_create,
    .destroy = cpu_destroy,
    .identity_create = cpu_identity_create,
    .identity_free = cpu_identity_free,
    .run = cpu_run,
};
