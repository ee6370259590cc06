/* Per-thread bodies of the CUDA kernels (modules A and B), one function per
 * element a thread computes, written once for both compilers: the .cu
 * kernels call them on the device, and tests/test_cuda.c (plain C11) loops
 * over them on the CPU against the CPU backend's ops, so index and boundary
 * mistakes are caught on machines without a GPU. The geometry and kinematics
 * they build on (transforms, FK, heading, UV taps) are the program's one copy
 * in core/kinematics.h. Pointers into per-frame or
 * per-garment tables are passed in; nothing here allocates or knows about
 * streams. Float sums keep the CPU backend's order where it is a plain loop,
 * so on the host a body matches its CPU op to the last bit (up to FMA
 * contraction, which nvcc applies on the device). */
#ifndef DRAPE_CUDA_BODIES_H
#define DRAPE_CUDA_BODIES_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "../../core/kinematics.h"
#include "../../runtime/model.h"

#define HD_MAX_HISTORY 8 /* DRAPE_MAX_HISTORY */

/* ---- the Bone-Net input ---- */

/* One thread per (frame, bone b) — docs/design.md §2.4 steps 1–2. A [nf][24,12] the
 * skinning transforms of the frame's nf history frames (oldest first, t
 * last), Hinv [12] its inverse heading, c_b [3] the retargeted bone, w_b
 * [24] its joint weights; lo, hi the inputs' range (NULL: none). Writes bone b's entries of the normalized
 * Bone-Net input X [(2nf−1)·3B] (nf positions, then nf − 1 differences),
 * T̂_b [12] and q_b [3]. */
static inline DRAPE_HD void hd_bone_input(float *X, float *T_hat_b, float *q_b, const float *A, const float *Hinv,
                                          const float *c_b, const float *w_b, const float *mean, const float *std,
                                          const float *lo, const float *hi, int b, int B, int nf)
{
    float q[HD_MAX_HISTORY][3];
    for (int F = 0; F < nf; F++) {
        float T[12] = {0}, p[3];
        for (int k = 0; k < HD_JOINTS; k++)
            if (w_b[k] != 0)
                for (int i = 0; i < 12; i++) T[i] += w_b[k] * A[F * HD_JOINTS * 12 + 12 * k + i];
        hd_apply(p, T, c_b);
        hd_apply(q[F], Hinv, p);
        if (F == nf - 1) hd_compose(T_hat_b, Hinv, T);
    }
    for (int d = 0; d < 3; d++) {
        for (int blk = 0; blk < 2 * nf - 1; blk++) {
            float v = blk < nf ? q[blk][d] : q[blk - nf + 1][d] - q[blk - nf][d];
            int i = 3 * B * blk + 3 * b + d;
            X[i] = hd_bone_standardize(v, i, mean, std, lo, hi);
        }
        q_b[d] = q[nf - 1][d];
    }
}

/* ---- dense epilogues (after a cuBLAS GEMM with β = 0) ---- */

/* FiLM + ReLU of one element: h is the GEMM output, bias the layer's */
static inline DRAPE_HD float hd_film_relu(float h, float bias, float dgamma, float beta)
{
    float v = (1.0f + dgamma) * (h + bias) + beta;
    return v > 0 ? v : 0;
}

static inline DRAPE_HD float hd_bias_act(float y, float bias, int relu)
{
    float v = y + bias;
    return relu && v < 0 ? 0 : v;
}

/* One thread per row: y [d] += bias, then dst [d] (+)= LayerNorm(y)·w + b
 * (biased variance, eps 1e-5). accumulate: dst += (residual), else dst =
 * (dst may be y). */
static inline DRAPE_HD void hd_bias_layernorm_row(float *dst, float *y, const float *bias, const float *w,
                                                  const float *b, int d, int accumulate)
{
    float mean = 0, var = 0;
    for (int i = 0; i < d; i++) mean += (y[i] += bias[i]);
    mean /= d;
    for (int i = 0; i < d; i++) var += (y[i] - mean) * (y[i] - mean);
    var /= d;
    float inv = 1.0f / sqrtf(var + 1e-5f);
    for (int i = 0; i < d; i++) {
        float v = (y[i] - mean) * inv * w[i] + b[i];
        dst[i] = accumulate ? dst[i] + v : v;
    }
}

/* ---- bones and skinning ---- */

/* One thread per (frame, bone): M_b [12] = x ↦ ΔR (T̂ x − q) + q + τ from the
 * bone's Bone-Net output net_b [9] (NULL: plain skinning, M = T̂). */
static inline DRAPE_HD void hd_bone_correct(float *M_b, const float *T, const float *q, const float *net_b)
{
    if (!net_b) {
        for (int i = 0; i < 12; i++) M_b[i] = T[i];
        return;
    }
    float dR[9];
    hd_rot6d(dR, net_b);
    const float *tau = net_b + 6;
    float tq[3] = {T[3] - q[0], T[7] - q[1], T[11] - q[2]};
    for (int i = 0; i < 3; i++) {
        for (int j = 0; j < 3; j++)
            M_b[4 * i + j] = dR[3 * i] * T[j] + dR[3 * i + 1] * T[4 + j] + dR[3 * i + 2] * T[8 + j];
        M_b[4 * i + 3] = dR[3 * i] * tq[0] + dR[3 * i + 1] * tq[1] + dR[3 * i + 2] * tq[2] + q[i] + tau[i];
    }
}

/* hd_bone_correct of bone b with its Bone-Net output read from the frame's
 * row y [9B + d_φ] of the GEMM that computes the output layer and the pose
 * embedding at once (no bias) plus their bias [9B + d_φ]; y NULL: plain
 * skinning */
static inline DRAPE_HD void hd_bone_correct_cat(float *M_b, const float *T, const float *q, const float *y,
                                                const float *bias, int b)
{
    if (!y) {
        hd_bone_correct(M_b, T, q, NULL);
        return;
    }
    float net[9];
    for (int j = 0; j < 9; j++) net[j] = y[9 * b + j] + bias[9 * b + j];
    hd_bone_correct(M_b, T, q, net);
}

/* One thread per (frame, vertex): out [3] = Σ_j w_j M[idx_j] x over the k
 * support bones; idx, w the vertex's rows [k]. */
static inline DRAPE_HD void hd_skin_vertex(float *out, const float *x, const float *M, const int32_t *idx,
                                           const float *w, int k)
{
    float acc[3] = {0, 0, 0};
    for (int j = 0; j < k; j++) {
        const float *T = M + 12 * idx[j];
        for (int i = 0; i < 3; i++)
            acc[i] += w[j] * (T[4 * i] * x[0] + T[4 * i + 1] * x[1] + T[4 * i + 2] * x[2] + T[4 * i + 3]);
    }
    for (int i = 0; i < 3; i++) out[i] = acc[i];
}

/* One thread per vertex: row [k] = softmax(log(w0 + 1e-8) + dw[idx]) */
static inline DRAPE_HD void hd_skin_weights_vertex(float *row, const float *w0, const float *dw, const int32_t *idx,
                                                   int k)
{
    float mx = -INFINITY, s = 0;
    for (int j = 0; j < k; j++) {
        row[j] = logf(w0[j] + 1e-8f) + dw[idx[j]];
        if (row[j] > mx) mx = row[j];
    }
    for (int j = 0; j < k; j++) s += (row[j] = expf(row[j] - mx));
    for (int j = 0; j < k; j++) row[j] /= s;
}

/* ---- the UV stage ---- */

/* value [3] at texel t = Σ λ p over its face's corners */
static inline DRAPE_HD void hd_texel_point(float *out, const int32_t *faces, const int32_t *texel_face,
                                           const float *texel_bary, const float *p, int t)
{
    const int32_t *f = faces + 3 * texel_face[t];
    const float *l = texel_bary + 3 * t;
    for (int d = 0; d < 3; d++) out[d] = l[0] * p[3 * f[0] + d] + l[1] * p[3 * f[1] + d] + l[2] * p[3 * f[2] + d];
}

/* One thread per (frame, texel of the input runs): x [C = 3 + d_f + d_φ + 1]
 * of the conv input map; cov = the texel's index among the covered texels
 * or −1 (empty: zeros). */
static inline DRAPE_HD void hd_uv_input_texel(float *x, int cov, const int32_t *faces, const int32_t *texel_face,
                                              const float *texel_bary, const int32_t *cov_texel, const float *p,
                                              const float *F_cov, const float *phi, int d_f, int d_phi)
{
    int C = 3 + d_f + d_phi + 1;
    if (cov < 0) {
        for (int i = 0; i < C; i++) x[i] = 0;
        return;
    }
    hd_texel_point(x, faces, texel_face, texel_bary, p, cov_texel[cov]);
    for (int i = 0; i < d_f; i++) x[3 + i] = F_cov[(size_t)cov * d_f + i];
    for (int i = 0; i < d_phi; i++) x[3 + d_f + i] = phi[i];
    x[C - 1] = 1.0f;
}

/* im2col element e ∈ [0, 9·Ci) of the texel at flat padded position p:
 * tap t = e / Ci (row-major 3×3), channel e % Ci; the layout matches the
 * packed weights taps [9][Ci][Co] of cpu_conv_pack. pw = Wu + 2. */
static inline DRAPE_HD float hd_im2col_at(const float *in, int64_t p, int pw, int Ci, int e)
{
    int t = e / Ci, ci = e - t * Ci;
    return in[(p + (int64_t)(t / 3 - 1) * pw + (t % 3 - 1)) * Ci + ci];
}

/* conv epilogue of one output: mode 0 plain, 1 ReLU, 2 residual ReLU
 * (resid = the layer's input at the same texel and channel) */
static inline DRAPE_HD float hd_conv_out(float acc, float bias, float resid, int mode)
{
    float y = acc + bias;
    if (mode && y < 0) y = 0;
    return mode == 2 ? y + resid : y;
}

/* Flat padded position of border texel i ∈ [0, 2(Wu+2) + 2Hu): the top row,
 * the bottom row, then the left and right ends of each inner row. A layer's
 * border is laid afresh because a scratch map may have held one of another
 * width (channel count), whose values would then sit on this map's border. */
static inline DRAPE_HD int64_t hd_border_pos(int64_t i, int Hu, int Wu)
{
    int pw = Wu + 2;
    if (i < pw) return i;
    if (i < 2 * pw) return (int64_t)(Hu + 1) * pw + (i - pw);
    i -= 2 * pw;
    return (int64_t)(i / 2 + 1) * pw + (i % 2 ? pw - 1 : 0);
}

/* One thread per (frame, vertex v): delta [3] = mean over v's UV copies of
 * the bilinear sample of map (padded layout, 3 channels). */
static inline DRAPE_HD void hd_uv_sample_vertex(float *delta, const int32_t *copy_start, const int32_t *copy_uv,
                                                const float *uv, const float *map, int v, int Hu, int Wu)
{
    float acc[3] = {0, 0, 0};
    int pw = Wu + 2, n = copy_start[v + 1] - copy_start[v];
    for (int c = copy_start[v]; c < copy_start[v + 1]; c++) {
        const float *q = uv + 2 * copy_uv[c];
        int32_t idx[4];
        float w[4];
        hd_uv_taps(idx, w, q[0], q[1], Hu, Wu);
        for (int t = 0; t < 4; t++) {
            const float *m = map + ((size_t)(idx[t] / Wu + 1) * pw + (idx[t] % Wu + 1)) * 3;
            for (int d = 0; d < 3; d++) acc[d] += w[t] * m[d];
        }
    }
    for (int d = 0; d < 3; d++) delta[d] = n ? acc[d] / (float)n : 0.0f;
}

/* ---- module B ---- */

/* One thread per edge: o [7] = [x_s − x_r, |x_s − x_r|, one-hot type] */
static inline DRAPE_HD void hd_edge_feature(float *o, const float *xs, const float *xr, int type)
{
    for (int d = 0; d < 3; d++) o[d] = xs[d] - xr[d];
    o[3] = sqrtf(o[0] * o[0] + o[1] * o[1] + o[2] * o[2]);
    for (int t = 0; t < 3; t++) o[4 + t] = type == t;
}

/* Element (i, k) of the edge MLP input [E, 3d] = [e | h_snd | h_rcv] */
static inline DRAPE_HD float hd_edge_concat_at(const float *e, const float *h, const int32_t *snd, const int32_t *rcv,
                                               int i, int k, int d)
{
    int part = k / d, c = k - part * d;
    if (part == 0) return e[(size_t)i * d + c];
    return h[(size_t)(part == 1 ? snd[i] : rcv[i]) * d + c];
}

/* Channel k of node n's incoming message sum: edges into n listed in CSR
 * (start [N+1], ids ascending edge index, so the sum runs in edge order as
 * the CPU scatter-add does — deterministic, no atomics). */
static inline DRAPE_HD float hd_segment_sum(const float *e, const int32_t *start, const int32_t *ids, int n, int k,
                                            int d)
{
    float acc = 0;
    for (int j = start[n]; j < start[n + 1]; j++) acc += e[(size_t)ids[j] * d + k];
    return acc;
}

/* Channel k of F_UV at covered texel c: Σ λ f over its face's corners */
static inline DRAPE_HD float hd_fcov_at(const float *f, const int32_t *faces, const int32_t *texel_face,
                                        const float *texel_bary, const int32_t *cov_texel, int c, int k, int df)
{
    int t = cov_texel[c];
    const int32_t *fc = faces + 3 * texel_face[t];
    const float *l = texel_bary + 3 * t;
    return l[0] * f[(size_t)fc[0] * df + k] + l[1] * f[(size_t)fc[1] * df + k] + l[2] * f[(size_t)fc[2] * df + k];
}

/* ---- host-side tables, built once per garment when the backend loads ---- */

/* pos [count]: the flat padded positions of a map's runs, in order; returns
 * the count (the runs' active texels) */
static inline int hd_expand_runs(int32_t *pos, const drape_span *spans, int n_spans)
{
    int n = 0;
    for (int s = 0; s < n_spans; s++)
        for (int q = spans[s].begin; q < spans[s].end; q++) pos[n++] = q;
    return n;
}

/* in_cov [n]: for each input-map position pos0 [n] (ascending), its index
 * among the covered texels cov_texel [n_cov] (ascending i·Wu + j), or −1.
 * Both ascend in (i, j), so one merge walk. */
static inline void hd_input_cov(int32_t *in_cov, const int32_t *pos0, int n, const int32_t *cov_texel, int n_cov,
                                int Wu)
{
    int pw = Wu + 2;
    for (int i = 0, c = 0; i < n; i++) {
        while (c < n_cov && (cov_texel[c] / Wu + 1) * pw + cov_texel[c] % Wu + 1 < pos0[i]) c++;
        in_cov[i] = c < n_cov && (cov_texel[c] / Wu + 1) * pw + cov_texel[c] % Wu + 1 == pos0[i] ? c : -1;
    }
}

/* Module B's graph (docs/design.md §2.3), built on the host: node features x [N,8],
 * edges in the CPU's order (garment, body, garment–body; both directions),
 * edge features ef [E,7], and the CSR of edges by receiver. snd has room for
 * E + N entries (the CSR fill cursors); type [E], nn [knn], best [knn]
 * scratch; gv [V,3] the retargeted garment, vs/nrm [Nb,3] the shaped body
 * and its normals. */
typedef struct {
    int N, E;
    float *x, *ef;
    int32_t *snd, *rcv, *start, *ids;
} hd_graph;

static inline void hd_add_edge(hd_graph *gr, unsigned char *type, int a, int b, int t)
{
    gr->snd[gr->E] = a; gr->rcv[gr->E] = b; type[gr->E++] = (unsigned char)t;
    gr->snd[gr->E] = b; gr->rcv[gr->E] = a; type[gr->E++] = (unsigned char)t;
}

static inline void hd_build_graph(hd_graph *gr, unsigned char *type, int32_t *nn, float *best, const drape_model *m,
                        const drape_garment *g, const float *gv, const float *vs, const float *nrm, int knn)
{
    int V = g->V, Nb = m->Nb;
    for (int i = 0; i < gr->N; i++) {
        float *r = gr->x + 8 * (size_t)i;
        const float *src = i < V ? gv + 3 * i : vs + 3 * (i - V);
        for (int d = 0; d < 3; d++) {
            r[d] = src[d];
            r[3 + d] = i < V ? 0 : nrm[3 * (i - V) + d];
        }
        r[6] = i >= V;
        r[7] = i < V;
    }
    gr->E = 0;
    for (int i = 0; i < g->n_edges; i++) hd_add_edge(gr, type, g->edges[2 * i], g->edges[2 * i + 1], 0);
    for (int i = 0; i < m->n_body_edges; i++) hd_add_edge(gr, type, V + m->body_edges[2 * i], V + m->body_edges[2 * i + 1], 1);
    for (int v = 0; v < V; v++) {
        hd_knn_vertex(nn, best, gv + 3 * v, vs, Nb, knn);
        for (int j = 0; j < knn; j++) hd_add_edge(gr, type, v, V + nn[j], 2);
    }
    for (int i = 0; i < gr->E; i++) {
        int s = gr->snd[i], r = gr->rcv[i];
        hd_edge_feature(gr->ef + 7 * (size_t)i, s < V ? gv + 3 * s : vs + 3 * (s - V), r < V ? gv + 3 * r : vs + 3 * (r - V),
                        type[i]);
    }
    /* CSR by receiver, stable: a node's edges stay in edge order */
    memset(gr->start, 0, (size_t)(gr->N + 1) * sizeof *gr->start);
    for (int i = 0; i < gr->E; i++) gr->start[gr->rcv[i] + 1]++;
    for (int i = 0; i < gr->N; i++) gr->start[i + 1] += gr->start[i];
    int32_t *fill = gr->snd + gr->E; /* [N] cursor scratch after snd (allocated with room) */
    memcpy(fill, gr->start, (size_t)gr->N * sizeof *fill);
    for (int i = 0; i < gr->E; i++) gr->ids[fill[gr->rcv[i]]++] = i;
}

#endif
