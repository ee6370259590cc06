/* A garment mesh with its UV atlas, read from the files people have
 * (`drape garment add`, docs/garments.md): Wavefront OBJ or binary glTF.
 *
 * OBJ: `v x y z`, `vt u v`, `f a/ta b/tb c/tc ...` (also `a/ta/na`;
 * negative indices count back; polygons are split into a fan); other lines
 * are ignored. Every face corner needs a `vt`. Vertices are kept in the
 * file's order (0-based), so an attach file's indices are the `v` lines';
 * only the `vt` entries faces use are kept.
 *
 * GLB (glTF 2.0, binary, one buffer in the file): every triangle primitive
 * of the first mesh, POSITION and TEXCOORD_0 as float; indices of any
 * unsigned width or none. glTF splits a vertex along a UV seam: vertices at
 * the same position (to the bit) are welded into one, in the order of their
 * first appearance, and keep one UV per chart. glTF's v runs down the image:
 * v is flipped (1 − v) so that a mesh exported from the same scene to OBJ
 * and to glTF gives the same atlas. Refused: .gltf with external buffers,
 * sparse accessors, other component types, a node that moves the mesh (a
 * transform to apply before export). */
#ifndef DRAPE_GARMENT_MESH_H
#define DRAPE_GARMENT_MESH_H

#include <stdint.h>

#include "../core/status.h"

/* what the readers accept at most, before the command's own limits */
#define DRAPE_GMESH_MAX_VERTICES (1 << 22)
#define DRAPE_GMESH_MAX_FACES (1 << 23)
#define DRAPE_GMESH_MAX_BYTES (1u << 30)
#define DRAPE_GMESH_MAX_COORD 1e4 /* |x| in meters; a garment is a few meters across at most */

typedef struct {
    int V, F, Nuv;
    float *v;          /* [V,3] */
    int32_t *faces;    /* [F,3] */
    float *uv;         /* [Nuv,2] */
    int32_t *uv_faces; /* [F,3]; NULL when the file has no UVs (Nuv 0) */
} drape_gmesh;

/* By content: a file starting "glTF" is GLB, anything else OBJ. A mesh
 * without UVs is returned with Nuv 0 (the caller refuses it by name). */
int drape_gmesh_read(drape_gmesh *out, const char *path, drape_error *err);
/* From memory (tests, fuzzing); takes no ownership. */
int drape_gmesh_parse(drape_gmesh *out, const unsigned char *buf, size_t len, const char *path, drape_error *err);
void drape_gmesh_free(drape_gmesh *m);

#endif
