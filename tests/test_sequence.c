/* runtime/sequence.c: the one pose validator every way in shares. */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "../runtime/sequence.h"

Test(sequence, pose_limits_are_inclusive_and_named)
{
    drape_pose_limits lim = {10, 100};
    float f[DRAPE_FRAME_FLOATS] = {0};
    drape_error e = {0};
    f[5] = -10, f[73] = 100;
    cr_assert_eq(drape_pose_validate(f, &lim, &e), DRAPE_OK, "%s", e.msg);
    f[5] = -10.001f;
    cr_assert_eq(drape_pose_validate(f, &lim, &e), DRAPE_ERANGE);
    cr_assert(strstr(e.msg, "value 5 (joint 1's rotation)") && strstr(e.msg, "±10 rad"), "%s", e.msg);
    f[5] = 0, f[74] = -100.01f;
    cr_assert_eq(drape_pose_validate(f, &lim, &e), DRAPE_ERANGE);
    cr_assert(strstr(e.msg, "value 74 (trans[2])") && strstr(e.msg, "±100 m"), "%s", e.msg);
    f[74] = NAN;
    cr_assert_eq(drape_pose_validate(f, &lim, &e), DRAPE_ENONFINITE);
    cr_assert(strstr(e.msg, "value 74 is NaN"), "%s", e.msg);
    f[74] = 0, f[0] = INFINITY;
    cr_assert_eq(drape_pose_validate(f, &lim, &e), DRAPE_ENONFINITE);
}

Test(sequence, cuts_by_speed_and_spin_not_by_a_turn_through_pi)
{
    float a[DRAPE_FRAME_FLOATS] = {0}, b[DRAPE_FRAME_FLOATS] = {0};
    cr_assert_eq(drape_pose_cut(a, b, 25, 60, 30), DRAPE_CUT_NONE);
    b[74] = 0.8f; /* 24 m/s at 30 fps */
    cr_assert_eq(drape_pose_cut(a, b, 25, 60, 30), DRAPE_CUT_NONE);
    b[74] = 0.9f; /* 27 m/s */
    cr_assert_eq(drape_pose_cut(a, b, 25, 60, 30), DRAPE_CUT_SPEED);
    cr_assert_eq(drape_pose_cut(a, b, 0, 60, 30), DRAPE_CUT_NONE, "0 turns the check off");
    b[74] = 0;
    /* a joint through ±π: (π − 0.01) x then (π − 0.01)(−x) is a turn of 0.02 rad */
    a[3 * 5] = (float)(M_PI - 0.01), b[3 * 5] = (float)-(M_PI - 0.01);
    cr_assert_eq(drape_pose_cut(a, b, 25, 60, 30), DRAPE_CUT_NONE);
    b[3 * 5] = (float)(M_PI - 0.01 - 2.5); /* 2.5 rad in a frame: 75 rad/s */
    cr_assert_eq(drape_pose_cut(a, b, 25, 60, 30), DRAPE_CUT_SPIN);
}

Test(sequence, default_limits_and_the_frame_in_the_message)
{
    float p[3 * DRAPE_FRAME_FLOATS] = {0};
    drape_error e = {0};
    p[DRAPE_FRAME_FLOATS + 72] = (float)DRAPE_POSE_MAX_TRANS;
    p[2 * DRAPE_FRAME_FLOATS + 3] = (float)-DRAPE_POSE_MAX_ANGLE;
    cr_assert_eq(drape_poses_check(p, 3, NULL, &e), DRAPE_OK, "%s", e.msg);
    p[2 * DRAPE_FRAME_FLOATS + 72] = 2e4f;
    cr_assert_eq(drape_poses_check(p, 3, NULL, &e), DRAPE_ERANGE);
    cr_assert(strstr(e.msg, "pose frame 2, value 72 (trans[0]) is 20000 m"), "%s", e.msg);
    cr_assert_eq(drape_poses_check(p, 0, NULL, &e), DRAPE_EINVAL);
}
