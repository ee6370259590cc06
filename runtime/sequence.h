/* A pose sequence through module A: what `drape infer`, the tests and the
 * benchmarks share. */
#ifndef DRAPE_SEQUENCE_H
#define DRAPE_SEQUENCE_H

#include "backend.h"

#define DRAPE_FRAME_FLOATS 75 /* 72 axis-angle + 3 translation */

/* The bounds every pose value keeps, the same on every way in (a stream's
 * pose, POST /v1/frames, drape infer and sim): each axis-angle component in
 * radians and each root translation in metres. Past them a float no longer
 * places the body (at 1e10 m its vertices are kilometres apart) and the work
 * of a frame is no longer bounded, so such a pose is refused, not run.
 * draped takes both from its config table and shows them in /v1/model. */
typedef struct {
    double max_angle, max_trans;
} drape_pose_limits;

#define DRAPE_POSE_MAX_ANGLE 100.0 /* rad: 16 turns, wrapped angles need < 7 */
#define DRAPE_POSE_MAX_TRANS 1e4   /* m: 10 km from the origin, float steps 1 mm */

/* One frame of 75 values (72 axis-angle, 3 translation) against lim (NULL:
 * the defaults above): DRAPE_ENONFINITE for NaN or Inf, DRAPE_ERANGE past a
 * bound; the message names the value. */
int drape_pose_validate(const float *frame, const drape_pose_limits *lim, drape_error *err);

/* Why consecutive frames a, b [75] of one avatar are a cut (a clip that
 * loops, a teleport): DRAPE_CUT_SPEED when the root moved faster than
 * max_speed m/s, DRAPE_CUT_SPIN when a joint turned faster than max_spin
 * rad/s (the angle of its relative rotation, so a turn through ±π is not a
 * jump), else 0. A limit of 0 is off. fps: the model's frame rate. */
enum { DRAPE_CUT_NONE, DRAPE_CUT_RESET, DRAPE_CUT_SEQ_GAP, DRAPE_CUT_SPEED, DRAPE_CUT_SPIN, DRAPE_CUT_KINDS };
int drape_pose_cut(const float *a, const float *b, double max_speed, double max_spin, double fps);

/* A [T,75] pose array: T >= 1 and every frame valid under lim (NULL: the
 * defaults); the message names the frame. */
int drape_poses_check(const float *poses, int64_t T, const drape_pose_limits *lim, drape_error *err);

/* out [T,V,3] world positions for poses [T,75]; frame t uses the frames
 * max(t−o,0) for each offset o of the model's history (cfg.hist). Frames
 * go to the backend `batch` at a time. */
int drape_sequence_run(drape_backend *be, const drape_identity *id, const float *poses, int T, int lbs_only,
                       float *out, int batch, drape_error *err);
/* The same with cuts (a stream's rule, docs/design.md §6): cuts [n_cuts],
 * ascending, are frames where the motion starts again, so frame t's history
 * reaches back no further than the last cut at or before t. */
int drape_sequence_run_cuts(drape_backend *be, const drape_identity *id, const float *poses, int T, const int *cuts,
                            int n_cuts, int lbs_only, float *out, int batch, drape_error *err);

#endif
