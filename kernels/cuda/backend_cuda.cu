/* The CUDA backend: the vtable of runtime/backend_impl.h over the kernels of
 * ops_a.cu / ops_b.cu and cuBLAS, built as a plugin (runtime/backend_plugin.h).
 *
 * - The plugin: its one export is drape_backend_plugin_init; what it needs of
 *   the program (error messages, the log, the body's shape, normals, the
 *   conv's weight packing) it calls through the program's services table.
 *
 * - Constants: the model's tensor arena is copied to the device once, so a
 *   weight's device address is its offset in the arena; the derived garment
 *   tables (raster, covered texels, UV copies, the conv runs expanded to
 *   texel positions), the packed conv weights and the per-garment descriptors
 *   go into one second allocation.
 * - Identities: module B runs on the device (graph network, heads, cached
 *   outputs); its graph (kNN, edge list, features) is built on the host with
 *   the same bodies. One cudaMalloc per identity, views into it.
 * - Module A: one stream; a batch's inputs go up in one copy from pinned
 *   staging, the dense layers are cuBLAS GEMMs over the whole batch, and the
 *   UV conv stack runs as im2col + GEMM over the needed texels of the frames,
 *   in chunks of frames bounded by UV_BUDGET bytes of scratch.
 * - Every CUDA and cuBLAS call is checked (CU, CB): allocation failures come
 *   back as DRAPE_ENOMEM, anything else as DRAPE_EBACKEND with file:line, and
 *   marks the backend unhealthy: later calls are refused, never exit(). */
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

extern "C" {
#include "../../runtime/backend_plugin.h"
#include "../../core/log.h"
}

#include "bodies.h"
#include "cuda_ops.h"
#include "refine_bodies.h"
#include "tc_bodies.h"

/* Scratch of the UV stage per chunk of frames (maps, im2col, GEMM out) */
#define UV_BUDGET ((size_t)6 << 30)
#define ALIGN 256
/* cuBLAS workspace of our own, so that GEMMs captured into a graph never allocate */
#define BLAS_WORKSPACE ((size_t)32 << 20)
/* captured batch shapes kept (least recently used evicted). A shape is the
 * batch's size and its frames' kinds, and a server's batches come in every
 * size up to --max-batch: at 8 the H200's load run (batches of 60-128
 * frames) captured and instantiated a graph for nearly every batch. 256
 * keep every size of one kind of traffic; an executable graph of this
 * backend's 20-40 nodes is a few kilobytes. */
#define GRAPH_CACHE 256

/* A batch's launch sequence captured as a CUDA graph. Its shape: the frame
 * count and each frame's (garment, plain skinning), which fix every launch
 * size and GEMM shape; everything else the kernels read from device tables
 * that the graph's first node copies up from pinned staging. */
typedef struct {
    cudaGraphExec_t exec;
    int n;
    int *key; /* [n] ((garment·2 + lbs_only)·3 + device packing)·2 + device refine */
    unsigned long long used;
    int nodes; /* its kernels and copies */
} graph_entry;

typedef struct {
    struct drape_identity base;
    void *dev; /* the one allocation; the views below point into it */
    float *film, *skin_w, *g, *c, *J, *F_cov;
    void *rdev; /* the refine step's tables (cuda_identity_refine), NULL when the host refines */
    float *r_vs;
    double *r_l0, *r_inv;
} cuda_identity;

/* DRAPE_CUDA_PROFILE=1 (a diagnostic, bench_gpu --profile): graphs off, an
 * event after each stage's launches, and the device time between one event
 * and the next summed by the call site that recorded the later one; the
 * table goes to stderr when the backend is freed. A spin kernel ahead of
 * each batch lets the host queue the whole batch before the device starts,
 * so a gap is the device's time, not the host's launch time. */
#define PROF_EVENTS 256
#define PROF_SITES 64
typedef struct {
    cudaEvent_t ev[PROF_EVENTS];
    const char *fn[PROF_EVENTS];
    int line[PROF_EVENTS], n;
    struct {
        const char *fn;
        int line, hits;
        double ms;
    } site[PROF_SITES];
    int n_sites, runs;
    long dropped; /* marks past PROF_EVENTS in a batch: their stages count in the last one kept */
    double host_ms, dev_ms;
} cu_profile;

typedef struct {
    struct drape_backend base;
    /* the batcher runs batches, but identities are made and dropped on the
     * server's connection threads (the identity cache): whatever uses the
     * stream takes this, or an identity's copies and kernels would land in
     * a batch's graph capture (stream_hold) */
    pthread_mutex_t mu;
    int precision, healthy;
    int tc, bf16; /* the UV conv on tensor cores (BF16, FP16 maps); bf16: its type */
    int launches; /* the last batch's kernels and copies */
    int use_graphs, capturing; /* DRAPE_CUDA_GRAPHS=0 turns capture off */
    /* the refine step in the batch (refine.cu) for the garments the model
     * refines; DRAPE_CUDA_REFINE=host leaves it to the host, as before */
    int refine_dev;
    cu_body body;
    float *r_body;
    double *r_work;
    int32_t *r_nn;
    int r_wpv; /* r_work's doubles per vertex: cu_refine_work_per_vertex, max over the refined garments */
    /* the refine kernel's shape (DRAPE_CUDA_REFINE_EDGES=0|1, DRAPE_CUDA_REFINE_THREADS=512|1024, for
     * bench_gpu --profile to weigh them on one machine; the results are the same). The H200 (2026-12-04,
     * default model, skirt): the edge terms at each end and 1024 threads took 1.83 ms a frame at batch 1,
     * 4.03 ms a batch of 256; a pass of their own, 2.44 and 5.50; 512 threads, 2.36 and 3.99 */
    int r_per_edge, r_threads;
    /* DRAPE_CUDA_REFINE_ITERS=N: every refined garment's sweeps (a profile's split of the step's
     * fixed cost from its sweeps; the frames are not the model's then) */
    int r_iters_override;
    /* the tensor-core conv's K chunks of 64 where they divide (hd_tc_bk); DRAPE_CUDA_CONV_BK=32: of 32.
     * The H200, paper scale: 0.526 against 0.609 ms at batch 1, 0.467 against 0.542 ms a frame at 256 */
    int conv_wide;
    int conv_warps; /* DRAPE_CUDA_CONV_WARPS=4: the wide tiles' 4-warp variant (64 × 64 warp tiles); else 8 */
    graph_entry graphs[GRAPH_CACHE];
    unsigned long long tick, captures;
    cu_profile *prof; /* DRAPE_CUDA_PROFILE=1: each launch's device time (prof_mark) */
    int *h_key;   /* [cap] the current batch's shape */
    void *blas_ws;
    cublasComputeType_t compute;
    cudaStream_t stream;
    cublasHandle_t blas;
    unsigned char *d_arena, *d_const; /* model arena copy; derived tables */
    cu_garment *d_garments;
    cu_garment h_garments[DRAPE_MAX_GARMENTS]; /* the same descriptors, host copy */
    const int32_t *d_parents;
    const float *d_taps[DRAPE_MAX_CONV];
    /* Bone-Net's output layer and the pose embedding as one: W [9B + d_φ, H], b */
    const float *d_wcat, *d_bcat;
    int ycat; /* 9B + d_φ */
    /* the tensor-core conv: weights [9][Cp[l]][Cp[l+1]] (16-bit), biases [Cp[l+1]] */
    const void *d_tcw[DRAPE_MAX_CONV];
    const float *d_tcb[DRAPE_MAX_CONV];
    int Cp[DRAPE_MAX_CONV + 1];         /* channels of map l, padded to 16 */
    int64_t tc_stride, tc_out_stride;  /* per slot: elements of a 16-bit map, floats of the last */
    int Vmax, C0, Cmax;
    size_t rows_max[DRAPE_MAX_CONV]; /* output texels of conv layer l, max over garments */
    int64_t map_stride;              /* floats per padded map */
    /* batch scratch (grown): device and pinned host staging */
    int cap;
    void *d_batch;
    unsigned char *h_stage; /* poses | frames | slots, mirrored at the start of d_batch */
    unsigned char *h_out;   /* the batch's meta [cap][8] floats, then the frames' records */
    size_t rec_bytes;       /* of d_rec and h_out */
    float *d_poses, *A, *Hf, *Hinv, *X, *h1, *h2, *ycat_out, *T_hat, *q, *M, *p, *out;
    unsigned char *d_rec;
    cu_frame *d_frames;
    cu_uv_slot *d_slots;
    size_t stage_bytes;
    /* UV scratch for uv_cap frames */
    int uv_cap, chunk;
    void *d_uv;
    float *map_in, *map_a, *map_b, *col, *y; /* FP32, TF32: padded maps, im2col, GEMM rows */
    void *tc_a, *tc_b;                      /* BF16, FP16: the compact maps, ping-pong */
    float *tc_out;                          /* ... and the last layer's FP32 output */
} cuda_backend;

/* Held for the whole of each op that uses the stream (run, an identity's
 * create, refine, free and read): see cuda_backend.mu. */
struct stream_hold {
    pthread_mutex_t *mu;
    explicit stream_hold(cuda_backend *be) : mu(&be->mu) { pthread_mutex_lock(mu); }
    ~stream_hold() { pthread_mutex_unlock(mu); }
    stream_hold(const stream_hold &) = delete;
    stream_hold &operator=(const stream_hold &) = delete;
};

/* whether environment variable name is set to value */
static int env_is(const char *name, const char *value)
{
    const char *v = getenv(name);
    return v && !strcmp(v, value);
}

/* a refined garment's sweeps: the model's, or DRAPE_CUDA_REFINE_ITERS's */
static int refine_iters(const cuda_backend *be, int model_iters)
{
    return be->r_iters_override > 0 ? be->r_iters_override : model_iters;
}

/* ---- the program's services ---- */

static const drape_backend_services *program; /* the program's, set by drape_backend_plugin_init */

namespace { /* internal linkage: the plugin exports its init alone */
extern const drape_backend_ops cuda_ops;
}

/* drape_fail, formatted here and recorded by the program */
static int plugin_fail(drape_error *err, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int plugin_fail(drape_error *err, int code, const char *fmt, ...)
{
    char msg[DRAPE_ERRMSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return program->fail(err, code, msg);
}

static void plugin_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void plugin_log(int level, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    program->log(level, msg);
}

/* ---- error handling ---- */

static int cuda_fail(cuda_backend *be, int oom, const char *what, const char *msg, const char *file, int line,
                     drape_error *err)
{
    if (oom) return plugin_fail(err, DRAPE_ENOMEM, "%s:%d: %s: %s", file, line, what, msg);
    if (be && be->capturing) /* capture refused an operation: the caller falls back to plain launches */
        return plugin_fail(err, DRAPE_EBACKEND, "%s:%d: %s: %s (during graph capture)", file, line, what, msg);
    if (be) be->healthy = 0;
    return plugin_fail(err, DRAPE_EBACKEND, "%s:%d: %s: %s (CUDA backend marked unhealthy)", file, line, what, msg);
}

static int cu_check(cuda_backend *be, cudaError_t rc, const char *what, const char *file, int line, drape_error *err)
{
    if (rc == cudaSuccess) return DRAPE_OK;
    cudaGetLastError(); /* clears a non-sticky error so the next call does not see it */
    return cuda_fail(be, rc == cudaErrorMemoryAllocation, what, cudaGetErrorString(rc), file, line, err);
}

static int cb_check(cuda_backend *be, cublasStatus_t rc, const char *what, const char *file, int line,
                    drape_error *err)
{
    if (rc == CUBLAS_STATUS_SUCCESS) return DRAPE_OK;
    return cuda_fail(be, rc == CUBLAS_STATUS_ALLOC_FAILED, what, cublasGetStatusString(rc), file, line, err);
}

#define CU(call)                                                                  \
    do {                                                                          \
        int rc_ = cu_check(be, (call), #call, __FILE__, __LINE__, err);           \
        if (rc_) return rc_;                                                      \
    } while (0)
#define CB(call)                                                                  \
    do {                                                                          \
        int rc_ = cb_check(be, (call), #call, __FILE__, __LINE__, err);           \
        if (rc_) return rc_;                                                      \
    } while (0)
static double wall_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static void prof_mark(cuda_backend *be, const char *fn, int line)
{
    cu_profile *p = be->prof;
    if (!p) return;
    if (p->n == PROF_EVENTS) {
        p->dropped++;
        return;
    }
    cudaEventRecord(p->ev[p->n], be->stream);
    p->fn[p->n] = fn;
    p->line[p->n++] = line;
}

/* after a batch's synchronize: the gaps between its events, by site (the
 * first batch is the warm-up and is not counted) */
static void prof_collect(cuda_backend *be, double host_ms)
{
    cu_profile *p = be->prof;
    if (!p) return;
    for (int i = 1; i < p->n && p->runs > 0; i++) {
        float ms = 0;
        cudaEventElapsedTime(&ms, p->ev[i - 1], p->ev[i]);
        int k = 0;
        while (k < p->n_sites && !(p->site[k].line == p->line[i] && !strcmp(p->site[k].fn, p->fn[i]))) k++;
        if (k == PROF_SITES) continue;
        if (k == p->n_sites) {
            p->site[k].fn = p->fn[i];
            p->site[k].line = p->line[i];
            p->n_sites++;
        }
        p->site[k].hits++;
        p->site[k].ms += ms;
        p->dev_ms += ms;
    }
    if (p->runs++ > 0) p->host_ms += host_ms;
    p->n = 0;
}

static void prof_print(const cuda_backend *be)
{
    const cu_profile *p = be->prof;
    if (!p || p->runs < 2) return;
    int r = p->runs - 1;
    fprintf(stderr, "cuda profile: %d batches (graphs off); per batch: host %.4f ms from run's start to its end, "
            "device %.4f ms over the stages below\n| site | events per batch | ms per batch | share |\n|---|---|---|---|\n",
            r, p->host_ms / r, p->dev_ms / r);
    for (int k = 0; k < p->n_sites; k++)
        fprintf(stderr, "| %s:%d | %.1f | %.4f | %.1f%% |\n", p->site[k].fn, p->site[k].line, (double)p->site[k].hits / r,
                p->site[k].ms / r, 100.0 * p->site[k].ms / (p->dev_ms > 0 ? p->dev_ms : 1));
    if (p->dropped)
        fprintf(stderr, "cuda profile: %ld marks past %d a batch dropped (the device time is whole, the last "
                "stages are not told apart)\n", p->dropped, PROF_EVENTS);
}

/* after a stage's launches: launch errors are reported here (and, when
 * profiling, the stage's end is marked) */
#define LAUNCHED()                                                                \
    do {                                                                          \
        CU(cudaPeekAtLastError());                                                \
        if (be->prof) prof_mark(be, __func__, __LINE__);                          \
    } while (0)

static int cuda_probe(char *why, size_t n)
{
    int count = 0;
    cudaError_t rc = cudaGetDeviceCount(&count);
    if (rc != cudaSuccess) {
        cudaGetLastError();
        if (why) snprintf(why, n, "%s", cudaGetErrorString(rc));
        return 0;
    }
    if (why) snprintf(why, n, count ? "%d device(s)" : "no device", count);
    return count;
}

/* ---- allocation helpers ---- */

static size_t align_up(size_t x) { return (x + ALIGN - 1) & ~(size_t)(ALIGN - 1); }

typedef struct {
    void *ptr; /* void ** actually: where to store the view */
    size_t bytes;
} carve_item;

/* One cudaMalloc for all items, each view ALIGN-aligned; *base owns it. */
static int carve(cuda_backend *be, void **base, carve_item *it, int n, const char *what, drape_error *err)
{
    size_t total = 0;
    for (int i = 0; i < n; i++) total += align_up(it[i].bytes);
    *base = NULL;
    cudaError_t rc = cudaMalloc(base, total ? total : ALIGN);
    if (rc != cudaSuccess) {
        cudaGetLastError();
        *base = NULL;
        if (rc == cudaErrorMemoryAllocation)
            return plugin_fail(err, DRAPE_ENOMEM, "cuda backend: cannot allocate %zu bytes of device memory for %s",
                               total, what);
        return cu_check(be, rc, what, __FILE__, __LINE__, err);
    }
    size_t off = 0;
    for (int i = 0; i < n; i++) {
        *(void **)it[i].ptr = (unsigned char *)*base + off;
        off += align_up(it[i].bytes);
    }
    return DRAPE_OK;
}

/* device address of a tensor of the model arena */
static const float *dev_f(const cuda_backend *be, const void *host)
{
    return (const float *)(be->d_arena + ((const unsigned char *)host - be->base.model->arena));
}
static const int32_t *dev_i(const cuda_backend *be, const void *host) { return (const int32_t *)dev_f(be, host); }

/* ---- GEMM ---- */

/* y [n,out] = x [n,in] · Wᵀ with W [out,in] (w_rows_out: PyTorch Linear) or
 * y [n,out] = x [n,in] · W with W [in,out] (packed conv taps); no bias. */
static int gemm(cuda_backend *be, float *y, const float *x, const float *w, int n, int in, int out, int w_rows_out,
                drape_error *err)
{
    const float one = 1.0f, zero = 0.0f;
    /* column-major view: yᵀ [out,n] = op(W) [out,in] · xᵀ [in,n] */
    CB(cublasGemmEx(be->blas, w_rows_out ? CUBLAS_OP_T : CUBLAS_OP_N, CUBLAS_OP_N, out, n, in, &one, w, CUDA_R_32F,
                    w_rows_out ? in : out, x, CUDA_R_32F, in, &zero, y, CUDA_R_32F, out, be->compute,
                    CUBLAS_GEMM_DEFAULT));
    if (be->prof) prof_mark(be, "gemm", out); /* a GEMM's site: its output width */
    return DRAPE_OK;
}

static int linear(cuda_backend *be, float *y, const float *x, const drape_linear *l, int n, drape_error *err)
{
    return gemm(be, y, x, dev_f(be, l->w), n, l->in, l->out, 1, err);
}

/* y = x·Wᵀ + b (ReLU if relu) */
static int linear_act(cuda_backend *be, float *y, const float *x, const drape_linear *l, int n, int relu,
                      drape_error *err)
{
    int rc = linear(be, y, x, l, n, err);
    if (rc) return rc;
    cu_bias_act(y, dev_f(be, l->b), n, l->out, relu, be->stream);
    LAUNCHED();
    return DRAPE_OK;
}

/* dst (+)= LN(l1(ReLU(l0(x)))); y [n,out], tmp [n,hidden] scratch (y may be dst when not accumulating) */
static int mlp_ln(cuda_backend *be, float *dst, float *y, float *tmp, const float *x, const drape_mlp_ln *mlp, int n,
                  int accumulate, drape_error *err)
{
    int rc = linear_act(be, tmp, x, &mlp->l0, n, 1, err);
    if (!rc) rc = linear(be, y, tmp, &mlp->l1, n, err);
    if (rc) return rc;
    cu_bias_layernorm(dst, y, dev_f(be, mlp->l1.b), dev_f(be, mlp->ln_w), dev_f(be, mlp->ln_b), n, mlp->l1.out,
                      accumulate, be->stream);
    LAUNCHED();
    return DRAPE_OK;
}

/* ---- backend lifetime ---- */

static void graphs_clear(cuda_backend *be)
{
    for (int i = 0; i < GRAPH_CACHE; i++) {
        if (be->graphs[i].exec) cudaGraphExecDestroy(be->graphs[i].exec);
        free(be->graphs[i].key);
        memset(&be->graphs[i], 0, sizeof be->graphs[i]);
    }
}

static void free_batch(cuda_backend *be)
{
    graphs_clear(be); /* they hold the batch buffers' addresses */
    free(be->h_key);
    be->h_key = NULL;
    cudaFree(be->d_batch);
    cudaFreeHost(be->h_stage);
    cudaFreeHost(be->h_out);
    be->d_batch = NULL;
    be->h_stage = NULL;
    be->h_out = NULL;
    be->cap = 0;
}

static void cuda_destroy(drape_backend *b)
{
    cuda_backend *be = (cuda_backend *)b;
    if (be->stream) cudaStreamSynchronize(be->stream);
    if (be->prof) {
        prof_print(be);
        for (int i = 0; i < PROF_EVENTS; i++) cudaEventDestroy(be->prof->ev[i]);
        free(be->prof);
    }
    free_batch(be);
    cudaFree(be->d_uv);
    cudaFree(be->blas_ws);
    cudaFree(be->d_const);
    cudaFree(be->d_arena);
    if (be->blas) cublasDestroy(be->blas);
    if (be->stream) cudaStreamDestroy(be->stream);
    cudaGetLastError();
    pthread_mutex_destroy(&be->mu);
    free(be);
}

/* Bytes of a garment's derived tables, in upload order (see upload_garment);
 * tc: with the tensor-core conv's neighbour and sampling tables. */
static size_t garment_table_bytes(const drape_garment *g, const drape_config *c, int tc, int refine)
{
    size_t T = (size_t)c->uv_h * c->uv_w, s = 0, copies = (size_t)g->copy_start[g->V];
    s += align_up(T * 4) + align_up(T * 12) + align_up((size_t)g->n_cov * 4);
    s += align_up((size_t)(g->V + 1) * 4) + align_up(copies * 4);
    for (int l = 0; l <= c->n_conv; l++) s += align_up((size_t)g->active_texels[l] * 4);
    s += align_up((size_t)g->active_texels[0] * 4); /* in_cov */
    if (tc) {
        for (int l = 0; l < c->n_conv; l++) s += align_up((size_t)g->active_texels[l + 1] * 36);
        s += 2 * align_up(copies * 16);
    }
    if (refine) s += 2 * align_up((size_t)g->n_edges * 8) + align_up((size_t)(g->V + 1) * 4);
    return s;
}

/* copies n bytes to host staging at *off and returns the device address */
static const void *stage(unsigned char *host, const unsigned char *dev, size_t *off, const void *src, size_t n)
{
    size_t o = *off;
    if (src) memcpy(host + o, src, n);
    *off += align_up(n);
    return dev + o;
}

/* Fills g's tables in host (staged for dev) and its descriptor d. Fails
 * only when the conv runs do not nest as the tensor-core conv needs (a
 * texel read that no layer writes: a bug in the runs, runtime/uvmap.c). */
static int upload_garment(cu_garment *d, unsigned char *host, const unsigned char *dev, size_t *off,
                          const cuda_backend *be, int gi, const drape_config *c, drape_error *err)
{
    const drape_garment *g = &be->base.model->garments[gi];
    size_t T = (size_t)c->uv_h * c->uv_w;
    memset(d, 0, sizeof *d);
    d->V = g->V;
    d->n_cov = g->n_cov;
    d->skin_idx = dev_i(be, g->skin_idx);
    d->faces = dev_i(be, g->faces);
    d->skin_w0 = dev_f(be, g->skin_w0);
    d->bone_joint_w = dev_f(be, g->bone_joint_w);
    d->uv = dev_f(be, g->uv);
    d->texel_face = (const int32_t *)stage(host, dev, off, g->texel_face, T * 4);
    d->texel_bary = (const float *)stage(host, dev, off, g->texel_bary, T * 12);
    d->cov_texel = (const int32_t *)stage(host, dev, off, g->cov_texel, (size_t)g->n_cov * 4);
    d->copy_start = (const int32_t *)stage(host, dev, off, g->copy_start, (size_t)(g->V + 1) * 4);
    d->copy_uv = (const int32_t *)stage(host, dev, off, g->copy_uv, (size_t)g->copy_start[g->V] * 4);
    for (int l = 0; l <= c->n_conv; l++) {
        d->n_pos[l] = hd_expand_runs((int32_t *)(host + *off), g->spans[l], g->n_spans[l]);
        d->pos[l] = (const int32_t *)stage(host, dev, off, NULL, (size_t)d->n_pos[l] * 4);
    }
    hd_input_cov((int32_t *)(host + *off), (const int32_t *)(host + ((const unsigned char *)d->pos[0] - dev)),
                 d->n_pos[0], g->cov_texel, g->n_cov, c->uv_w);
    d->in_cov = (const int32_t *)stage(host, dev, off, NULL, (size_t)d->n_pos[0] * 4);
    if (be->refine_dev && c->refine[gi].iters > 0) {
        d->r_iters = refine_iters(be, c->refine[gi].iters);
        d->r_k = c->refine[gi].stiffness, d->r_margin = c->refine[gi].margin, d->r_rho = c->refine[gi].rho;
        d->body_nn = dev_i(be, g->body_nn);
        d->n_edges = g->n_edges;
        d->edges = (const int32_t *)stage(host, dev, off, g->edges, (size_t)g->n_edges * 8);
        hd_incidence((int32_t *)(host + *off), (int32_t *)(host + *off + align_up((size_t)(g->V + 1) * 4)), g->edges,
                     g->n_edges, 2, g->V);
        d->ve_start = (const int32_t *)stage(host, dev, off, NULL, (size_t)(g->V + 1) * 4);
        d->ve = (const int32_t *)stage(host, dev, off, NULL, (size_t)g->n_edges * 8);
    }
    if (!be->tc) return DRAPE_OK;
#define HOST_OF(ptr) ((const int32_t *)(host + ((const unsigned char *)(ptr) - dev)))
    for (int l = 0; l < c->n_conv; l++) {
        int bad = hd_tc_neighbours((int32_t *)(host + *off), HOST_OF(d->pos[l + 1]), d->n_pos[l + 1], HOST_OF(d->pos[l]),
                                   d->n_pos[l], c->uv_h, c->uv_w);
        if (bad >= 0)
            return plugin_fail(err, DRAPE_EINVAL, "cuda backend: garment '%s': conv layer %d's texel %d reads a texel "
                               "no layer computes", g->name, l, bad);
        d->nbr[l] = (const int32_t *)stage(host, dev, off, NULL, (size_t)d->n_pos[l + 1] * 36);
    }
    int copies = g->copy_start[g->V];
    int32_t *row = (int32_t *)(host + *off);
    float *w = (float *)(host + *off + align_up((size_t)copies * 16));
    int bad = hd_tc_sample_table(row, w, g->uv, g->copy_uv, copies, HOST_OF(d->pos[c->n_conv]), d->n_pos[c->n_conv],
                                 c->uv_h, c->uv_w);
#undef HOST_OF
    if (bad >= 0)
        return plugin_fail(err, DRAPE_EINVAL, "cuda backend: garment '%s': UV copy %d samples a texel the last conv "
                           "layer does not compute", g->name, bad);
    d->tap_row = (const int32_t *)stage(host, dev, off, NULL, (size_t)copies * 16);
    d->tap_w = (const float *)stage(host, dev, off, NULL, (size_t)copies * 16);
    return DRAPE_OK;
}

/* Uploads the arena and the derived constants. */
/* The 16-bit bits of f in the tensor-core type */
static uint16_t tc_bits(const cuda_backend *be, float f) { return hd_tc_bits(f, be->bf16); }

/* Uploads the arena and the derived constants. */
static int upload_model(cuda_backend *be, drape_error *err)
{
    const drape_model *m = be->base.model;
    const drape_config *c = &m->cfg;
    const drape_net *net = &m->net;
    int H = c->hidden, nb = 9 * c->bones;
    CU(cudaMalloc((void **)&be->d_arena, m->arena_bytes));
    CU(cudaMemcpy(be->d_arena, m->arena, m->arena_bytes, cudaMemcpyHostToDevice));
    size_t bytes = align_up(sizeof(int32_t) * DRAPE_JOINTS) + align_up(sizeof(cu_garment) * c->n_garments), taps = 0;
    bytes += align_up((size_t)be->ycat * H * 4) + align_up((size_t)be->ycat * 4);
    for (int i = 0; i < c->n_garments; i++)
        bytes += garment_table_bytes(&m->garments[i], c, be->tc, be->refine_dev && c->refine[i].iters > 0);
    if (be->refine_dev) /* the body's face and cluster lists (below) */
        bytes += 2 * align_up((size_t)(m->Nb + 1) * 4) + align_up((size_t)m->Fb * 12) + 2 * align_up((size_t)m->Nb * 4);
    for (int l = 0; l < c->n_conv; l++) {
        size_t in = (size_t)net->conv[l].in, out = (size_t)net->conv[l].out, tp = (size_t)9 * be->Cp[l] * be->Cp[l + 1];
        taps = taps > 9 * in * out ? taps : 9 * in * out;
        taps = taps > tp ? taps : tp;
        bytes += be->tc ? align_up(tp * 2) + align_up((size_t)be->Cp[l + 1] * 4) : align_up(9 * in * out * 4);
    }
    unsigned char *host = (unsigned char *)calloc(1, bytes);
    float *wt = (float *)malloc(3 * taps * sizeof(float) + 1);
    if (!host || !wt) {
        free(host);
        free(wt);
        return plugin_fail(err, DRAPE_ENOMEM, "cuda backend: out of host memory staging %zu bytes of tables", bytes);
    }
    cudaError_t rc = cudaMalloc((void **)&be->d_const, bytes);
    if (rc != cudaSuccess) {
        free(host);
        free(wt);
        CU(rc);
    }
    size_t off = 0;
    int frc = DRAPE_OK;
    be->d_parents = (const int32_t *)stage(host, be->d_const, &off, m->parents, sizeof(int32_t) * DRAPE_JOINTS);
    if (be->refine_dev) { /* the body for the refine step: its arena tensors, the faces at each vertex */
        be->body.weights = dev_f(be, m->weights);
        be->body.faces = dev_i(be, m->body_faces);
        be->body.Nb = m->Nb;
        hd_incidence((int32_t *)(host + off), (int32_t *)(host + off + align_up((size_t)(m->Nb + 1) * 4)),
                     m->body_faces, m->Fb, 3, m->Nb);
        be->body.vf_start = (const int32_t *)stage(host, be->d_const, &off, NULL, (size_t)(m->Nb + 1) * 4);
        be->body.vf = (const int32_t *)stage(host, be->d_const, &off, NULL, (size_t)m->Fb * 12);
        size_t o1 = off + align_up((size_t)(m->Nb + 1) * 4), o2 = o1 + align_up((size_t)m->Nb * 4);
        int64_t *sc = (int64_t *)malloc(sizeof(int64_t) * 2 * (size_t)m->Nb);
        if (!sc) {
            free(host);
            free(wt);
            return plugin_fail(err, DRAPE_ENOMEM, "cuda backend: out of host memory for the body's clusters");
        }
        be->body.C = hd_body_clusters((int32_t *)(host + off), (int32_t *)(host + o1), (int32_t *)(host + o2), m->weights,
                                      m->v_template, m->Nb, sc);
        free(sc);
        be->body.c_start = (const int32_t *)stage(host, be->d_const, &off, NULL, (size_t)(m->Nb + 1) * 4);
        be->body.c_vert = (const int32_t *)stage(host, be->d_const, &off, NULL, (size_t)m->Nb * 4);
        be->body.c_of = (const int32_t *)stage(host, be->d_const, &off, NULL, (size_t)m->Nb * 4);
    }
    /* [bonenet.3; pose_embed]: rows of Linear weights, one after the other */
    float *wc = (float *)(host + off);
    memcpy(wc, net->bonenet[3].w, (size_t)nb * H * 4);
    memcpy(wc + (size_t)nb * H, net->pose_embed.w, (size_t)c->pose_dim * H * 4);
    be->d_wcat = (const float *)stage(host, be->d_const, &off, NULL, (size_t)be->ycat * H * 4);
    float *bc = (float *)(host + off);
    memcpy(bc, net->bonenet[3].b, (size_t)nb * 4);
    memcpy(bc + nb, net->pose_embed.b, (size_t)c->pose_dim * 4);
    be->d_bcat = (const float *)stage(host, be->d_const, &off, NULL, (size_t)be->ycat * 4);
    for (int l = 0; l < c->n_conv; l++) {
        const drape_conv *cv = &net->conv[l];
        if (!be->tc) {
            float *tp = (float *)(host + off);
            program->conv_pack(tp, wt, cv->w, cv->in, cv->out); /* taps [9][in][out], the im2col column order */
            be->d_taps[l] = (const float *)stage(host, be->d_const, &off, NULL, (size_t)9 * cv->in * cv->out * 4);
            continue;
        }
        /* taps [9][in][out], padded to [9][Cp[l]][Cp[l+1]] and rounded to the 16-bit type */
        int Cip = be->Cp[l], Cop = be->Cp[l + 1];
        float *tp = wt + taps, *wp = wt + 2 * taps, bp[4096 + 16];
        program->conv_pack(tp, wt, cv->w, cv->in, cv->out);
        hd_tc_pack_weights(wp, bp, tp, cv->b, cv->in, cv->out, Cip, Cop);
        uint16_t *w16 = (uint16_t *)(host + off);
        for (size_t i = 0; i < (size_t)9 * Cip * Cop; i++) w16[i] = tc_bits(be, wp[i]);
        be->d_tcw[l] = stage(host, be->d_const, &off, NULL, (size_t)9 * Cip * Cop * 2);
        be->d_tcb[l] = (const float *)stage(host, be->d_const, &off, bp, (size_t)Cop * 4);
    }
    for (int i = 0; i < c->n_garments && !frc; i++)
        frc = upload_garment(&be->h_garments[i], host, be->d_const, &off, be, i, c, err);
    be->d_garments = (cu_garment *)stage(host, be->d_const, &off, be->h_garments, sizeof(cu_garment) * c->n_garments);
    rc = frc ? cudaSuccess : cudaMemcpy(be->d_const, host, bytes, cudaMemcpyHostToDevice);
    free(host);
    free(wt);
    if (frc) return frc;
    CU(rc);
    return DRAPE_OK;
}

static int cuda_create(drape_backend **out, const drape_model *m, const drape_backend_opts *opts, drape_error *err)
{
    const drape_config *c = &m->cfg;
    cuda_backend *be = (cuda_backend *)calloc(1, sizeof *be);
    if (!be) return plugin_fail(err, DRAPE_ENOMEM, "out of memory");
    pthread_mutex_init(&be->mu, NULL);
    be->base.ops = &cuda_ops;
    be->base.model = m;
    be->healthy = 1;
    be->precision = opts->precision;
    /* FP32 reference; the others run the dense GEMMs on tensor cores with FP32
     * inputs, outputs and accumulation (cuBLAS rounds the inputs); BF16 and
     * FP16 also run the UV conv as the tensor-core implicit GEMM (conv_tc.cu) */
    be->compute = opts->precision == DRAPE_PRECISION_TF32   ? CUBLAS_COMPUTE_32F_FAST_TF32
                  : opts->precision == DRAPE_PRECISION_BF16 ? CUBLAS_COMPUTE_32F_FAST_16BF
                  : opts->precision == DRAPE_PRECISION_FP16 ? CUBLAS_COMPUTE_32F_FAST_16F
                                                            : CUBLAS_COMPUTE_32F;
    be->tc = opts->precision == DRAPE_PRECISION_BF16 || opts->precision == DRAPE_PRECISION_FP16;
    be->bf16 = opts->precision == DRAPE_PRECISION_BF16;
    be->launches = -1;
    be->ycat = 9 * c->bones + c->pose_dim;
    be->Vmax = 1;
    be->C0 = 3 + c->feat_dim + c->pose_dim + 1;
    be->Cmax = be->C0;
    be->Cp[0] = hd_tc_pad(be->C0);
    for (int l = 0; l < c->n_conv; l++) be->Cp[l + 1] = hd_tc_pad(c->conv[l]);
    for (int i = 0; i < c->n_garments; i++) {
        const drape_garment *g = &m->garments[i];
        if (g->V > be->Vmax) be->Vmax = g->V;
        for (int l = 0; l < c->n_conv; l++) {
            if ((size_t)g->active_texels[l + 1] > be->rows_max[l]) be->rows_max[l] = (size_t)g->active_texels[l + 1];
            int64_t e = g->active_texels[l] * be->Cp[l];
            if (e > be->tc_stride) be->tc_stride = e;
        }
        if (g->active_texels[c->n_conv] * 3 > be->tc_out_stride) be->tc_out_stride = g->active_texels[c->n_conv] * 3;
    }
    /* whole 128-byte lines per slot: the conv's 16-byte copies stay aligned */
    be->tc_stride = (be->tc_stride + 63) & ~(int64_t)63;
    be->tc_out_stride = (be->tc_out_stride + 31) & ~(int64_t)31;
    for (int l = 0; l < c->n_conv; l++)
        if (c->conv[l] > be->Cmax) be->Cmax = c->conv[l];
    be->map_stride = (int64_t)(c->uv_h + 2) * (c->uv_w + 2) * be->Cmax;
    int rc = DRAPE_OK;
    if (cudaSetDevice(0) != cudaSuccess || cudaStreamCreateWithFlags(&be->stream, cudaStreamNonBlocking) != cudaSuccess) {
        cudaError_t e = cudaGetLastError();
        rc = plugin_fail(err, DRAPE_ENOTSUP, "cuda backend: cannot use device 0: %s", cudaGetErrorString(e));
    }
    if (!rc) rc = cb_check(be, cublasCreate(&be->blas), "cublasCreate", __FILE__, __LINE__, err);
    if (!rc) rc = cb_check(be, cublasSetStream(be->blas, be->stream), "cublasSetStream", __FILE__, __LINE__, err);
    if (!rc) rc = cu_check(be, cudaMalloc(&be->blas_ws, BLAS_WORKSPACE), "cudaMalloc (cuBLAS workspace)", __FILE__, __LINE__, err);
    if (!rc)
        rc = cb_check(be, cublasSetWorkspace(be->blas, be->blas_ws, BLAS_WORKSPACE), "cublasSetWorkspace", __FILE__,
                      __LINE__, err);
    be->use_graphs = !env_is("DRAPE_CUDA_GRAPHS", "0");
    if (!rc && env_is("DRAPE_CUDA_PROFILE", "1") && (be->prof = (cu_profile *)calloc(1, sizeof *be->prof))) {
        for (int i = 0; i < PROF_EVENTS; i++) cudaEventCreate(&be->prof->ev[i]);
        be->use_graphs = 0;
    }
    for (int i = 0; i < c->n_garments; i++) be->refine_dev |= c->refine[i].iters > 0;
    if (env_is("DRAPE_CUDA_REFINE", "host")) be->refine_dev = 0;
    /* the kernels' variants, for a profile to weigh (the defaults measured best) */
    be->r_per_edge = env_is("DRAPE_CUDA_REFINE_EDGES", "1");
    be->r_threads = env_is("DRAPE_CUDA_REFINE_THREADS", "512") ? 512 : 1024;
    be->conv_wide = !env_is("DRAPE_CUDA_CONV_BK", "32");
    be->conv_warps = env_is("DRAPE_CUDA_CONV_WARPS", "4") ? 4 : 8;
    const char *ri = getenv("DRAPE_CUDA_REFINE_ITERS");
    be->r_iters_override = ri ? atoi(ri) : 0;
    for (int i = 0; i < c->n_garments; i++)
        if (c->refine[i].iters > 0) {
            int wpv = cu_refine_work_per_vertex(m->garments[i].V, m->garments[i].n_edges, be->r_per_edge);
            be->r_wpv = wpv > be->r_wpv ? wpv : be->r_wpv;
        }
    int wide_ok = 0;
    if (!rc && be->tc)
        rc = cu_check(be, cu_conv_tc_setup(&wide_ok), "cudaFuncSetAttribute (tensor-core conv)", __FILE__, __LINE__, err);
    be->conv_wide &= wide_ok;
    if (!rc) rc = upload_model(be, err);
    if (rc) {
        cuda_destroy(&be->base);
        return rc;
    }
    /* the UV stage's scratch per frame: three maps, im2col and GEMM rows; or
     * two compact 16-bit maps and the last layer's output */
    size_t per = 3 * (size_t)be->map_stride * 4, cm = 0;
    for (int l = 0; l < c->n_conv; l++) {
        size_t x = be->rows_max[l] * ((size_t)9 * m->net.conv[l].in + m->net.conv[l].out) * 4;
        cm = x > cm ? x : cm;
    }
    per += cm;
    if (be->tc) per = 2 * (size_t)be->tc_stride * 2 + (size_t)be->tc_out_stride * 4;
    be->chunk = (int)(UV_BUDGET / per < 1 ? 1 : UV_BUDGET / per > 256 ? 256 : UV_BUDGET / per);
    *out = &be->base;
    return DRAPE_OK;
}

static int cuda_healthy(const drape_backend *b) { return ((const cuda_backend *)b)->healthy; }

static int refuse_unhealthy(drape_error *err)
{
    return plugin_fail(err, DRAPE_EBACKEND, "cuda backend is unhealthy after an earlier device error; recreate it");
}

/* ---- module B ---- */

/* Device part of module B into id; scratch views in d. */
typedef struct {
    float *x, *ef, *h, *hcat, *hnew, *e, *ecat, *enew, *tmp, *small, *dwh, *dw, *f;
    int32_t *snd, *rcv, *start, *ids;
} mb_scratch;

static int module_b_device(cuda_backend *be, cuda_identity *id, const mb_scratch *d, int garment, int N, int E,
                           drape_error *err)
{
    const drape_model *m = be->base.model;
    const drape_config *cf = &m->cfg;
    const drape_garment *g = &m->garments[garment];
    int V = g->V, dh = cf->latent, H = cf->hidden, rc;
    cudaStream_t s = be->stream;
#define TRY(x) do { if ((rc = (x))) return rc; } while (0)
    TRY(mlp_ln(be, d->h, d->h, d->tmp, d->x, &m->net.node_embed, N, 0, err));
    TRY(mlp_ln(be, d->e, d->e, d->tmp, d->ef, &m->net.edge_embed, E, 0, err));
    for (int bl = 0; bl < cf->blocks; bl++) {
        cu_edge_concat(d->ecat, d->e, d->h, d->snd, d->rcv, E, dh, s);
        LAUNCHED();
        TRY(mlp_ln(be, d->e, d->enew, d->tmp, d->ecat, &m->net.edge_mlp[bl], E, 1, err));
        cu_node_concat(d->hcat, d->h, d->e, d->start, d->ids, N, dh, s);
        LAUNCHED();
        TRY(mlp_ln(be, d->h, d->hnew, d->tmp, d->hcat, &m->net.node_mlp[bl], N, 1, err));
    }
    /* heads on the garment nodes h[0:V] */
    float *mean = d->small, *zh = mean + dh, *z = zh + dh, *m1 = z + cf->z_dim, *m2 = m1 + H;
    cu_mean_rows(mean, d->h, V, dh, s);
    LAUNCHED();
    TRY(linear_act(be, zh, mean, &m->net.head_z[0], 1, 1, err));
    TRY(linear_act(be, z, zh, &m->net.head_z[1], 1, 0, err));
    TRY(linear_act(be, d->dwh, d->h, &m->net.head_dw[0], V, 1, err));
    TRY(linear_act(be, d->dw, d->dwh, &m->net.head_dw[1], V, 0, err));
    TRY(linear_act(be, d->f, d->h, &m->net.head_feat, V, 0, err));
    TRY(linear_act(be, m1, z, &m->net.modulator[0], 1, 1, err));
    TRY(linear_act(be, m2, m1, &m->net.modulator[1], 1, 1, err));
    TRY(linear_act(be, id->film, m2, &m->net.modulator[2], 1, 0, err));
#undef TRY
    cu_skin_weights(id->skin_w, dev_f(be, g->skin_w0), d->dw, dev_i(be, g->skin_idx), V, cf->skin_k, cf->bones, s);
    cu_fcov(id->F_cov, d->f, be->d_garments + garment, g->n_cov, cf->feat_dim, s);
    LAUNCHED();
    return DRAPE_OK;
}

static int cuda_identity_create(drape_backend *b, drape_identity **out, int garment, const float *betas,
                                drape_error *err)
{
    cuda_backend *be = (cuda_backend *)b;
    stream_hold hold(be);
    if (!be->healthy) return refuse_unhealthy(err);
    const drape_model *m = b->model;
    const drape_config *cf = &m->cfg;
    const drape_garment *g = &m->garments[garment];
    int V = g->V, Nb = m->Nb, N = V + Nb, B = cf->bones, H = cf->hidden, dh = cf->latent, S = cf->betas;
    int knn = cf->knn < Nb ? cf->knn : Nb, df = cf->feat_dim, dwh = m->net.head_dw[0].out;
    int Emax = 2 * (g->n_edges + m->n_body_edges + V * knn);
    *out = NULL;

    /* host: shape, retarget, graph (the same bodies the device would run) */
    size_t nf = (size_t)Nb * 6 + 3 * (size_t)V + 3 * (size_t)B + 72 + (size_t)N * 8 + (size_t)Emax * 7 + 64;
    size_t ni = (size_t)V * knn + (size_t)2 * Emax + N + (size_t)N + 1 + Emax;
    float *hf = (float *)malloc(nf * sizeof(float));
    int32_t *hi = (int32_t *)malloc(ni * sizeof(int32_t));
    unsigned char *type = (unsigned char *)malloc((size_t)Emax + 1);
    cuda_identity *id = (cuda_identity *)calloc(1, sizeof *id);
    void *scratch = NULL;
    int rc = DRAPE_OK;
    if (!hf || !hi || !type || !id) {
        rc = plugin_fail(err, DRAPE_ENOMEM, "module B: out of host memory (graph of %d nodes, %d edges)", N, Emax);
        goto out;
    }
    {
        float *vs = hf, *nrm = vs + 3 * (size_t)Nb, *gv = nrm + 3 * (size_t)Nb, *cb = gv + 3 * (size_t)V;
        float *J = cb + 3 * (size_t)B, *best = J + 72;
        hd_graph gr = {N, 0, best + 64, best + 64 + (size_t)N * 8, NULL, NULL, NULL, NULL};
        int32_t *nn = hi;
        gr.snd = nn + (size_t)V * knn; /* + N cursor scratch, see hd_build_graph */
        gr.rcv = gr.snd + Emax + N;
        gr.start = gr.rcv + Emax;
        gr.ids = gr.start + N + 1;
        if ((rc = program->body_shape(vs, J, m, betas))) {
            rc = plugin_fail(err, rc, "module B: body shape failed");
            goto out;
        }
        for (int v = 0; v < V; v++) hd_retarget_point(gv + 3 * v, g->rest + 3 * v, g->body_nn[v], m->shapedirs, betas, S);
        for (int i = 0; i < B; i++) hd_retarget_point(cb + 3 * i, g->bones + 3 * i, g->bone_body_nn[i], m->shapedirs, betas, S);
        program->mesh_normals(nrm, vs, Nb, m->body_faces, m->Fb);
        hd_build_graph(&gr, type, nn, best, m, g, gv, vs, nrm, knn);
        int E = gr.E;

        /* the identity: one allocation, views into it */
        size_t fl[6] = {(size_t)6 * H, (size_t)V * cf->skin_k, 3 * (size_t)V, 3 * (size_t)B, 72, (size_t)g->n_cov * df};
        float **views[6] = {&id->film, &id->skin_w, &id->g, &id->c, &id->J, &id->F_cov};
        carve_item it[6];
        for (int i = 0; i < 6; i++) it[i] = carve_item{views[i], fl[i] * sizeof(float)};
        if ((rc = carve(be, &id->dev, it, 6, "an identity", err))) goto out;
        id->base.garment = garment;
        for (int i = 0; i < 6; i++) id->base.device_bytes += align_up(fl[i] * sizeof(float));
        id->base.bytes = sizeof *id + id->base.device_bytes;

        mb_scratch d;
        int rows = E > N ? E : N, dwmax = dwh > B ? dwh : B;
        carve_item sc[] = {
            {&d.x, (size_t)N * 8 * 4},        {&d.ef, (size_t)E * 7 * 4},          {&d.h, (size_t)N * dh * 4},
            {&d.hcat, (size_t)N * 2 * dh * 4}, {&d.hnew, (size_t)N * dh * 4},      {&d.e, (size_t)E * dh * 4},
            {&d.ecat, (size_t)E * 3 * dh * 4}, {&d.enew, (size_t)E * dh * 4},      {&d.tmp, (size_t)rows * dh * 4},
            {&d.small, (size_t)(2 * dh + cf->z_dim + 2 * H) * 4},                  {&d.dwh, (size_t)V * dwmax * 4},
            {&d.dw, (size_t)V * B * 4},         {&d.f, (size_t)V * df * 4},         {&d.snd, (size_t)E * 4},
            {&d.rcv, (size_t)E * 4},            {&d.start, (size_t)(N + 1) * 4},   {&d.ids, (size_t)E * 4},
        };
        if ((rc = carve(be, &scratch, sc, (int)(sizeof sc / sizeof *sc), "module B's graph", err))) goto out;
        cudaStream_t s = be->stream;
        cudaError_t ce = cudaSuccess;
        const void *src[] = {gr.x, gr.ef, gr.snd, gr.rcv, gr.start, gr.ids, gv, cb, J};
        void *dst[] = {d.x, d.ef, d.snd, d.rcv, d.start, d.ids, id->g, id->c, id->J};
        size_t nb[] = {(size_t)N * 32, (size_t)E * 28, (size_t)E * 4, (size_t)E * 4, (size_t)(N + 1) * 4,
                       (size_t)E * 4, (size_t)V * 12, (size_t)B * 12, 288};
        for (int i = 0; i < 9 && ce == cudaSuccess; i++) ce = cudaMemcpyAsync(dst[i], src[i], nb[i], cudaMemcpyHostToDevice, s);
        if ((rc = cu_check(be, ce, "cudaMemcpyAsync (module B inputs)", __FILE__, __LINE__, err))) goto out;
        if ((rc = module_b_device(be, id, &d, garment, N, E, err))) goto out;
        /* pageable copies above are staged by the runtime; wait before the host buffers go */
        if ((rc = cu_check(be, cudaStreamSynchronize(s), "cudaStreamSynchronize (module B)", __FILE__, __LINE__, err)))
            goto out;
    }
    *out = &id->base;
    id = NULL;
out:
    if (rc && be->stream) cudaStreamSynchronize(be->stream);
    if (id) cudaFree(id->dev);
    free(id);
    cudaFree(scratch);
    free(hf);
    free(hi);
    free(type);
    return rc;
}

/* The refine step's tables of an identity on the device (ops->identity_refine):
 * its shaped body, rest lengths and diagonal, one allocation. */
static int cuda_identity_refine(drape_backend *b, drape_identity *x, const drape_refine_view *r, drape_error *err)
{
    cuda_backend *be = (cuda_backend *)b;
    stream_hold hold(be);
    cuda_identity *id = (cuda_identity *)x;
    if (!be->healthy) return refuse_unhealthy(err);
    if (!be->refine_dev) return DRAPE_OK; /* DRAPE_CUDA_REFINE=host: the host runs it */
    /* the kernel takes its settings from the garment's table, made at upload:
     * an identity asking for others (a config changed since, a garment with
     * no table) is refined on the host, as with DRAPE_CUDA_REFINE=host */
    const cu_garment *dg = &be->h_garments[x->garment];
    if (!dg->edges || dg->r_iters != refine_iters(be, r->iters) || dg->r_k != r->k || dg->r_margin != r->margin || dg->r_rho != r->rho)
        return DRAPE_OK;
    const drape_garment *g = &b->model->garments[x->garment];
    size_t nb[3] = {(size_t)b->model->Nb * 12, (size_t)g->n_edges * 8, (size_t)g->V * 8};
    carve_item it[3] = {{&id->r_vs, nb[0]}, {&id->r_l0, nb[1]}, {&id->r_inv, nb[2]}};
    int rc = carve(be, &id->rdev, it, 3, "an identity's refine tables", err);
    if (rc) return rc;
    const void *src[3] = {r->v_s, r->l0, r->inv};
    void *dst[3] = {id->r_vs, id->r_l0, id->r_inv};
    /* on the batches' stream (non-blocking, unordered with the legacy one),
     * finished before the identity can reach a batch */
    for (int i = 0; i < 3; i++) CU(cudaMemcpyAsync(dst[i], src[i], nb[i], cudaMemcpyHostToDevice, be->stream));
    CU(cudaStreamSynchronize(be->stream));
    for (int i = 0; i < 3; i++) x->device_bytes += align_up(nb[i]), x->bytes += align_up(nb[i]);
    x->refine_in_run = 1;
    return DRAPE_OK;
}

static void cuda_identity_free(drape_backend *b, drape_identity *x)
{
    cuda_backend *be = (cuda_backend *)b;
    stream_hold hold(be);
    cuda_identity *id = (cuda_identity *)x;
    cudaStreamSynchronize(be->stream); /* a batch in flight may still read it */
    cudaFree(id->dev);
    cudaFree(id->rdev);
    cudaGetLastError();
    free(id);
}

/* ---- module A ---- */

static int grow_batch(cuda_backend *be, int n, drape_error *err)
{
    if (n <= be->cap) return DRAPE_OK;
    const drape_config *c = &be->base.model->cfg;
    int cap = n > 2 * be->cap ? n : 2 * be->cap, B = c->bones, H = c->hidden, nf = c->n_hist;
    size_t nv = (size_t)cap * be->Vmax * 3;
    free_batch(be);
    /* the output: meta [cap][8] floats, then a record per frame (its 12V or
     * 6V bytes, 16-byte aligned) */
    be->rec_bytes = (size_t)cap * 32 + nv * 4 + (size_t)cap * 16;
    size_t sp = align_up((size_t)cap * nf * 75 * 4), sf = align_up((size_t)cap * sizeof(cu_frame));
    be->stage_bytes = sp + sf + align_up((size_t)cap * sizeof(cu_uv_slot));
    void *stage_dev = NULL;
    carve_item it[] = {
        {&stage_dev, be->stage_bytes},          {&be->A, (size_t)cap * nf * 288 * 4},   {&be->Hf, (size_t)cap * 48},
        {&be->Hinv, (size_t)cap * 48},          {&be->X, (size_t)cap * drape_bonenet_in(c) * 4},
        {&be->h1, (size_t)cap * H * 4},         {&be->h2, (size_t)cap * H * 4},
        {&be->ycat_out, (size_t)cap * be->ycat * 4},
        {&be->T_hat, (size_t)cap * B * 48},      {&be->q, (size_t)cap * B * 12},        {&be->M, (size_t)cap * B * 48},
        {&be->p, nv * 4},                        {&be->out, nv * 4},                    {&be->d_rec, be->rec_bytes},
        /* the refine step's scratch (none without it) */
        {&be->r_body, be->refine_dev ? (size_t)cap * cu_refine_body_floats(&be->body) * 4 : 0},
        {&be->r_work, be->refine_dev ? nv / 3 * be->r_wpv * 8 : 0}, {&be->r_nn, be->refine_dev ? nv / 3 * 4 : 0},
    };
    int rc = carve(be, &be->d_batch, it, (int)(sizeof it / sizeof *it), "a batch", err);
    if (rc) return rc;
    /* the staged block mirrors the start of the device block: one copy up */
    be->d_poses = (float *)stage_dev;
    be->d_frames = (cu_frame *)((unsigned char *)stage_dev + sp);
    be->d_slots = (cu_uv_slot *)((unsigned char *)stage_dev + sp + sf);
    be->h_key = (int *)malloc((size_t)cap * sizeof(int));
    if (!be->h_key) {
        free_batch(be);
        return plugin_fail(err, DRAPE_ENOMEM, "cuda backend: out of host memory for a batch of %d", cap);
    }
    cudaError_t e1 = cudaMallocHost((void **)&be->h_stage, be->stage_bytes), e2 = cudaSuccess;
    if (e1 == cudaSuccess) e2 = cudaMallocHost((void **)&be->h_out, be->rec_bytes);
    if (e1 != cudaSuccess || e2 != cudaSuccess) {
        free_batch(be);
        CU(e1 != cudaSuccess ? e1 : e2);
    }
    be->cap = cap;
    return DRAPE_OK;
}

static int grow_uv(cuda_backend *be, int slots, drape_error *err)
{
    if (slots <= be->uv_cap) return DRAPE_OK;
    const drape_model *m = be->base.model;
    size_t col = 0, y = 0;
    for (int l = 0; l < m->cfg.n_conv; l++) {
        size_t a = be->rows_max[l] * 9 * m->net.conv[l].in, b = be->rows_max[l] * m->net.conv[l].out;
        col = a > col ? a : col;
        y = b > y ? b : y;
    }
    graphs_clear(be); /* they hold the old maps' addresses */
    CU(cudaStreamSynchronize(be->stream));
    cudaFree(be->d_uv);
    be->d_uv = NULL;
    be->uv_cap = 0;
    int rc;
    if (be->tc) { /* compact maps: no border, nothing to clear */
        size_t maps = (size_t)slots * be->tc_stride * 2;
        carve_item it[] = {{&be->tc_a, maps}, {&be->tc_b, maps}, {&be->tc_out, (size_t)slots * be->tc_out_stride * 4}};
        if ((rc = carve(be, &be->d_uv, it, 3, "the UV maps", err))) return rc;
    } else {
        size_t maps = (size_t)slots * be->map_stride * 4;
        carve_item it[] = {{&be->map_in, maps}, {&be->map_a, maps}, {&be->map_b, maps},
                           {&be->col, (size_t)slots * col * 4}, {&be->y, (size_t)slots * y * 4}};
        if ((rc = carve(be, &be->d_uv, it, 5, "the UV maps", err))) return rc;
        /* the input map's border is never written: zero it once */
        CU(cudaMemsetAsync(be->map_in, 0, maps, be->stream));
    }
    be->uv_cap = slots;
    return DRAPE_OK;
}

/* Steps 7–9 on tensor cores (BF16, FP16) for the slots [s0, s0+ns): p += δ.
 * Adds its launches to *launches. */
static int uv_chunk_tc(cuda_backend *be, int s0, int ns, int Vmax, int *launches, drape_error *err)
{
    const drape_model *m = be->base.model;
    const drape_config *c = &m->cfg;
    cudaStream_t s = be->stream;
    const cu_uv_slot *slots = be->d_slots + s0;
    int L = c->n_conv, max_pos = 0;
    for (int i = 0; i < c->n_garments; i++)
        if (be->h_garments[i].n_pos[0] > max_pos) max_pos = be->h_garments[i].n_pos[0];
    cu_uv_input_tc(be->tc_a, be->p, be->ycat_out, be->d_bcat + 9 * c->bones, be->ycat, 9 * c->bones, slots, ns,
                   be->d_frames, be->d_garments, max_pos, be->tc_stride, be->Cp[0], c->feat_dim, c->pose_dim, be->bf16, s);
    LAUNCHED();
    void *bufs[2] = {be->tc_a, be->tc_b};
    for (int l = 0; l < L; l++) {
        const drape_conv *cv = &m->net.conv[l];
        int last = l == L - 1, mode = last ? 0 : cv->in == cv->out ? 2 : 1;
        cu_conv_tc(last ? (void *)be->tc_out : bufs[(l + 1) & 1], bufs[l & 1], be->d_tcw[l], be->d_tcb[l], slots, ns,
                   be->d_frames, be->d_garments, l, (int)be->rows_max[l], be->Cp[l], be->Cp[l + 1], mode, last, be->bf16, be->conv_wide, be->conv_warps,
                   be->tc_stride, last ? be->tc_out_stride : be->tc_stride, s);
        LAUNCHED();
    }
    cu_uv_sample_tc(be->p, be->tc_out, slots, ns, be->d_frames, be->d_garments, Vmax, be->tc_out_stride, s);
    LAUNCHED();
    *launches += L + 2;
    return DRAPE_OK;
}

/* Steps 7–9 for the slots [s0, s0+ns) (their maps fit the scratch): p += δ.
 * hf, hs: the staged frames and slots. Adds its launches to *launches. */
static int uv_chunk(cuda_backend *be, const cu_frame *hf, const cu_uv_slot *hs, int s0, int ns, int Vmax,
                    int *launches, drape_error *err)
{
    if (be->tc) return uv_chunk_tc(be, s0, ns, Vmax, launches, err);
    const drape_model *m = be->base.model;
    const drape_config *c = &m->cfg;
    cudaStream_t s = be->stream;
    const cu_uv_slot *slots = be->d_slots + s0, *last = &hs[s0 + ns - 1];
    const cu_garment *lg = &be->h_garments[hf[last->frame].garment];
    int Hu = c->uv_h, Wu = c->uv_w, L = c->n_conv, max_pos = 0;
    for (int i = 0; i < c->n_garments; i++)
        if (be->h_garments[i].n_pos[0] > max_pos) max_pos = be->h_garments[i].n_pos[0];
    cu_uv_input(be->map_in, be->p, be->ycat_out, be->d_bcat + 9 * c->bones, be->ycat, 9 * c->bones, slots, ns,
                be->d_frames, be->d_garments, max_pos, be->map_stride, c->feat_dim, c->pose_dim, s);
    LAUNCHED();
    const float *in = be->map_in;
    float *outs[2] = {be->map_a, be->map_b};
    int Ci = be->C0;
    for (int l = 0; l < L; l++) {
        const drape_conv *cv = &m->net.conv[l];
        int mode = l == L - 1 ? 0 : cv->in == cv->out ? 2 : 1;
        int rows = last->row_off[l] + lg->n_pos[l + 1]; /* GEMM rows of the chunk */
        float *o = outs[l & 1];
        cu_im2col(be->col, in, slots, ns, be->d_frames, be->d_garments, l, (int)be->rows_max[l], be->map_stride, Wu + 2,
                  Ci, s);
        LAUNCHED();
        int rc = gemm(be, be->y, be->col, be->d_taps[l], rows, 9 * Ci, cv->out, 0, err);
        if (rc) return rc;
        cu_zero_border(o, ns, be->map_stride, Hu, Wu, cv->out, s);
        cu_conv_epilogue(o, be->y, in, dev_f(be, cv->b), slots, ns, be->d_frames, be->d_garments, l, (int)be->rows_max[l],
                         be->map_stride, Ci, cv->out, mode, s);
        LAUNCHED();
        in = o;
        Ci = cv->out;
    }
    cu_uv_sample_add(be->p, in, slots, ns, be->d_frames, be->d_garments, Vmax, be->map_stride, Hu, Wu, s);
    LAUNCHED();
    *launches += 4 * L + 2;
    return DRAPE_OK;
}

/* The launch sequence of one batch, from the staged inputs up to the
 * outputs in pinned memory: n frames, ns of them through the UV stage;
 * out_bytes of meta and records come back. */
static int enqueue_batch(cuda_backend *be, int n, int ns, const cu_frame *hf, const cu_uv_slot *hs, int Vmax,
                         size_t out_bytes, drape_error *err)
{
    const drape_model *m = be->base.model;
    const drape_config *c = &m->cfg;
    int B = c->bones, H = c->hidden, rc, launches = 0;
    cudaStream_t s = be->stream;
    if (be->prof) {
        be->prof->n = 0; /* marks outside a batch (an identity's encoding) are not its */
        cu_spin(4000000, s);
        prof_mark(be, "start", 0);
    }
    CU(cudaMemcpyAsync(be->d_poses, be->h_stage, be->stage_bytes, cudaMemcpyHostToDevice, s));
    if (be->prof) prof_mark(be, "copy_in", 0);

    /* steps 1–2, then Bone-Net over the batch (FiLM + ReLU fused) */
    cu_fk(be->A, be->Hf, be->Hinv, be->d_poses, be->d_frames, be->d_parents, n, c->n_hist, s);
    LAUNCHED();
    cu_bone_input(be->X, be->T_hat, be->q, be->A, be->Hinv, be->d_frames, be->d_garments, dev_f(be, m->net.in_mean),
                  dev_f(be, m->net.in_std), m->net.in_min ? dev_f(be, m->net.in_min) : NULL,
                  m->net.in_min ? dev_f(be, m->net.in_max) : NULL, n, B, c->n_hist, s);
    LAUNCHED();
    const float *in = be->X;
    float *hs2[2] = {be->h1, be->h2};
    for (int l = 0; l < 3; l++) {
        if ((rc = linear(be, hs2[l & 1], in, &m->net.bonenet[l], n, err))) return rc;
        cu_film_relu(hs2[l & 1], dev_f(be, m->net.bonenet[l].b), be->d_frames, l, n, H, s);
        LAUNCHED();
        in = hs2[l & 1];
    }
    /* the output layer and the pose embedding in one GEMM; their biases are
     * added where they are read (skinning, the UV input) */
    if ((rc = gemm(be, be->ycat_out, in, be->d_wcat, n, H, be->ycat, 1, err))) return rc;
    /* steps 3–6: the bones corrected inside the skinning kernel */
    cu_skin(be->p, be->M, be->T_hat, be->q, be->ycat_out, be->d_bcat, be->ycat, be->d_frames, be->d_garments, n, Vmax,
            B, c->skin_k, s);
    LAUNCHED();
    launches += 1 + 2 + 6 + 1 + (B <= 512 ? 1 : 2);
    /* steps 7–9 per chunk of frames */
    for (int s0 = 0; s0 < ns; s0 += be->chunk)
        if ((rc = uv_chunk(be, hf, hs, s0, ns - s0 < be->chunk ? ns - s0 : be->chunk, Vmax, &launches, err)))
            return rc;
    /* the refine step of the frames whose identities have one */
    if (be->refine_dev) {
        cu_refine(be->p, be->r_body, be->r_work, be->r_nn, be->A, be->Hf, be->d_frames, be->d_garments, be->body, n,
                  c->n_hist, be->r_wpv, be->r_per_edge, be->r_threads, s);
        LAUNCHED();
        launches++;
    }
    /* step 10, the packing, and the copy back */
    cu_finish(be->d_rec, (float *)be->d_rec, be->out, be->p, be->Hf, be->d_frames, n, s);
    LAUNCHED();
    CU(cudaMemcpyAsync(be->h_out, be->d_rec, out_bytes, cudaMemcpyDeviceToHost, s));
    if (be->prof) prof_mark(be, "copy_out", 0);
    be->launches = launches + 2;
    return DRAPE_OK;
}

/* Replays the graph of this batch shape, or captures one (then replays it);
 * falls back to plain launches for good if capture is refused. */
static int launch_batch(cuda_backend *be, int n, int ns, const cu_frame *hf, const cu_uv_slot *hs, int Vmax,
                        size_t out_bytes, drape_error *err)
{
    if (!be->use_graphs) return enqueue_batch(be, n, ns, hf, hs, Vmax, out_bytes, err);
    cudaStream_t s = be->stream;
    graph_entry *slot = &be->graphs[0];
    for (int i = 0; i < GRAPH_CACHE; i++) {
        graph_entry *g = &be->graphs[i];
        if (g->exec && g->n == n && !memcmp(g->key, be->h_key, (size_t)n * sizeof(int))) {
            g->used = ++be->tick;
            be->launches = g->nodes;
            CU(cudaGraphLaunch(g->exec, s));
            return DRAPE_OK;
        }
        if (!g->exec || (slot->exec && g->used < slot->used)) slot = g;
    }
    int *key = (int *)malloc((size_t)n * sizeof(int));
    if (!key) return plugin_fail(err, DRAPE_ENOMEM, "cuda backend: out of host memory");
    cudaGraph_t graph = NULL;
    cudaGraphExec_t exec = NULL;
    drape_error cap = {0, ""};
    double t_cap = wall_ms();
    CU(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
    be->capturing = 1;
    int rc = enqueue_batch(be, n, ns, hf, hs, Vmax, out_bytes, &cap);
    be->capturing = 0;
    cudaError_t ce = cudaStreamEndCapture(s, &graph);
    size_t nodes = 0;
    if (!rc && ce == cudaSuccess) ce = cudaGraphGetNodes(graph, NULL, &nodes);
    if (!rc && ce == cudaSuccess) ce = cudaGraphInstantiate(&exec, graph, 0);
    if (graph) cudaGraphDestroy(graph);
    if (rc || ce != cudaSuccess) {
        cudaGetLastError();
        free(key);
        be->use_graphs = 0;
        plugin_log(DRAPE_LOG_WARN, "cuda backend: graph capture failed (%s), launching without graphs from now on",
                 rc ? cap.msg : cudaGetErrorString(ce));
        return enqueue_batch(be, n, ns, hf, hs, Vmax, out_bytes, err);
    }
    if (slot->exec) cudaGraphExecDestroy(slot->exec);
    free(slot->key);
    memcpy(key, be->h_key, (size_t)n * sizeof(int));
    *slot = graph_entry{exec, n, key, ++be->tick, (int)nodes};
    be->launches = (int)nodes; /* what the device runs, cuBLAS's own kernels included */
    be->captures++;
    /* once per batch shape in a steady load (gpu_load.sh counts these) */
    plugin_log(DRAPE_LOG_DEBUG, "cuda backend: captured batch shape %llu (%d frames, %zu nodes) in %.2f ms",
               be->captures, n, nodes, wall_ms() - t_cap);
    CU(cudaGraphLaunch(exec, s));
    return DRAPE_OK;
}

static int cuda_run(drape_backend *b, drape_frame *frames, int n, drape_error *err)
{
    cuda_backend *be = (cuda_backend *)b;
    stream_hold hold(be);
    double t_run = be->prof ? wall_ms() : 0;
    if (!be->healthy) return refuse_unhealthy(err);
    if (n > 65535) return plugin_fail(err, DRAPE_EINVAL, "cuda backend: at most 65535 frames per batch (got %d)", n);
    const drape_model *m = b->model;
    const drape_config *c = &m->cfg;
    int rc = grow_batch(be, n, err);
    if (rc) return rc;

    /* stage: poses, frame descriptors (a frame asking for f16 or q16 is
     * packed on the device unless the refine step follows on the host), UV
     * slots (row offsets restart per chunk) */
    float *hp = (float *)be->h_stage;
    int nf = c->n_hist;
    cu_frame *hf = (cu_frame *)(be->h_stage + align_up((size_t)be->cap * nf * 75 * 4));
    cu_uv_slot *hs = (cu_uv_slot *)((unsigned char *)hf + align_up((size_t)be->cap * sizeof(cu_frame)));
    int ns = 0, Vmax = 1;
    int64_t off = 0; /* ΣV: past 2^31 for large batches of large garments (cu_frame) */
    size_t rec = (size_t)n * 32;
    for (int f = 0; f < n; f++) {
        const cuda_identity *id = (const cuda_identity *)frames[f].id;
        int gi = id->base.garment, V = m->garments[gi].V;
        for (int k = 0; k < nf; k++) {
            memcpy(hp + (size_t)75 * (nf * f + k), frames[f].pose[k], 72 * sizeof(float));
            memcpy(hp + (size_t)75 * (nf * f + k) + 72, frames[f].trans[k], 3 * sizeof(float));
        }
        int refine = !frames[f].lbs_only && id->base.refine_in_run;
        int pack = frames[f].lbs_only || !id->base.refine || refine ? frames[f].pack : DRAPE_PACK_NONE;
        hf[f] = cu_frame{id->film, id->skin_w, id->g, id->c, id->J, id->F_cov, gi, frames[f].lbs_only != 0, V, off,
                         pack, (int64_t)rec, refine, id->r_vs, id->r_l0, id->r_inv};
        rec += (size_t)V * (pack ? 6 : 12);
        rec = (rec + 15) & ~(size_t)15;
        off += V;
        Vmax = V > Vmax ? V : Vmax;
        if (!frames[f].lbs_only) hs[ns++].frame = f;
    }
    for (int s0 = 0; s0 < ns; s0 += be->chunk)
        for (int l = 0; l < c->n_conv; l++)
            for (int i = s0, r = 0; i < ns && i < s0 + be->chunk; i++) {
                hs[i].row_off[l] = r;
                r += be->h_garments[hf[hs[i].frame].garment].n_pos[l + 1];
            }
    if (ns && (rc = grow_uv(be, ns < be->chunk ? ns : be->chunk, err))) return rc;
    for (int f = 0; f < n; f++) be->h_key[f] = ((2 * hf[f].garment + hf[f].lbs) * 3 + hf[f].pack) * 2 + hf[f].refine;
    if ((rc = launch_batch(be, n, ns, hf, hs, Vmax, rec, err))) return rc;
    CU(cudaStreamSynchronize(be->stream));
    if (be->prof) prof_collect(be, wall_ms() - t_run);
    const float *meta = (const float *)be->h_out;
    for (int f = 0; f < n; f++) {
        const unsigned char *r = be->h_out + hf[f].rec_off;
        if (!hf[f].pack) {
            memcpy(frames[f].out, r, (size_t)hf[f].V * 12);
            continue;
        }
        memcpy(frames[f].out, r, (size_t)hf[f].V * 6);
        memcpy(frames[f].bbox, meta + 8 * (size_t)f, sizeof frames[f].bbox);
        frames[f].packed = meta[8 * (size_t)f + 6] > 0 ? 1 : -1;
    }
    return DRAPE_OK;
}

static int cuda_launches(const drape_backend *b) { return ((const cuda_backend *)b)->launches; }

/* Module B's cached outputs of an identity, copied to the host (tests). */
static int cuda_identity_read(drape_backend *b, const drape_identity *x, float *film, float *skin_w, float *g, float *c,
                              float *J, float *F_cov, drape_error *err)
{
    cuda_backend *be = (cuda_backend *)b;
    stream_hold hold(be);
    const cuda_identity *id = (const cuda_identity *)x;
    const drape_model *m = b->model;
    const drape_garment *gm = &m->garments[id->base.garment];
    const drape_config *cf = &m->cfg;
    float *dst[6] = {film, skin_w, g, c, J, F_cov};
    const float *src[6] = {id->film, id->skin_w, id->g, id->c, id->J, id->F_cov};
    size_t n[6] = {(size_t)6 * cf->hidden, (size_t)gm->V * cf->skin_k, 3 * (size_t)gm->V, 3 * (size_t)cf->bones, 72,
                   (size_t)gm->n_cov * cf->feat_dim};
    for (int i = 0; i < 6; i++)
        if (dst[i]) CU(cudaMemcpy(dst[i], src[i], n[i] * sizeof(float), cudaMemcpyDeviceToHost));
    return DRAPE_OK;
}

namespace {
const drape_backend_ops cuda_ops = {
    "cuda", DRAPE_BACKEND_CUDA, cuda_create, cuda_destroy, cuda_identity_create, cuda_identity_free, cuda_run, cuda_healthy,
    cuda_identity_refine,
};
}

static const drape_backend_plugin cuda_plugin = {DRAPE_BACKEND_API_VERSION, &cuda_ops, cuda_probe, cuda_identity_read,
                                                 cuda_launches};

/* The plugin's one export (runtime/backend_plugin.h): the program's
 * services are kept only when they are of this version. */
extern "C" __attribute__((visibility("default"))) const drape_backend_plugin *
drape_backend_plugin_init(const drape_backend_services *services)
{
    if (services && services->api_version == DRAPE_BACKEND_API_VERSION) program = services;
    return &cuda_plugin;
}
