/* What the motion harnesses (fuzz_bvh.c, fuzz_npz.c) check of an import:
 * a failure says why and returns nothing; a success is a pose sequence
 * every way in accepts (runtime/sequence.h's limits, so finite), within
 * the frame limit, with its source described. */
#ifndef DRAPE_FUZZ_MOTION_CHECK_H
#define DRAPE_FUZZ_MOTION_CHECK_H

#include <string.h>

#include "../runtime/motion.h"
#include "../runtime/sequence.h"
#include "fuzz.h"

static inline void fuzz_motion_check(int rc, drape_motion *m, const drape_error *err)
{
    if (rc) {
        FUZZ_CHECK(err->msg[0] && !m->poses && rc < 0);
        return;
    }
    FUZZ_CHECK(m->poses && m->frames >= 1 && m->frames <= DRAPE_MOTION_MAX_FRAMES);
    FUZZ_CHECK(m->source_frames >= 1 && m->source_fps >= DRAPE_MOTION_MIN_FPS && m->fps > 0);
    FUZZ_CHECK(m->mapped >= 1 && m->mapped <= 24 && m->skeleton[0] && m->units[0]);
    drape_error e = {0};
    FUZZ_CHECK(drape_poses_check(m->poses, m->frames, NULL, &e) == 0);
    /* every rotation is a log map's: at most half a turn */
    for (int t = 0; t < m->frames; t++)
        for (int k = 0; k < 24; k++) {
            const float *a = m->poses + 75 * t + 3 * k;
            FUZZ_CHECK(a[0] * a[0] + a[1] * a[1] + a[2] * a[2] <= 3.1416f * 3.1416f);
        }
    drape_motion_free(m);
}

#endif
