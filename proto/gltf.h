/* Binary glTF 2.0 (.glb) for a garment's render topology: one mesh, one
 * triangle primitive with POSITION (with min/max), optional NORMAL and
 * TEXCOORD_0, and uint32 indices; what three.js's GLTFLoader opens. */
#ifndef DRAPE_GLTF_H
#define DRAPE_GLTF_H

#include <stdint.h>

#include "buf.h"

/* Appends a .glb to out. pos [n,3], uv [n,2] or NULL, normals [n,3] or NULL,
 * faces [n_faces,3] indexing 0..n-1, name (the mesh and node name) or NULL.
 * DRAPE_EINVAL for empty input, a face index out of range or a name that is
 * not UTF-8; DRAPE_ENONFINITE for NaN/Inf; out is left as it was on failure. */
int drape_gltf_write(drape_buf *out, const float *pos, int n_vertices, const float *uv /*[n,2] or NULL*/,
                     const float *normals /*or NULL*/, const int32_t *faces, int n_faces, const char *name);

#endif
