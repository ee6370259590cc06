/* Module A's kernels (docs/design.md §2.4). The dense layers are cuBLAS GEMMs in
 * backend_cuda.cu; these are the per-element stages around them. Frames of
 * a batch may belong to different garments (different V and texel runs):
 * per-frame kernels take the frame as blockIdx.y and grid-stride over the
 * frame's elements, exiting past its own count. */
#include "bodies.h"
#include "cuda_ops.h"
#include "tc_bodies.h"

/* A [n,nf,24,12], Hf [n,12], Hinv [n,12]: a warp per (frame, history step).
 * Its lanes take a joint each for the rotations (hd_rodrigues is double
 * precision, as on the host: one thread doing all 24 in a row was most of
 * a small model's batch-1 frame), lane 24 the heading; lane 0 chains the
 * tree; then each joint's skinning transform. The same steps as hd_fk. */
#define FK_WARPS 2
__global__ void __launch_bounds__(32 * FK_WARPS) k_fk(float *A, float *Hf, float *Hinv, const float *poses,
                                                     const cu_frame *fr, const int32_t *parents, int n, int nf)
{
    __shared__ float loc[FK_WARPS][HD_JOINTS * 12], G[FK_WARPS][HD_JOINTS * 12];
    const int w = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int64_t i = (int64_t)blockIdx.x * FK_WARPS + w;
    if (i >= (int64_t)n * nf) return; /* the whole warp: only __syncwarp below */
    const int f = (int)(i / nf), F = (int)(i % nf);
    const float *ps = poses + (size_t)75 * i, *J = fr[f].J;
    if (lane < HD_JOINTS) {
        hd_fk_local(loc[w] + 12 * lane, ps, ps + 72, J, parents, lane);
    } else if (lane == HD_JOINTS && F == nf - 1) {
        hd_heading(Hf + 12 * f, ps, ps + 72, J);
        hd_inverse_rigid(Hinv + 12 * f, Hf + 12 * f);
    }
    __syncwarp();
    if (lane == 0) hd_fk_chain(G[w], loc[w], parents);
    __syncwarp();
    if (lane < HD_JOINTS) hd_fk_skin(A + ((size_t)i * HD_JOINTS + lane) * 12, G[w] + 12 * lane, J, lane);
}

void cu_fk(float *A, float *Hf, float *Hinv, const float *poses, const cu_frame *fr, const int32_t *parents, int n,
           int nf, cudaStream_t s)
{
    int items = n * nf;
    k_fk<<<(items + FK_WARPS - 1) / FK_WARPS, 32 * FK_WARPS, 0, s>>>(A, Hf, Hinv, poses, fr, parents, n, nf);
}

/* X [n,(2nf−1)·3B], T_hat [n,B,12], q [n,B,3]: one thread per (frame, bone) */
__global__ void k_bone_input(float *X, float *T_hat, float *q, const float *A, const float *Hinv, const cu_frame *fr,
                             const cu_garment *gs, const float *mean, const float *std, const float *lo,
                             const float *hi, int n, int B, int nf)
{
    FOR_EACH(i, (int64_t)n * B) {
        int f = (int)(i / B), b = (int)(i % B);
        const cu_frame *x = &fr[f];
        hd_bone_input(X + (size_t)f * (2 * nf - 1) * 3 * B, T_hat + 12 * i, q + 3 * i,
                      A + (size_t)f * nf * HD_JOINTS * 12, Hinv + 12 * f, x->c + 3 * b,
                      gs[x->garment].bone_joint_w + (size_t)b * HD_JOINTS, mean, std, lo, hi, b, B, nf);
    }
}

void cu_bone_input(float *X, float *T_hat, float *q, const float *A, const float *Hinv, const cu_frame *fr,
                   const cu_garment *gs, const float *mean, const float *std, const float *lo, const float *hi, int n,
                   int B, int nf, cudaStream_t s)
{
    k_bone_input<<<blocks_for((int64_t)n * B), THREADS, 0, s>>>(X, T_hat, q, A, Hinv, fr, gs, mean, std, lo, hi, n, B,
                                                                 nf);
}

__global__ void k_bias_act(float *y, const float *b, int n, int d, int relu)
{
    FOR_EACH(i, (int64_t)n * d) y[i] = hd_bias_act(y[i], b[i % d], relu);
}

void cu_bias_act(float *y, const float *b, int n, int d, int relu, cudaStream_t s)
{
    k_bias_act<<<blocks_for((int64_t)n * d), THREADS, 0, s>>>(y, b, n, d, relu);
}

/* FiLM vectors of an identity: [Δγ1 β1 Δγ2 β2 Δγ3 β3], each [H] */
__global__ void k_film_relu(float *h, const float *b, const cu_frame *fr, int layer, int n, int H)
{
    FOR_EACH(i, (int64_t)n * H) {
        int f = (int)(i / H), c = (int)(i % H);
        const float *film = fr[f].film;
        h[i] = hd_film_relu(h[i], b[c], film[(size_t)2 * layer * H + c], film[(size_t)(2 * layer + 1) * H + c]);
    }
}

void cu_film_relu(float *h, const float *b, const cu_frame *fr, int layer, int n, int H, cudaStream_t s)
{
    k_film_relu<<<blocks_for((int64_t)n * H), THREADS, 0, s>>>(h, b, fr, layer, n, H);
}

/* bone b of frame f's M: the Bone-Net output of the frame's row of y_cat,
 * plus its bias (none for plain skinning) */
static __device__ void bone_correct_one(float *M_b, const float *T_hat, const float *q, const float *y_cat,
                                        const float *b_cat, int y_stride, const cu_frame *x, int f, int b, int B)
{
    size_t i = (size_t)f * B + b;
    hd_bone_correct_cat(M_b, T_hat + 12 * i, q + 3 * i, x->lbs ? NULL : y_cat + (size_t)f * y_stride, b_cat, b);
}

__global__ void k_bone_correct(float *M, const float *T_hat, const float *q, const float *y_cat, const float *b_cat,
                               int y_stride, const cu_frame *fr, int n, int B)
{
    FOR_EACH(i, (int64_t)n * B) {
        int f = (int)(i / B);
        bone_correct_one(M + 12 * i, T_hat, q, y_cat, b_cat, y_stride, &fr[f], f, (int)(i % B), B);
    }
}

/* skinning with the frame's bones corrected by every block into shared
 * memory (B·12 floats; cheap next to the vertices), or read from M */
__global__ void k_skin(float *p, const float *M, const float *T_hat, const float *q, const float *y_cat,
                       const float *b_cat, int y_stride, const cu_frame *fr, const cu_garment *gs, int B, int k)
{
    extern __shared__ float Ms[];
    const cu_frame *x = &fr[blockIdx.y];
    const cu_garment *g = &gs[x->garment];
    const float *w = x->lbs ? g->skin_w0 : x->skin_w, *Mf = Ms;
    if (M) {
        Mf = M + (size_t)blockIdx.y * B * 12;
    } else {
        for (int b = threadIdx.x; b < B; b += blockDim.x)
            bone_correct_one(Ms + 12 * b, T_hat, q, y_cat, b_cat, y_stride, x, blockIdx.y, b, B);
        __syncthreads();
    }
    FOR_EACH(v, x->V) {
        hd_skin_vertex(p + 3 * ((size_t)x->out_off + v), x->g + 3 * v, Mf, g->skin_idx + v * k, w + v * k, k);
    }
}

#define SKIN_SMEM_BONES 512 /* 24 KiB of corrected bones per block at most */

void cu_skin(float *p, float *M, const float *T_hat, const float *q, const float *y_cat, const float *b_cat,
             int y_stride, const cu_frame *fr, const cu_garment *gs, int n, int Vmax, int B, int k, cudaStream_t s)
{
    if (B <= SKIN_SMEM_BONES) {
        k_skin<<<dim3(blocks_for(Vmax), n), THREADS, (size_t)B * 48, s>>>(p, NULL, T_hat, q, y_cat, b_cat, y_stride,
                                                                           fr, gs, B, k);
        return;
    }
    k_bone_correct<<<blocks_for((int64_t)n * B), THREADS, 0, s>>>(M, T_hat, q, y_cat, b_cat, y_stride, fr, n, B);
    k_skin<<<dim3(blocks_for(Vmax), n), THREADS, 0, s>>>(p, M, T_hat, q, y_cat, b_cat, y_stride, fr, gs, B, k);
}

__global__ void k_uv_input(float *maps, const float *p, const float *y_cat, const float *phi_bias, int y_stride,
                           int phi_off, const cu_uv_slot *slots, const cu_frame *fr, const cu_garment *gs,
                           int64_t map_stride, int d_f, int d_phi)
{
    const cu_uv_slot *sl = &slots[blockIdx.y];
    const cu_frame *x = &fr[sl->frame];
    const cu_garment *g = &gs[x->garment];
    int C = 3 + d_f + d_phi + 1;
    float *map = maps + (size_t)blockIdx.y * map_stride;
    const float *phi = y_cat + (size_t)sl->frame * y_stride + phi_off, *pf = p + 3 * (size_t)x->out_off;
    FOR_EACH(e, (int64_t)g->n_pos[0] * C) {
        int64_t i = e / C;
        int ch = (int)(e - i * C);
        map[(size_t)g->pos[0][i] * C + ch] = hd_uv_input_at(ch, g->in_cov[i], g->faces, g->texel_face, g->texel_bary,
                                                             g->cov_texel, pf, x->F_cov, phi, phi_bias, d_f, d_phi);
    }
}

void cu_uv_input(float *maps, const float *p, const float *y_cat, const float *phi_bias, int y_stride, int phi_off,
                 const cu_uv_slot *slots, int ns, const cu_frame *fr, const cu_garment *gs, int max_pos,
                 int64_t map_stride, int d_f, int d_phi, cudaStream_t s)
{
    int C = 3 + d_f + d_phi + 1;
    k_uv_input<<<dim3(blocks_for((int64_t)max_pos * C), ns), THREADS, 0, s>>>(maps, p, y_cat, phi_bias, y_stride,
                                                                             phi_off, slots, fr, gs, map_stride, d_f,
                                                                             d_phi);
}

__global__ void k_im2col(float *col, const float *maps, const cu_uv_slot *slots, const cu_frame *fr,
                         const cu_garment *gs, int l, int64_t map_stride, int pw, int Ci)
{
    const cu_uv_slot *sl = &slots[blockIdx.y];
    const cu_garment *g = &gs[fr[sl->frame].garment];
    const int32_t *pos = g->pos[l + 1];
    const float *in = maps + (size_t)blockIdx.y * map_stride;
    int K = 9 * Ci;
    float *c = col + (size_t)sl->row_off[l] * K;
    FOR_EACH(i, (int64_t)g->n_pos[l + 1] * K) c[i] = hd_im2col_at(in, pos[i / K], pw, Ci, (int)(i % K));
}

void cu_im2col(float *col, const float *maps, const cu_uv_slot *slots, int ns, const cu_frame *fr, const cu_garment *gs,
               int l, int max_rows, int64_t map_stride, int pw, int Ci, cudaStream_t s)
{
    k_im2col<<<dim3(blocks_for((int64_t)max_rows * 9 * Ci), ns), THREADS, 0, s>>>(col, maps, slots, fr, gs, l,
                                                                                  map_stride, pw, Ci);
}

__global__ void k_zero_border(float *maps, int64_t map_stride, int Hu, int Wu, int Co)
{
    float *map = maps + (size_t)blockIdx.y * map_stride;
    FOR_EACH(i, (2 * (int64_t)(Wu + 2) + 2 * Hu) * Co) map[hd_border_pos(i / Co, Hu, Wu) * Co + i % Co] = 0;
}

void cu_zero_border(float *maps, int ns, int64_t map_stride, int Hu, int Wu, int Co, cudaStream_t s)
{
    k_zero_border<<<dim3(blocks_for((2 * (int64_t)(Wu + 2) + 2 * Hu) * Co), ns), THREADS, 0, s>>>(maps, map_stride, Hu,
                                                                                                 Wu, Co);
}

__global__ void k_conv_epilogue(float *out, const float *y, const float *in, const float *bias,
                                const cu_uv_slot *slots, const cu_frame *fr, const cu_garment *gs, int l,
                                int64_t map_stride, int Ci, int Co, int mode)
{
    const cu_uv_slot *sl = &slots[blockIdx.y];
    const cu_garment *g = &gs[fr[sl->frame].garment];
    const int32_t *pos = g->pos[l + 1];
    float *o = out + (size_t)blockIdx.y * map_stride;
    const float *x = in + (size_t)blockIdx.y * map_stride, *yr = y + (size_t)sl->row_off[l] * Co;
    FOR_EACH(i, (int64_t)g->n_pos[l + 1] * Co) {
        int64_t p = pos[i / Co];
        int c = (int)(i % Co);
        o[p * Co + c] = hd_conv_out(yr[i], bias[c], mode == 2 ? x[p * Ci + c] : 0.0f, mode);
    }
}

void cu_conv_epilogue(float *out, const float *y, const float *in, const float *bias, const cu_uv_slot *slots, int ns,
                      const cu_frame *fr, const cu_garment *gs, int l, int max_rows, int64_t map_stride, int Ci, int Co,
                      int mode, cudaStream_t s)
{
    k_conv_epilogue<<<dim3(blocks_for((int64_t)max_rows * Co), ns), THREADS, 0, s>>>(out, y, in, bias, slots, fr, gs, l,
                                                                                    map_stride, Ci, Co, mode);
}

__global__ void k_uv_sample_add(float *p, const float *maps, const cu_uv_slot *slots, const cu_frame *fr,
                                const cu_garment *gs, int64_t map_stride, int Hu, int Wu)
{
    const cu_uv_slot *sl = &slots[blockIdx.y];
    const cu_frame *x = &fr[sl->frame];
    const cu_garment *g = &gs[x->garment];
    const float *map = maps + (size_t)blockIdx.y * map_stride;
    FOR_EACH(v, x->V) {
        float d[3], *q = p + 3 * ((size_t)x->out_off + v);
        hd_uv_sample_vertex(d, g->copy_start, g->copy_uv, g->uv, map, (int)v, Hu, Wu);
        for (int c = 0; c < 3; c++) q[c] += d[c];
    }
}

void cu_uv_sample_add(float *p, const float *maps, const cu_uv_slot *slots, int ns, const cu_frame *fr,
                      const cu_garment *gs, int Vmax, int64_t map_stride, int Hu, int Wu, cudaStream_t s)
{
    k_uv_sample_add<<<dim3(blocks_for(Vmax), ns), THREADS, 0, s>>>(p, maps, slots, fr, gs, map_stride, Hu, Wu);
}

/* a vertex's world position: H p, or p itself where cu_refine has made it one */
static __device__ void world(float *w, const float *H, const float *p, int refined)
{
    if (!refined) {
        hd_apply(w, H, p);
        return;
    }
    for (int k = 0; k < 3; k++) w[k] = p[k];
}

/* a block per frame (see cu_finish); blockDim.x a multiple of 32, ≤ 1024.
 * Launched at 1024: the bound keeps its registers within what that needs
 * (at -G, unbounded, it took 72 and could not launch) */
__global__ void __launch_bounds__(1024) k_finish(unsigned char *rec, float *meta, float *scratch, const float *p, const float *Hf,
                         const cu_frame *fr)
{
    const cu_frame *x = &fr[blockIdx.x];
    const float *H = Hf + 12 * blockIdx.x, *pf = p + 3 * (size_t)x->out_off;
    const int V = x->V, tid = threadIdx.x;
    if (!x->pack) {
        float *o = (float *)(rec + x->rec_off);
        for (int v = tid; v < V; v += blockDim.x) world(o + 3 * v, H, pf + 3 * v, x->refine);
        return;
    }
    float *w = scratch + 3 * (size_t)x->out_off;
    /* box: per thread over its vertices (ascending: the first of equal values
     * stays), then across the block with the same tie rule (hd_bbox_pick) */
    float bv[6];
    int bi[6] = {-1, -1, -1, -1, -1, -1}, bad = 0;
    for (int k = 0; k < 6; k++) bv[k] = 0;
    for (int v = tid; v < V; v += blockDim.x) {
        world(w + 3 * v, H, pf + 3 * v, x->refine);
        for (int k = 0; k < 3; k++) {
            float c = w[3 * v + k];
            bad |= !isfinite(c);
            hd_bbox_pick(&bv[k], &bi[k], c, v, 0);
            hd_bbox_pick(&bv[3 + k], &bi[3 + k], c, v, 1);
        }
    }
    __shared__ float sv[32][6];
    __shared__ int si[32][6];
    __shared__ float box[6];
    for (int k = 0; k < 6; k++)
        for (int o = 16; o > 0; o >>= 1) {
            float v2 = __shfl_down_sync(0xffffffffu, bv[k], o);
            int i2 = __shfl_down_sync(0xffffffffu, bi[k], o);
            hd_bbox_pick(&bv[k], &bi[k], v2, i2, k >= 3);
        }
    if ((tid & 31) == 0)
        for (int k = 0; k < 6; k++) {
            sv[tid >> 5][k] = bv[k];
            si[tid >> 5][k] = bi[k];
        }
    bad = __syncthreads_or(bad);
    if (tid < 6) {
        float v = sv[0][tid];
        int i = si[0][tid];
        for (int wp = 1; wp < (int)(blockDim.x >> 5); wp++) hd_bbox_pick(&v, &i, sv[wp][tid], si[wp][tid], tid >= 3);
        box[tid] = V ? v : 0.0f;
        meta[8 * (size_t)blockIdx.x + tid] = box[tid];
    }
    if (tid == 0) meta[8 * (size_t)blockIdx.x + 6] = bad ? -1.0f : 1.0f;
    __syncthreads();
    if (bad) return;
    uint16_t *o = (uint16_t *)(rec + x->rec_off); /* little-endian, as the wire */
    for (int v = tid; v < V; v += blockDim.x)
        for (int k = 0; k < 3; k++) {
            float c = w[3 * v + k];
            o[3 * v + k] = x->pack == DRAPE_PACK_F16 ? hd_f32_to_f16(c) : hd_quantize16(c, box[k], box[3 + k]);
        }
}

void cu_finish(unsigned char *rec, float *meta, float *scratch, const float *p, const float *Hf, const cu_frame *fr,
               int n, cudaStream_t s)
{
    k_finish<<<n, 1024, 0, s>>>(rec, meta, scratch, p, Hf, fr);
}

__global__ void k_spin(long long cycles)
{
    long long t0 = clock64();
    while (clock64() - t0 < cycles) {
    }
}

void cu_spin(long long cycles, cudaStream_t s) { k_spin<<<1, 1, 0, s>>>(cycles); }
