#include "body.h"

#include "../kernels/cuda/bodies.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

int drape_body_shape(float *v_s, float *J, const drape_model *m, const float *betas)
{
    int Nb = m->Nb, S = m->cfg.betas;
    float *v = v_s ? v_s : malloc((size_t)Nb * 3 * sizeof *v);
    if (!v) return DRAPE_ENOMEM;
    for (int i = 0; i < Nb * 3; i++) {
        float acc = m->v_template[i];
        const float *sd = m->shapedirs + (size_t)i * S;
        for (int s = 0; s < S; s++) acc += sd[s] * betas[s];
        v[i] = acc;
    }
    for (int k = 0; k < DRAPE_JOINTS; k++) {
        double acc[3] = {0, 0, 0};
        const float *r = m->J_regressor + (size_t)k * Nb;
        for (int i = 0; i < Nb; i++)
            if (r[i] != 0)
                for (int d = 0; d < 3; d++) acc[d] += (double)r[i] * v[3 * i + d];
        for (int d = 0; d < 3; d++) J[3 * k + d] = (float)acc[d];
    }
    if (!v_s) free(v);
    return DRAPE_OK;
}

/* float64 inside (conventions.md); the per-element body is shared with the
 * CUDA kernels (kernels/cuda/bodies.h compiles as plain C) */
void drape_rodrigues(float R[9], const float aa[3]) { hd_rodrigues(R, aa); }

void drape_tf_compose(float out[12], const float a[12], const float b[12])
{
    float r[12];
    for (int i = 0; i < 3; i++) {
        for (int j = 0; j < 4; j++) {
            float acc = j == 3 ? a[4 * i + 3] : 0.0f;
            for (int l = 0; l < 3; l++) acc += a[4 * i + l] * b[4 * l + j];
            r[4 * i + j] = acc;
        }
    }
    memcpy(out, r, sizeof r);
}

void drape_tf_inverse_rigid(float out[12], const float a[12])
{
    float r[12];
    for (int i = 0; i < 3; i++) {
        for (int j = 0; j < 3; j++) r[4 * i + j] = a[4 * j + i];
        r[4 * i + 3] = -(a[i] * a[3] + a[4 + i] * a[7] + a[8 + i] * a[11]);
    }
    memcpy(out, r, sizeof r);
}

void drape_tf_apply(float y[3], const float a[12], const float x[3])
{
    float r[3];
    for (int i = 0; i < 3; i++) r[i] = a[4 * i] * x[0] + a[4 * i + 1] * x[1] + a[4 * i + 2] * x[2] + a[4 * i + 3];
    memcpy(y, r, sizeof r);
}

void drape_fk(float A[DRAPE_JOINTS * 12], const float pose[DRAPE_POSE_DIM], const float trans[3],
              const float J[DRAPE_JOINTS * 3], const int32_t parents[DRAPE_JOINTS])
{
    float G[DRAPE_JOINTS][12];
    for (int k = 0; k < DRAPE_JOINTS; k++) {
        float R[9], local[12];
        drape_rodrigues(R, pose + 3 * k);
        for (int i = 0; i < 3; i++) {
            for (int j = 0; j < 3; j++) local[4 * i + j] = R[3 * i + j];
            local[4 * i + 3] = k == 0 ? J[i] + trans[i] : J[3 * k + i] - J[3 * parents[k] + i];
        }
        if (k == 0) memcpy(G[0], local, sizeof local);
        else drape_tf_compose(G[k], G[parents[k]], local);
    }
    /* A_k = G_k ∘ [I | −J_k] */
    for (int k = 0; k < DRAPE_JOINTS; k++) {
        float *a = A + 12 * k;
        for (int i = 0; i < 3; i++) {
            for (int j = 0; j < 3; j++) a[4 * i + j] = G[k][4 * i + j];
            a[4 * i + 3] = G[k][4 * i + 3] - (G[k][4 * i] * J[3 * k] + G[k][4 * i + 1] * J[3 * k + 1] +
                                               G[k][4 * i + 2] * J[3 * k + 2]);
        }
    }
}

void drape_heading(float H[12], const float pose[DRAPE_POSE_DIM], const float trans[3], const float J0[3])
{
    hd_heading(H, pose, trans, J0); /* the CUDA kernels' body, plain C here */
}

void drape_body_pose(float *v, const drape_model *m, const float *v_s, const float A[DRAPE_JOINTS * 12])
{
    for (int i = 0; i < m->Nb; i++) {
        const float *w = m->weights + (size_t)i * DRAPE_JOINTS;
        float M[12] = {0};
        for (int k = 0; k < DRAPE_JOINTS; k++)
            if (w[k] != 0)
                for (int j = 0; j < 12; j++) M[j] += w[k] * A[12 * k + j];
        drape_tf_apply(v + 3 * i, M, v_s + 3 * i);
    }
}
