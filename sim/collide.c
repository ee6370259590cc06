#include "collide.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../core/geom.h"

typedef struct { double a[3], b[3], r; } capsule; /* a sphere is a == b */

struct drape_collider {
    int n_caps;
    capsule *caps;
    /* mesh */
    int F, nv;
    int32_t *faces;
    double reach;
    double *v, *vn;        /* [nv,3] positions, unit vertex normals */
    double *vp;            /* [nv,3] positions before the last update: the surface's step, for its velocity */
    float *vstep;          /* [nv] |step − u| of each vertex at the last update (rounded up), for motion_bounds */
    double *lo, *hi;       /* [F,3] triangle boxes */
    double *fn;            /* [F,4] unit normal n and n·a of each triangle's plane (warm queries' cheaper test) */
    drape_grid grid;
    drape_grid vgrid;      /* the vertices alone, for the vertex margin's nearest-vertex queries */
    int has_mesh, mesh_ready;
    int all_corners;       /* every vertex is some triangle's corner (what the vertex grid needs to agree) */
    double vmargin;        /* < 0: off; else kept from the nearest mesh vertex's tangent plane */
    /* the points' memory (drape_collider_set_points) */
    int npts, warm, track, plain;
    double cell;           /* > 0: the grid's cell, else the default rule */
    int32_t *pt_face;      /* [npts] each point's nearest triangle at its last projection, −1: none within reach */
    int32_t *pt_track;     /* [npts] the triangle it was outside of then, −1: none */
    double *pt_prev;       /* [npts,3] where it was then */
    double *pt_clear;      /* [npts] a bound below its distance to every triangle then, when outside; −1: none */
    /* the last update's motion, for the bound: the body's mean step u and,
     * per grid cell, the largest |step − u| of a corner of its triangles */
    double u[3];
    double move_max;       /* the largest |step − u| of any vertex (every update, for the deep check) */
    float *cell_move;
    int64_t cap_move;
    int fresh;             /* an update came since the last projection */
};

int drape_collider_create(drape_collider **out, drape_error *err)
{
    *out = calloc(1, sizeof **out);
    if (!*out) return drape_fail(err, DRAPE_ENOMEM, "out of memory");
    (*out)->vmargin = -1;
    return DRAPE_OK;
}

int drape_collider_set_vertex_margin(drape_collider *c, double margin, drape_error *err)
{
    if (!isfinite(margin)) return drape_fail(err, DRAPE_EINVAL, "collider: vertex margin must be finite");
    c->vmargin = margin < 0 ? -1 : margin;
    /* the vertex grid follows each update from now on; this one too */
    int rc = c->mesh_ready && c->vmargin >= 0 ? drape_grid_build(&c->vgrid, c->v, c->v, c->nv, c->grid.cell) : 0;
    return rc ? drape_fail(err, rc, "out of memory") : DRAPE_OK;
}

void drape_collider_free(drape_collider *c)
{
    if (!c) return;
    free(c->caps);
    free(c->faces); free(c->v); free(c->vn); free(c->vp); free(c->vstep); free(c->lo); free(c->hi); free(c->fn);
    free(c->pt_face); free(c->pt_track); free(c->pt_prev); free(c->pt_clear); free(c->cell_move);
    drape_grid_free(&c->grid);
    drape_grid_free(&c->vgrid);
    free(c);
}

int drape_collider_set_points(drape_collider *c, int n, int warm, int track, double cell, drape_error *err)
{
    if (n < 0 || !(cell >= 0) || !isfinite(cell))
        return drape_fail(err, DRAPE_EINVAL, "collider: points must be >= 0 and the cell finite and >= 0");
    free(c->pt_face); free(c->pt_track); free(c->pt_prev); free(c->pt_clear);
    c->pt_face = malloc(((size_t)n + 1) * sizeof *c->pt_face);
    c->pt_track = malloc(((size_t)n + 1) * sizeof *c->pt_track);
    c->pt_prev = calloc((size_t)n * 3 + 1, sizeof *c->pt_prev);
    c->pt_clear = malloc(((size_t)n + 1) * sizeof *c->pt_clear);
    c->npts = 0;
    if (!c->pt_face || !c->pt_track || !c->pt_prev || !c->pt_clear) return drape_fail(err, DRAPE_ENOMEM, "out of memory");
    for (int i = 0; i < n; i++) c->pt_face[i] = c->pt_track[i] = -1, c->pt_clear[i] = -1;
    c->npts = n, c->warm = warm != 0, c->track = track != 0, c->cell = cell;
    return DRAPE_OK;
}

void drape_collider_set_plain_search(drape_collider *c, int plain) { c->plain = plain != 0; }

int drape_collider_point_face(const drape_collider *c, int i) { return i >= 0 && i < c->npts ? c->pt_face[i] : -1; }

size_t drape_collider_bytes(const drape_collider *c)
{
    return sizeof *c + (size_t)c->F * (3 * sizeof(int32_t) + 6 * sizeof(double)) +
           (size_t)c->nv * (9 * sizeof(double) + sizeof(float)) +
           (size_t)(c->grid.cap_cells + c->grid.cap_items + c->vgrid.cap_cells + c->vgrid.cap_items) * sizeof(int32_t) +
           (size_t)(c->grid.cap_range + c->vgrid.cap_range) * sizeof(int32_t) +
           (size_t)(c->grid.cap_ibox + c->grid.cap_cbox + c->grid.cap_nbox) * sizeof(float) +
           (size_t)c->npts * (2 * sizeof(int32_t) + 4 * sizeof(double)) + (size_t)c->cap_move * sizeof(float);
}

int drape_collider_add_capsule(drape_collider *c, const double a[3], const double b[3], double radius,
                               drape_error *err)
{
    for (int d = 0; d < 3; d++)
        if (!isfinite(a[d]) || !isfinite(b[d]))
            return drape_fail(err, DRAPE_ENONFINITE, "collider: capsule end is NaN or Inf");
    if (!(radius > 0) || !isfinite(radius))
        return drape_fail(err, DRAPE_EINVAL, "collider: radius must be positive and finite, got %g", radius);
    capsule *p = realloc(c->caps, ((size_t)c->n_caps + 1) * sizeof *p);
    if (!p) return drape_fail(err, DRAPE_ENOMEM, "out of memory");
    c->caps = p;
    capsule *k = &p[c->n_caps++];
    memcpy(k->a, a, sizeof k->a);
    memcpy(k->b, b, sizeof k->b);
    k->r = radius;
    return DRAPE_OK;
}

int drape_collider_add_sphere(drape_collider *c, const double center[3], double radius, drape_error *err)
{
    return drape_collider_add_capsule(c, center, center, radius, err);
}

int drape_collider_set_mesh(drape_collider *c, const int32_t *faces, int F, int nv, double reach, drape_error *err)
{
    if (F < 1 || nv < 3) return drape_fail(err, DRAPE_EINVAL, "collider: mesh needs triangles (got %d faces, %d vertices)", F, nv);
    if (!(reach > 0) || !isfinite(reach)) return drape_fail(err, DRAPE_EINVAL, "collider: reach must be positive");
    for (int i = 0; i < 3 * F; i++)
        if (faces[i] < 0 || faces[i] >= nv)
            return drape_fail(err, DRAPE_ERANGE, "collider: face %d refers to vertex %d of %d", i / 3, faces[i], nv);
    free(c->faces); free(c->v); free(c->vn); free(c->vp); free(c->vstep); free(c->lo); free(c->hi); free(c->fn);
    c->vstep = malloc((size_t)nv * sizeof *c->vstep);
    c->fn = malloc((size_t)F * 4 * sizeof *c->fn);
    c->faces = malloc((size_t)F * 3 * sizeof *c->faces);
    c->v = malloc((size_t)nv * 3 * sizeof *c->v);
    c->vn = malloc((size_t)nv * 3 * sizeof *c->vn);
    c->vp = malloc((size_t)nv * 3 * sizeof *c->vp);
    c->lo = malloc((size_t)F * 3 * sizeof *c->lo);
    c->hi = malloc((size_t)F * 3 * sizeof *c->hi);
    c->has_mesh = c->mesh_ready = 0;
    if (!c->faces || !c->v || !c->vn || !c->vp || !c->vstep || !c->lo || !c->hi || !c->fn)
        return drape_fail(err, DRAPE_ENOMEM, "out of memory");
    memcpy(c->faces, faces, (size_t)F * 3 * sizeof *faces);
    c->F = F, c->nv = nv, c->reach = reach, c->has_mesh = 1;
    /* the vertex test's grid holds every vertex, the plain search only the
     * triangles' corners: with a loose vertex the plain search serves */
    uint8_t *used = calloc((size_t)nv, 1);
    if (!used) return drape_fail(err, DRAPE_ENOMEM, "out of memory");
    for (int i = 0; i < 3 * F; i++) used[faces[i]] = 1;
    c->all_corners = 1;
    for (int i = 0; i < nv; i++) c->all_corners &= used[i];
    free(used);
    return DRAPE_OK;
}

/* The last update's motion: its mean step u and how far any vertex moved
 * besides, for the deep check in drape_collider_project (two passes over
 * the vertices: little next to the normals and the grid); and each
 * vertex's own, for motion_bounds with warm queries (a vertex is a corner
 * of about six triangles, each in several cells: its root is taken once
 * here). */
static void body_motion(drape_collider *c)
{
    double u[3] = {0, 0, 0}, m = 0;
    for (int i = 0; i < c->nv; i++)
        for (int d = 0; d < 3; d++) u[d] += c->v[3 * i + d] - c->vp[3 * i + d];
    for (int d = 0; d < 3; d++) c->u[d] = u[d] / c->nv;
    for (int i = 0; i < c->nv; i++) {
        const double *a = c->v + 3 * i, *b = c->vp + 3 * i;
        double e0 = a[0] - b[0] - c->u[0], e1 = a[1] - b[1] - c->u[1], e2 = a[2] - b[2] - c->u[2];
        double q = e0 * e0 + e1 * e1 + e2 * e2;
        m = q > m ? q : m; /* (no fmax: a libm call without -ffast-math) */
        if (c->warm) c->vstep[i] = (float)sqrt(q) * (1 + 1e-6f); /* only motion_bounds reads it */
    }
    c->move_max = sqrt(m) * (1 + 1e-6);
}

/* The last update's motion per grid cell (see the struct): what the
 * projection's bound needs to skip points that cannot have reached the
 * surface. The common part u (body_motion) is taken out of both sides of
 * that bound, so a body walking with its garment does not use it up. */
static int motion_bounds(drape_collider *c)
{
    const drape_grid *g = &c->grid;
    int64_t cells = (int64_t)g->dim[0] * g->dim[1] * g->dim[2];
    if (cells > c->cap_move) {
        float *p = realloc(c->cell_move, (size_t)cells * sizeof *p);
        if (!p) return DRAPE_ENOMEM;
        c->cell_move = p, c->cap_move = cells;
    }
    for (int64_t k = 0; k < cells; k++) {
        float m = 0;
        for (int32_t q = g->start[k]; q < g->start[k + 1]; q++) {
            const int32_t *t = c->faces + 3 * g->items[q];
            for (int j = 0; j < 3; j++) m = c->vstep[t[j]] > m ? c->vstep[t[j]] : m;
        }
        c->cell_move[k] = m;
    }
    return DRAPE_OK;
}

/* the largest cell_move of the cells [lo, hi] overlaps */
static double motion_near(const drape_collider *c, const double lo[3], const double hi[3])
{
    const drape_grid *g = &c->grid;
    int a[3], b[3];
    for (int d = 0; d < 3; d++) {
        double s = (lo[d] - g->lo[d]) / g->cell, e = (hi[d] - g->lo[d]) / g->cell;
        a[d] = s < 0 ? 0 : s >= g->dim[d] ? g->dim[d] - 1 : (int)s;
        b[d] = e < 0 ? 0 : e >= g->dim[d] ? g->dim[d] - 1 : (int)e;
    }
    float m = 0;
    for (int z = a[2]; z <= b[2]; z++)
        for (int y = a[1]; y <= b[1]; y++) {
            const float *row = c->cell_move + ((int64_t)z * g->dim[1] + y) * g->dim[0];
            for (int x = a[0]; x <= b[0]; x++) m = row[x] > m ? row[x] : m;
        }
    return m;
}

int drape_collider_update_mesh(drape_collider *c, const float *v, drape_error *err)
{
    if (!c->has_mesh) return drape_fail(err, DRAPE_EINVAL, "collider: no mesh set");
    for (int i = 0; i < 3 * c->nv; i++)
        if (!isfinite(v[i])) return drape_fail(err, DRAPE_ENONFINITE, "collider: mesh vertex %d is NaN or Inf", i / 3);
    /* the first positions have no previous ones: the surface starts at rest */
    for (int i = 0; i < 3 * c->nv; i++) c->vp[i] = c->mesh_ready ? c->v[i] : v[i], c->v[i] = v[i], c->vn[i] = 0;
    double edge = 0;
    for (int f = 0; f < c->F; f++) {
        const int32_t *t = c->faces + 3 * f;
        const double *a = c->v + 3 * t[0], *b = c->v + 3 * t[1], *cc = c->v + 3 * t[2];
        double e1[3] = {b[0] - a[0], b[1] - a[1], b[2] - a[2]}, e2[3] = {cc[0] - a[0], cc[1] - a[1], cc[2] - a[2]};
        double n[3] = {e1[1] * e2[2] - e1[2] * e2[1], e1[2] * e2[0] - e1[0] * e2[2], e1[0] * e2[1] - e1[1] * e2[0]};
        for (int k = 0; k < 3; k++)
            for (int d = 0; d < 3; d++) c->vn[3 * t[k] + d] += n[d];
        double nl = sqrt(n[0] * n[0] + n[1] * n[1] + n[2] * n[2]), *fn = c->fn + 4 * f;
        for (int d = 0; d < 3; d++) fn[d] = nl > 0 ? n[d] / nl : 0;
        fn[3] = fn[0] * a[0] + fn[1] * a[1] + fn[2] * a[2];
        for (int d = 0; d < 3; d++) {
            double l = a[d] < b[d] ? a[d] : b[d], h = a[d] > b[d] ? a[d] : b[d]; /* finite: no fmin/fmax calls */
            c->lo[3 * f + d] = cc[d] < l ? cc[d] : l;
            c->hi[3 * f + d] = cc[d] > h ? cc[d] : h;
        }
        edge += sqrt(e1[0] * e1[0] + e1[1] * e1[1] + e1[2] * e1[2]);
    }
    for (int i = 0; i < c->nv; i++) {
        double *n = c->vn + 3 * i, l = sqrt(n[0] * n[0] + n[1] * n[1] + n[2] * n[2]);
        if (l > 0) n[0] /= l, n[1] /= l, n[2] /= l;
    }
    /* cells about a triangle wide but no smaller than the reach, so a query
     * box spans at most 3 cells per axis */
    double cell = c->cell > 0 ? c->cell : fmax(edge / c->F, c->reach);
    int rc = drape_grid_build(&c->grid, c->lo, c->hi, c->F, cell);
    if (!rc) rc = drape_grid_keep_boxes(&c->grid, c->lo, c->hi);
    /* the vertex test's nearest vertex: found among the vertices alone, not
     * the corners of every triangle near (each vertex sits in about six of
     * them, each triangle in several cells); the same vertex either way */
    if (!rc && c->vmargin >= 0) rc = drape_grid_build(&c->vgrid, c->v, c->v, c->nv, cell);
    if (rc) return drape_fail(err, rc, rc == DRAPE_ENOMEM ? "out of memory" : "collider: the body is not finite");
    body_motion(c);
    if (c->warm && (rc = motion_bounds(c))) return drape_fail(err, rc, "out of memory");
    /* the bounds cover one update's motion: a second one before a
     * projection would leave the first's uncounted, so they are dropped */
    if (c->fresh)
        for (int i = 0; i < c->npts; i++) c->pt_clear[i] = -1;
    c->mesh_ready = 1;
    c->fresh = 1;
    return DRAPE_OK;
}

typedef struct {
    const drape_collider *c;
    const double *p;
    double best, q[3], w[3];
    int face;
} mesh_query;

/* squared distance from p to triangle f's box: most candidates end here */
static double box_gap2(const drape_collider *c, int f, const double p[3])
{
    const double *lo = c->lo + 3 * f, *hi = c->hi + 3 * f;
    double gap = 0;
    for (int d = 0; d < 3; d++) { /* (no fmax: it is a libm call without -ffast-math) */
        double e = lo[d] - p[d] > p[d] - hi[d] ? lo[d] - p[d] : p[d] - hi[d];
        if (e > 0) gap += e * e;
    }
    return gap;
}

static void visit_face(void *ctx, int f)
{
    mesh_query *m = ctx;
    const int32_t *t = m->c->faces + 3 * f;
    if (box_gap2(m->c, f, m->p) >= m->best) return;
    if (m->c->warm) { /* the triangle is no nearer than its plane */
        const double *fn = m->c->fn + 4 * f;
        double s = fn[0] * m->p[0] + fn[1] * m->p[1] + fn[2] * m->p[2] - fn[3];
        if (s * s >= m->best) return;
    }
    double q[3], w[3];
    double r = drape_closest_on_triangle(q, w, m->p, m->c->v + 3 * t[0], m->c->v + 3 * t[1], m->c->v + 3 * t[2]);
    if (r < m->best) {
        m->best = r, m->face = f;
        memcpy(m->q, q, sizeof q);
        memcpy(m->w, w, sizeof w);
    }
}

#define MAX_TIES 16

/* A guessed query's search: the nearest distance, and every triangle at it */
typedef struct {
    const drape_collider *c;
    const double *p;
    double best, bound;    /* bound: just above best, for drape_grid_visit_near (skips only farther boxes) */
    int n, ties[MAX_TIES + 1];
} tie_query;

static void visit_tie(void *ctx, int f)
{
    tie_query *m = ctx;
    if (box_gap2(m->c, f, m->p) > m->best) return;
    const int32_t *t = m->c->faces + 3 * f;
    double q[3], w[3];
    double r = drape_closest_on_triangle(q, w, m->p, m->c->v + 3 * t[0], m->c->v + 3 * t[1], m->c->v + 3 * t[2]);
    if (r < m->best) {
        m->best = r, m->bound = nextafter(r, INFINITY), m->n = 0;
    } else if (!(r == m->best && m->n > 0)) {
        return;
    }
    for (int k = 0; k < m->n && k < MAX_TIES; k++)
        if (m->ties[k] == f) return; /* again, from another cell */
    if (m->n <= MAX_TIES) m->ties[m->n] = f;
    m->n++;
}

/* The guessed query (mesh_distance without warm): m holds the guess's
 * triangle and distance, [lo, hi] the box it bounds. Every triangle at the
 * nearest distance is in that box; of them the answer is the one the plain
 * search's walk over the reach gives first (its earliest cell, then the
 * lower index), so ties go where they always went. Past MAX_TIES of them,
 * the plain walk itself. */
static void guessed_nearest(const drape_collider *c, const double p[3], const double lo[3], const double hi[3],
                            double reach, mesh_query *m)
{
    tie_query tq = {.c = c, .p = p, .best = m->best, .bound = nextafter(m->best, INFINITY), .n = 1, .ties = {m->face}};
    drape_grid_visit_near(&c->grid, lo, hi, p, &tq.bound, visit_tie, &tq);
    double rlo[3], rhi[3];
    for (int d = 0; d < 3; d++) rlo[d] = p[d] - reach, rhi[d] = p[d] + reach;
    if (tq.n > MAX_TIES) {
        *m = (mesh_query){.c = c, .p = p, .best = reach * reach, .face = -1};
        drape_grid_visit_near(&c->grid, rlo, rhi, p, &m->best, visit_face, m);
        return;
    }
    int64_t first = INT64_MAX;
    for (int k = 0; k < tq.n; k++) {
        int f = tq.ties[k];
        int64_t key = drape_grid_first_cell(&c->grid, c->lo + 3 * f, c->hi + 3 * f, rlo, rhi) * c->F + f;
        if (key < first) first = key, m->face = f;
    }
    const int32_t *t = c->faces + 3 * m->face;
    m->best = drape_closest_on_triangle(m->q, m->w, p, c->v + 3 * t[0], c->v + 3 * t[1], c->v + 3 * t[2]);
}

/* vel (may be NULL): the surface point's velocity, its barycentric share of
 * the vertices' last step times inv_dt; *face the nearest triangle (-1: none).
 * hint >= 0, with warm queries: a bound to start from (only triangles nearer
 * than the hint's are looked at; a tie goes to the hint). Without warm: a
 * guess that only makes the search cheaper (guessed_nearest), the answer the
 * plain search's. reach: how far triangles are looked for (the mesh's, or
 * more for the deep check). */
static double mesh_distance(const drape_collider *c, const double p[3], double q[3], double n[3], double vel[3],
                            double inv_dt, int hint, double reach, int *face)
{
    mesh_query m = {.c = c, .p = p, .best = reach * reach, .face = -1};
    double lo[3], hi[3], half = reach;
    if (hint >= 0) {
        visit_face(&m, hint);
        if (m.face >= 0) half = sqrt(m.best) * (1 + 1e-12) + 1e-15;
    }
    for (int d = 0; d < 3; d++) lo[d] = p[d] - half, hi[d] = p[d] + half;
    if (m.face >= 0 && !c->warm && !c->plain)
        guessed_nearest(c, p, lo, hi, reach, &m);
    else if (c->plain)
        drape_grid_visit(&c->grid, lo, hi, visit_face, &m);
    else
        drape_grid_visit_near(&c->grid, lo, hi, p, &m.best, visit_face, &m);
    *face = m.face;
    if (m.face < 0) return INFINITY;
    const int32_t *t = c->faces + 3 * m.face;
    double ni[3], dot = 0, r[3];
    for (int d = 0; d < 3; d++) {
        ni[d] = m.w[0] * c->vn[3 * t[0] + d] + m.w[1] * c->vn[3 * t[1] + d] + m.w[2] * c->vn[3 * t[2] + d];
        r[d] = p[d] - m.q[d];
        dot += r[d] * ni[d];
    }
    double l = sqrt(m.best), nl = sqrt(ni[0] * ni[0] + ni[1] * ni[1] + ni[2] * ni[2]);
    memcpy(q, m.q, sizeof m.q);
    if (vel)
        for (int d = 0; d < 3; d++) {
            vel[d] = 0;
            for (int k = 0; k < 3; k++) vel[d] += m.w[k] * (c->v[3 * t[k] + d] - c->vp[3 * t[k] + d]);
            vel[d] *= inv_dt;
        }
    /* outside: the direction away from the surface point is the exact
     * normal of the distance field; inside (or on it): the interpolated one */
    if (dot > 0 && l > 1e-12) {
        for (int d = 0; d < 3; d++) n[d] = r[d] / l;
        return l;
    }
    for (int d = 0; d < 3; d++) n[d] = nl > 0 ? ni[d] / nl : 0;
    return -l;
}

typedef struct {
    const drape_collider *c;
    const double *p;
    double best;
    int idx;
} vertex_query;

static void visit_face_vertices(void *ctx, int f)
{
    vertex_query *m = ctx;
    if (box_gap2(m->c, f, m->p) >= m->best) return;
    for (int k = 0; k < 3; k++) {
        int i = m->c->faces[3 * f + k];
        const double *v = m->c->v + 3 * i;
        double r = (m->p[0] - v[0]) * (m->p[0] - v[0]) + (m->p[1] - v[1]) * (m->p[1] - v[1]) +
                   (m->p[2] - v[2]) * (m->p[2] - v[2]);
        if (r < m->best || (r == m->best && i < m->idx)) m->best = r, m->idx = i;
    }
}

/* The collision metric's test (docs/design.md §4): the signed height of p over the
 * tangent plane of its nearest mesh vertex (within reach; +INFINITY if
 * none; face >= 0: a triangle whose corners start the search),
 * n that vertex's normal, vel its velocity. On a coarse body this plane can
 * lie millimetres outside the triangles (convex spots between vertices, the
 * armpits), so a point the triangle test keeps at the margin can still read
 * as inside. */
static double vertex_plane(const drape_collider *c, const double p[3], int face, double n[3], double vel[3],
                           double inv_dt)
{
    vertex_query m = {.c = c, .p = p, .best = c->reach * c->reach, .idx = -1};
    if (face >= 0) visit_face_vertices(&m, face); /* the nearest triangle's corners bound the search */
    int fast = !c->plain && c->all_corners;
    if (fast && m.idx >= 0) {
        /* the exact search from there among the vertices alone */
        int i = drape_grid_nearest_hint(&c->vgrid, c->v, p, m.idx, NULL);
        const double *v = c->v + 3 * i;
        m.best = (p[0] - v[0]) * (p[0] - v[0]) + (p[1] - v[1]) * (p[1] - v[1]) + (p[2] - v[2]) * (p[2] - v[2]);
        m.idx = i;
    } else if (fast && face < 0 && c->n_caps == 0) {
        return INFINITY; /* no triangle within reach, so no vertex (each is a triangle's corner) */
    } else { /* the plain search over the triangles' corners */
        double r = sqrt(m.best), lo[3], hi[3];
        for (int d = 0; d < 3; d++) lo[d] = p[d] - r, hi[d] = p[d] + r;
        drape_grid_visit(&c->grid, lo, hi, visit_face_vertices, &m);
    }
    if (m.idx < 0) return INFINITY;
    double s = 0;
    for (int d = 0; d < 3; d++) {
        n[d] = c->vn[3 * m.idx + d];
        vel[d] = (c->v[3 * m.idx + d] - c->vp[3 * m.idx + d]) * inv_dt;
        s += n[d] * (p[d] - c->v[3 * m.idx + d]);
    }
    return s;
}

static double capsule_distance(const capsule *k, const double p[3], double q[3], double n[3])
{
    double ab[3], ap[3], t = 0, abab = 0;
    for (int d = 0; d < 3; d++) ab[d] = k->b[d] - k->a[d], ap[d] = p[d] - k->a[d], abab += ab[d] * ab[d];
    if (abab > 0) {
        t = (ap[0] * ab[0] + ap[1] * ab[1] + ap[2] * ab[2]) / abab;
        t = t < 0 ? 0 : t > 1 ? 1 : t;
    }
    double c[3], r[3], l = 0;
    for (int d = 0; d < 3; d++) c[d] = k->a[d] + t * ab[d], r[d] = p[d] - c[d], l += r[d] * r[d];
    l = sqrt(l);
    for (int d = 0; d < 3; d++) {
        n[d] = l > 1e-12 ? r[d] / l : d == 1; /* on the axis: push up, any direction works */
        q[d] = c[d] + k->r * n[d];
    }
    return l - k->r;
}

/* The nearest surface; vel (may be NULL) its velocity there (capsules are
 * still); *face (may be NULL) the mesh triangle when the mesh's is nearest,
 * else -1; reach as mesh_distance's. */
static double nearest(const drape_collider *c, const double p[3], double q[3], double n[3], double vel[3],
                      double inv_dt, int hint, double reach, int *face)
{
    double best = INFINITY;
    if (face) *face = -1;
    if (vel) vel[0] = vel[1] = vel[2] = 0;
    for (int i = 0; i < c->n_caps; i++) {
        double qq[3], nn[3], d = capsule_distance(&c->caps[i], p, qq, nn);
        if (d < best) best = d, memcpy(q, qq, sizeof qq), memcpy(n, nn, sizeof nn);
    }
    if (c->mesh_ready) {
        int f;
        double qq[3], nn[3], vv[3], d = mesh_distance(c, p, qq, nn, vel ? vv : NULL, inv_dt, hint, reach, &f);
        if (d < best) {
            best = d, memcpy(q, qq, sizeof qq), memcpy(n, nn, sizeof nn);
            if (face) *face = f;
            if (vel) memcpy(vel, vv, sizeof vv);
        }
    }
    return best;
}

double drape_collider_distance(const drape_collider *c, const double p[3], double q[3], double n[3])
{
    return nearest(c, p, q, n, NULL, 0, -1, c->reach, NULL);
}

/* The tracked test (drape_collider_set_points' track): point p, at prev
 * after the last projection, was outside triangle f; the triangle moved
 * from its corners' last positions (vp; v when no update came since: moved
 * is 0) to v. With both motions linear in the step, the point crossed f's
 * plane when the signed distances at the two ends change sign, and it
 * crossed f itself when the crossing point lies in the triangle then. If so
 * the body passed over it, however near another surface (the far side of a
 * thin limb) now is: q, n, vel and the return value as nearest()'s for the
 * material point of f it crossed. Else +INFINITY. */
static double tracked(const drape_collider *c, const double p[3], const double prev[3], int f, int moved, double q[3],
                      double n[3], double vel[3], double inv_dt)
{
    const int32_t *t = c->faces + 3 * f;
    const double *A1 = c->v + 3 * t[0], *B1 = c->v + 3 * t[1], *C1 = c->v + 3 * t[2];
    const double *A0 = moved ? c->vp + 3 * t[0] : A1, *B0 = moved ? c->vp + 3 * t[1] : B1,
                 *C0 = moved ? c->vp + 3 * t[2] : C1;
    double n0[3], n1[3], s0 = 0, s1 = 0;
    {
        double e1[3], e2[3], f1[3], f2[3];
        for (int d = 0; d < 3; d++) e1[d] = B0[d] - A0[d], e2[d] = C0[d] - A0[d], f1[d] = B1[d] - A1[d], f2[d] = C1[d] - A1[d];
        n0[0] = e1[1] * e2[2] - e1[2] * e2[1], n0[1] = e1[2] * e2[0] - e1[0] * e2[2], n0[2] = e1[0] * e2[1] - e1[1] * e2[0];
        n1[0] = f1[1] * f2[2] - f1[2] * f2[1], n1[1] = f1[2] * f2[0] - f1[0] * f2[2], n1[2] = f1[0] * f2[1] - f1[1] * f2[0];
    }
    for (int d = 0; d < 3; d++) s0 += (prev[d] - A0[d]) * n0[d], s1 += (p[d] - A1[d]) * n1[d];
    if (!(s0 > 0) || !(s1 < 0)) return INFINITY;
    double tau = s0 / (s0 - s1), A[3], B[3], C[3], P[3];
    for (int d = 0; d < 3; d++) {
        A[d] = A0[d] + tau * (A1[d] - A0[d]), B[d] = B0[d] + tau * (B1[d] - B0[d]);
        C[d] = C0[d] + tau * (C1[d] - C0[d]), P[d] = prev[d] + tau * (p[d] - prev[d]);
    }
    /* barycentric coordinates of P in ABC (P is on its plane, to first order) */
    double v0[3], v1[3], v2[3], d00 = 0, d01 = 0, d11 = 0, d20 = 0, d21 = 0;
    for (int d = 0; d < 3; d++) v0[d] = B[d] - A[d], v1[d] = C[d] - A[d], v2[d] = P[d] - A[d];
    for (int d = 0; d < 3; d++)
        d00 += v0[d] * v0[d], d01 += v0[d] * v1[d], d11 += v1[d] * v1[d], d20 += v2[d] * v0[d], d21 += v2[d] * v1[d];
    double den = d00 * d11 - d01 * d01;
    if (!(den > 0)) return INFINITY;
    double wb = (d11 * d20 - d01 * d21) / den, wc = (d00 * d21 - d01 * d20) / den, wa = 1 - wb - wc;
    const double eps = 1e-3; /* a crossing on an edge counts for both triangles */
    if (wa < -eps || wb < -eps || wc < -eps) return INFINITY;
    wa = fmax(wa, 0), wb = fmax(wb, 0), wc = fmax(wc, 0);
    double ws = wa + wb + wc, w[3] = {wa / ws, wb / ws, wc / ws}, nl = 0;
    for (int d = 0; d < 3; d++) {
        q[d] = w[0] * A1[d] + w[1] * B1[d] + w[2] * C1[d];
        n[d] = n1[d];
        nl += n1[d] * n1[d];
        vel[d] = 0;
        if (moved)
            for (int k = 0; k < 3; k++) vel[d] += w[k] * (c->v[3 * t[k] + d] - c->vp[3 * t[k] + d]);
        vel[d] *= inv_dt;
    }
    nl = sqrt(nl);
    if (!(nl > 0)) return INFINITY;
    double sd = 0;
    for (int d = 0; d < 3; d++) n[d] /= nl, sd += (p[d] - q[d]) * n[d];
    return sd < 0 ? sd : -0.0; /* behind its plane (a sliver in front of it reads as on it) */
}

int drape_collider_project(drape_collider *c, double *x, double *v, const uint8_t *mask, int n, double margin,
                           double friction, double dt)
{
    int contacts = 0;
    double inv_dt = dt > 0 ? 1 / dt : 0;
    /* the points' memory applies to the points it was made for */
    int mem = c->npts == n && c->mesh_ready, warm = mem && c->warm, track = mem && c->track;
    /* the skip below bounds distances, which the vertex test does not use */
    int skip = warm && c->vmargin < 0 && c->n_caps == 0;
    double u0[3] = {0, 0, 0}, m0 = 0; /* the body's motion since the last projection: mean, and any vertex besides */
    if (c->fresh) memcpy(u0, c->u, sizeof u0), m0 = c->move_max;
    for (int i = 0; i < n; i++) {
        if (mask && !mask[i]) continue;
        double *p = x + 3 * i, *u = v + 3 * i;
        if (skip && c->pt_clear[i] > margin) {
            /* It was outside, every triangle at least pt_clear away. A
             * triangle now within R of p is in the cells around p, so it
             * moved at most M (relative to u), and p moved |dp| (the same):
             * every triangle is still at least R − M away. Above the margin
             * nothing can touch p: no query. */
            double *pv = c->pt_prev + 3 * i, dp[3] = {p[0] - pv[0] - u0[0], p[1] - pv[1] - u0[1], p[2] - pv[2] - u0[2]};
            double R = c->pt_clear[i] - sqrt(dp[0] * dp[0] + dp[1] * dp[1] + dp[2] * dp[2]);
            if (R > margin) {
                R = fmin(R, 2 * c->grid.cell);
                double lo[3] = {p[0] - R, p[1] - R, p[2] - R}, hi[3] = {p[0] + R, p[1] + R, p[2] + R};
                double bound = R - (c->fresh ? motion_near(c, lo, hi) : 0);
                if (bound > margin) {
                    c->pt_clear[i] = bound;
                    memcpy(pv, p, 3 * sizeof *p);
                    continue;
                }
            }
        }
        /* each pass's query starts from the last nearest triangle (warm
         * implies the memory) */
        int guess = warm || !c->plain;
        int hit = 0, face = guess && mem ? c->pt_face[i] : -1, out = 0;
        double dist = 0;
        for (int pass = 0; pass < 3; pass++) {
            double q[3], nn[3], vb[3], d = nearest(c, p, q, nn, vb, inv_dt, guess ? face : -1, c->reach, &face);
            double keep = margin;
            if (pass == 0 && face < 0 && mem && c->pt_clear[i] >= 0) {
                /* The deep check. It was outside; had it crossed a
                 * triangle in the step (both moving linearly), it would now
                 * be at most r = |Δp − u| + M from that triangle's material
                 * point (M: any vertex's step besides u). Below the reach
                 * the query above would have found that: none found, it is
                 * outside. Else look as far as r, where the nearest
                 * triangle's side tells: a point that went deep into a
                 * thick part is pushed out (and counted) like any inside
                 * point. (A swept test like tracked() over the triangles
                 * near the path would also name the entry, but a count of
                 * crossings errs at shared edges; the nearest triangle's
                 * side is the collider's own inside test.) Only points that
                 * found no triangle get here, and only jumps of about the
                 * reach pay the wider query. */
                const double *pv = c->pt_prev + 3 * i;
                double e0 = p[0] - pv[0] - u0[0], e1 = p[1] - pv[1] - u0[1], e2 = p[2] - pv[2] - u0[2];
                double r = (sqrt(e0 * e0 + e1 * e1 + e2 * e2) + m0) * (1 + 1e-9);
                if (r >= c->reach) d = nearest(c, p, q, nn, vb, inv_dt, -1, r, &face);
            }
            if (pass == 0 && track && c->pt_track[i] >= 0 && c->pt_track[i] != face) {
                double tq[3], tn[3], tv[3];
                double s = tracked(c, p, c->pt_prev + 3 * i, c->pt_track[i], c->fresh, tq, tn, tv, inv_dt);
                if (s < INFINITY) {
                    d = s, face = c->pt_track[i];
                    memcpy(q, tq, sizeof q), memcpy(nn, tn, sizeof nn), memcpy(vb, tv, sizeof vb);
                }
            }
            if (c->vmargin >= 0 && c->mesh_ready) { /* the deeper of the two tests wins */
                double nv[3], vv[3], s = vertex_plane(c, p, face, nv, vv, inv_dt);
                if (c->vmargin - s > margin - d) {
                    d = s, keep = c->vmargin;
                    for (int k = 0; k < 3; k++) q[k] = p[k] - s * nv[k], nn[k] = nv[k], vb[k] = vv[k];
                }
            }
            out = d >= 0, dist = d;
            if (!(d < keep)) break;
            hit = 1, out = 1;
            for (int k = 0; k < 3; k++) p[k] = q[k] + keep * nn[k];
            /* velocity relative to the surface: an inward normal part is
             * removed; the normal speed the contact took away (that, or the
             * push over the step if larger) bounds how much tangential speed
             * friction takes (Coulomb), so a garment slides down under
             * gravity and is carried, not held back, by a moving body */
            double r[3], un = 0, t2 = 0;
            for (int k = 0; k < 3; k++) r[k] = u[k] - vb[k], un += r[k] * nn[k];
            for (int k = 0; k < 3; k++) r[k] -= un * nn[k], t2 += r[k] * r[k];
            double jn = fmax(-un, (keep - d) * inv_dt), t = sqrt(t2);
            double s = t > friction * jn ? 1 - friction * jn / t : 0;
            for (int k = 0; k < 3; k++) u[k] = vb[k] + (un > 0 ? un : 0) * nn[k] + s * r[k];
        }
        if (mem) {
            c->pt_face[i] = face;
            c->pt_track[i] = out ? face : -1;
            /* Known outside, with every triangle at least this far: the last
             * pass found no contact at distance d. Beyond the reach (d
             * infinite) a point is known outside only if it was before (the
             * deep check proved it did not cross); else it may be deep
             * inside, where a later query that reaches the surface pushes
             * it. */
            c->pt_clear[i] = dist == INFINITY ? (c->pt_clear[i] >= 0 ? c->reach : -1)
                           : out && dist >= margin ? dist : -1;
            memcpy(c->pt_prev + 3 * i, p, 3 * sizeof *p);
        }
        contacts += hit;
    }
    c->fresh = 0;
    return contacts;
}
