/* Bone-level ops of module A: rot6d, corrected transforms, skinning. */
#include <math.h>
#include <string.h>

#include "../../core/kinematics.h"
#include "ops.h"

/* the per-element body is shared with the CUDA kernels (plain C there too) */
void cpu_rot6d(float R[9], const float r[6]) { hd_rot6d(R, r); }

void cpu_bone_correct(float *M, const float *T_hat, const float *q, const float *net, int B)
{
    for (int b = 0; b < B; b++) {
        const float *T = T_hat + 12 * b, *qb = q + 3 * b;
        float *out = M + 12 * b;
        if (!net) {
            memcpy(out, T, 12 * sizeof *out);
            continue;
        }
        float dR[9];
        cpu_rot6d(dR, net + 9 * b);
        const float *tau = net + 9 * b + 6;
        /* x ↦ ΔR (T x − q) + q + τ  =  [ΔR T.R | ΔR (T.t − q) + q + τ] */
        float tq[3] = {T[3] - qb[0], T[7] - qb[1], T[11] - qb[2]};
        for (int i = 0; i < 3; i++) {
            for (int j = 0; j < 3; j++)
                out[4 * i + j] = dR[3 * i] * T[j] + dR[3 * i + 1] * T[4 + j] + dR[3 * i + 2] * T[8 + j];
            out[4 * i + 3] = dR[3 * i] * tq[0] + dR[3 * i + 1] * tq[1] + dR[3 * i + 2] * tq[2] + qb[i] + tau[i];
        }
    }
}

void cpu_skin(float *out, const float *g, const float *M, const int32_t *idx, const float *w, int V, int k)
{
    for (int v = 0; v < V; v++) {
        const float *x = g + 3 * v;
        float acc[3] = {0, 0, 0};
        for (int j = 0; j < k; j++) {
            const float *T = M + 12 * idx[(size_t)v * k + j];
            float wj = w[(size_t)v * k + j];
            for (int i = 0; i < 3; i++)
                acc[i] += wj * (T[4 * i] * x[0] + T[4 * i + 1] * x[1] + T[4 * i + 2] * x[2] + T[4 * i + 3]);
        }
        memcpy(out + 3 * v, acc, sizeof acc);
    }
}

void cpu_skin_weights(float *w, const float *w0, const float *dw, const int32_t *idx, int V, int k, int B)
{
    for (int v = 0; v < V; v++) {
        float *row = w + (size_t)v * k;
        float mx = -INFINITY;
        for (int j = 0; j < k; j++) {
            row[j] = logf(w0[(size_t)v * k + j] + 1e-8f) + dw[(size_t)v * B + idx[(size_t)v * k + j]];
            if (row[j] > mx) mx = row[j];
        }
        float s = 0;
        for (int j = 0; j < k; j++) s += (row[j] = expf(row[j] - mx));
        for (int j = 0; j < k; j++) row[j] /= s;
    }
}
