#include "uvmap.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../core/kinematics.h"

void drape_uv_face_texels(const float *a, const float *b, const float *c, int Hu, int Wu, drape_uv_visit visit,
                          void *ctx)
{
    double abx = (double)b[0] - a[0], aby = (double)b[1] - a[1];
    double acx = (double)c[0] - a[0], acy = (double)c[1] - a[1];
    double det = abx * acy - aby * acx;
    if (fabs(det) < 1e-12) return; /* degenerate in UV: covers nothing */
    double umin = fmin(a[0], fmin(b[0], c[0])), umax = fmax(a[0], fmax(b[0], c[0]));
    double vmin = fmin(a[1], fmin(b[1], c[1])), vmax = fmax(a[1], fmax(b[1], c[1]));
    int j0 = (int)floor(umin * Wu - 0.5) - 1, j1 = (int)ceil(umax * Wu - 0.5) + 1;
    int i0 = (int)floor(vmin * Hu - 0.5) - 1, i1 = (int)ceil(vmax * Hu - 0.5) + 1;
    if (j0 < 0) j0 = 0;
    if (i0 < 0) i0 = 0;
    if (j1 > Wu - 1) j1 = Wu - 1;
    if (i1 > Hu - 1) i1 = Hu - 1;
    for (int i = i0; i <= i1; i++)
        for (int j = j0; j <= j1; j++) {
            double px = (j + 0.5) / Wu - a[0], py = (i + 0.5) / Hu - a[1];
            double lb = (px * acy - py * acx) / det;
            double lc = (abx * py - aby * px) / det;
            double la = 1.0 - lb - lc;
            if (la < -1e-6 || lb < -1e-6 || lc < -1e-6) continue;
            visit(ctx, i * Wu + j, la, lb, lc);
        }
}

typedef struct {
    int32_t *face;
    float *bary;
    int f;
} raster_ctx;

static void raster_visit(void *ctx, int t, double la, double lb, double lc)
{
    raster_ctx *r = ctx;
    if (r->face[t] >= 0) return; /* a lower face already owns it */
    r->face[t] = r->f;
    r->bary[3 * t] = (float)la;
    r->bary[3 * t + 1] = (float)lb;
    r->bary[3 * t + 2] = (float)lc;
}

void drape_uv_raster(int32_t *texel_face, float *texel_bary, const float *uv, const int32_t *uv_faces,
                     int F, int Hu, int Wu)
{
    for (int t = 0; t < Hu * Wu; t++) texel_face[t] = -1;
    memset(texel_bary, 0, (size_t)Hu * Wu * 3 * sizeof *texel_bary);
    raster_ctx r = {texel_face, texel_bary, 0};
    for (r.f = 0; r.f < F; r.f++)
        drape_uv_face_texels(uv + 2 * uv_faces[3 * r.f], uv + 2 * uv_faces[3 * r.f + 1], uv + 2 * uv_faces[3 * r.f + 2],
                             Hu, Wu, raster_visit, &r);
}

void drape_uv_taps(int32_t idx[4], float w[4], float u, float v, int Hu, int Wu)
{
    hd_uv_taps(idx, w, u, v, Hu, Wu); /* the CUDA kernels' body, plain C here */
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

/* Distinct (vertex, uv) pairs of the face corners, as CSR over vertices. */
static int build_copies(drape_garment *g)
{
    int n = 3 * g->F;
    int64_t *keys = malloc((size_t)(n + 1) * sizeof *keys);
    g->copy_start = calloc((size_t)g->V + 1, sizeof *g->copy_start);
    if (!keys || !g->copy_start) { free(keys); return DRAPE_ENOMEM; }
    for (int i = 0; i < n; i++) keys[i] = ((int64_t)g->faces[i] << 32) | (uint32_t)g->uv_faces[i];
    qsort(keys, (size_t)n, sizeof *keys, cmp_i64);
    int m = 0;
    for (int i = 0; i < n; i++)
        if (i == 0 || keys[i] != keys[i - 1]) keys[m++] = keys[i];
    g->copy_uv = malloc((size_t)(m + 1) * sizeof *g->copy_uv);
    if (!g->copy_uv) { free(keys); return DRAPE_ENOMEM; }
    for (int i = 0; i < m; i++) {
        g->copy_uv[i] = (int32_t)(keys[i] & 0xffffffff);
        g->copy_start[(keys[i] >> 32) + 1]++;
    }
    for (int v = 0; v < g->V; v++) g->copy_start[v + 1] += g->copy_start[v];
    free(keys);
    return DRAPE_OK;
}

/* The needed texels of a layer as runs: maximal row segments, in flat
 * positions of the padded map (so a run never touches the border). */
static int mask_to_spans(drape_span **spans, int *n, int64_t *active, const unsigned char *mask, int Hu, int Wu)
{
    int pw = Wu + 2, cap = 0;
    for (int i = 0; i < Hu; i++)
        for (int j = 0; j < Wu; j++) cap += mask[i * Wu + j] && (j == 0 || !mask[i * Wu + j - 1]);
    *spans = malloc((size_t)(cap + 1) * sizeof **spans);
    if (!*spans) return DRAPE_ENOMEM;
    *n = 0;
    *active = 0;
    for (int i = 0; i < Hu; i++)
        for (int j = 0; j < Wu; j++) {
            if (!mask[i * Wu + j]) continue;
            int j1 = j;
            while (j1 < Wu && mask[i * Wu + j1]) j1++;
            int p = (i + 1) * pw + (j + 1);
            (*spans)[(*n)++] = (drape_span){p, p + (j1 - j)};
            *active += j1 - j;
            j = j1;
        }
    return DRAPE_OK;
}

static void dilate(unsigned char *dst, const unsigned char *src, int Hu, int Wu)
{
    for (int i = 0; i < Hu; i++)
        for (int j = 0; j < Wu; j++) {
            unsigned char m = 0;
            for (int di = -1; di <= 1 && !m; di++)
                for (int dj = -1; dj <= 1 && !m; dj++) {
                    int y = i + di, x = j + dj;
                    if (y >= 0 && y < Hu && x >= 0 && x < Wu) m = src[y * Wu + x];
                }
            dst[i * Wu + j] = m;
        }
}

/* Which texels each conv layer must compute so that the bilinear samples of
 * the last layer are exact: the taps of every UV copy, dilated by one texel
 * per layer going backwards. Everything else is skipped: a needed texel only
 * ever reads needed texels of the layer before, or the zero border. */
static int build_spans(drape_garment *g, const drape_config *cfg)
{
    int Hu = cfg->uv_h, Wu = cfg->uv_w, L = cfg->n_conv;
    unsigned char *a = calloc((size_t)Hu * Wu, 1), *b = calloc((size_t)Hu * Wu, 1);
    int rc = DRAPE_ENOMEM;
    if (!a || !b) goto out;
    for (int c = 0; c < g->copy_start[g->V]; c++) {
        int32_t idx[4];
        float w[4];
        const float *uv = g->uv + 2 * g->copy_uv[c];
        drape_uv_taps(idx, w, uv[0], uv[1], Hu, Wu);
        for (int t = 0; t < 4; t++) a[idx[t]] = 1;
    }
    for (int l = L; l >= 0; l--) {
        if ((rc = mask_to_spans(&g->spans[l], &g->n_spans[l], &g->active_texels[l], a, Hu, Wu))) goto out;
        if (l > 0) {
            dilate(b, a, Hu, Wu);
            unsigned char *t = a; a = b; b = t;
        }
    }
    rc = DRAPE_OK;
out:
    free(a);
    free(b);
    return rc;
}

int drape_garment_prepare(drape_garment *g, const drape_config *cfg)
{
    int Hu = cfg->uv_h, Wu = cfg->uv_w;
    size_t T = (size_t)Hu * Wu;
    g->texel_face = malloc(T * sizeof *g->texel_face);
    g->texel_bary = malloc(T * 3 * sizeof *g->texel_bary);
    if (!g->texel_face || !g->texel_bary) return DRAPE_ENOMEM;
    drape_uv_raster(g->texel_face, g->texel_bary, g->uv, g->uv_faces, g->F, Hu, Wu);
    g->n_cov = 0;
    for (size_t t = 0; t < T; t++) g->n_cov += g->texel_face[t] >= 0;
    g->cov_texel = malloc(((size_t)g->n_cov + 1) * sizeof *g->cov_texel);
    if (!g->cov_texel) return DRAPE_ENOMEM;
    for (size_t t = 0, n = 0; t < T; t++)
        if (g->texel_face[t] >= 0) g->cov_texel[n++] = (int32_t)t;
    int rc = build_copies(g);
    return rc ? rc : build_spans(g, cfg);
}

void drape_garment_release(drape_garment *g)
{
    free(g->edges);
    free(g->texel_face);
    free(g->texel_bary);
    free(g->cov_texel);
    free(g->copy_start);
    free(g->copy_uv);
    for (int l = 0; l <= DRAPE_MAX_CONV; l++) free(g->spans[l]);
}
