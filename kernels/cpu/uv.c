/* UV-stage gathers and samples (docs/design.md §2.4 steps 7 and 9). */
#include <string.h>

#include "../../runtime/uvmap.h"
#include "ops.h"

static void texel_point(float out[3], const drape_garment *g, const float *p, int t)
{
    const int32_t *f = g->faces + 3 * g->texel_face[t];
    const float *l = g->texel_bary + 3 * t;
    for (int d = 0; d < 3; d++) out[d] = l[0] * p[3 * f[0] + d] + l[1] * p[3 * f[1] + d] + l[2] * p[3 * f[2] + d];
}

void cpu_uv_input(float *map, const drape_garment *g, const float *p, const float *F_cov, const float *phi,
                  int d_f, int d_phi, int Hu, int Wu)
{
    int pw = Wu + 2, C = 3 + d_f + d_phi + 1;
    (void)Hu;
    /* zero the spans, then fill covered texels (cov_texel is ascending) */
    for (int s = 0; s < g->n_spans[0]; s++)
        memset(map + (size_t)g->spans[0][s].begin * C, 0,
               (size_t)(g->spans[0][s].end - g->spans[0][s].begin) * C * sizeof *map);
    for (int c = 0; c < g->n_cov; c++) {
        int t = g->cov_texel[c], i = t / Wu, j = t % Wu;
        float *x = map + ((size_t)(i + 1) * pw + (j + 1)) * C;
        texel_point(x, g, p, t);
        memcpy(x + 3, F_cov + (size_t)c * d_f, (size_t)d_f * sizeof *x);
        memcpy(x + 3 + d_f, phi, (size_t)d_phi * sizeof *x);
        x[C - 1] = 1.0f;
    }
}

void cpu_uv_sample(float *delta, const drape_garment *g, const float *map, int Hu, int Wu)
{
    int pw = Wu + 2;
    for (int v = 0; v < g->V; v++) {
        float acc[3] = {0, 0, 0};
        int n = g->copy_start[v + 1] - g->copy_start[v];
        for (int c = g->copy_start[v]; c < g->copy_start[v + 1]; c++) {
            const float *uv = g->uv + 2 * g->copy_uv[c];
            int32_t idx[4];
            float w[4];
            drape_uv_taps(idx, w, uv[0], uv[1], Hu, Wu);
            for (int t = 0; t < 4; t++) {
                const float *m = map + ((size_t)(idx[t] / Wu + 1) * pw + (idx[t] % Wu + 1)) * 3;
                for (int d = 0; d < 3; d++) acc[d] += w[t] * m[d];
            }
        }
        for (int d = 0; d < 3; d++) delta[3 * v + d] = n ? acc[d] / (float)n : 0.0f;
    }
}
