#include "geom.h"

#include <math.h>
#include <stdlib.h>

#include "status.h"

#define GRID_MAX_CELLS (1 << 21)

static int grow32(int32_t **p, int64_t *cap, int64_t need)
{
    if (need <= *cap) return 0;
    int64_t c = need + need / 2 + 16;
    int32_t *q = realloc(*p, (size_t)c * sizeof *q);
    if (!q) return -1;
    *p = q;
    *cap = c;
    return 0;
}

static void cell_range(const drape_grid *g, const double lo[3], const double hi[3], int a[3], int b[3])
{
    for (int d = 0; d < 3; d++) {
        double u = floor((lo[d] - g->lo[d]) / g->cell), v = floor((hi[d] - g->lo[d]) / g->cell);
        a[d] = !(u >= 0) ? 0 : u >= g->dim[d] ? g->dim[d] - 1 : (int)u; /* NaN: cell 0 */
        b[d] = !(v >= 0) ? 0 : v >= g->dim[d] ? g->dim[d] - 1 : (int)v;
    }
}

int drape_grid_build(drape_grid *g, const double *lo, const double *hi, int n, double cell)
{
    double blo[3] = {INFINITY, INFINITY, INFINITY}, bhi[3] = {-INFINITY, -INFINITY, -INFINITY};
    for (int i = 0; i < n; i++)
        for (int d = 0; d < 3; d++) { /* fmin and fmax, NaN passed over as they pass it, without their calls */
            double l = lo[3 * i + d], h = hi[3 * i + d];
            blo[d] = l < blo[d] ? l : blo[d], bhi[d] = h > bhi[d] ? h : bhi[d];
        }
    if (n == 0)
        for (int d = 0; d < 3; d++) blo[d] = bhi[d] = 0;
    for (int d = 0; d < 3; d++) /* a span of finite ends can still overflow (-1e308 .. 1e308) */
        if (!isfinite(blo[d]) || !isfinite(bhi[d]) || !isfinite(bhi[d] - blo[d])) return DRAPE_ERANGE;
    if (!(cell > 0)) return DRAPE_EINVAL;
    /* coarser cells until the grid is of a sane size; the dimensions are
     * counted in double so that any finite span (1e12 m from a hostile pose)
     * ends here rather than overflowing an int */
    for (;;) {
        double cells = 1;
        for (int d = 0; d < 3; d++) cells *= floor((bhi[d] - blo[d]) / cell) + 1;
        if (cells <= GRID_MAX_CELLS) break;
        cell *= cells > 1e6 * GRID_MAX_CELLS ? cbrt(cells / GRID_MAX_CELLS) : 1.5;
    }
    for (int d = 0; d < 3; d++) g->dim[d] = (int)floor((bhi[d] - blo[d]) / cell) + 1;
    for (int d = 0; d < 3; d++) g->lo[d] = blo[d];
    g->cell = cell;
    int64_t cells = (int64_t)g->dim[0] * g->dim[1] * g->dim[2];
    if (grow32(&g->start, &g->cap_cells, cells + 1) || grow32(&g->range, &g->cap_range, (int64_t)n * 6 + 1))
        return DRAPE_ENOMEM;
    g->n = n;
    for (int64_t c = 0; c <= cells; c++) g->start[c] = 0;
    int64_t total = 0;
    for (int pass = 0; pass < 2; pass++) {
        for (int i = 0; i < n; i++) {
            int32_t *a = g->range + 6 * (int64_t)i, *b = a + 3; /* the second pass reads the first's */
            if (pass == 0) cell_range(g, lo + 3 * i, hi + 3 * i, a, b);
            for (int z = a[2]; z <= b[2]; z++)
                for (int y = a[1]; y <= b[1]; y++)
                    for (int x = a[0]; x <= b[0]; x++) {
                        int64_t c = ((int64_t)z * g->dim[1] + y) * g->dim[0] + x;
                        if (pass == 0) g->start[c + 1]++;
                        else g->items[g->start[c]++] = i; /* start[c] is the fill cursor */
                    }
        }
        if (pass == 0) {
            /* the (box, cell) pairs index items as int32: counted in 64 bits */
            for (int64_t c = 0; c < cells; c++) {
                total += g->start[c + 1];
                if (total > INT32_MAX - 1) return DRAPE_ERANGE;
                g->start[c + 1] = (int32_t)total;
            }
            if (grow32(&g->items, &g->cap_items, total + 1)) return DRAPE_ENOMEM;
        }
    }
    for (int64_t c = cells; c > 0; c--) g->start[c] = g->start[c - 1]; /* cursors ended at the next start */
    g->start[0] = 0;
    return DRAPE_OK;
}

int drape_grid_keep_boxes(drape_grid *g, const double *lo, const double *hi)
{
    int64_t total = g->start[(int64_t)g->dim[0] * g->dim[1] * g->dim[2]];
    if (total * 6 > g->cap_ibox) {
        float *p = realloc(g->ibox, (size_t)(total * 6 + 1) * sizeof *p);
        if (!p) return DRAPE_ENOMEM;
        g->ibox = p, g->cap_ibox = total * 6 + 1;
    }
    int64_t cells = (int64_t)g->dim[0] * g->dim[1] * g->dim[2];
    if (cells * 6 > g->cap_cbox) {
        float *p = realloc(g->cbox, (size_t)(cells * 6 + 1) * sizeof *p);
        if (!p) return DRAPE_ENOMEM;
        g->cbox = p, g->cap_cbox = cells * 6 + 1;
    }
    if ((int64_t)g->n * 6 > g->cap_nbox) {
        float *p = realloc(g->nbox, (size_t)g->n * 6 * sizeof *p + sizeof *p);
        if (!p) return DRAPE_ENOMEM;
        g->nbox = p, g->cap_nbox = (int64_t)g->n * 6 + 1;
    }
    /* each box rounded once, then copied to every cell it is in */
    for (int i = 0; i < g->n; i++) {
        const double *a = lo + 3 * (int64_t)i, *b = hi + 3 * (int64_t)i;
        float *o = g->nbox + 6 * (int64_t)i;
        for (int d = 0; d < 3; d++) {
            float l = (float)a[d], h = (float)b[d];
            o[d] = l > a[d] ? nextafterf(l, -INFINITY) : l; /* outward: the box only grows */
            o[3 + d] = h < b[d] ? nextafterf(h, INFINITY) : h;
        }
    }
    for (int64_t k = 0; k < cells; k++) {
        float *u = g->cbox + 6 * k;
        for (int d = 0; d < 3; d++) u[d] = INFINITY, u[3 + d] = -INFINITY;
        for (int32_t q = g->start[k]; q < g->start[k + 1]; q++) {
            const float *src = g->nbox + 6 * (int64_t)g->items[q];
            float *o = g->ibox + 6 * (int64_t)q;
            for (int d = 0; d < 6; d++) o[d] = src[d];
            for (int d = 0; d < 3; d++)
                u[d] = o[d] < u[d] ? o[d] : u[d], u[3 + d] = o[3 + d] > u[3 + d] ? o[3 + d] : u[3 + d];
        }
    }
    return DRAPE_OK;
}

/* squared distance from t to [lo, hi], each side's gap rounded as the
 * caller's double test rounds it (so never more than that test's) */
static inline double gap2(double lo, double hi, double t)
{
    double e = lo - t > t - hi ? lo - t : t - hi;
    return e > 0 ? e * e : 0;
}

/* an item box's (or a cell's) squared gap to p, from its float copy */
static inline double box_gap2f(const float o[6], const double p[3])
{
    return gap2(o[0], o[3], p[0]) + gap2(o[1], o[4], p[1]) + gap2(o[2], o[5], p[2]);
}

/* The cells overlapping [lo, hi] in order, each's items in order; with p,
 * those (cells, then items) at least *best from it are skipped. */
static void grid_walk(const drape_grid *g, const double lo[3], const double hi[3], const double p[3],
                      const double *best, void (*visit)(void *, int), void *ctx)
{
    int a[3], b[3];
    cell_range(g, lo, hi, a, b);
    for (int z = a[2]; z <= b[2]; z++)
        for (int y = a[1]; y <= b[1]; y++)
            for (int x = a[0]; x <= b[0]; x++) {
                int64_t c = ((int64_t)z * g->dim[1] + y) * g->dim[0] + x;
                if (p && box_gap2f(g->cbox + 6 * c, p) >= *best) continue; /* an empty cell's gap is infinite */
                for (int32_t q = g->start[c]; q < g->start[c + 1]; q++)
                    if (!p || box_gap2f(g->ibox + 6 * (int64_t)q, p) < *best) visit(ctx, g->items[q]);
            }
}

void drape_grid_visit_near(const drape_grid *g, const double lo[3], const double hi[3], const double p[3],
                           const double *best, void (*visit)(void *, int), void *ctx)
{
    grid_walk(g, lo, hi, p, best, visit, ctx);
}

int64_t drape_grid_first_cell(const drape_grid *g, const double lo[3], const double hi[3], const double qlo[3],
                              const double qhi[3])
{
    int a[3], b[3], qa[3], qb[3], c[3];
    cell_range(g, lo, hi, a, b);
    cell_range(g, qlo, qhi, qa, qb);
    for (int d = 0; d < 3; d++) {
        c[d] = a[d] > qa[d] ? a[d] : qa[d];
        if (c[d] > b[d] || c[d] > qb[d]) return -1;
    }
    return ((int64_t)c[2] * g->dim[1] + c[1]) * g->dim[0] + c[0];
}

void drape_grid_free(drape_grid *g)
{
    free(g->start);
    free(g->items);
    free(g->ibox);
    free(g->cbox);
    free(g->range);
    free(g->nbox);
    *g = (drape_grid){0};
}

void drape_grid_visit(const drape_grid *g, const double lo[3], const double hi[3], void (*visit)(void *, int),
                      void *ctx)
{
    grid_walk(g, lo, hi, NULL, NULL, visit, ctx);
}

typedef struct { const double *pts, *p; double best; int idx; } near_query;

static void visit_point(void *ctx, int i)
{
    near_query *q = ctx;
    double d[3] = {q->p[0] - q->pts[3 * i], q->p[1] - q->pts[3 * i + 1], q->p[2] - q->pts[3 * i + 2]};
    double r = d[0] * d[0] + d[1] * d[1] + d[2] * d[2];
    if (r < q->best || (r == q->best && i < q->idx)) q->best = r, q->idx = i;
}

/* a hit within the box's half width is the nearest (every closer point lies
 * in the box); the box doubles until one is */
int drape_grid_nearest(const drape_grid *g, const double *pts, const double p[3])
{
    for (double r = g->cell;; r *= 2) {
        near_query q = {pts, p, INFINITY, -1};
        double lo[3] = {p[0] - r, p[1] - r, p[2] - r}, hi[3] = {p[0] + r, p[1] + r, p[2] + r};
        drape_grid_visit(g, lo, hi, visit_point, &q);
        if (q.idx >= 0 && q.best <= r * r) return q.idx;
        if (r > 1e6) return q.idx; /* past any finite grid: the whole grid was visited */
    }
}

/* squared distance from t to the interval [lo, lo + w] */
static inline double gap(double lo, double w, double t)
{
    double d = t < lo ? lo - t : t > lo + w ? t - lo - w : 0;
    return d * d;
}

/* Exact: every point nearer than the hint lies in the box of half width
 * |p − hint| around p; cells farther than the best so far are skipped.
 * A hint far away (a wild pose's garment leaves its rest-time body vertex
 * behind) would make that box large, so boxes doubling from two cells look
 * near p first: the work then follows the distance to the nearest point,
 * not to the hint. Each cell looked at costs one unit of the budget. */
int drape_grid_nearest_hint(const drape_grid *g, const double *pts, const double p[3], int hint, int64_t *budget)
{
    int64_t unbounded = INT64_MAX, *left = budget ? budget : &unbounded;
    const double *h = pts + 3 * hint;
    double best = (p[0] - h[0]) * (p[0] - h[0]) + (p[1] - h[1]) * (p[1] - h[1]) + (p[2] - h[2]) * (p[2] - h[2]);
    int idx = hint;
    for (double s = 2 * g->cell; s * s < best && *left > 0; s *= 2) {
        double lo[3] = {p[0] - s, p[1] - s, p[2] - s}, hi[3] = {p[0] + s, p[1] + s, p[2] + s};
        int a[3], b[3];
        cell_range(g, lo, hi, a, b);
        *left -= (int64_t)(b[0] - a[0] + 1) * (b[1] - a[1] + 1) * (b[2] - a[2] + 1);
        near_query q = {pts, p, best, idx};
        drape_grid_visit(g, lo, hi, visit_point, &q);
        best = q.best, idx = q.idx;
        if (best <= s * s) return idx; /* every point within s of p is in this box */
    }
    double r = sqrt(best) * (1 + 1e-12) + 1e-15;
    double lo[3] = {p[0] - r, p[1] - r, p[2] - r}, hi[3] = {p[0] + r, p[1] + r, p[2] + r};
    int a[3], b[3];
    cell_range(g, lo, hi, a, b);
    for (int z = a[2]; z <= b[2] && *left > 0; z++) {
        double dz = gap(g->lo[2] + z * g->cell, g->cell, p[2]);
        for (int y = a[1]; y <= b[1]; y++) {
            double dyz = dz + gap(g->lo[1] + y * g->cell, g->cell, p[1]);
            *left -= 1;
            if (dyz > best * (1 + 1e-9) + 1e-18) continue;
            *left -= b[0] - a[0];
            for (int x = a[0]; x <= b[0]; x++) {
                /* the grid's points all lie in their cells (its box is theirs); the slack covers
                 * rounding at a cell's faces */
                if (dyz + gap(g->lo[0] + x * g->cell, g->cell, p[0]) > best * (1 + 1e-9) + 1e-18) continue;
                int64_t c = ((int64_t)z * g->dim[1] + y) * g->dim[0] + x;
                for (int32_t q = g->start[c]; q < g->start[c + 1]; q++) {
                    int i = g->items[q];
                    const double *s = pts + 3 * i;
                    double d = (p[0] - s[0]) * (p[0] - s[0]) + (p[1] - s[1]) * (p[1] - s[1]) +
                               (p[2] - s[2]) * (p[2] - s[2]);
                    if (d < best || (d == best && i < idx)) best = d, idx = i;
                }
            }
        }
    }
    return idx;
}

/* edge key (min << 32 | max) with the face's opposite vertex, sorted by key */
typedef struct { int64_t key; int32_t opp; } half_edge;

static int cmp_half(const void *a, const void *b)
{
    int64_t x = ((const half_edge *)a)->key, y = ((const half_edge *)b)->key;
    return x < y ? -1 : x > y;
}

int drape_hinges(int32_t **hinges, int *n, const int32_t *faces, int F)
{
    half_edge *h = malloc(((size_t)3 * F + 1) * sizeof *h);
    int32_t *out = malloc(((size_t)6 * F + 4) * sizeof *out); /* at most 3F/2 hinges */
    if (!h || !out) { free(h); free(out); return DRAPE_ENOMEM; }
    for (int f = 0; f < F; f++)
        for (int c = 0; c < 3; c++) {
            int64_t a = faces[3 * f + c], b = faces[3 * f + (c + 1) % 3];
            h[3 * f + c] = (half_edge){a < b ? (a << 32) | b : (b << 32) | a, faces[3 * f + (c + 2) % 3]};
        }
    qsort(h, (size_t)3 * F, sizeof *h, cmp_half);
    int m = 0;
    for (int i = 0; i < 3 * F;) {
        int j = i;
        while (j < 3 * F && h[j].key == h[i].key) j++;
        if (j - i == 2 && h[i].opp != h[i + 1].opp) {
            int32_t *q = out + 4 * m++;
            q[0] = (int32_t)(h[i].key >> 32), q[1] = (int32_t)(h[i].key & 0xffffffff);
            q[2] = h[i].opp, q[3] = h[i + 1].opp;
        }
        i = j;
    }
    free(h);
    *hinges = out;
    *n = m;
    return DRAPE_OK;
}

static double dot3(const double a[3], const double b[3]) { return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]; }

/* Voronoi regions of the triangle's vertices, edges and face, in turn. */
double drape_closest_on_triangle(double q[3], double w[3], const double p[3], const double a[3], const double b[3],
                                 const double c[3])
{
    double ab[3], ac[3], ap[3], bp[3], cp[3];
    for (int d = 0; d < 3; d++) ab[d] = b[d] - a[d], ac[d] = c[d] - a[d], ap[d] = p[d] - a[d];
    double d1 = dot3(ab, ap), d2 = dot3(ac, ap);
    if (d1 <= 0 && d2 <= 0) w[0] = 1, w[1] = 0, w[2] = 0;
    else {
        for (int d = 0; d < 3; d++) bp[d] = p[d] - b[d];
        double d3 = dot3(ab, bp), d4 = dot3(ac, bp);
        for (int d = 0; d < 3; d++) cp[d] = p[d] - c[d];
        double d5 = dot3(ab, cp), d6 = dot3(ac, cp);
        double vc = d1 * d4 - d3 * d2, vb = d5 * d2 - d1 * d6, va = d3 * d6 - d5 * d4;
        if (d3 >= 0 && d4 <= d3) w[0] = 0, w[1] = 1, w[2] = 0;
        else if (d6 >= 0 && d5 <= d6) w[0] = 0, w[1] = 0, w[2] = 1;
        else if (vc <= 0 && d1 >= 0 && d3 <= 0) {
            double t = d1 / (d1 - d3);
            w[0] = 1 - t, w[1] = t, w[2] = 0;
        } else if (vb <= 0 && d2 >= 0 && d6 <= 0) {
            double t = d2 / (d2 - d6);
            w[0] = 1 - t, w[1] = 0, w[2] = t;
        } else if (va <= 0 && (d4 - d3) >= 0 && (d5 - d6) >= 0) {
            double t = (d4 - d3) / ((d4 - d3) + (d5 - d6));
            w[0] = 0, w[1] = 1 - t, w[2] = t;
        } else {
            double s = va + vb + vc, den = s != 0 ? 1.0 / s : 0.0;
            w[1] = vb * den, w[2] = vc * den, w[0] = 1 - w[1] - w[2];
        }
    }
    double r = 0;
    for (int d = 0; d < 3; d++) {
        q[d] = w[0] * a[d] + w[1] * b[d] + w[2] * c[d];
        r += (p[d] - q[d]) * (p[d] - q[d]);
    }
    return r;
}
