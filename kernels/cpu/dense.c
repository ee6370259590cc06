/* Dense layers: Linear, ReLU, LayerNorm, FiLM, the MeshGraphNet MLP. */
#include <cblas.h>
#include <math.h>
#include <string.h>

#include "ops.h"

/* Rows per block when a GEMM is split over threads. */
#define LINEAR_BLOCK 256

void cpu_linear(float *out, const float *in, const drape_linear *lin, int n, int threads)
{
    int nb = (n + LINEAR_BLOCK - 1) / LINEAR_BLOCK;
    /* dynamic: a thread that starts late takes fewer blocks (the blocks, so
     * the results, do not depend on which thread runs them) */
#pragma omp parallel for schedule(dynamic) num_threads(threads) if (nb > 1)
    for (int blk = 0; blk < nb; blk++) {
        int r0 = blk * LINEAR_BLOCK, rn = n - r0 < LINEAR_BLOCK ? n - r0 : LINEAR_BLOCK;
        float *o = out + (size_t)r0 * lin->out;
        for (int r = 0; r < rn; r++) memcpy(o + (size_t)r * lin->out, lin->b, (size_t)lin->out * sizeof *out);
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, rn, lin->out, lin->in, 1.0f, in + (size_t)r0 * lin->in,
                    lin->in, lin->w, lin->in, 1.0f, o, lin->out);
    }
}

void cpu_linear_ref(float *out, const float *in, const drape_linear *lin, int n)
{
    for (int r = 0; r < n; r++)
        for (int o = 0; o < lin->out; o++) {
            double acc = lin->b[o];
            for (int i = 0; i < lin->in; i++) acc += (double)in[(size_t)r * lin->in + i] * lin->w[(size_t)o * lin->in + i];
            out[(size_t)r * lin->out + o] = (float)acc;
        }
}

void cpu_relu(float *x, int64_t n)
{
    for (int64_t i = 0; i < n; i++) x[i] = x[i] > 0 ? x[i] : 0;
}

void cpu_layernorm(float *x, const float *w, const float *b, int n, int d)
{
    for (int r = 0; r < n; r++) {
        float *row = x + (size_t)r * d;
        float mean = 0, var = 0;
        for (int i = 0; i < d; i++) mean += row[i];
        mean /= d;
        for (int i = 0; i < d; i++) var += (row[i] - mean) * (row[i] - mean);
        var /= d;
        float inv = 1.0f / sqrtf(var + 1e-5f);
        for (int i = 0; i < d; i++) row[i] = (row[i] - mean) * inv * w[i] + b[i];
    }
}

void cpu_film_relu(float *h, const float *dgamma, const float *beta, int d)
{
    for (int i = 0; i < d; i++) {
        float v = (1.0f + dgamma[i]) * h[i] + beta[i];
        h[i] = v > 0 ? v : 0;
    }
}

void cpu_mlp_ln(float *out, float *tmp, const float *in, const drape_mlp_ln *mlp, int n, int threads)
{
    cpu_linear(tmp, in, &mlp->l0, n, threads);
    cpu_relu(tmp, (int64_t)n * mlp->l0.out);
    cpu_linear(out, tmp, &mlp->l1, n, threads);
    cpu_layernorm(out, mlp->ln_w, mlp->ln_b, n, mlp->l1.out);
}
