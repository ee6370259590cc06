/* Module B's kernels (docs/design.md §2.3): the graph network's gathers, LayerNorm
 * and message sums, and the cached outputs. The MLPs' GEMMs are cuBLAS in
 * backend_cuda.cu. Message sums are a CSR segment reduce over the edges into
 * each node (no atomics: deterministic, and in the CPU's edge order). */
#include "bodies.h"
#include "cuda_ops.h"

__global__ void k_edge_concat(float *cat, const float *e, const float *h, const int32_t *snd, const int32_t *rcv, int E,
                              int d)
{
    int64_t w = 3 * (int64_t)d;
    FOR_EACH(i, (int64_t)E * w) cat[i] = hd_edge_concat_at(e, h, snd, rcv, (int)(i / w), (int)(i % w), d);
}

void cu_edge_concat(float *cat, const float *e, const float *h, const int32_t *snd, const int32_t *rcv, int E, int d,
                    cudaStream_t s)
{
    k_edge_concat<<<blocks_for((int64_t)E * 3 * d), THREADS, 0, s>>>(cat, e, h, snd, rcv, E, d);
}

__global__ void k_node_concat(float *cat, const float *h, const float *e, const int32_t *start, const int32_t *ids,
                              int N, int d)
{
    FOR_EACH(i, (int64_t)N * d) {
        int n = (int)(i / d), k = (int)(i % d);
        cat[(size_t)n * 2 * d + k] = h[i];
        cat[(size_t)n * 2 * d + d + k] = hd_segment_sum(e, start, ids, n, k, d);
    }
}

void cu_node_concat(float *cat, const float *h, const float *e, const int32_t *start, const int32_t *ids, int N, int d,
                    cudaStream_t s)
{
    k_node_concat<<<blocks_for((int64_t)N * d), THREADS, 0, s>>>(cat, h, e, start, ids, N, d);
}

/* one thread per row: rows are short (d = latent ≤ a few hundred) and there
 * are many (every edge), so rows map to threads rather than warps */
__global__ void k_bias_layernorm(float *dst, float *y, const float *bias, const float *w, const float *b, int n, int d,
                                 int accumulate)
{
    FOR_EACH(r, n) hd_bias_layernorm_row(dst + (size_t)r * d, y + (size_t)r * d, bias, w, b, d, accumulate);
}

void cu_bias_layernorm(float *dst, float *y, const float *bias, const float *w, const float *b, int n, int d,
                       int accumulate, cudaStream_t s)
{
    k_bias_layernorm<<<blocks_for(n), THREADS, 0, s>>>(dst, y, bias, w, b, n, d, accumulate);
}

__global__ void k_mean_rows(float *mean, const float *h, int V, int d)
{
    FOR_EACH(k, d) {
        double acc = 0;
        for (int v = 0; v < V; v++) acc += h[(size_t)v * d + k];
        mean[k] = (float)(acc / V);
    }
}

void cu_mean_rows(float *mean, const float *h, int V, int d, cudaStream_t s)
{
    k_mean_rows<<<blocks_for(d), THREADS, 0, s>>>(mean, h, V, d);
}

__global__ void k_skin_weights(float *w, const float *w0, const float *dw, const int32_t *idx, int V, int k, int B)
{
    FOR_EACH(v, V) hd_skin_weights_vertex(w + v * k, w0 + v * k, dw + v * B, idx + v * k, k);
}

void cu_skin_weights(float *w, const float *w0, const float *dw, const int32_t *idx, int V, int k, int B,
                     cudaStream_t s)
{
    k_skin_weights<<<blocks_for(V), THREADS, 0, s>>>(w, w0, dw, idx, V, k, B);
}

__global__ void k_fcov(float *F, const float *f, const cu_garment *g, int n_cov, int df)
{
    FOR_EACH(i, (int64_t)n_cov * df)
        F[i] = hd_fcov_at(f, g->faces, g->texel_face, g->texel_bary, g->cov_texel, (int)(i / df), (int)(i % df), df);
}

void cu_fcov(float *F, const float *f, const cu_garment *g, int n_cov, int df, cudaStream_t s)
{
    k_fcov<<<blocks_for((int64_t)n_cov * df), THREADS, 0, s>>>(F, f, g, n_cov, df);
}
