/* Garment quality metrics (docs/design.md §4), shared by `drape metrics`, the
 * server and training: frames are added one at a time and the summary is the
 * per-sequence mean. Definitions in docs/conventions.md ("Garment metrics").
 *
 *   edge error     mean over edges of |l − l0| / l0
 *   area error     mean over triangles of |A − A0| / A0
 *   collision      % of garment vertices with n_b·(x − x_b) < 0, x_b the
 *                  nearest body vertex and n_b its normal
 *   stretch        Σ_f A0 (μ tr(E²) + λ/2 tr(E)²), E the Green strain (StVK)
 *   bending        Σ_e k_b/2 · 3 l0² / (A1 + A2) · (θ − θ0)², θ the dihedral angle
 *   inertia        Σ_v m/(2h²) |x_t − 2x_{t−1} + x_{t−2}|², frames t >= 2
 *   gravity        Σ_v m g y
 * with m = density · area / 3 at rest and h = 1/fps; energies in J. */
#ifndef DRAPE_METRICS_H
#define DRAPE_METRICS_H

#include <stdint.h>

#include "../core/status.h"

typedef struct {
    double mu, lambda;  /* StVK Lamé pair, N/m (thickness folded in) */
    double bending;     /* k_b, J */
    double density;     /* kg/m² */
    double gravity;     /* m/s² along −y */
    double fps;
} drape_metrics_material;

/* HOOD-style cloth (docs/conventions.md); fps from the model */
drape_metrics_material drape_metrics_default_material(double fps);

typedef struct {
    int frames;
    double edge_error, area_error, collision_pct;
    double stretch, bending, inertia, gravity; /* mean per frame (inertia over frames >= 2) */
    int has_ref;
    double ref_mean, ref_max;                  /* m, over all frames and vertices */
} drape_metrics_summary;

typedef struct drape_metrics drape_metrics;

/* rest [V,3] (the garment at rest, e.g. g(β)), faces [F,3]; the body's
 * faces [Fb,3] over Nb vertices (body_faces NULL: no collision metric). */
int drape_metrics_create(drape_metrics **out, const float *rest, int V, const int32_t *faces, int F,
                         const int32_t *body_faces, int Fb, int Nb, const drape_metrics_material *mat,
                         drape_error *err);
void drape_metrics_free(drape_metrics *mx);

/* One frame: x [V,3]; body [Nb,3] the posed body (NULL: skipped); ref [V,3]
 * the reference (NULL: none; give it for every frame or for none). */
int drape_metrics_add(drape_metrics *mx, const float *x, const float *body, const float *ref, drape_error *err);

void drape_metrics_get(const drape_metrics *mx, drape_metrics_summary *out);

#endif
