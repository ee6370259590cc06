/* Triangle-mesh helpers shared by the loader and module B. */
#ifndef DRAPE_MESH_H
#define DRAPE_MESH_H

#include <stdint.h>

/* Unique undirected edges (i < j, sorted) of faces [F,3]; *edges is malloc'ed
 * [n,2]. Returns 0 or DRAPE_ENOMEM. */
int drape_mesh_edges(int32_t **edges, int *n, const int32_t *faces, int F);

/* normals [V,3]: normalized sum of adjacent faces' (v1−v0)×(v2−v0); zero when
 * the sum is zero. */
void drape_mesh_normals(float *normals, const float *v, int V, const int32_t *faces, int F);

#endif
