/* The refine step: a post-step on module A's garment, per frame, for the
 * garments whose bundle config asks for it (docs/conventions.md, "The refine
 * step"). It pushes vertices out of the posed body and pulls edges toward
 * their rest lengths, anchored to the network's prediction p:
 *
 *   nn   = nearest posed-body vertex of each p_v
 *   iters times:  push(x, nn);  x_v ← (p_v + k Σ_{e=(v,u)} (x_u + l0_e d̂_vu)) / (1 + k deg_v)
 *   nn   = nearest posed-body vertex of each x_v;  push(x, nn)
 *
 * push moves x_v along the body normal n_b to n_b·(x_v − x_b) = margin
 * where it is less; d̂_vu = (x_v − x_u)/|x_v − x_u| (0 for coincident
 * vertices); l0 from the identity's retargeted rest g(β) (docs/design.md §2.3 step 1).
 * One Jacobi sweep of a projective mass-spring solve per iteration: every
 * vertex moves independently, so a GPU can run it as one kernel per sweep.
 * With the config's rho > 0, sweeps after the tenth are Chebyshev-
 * accelerated: x ← w (x̂ − x_prev) + x_prev, x_prev the previous sweep's
 * pushed input, w from rho (refine.c).
 * The plain reference is train/reference.py `refine`. */
#ifndef DRAPE_REFINE_H
#define DRAPE_REFINE_H

#include <stddef.h>

#include "model.h"

typedef struct drape_refine drape_refine;

/* with rho > 0, the sweeps after this many plain ones are accelerated (refine.c) */
#define DRAPE_REFINE_PLAIN_SWEEPS 10

/* What one identity (garment g, betas [S], validated) needs: the shaped
 * body, its joints and g(β)'s edge lengths. *out is NULL (and 0 returned)
 * when the model does not refine garment g. */
int drape_refine_create(drape_refine **out, const drape_model *m, int garment, const float *betas, drape_error *err);
void drape_refine_free(drape_refine *r);
size_t drape_refine_bytes(const drape_refine *r);

/* x [V,3]: frame t's world positions, refined in place; pose [72] and
 * trans [3] are frame t's. Returns 0 or DRAPE_ENOMEM (x then unchanged). */
int drape_refine_frame(const drape_refine *r, float *x, const float pose[DRAPE_POSE_DIM], const float trans[3],
                       drape_error *err);

/* An identity's tables and settings, for a backend that runs the step
 * itself (the CUDA backend: kernels/cuda/refine_bodies.h). Views into r. */
typedef struct {
    int iters;
    double k, margin, rho;
    const float *v_s;        /* [Nb,3] the shaped rest body */
    const double *l0, *inv;  /* [n_edges] rest lengths of g(β); [V] 1 / (1 + k deg_v) */
} drape_refine_view;
void drape_refine_view_get(const drape_refine *r, drape_refine_view *out);

#endif
