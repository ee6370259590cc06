#include "metrics.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../core/mesh.h"
#include "../core/geom.h"

struct drape_metrics {
    drape_metrics_material mat;
    int V, F, ne, nh, Fb, Nb;
    const int32_t *faces, *body_faces; /* borrowed */
    int32_t *edges, *hinges;
    double *l0, *A0, *Dinv;  /* [ne], [F], [F,4] inverse rest 2D edge matrix */
    double *theta0, *hw;     /* [nh] rest dihedral, 3 l0²/(A1 + A2) */
    double *mass;            /* [V] */
    double *prev;            /* [2,V,3] frames t−1, t−2 */
    float *bn;               /* [Nb,3] body normals */
    double *bp;              /* [Nb,3] body positions (grid items) */
    int32_t *nn;             /* [V] each vertex's nearest body vertex last frame: the next query's hint */
    drape_grid grid;
    /* sums over frames */
    int frames, inertia_frames, ref_frames, body_frames;
    double edge, area, coll, stretch, bending, inertia, gravity, ref_sum, ref_max;
};

drape_metrics_material drape_metrics_default_material(double fps)
{
    return (drape_metrics_material){.mu = 23600, .lambda = 44400, .bending = 3.96e-5, .density = 0.2,
                                    .gravity = 9.81, .fps = fps};
}

static void sub3(double r[3], const double *a, const double *b)
{
    r[0] = a[0] - b[0], r[1] = a[1] - b[1], r[2] = a[2] - b[2];
}
static double dot3(const double *a, const double *b) { return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]; }
static void cross3(double r[3], const double *a, const double *b)
{
    r[0] = a[1] * b[2] - a[2] * b[1], r[1] = a[2] * b[0] - a[0] * b[2], r[2] = a[0] * b[1] - a[1] * b[0];
}

/* x as double [n,3] (what every metric reads) */
static void widen(double *d, const float *s, int n)
{
    for (int i = 0; i < 3 * n; i++) d[i] = s[i];
}

/* signed dihedral angle of hinge (i, j, k, l) at x: 0 for a flat pair */
static double dihedral(const double *x, const int32_t *h)
{
    double e[3], a[3], b[3], n1[3], n2[3], c[3];
    sub3(e, x + 3 * h[1], x + 3 * h[0]);
    sub3(a, x + 3 * h[2], x + 3 * h[0]);
    sub3(b, x + 3 * h[3], x + 3 * h[0]);
    cross3(n1, e, a); /* triangle (i, j, k) */
    cross3(n2, b, e); /* triangle (j, i, l), the same orientation */
    cross3(c, n1, n2);
    double el = sqrt(dot3(e, e));
    return atan2(el > 0 ? dot3(c, e) / el : 0, dot3(n1, n2));
}

static double tri_area(const double *x, const int32_t *t)
{
    double e1[3], e2[3], n[3];
    sub3(e1, x + 3 * t[1], x + 3 * t[0]);
    sub3(e2, x + 3 * t[2], x + 3 * t[0]);
    cross3(n, e1, e2);
    return 0.5 * sqrt(dot3(n, n));
}

void drape_metrics_free(drape_metrics *mx)
{
    if (!mx) return;
    free(mx->edges); free(mx->hinges); free(mx->l0); free(mx->A0); free(mx->Dinv); free(mx->theta0); free(mx->hw);
    free(mx->mass); free(mx->prev); free(mx->bn); free(mx->bp); free(mx->nn);
    drape_grid_free(&mx->grid);
    free(mx);
}

int drape_metrics_create(drape_metrics **out, const float *rest, int V, const int32_t *faces, int F,
                         const int32_t *body_faces, int Fb, int Nb, const drape_metrics_material *mat,
                         drape_error *err)
{
    *out = NULL;
    if (V < 3 || F < 1) return drape_fail(err, DRAPE_EINVAL, "metrics: the garment needs triangles");
    if (!(mat->fps > 0) || !(mat->mu >= 0) || !(mat->lambda >= 0) || !(mat->bending >= 0) || !(mat->density > 0))
        return drape_fail(err, DRAPE_EINVAL, "metrics: fps and density must be positive, stiffnesses >= 0");
    if (body_faces && (Fb < 1 || Nb < 3)) return drape_fail(err, DRAPE_EINVAL, "metrics: the body needs triangles");
    drape_metrics *mx = calloc(1, sizeof *mx);
    if (!mx) return drape_fail(err, DRAPE_ENOMEM, "out of memory");
    mx->mat = *mat;
    mx->V = V, mx->F = F, mx->faces = faces, mx->body_faces = body_faces, mx->Fb = body_faces ? Fb : 0;
    mx->Nb = body_faces ? Nb : 0;
    double *X = malloc((size_t)V * 3 * sizeof *X);
    int ok = X && !drape_mesh_edges(&mx->edges, &mx->ne, faces, F) && !drape_hinges(&mx->hinges, &mx->nh, faces, F);
    if (ok) {
        mx->l0 = malloc(((size_t)mx->ne + 1) * sizeof(double));
        mx->A0 = malloc((size_t)F * sizeof(double));
        mx->Dinv = malloc((size_t)F * 4 * sizeof(double));
        mx->theta0 = malloc(((size_t)mx->nh + 1) * sizeof(double));
        mx->hw = malloc(((size_t)mx->nh + 1) * sizeof(double));
        mx->mass = calloc((size_t)V, sizeof(double));
        mx->prev = malloc((size_t)V * 6 * sizeof(double));
        mx->bn = malloc(((size_t)mx->Nb + 1) * 3 * sizeof(float));
        mx->bp = malloc(((size_t)mx->Nb + 1) * 3 * sizeof(double));
        mx->nn = calloc((size_t)V, sizeof(int32_t));
        ok = mx->l0 && mx->A0 && mx->Dinv && mx->theta0 && mx->hw && mx->mass && mx->prev && mx->bn && mx->bp && mx->nn;
    }
    if (!ok) {
        free(X);
        drape_metrics_free(mx);
        return drape_fail(err, DRAPE_ENOMEM, "out of memory");
    }
    widen(X, rest, V);
    int rc = DRAPE_OK;
    for (int e = 0; e < mx->ne && !rc; e++) {
        double d[3];
        sub3(d, X + 3 * mx->edges[2 * e + 1], X + 3 * mx->edges[2 * e]);
        mx->l0[e] = sqrt(dot3(d, d));
        if (!(mx->l0[e] > 1e-12)) rc = drape_fail(err, DRAPE_EINVAL, "metrics: rest edge %d has zero length", e);
    }
    for (int f = 0; f < F && !rc; f++) {
        const int32_t *t = faces + 3 * f;
        double e1[3], e2[3], n[3];
        sub3(e1, X + 3 * t[1], X + 3 * t[0]);
        sub3(e2, X + 3 * t[2], X + 3 * t[0]);
        cross3(n, e1, e2);
        double l1 = sqrt(dot3(e1, e1)), a2 = sqrt(dot3(n, n));
        mx->A0[f] = 0.5 * a2;
        if (!(mx->A0[f] > 1e-14)) { rc = drape_fail(err, DRAPE_EINVAL, "metrics: rest triangle %d is degenerate", f); break; }
        /* rest edges in the triangle's own 2D frame: Dm = [[l1, e1·e2/l1], [0, |e1×e2|/l1]] */
        double a = l1, b = dot3(e1, e2) / l1, d = a2 / l1;
        double *Di = mx->Dinv + 4 * f;
        Di[0] = 1 / a, Di[1] = -b / (a * d), Di[2] = 0, Di[3] = 1 / d;
        for (int k = 0; k < 3; k++) mx->mass[t[k]] += mat->density * mx->A0[f] / 3;
    }
    for (int h = 0; h < mx->nh && !rc; h++) {
        const int32_t *q = mx->hinges + 4 * h;
        int32_t t1[3] = {q[0], q[1], q[2]}, t2[3] = {q[0], q[1], q[3]};
        double d[3];
        sub3(d, X + 3 * q[1], X + 3 * q[0]);
        mx->theta0[h] = dihedral(X, q);
        mx->hw[h] = 3 * dot3(d, d) / (tri_area(X, t1) + tri_area(X, t2));
    }
    free(X);
    if (rc) { drape_metrics_free(mx); return rc; }
    *out = mx;
    return DRAPE_OK;
}

static double collision_pct(drape_metrics *mx, const double *x, const float *body)
{
    int Nb = mx->Nb;
    widen(mx->bp, body, Nb);
    drape_mesh_normals(mx->bn, body, Nb, mx->body_faces, mx->Fb);
    double edge = 0;
    for (int f = 0; f < mx->Fb; f++) {
        double d[3];
        sub3(d, mx->bp + 3 * mx->body_faces[3 * f + 1], mx->bp + 3 * mx->body_faces[3 * f]);
        edge += sqrt(dot3(d, d));
    }
    if (drape_grid_build(&mx->grid, mx->bp, mx->bp, Nb, fmax(edge / mx->Fb, 1e-4))) return NAN;
    int inside = 0;
    for (int v = 0; v < mx->V; v++) {
        const double *p = x + 3 * v;
        /* searched from last frame's answer (frame 0: body vertex 0): the
         * same vertex as a search from nothing, in fewer cells when the
         * garment is far from its body (a search from nothing grows its box
         * until it holds a point within its half width, and reads every
         * cell of a box that large) */
        int b = mx->nn[v] = drape_grid_nearest_hint(&mx->grid, mx->bp, p, mx->nn[v], NULL);
        double d[3], n[3] = {mx->bn[3 * b], mx->bn[3 * b + 1], mx->bn[3 * b + 2]};
        sub3(d, p, mx->bp + 3 * b);
        inside += dot3(n, d) < 0;
    }
    return 100.0 * inside / mx->V;
}

int drape_metrics_add(drape_metrics *mx, const float *xf, const float *body, const float *ref, drape_error *err)
{
    int V = mx->V;
    if (mx->frames > 0 && (ref != NULL) != (mx->ref_frames > 0))
        return drape_fail(err, DRAPE_EINVAL, "metrics: a reference must be given for every frame or for none");
    for (int i = 0; i < 3 * V; i++)
        if (!isfinite(xf[i]) || (ref && !isfinite(ref[i])))
            return drape_fail(err, DRAPE_ENONFINITE, "metrics: frame %d, %svertex %d is NaN or Inf", mx->frames,
                              isfinite(xf[i]) ? "reference " : "", i / 3);
    if (body && mx->Nb)
        for (int i = 0; i < 3 * mx->Nb; i++)
            if (!isfinite(body[i]))
                return drape_fail(err, DRAPE_ENONFINITE, "metrics: frame %d, body vertex %d is NaN or Inf", mx->frames,
                                  i / 3);
    double *x = malloc((size_t)V * 3 * sizeof *x);
    if (!x) return drape_fail(err, DRAPE_ENOMEM, "out of memory");
    widen(x, xf, V);
    const drape_metrics_material *m = &mx->mat;
    double s = 0;
    for (int e = 0; e < mx->ne; e++) {
        double d[3];
        sub3(d, x + 3 * mx->edges[2 * e + 1], x + 3 * mx->edges[2 * e]);
        s += fabs(sqrt(dot3(d, d)) - mx->l0[e]) / mx->l0[e];
    }
    mx->edge += s / mx->ne;
    double area = 0, stretch = 0;
    for (int f = 0; f < mx->F; f++) {
        const int32_t *t = mx->faces + 3 * f;
        double e1[3], e2[3];
        sub3(e1, x + 3 * t[1], x + 3 * t[0]);
        sub3(e2, x + 3 * t[2], x + 3 * t[0]);
        area += fabs(tri_area(x, t) - mx->A0[f]) / mx->A0[f];
        /* F = Ds Dm⁻¹ (3×2), E = (FᵀF − I)/2 */
        const double *Di = mx->Dinv + 4 * f;
        double c0[3], c1[3];
        for (int k = 0; k < 3; k++) c0[k] = e1[k] * Di[0], c1[k] = e1[k] * Di[1] + e2[k] * Di[3];
        double E00 = 0.5 * (dot3(c0, c0) - 1), E11 = 0.5 * (dot3(c1, c1) - 1), E01 = 0.5 * dot3(c0, c1);
        double tr = E00 + E11, tr2 = E00 * E00 + E11 * E11 + 2 * E01 * E01;
        stretch += mx->A0[f] * (m->mu * tr2 + 0.5 * m->lambda * tr * tr);
    }
    mx->area += area / mx->F;
    mx->stretch += stretch;
    double bend = 0;
    for (int h = 0; h < mx->nh; h++) {
        double d = dihedral(x, mx->hinges + 4 * h) - mx->theta0[h];
        d = remainder(d, 2 * M_PI); /* the angle's wrap at ±π */
        bend += 0.5 * m->bending * mx->hw[h] * d * d;
    }
    mx->bending += bend;
    double grav = 0, inert = 0, h2 = 1.0 / (m->fps * m->fps);
    for (int v = 0; v < V; v++) grav += mx->mass[v] * m->gravity * x[3 * v + 1];
    mx->gravity += grav;
    if (mx->frames >= 2) {
        const double *x1 = mx->prev, *x2 = mx->prev + 3 * V;
        for (int v = 0; v < V; v++)
            for (int k = 0; k < 3; k++) {
                double a = x[3 * v + k] - 2 * x1[3 * v + k] + x2[3 * v + k];
                inert += mx->mass[v] / (2 * h2) * a * a;
            }
        mx->inertia += inert;
        mx->inertia_frames++;
    }
    memcpy(mx->prev + 3 * V, mx->prev, (size_t)V * 3 * sizeof *x);
    memcpy(mx->prev, x, (size_t)V * 3 * sizeof *x);
    if (body && mx->Nb) {
        double c = collision_pct(mx, x, body);
        if (isnan(c)) { free(x); return drape_fail(err, DRAPE_ENOMEM, "out of memory"); }
        mx->coll += c;
        mx->body_frames++;
    }
    if (ref) {
        for (int v = 0; v < V; v++) {
            double d[3] = {x[3 * v] - ref[3 * v], x[3 * v + 1] - ref[3 * v + 1], x[3 * v + 2] - ref[3 * v + 2]};
            double l = sqrt(dot3(d, d));
            mx->ref_sum += l;
            mx->ref_max = fmax(mx->ref_max, l);
        }
        mx->ref_frames++;
    }
    mx->frames++;
    free(x);
    return DRAPE_OK;
}

void drape_metrics_get(const drape_metrics *mx, drape_metrics_summary *o)
{
    int T = mx->frames > 0 ? mx->frames : 1;
    *o = (drape_metrics_summary){
        .frames = mx->frames, .edge_error = mx->edge / T, .area_error = mx->area / T, .collision_pct = mx->body_frames ? mx->coll / mx->body_frames : 0,
        .stretch = mx->stretch / T, .bending = mx->bending / T,
        .inertia = mx->inertia_frames ? mx->inertia / mx->inertia_frames : 0, .gravity = mx->gravity / T,
        .has_ref = mx->ref_frames > 0, .ref_mean = mx->ref_frames ? mx->ref_sum / ((double)mx->ref_frames * mx->V) : 0,
        .ref_max = mx->ref_max,
    };
}
