/* One frame through the batcher, the same for a stream's avatar and for
 * POST /v1/frames: the job that points at an identity and a pose window,
 * and the packing of its result with the times the client is told. */
#ifndef DRAPED_FRAME_H
#define DRAPED_FRAME_H

#include "../proto/msg.h"
#include "../runtime/batcher.h"
#include "../runtime/sequence.h"
#include "metrics.h"

_Static_assert(DRAPE_FRAME_FLOATS == DRAPE_MSG_POSE + 3, "a frame's floats: the wire's pose, then its translation");

/* Fills the frame of j: identity id, the window win of the model's n_hist
 * frames (oldest first, t last; each DRAPE_FRAME_FLOATS: the pose, then the
 * translation), output out [V,3]. format (DRAPE_FMT_*) is the one the frame
 * will be sent in: f16 and q16 are packed by the backend's run (into out).
 * The caller sets key, done and user; win and out must live until the job
 * is done. */
void draped_frame_job(drape_job *j, const drape_identity *id, const float (*win)[DRAPE_FRAME_FLOATS], int n_hist,
                      int lbs_only, int format, float *out);

/* Packs the V vertices a finished job wrote in format into pk (bbox: their
 * box; or takes the bytes the backend packed) and fills t: the job's queue and compute times and the pack's, in µs.
 * Returns 0, or (err says which) DRAPE_ENONFINITE when the model's output
 * holds NaN or Inf, DRAPE_ENOMEM: there is no frame to send, and the caller
 * answers with an `internal` error instead (docs/protocol.md). */
int draped_frame_pack(drape_buf *pk, float bbox[6], drape_timing *t, const drape_job *j, int format, int V,
                      drape_error *err);

/* Counts a frame draped_frame_pack refused (drape_frames_nonfinite_total for
 * NaN or Inf) and logs it, the 1st, 2nd, 4th, 8th... time: a broken model
 * fails every frame, and the log must not grow at the frame rate. */
void draped_frame_failed(draped_metrics *met, const drape_error *err);

#endif
