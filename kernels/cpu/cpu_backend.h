/* Private to the CPU backend: its handles and the two module entry points. */
#ifndef DRAPE_CPU_BACKEND_H
#define DRAPE_CPU_BACKEND_H

#include <pthread.h>

#include "../../runtime/backend_impl.h"
#include "../../runtime/cores.h"
#include "ops.h"

/* Module B's outputs for one identity, all in one allocation (docs/design.md §2.3 step 5). */
typedef struct {
    struct drape_identity base;
    float *film;   /* [6H] Δγ1 β1 Δγ2 β2 Δγ3 β3 */
    float *skin_w; /* [V,k] */
    float *g;      /* [V,3] retargeted garment */
    float *c;      /* [B,3] retargeted bones */
    float *J;      /* [24,3] shaped joints */
    float *F_cov;  /* [n_cov,d_f] F_UV on the covered texels */
    float data[];
} cpu_identity;

typedef struct {
    struct drape_backend base; /* base.threads: the most threads of any region */
    /* the threads actually used, from the cores free now (runtime/cores.h):
     * team is the run's (the conv's pool team, the GEMMs' OpenMP team), set
     * at the start of each run; an identity, made on another thread while a
     * batch runs, takes its own. cores_mu guards cores between the two. */
    drape_cores cores;
    pthread_mutex_t cores_mu;
    int team;
    cpu_pool *pool; /* base.threads − 1 workers; NULL with one thread */
    cpu_conv conv[DRAPE_MAX_CONV]; /* the model's conv layers, packed */
    float *conv_packed;
    /* module A scratch, grown on demand for the batch size */
    int cap;
    float *X, *h1, *h2, *net, *phi; /* [n,15B] [n,H] [n,H] [n,9B] [n,d_φ] */
    float *T_hat, *q, *Hf;          /* [n,B,12] [n,B,3] [n,12] */
    /* per-frame scratch */
    float *M, *phat, *delta; /* [B,12] [Vmax,3] [Vmax,3] */
    float *map_in, *map_a, *map_b; /* padded UV maps */
} cpu_backend;

int cpu_module_b(cpu_identity **out, const drape_model *m, int garment, const float *betas, int threads,
                 drape_error *err);
int cpu_module_a(cpu_backend *be, drape_frame *frames, int n, drape_error *err);

#endif
