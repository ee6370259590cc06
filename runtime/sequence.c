#include "sequence.h"

#include "../core/kinematics.h"

#include <math.h>
#include <stdlib.h>

int drape_pose_validate(const float *frame, const drape_pose_limits *lim, drape_error *err)
{
    static const drape_pose_limits def = {DRAPE_POSE_MAX_ANGLE, DRAPE_POSE_MAX_TRANS};
    if (!lim) lim = &def;
    for (int i = 0; i < DRAPE_FRAME_FLOATS; i++) {
        double x = frame[i];
        if (!isfinite(x)) return drape_fail(err, DRAPE_ENONFINITE, "value %d is NaN or Inf", i);
        if (i < 72 && fabs(x) > lim->max_angle)
            return drape_fail(err, DRAPE_ERANGE, "value %d (joint %d's rotation) is %g rad, beyond the limit of ±%g rad",
                              i, i / 3, x, lim->max_angle);
        if (i >= 72 && fabs(x) > lim->max_trans)
            return drape_fail(err, DRAPE_ERANGE, "value %d (trans[%d]) is %g m, beyond the limit of ±%g m", i, i - 72,
                              x, lim->max_trans);
    }
    return DRAPE_OK;
}

int drape_pose_cut(const float *a, const float *b, double max_speed, double max_spin, double fps)
{
    if (max_speed > 0) {
        double d[3] = {(double)b[72] - a[72], (double)b[73] - a[73], (double)b[74] - a[74]};
        if (sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]) * fps > max_speed) return DRAPE_CUT_SPEED;
    }
    if (max_spin > 0)
        for (int j = 0; j < 24; j++)
            if (hd_turn_angle(a + 3 * j, b + 3 * j) * fps > max_spin) return DRAPE_CUT_SPIN;
    return DRAPE_CUT_NONE;
}

int drape_poses_check(const float *poses, int64_t T, const drape_pose_limits *lim, drape_error *err)
{
    if (T < 1) return drape_fail(err, DRAPE_EINVAL, "pose sequence is empty");
    for (int64_t t = 0; t < T; t++) {
        drape_error why = {0};
        int rc = drape_pose_validate(poses + t * DRAPE_FRAME_FLOATS, lim, &why);
        if (rc) return drape_fail(err, rc, "pose frame %lld, %s", (long long)t, why.msg);
    }
    return DRAPE_OK;
}

int drape_sequence_run(drape_backend *be, const drape_identity *id, const float *poses, int T, int lbs_only,
                       float *out, int batch, drape_error *err)
{
    return drape_sequence_run_cuts(be, id, poses, T, NULL, 0, lbs_only, out, batch, err);
}

int drape_sequence_run_cuts(drape_backend *be, const drape_identity *id, const float *poses, int T, const int *cuts,
                            int n_cuts, int lbs_only, float *out, int batch, drape_error *err)
{
    const drape_model *m = drape_backend_model(be);
    const drape_config *c = &m->cfg;
    int V3 = 3 * m->garments[drape_identity_garment(id)].V, rc = DRAPE_OK;
    if (batch < 1) batch = 1;
    drape_frame *fr = malloc((size_t)batch * sizeof *fr);
    if (!fr) return drape_fail(err, DRAPE_ENOMEM, "out of memory");
    for (int t0 = 0; t0 < T && !rc; t0 += batch) {
        int n = T - t0 < batch ? T - t0 : batch;
        for (int i = 0; i < n; i++) {
            int t = t0 + i, start = 0;
            for (int k = 0; k < n_cuts && cuts[k] <= t; k++) start = cuts[k];
            fr[i] = (drape_frame){.id = id, .lbs_only = lbs_only};
            for (int F = 0; F < c->n_hist; F++) {
                const float *p = poses + (size_t)(start + drape_history_index(t - start, c->hist[F])) * DRAPE_FRAME_FLOATS;
                fr[i].pose[F] = p;
                fr[i].trans[F] = p + 72;
            }
            fr[i].out = out + (size_t)t * V3;
        }
        rc = drape_backend_run(be, fr, n, err);
    }
    free(fr);
    return rc;
}
