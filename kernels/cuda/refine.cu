/* The refine step on the device (runtime/refine.h; the bodies and their
 * host test: refine_bodies.h). A block per frame runs the whole step: the
 * body posed and its normals, the nearest body vertices, every sweep with a
 * barrier between phases, so a batch's refine is one launch whatever its
 * iteration count. A frame's state (four [V,3] double iterates) stays in
 * global memory, where L1 and L2 hold it between sweeps. */
#include "cuda_ops.h"
#include "refine_bodies.h"

/* Blocks of up to 1024 threads at 64 registers (108 unbounded): the H200
 * ran 512-thread blocks one per SM, a frame on 16 warps. cu_refine's
 * threads: 1024, or 512 for two frames per SM (the backend's choice). */
#define REFINE_THREADS 1024

__global__ void __launch_bounds__(REFINE_THREADS, 1) k_refine(float *p, float *body, double *work, int32_t *nn,
                                                             const float *A, const float *Hf, const cu_frame *fr,
                                                             const cu_garment *gs, cu_body bd, int nf, int wpv,
                                                             int per_edge)
{
    const cu_frame *x = &fr[blockIdx.x];
    if (!x->refine) return;
    const cu_garment *g = &gs[x->garment];
    const int V = x->V, tid = threadIdx.x, nt = blockDim.x;
    float *pf = p + 3 * (size_t)x->out_off;
    const float *H = Hf + 12 * (size_t)blockIdx.x;
    /* module A's positions are in the heading frame: to world first, as cu_finish does */
    for (int v = tid; v < V; v += nt) {
        float w[3];
        hd_apply(w, H, pf + 3 * v);
        for (int k = 0; k < 3; k++) pf[3 * v + k] = w[k];
    }
    __syncthreads();
    hd_refine_args a = {bd,       g->edges, g->ve_start, g->ve,   g->body_nn, V,       g->n_edges, g->r_iters,
                        g->r_k,   g->r_margin, g->r_rho, x->r_vs, x->r_l0,    x->r_inv, per_edge};
    hd_refine_frame(pf, body + (size_t)blockIdx.x * cu_refine_body_floats(&bd), work + (size_t)wpv * x->out_off,
                    nn + x->out_off,
                    A + ((size_t)blockIdx.x * nf + nf - 1) * HD_JOINTS * 12, &a, tid, nt);
}

void cu_refine(float *p, float *body, double *work, int32_t *nn, const float *A, const float *Hf, const cu_frame *fr,
               const cu_garment *gs, cu_body bd, int n, int nf, int wpv, int per_edge, int threads, cudaStream_t s)
{
    k_refine<<<n, threads, 0, s>>>(p, body, work, nn, A, Hf, fr, gs, bd, nf, wpv, per_edge);
}
