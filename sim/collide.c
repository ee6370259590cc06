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
    double *lo, *hi;       /* [F,3] triangle boxes */
    drape_grid grid;
    int has_mesh, mesh_ready;
    double vmargin;        /* < 0: off; else kept from the nearest mesh vertex's tangent plane */
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
    return DRAPE_OK;
}

void drape_collider_free(drape_collider *c)
{
    if (!c) return;
    free(c->caps);
    free(c->faces); free(c->v); free(c->vn); free(c->vp); free(c->lo); free(c->hi);
    drape_grid_free(&c->grid);
    free(c);
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
    free(c->faces); free(c->v); free(c->vn); free(c->vp); free(c->lo); free(c->hi);
    c->faces = malloc((size_t)F * 3 * sizeof *c->faces);
    c->v = malloc((size_t)nv * 3 * sizeof *c->v);
    c->vn = malloc((size_t)nv * 3 * sizeof *c->vn);
    c->vp = malloc((size_t)nv * 3 * sizeof *c->vp);
    c->lo = malloc((size_t)F * 3 * sizeof *c->lo);
    c->hi = malloc((size_t)F * 3 * sizeof *c->hi);
    c->has_mesh = c->mesh_ready = 0;
    if (!c->faces || !c->v || !c->vn || !c->vp || !c->lo || !c->hi)
        return drape_fail(err, DRAPE_ENOMEM, "out of memory");
    memcpy(c->faces, faces, (size_t)F * 3 * sizeof *faces);
    c->F = F, c->nv = nv, c->reach = reach, c->has_mesh = 1;
    return DRAPE_OK;
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
        for (int d = 0; d < 3; d++) {
            c->lo[3 * f + d] = fmin(a[d], fmin(b[d], cc[d]));
            c->hi[3 * f + d] = fmax(a[d], fmax(b[d], cc[d]));
        }
        edge += sqrt(e1[0] * e1[0] + e1[1] * e1[1] + e1[2] * e1[2]);
    }
    for (int i = 0; i < c->nv; i++) {
        double *n = c->vn + 3 * i, l = sqrt(n[0] * n[0] + n[1] * n[1] + n[2] * n[2]);
        if (l > 0) n[0] /= l, n[1] /= l, n[2] /= l;
    }
    /* cells about a triangle wide but no smaller than the reach, so a query
     * box spans at most 3 cells per axis */
    double cell = fmax(edge / c->F, c->reach);
    int rc = drape_grid_build(&c->grid, c->lo, c->hi, c->F, cell);
    if (rc) return drape_fail(err, rc, rc == DRAPE_ENOMEM ? "out of memory" : "collider: the body is not finite");
    c->mesh_ready = 1;
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
    double q[3], w[3];
    double r = drape_closest_on_triangle(q, w, m->p, m->c->v + 3 * t[0], m->c->v + 3 * t[1], m->c->v + 3 * t[2]);
    if (r < m->best) {
        m->best = r, m->face = f;
        memcpy(m->q, q, sizeof q);
        memcpy(m->w, w, sizeof w);
    }
}

/* vel (may be NULL): the surface point's velocity, its barycentric share of
 * the vertices' last step times inv_dt; *face the nearest triangle (-1: none) */
static double mesh_distance(const drape_collider *c, const double p[3], double q[3], double n[3], double vel[3],
                            double inv_dt, int *face)
{
    mesh_query m = {.c = c, .p = p, .best = c->reach * c->reach, .face = -1};
    double lo[3], hi[3];
    for (int d = 0; d < 3; d++) lo[d] = p[d] - c->reach, hi[d] = p[d] + c->reach;
    drape_grid_visit(&c->grid, lo, hi, visit_face, &m);
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
    double r = sqrt(m.best), lo[3], hi[3];
    for (int d = 0; d < 3; d++) lo[d] = p[d] - r, hi[d] = p[d] + r;
    drape_grid_visit(&c->grid, lo, hi, visit_face_vertices, &m);
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
 * else -1. */
static double nearest(const drape_collider *c, const double p[3], double q[3], double n[3], double vel[3],
                      double inv_dt, int *face)
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
        double qq[3], nn[3], vv[3], d = mesh_distance(c, p, qq, nn, vel ? vv : NULL, inv_dt, &f);
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
    return nearest(c, p, q, n, NULL, 0, NULL);
}

int drape_collider_project(const drape_collider *c, double *x, double *v, const uint8_t *mask, int n, double margin,
                           double friction, double dt)
{
    int contacts = 0;
    double inv_dt = dt > 0 ? 1 / dt : 0;
    for (int i = 0; i < n; i++) {
        if (mask && !mask[i]) continue;
        double *p = x + 3 * i, *u = v + 3 * i;
        int hit = 0;
        for (int pass = 0; pass < 3; pass++) {
            int face;
            double q[3], nn[3], vb[3], d = nearest(c, p, q, nn, vb, inv_dt, &face), keep = margin;
            if (c->vmargin >= 0 && c->mesh_ready) { /* the deeper of the two tests wins */
                double nv[3], vv[3], s = vertex_plane(c, p, face, nv, vv, inv_dt);
                if (c->vmargin - s > margin - d) {
                    d = s, keep = c->vmargin;
                    for (int k = 0; k < 3; k++) q[k] = p[k] - s * nv[k], nn[k] = nv[k], vb[k] = vv[k];
                }
            }
            if (!(d < keep)) break;
            hit = 1;
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
        contacts += hit;
    }
    return contacts;
}
