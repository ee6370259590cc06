/* The CUDA kernels of modules A and B: device-side tables and one flat
 * launcher per op (outputs first, shapes in the comment above). Every kernel
 * is a grid-stride loop over the elements of its op whose body is in
 * bodies.h. Launchers only enqueue on the stream; the backend checks
 * cudaPeekAtLastError after each stage. CUDA C++ only (backend_cuda.cu,
 * ops_a.cu, ops_b.cu). */
#ifndef DRAPE_CUDA_OPS_H
#define DRAPE_CUDA_OPS_H

#include <cuda_runtime.h>
#include <stdint.h>

#include "../../runtime/model.h"
#include "refine_bodies.h"

/* A garment's tables in device memory (views into the backend's constant
 * allocation). pos[l]: the flat padded positions ((i+1)(Wu+2) + j+1) of the
 * texels of map l (0 the conv input, l+1 the output of conv layer l),
 * expanded from the model's runs; in_cov [n_pos[0]]: each input texel's index
 * among the covered texels or −1. */
typedef struct {
    const int32_t *skin_idx, *faces, *texel_face, *cov_texel, *copy_start, *copy_uv, *in_cov;
    const float *skin_w0, *bone_joint_w, *uv, *texel_bary;
    const int32_t *pos[DRAPE_MAX_CONV + 1];
    /* the tensor-core conv's (tc_bodies.h): nbr[l] [n_pos[l+1]][9] each output
     * texel's taps as rows of map l (−1: border); tap_row / tap_w [copies][4]
     * the sampling table over the last map */
    const int32_t *nbr[DRAPE_MAX_CONV], *tap_row;
    const float *tap_w;
    int V, n_cov, n_pos[DRAPE_MAX_CONV + 1];
    /* the refine step's (refine_bodies.h; NULL when the garment is not
     * refined): edges [n_edges,2], the edges at each vertex ve_start [V+1],
     * ve [2·n_edges]; its settings from the model's config */
    const int32_t *edges, *ve_start, *ve, *body_nn;
    int n_edges, r_iters;
    double r_k, r_margin, r_rho;
} cu_garment;

/* The body, for the refine step (refine_bodies.h) */
typedef hd_refine_body cu_body;

/* One frame of a batch: its identity's device arrays and where its vertices
 * go in the batch's [ΣV,3] arrays. */
typedef struct {
    const float *film, *skin_w, *g, *c, *J, *F_cov;
    int garment, lbs, V;
    /* its first vertex in those arrays: ΣV passes 2^31 within the documented
     * limits (garments of up to 2^22 vertices, runtime/model.c; batches of
     * up to 4096 frames, server/config.c): 512 such frames do it */
    int64_t out_off;
    int pack;        /* DRAPE_PACK_*: packed on the device (core/pack16.h) */
    int64_t rec_off; /* its record in the batch's output: 12V bytes of positions, or 6V packed */
    /* refined on the device (cu_refine): the identity's shaped body [Nb,3],
     * rest lengths [n_edges] and 1/(1 + k deg) [V]; refine 0: not */
    int refine;
    const float *r_vs;
    const double *r_l0, *r_inv;
} cu_frame;

/* A frame of the UV stage in a chunk (slot = its maps in the chunk's
 * scratch): row_off[l] is its first row in conv layer l's im2col/GEMM (an
 * int: a chunk's rows times 36 bytes of im2col fit UV_BUDGET, 6 GiB, or the
 * chunk is one frame of at most 4096² rows). */
typedef struct {
    int frame;
    int row_off[DRAPE_MAX_CONV];
} cu_uv_slot;

/* Kernel launch shape: THREADS per block, x-blocks for `count` elements per
 * y-row (the frame or slot), capped because the kernels grid-stride. */
#define THREADS 256

static inline unsigned blocks_for(int64_t count)
{
    int64_t b = (count + THREADS - 1) / THREADS;
    return (unsigned)(b < 1 ? 1 : b > 65535 ? 65535 : b);
}

#define FOR_EACH(i, count) \
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < (count); i += (int64_t)gridDim.x * blockDim.x)

/* ---- module A (ops_a.cu) ---- */

/* A [n,nf,24,12], Hf [n,12], Hinv [n,12]; poses [n,nf,75] (pose 72 | trans 3):
 * the nf frames of the model's history, t last */
void cu_fk(float *A, float *Hf, float *Hinv, const float *poses, const cu_frame *fr, const int32_t *parents, int n,
           int nf, cudaStream_t s);
/* X [n,(2nf−1)·3B], T_hat [n,B,12], q [n,B,3] from A, Hinv; gs [n_garments] */
void cu_bone_input(float *X, float *T_hat, float *q, const float *A, const float *Hinv, const cu_frame *fr,
                   const cu_garment *gs, const float *mean, const float *std, const float *lo, const float *hi, int n,
                   int B, int nf, cudaStream_t s);
/* y [n,d] ← y + b (ReLU if relu) */
void cu_bias_act(float *y, const float *b, int n, int d, int relu, cudaStream_t s);
/* Bone-Net's output layer and the pose embedding are one GEMM, y_cat [n,
 * 9B + d_φ] without bias: their biases b_cat [9B + d_φ] are added by the
 * kernels that read them (cu_skin, the UV input). */
/* h [n,H] ← ReLU((1 + Δγ_l) ⊙ (h + b) + β_l), FiLM of each row's identity */
void cu_film_relu(float *h, const float *b, const cu_frame *fr, int layer, int n, int H, cudaStream_t s);
/* p [ΣV,3] = skinning of each frame's retargeted garment by its corrected
 * bones M (docs/design.md §2.4 steps 5–6) from T_hat, q and the Bone-Net
 * output (rows of y_cat, + b_cat; lbs frames: M = T̂). Each block corrects
 * the frame's bones into shared memory first (one launch) unless B is too
 * large, when they go through M [n,B,12] (two). */
void cu_skin(float *p, float *M, const float *T_hat, const float *q, const float *y_cat, const float *b_cat,
             int y_stride, const cu_frame *fr, const cu_garment *gs, int n, int Vmax, int B, int k, cudaStream_t s);
/* maps [ns, map_stride]: conv input maps of the slots (padded, C0 channels)
 * on their input texels, a thread per channel; φ = y_cat[·, phi_off..] + phi_bias */
void cu_uv_input(float *maps, const float *p, const float *y_cat, const float *phi_bias, int y_stride, int phi_off,
                 const cu_uv_slot *slots, int ns, const cu_frame *fr, const cu_garment *gs, int max_pos,
                 int64_t map_stride, int d_f, int d_phi, cudaStream_t s);
/* col [rows, 9·Ci] im2col of conv layer l's output texels over the slots */
void cu_im2col(float *col, const float *maps, const cu_uv_slot *slots, int ns, const cu_frame *fr, const cu_garment *gs,
               int l, int max_rows, int64_t map_stride, int pw, int Ci, cudaStream_t s);
/* maps [ns, map_stride]: zero border of a Co-channel map per slot */
void cu_zero_border(float *maps, int ns, int64_t map_stride, int Hu, int Wu, int Co, cudaStream_t s);
/* out maps [ns, map_stride] (Co channels) ← epilogue(y [rows, Co]) */
void cu_conv_epilogue(float *out, const float *y, const float *in, const float *bias, const cu_uv_slot *slots, int ns,
                      const cu_frame *fr, const cu_garment *gs, int l, int max_rows, int64_t map_stride, int Ci, int Co,
                      int mode, cudaStream_t s);
/* p [ΣV,3] += bilinear samples of each slot's output map (3 channels) */
void cu_uv_sample_add(float *p, const float *maps, const cu_uv_slot *slots, int ns, const cu_frame *fr,
                      const cu_garment *gs, int Vmax, int64_t map_stride, int Hu, int Wu, cudaStream_t s);
/* The refine step (refine.cu), a block per frame, for the frames with
 * refine set (the others' blocks return): p [ΣV,3] in, module A's
 * positions in the heading frame; out, the refined world positions (which
 * cu_finish then takes as they are). A [n,nf,24,12]: frame t's transforms
 * pose the body. Scratch: body [n,cu_refine_body_floats(bd)] floats, work
 * [ΣV,wpv] doubles (wpv: cu_refine_work_per_vertex), nn [ΣV]. per_edge:
 * the sweeps' edge terms in a pass of their own; threads: a block's, 512
 * or 1024 (the results are the same). */
void cu_refine(float *p, float *body, double *work, int32_t *nn, const float *A, const float *Hf, const cu_frame *fr,
               const cu_garment *gs, cu_body bd, int n, int nf, int wpv, int per_edge, int threads, cudaStream_t s);
/* a frame's body scratch: posed vertices, normals, cluster and group boxes */
static inline DRAPE_HD size_t cu_refine_body_floats(const cu_body *bd)
{
    return 6 * ((size_t)bd->Nb + bd->C + HD_CLUSTER_GROUPS(bd->C));
}
/* doubles of work per garment vertex that hold a refined garment's
 * HD_REFINE_WORK(V, E, per_edge) */
static inline int cu_refine_work_per_vertex(int V, int E, int per_edge) { return 12 + (per_edge ? 3 * ((E + V - 1) / V) : 0); }
/* The end of a frame, a block per frame: its world positions Hf p (p as
 * they are for a refined frame); then
 * either those into its record (rec + rec_off), or, for a packed frame, its
 * bbox (meta [n][8]: min xyz, max xyz, status 1 / −1 when not finite) and its
 * f16 or q16 bytes there (scratch [ΣV,3] holds the positions meanwhile). */
void cu_finish(unsigned char *rec, float *meta, float *scratch, const float *p, const float *Hf, const cu_frame *fr,
               int n, cudaStream_t s);

/* one thread busy for about `cycles` clock cycles: holds the stream while
 * the host queues a batch (the profile, DRAPE_CUDA_PROFILE) */
void cu_spin(long long cycles, cudaStream_t s);

/* ---- the tensor-core conv (conv_tc.cu; precisions BF16, FP16) ---- */

/* once per process and device: lets the conv kernels use their shared memory */
cudaError_t cu_conv_tc_setup(int *wide_ok); /* wide_ok: K chunks of 64 fit this device's shared memory */
/* maps [ns][stride] (16-bit): the slots' compact input maps, C0p channels */
void cu_uv_input_tc(void *maps, const float *p, const float *y_cat, const float *phi_bias, int y_stride, int phi_off,
                    const cu_uv_slot *slots, int ns, const cu_frame *fr, const cu_garment *gs, int max_pos,
                    int64_t stride, int C0p, int d_f, int d_phi, int bf16, cudaStream_t s);
/* conv layer l over the slots: in [ns][in_stride] (Cip channels) → out
 * [ns][out_stride] (Cop channels; last: FP32, 3 channels); wt [9][Cip][Cop]
 * in the 16-bit type, bias [Cop]; mode as hd_tc_out; wide: K chunks of 64
 * where they divide (hd_tc_bk); warps: 8, or 4 for the wide tiles' variant
 * with 64 × 64 warp tiles */
void cu_conv_tc(void *out, const void *in, const void *wt, const float *bias, const cu_uv_slot *slots, int ns,
                const cu_frame *fr, const cu_garment *gs, int l, int max_rows, int Cip, int Cop, int mode, int last,
                int bf16, int wide, int warps, int64_t in_stride, int64_t out_stride, cudaStream_t s);
/* p [ΣV,3] += the samples of each slot's last map outs [ns][stride] (FP32 [rows,3]) */
void cu_uv_sample_tc(float *p, const float *outs, const cu_uv_slot *slots, int ns, const cu_frame *fr,
                     const cu_garment *gs, int Vmax, int64_t stride, cudaStream_t s);

/* ---- module B (ops_b.cu) ---- */

/* cat [E,3d] = [e | h_snd | h_rcv] */
void cu_edge_concat(float *cat, const float *e, const float *h, const int32_t *snd, const int32_t *rcv, int E, int d,
                    cudaStream_t s);
/* cat [N,2d] = [h | Σ of e over the edges into each node (CSR start/ids)] */
void cu_node_concat(float *cat, const float *h, const float *e, const int32_t *start, const int32_t *ids, int N, int d,
                    cudaStream_t s);
/* y [n,d] += bias; dst [n,d] (+)= LayerNorm(y) */
void cu_bias_layernorm(float *dst, float *y, const float *bias, const float *w, const float *b, int n, int d,
                       int accumulate, cudaStream_t s);
/* mean [d] = mean over rows of h [V,d] (float64 accumulation) */
void cu_mean_rows(float *mean, const float *h, int V, int d, cudaStream_t s);
/* w [V,k] = softmax(log(w0 + 1e-8) + dw[v, idx]); dw [V,B] */
void cu_skin_weights(float *w, const float *w0, const float *dw, const int32_t *idx, int V, int k, int B,
                     cudaStream_t s);
/* F [n_cov,df] = F_UV on the covered texels from f [V,df] */
void cu_fcov(float *F, const float *f, const cu_garment *g, int n_cov, int df, cudaStream_t s);

#endif
