#include "skin.h"

#include <stdlib.h>
#include <string.h>

#include "../core/kinematics.h"
#include "body.h"

void drape_retarget(float *out, const float *x, const int32_t *nn, int n, const drape_model *m, const float *betas)
{
    for (int i = 0; i < n; i++) hd_retarget_point(out + 3 * i, x + 3 * i, nn[i], m->shapedirs, betas, m->cfg.betas);
}

/* One frame, in the CPU backend's order (heading frame, bones in it,
 * skinning, back to the world), so the numbers are the backend's to the bit. */
static void skin_frame(float *out, float *M, float *phat, const drape_model *m, const drape_garment *g,
                       const float *gv, const float *J, const float *pose)
{
    int B = m->cfg.bones, k = m->cfg.skin_k;
    float H[12], Hinv[12], A[DRAPE_JOINTS * 12];
    hd_heading(H, pose, pose + DRAPE_POSE_DIM, J);
    hd_inverse_rigid(Hinv, H);
    drape_fk(A, pose, pose + DRAPE_POSE_DIM, J, m->parents);
    for (int b = 0; b < B; b++) {
        float T[12] = {0};
        const float *w = g->bone_joint_w + (size_t)b * DRAPE_JOINTS;
        for (int j = 0; j < DRAPE_JOINTS; j++)
            if (w[j] != 0)
                for (int i = 0; i < 12; i++) T[i] += w[j] * A[12 * j + i];
        hd_compose(M + 12 * b, Hinv, T);
    }
    for (int v = 0; v < g->V; v++) {
        const float *x = gv + 3 * v;
        float acc[3] = {0, 0, 0};
        for (int j = 0; j < k; j++) {
            const float *T = M + 12 * g->skin_idx[(size_t)v * k + j];
            float wj = g->skin_w0[(size_t)v * k + j];
            for (int i = 0; i < 3; i++)
                acc[i] += wj * (T[4 * i] * x[0] + T[4 * i + 1] * x[1] + T[4 * i + 2] * x[2] + T[4 * i + 3]);
        }
        memcpy(phat + 3 * v, acc, sizeof acc);
    }
    for (int v = 0; v < g->V; v++) hd_apply(out + 3 * v, H, phat + 3 * v);
}

int drape_skin_lbs(float *out, const drape_model *m, int gi, const float *betas, const float *poses, int T,
                   drape_error *err)
{
    const drape_garment *g = &m->garments[gi];
    int V = g->V, B = m->cfg.bones;
    float J[DRAPE_JOINTS * 3];
    float *gv = malloc((size_t)3 * V * sizeof *gv);
    float *M = malloc((size_t)12 * B * sizeof *M), *phat = malloc((size_t)3 * V * sizeof *phat);
    int rc = gv && M && phat ? DRAPE_OK : drape_fail(err, DRAPE_ENOMEM, "skinning: out of memory");
    if (!rc) rc = drape_body_shape(NULL, J, m, betas);
    if (rc == DRAPE_ENOMEM) drape_fail(err, rc, "skinning: out of memory");
    if (!rc) {
        drape_retarget(gv, g->rest, g->body_nn, V, m, betas);
        for (int t = 0; t < T; t++)
            skin_frame(out + (size_t)t * 3 * V, M, phat, m, g, gv, J, poses + (size_t)t * (DRAPE_POSE_DIM + 3));
    }
    free(gv);
    free(M);
    free(phat);
    return rc;
}
