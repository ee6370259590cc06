#include "mesh.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "status.h"

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

int drape_mesh_edges(int32_t **edges, int *n, const int32_t *faces, int F)
{
    int64_t *keys = malloc((size_t)(3 * F + 1) * sizeof *keys);
    if (!keys) return DRAPE_ENOMEM;
    for (int f = 0; f < F; f++)
        for (int c = 0; c < 3; c++) {
            int64_t a = faces[3 * f + c], b = faces[3 * f + (c + 1) % 3];
            keys[3 * f + c] = a < b ? (a << 32) | b : (b << 32) | a;
        }
    qsort(keys, (size_t)3 * F, sizeof *keys, cmp_i64);
    int m = 0;
    for (int i = 0; i < 3 * F; i++)
        if (i == 0 || keys[i] != keys[i - 1]) keys[m++] = keys[i];
    int32_t *e = malloc((size_t)(2 * m + 1) * sizeof *e);
    if (!e) { free(keys); return DRAPE_ENOMEM; }
    for (int i = 0; i < m; i++) {
        e[2 * i] = (int32_t)(keys[i] >> 32);
        e[2 * i + 1] = (int32_t)(keys[i] & 0xffffffff);
    }
    free(keys);
    *edges = e;
    *n = m;
    return DRAPE_OK;
}

void drape_mesh_normals(float *normals, const float *v, int V, const int32_t *faces, int F)
{
    double *acc = calloc((size_t)3 * V + 1, sizeof *acc);
    if (!acc) { memset(normals, 0, (size_t)3 * V * sizeof *normals); return; }
    for (int f = 0; f < F; f++) {
        const float *a = v + 3 * faces[3 * f], *b = v + 3 * faces[3 * f + 1], *c = v + 3 * faces[3 * f + 2];
        float e1[3] = {b[0] - a[0], b[1] - a[1], b[2] - a[2]};
        float e2[3] = {c[0] - a[0], c[1] - a[1], c[2] - a[2]};
        float n[3] = {e1[1] * e2[2] - e1[2] * e2[1], e1[2] * e2[0] - e1[0] * e2[2], e1[0] * e2[1] - e1[1] * e2[0]};
        for (int c2 = 0; c2 < 3; c2++)
            for (int d = 0; d < 3; d++) acc[3 * faces[3 * f + c2] + d] += n[d];
    }
    for (int i = 0; i < V; i++) {
        double l = sqrt(acc[3 * i] * acc[3 * i] + acc[3 * i + 1] * acc[3 * i + 1] + acc[3 * i + 2] * acc[3 * i + 2]);
        for (int d = 0; d < 3; d++) normals[3 * i + d] = l > 0 ? (float)(acc[3 * i + d] / l) : 0.0f;
    }
    free(acc);
}
