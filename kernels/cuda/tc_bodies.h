/* The tensor-core UV conv (precisions BF16 and FP16; conv_tc.cu): its index
 * math, epilogue and tables, written once for both compilers like bodies.h,
 * so that tests/test_cuda.c runs the same arithmetic on the CPU (an
 * emulation of a whole layer against kernels/cpu/conv.c) on machines
 * without a GPU.
 *
 * The layout (docs/conventions.md, "CUDA backend"):
 * - Maps are compact and channels-last: map l holds only the texels of
 *   layer l's runs (pos[l]: the input texels for l = 0, layer l−1's outputs
 *   after), row i for pos[l][i], Cp(l) channels, the channel count rounded
 *   up to 16 with zero channels, in 16-bit floats. No border, no empty texel.
 * - Layer l is a GEMM without im2col: row r of its output (texel pos[l+1][r])
 *   times K = 9·Cp(l) taps-and-channels, the A operand gathered on the fly
 *   through a neighbour table nbr_l [rows][9] (each tap's row in map l, −1
 *   for the zero border) into shared memory, B the weights packed
 *   [9][Cp(l)][Cp(l+1)] (zero rows and columns for the padding). FP32
 *   accumulation; bias, ReLU and the residual in the epilogue, then rounded
 *   to the 16-bit type. The last layer (3 channels) writes FP32.
 * - The output map is sampled through a table of each UV copy's four taps
 *   as rows of the last map and their bilinear weights. */
#ifndef DRAPE_CUDA_TC_BODIES_H
#define DRAPE_CUDA_TC_BODIES_H

#include <stdint.h>

#include "../../core/kinematics.h"
#include "../../core/pack16.h"

#define TC_BM 128     /* output rows (texels) per block */
#define TC_STAGES 3   /* shared-memory pipeline depth */
#define TC_APAD 8     /* row padding of the shared tiles, in elements (bank conflicts) */

static inline DRAPE_HD int hd_tc_pad(int c) { return (c + 15) & ~15; }

/* K chunk: 32 channels of one tap when the padded width allows, else 16;
 * wide: 64 where it divides (half the barriers per K, twice the shared
 * memory: two blocks of BN 128 still fit an SM) */
static inline DRAPE_HD int hd_tc_bk(int Cip, int wide) { return wide && Cip % 64 == 0 ? 64 : Cip % 32 ? 16 : 32; }

/* output tile width: the widest of 128, 64, 32, 16 that divides Cop (padded) */
static inline DRAPE_HD int hd_tc_bn(int Cop) { return Cop % 128 == 0 ? 128 : Cop % 64 == 0 ? 64 : Cop % 32 == 0 ? 32 : 16; }

/* K chunk kc ∈ [0, 9·Cip/BK) → its tap (row-major 3×3) and first channel */
static inline DRAPE_HD void hd_tc_kchunk(int *tap, int *ci0, int kc, int Cip, int BK)
{
    int per = Cip / BK;
    *tap = kc / per;
    *ci0 = (kc - *tap * per) * BK;
}

/* 16-byte vector i ∈ [0, TC_BM·BK/8) of a block's A tile for (tap, ci0):
 * where it goes in the tile (row *r, column *c) and the element of the input
 * map it copies, or −1 for zeros (a row past the layer's, or the border).
 * nbr: the block's rows of the neighbour table [rows_left][9]. */
static inline DRAPE_HD int64_t hd_tc_a_src(int *r, int *c, const int32_t *nbr, int rows_left, int i, int tap, int ci0,
                                           int Cip, int BK)
{
    int per_row = BK / 8;
    *r = i / per_row;
    *c = (i - *r * per_row) * 8;
    if (*r >= rows_left) return -1;
    int32_t src = nbr[*r * 9 + tap];
    return src < 0 ? -1 : (int64_t)src * Cip + ci0 + *c;
}

/* 16-byte vector i ∈ [0, BK·BN/8) of the B tile (weights [9][Cip][Cop]) of
 * output columns [n0, n0 + BN): tile row *k, column *c, and its element */
static inline DRAPE_HD int64_t hd_tc_b_src(int *k, int *c, int i, int tap, int ci0, int Cip, int Cop, int n0, int BN)
{
    int per_row = BN / 8;
    *k = i / per_row;
    *c = (i - *k * per_row) * 8;
    return ((int64_t)tap * Cip + ci0 + *k) * Cop + n0 + *c;
}

/* The weights of conv layer (in, out) in the kernel's layout, as floats:
 * wp [9][Cip][Cop] from the packed taps [9][in][out] (cpu_conv_pack), zero
 * in the padding; bp [Cop] the bias likewise. */
static inline void hd_tc_pack_weights(float *wp, float *bp, const float *taps, const float *bias, int in, int out,
                                      int Cip, int Cop)
{
    for (int t = 0; t < 9; t++)
        for (int i = 0; i < Cip; i++)
            for (int o = 0; o < Cop; o++)
                wp[((size_t)t * Cip + i) * Cop + o] = i < in && o < out ? taps[((size_t)t * in + i) * out + o] : 0.0f;
    for (int o = 0; o < Cop; o++) bp[o] = o < out ? bias[o] : 0.0f;
}

/* The 16-bit types' rounding (round to nearest even), as the device's
 * __float2half_rn and __float2bfloat16_rn, for the host's emulation and the
 * weights' conversion */
static inline uint16_t hd_bf16_bits(float f)
{
    uint32_t x;
    memcpy(&x, &f, 4);
    if ((x & 0x7fffffff) > 0x7f800000) return (uint16_t)((x >> 16) | 0x40); /* NaN stays NaN */
    return (uint16_t)((x + 0x7fff + ((x >> 16) & 1)) >> 16);
}
static inline float hd_bf16_value(uint16_t b)
{
    uint32_t x = (uint32_t)b << 16;
    float f;
    memcpy(&f, &x, 4);
    return f;
}
/* bits of f in the tensor-core type: bf16 or fp16 */
static inline uint16_t hd_tc_bits(float f, int bf16) { return bf16 ? hd_bf16_bits(f) : hd_f32_to_f16(f); }

/* ---- tables, built on the host when the backend loads ---- */

/* nbr [n_out][9]: for each output texel (pos_out, ascending flat padded
 * positions) and tap, its row among the input texels (pos_in, ascending), or
 * −1 on the zero border. Returns the index of an output texel one of whose
 * taps inside the map is not an input texel (the runs are then wrong: the
 * conv would read what no layer wrote), or −1 when all is well. One merge
 * walk per tap: both lists ascend, and so do the taps' positions. */
static inline int hd_tc_neighbours(int32_t *nbr, const int32_t *pos_out, int n_out, const int32_t *pos_in, int n_in,
                                   int Hu, int Wu)
{
    int pw = Wu + 2;
    for (int t = 0; t < 9; t++) {
        int shift = (t / 3 - 1) * pw + (t % 3 - 1);
        for (int r = 0, j = 0; r < n_out; r++) {
            int q = pos_out[r] + shift, y = q / pw, x = q % pw;
            if (y == 0 || y == Hu + 1 || x == 0 || x == pw - 1) {
                nbr[(int64_t)r * 9 + t] = -1;
                continue;
            }
            while (j < n_in && pos_in[j] < q) j++;
            if (j == n_in || pos_in[j] != q) return r;
            nbr[(int64_t)r * 9 + t] = j;
        }
    }
    return -1;
}

/* The sampling table of a garment: for UV copy c and bilinear tap t, the
 * row of the texel in the last map (pos_last, ascending) and its weight
 * (docs/conventions.md, "bilinear sampling"). Returns the first copy whose
 * tap is not in that map (runs wrong), or −1. */
static inline int hd_tc_sample_table(int32_t *row, float *w, const float *uv, const int32_t *copy_uv, int n_copies,
                                     const int32_t *pos_last, int n_last, int Hu, int Wu)
{
    for (int c = 0; c < n_copies; c++) {
        int32_t idx[4];
        const float *q = uv + 2 * copy_uv[c];
        hd_uv_taps(idx, w + 4 * c, q[0], q[1], Hu, Wu);
        for (int t = 0; t < 4; t++) {
            int32_t p = (idx[t] / Wu + 1) * (Wu + 2) + idx[t] % Wu + 1;
            int lo = 0, hi = n_last; /* first position ≥ p */
            while (lo < hi) {
                int mid = (lo + hi) / 2;
                if (pos_last[mid] < p) lo = mid + 1;
                else hi = mid;
            }
            if (lo == n_last || pos_last[lo] != p) return c;
            row[4 * c + t] = lo;
        }
    }
    return -1;
}

/* ---- per-element bodies ---- */

/* Channel ch of input texel i (cov: its index among the covered texels, or
 * −1): [P_UV (3) | F_UV (d_f) | φ + b_φ (d_φ) | mask (1)], zero past those
 * (the padding) and on empty texels. phi_bias may be NULL. The same values
 * as hd_uv_input_texel's (bodies.h) with φ + b_φ as φ. */
static inline DRAPE_HD float hd_uv_input_at(int ch, int cov, const int32_t *faces, const int32_t *texel_face,
                                            const float *texel_bary, const int32_t *cov_texel, const float *p,
                                            const float *F_cov, const float *phi, const float *phi_bias, int d_f,
                                            int d_phi)
{
    if (cov < 0 || ch >= 4 + d_f + d_phi) return 0.0f;
    if (ch < 3) {
        int t = cov_texel[cov];
        const int32_t *f = faces + 3 * texel_face[t];
        const float *l = texel_bary + 3 * t;
        return l[0] * p[3 * f[0] + ch] + l[1] * p[3 * f[1] + ch] + l[2] * p[3 * f[2] + ch];
    }
    if (ch < 3 + d_f) return F_cov[(size_t)cov * d_f + ch - 3];
    if (ch < 3 + d_f + d_phi) return phi_bias ? phi[ch - 3 - d_f] + phi_bias[ch - 3 - d_f] : phi[ch - 3 - d_f];
    return 1.0f;
}

/* The epilogue of one output: bias, then mode 0 plain, 1 ReLU, 2 ReLU and
 * the residual (resid: the layer's input at the texel and channel), as
 * hd_conv_out; the caller rounds to the map's type */
static inline DRAPE_HD float hd_tc_out(float acc, float bias, float resid, int mode)
{
    float y = acc + bias;
    if (mode && y < 0) y = 0;
    return mode == 2 ? y + resid : y;
}

/* One thread per (frame, vertex v): delta [3] = mean over v's UV copies of
 * the bilinear sample of the last map out [rows, 3] (FP32) through the
 * sampling table; the sums in hd_uv_sample_vertex's order. */
static inline DRAPE_HD void hd_tc_sample_vertex(float *delta, const int32_t *copy_start, const int32_t *row,
                                                const float *w, const float *out, int v)
{
    float acc[3] = {0, 0, 0};
    int n = copy_start[v + 1] - copy_start[v];
    for (int c = copy_start[v]; c < copy_start[v + 1]; c++)
        for (int t = 0; t < 4; t++) {
            const float *m = out + (size_t)row[4 * c + t] * 3;
            for (int d = 0; d < 3; d++) acc[d] += w[4 * c + t] * m[d];
        }
    for (int d = 0; d < 3; d++) delta[d] = n ? acc[d] / (float)n : 0.0f;
}

#endif
