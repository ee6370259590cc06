/* Body model and forward kinematics (docs/design.md §2.1).
 * Transforms are 3×4 row-major [R | t] (12 floats). */
#ifndef DRAPE_BODY_H
#define DRAPE_BODY_H

#include "model.h"

/* v_s [Nb,3] = v_template + shapedirs·β (betas [S], missing ones zero) and
 * joints J [24,3] = J_regressor·v_s. v_s may be NULL when only J is needed
 * (it is still computed internally). */
int drape_body_shape(float *v_s, float *J, const drape_model *m, const float *betas);

/* R [3×3 row-major] = rodrigues(aa) (conventions.md: float64 inside) */
void drape_rodrigues(float R[9], const float aa[3]);

/* Skinning transforms A [24,12] of one pose (72 axis-angle) + trans [3]. */
void drape_fk(float A[DRAPE_JOINTS * 12], const float pose[DRAPE_POSE_DIM], const float trans[3],
              const float J[DRAPE_JOINTS * 3], const int32_t parents[DRAPE_JOINTS]);

/* Posed body v [Nb,3] = Σ_k weights[i,k] A_k v_s[i] (linear blend skinning of
 * the shaped rest body v_s [Nb,3] with the transforms A [24,12] of drape_fk;
 * no pose correctives, docs/design.md §2.1). */
void drape_body_pose(float *v, const drape_model *m, const float *v_s, const float A[DRAPE_JOINTS * 12]);

/* Heading frame H = [R_y(ψ) | J_0 + trans] as a 3×4 transform. */
void drape_heading(float H[12], const float pose[DRAPE_POSE_DIM], const float trans[3], const float J0[3]);

/* out = a ∘ b (3×4 transforms) */
void drape_tf_compose(float out[12], const float a[12], const float b[12]);
/* out = a⁻¹ for a rigid a */
void drape_tf_inverse_rigid(float out[12], const float a[12]);
/* y = a x */
void drape_tf_apply(float y[3], const float a[12], const float x[3]);

#endif
