/* The math of modules A and B on the CPU: one function per op, outputs
 * first, shapes in the comment above. The two optimized ops, the GEMM
 * (cpu_linear) and the conv (cpu_conv3x3), have a plain `_ref` loop beside
 * them that the tests hold them to; the others are plain loops themselves.
 * The GEMM runs in parallel over an OpenMP team of `threads` (> 0), the conv
 * over the backend's pool (pool.h). Maps are channels-last. */
#ifndef DRAPE_CPU_OPS_H
#define DRAPE_CPU_OPS_H

#include <stdint.h>

#include "../../runtime/model.h"
#include "pool.h"

/* out [n,lin.out] = in [n,lin.in] · wᵀ + b   (OpenBLAS sgemm; large n is
 * split in row blocks over `threads` OpenMP threads, OpenBLAS itself runs one) */
void cpu_linear(float *out, const float *in, const drape_linear *lin, int n, int threads);
void cpu_linear_ref(float *out, const float *in, const drape_linear *lin, int n);

/* x [n] ← max(x, 0) */
void cpu_relu(float *x, int64_t n);

/* x [n,d] ← LayerNorm over d (biased variance, eps 1e-5) · w + b */
void cpu_layernorm(float *x, const float *w, const float *b, int n, int d);

/* h [d] ← ReLU((1 + dgamma) ⊙ h + beta)   (FiLM of one row) */
void cpu_film_relu(float *h, const float *dgamma, const float *beta, int d);

/* out [n,d] = MLP with LayerNorm: LN(l1(ReLU(l0(in)))); tmp [n,d] scratch */
void cpu_mlp_ln(float *out, float *tmp, const float *in, const drape_mlp_ln *mlp, int n, int threads);

/* R [9] row-major = the rotation of a 6D vector r with identity offset
 * (docs/design.md §2.4 step 4): columns e1, e2, e3 */
void cpu_rot6d(float R[9], const float r[6]);

/* M [B,12] corrected bone transforms in H_t (docs/design.md §2.4 step 5):
 * x ↦ ΔR_b (T̂_b x − q_b) + q_b + τ_b, with net [B,9] the Bone-Net output
 * (NULL: ΔR = I, τ = 0), T_hat [B,12], q [B,3]. */
void cpu_bone_correct(float *M, const float *T_hat, const float *q, const float *net, int B);

/* out [V,3] = Σ_j w [V,k] · M[idx [V,k]] (g [V,3])   (docs/design.md §2.4 step 6) */
void cpu_skin(float *out, const float *g, const float *M, const int32_t *idx, const float *w, int V, int k);

/* w [V,k] = softmax_j(log(w0 + 1e-8) + dw[v, idx_vj]); dw [V,B] */
void cpu_skin_weights(float *w, const float *w0, const float *dw, const int32_t *idx, int V, int k, int B);

/* A conv layer in the CPU kernels' layouts: taps [9][in][out] (a texel tile
 * reads 16-wide rows of output channels) and wt [out][9][in] (an output
 * channel narrower than a vector reads rows of input channels). */
typedef struct { const float *b, *taps, *wt; int in, out; } cpu_conv;

/* taps [9·in·out], wt [out·9·in] from w [out,in,3,3] (PyTorch layout) */
void cpu_conv_pack(float *taps, float *wt, const float *w, int in, int out);

/* 3×3 conv, stride 1, zero padding 1, on maps in the padded layout
 * [(Hu+2)(Wu+2), C]. Computes out on the given runs of texels only (reading
 * in around them), and lays the zero border of out (the buffer may have held
 * a map of another width): out = conv(in) (+ ReLU) (+ in, residual: requires
 * in == out widths). mode: 0 plain, 1 ReLU, 2 residual ReLU. Runs are shared
 * among `team` threads of the pool (NULL: the caller alone), in chunks of
 * about equal texel counts; the result does not depend on the team. */
void cpu_conv3x3(float *out, const float *in, const cpu_conv *cv, int Hu, int Wu, const drape_span *spans,
                 int n_spans, int mode, cpu_pool *pool, int team);
/* Which tiles cpu_conv3x3 uses: -1 (the default) by the machine (the 8-wide
 * AVX2 ones where the CPU has AVX2 but not AVX-512, else the 16-wide ones);
 * 0 the 16-wide ones; 1 the 8-wide ones, only where the CPU has AVX2. For
 * tests, so that both tile families meet the reference on one machine. */
extern int cpu__conv_tiles;
/* Cuts runs into at most want chunks of about equal texel counts: chunk k
 * is runs [cut[k], cut[k + 1]), every run in exactly one chunk, in order, a
 * chunk's texels at most ⌈total / want⌉ plus one run's; returns the count
 * (0 without runs). cut has room for want + 1. */
int cpu_conv_chunks(int *cut, const drape_span *spans, int n_spans, int want);
/* Naive reference on an unpadded map [Hu,Wu,in] → [Hu,Wu,out], whole map. */
void cpu_conv3x3_ref(float *out, const float *in, const drape_conv *cv, int Hu, int Wu, int mode);

/* Input map of the conv stack in the padded layout, over the input spans:
 * [P_UV (3) | F_UV (d_f) | φ (d_φ) | mask (1)], zero on empty texels and the
 * border. p [V,3] stage-1 vertices, F_cov [n_cov,d_f] the identity's UV
 * features of the covered texels. */
void cpu_uv_input(float *map, const drape_garment *g, const float *p, const float *F_cov, const float *phi,
                  int d_f, int d_phi, int Hu, int Wu);

/* delta [V,3]: per vertex, the mean over its UV copies of the bilinear sample
 * of map (padded layout, 3 channels). */
void cpu_uv_sample(float *delta, const drape_garment *g, const float *map, int Hu, int Wu);

/* Graph ops of module B. Edges as sender/receiver index arrays [E].
 * cat [E, 3d] = [e | h_snd | h_rcv] */
void cpu_edge_concat(float *cat, const float *e, const float *h, const int32_t *snd, const int32_t *rcv, int E, int d);
/* agg [N,d] = Σ over edges into each node of e [E,d] */
void cpu_scatter_add(float *agg, const float *e, const int32_t *rcv, int E, int N, int d);

#endif
