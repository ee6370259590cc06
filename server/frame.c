#include "frame.h"

#include "../core/log.h"
#include <string.h>

#include "../proto/pack.h"

void draped_frame_job(drape_job *j, const drape_identity *id, const float (*win)[DRAPE_FRAME_FLOATS], int n_hist,
                      int lbs_only, int format, float *out)
{
    j->frame.id = id;
    for (int k = 0; k < n_hist; k++) {
        j->frame.pose[k] = win[k];
        j->frame.trans[k] = win[k] + DRAPE_MSG_POSE;
    }
    j->frame.lbs_only = lbs_only;
    j->frame.out = out;
    /* f16 and q16 come back packed from the backend (on the GPU, packed there) */
    j->frame.pack = format == DRAPE_FMT_F16 ? DRAPE_PACK_F16 : format == DRAPE_FMT_Q16 ? DRAPE_PACK_Q16 : DRAPE_PACK_NONE;
    j->frame.packed = 0;
}

int draped_frame_pack(drape_buf *pk, float bbox[6], drape_timing *t, const drape_job *j, int format, int V,
                      drape_error *err)
{
    int64_t t0 = drape_now_ns();
    int rc = DRAPE_OK;
    if (j->frame.packed < 0) {
        rc = DRAPE_ENONFINITE;
    } else if (j->frame.packed) { /* the backend's bytes, the same as drape_pack's */
        memcpy(bbox, j->frame.bbox, sizeof j->frame.bbox);
        if (drape_buf_append(pk, j->frame.out, (size_t)V * 6)) rc = DRAPE_ENOMEM;
    } else {
        rc = drape_pack(pk, bbox, format, j->frame.out, V);
    }
    t->queue_us = (uint32_t)((j->t_start_ns - j->t_submit_ns) / 1000);
    t->compute_us = (uint32_t)((j->t_end_ns - j->t_start_ns) / 1000);
    t->pack_us = (uint32_t)((drape_now_ns() - t0) / 1000);
    if (rc == DRAPE_ENONFINITE)
        return drape_fail(err, rc, "the model's output for this pose is not finite (NaN or Inf); no frame");
    if (rc) return drape_fail(err, rc, "cannot pack the frame: %s", drape_strerror(rc));
    return 0;
}

void draped_frame_failed(draped_metrics *met, const drape_error *err)
{
    uint64_t n = COUNT(met->frames_failed) + 1;
    if (err->code == DRAPE_ENONFINITE) COUNT(met->frames_nonfinite);
    if (!(n & (n - 1))) LOG_WARN("frame not sent (%llu so far): %s", (unsigned long long)n, err->msg);
}
