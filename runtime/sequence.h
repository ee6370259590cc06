/* A pose sequence through module A: what `drape infer`, the tests and the
 * benchmarks share. */
#ifndef DRAPE_SEQUENCE_H
#define DRAPE_SEQUENCE_H

#include "backend.h"

#define DRAPE_FRAME_FLOATS 75 /* 72 axis-angle + 3 translation */

/* Checks a [T,75] pose array: T >= 1 and every value finite. */
int drape_poses_check(const float *poses, int64_t T, drape_error *err);

/* out [T,V,3] world positions for poses [T,75]; frame t uses the frames
 * max(t−o,0) for each offset o of the model's history (cfg.hist). Frames
 * go to the backend `batch` at a time. */
int drape_sequence_run(drape_backend *be, const drape_identity *id, const float *poses, int T, int lbs_only,
                       float *out, int batch, drape_error *err);

#endif
