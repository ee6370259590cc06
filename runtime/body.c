#include "body.h"

#include "../core/kinematics.h"

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

/* The one copy of this math is core/kinematics.h (shared with the CUDA
 * kernels); these are its named entry points for the host. */
void drape_rodrigues(float R[9], const float aa[3]) { hd_rodrigues(R, aa); }
void drape_tf_compose(float out[12], const float a[12], const float b[12]) { hd_compose(out, a, b); }
void drape_tf_inverse_rigid(float out[12], const float a[12]) { hd_inverse_rigid(out, a); }
void drape_tf_apply(float y[3], const float a[12], const float x[3]) { hd_apply(y, a, x); }

void drape_fk(float A[DRAPE_JOINTS * 12], const float pose[DRAPE_POSE_DIM], const float trans[3],
              const float J[DRAPE_JOINTS * 3], const int32_t parents[DRAPE_JOINTS])
{
    float G[DRAPE_JOINTS * 12];
    hd_fk(A, G, pose, trans, J, parents);
}

void drape_heading(float H[12], const float pose[DRAPE_POSE_DIM], const float trans[3], const float J0[3])
{
    hd_heading(H, pose, trans, J0);
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
