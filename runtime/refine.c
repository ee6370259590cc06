#include "refine.h"

/* Grid cells the nearest-vertex searches of one pass may visit, per garment
 * vertex. A calm frame of the default T-shirt uses at most 62 (the first
 * pass, from rest-time hints); a pose at the validator's limits once used
 * 3000, eight times a calm frame's whole cost. Past the budget a vertex
 * keeps the nearest seen so far (its hint when none was searched): such a
 * frame is wild anyway, and its cost stays bounded (docs/design.md §2.8). */
#define REFINE_CELLS_PER_VERTEX 256

/* With rho > 0 the sweeps after the first DRAPE_REFINE_PLAIN_SWEEPS are
 * Chebyshev-accelerated (Wang 2015): plain sweeps take out the stretch of a
 * few edges, the acceleration the garment-wide stretch they barely touch
 * (at k = 48 a plain sweep shrinks the smoothest error by 0.9965). The first
 * sweeps stay plain because their projection directions still turn fast. */

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "body.h"
#include "../core/mesh.h"
#include "../core/geom.h"

struct drape_refine {
    const drape_model *m;
    const drape_garment *g;
    int iters;
    double k, margin, rho;
    float *v_s;             /* [Nb,3] shaped rest body */
    float J[DRAPE_JOINTS * 3];
    double *l0;             /* [n_edges] rest lengths of g(β) */
    double *inv;            /* [V] 1 / (1 + k deg_v) */
    double cell;            /* the body grid's cell: its mean edge at rest */
    size_t bytes;
};

int drape_refine_create(drape_refine **out, const drape_model *m, int garment, const float *betas, drape_error *err)
{
    *out = NULL;
    if (m->cfg.refine[garment].iters <= 0) return DRAPE_OK;
    const drape_garment *g = &m->garments[garment];
    int S = m->cfg.betas, Nb = m->Nb;
    drape_refine *r = calloc(1, sizeof *r);
    if (r) {
        r->v_s = malloc((size_t)Nb * 3 * sizeof *r->v_s);
        r->l0 = malloc((size_t)g->n_edges * sizeof *r->l0 + 1);
        r->inv = calloc((size_t)g->V, sizeof *r->inv);
    }
    double *gb = malloc((size_t)g->V * 3 * sizeof *gb);
    if (!r || !r->v_s || !r->l0 || !r->inv || !gb || drape_body_shape(r->v_s, r->J, m, betas)) {
        free(gb);
        drape_refine_free(r);
        return drape_fail(err, DRAPE_ENOMEM, "out of memory for the refine step's identity");
    }
    r->m = m, r->g = g;
    r->iters = m->cfg.refine[garment].iters;
    r->k = m->cfg.refine[garment].stiffness;
    r->margin = m->cfg.refine[garment].margin;
    r->rho = m->cfg.refine[garment].rho;
    /* g(β) = rest + shapedirs[body_nn]·β (docs/design.md §2.3 step 1) */
    for (int v = 0; v < g->V; v++)
        for (int d = 0; d < 3; d++) {
            const float *sd = m->shapedirs + ((size_t)g->body_nn[v] * 3 + d) * S;
            double x = g->rest[3 * v + d];
            for (int s = 0; s < S; s++) x += (double)sd[s] * betas[s];
            gb[3 * v + d] = x;
        }
    for (int e = 0; e < g->n_edges; e++) {
        const double *a = gb + 3 * g->edges[2 * e], *b = gb + 3 * g->edges[2 * e + 1];
        r->l0[e] = sqrt((a[0] - b[0]) * (a[0] - b[0]) + (a[1] - b[1]) * (a[1] - b[1]) + (a[2] - b[2]) * (a[2] - b[2]));
        r->inv[g->edges[2 * e]] += 1, r->inv[g->edges[2 * e + 1]] += 1;
    }
    for (int v = 0; v < g->V; v++) r->inv[v] = 1.0 / (1.0 + r->k * r->inv[v]);
    double edge = 0;
    for (int f = 0; f < m->Fb; f++) {
        const float *a = r->v_s + 3 * m->body_faces[3 * f], *b = r->v_s + 3 * m->body_faces[3 * f + 1];
        edge += sqrt((double)(a[0] - b[0]) * (a[0] - b[0]) + (double)(a[1] - b[1]) * (a[1] - b[1]) +
                     (double)(a[2] - b[2]) * (a[2] - b[2]));
    }
    /* four mean edges: a garment vertex is a few centimetres from its nearest body vertex, and a box that
     * wide spans a few such cells (one edge: hundreds); 3x faster than one edge on the shipped T-shirt */
    r->cell = fmax(edge / (m->Fb ? m->Fb : 1), 1e-4) * 4;
    r->bytes = sizeof *r + (size_t)Nb * 3 * sizeof *r->v_s + (size_t)g->n_edges * sizeof *r->l0 +
               (size_t)g->V * sizeof *r->inv;
    free(gb);
    *out = r;
    return DRAPE_OK;
}

void drape_refine_free(drape_refine *r)
{
    if (!r) return;
    free(r->v_s);
    free(r->l0);
    free(r->inv);
    free(r);
}

size_t drape_refine_bytes(const drape_refine *r) { return r ? r->bytes : 0; }

void drape_refine_view_get(const drape_refine *r, drape_refine_view *out)
{
    *out = (drape_refine_view){r->iters, r->k, r->margin, r->rho, r->v_s, r->l0, r->inv};
}

/* x_v moved along n_b to n_b·(x_v − x_b) = margin where it is less */
static void push(double *x, int V, const int *nn, const double *bp, const float *bn, double margin)
{
    for (int v = 0; v < V; v++) {
        const double *b = bp + 3 * nn[v];
        const float *n = bn + 3 * nn[v];
        double *p = x + 3 * v;
        double d = n[0] * (p[0] - b[0]) + n[1] * (p[1] - b[1]) + n[2] * (p[2] - b[2]);
        if (d < margin)
            for (int c = 0; c < 3; c++) p[c] += (margin - d) * n[c];
    }
}

/* one Jacobi sweep: xn_v = (p_v + k Σ (x_u + l0 d̂_vu)) / (1 + k deg_v) */
static void sweep(double *xn, const double *x, const double *p, const drape_refine *r)
{
    const drape_garment *g = r->g;
    memset(xn, 0, (size_t)g->V * 3 * sizeof *xn);
    for (int e = 0; e < g->n_edges; e++) {
        int i = g->edges[2 * e], j = g->edges[2 * e + 1];
        double d[3] = {x[3 * i] - x[3 * j], x[3 * i + 1] - x[3 * j + 1], x[3 * i + 2] - x[3 * j + 2]};
        double l = sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]), s = r->l0[e] / fmax(l, 1e-12);
        for (int c = 0; c < 3; c++) {
            xn[3 * i + c] += x[3 * j + c] + s * d[c];
            xn[3 * j + c] += x[3 * i + c] - s * d[c];
        }
    }
    for (int v = 0; v < g->V; v++)
        for (int c = 0; c < 3; c++) xn[3 * v + c] = (p[3 * v + c] + r->k * xn[3 * v + c]) * r->inv[v];
}

int drape_refine_frame(const drape_refine *r, float *x, const float pose[DRAPE_POSE_DIM], const float trans[3],
                       drape_error *err)
{
    const drape_model *m = r->m;
    int V = r->g->V, Nb = m->Nb, rc = DRAPE_OK;
    float *body = malloc((size_t)Nb * 6 * sizeof *body), *bn = body ? body + (size_t)Nb * 3 : NULL;
    double *bp = malloc((size_t)(Nb + 4 * V) * 3 * sizeof *bp);
    int *nn = calloc((size_t)V + 1, sizeof *nn);
    drape_grid grid = {0};
    if (!body || !bp || !nn) { rc = drape_fail(err, DRAPE_ENOMEM, "out of memory in the refine step"); goto out; }
    double *p = bp + (size_t)Nb * 3, *xa = p + (size_t)V * 3, *xb = xa + (size_t)V * 3, *xo = xb + (size_t)V * 3;
    float A[DRAPE_JOINTS * 12];
    drape_fk(A, pose, trans, r->J, m->parents);
    drape_body_pose(body, m, r->v_s, A);
    drape_mesh_normals(bn, body, Nb, m->body_faces, m->Fb);
    for (int i = 0; i < 3 * Nb; i++) bp[i] = body[i];
    if ((rc = drape_grid_build(&grid, bp, bp, Nb, r->cell))) {
        rc = drape_fail(err, rc, rc == DRAPE_ENOMEM ? "out of memory in the refine step" : "refine step: the posed body is not finite");
        goto out;
    }
    for (int i = 0; i < 3 * V; i++) p[i] = xa[i] = x[i];
    /* the garment's rest-time body vertex (body_nn) is a near guess to start from */
    int64_t budget = REFINE_CELLS_PER_VERTEX * (int64_t)V;
    for (int v = 0; v < V; v++) nn[v] = drape_grid_nearest_hint(&grid, bp, p + 3 * v, r->g->body_nn[v], &budget);
    /* xo: the iterate before xa, which the accelerated sweeps extrapolate from */
    double w = 1, rho2 = r->rho * r->rho;
    for (int it = 0; it < r->iters; it++) {
        push(xa, V, nn, bp, bn, r->margin);
        sweep(xb, xa, p, r);
        if (r->rho > 0 && it >= DRAPE_REFINE_PLAIN_SWEEPS) {
            w = it == DRAPE_REFINE_PLAIN_SWEEPS ? 2 / (2 - rho2) : 4 / (4 - rho2 * w);
            for (int i = 0; i < 3 * V; i++) xb[i] = w * (xb[i] - xo[i]) + xo[i];
        }
        double *t = xo;
        xo = xa, xa = xb, xb = t;
    }
    budget = REFINE_CELLS_PER_VERTEX * (int64_t)V;
    for (int v = 0; v < V; v++) nn[v] = drape_grid_nearest_hint(&grid, bp, xa + 3 * v, nn[v], &budget);
    push(xa, V, nn, bp, bn, r->margin);
    for (int i = 0; i < 3 * V; i++) x[i] = (float)xa[i];
out:
    drape_grid_free(&grid);
    free(body);
    free(bp);
    free(nn);
    return rc;
}
