/* The UV conv stack on tensor cores (precisions BF16 and FP16): an implicit
 * GEMM per layer over the computed texels of compact 16-bit maps, FP32
 * accumulation, bias / ReLU / residual fused into the epilogue; the layout
 * and the index math are in tc_bodies.h, shared with the host tests.
 *
 * A block computes TC_BM = 128 output texels × BN output channels of one
 * frame (blockIdx.y, its slot in the chunk) with 8 warps (or 4, a variant:
 * tc_shape) and WMMA 16×16×16 fragments. The K loop runs over the 9 taps × the input channels in chunks
 * of BK; each chunk's A tile (128 texels × BK channels, gathered through the
 * neighbour table, zeros for the border) and B tile (BK × BN weights) are
 * copied into shared memory with cp.async (sm_80+) three chunks ahead of
 * the MMAs. The epilogue goes through a per-warp 16×16 FP32 scratch so that
 * it never depends on the fragments' register layout. */
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_pipeline.h>
#include <mma.h>

#include "bodies.h"
#include "cuda_ops.h"
#include "tc_bodies.h"

using namespace nvcuda;

namespace {

template <typename T> struct tc_type;
template <> struct tc_type<__half> {
    static __device__ __half from(float x) { return __float2half_rn(x); }
    static __device__ float to(__half x) { return __half2float(x); }
};
template <> struct tc_type<__nv_bfloat16> {
    static __device__ __nv_bfloat16 from(float x) { return __float2bfloat16_rn(x); }
    static __device__ float to(__nv_bfloat16 x) { return __bfloat162float(x); }
};

/* NW warps: NW/2 × 2 over (rows, columns) when the tile is at least 32
 * wide, else NW × 1. NW 8 (the default): warp tiles of 32 × 64 at BN 128;
 * NW 4 (DRAPE_CUDA_CONV_WARPS=4, a variant to weigh): 64 × 64, half the
 * shared-memory reads per MMA, twice the accumulators */
template <int BN, int NW> struct tc_shape {
    static constexpr int WN_WARPS = BN >= 32 ? 2 : 1;
    static constexpr int WM_WARPS = NW / WN_WARPS;
    static constexpr int WM = TC_BM / WM_WARPS, WN = BN / WN_WARPS;
    static constexpr int FM = WM / 16, FN = WN / 16;
};

template <typename T, int BN, int BK> constexpr size_t tc_smem_bytes()
{
    return (size_t)TC_STAGES * (TC_BM * (BK + TC_APAD) + BK * (BN + TC_APAD)) * sizeof(T) + (size_t)TC_BM * 9 * 4;
}

/* Layer l of the slots: in [slot][n_pos[l]][Cip] → out [slot][n_pos[l+1]][Cop]
 * (LAST: FP32 [slot][rows][3]); wt [9][Cip][Cop], bias [Cop]. */
template <typename T, int BN, int BK, bool LAST, int NW>
__global__ void __launch_bounds__(32 * NW, 2)
    k_conv_tc(void *out_, const T *in_, const T *wt, const float *bias, const cu_uv_slot *slots, const cu_frame *fr,
              const cu_garment *gs, int l, int Cip, int Cop, int mode, int64_t in_stride, int64_t out_stride)
{
    using S = tc_shape<BN, NW>;
    constexpr int NT = 32 * NW;
    constexpr int AST = BK + TC_APAD, BST = BN + TC_APAD;
    extern __shared__ __align__(128) unsigned char smem[];
    T *As = (T *)smem, *Bs = As + TC_STAGES * TC_BM * AST;
    int32_t *nbr_s = (int32_t *)(Bs + TC_STAGES * BK * BST);

    const cu_uv_slot *sl = &slots[blockIdx.y];
    const cu_garment *g = &gs[fr[sl->frame].garment];
    const int rows = g->n_pos[l + 1], row0 = blockIdx.x * TC_BM, n0 = blockIdx.z * BN;
    if (row0 >= rows) return; /* the whole block: this frame's layer has fewer rows */
    const int rows_left = rows - row0 < TC_BM ? rows - row0 : TC_BM;
    const T *in = in_ + blockIdx.y * in_stride;
    const int32_t *nbr = g->nbr[l] + (int64_t)row0 * 9;
    const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
    const int wm = warp / S::WN_WARPS, wn = warp % S::WN_WARPS;

    for (int i = tid; i < TC_BM * 9; i += NT) nbr_s[i] = i < rows_left * 9 ? nbr[i] : -1;
    __syncthreads();

    const int KC = 9 * (Cip / BK);
    auto load = [&](int kc, int st) {
        int tap, ci0;
        hd_tc_kchunk(&tap, &ci0, kc, Cip, BK);
        T *as = As + st * TC_BM * AST, *bs = Bs + st * BK * BST;
        for (int i = tid; i < TC_BM * BK / 8; i += NT) {
            int r, c;
            int64_t src = hd_tc_a_src(&r, &c, nbr_s, rows_left, i, tap, ci0, Cip, BK);
            __pipeline_memcpy_async(as + r * AST + c, src >= 0 ? in + src : in, 16, src >= 0 ? 0 : 16);
        }
        for (int i = tid; i < BK * BN / 8; i += NT) {
            int k, c;
            int64_t src = hd_tc_b_src(&k, &c, i, tap, ci0, Cip, Cop, n0, BN);
            __pipeline_memcpy_async(bs + k * BST + c, wt + src, 16, 0);
        }
    };

    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[S::FM][S::FN];
#pragma unroll
    for (int a = 0; a < S::FM; a++)
#pragma unroll
        for (int b = 0; b < S::FN; b++) wmma::fill_fragment(acc[a][b], 0.0f);

#pragma unroll
    for (int s = 0; s < TC_STAGES - 1; s++) {
        if (s < KC) load(s, s);
        __pipeline_commit();
    }
    for (int kc = 0; kc < KC; kc++) {
        __pipeline_wait_prior(TC_STAGES - 2); /* chunk kc has landed */
        __syncthreads();                       /* ... for every thread, and chunk kc − 1 is consumed */
        if (kc + TC_STAGES - 1 < KC) load(kc + TC_STAGES - 1, (kc + TC_STAGES - 1) % TC_STAGES);
        __pipeline_commit();
        const T *as = As + (kc % TC_STAGES) * TC_BM * AST, *bs = Bs + (kc % TC_STAGES) * BK * BST;
#pragma unroll
        for (int kk = 0; kk < BK; kk += 16) {
            wmma::fragment<wmma::matrix_a, 16, 16, 16, T, wmma::row_major> fa[S::FM];
#pragma unroll
            for (int a = 0; a < S::FM; a++) wmma::load_matrix_sync(fa[a], as + (wm * S::WM + a * 16) * AST + kk, AST);
#pragma unroll
            for (int b = 0; b < S::FN; b++) { /* one B fragment live at a time: registers */
                wmma::fragment<wmma::matrix_b, 16, 16, 16, T, wmma::row_major> fb;
                wmma::load_matrix_sync(fb, bs + kk * BST + wn * S::WN + b * 16, BST);
#pragma unroll
                for (int a = 0; a < S::FM; a++) wmma::mma_sync(acc[a][b], fa[a], fb, acc[a][b]);
            }
        }
    }
    __pipeline_wait_prior(0);
    __syncthreads(); /* the tiles are free: each warp's epilogue scratch goes there */

    float *scratch = (float *)smem + warp * 16 * 20;
    const int i = lane >> 1, j0 = (lane & 1) * 8;
#pragma unroll
    for (int a = 0; a < S::FM; a++)
#pragma unroll
        for (int b = 0; b < S::FN; b++) {
            wmma::store_matrix_sync(scratch, acc[a][b], 20, wmma::mem_row_major);
            __syncwarp();
            int r = wm * S::WM + a * 16 + i, col = n0 + wn * S::WN + b * 16 + j0;
            if (r < rows_left) {
                const float *v = scratch + i * 20 + j0;
                if (LAST) {
                    float *o = (float *)out_ + blockIdx.y * out_stride + (int64_t)(row0 + r) * 3;
                    for (int j = 0; j < 8; j++)
                        if (col + j < 3) o[col + j] = hd_tc_out(v[j], bias[col + j], 0.0f, 0);
                } else {
                    /* the residual: the input at this texel, its centre tap (in ⊇ out: never −1) */
                    const T *res = in + (int64_t)nbr_s[r * 9 + 4] * Cip + col;
                    __align__(16) T y[8];
#pragma unroll
                    for (int j = 0; j < 8; j++)
                        y[j] = tc_type<T>::from(
                            hd_tc_out(v[j], bias[col + j], mode == 2 ? tc_type<T>::to(res[j]) : 0.0f, mode));
                    T *o = (T *)out_ + blockIdx.y * out_stride + (int64_t)(row0 + r) * Cop + col;
                    *(uint4 *)o = *(const uint4 *)y;
                }
            }
            __syncwarp();
        }
}

/* The input map of the slots: [slot][n_pos[0]][C0p], 8 channels a thread */
template <typename T>
__global__ void k_uv_input_tc(T *maps, const float *p, const float *y_cat, const float *phi_bias, int y_stride,
                              int phi_off, const cu_uv_slot *slots, const cu_frame *fr, const cu_garment *gs,
                              int64_t stride, int C0p, int d_f, int d_phi)
{
    const cu_uv_slot *sl = &slots[blockIdx.y];
    const cu_frame *x = &fr[sl->frame];
    const cu_garment *g = &gs[x->garment];
    const float *phi = y_cat + (size_t)sl->frame * y_stride + phi_off, *pf = p + 3 * (size_t)x->out_off;
    T *map = maps + blockIdx.y * stride;
    int groups = C0p / 8;
    FOR_EACH(e, (int64_t)g->n_pos[0] * groups) {
        int64_t i = e / groups;
        int c0 = (int)(e - i * groups) * 8;
        __align__(16) T v[8];
        for (int j = 0; j < 8; j++)
            v[j] = tc_type<T>::from(hd_uv_input_at(c0 + j, g->in_cov[i], g->faces, g->texel_face, g->texel_bary,
                                                   g->cov_texel, pf, x->F_cov, phi, phi_bias, d_f, d_phi));
        *(uint4 *)(map + i * C0p + c0) = *(const uint4 *)v;
    }
}

/* An instance whose tiles need more shared memory than a block may have
 * here (BN 128 with BK 64 takes 110 KB; sm_86/89/120 allow 99 KB) is left
 * unset, and the backend keeps to K chunks of 32 (cu_conv_tc_setup). The
 * carveout: all of the SM's L1 as shared memory, or two 110-KB blocks do
 * not fit one SM. */
template <typename T, int BN, int BK, bool LAST, int NW = 8> cudaError_t tc_setup_one(int max_smem)
{
    if ((int)tc_smem_bytes<T, BN, BK>() > max_smem) return cudaSuccess;
    cudaError_t e = cudaFuncSetAttribute(k_conv_tc<T, BN, BK, LAST, NW>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                         (int)tc_smem_bytes<T, BN, BK>());
    if (e == cudaSuccess)
        e = cudaFuncSetAttribute(k_conv_tc<T, BN, BK, LAST, NW>, cudaFuncAttributePreferredSharedMemoryCarveout,
                                 cudaSharedmemCarveoutMaxShared);
    return e;
}

template <typename T> cudaError_t tc_setup_type(int max_smem)
{
    cudaError_t e = cudaSuccess;
#define ONE(BN, BK, LAST) if (e == cudaSuccess) e = tc_setup_one<T, BN, BK, LAST>(max_smem)
    ONE(16, 16, false); ONE(32, 16, false); ONE(64, 16, false); ONE(128, 16, false);
    ONE(16, 32, false); ONE(32, 32, false); ONE(64, 32, false); ONE(128, 32, false);
    ONE(16, 64, false); ONE(32, 64, false); ONE(64, 64, false); ONE(128, 64, false);
    ONE(16, 16, true); ONE(16, 32, true); ONE(16, 64, true);
#undef ONE
    /* the 4-warp variant: the wide tiles only */
    if (e == cudaSuccess) e = tc_setup_one<T, 64, 32, false, 4>(max_smem);
    if (e == cudaSuccess) e = tc_setup_one<T, 128, 32, false, 4>(max_smem);
    if (e == cudaSuccess) e = tc_setup_one<T, 64, 64, false, 4>(max_smem);
    if (e == cudaSuccess) e = tc_setup_one<T, 128, 64, false, 4>(max_smem);
    return e;
}

template <typename T, int BN, int BK, bool LAST, int NW = 8>
void tc_launch(void *out, const void *in, const void *wt, const float *bias, const cu_uv_slot *slots, int ns,
               const cu_frame *fr, const cu_garment *gs, int l, int max_rows, int Cip, int Cop, int mode,
               int64_t in_stride, int64_t out_stride, cudaStream_t s)
{
    int tiles = (max_rows + TC_BM - 1) / TC_BM;
    dim3 grid((unsigned)(tiles > 0 ? tiles : 1), (unsigned)ns, (unsigned)(Cop / BN));
    k_conv_tc<T, BN, BK, LAST, NW><<<grid, 32 * NW, tc_smem_bytes<T, BN, BK>(), s>>>(
        out, (const T *)in, (const T *)wt, bias, slots, fr, gs, l, Cip, Cop, mode, in_stride, out_stride);
}

template <typename T>
void tc_dispatch(void *out, const void *in, const void *wt, const float *bias, const cu_uv_slot *slots, int ns,
                 const cu_frame *fr, const cu_garment *gs, int l, int max_rows, int Cip, int Cop, int mode, int last,
                 int wide, int warps, int64_t in_stride, int64_t out_stride, cudaStream_t s)
{
    int BK = hd_tc_bk(Cip, wide), BN = last ? 16 : hd_tc_bn(Cop);
#define GO(bn, bk, lst) tc_launch<T, bn, bk, lst>(out, in, wt, bias, slots, ns, fr, gs, l, max_rows, Cip, Cop, mode, in_stride, out_stride, s)
#define GO4(bn, bk) tc_launch<T, bn, bk, false, 4>(out, in, wt, bias, slots, ns, fr, gs, l, max_rows, Cip, Cop, mode, in_stride, out_stride, s)
    if (warps == 4 && !last && BN >= 64 && BK >= 32) {
        if (BK == 64) {
            if (BN == 128) GO4(128, 64);
            else GO4(64, 64);
        } else {
            if (BN == 128) GO4(128, 32);
            else GO4(64, 32);
        }
    } else if (last) {
        if (BK == 64) GO(16, 64, true);
        else if (BK == 32) GO(16, 32, true);
        else GO(16, 16, true);
    } else if (BK == 64) {
        if (BN == 128) GO(128, 64, false);
        else if (BN == 64) GO(64, 64, false);
        else if (BN == 32) GO(32, 64, false);
        else GO(16, 64, false);
    } else if (BK == 32) {
        if (BN == 128) GO(128, 32, false);
        else if (BN == 64) GO(64, 32, false);
        else if (BN == 32) GO(32, 32, false);
        else GO(16, 32, false);
    } else {
        if (BN == 128) GO(128, 16, false);
        else if (BN == 64) GO(64, 16, false);
        else if (BN == 32) GO(32, 16, false);
        else GO(16, 16, false);
    }
#undef GO
#undef GO4
}

} // namespace

cudaError_t cu_conv_tc_setup(int *wide_ok)
{
    int dev = 0, max_smem = 0;
    cudaError_t e = cudaGetDevice(&dev);
    if (e == cudaSuccess) e = cudaDeviceGetAttribute(&max_smem, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev);
    if (e != cudaSuccess) return e;
    /* every instance of K chunks of 64 fits when the widest does */
    *wide_ok = (int)tc_smem_bytes<__half, 128, 64>() <= max_smem;
    e = tc_setup_type<__half>(max_smem);
    return e == cudaSuccess ? tc_setup_type<__nv_bfloat16>(max_smem) : e;
}

void cu_conv_tc(void *out, const void *in, const void *wt, const float *bias, const cu_uv_slot *slots, int ns,
                const cu_frame *fr, const cu_garment *gs, int l, int max_rows, int Cip, int Cop, int mode, int last,
                int bf16, int wide, int warps, int64_t in_stride, int64_t out_stride, cudaStream_t s)
{
    if (bf16)
        tc_dispatch<__nv_bfloat16>(out, in, wt, bias, slots, ns, fr, gs, l, max_rows, Cip, Cop, mode, last, wide,
                                   warps, in_stride, out_stride, s);
    else
        tc_dispatch<__half>(out, in, wt, bias, slots, ns, fr, gs, l, max_rows, Cip, Cop, mode, last, wide, warps,
                            in_stride, out_stride, s);
}

void cu_uv_input_tc(void *maps, const float *p, const float *y_cat, const float *phi_bias, int y_stride, int phi_off,
                    const cu_uv_slot *slots, int ns, const cu_frame *fr, const cu_garment *gs, int max_pos,
                    int64_t stride, int C0p, int d_f, int d_phi, int bf16, cudaStream_t s)
{
    dim3 grid(blocks_for((int64_t)max_pos * (C0p / 8)), (unsigned)ns);
    if (bf16)
        k_uv_input_tc<__nv_bfloat16><<<grid, THREADS, 0, s>>>((__nv_bfloat16 *)maps, p, y_cat, phi_bias, y_stride,
                                                              phi_off, slots, fr, gs, stride, C0p, d_f, d_phi);
    else
        k_uv_input_tc<__half><<<grid, THREADS, 0, s>>>((__half *)maps, p, y_cat, phi_bias, y_stride, phi_off, slots, fr,
                                                       gs, stride, C0p, d_f, d_phi);
}

__global__ void k_uv_sample_tc(float *p, const float *outs, const cu_uv_slot *slots, const cu_frame *fr,
                               const cu_garment *gs, int64_t stride)
{
    const cu_uv_slot *sl = &slots[blockIdx.y];
    const cu_frame *x = &fr[sl->frame];
    const cu_garment *g = &gs[x->garment];
    const float *out = outs + blockIdx.y * stride;
    FOR_EACH(v, x->V) {
        float d[3], *q = p + 3 * ((size_t)x->out_off + v);
        hd_tc_sample_vertex(d, g->copy_start, g->tap_row, g->tap_w, out, (int)v);
        for (int c = 0; c < 3; c++) q[c] += d[c];
    }
}

void cu_uv_sample_tc(float *p, const float *outs, const cu_uv_slot *slots, int ns, const cu_frame *fr,
                     const cu_garment *gs, int Vmax, int64_t stride, cudaStream_t s)
{
    k_uv_sample_tc<<<dim3(blocks_for(Vmax), ns), THREADS, 0, s>>>(p, outs, slots, fr, gs, stride);
}
