/* Body model and forward kinematics against hand-worked values. */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "../runtime/body.h"
#include "util.h"

static const int32_t SMPL_PARENTS[24] = {-1, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 9, 9, 12, 13, 14, 16, 17, 18, 19, 20, 21};

static void assert_vec(const float *got, const float *want, int n, float tol)
{
    for (int i = 0; i < n; i++) cr_assert(fabsf(got[i] - want[i]) <= tol, "[%d] got %.7f want %.7f", i, got[i], want[i]);
}

Test(body, rodrigues_known_rotations)
{
    float R[9];
    drape_rodrigues(R, (float[]){0, 0, (float)M_PI / 2});
    assert_vec(R, (float[]){0, -1, 0, 1, 0, 0, 0, 0, 1}, 9, 1e-6f);
    drape_rodrigues(R, (float[]){(float)M_PI, 0, 0});
    assert_vec(R, (float[]){1, 0, 0, 0, -1, 0, 0, 0, -1}, 9, 1e-6f);
    drape_rodrigues(R, (float[]){0, 0, 0});
    assert_vec(R, (float[]){1, 0, 0, 0, 1, 0, 0, 0, 1}, 9, 0);
    /* tiny angles use the first-order form, still a near-rotation */
    drape_rodrigues(R, (float[]){1e-14f, 0, 0});
    assert_vec(R, (float[]){1, 0, 0, 0, 1, 0, 0, 0, 1}, 9, 1e-7f);
}

/* Root turned 90° about z, joint 1 (left hip, parent 0) 90° about x; a point
 * rigidly attached to joint 1, worked out by hand:
 *   x − J1 = (0, −0.4, 0) → R_x(90°) → (0, 0, −0.4); + J1 − J0 = (0.1, −0.1, −0.4)
 *   → R_z(90°) → (0.1, 0.1, −0.4); + J0 + trans (1, 2, 3) = (1.1, 2.1, 2.6). */
Test(body, fk_two_joint_chain)
{
    float J[72] = {0}, pose[72] = {0}, A[24 * 12], y[3];
    J[3] = 0.1f, J[4] = -0.1f; /* J1 */
    for (int k = 2; k < 24; k++) J[3 * k + 1] = 0.3f * k; /* others anywhere */
    pose[2] = (float)M_PI / 2;
    pose[3] = (float)M_PI / 2;
    drape_fk(A, pose, (float[]){1, 2, 3}, J, SMPL_PARENTS);
    drape_tf_apply(y, A + 12, (float[]){0.1f, -0.5f, 0});
    assert_vec(y, (float[]){1.1f, 2.1f, 2.6f}, 3, 1e-6f);
    /* a joint not on the chain of 1 still follows the root only */
    drape_tf_apply(y, A + 12 * 2, (float[]){1, 0, 0});
    assert_vec(y, (float[]){1.0f, 3.0f, 3.0f}, 3, 1e-6f);
}

Test(body, fk_rest_pose_is_identity)
{
    drape_model *m = tu_load("tiny_random");
    float J[72], pose[72] = {0}, A[24 * 12];
    float betas[10] = {1, -1, 0.5f, 2};
    drape_body_shape(NULL, J, m, betas);
    drape_fk(A, pose, (float[]){0, 0, 0}, J, m->parents);
    for (int k = 0; k < 24; k++)
        assert_vec(A + 12 * k, (float[]){1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0}, 12, 1e-6f);
    drape_model_free(m);
}

Test(body, shape_space_changes_the_body)
{
    drape_model *m = tu_load("tiny_random");
    float J0[72], J1[72], betas[10] = {0}, b1[10] = {2};
    drape_body_shape(NULL, J0, m, betas);
    drape_body_shape(NULL, J1, m, b1);
    /* joints are the regressor applied to the shaped body: β0 moves them */
    double moved = 0;
    for (int i = 0; i < 72; i++) moved += fabs(J1[i] - J0[i]);
    cr_assert_gt(moved, 1e-3);
    drape_model_free(m);
}

Test(body, heading_frame)
{
    float pose[72] = {0}, H[12], J0[3] = {0.1f, 0.9f, 0}, tr[3] = {1, 0, -2};
    /* yaw of 0.7 rad about y: ψ = 0.7 */
    pose[1] = 0.7f;
    drape_heading(H, pose, tr, J0);
    float c = cosf(0.7f), s = sinf(0.7f);
    assert_vec(H, (float[]){c, 0, s, 1.1f, 0, 1, 0, 0.9f, -s, 0, c, -2}, 12, 1e-6f);
    /* tilting the root forward by 0.3 about x keeps ψ = 0 */
    memset(pose, 0, sizeof pose);
    pose[0] = 0.3f;
    drape_heading(H, pose, tr, J0);
    assert_vec(H, (float[]){1, 0, 0, 1.1f, 0, 1, 0, 0.9f, 0, 0, 1, -2}, 12, 1e-6f);
    /* facing straight down (f vertical): fall back to g = R·(1,0,0);
     * R = R_y(0.5)·R_x(π/2) as one axis-angle */
    float Rx[9], Ry[9], R[9];
    drape_rodrigues(Rx, (float[]){(float)M_PI / 2, 0, 0});
    drape_rodrigues(Ry, (float[]){0, 0.5f, 0});
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) R[3 * i + j] = Ry[3 * i] * Rx[j] + Ry[3 * i + 1] * Rx[3 + j] + Ry[3 * i + 2] * Rx[6 + j];
    double ang = acos((R[0] + R[4] + R[8] - 1) / 2), k = ang / (2 * sin(ang));
    pose[0] = (float)(k * (R[7] - R[5]));
    pose[1] = (float)(k * (R[2] - R[6]));
    pose[2] = (float)(k * (R[3] - R[1]));
    drape_heading(H, pose, tr, J0);
    cr_assert(fabsf(H[0] - cosf(0.5f)) < 1e-5f && fabsf(H[2] - sinf(0.5f)) < 1e-5f, "H = %f %f", H[0], H[2]);
}

Test(body, transform_algebra)
{
    float a[12], b[12], ab[12], inv[12], id[12], x[3] = {0.3f, -1, 2}, y1[3], y2[3];
    float R[9];
    drape_rodrigues(R, (float[]){0.2f, -0.4f, 0.9f});
    for (int i = 0; i < 3; i++) {
        for (int j = 0; j < 3; j++) a[4 * i + j] = R[3 * i + j];
        a[4 * i + 3] = (float)(i + 1);
    }
    drape_rodrigues(R, (float[]){-1, 0.1f, 0.3f});
    for (int i = 0; i < 3; i++) {
        for (int j = 0; j < 3; j++) b[4 * i + j] = R[3 * i + j];
        b[4 * i + 3] = -(float)i;
    }
    drape_tf_compose(ab, a, b);
    drape_tf_apply(y1, b, x);
    drape_tf_apply(y1, a, y1);
    drape_tf_apply(y2, ab, x);
    assert_vec(y1, y2, 3, 1e-5f);
    drape_tf_inverse_rigid(inv, a);
    drape_tf_compose(id, inv, a);
    assert_vec(id, (float[]){1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0}, 12, 1e-6f);
}
