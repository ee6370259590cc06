/* Plain linear blend skinning of a garment through its virtual bones, on
 * the host, without a backend: module A's skinning baseline (docs/design.md
 * §2.4, last paragraph) computed exactly as the CPU backend's `lbs_only`
 * path does it, so the cloth engine (sim/) and the tools can skin a garment
 * without building a backend. */
#ifndef DRAPE_SKIN_H
#define DRAPE_SKIN_H

#include "model.h"

/* out [n,3] = x [n,3] + shapedirs[nn]·β (§2.3 step 1): points follow their
 * nearest body vertex; betas [S] */
void drape_retarget(float *out, const float *x, const int32_t *nn, int n, const drape_model *m, const float *betas);

/* out [T,V,3]: garment gi of the body shape betas [S] (validated, S values)
 * skinned to poses [T,75] (validated), in world space. Returns 0 or
 * DRAPE_ENOMEM. */
int drape_skin_lbs(float *out, const drape_model *m, int gi, const float *betas, const float *poses, int T,
                   drape_error *err);

#endif
