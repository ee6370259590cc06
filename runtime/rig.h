/* A garment brought into a bundle (`drape garment add`, docs/garments.md):
 * its rig, computed as train/assets.py garment_rig() computes the built-in
 * garments' (docs/design.md §2.2), the attach sets, and the measurements
 * the command refuses a mesh by.
 *
 * The rig: B virtual bones by farthest point sampling over the rest
 * vertices (starting at vertex 0, ties to the lower index); geodesic
 * distances from each bone along the mesh's edges (Dijkstra, float64); each
 * vertex's k nearest bones (ties to the lower bone, unreachable ones last)
 * with W0 ∝ exp(−d²/(2σ²)) normalized (all underflowed: all weight on the
 * nearest); body_nn and bone_body_nn the nearest rest-body vertex (squared
 * distance in float64, ties to the lower index); bone_joint_w the body's
 * skinning weights at bone_body_nn. */
#ifndef DRAPE_RIG_H
#define DRAPE_RIG_H

#include <stdint.h>

#include "../core/status.h"

#define DRAPE_RIG_SIGMA 0.05 /* W0's σ in meters (docs/design.md §2.2) */

typedef struct {
    int V, B, k;
    float *bones;          /* [B,3] */
    float *bone_joint_w;   /* [B,24] */
    int32_t *skin_idx;     /* [V,k] */
    float *skin_w0;        /* [V,k] */
    int32_t *body_nn;      /* [V] */
    int32_t *bone_body_nn; /* [B] */
} drape_rig;

/* rest [V,3] and faces [F,3] the garment on the rest body; body_v [Nb,3]
 * and body_w [Nb,24] the rest body's vertices and skinning weights. Needs
 * 1 <= k <= B <= V. */
int drape_rig_make(drape_rig *out, const float *rest, int V, const int32_t *faces, int F,
                           const float *body_v, const float *body_w, int Nb, int B, int k, double sigma,
                           drape_error *err);
void drape_rig_free(drape_rig *r);

/* ---- measurements a mesh is judged by ---- */

/* Edges of faces [F,3] shared by more than two faces; *n_edges the unique
 * edges. -1 (DRAPE_ENOMEM) on allocation failure. */
int drape_rig_nonmanifold(const int32_t *faces, int F, int *n_edges);

/* Rasterises the UV triangles at hu × wu texel centres (docs/design.md §2.5)
 * and counts the texels inside at least one face (*covered) and strictly
 * inside two or more (*twice: charts that overlap; neighbours sharing an
 * edge never count). Faces with |UV area| < 1e-12 are skipped, as the
 * runtime's raster skips them. */
int drape_rig_uv_overlap(const float *uv, const int32_t *uv_faces, int F, int hu, int wu, int64_t *covered,
                             int64_t *twice);

/* dist [V]: each vertex's distance in meters to the rest body's surface
 * (body_v [Nb,3], body_faces [Fb,3]). */
int drape_rig_body_distance(double *dist, const float *rest, int V, const float *body_v, int Nb,
                                const int32_t *body_faces, int Fb);

/* ---- attach sets (sorted vertex indices, malloc'ed) ---- */

/* train/assets.py attach_vertices(): the vertices within band of the
 * highest rest vertex (the waist of a skirt, the neckline of a dress). */
int drape_rig_attach_top(int32_t **out, int *n, const float *rest, int V, double band);
/* The vertices that rest on the shoulders: within band of the body's
 * surface, over body surface that faces up (the nearest body vertex's
 * normal has y >= 0.5), above the upper spine joint (SMPL 9) and between
 * the shoulder joints (16, 17) in x: the tops of the shoulders and the
 * base of the neck, not the arms. J_regressor [24,Nb] places the joints. */
int drape_rig_attach_shoulders(int32_t **out, int *n, const float *rest, int V, const float *body_v,
                               const float *J_regressor, int Nb, const int32_t *body_faces, int Fb, double band);

#endif
