/* The UV atlas tables of docs/design.md §2.5, built once per garment at load. */
#ifndef DRAPE_UVMAP_H
#define DRAPE_UVMAP_H

#include <stdint.h>

#include "model.h"

/* texel_face [Hu*Wu] (−1 empty), texel_bary [Hu*Wu,3]: texel (i,j) has centre
 * ((j+.5)/Wu, (i+.5)/Hu) and belongs to the lowest-numbered face whose UV
 * triangle contains it (all λ ≥ −1e-6, computed in double). */
void drape_uv_raster(int32_t *texel_face, float *texel_bary, const float *uv, const int32_t *uv_faces,
                     int F, int Hu, int Wu);

/* The texel walk both the raster and `drape garment add`'s overlap check
 * use, so they agree on what a face covers: visit(ctx, t, λa, λb, λc) for
 * each texel t = i*Wu + j near UV triangle (a, b, c) whose centre has all
 * λ ≥ −1e-6 (in double); nothing for a triangle degenerate in UV. */
typedef void (*drape_uv_visit)(void *ctx, int t, double la, double lb, double lc);
void drape_uv_face_texels(const float *a, const float *b, const float *c, int Hu, int Wu, drape_uv_visit visit,
                          void *ctx);

/* Fills the derived tables of g (raster, covered list, UV copies, conv spans)
 * for the model's uv_size and conv depth. */
int drape_garment_prepare(drape_garment *g, const drape_config *cfg);
void drape_garment_release(drape_garment *g);

/* Bilinear taps of docs/design.md §2.4 step 9 for a UV point: texel indices (row-major
 * i*Wu+j) and weights, in the order (y0,x0) (y0,x1) (y1,x0) (y1,x1). */
void drape_uv_taps(int32_t idx[4], float w[4], float u, float v, int Hu, int Wu);

#endif
