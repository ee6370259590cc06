#include "cloth.h"

#include <cholmod.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../runtime/mesh.h"
#include "geom.h"

/* a row: x y z and a zero pad. GCC lowers it to two SSE2 operations or one
 * AVX one; element-wise arithmetic without contraction (ISO C mode) rounds
 * exactly as scalar code does. */
typedef double v4d __attribute__((vector_size(32)));

struct drape_cloth {
    drape_cloth_params p;
    int n, ns, nfree, ns_edge; /* springs [0, ns_edge) are mesh edges, the rest bending */
    int32_t *springs;      /* [ns,2] */
    double *l0, *k;        /* [ns] */
    double *mass;          /* [n] lumped */
    double *x, *v, *y;     /* [n,3] */
    v4d *w;                /* [ns] k_s d_s, d_s the spring's direction from the local step (x y z, pad 0), local step's order */
    int32_t *free_of;      /* [n] free index or −1 for a pinned node */
    int32_t *node_of;      /* [nfree] */
    int n_att;
    int32_t *att_node;     /* [n_att] attached vertices */
    double *att_target;    /* [n_att,3] */
    uint8_t *is_free;      /* [n] the collider's mask */
    const drape_collider *col;
    int contacts;
    double *pin_rhs;       /* [nfree,3] −H_fp x_p, constant */
    double *mh2;           /* [nfree] m/h² */
    /* P H Pᵀ = L Lᵀ from CHOLMOD (simplicial), kept as plain CSC so the
     * per-iteration solve is two triangular sweeps over three interleaved
     * right-hand sides, with no library call, allocation or BLAS thread */
    int32_t *Lp, *Li;      /* [nfree+1], [nnz]: diagonal first in each column */
    double *Lx;
    int32_t *Rp, *Ri;      /* the strict lower triangle again by rows, so that the */
    double *Rx;            /* forward sweep gathers (like the backward one) instead of scattering */
    double *Dinv;          /* [nfree] 1 / L_jj */
    uint8_t *fpair, *bpair; /* [nfree] row r and the next one the sweep meets share their entries: solved together */
    int32_t *sp_pos;       /* [ns,2] row of each spring end (row_of), springs in the local step's order: */
    double *ks, *l0s;      /* [ns] k, l0 in that order, by the row of the first end (stable) */
    int32_t *pos;          /* [nfree] free index → row of the permuted system */
    int32_t *row_of;       /* [n] node → row: a free one's in the permuted system, the pinned ones after them */
    v4d *b;                /* [n] right-hand side, then solution, in rows; rows ≥ nfree collect pinned ends' terms, unread */
    v4d *xr;               /* [n] positions in rows during a step's iterations */
    v4d *base;             /* [n] the right-hand side's per-step part M y/h² − H_fp x_p + attach·t */
    double *q2;            /* [ns] squared spring lengths, then l0/|e| */
    v4d *e;                /* [ns] x_j − x_i of each spring, local step's order */
    int32_t *Mp;           /* [n+1] row r is the first end of springs [Mp[r], Mp[r+1]) (local step's order) */
    int32_t *Ip, *Ii;      /* [nfree+1], [≤ ns]: the springs row r is the second end of, ascending */
    int factorizations;
};

static int fail_free(drape_cloth *c, drape_error *err, int code, const char *msg)
{
    drape_cloth_free(c);
    return drape_fail(err, code, "%s", msg);
}

/* H = M/h² + Σ_s k_s (e_i − e_j)(e_i − e_j)ᵀ over the free nodes (lower
 * triangle, as CHOLMOD's symmetric storage wants); springs to a pinned node
 * move into the constant right-hand side −H_fp x_p. Factorized once, and the
 * factor copied out as plain CSC. */
static int factorize(drape_cloth *c, const double *X, drape_error *err)
{
    cholmod_common cm;
    cholmod_start(&cm);
    cm.print = 0;
    cm.supernodal = CHOLMOD_SIMPLICIAL;
    cm.final_ll = 1;
    int nf = c->nfree, ns = c->ns, ok = 0;
    double h2 = c->p.dt * c->p.dt;
    cholmod_sparse *A = NULL;
    cholmod_factor *L = NULL;
    cholmod_triplet *T = cholmod_allocate_triplet((size_t)nf, (size_t)nf, (size_t)nf + (size_t)c->n_att + (size_t)3 * ns, -1, CHOLMOD_REAL, &cm);
    if (T) {
        int32_t *Ti = T->i, *Tj = T->j;
        double *Tx = T->x;
        size_t nz = 0;
#define ADD(r, col, val) (Ti[nz] = (r), Tj[nz] = (col), Tx[nz++] = (val))
        for (int a = 0; a < nf; a++) ADD(a, a, c->mass[c->node_of[a]] / h2);
        for (int a = 0; a < c->n_att; a++) ADD(c->free_of[c->att_node[a]], c->free_of[c->att_node[a]], c->p.attach);
        for (int s = 0; s < ns; s++) {
            int i = c->springs[2 * s], j = c->springs[2 * s + 1], fi = c->free_of[i], fj = c->free_of[j];
            double k = c->k[s];
            if (fi >= 0) ADD(fi, fi, k);
            if (fj >= 0) ADD(fj, fj, k);
            if (fi >= 0 && fj >= 0) ADD(fi > fj ? fi : fj, fi > fj ? fj : fi, -k);
            else if (fi >= 0 || fj >= 0) { /* one end pinned: −H_fp x_p = +k x_pin */
                int f = fi >= 0 ? fi : fj, pin = fi >= 0 ? j : i;
                for (int d = 0; d < 3; d++) c->pin_rhs[3 * f + d] += k * X[3 * pin + d];
            }
        }
#undef ADD
        T->nnz = nz;
        A = cholmod_triplet_to_sparse(T, nz, &cm); /* sums duplicates */
    }
    if (A) L = cholmod_analyze(A, &cm);
    if (L && cholmod_factorize(A, L, &cm) && cm.status == CHOLMOD_OK && L->is_ll && !L->is_super) {
        const int32_t *p = L->p, *ix = L->i, *cnt = L->nz, *perm = L->Perm;
        const double *x = L->x;
        size_t nnz = 0;
        for (int j = 0; j < nf; j++) nnz += (size_t)cnt[j];
        c->Lp = malloc(((size_t)nf + 1) * sizeof(int32_t));
        c->Li = malloc(nnz * sizeof(int32_t));
        c->Lx = malloc(nnz * sizeof(double));
        c->pos = malloc((size_t)nf * sizeof(int32_t));
        ok = c->Lp && c->Li && c->Lx && c->pos;
        for (int j = 0, q = 0; ok && j < nf; j++) {
            c->Lp[j] = q;
            for (int k = p[j]; k < p[j] + cnt[j]; k++, q++) c->Li[q] = ix[k], c->Lx[q] = x[k];
            c->pos[perm[j]] = j;
        }
        if (ok) c->Lp[nf] = (int32_t)nnz;
        size_t low = nnz - (size_t)nf;
        c->Rp = ok ? calloc((size_t)nf + 1, sizeof(int32_t)) : NULL;
        c->Ri = ok ? malloc((low + 1) * sizeof(int32_t)) : NULL;
        c->Rx = ok ? malloc((low + 1) * sizeof(double)) : NULL;
        c->Dinv = ok ? malloc((size_t)nf * sizeof(double)) : NULL;
        ok = ok && c->Rp && c->Ri && c->Rx && c->Dinv;
        for (int j = 0; ok && j < nf; j++) {
            c->Dinv[j] = 1.0 / c->Lx[c->Lp[j]];
            for (int q = c->Lp[j] + 1; q < c->Lp[j + 1]; q++) c->Rp[c->Li[q] + 1]++;
        }
        for (int i = 0; ok && i < nf; i++) c->Rp[i + 1] += c->Rp[i];
        for (int j = 0; ok && j < nf; j++) /* columns ascending: each row's entries in column order */
            for (int q = c->Lp[j] + 1; q < c->Lp[j + 1]; q++) {
                int i = c->Li[q], r = c->Rp[i]++;
                c->Ri[r] = j, c->Rx[r] = c->Lx[q];
            }
        for (int i = nf; ok && i > 0; i--) c->Rp[i] = c->Rp[i - 1];
        if (ok) c->Rp[0] = 0;
        /* both sweeps scale each row by 1/L_rr up front, so the values are stored scaled */
        for (int i = 0; ok && i < nf; i++)
            for (int q = c->Rp[i]; q < c->Rp[i + 1]; q++) c->Rx[q] *= c->Dinv[i];
        for (int j = 0; ok && j < nf; j++)
            for (int q = c->Lp[j] + 1; q < c->Lp[j + 1]; q++) c->Lx[q] *= c->Dinv[j];
        /* pairs: forward, row i+1's columns are row i's and then i; backward,
         * column j−1's rows are j and then column j's */
        c->fpair = ok ? calloc((size_t)nf + 1, 1) : NULL;
        c->bpair = ok ? calloc((size_t)nf + 1, 1) : NULL;
        ok = ok && c->fpair && c->bpair;
        for (int i = 0; ok && i + 1 < nf; i++) {
            int n0 = c->Rp[i + 1] - c->Rp[i], n1 = c->Rp[i + 2] - c->Rp[i + 1];
            int same = n1 == n0 + 1 && c->Ri[c->Rp[i + 2] - 1] == i;
            for (int t = 0; same && t < n0; t++) same = c->Ri[c->Rp[i] + t] == c->Ri[c->Rp[i + 1] + t];
            c->fpair[i] = (uint8_t)same;
        }
        for (int j = nf - 1; ok && j > 0; j--) {
            int n0 = c->Lp[j + 1] - c->Lp[j] - 1, n1 = c->Lp[j] - c->Lp[j - 1] - 1;
            int same = n1 == n0 + 1 && c->Li[c->Lp[j - 1] + 1] == j;
            for (int t = 0; same && t < n0; t++) same = c->Li[c->Lp[j] + 1 + t] == c->Li[c->Lp[j - 1] + 2 + t];
            c->bpair[j] = (uint8_t)same;
        }
    }
    cholmod_free_triplet(&T, &cm);
    cholmod_free_sparse(&A, &cm);
    cholmod_free_factor(&L, &cm);
    cholmod_finish(&cm);
    if (!ok) return drape_fail(err, DRAPE_EBACKEND, "cloth: CHOLMOD could not factorize the global matrix");
    c->factorizations++;
    return DRAPE_OK;
}

/* Appends a bending spring per interior edge: between the edge's two
 * opposite vertices. */
static int add_bending(drape_cloth *c, const int32_t *faces, int F)
{
    int32_t *h, nh;
    if (drape_hinges(&h, &nh, faces, F)) return DRAPE_ENOMEM;
    int32_t *s = realloc(c->springs, ((size_t)c->ns + nh + 1) * 2 * sizeof *s);
    if (!s) { free(h); return DRAPE_ENOMEM; }
    c->springs = s;
    for (int i = 0; i < nh; i++) {
        s[2 * (c->ns + i)] = h[4 * i + 2];
        s[2 * (c->ns + i) + 1] = h[4 * i + 3];
    }
    c->ns += nh;
    free(h);
    return DRAPE_OK;
}

static int bad_params(const drape_cloth_params *p, int n_attach)
{
    return !(p->dt > 0) || !isfinite(p->dt) || p->iters < 1 || !(p->ym > 0) || !isfinite(p->ym) || !isfinite(p->gravity) ||
           (p->mass == DRAPE_MASS_AREA && !(p->density > 0)) || !(p->bend >= 0) || !isfinite(p->bend) ||
           !(p->attach >= 0) || !isfinite(p->attach) || (n_attach > 0 && !(p->attach > 0)) || !(p->damping >= 0) ||
           !(p->damping < 1) || !(p->margin >= 0) || !isfinite(p->margin) || !(p->friction >= 0) || !(p->friction <= 1);
}

int drape_cloth_create(drape_cloth **out, const double *X, int n, const int32_t *faces, int F, const int32_t *pins,
                       int n_pins, const drape_cloth_params *p, drape_error *err)
{
    return drape_cloth_create_attached(out, X, n, faces, F, pins, n_pins, NULL, 0, p, err);
}

int drape_cloth_create_attached(drape_cloth **out, const double *X, int n, const int32_t *faces, int F,
                                const int32_t *pins, int n_pins, const int32_t *attach, int n_attach,
                                const drape_cloth_params *p, drape_error *err)
{
    *out = NULL;
    if (n < 1 || F < 1) return drape_fail(err, DRAPE_EINVAL, "cloth: needs vertices and triangles (got %d, %d)", n, F);
    if (n_attach < 0 || n_pins < 0) return drape_fail(err, DRAPE_EINVAL, "cloth: negative pin or attachment count");
    if (bad_params(p, n_attach))
        return drape_fail(err, DRAPE_EINVAL,
                          "cloth: dt, ym (and density, attach with attachments) must be positive, iters >= 1, gravity "
                          "finite, bend and margin >= 0, damping in [0, 1), friction in [0, 1]");
    for (int i = 0; i < 3 * n; i++)
        if (!isfinite(X[i])) return drape_fail(err, DRAPE_ENONFINITE, "cloth: vertex %d is NaN or Inf", i / 3);
    for (int i = 0; i < 3 * F; i++)
        if (faces[i] < 0 || faces[i] >= n)
            return drape_fail(err, DRAPE_ERANGE, "cloth: triangle %d refers to vertex %d of %d", i / 3, faces[i], n);
    double *area = calloc((size_t)F, sizeof *area);
    if (!area) return drape_fail(err, DRAPE_ENOMEM, "out of memory");
    for (int f = 0; f < F; f++) {
        const double *a = X + 3 * faces[3 * f], *b = X + 3 * faces[3 * f + 1], *cc = X + 3 * faces[3 * f + 2];
        double e1[3] = {b[0] - a[0], b[1] - a[1], b[2] - a[2]}, e2[3] = {cc[0] - a[0], cc[1] - a[1], cc[2] - a[2]};
        double cx = e1[1] * e2[2] - e1[2] * e2[1], cy = e1[2] * e2[0] - e1[0] * e2[2], cz = e1[0] * e2[1] - e1[1] * e2[0];
        area[f] = 0.5 * sqrt(cx * cx + cy * cy + cz * cz);
        if (!(area[f] > 1e-14)) {
            double a0 = area[f];
            free(area);
            return drape_fail(err, DRAPE_EINVAL, "cloth: triangle %d is degenerate (area %g)", f, a0);
        }
    }
    drape_cloth *c = calloc(1, sizeof *c);
    if (!c) { free(area); return drape_fail(err, DRAPE_ENOMEM, "out of memory"); }
    c->p = *p;
    c->n = n;
    if (drape_mesh_edges(&c->springs, &c->ns, faces, F)) { free(area); return fail_free(c, err, DRAPE_ENOMEM, "out of memory"); }
    c->ns_edge = c->ns;
    if (p->bend > 0 && add_bending(c, faces, F)) { free(area); return fail_free(c, err, DRAPE_ENOMEM, "out of memory"); }
    int ns = c->ns;
    c->l0 = malloc((size_t)ns * sizeof(double));
    c->k = malloc((size_t)ns * sizeof(double));
    c->mass = calloc((size_t)n, sizeof(double));
    c->x = malloc((size_t)n * 3 * sizeof(double));
    c->v = calloc((size_t)n * 3, sizeof(double));
    c->y = malloc((size_t)n * 3 * sizeof(double));
    c->w = aligned_alloc(32, (size_t)ns * sizeof(v4d));
    c->free_of = malloc((size_t)n * sizeof(int32_t));
    c->is_free = malloc((size_t)n);
    c->att_node = malloc(((size_t)n_attach + 1) * sizeof(int32_t));
    c->att_target = malloc(((size_t)n_attach + 1) * 3 * sizeof(double));
    if (!c->l0 || !c->k || !c->mass || !c->x || !c->v || !c->y || !c->w || !c->free_of || !c->is_free || !c->att_node ||
        !c->att_target) {
        free(area);
        return fail_free(c, err, DRAPE_ENOMEM, "out of memory");
    }
    memcpy(c->x, X, (size_t)n * 3 * sizeof(double));
    for (int s = 0; s < ns; s++) {
        const double *a = X + 3 * c->springs[2 * s], *b = X + 3 * c->springs[2 * s + 1];
        double l = sqrt((b[0] - a[0]) * (b[0] - a[0]) + (b[1] - a[1]) * (b[1] - a[1]) + (b[2] - a[2]) * (b[2] - a[2]));
        if (!(l > 1e-12)) {
            free(area);
            char msg[96];
            snprintf(msg, sizeof msg, "cloth: %s %d-%d has zero length", s < c->ns_edge ? "edge" : "bending spring",
                     c->springs[2 * s], c->springs[2 * s + 1]);
            return fail_free(c, err, DRAPE_EINVAL, msg);
        }
        c->l0[s] = l;
        c->k[s] = (s < c->ns_edge ? p->ym : p->bend) / (l * l);
        c->w[s] = c->k[s] * (v4d){b[0] - a[0], b[1] - a[1], b[2] - a[2], 0}; /* rest direction, kept by a collapsed spring */
    }
    for (int i = 0; i < n; i++) c->mass[i] = p->mass == DRAPE_MASS_UNIT ? 1.0 : 0.0;
    if (p->mass == DRAPE_MASS_AREA)
        for (int f = 0; f < F; f++)
            for (int k = 0; k < 3; k++) c->mass[faces[3 * f + k]] += p->density * area[f] / 3.0;
    free(area);
    for (int i = 0; i < n; i++) c->free_of[i] = 0;
    for (int i = 0; i < n_pins; i++) {
        if (pins[i] < 0 || pins[i] >= n) {
            char msg[96];
            snprintf(msg, sizeof msg, "cloth: pin %d is not a vertex (the mesh has %d)", pins[i], n);
            return fail_free(c, err, DRAPE_ERANGE, msg);
        }
        c->free_of[pins[i]] = -1;
    }
    for (int i = 0; i < n; i++) {
        if (c->free_of[i] == 0 && !(c->mass[i] > 0))
            return fail_free(c, err, DRAPE_EINVAL, "cloth: a free vertex has no mass (not in any triangle)");
        c->free_of[i] = c->free_of[i] < 0 ? -1 : c->nfree++;
    }
    for (int i = 0; i < n; i++) c->is_free[i] = c->free_of[i] >= 0;
    for (int a = 0; a < n_attach; a++) {
        int i = attach[a];
        char msg[128];
        if (i < 0 || i >= n || c->is_free[i] != 1) {
            snprintf(msg, sizeof msg, "cloth: attachment %d (vertex %d) is %s", a, i,
                     i < 0 || i >= n ? "not a vertex" : c->is_free[i] == 2 ? "listed twice" : "pinned");
            return fail_free(c, err, i < 0 || i >= n ? DRAPE_ERANGE : DRAPE_EINVAL, msg);
        }
        c->is_free[i] = 2; /* marks duplicates; reset below */
        c->att_node[a] = i;
        for (int d = 0; d < 3; d++) c->att_target[3 * a + d] = X[3 * i + d];
    }
    c->n_att = n_attach;
    for (int a = 0; a < n_attach; a++) c->is_free[attach[a]] = 1;
    c->node_of = malloc(((size_t)c->nfree + 1) * sizeof(int32_t));
    c->pin_rhs = calloc((size_t)c->nfree * 3 + 1, sizeof(double));
    if (!c->node_of || !c->pin_rhs) return fail_free(c, err, DRAPE_ENOMEM, "out of memory");
    for (int i = 0; i < n; i++)
        if (c->free_of[i] >= 0) c->node_of[c->free_of[i]] = i;
    if (c->nfree == 0) { *out = c; return DRAPE_OK; } /* everything pinned: nothing to solve */

    int rc = factorize(c, X, err);
    if (rc) { drape_cloth_free(c); return rc; }
    c->sp_pos = malloc((size_t)c->ns * 2 * sizeof(int32_t) + 1);
    c->mh2 = malloc((size_t)c->nfree * sizeof(double));
    c->row_of = malloc((size_t)n * sizeof(int32_t));
    c->b = aligned_alloc(32, (size_t)n * sizeof(v4d));
    c->xr = aligned_alloc(32, (size_t)n * sizeof(v4d));
    c->base = aligned_alloc(32, (size_t)n * sizeof(v4d));
    c->q2 = malloc((size_t)c->ns * sizeof(double) + 1);
    c->e = aligned_alloc(32, ((size_t)c->ns + 1) * sizeof(v4d));
    c->Ip = calloc((size_t)c->nfree + 2, sizeof(int32_t));
    c->Mp = calloc((size_t)n + 2, sizeof(int32_t));
    c->Ii = malloc(((size_t)c->ns + 1) * sizeof(int32_t));
    c->ks = malloc(((size_t)c->ns + 1) * sizeof(double));
    c->l0s = malloc(((size_t)c->ns + 1) * sizeof(double));
    int32_t *ord = malloc(((size_t)c->ns + 1) * sizeof(int32_t));
    if (!c->sp_pos || !c->mh2 || !c->row_of || !c->b || !c->xr || !c->base || !c->q2 || !c->e || !c->Mp || !c->Ip || !c->Ii ||
        !c->ks || !c->l0s || !ord) {
        free(ord);
        return fail_free(c, err, DRAPE_ENOMEM, "out of memory");
    }
    for (int a = 0; a < c->nfree; a++) c->mh2[a] = c->mass[c->node_of[a]] / (p->dt * p->dt);
    for (int i = 0, np = 0; i < n; i++) c->row_of[i] = c->free_of[i] < 0 ? c->nfree + np++ : c->pos[c->free_of[i]];
    /* the local step's spring order: by the row of the first end, so that a
     * row's −k d terms are consecutive */
    for (int s = 0; s < c->ns; s++) c->Mp[c->row_of[c->springs[2 * s]] + 2]++;
    for (int r = 0; r < n; r++) c->Mp[r + 2] += c->Mp[r + 1];
    for (int s = 0; s < c->ns; s++) ord[c->Mp[c->row_of[c->springs[2 * s]] + 1]++] = s;
    memcpy(c->e, c->w, (size_t)c->ns * sizeof(v4d));
    for (int t = 0; t < c->ns; t++) {
        int s = ord[t];
        c->sp_pos[2 * t] = c->row_of[c->springs[2 * s]], c->sp_pos[2 * t + 1] = c->row_of[c->springs[2 * s + 1]];
        c->ks[t] = c->k[s], c->l0s[t] = c->l0[s], c->w[t] = c->e[s];
    }
    free(ord);
    /* each free row's spring ends, by rows, in spring order (so the sums are
     * the ones a scatter in spring order would make) */
    for (int q = 1; q < 2 * c->ns; q += 2)
        if (c->sp_pos[q] < c->nfree) c->Ip[c->sp_pos[q] + 2]++;
    for (int r = 0; r < c->nfree; r++) c->Ip[r + 2] += c->Ip[r + 1];
    for (int q = 1; q < 2 * c->ns; q += 2)
        if (c->sp_pos[q] < c->nfree) c->Ii[c->Ip[c->sp_pos[q] + 1]++] = q / 2;
    memset(c->b, 0, (size_t)n * sizeof(v4d));
    memset(c->base, 0, (size_t)n * sizeof(v4d)); /* the pinned rows stay zero */
    *out = c;
    return DRAPE_OK;
}

void drape_cloth_free(drape_cloth *c)
{
    if (!c) return;
    free(c->Lp); free(c->Li); free(c->Lx); free(c->pos); free(c->b);
    free(c->Rp); free(c->Ri); free(c->Rx); free(c->Dinv); free(c->fpair); free(c->bpair); free(c->sp_pos); free(c->mh2);
    free(c->row_of); free(c->xr); free(c->base); free(c->q2); free(c->e); free(c->Mp); free(c->Ip); free(c->ks); free(c->l0s); free(c->Ii);
    free(c->springs); free(c->l0); free(c->k); free(c->mass); free(c->x); free(c->v); free(c->y); free(c->w);
    free(c->free_of); free(c->node_of); free(c->pin_rhs);
    free(c->is_free); free(c->att_node); free(c->att_target);
    free(c);
}

/* B_r ← B_r · inv − Σ_q val_q B_idx_q over q in [lo, hi) and then the
 * entry `late` (lo − 1 or hi, or −1 for none), the values prescaled by inv:
 * one row of either sweep, by gathering whole rows. The late entry is the
 * row usually solved just before (`prev`, row `prev_r`, taken from the
 * register then), so everything else is summed while it is still being
 * computed; four accumulators (summed pairwise at the end) break the chain
 * of dependent subtractions. The order of the sums is fixed (and no FMA
 * contraction in ISO C mode): results are reproducible. */
static inline void solve_row(v4d *B, int r, const int32_t *idx, const double *val, int q, int hi, int late, double inv,
                             v4d *prev, int prev_r)
{
    v4d a = B[r] * inv, b = {0, 0, 0, 0}, e = b, f = b;
    for (; q + 3 < hi; q += 4) {
        a -= val[q] * B[idx[q]], b -= val[q + 1] * B[idx[q + 1]];
        e -= val[q + 2] * B[idx[q + 2]], f -= val[q + 3] * B[idx[q + 3]];
    }
    for (; q < hi; q++) a -= val[q] * B[idx[q]];
    a = (a + b) + (e + f);
    if (late >= 0) a -= val[late] * (idx[late] == prev_r ? *prev : B[idx[late]]);
    B[r] = *prev = a;
}

/* Rows r1 then r2 of a sweep whose entries are the same m rows of B
 * (values u for r1, w for r2), r2 also depending on r1 (value link): each
 * B row is loaded once for both, two accumulators each. */
static inline void solve_pair(v4d *B, int r1, int r2, const int32_t *idx, const double *u, const double *w, int m,
                              double inv1, double inv2, double link, v4d *prev)
{
    v4d a = B[r1] * inv1, b = {0, 0, 0, 0}, e = B[r2] * inv2, f = b;
    int q = 0;
    for (; q + 1 < m; q += 2) {
        v4d y0 = B[idx[q]], y1 = B[idx[q + 1]];
        a -= u[q] * y0, b -= u[q + 1] * y1;
        e -= w[q] * y0, f -= w[q + 1] * y1;
    }
    if (q < m) {
        v4d y0 = B[idx[q]];
        a -= u[q] * y0, e -= w[q] * y0;
    }
    a += b;
    B[r1] = a;
    B[r2] = *prev = (e + f) - link * a;
}

/* r_s = l0_s / sqrt(q_s) in place: a plain loop the compiler vectorizes */
__attribute__((target_clones("avx512f", "arch=haswell", "default"))) static void
rest_ratios(double *restrict q, const double *restrict l0, int ns)
{
    for (int s = 0; s < ns; s++) q[s] = l0[s] / sqrt(q[s]);
}

/* One local/global iteration. Local: d_s = l0 (x_j − x_i)/|x_j − x_i| (the
 * previous d_s if the spring collapsed). Global: x_free = H⁻¹ (M y/h² + GᵀW d
 * − H_fp x_p), the right-hand side built in the factor's row order on the
 * per-step part, then L y = b, Lᵀ x = y. Positions live in rows (xr) during
 * the iterations: the solution becomes xr, the pinned rows carried over. */
__attribute__((target_clones("avx512f", "arch=haswell", "default"))) static void iterate(drape_cloth *c)
{
    v4d *B = c->b, *X = c->xr;
    int nf = c->nfree, n = c->n, ns = c->ns;
    const int32_t *Lp = c->Lp, *Li = c->Li, *sp = c->sp_pos;
    const double *Lx = c->Lx, *Dinv = c->Dinv;
    double *q2 = c->q2;
    v4d *E = c->e;
    v4d *W = c->w;
    for (int s0 = 0; s0 < ns; s0 += 128) { /* in blocks that stay in L1 */
        int s1 = s0 + 128 < ns ? s0 + 128 : ns;
        for (int s = s0; s < s1; s++) {
            v4d e = X[sp[2 * s + 1]] - X[sp[2 * s]];
            q2[s] = e[0] * e[0] + e[1] * e[1] + e[2] * e[2];
            E[s] = e;
        }
        rest_ratios(q2 + s0, c->l0s + s0, s1 - s0);
        for (int s = s0; s < s1; s++) {
            double r = q2[s];
            v4d w = c->ks[s] * (r * E[s]);
            W[s] = r < INFINITY ? w : W[s]; /* |e| = 0 gives inf (l0 > 0), NaN stays out too */
        }
    }
    /* the right-hand side row by row (gathering its springs' terms), then
     * both sweeps, gathering too: the forward one by rows, the backward one
     * down L's columns */
    const int32_t *Ip = c->Ip, *Mp = c->Mp, *Ii = c->Ii;
    v4d prev = {0, 0, 0, 0};
    for (int i = 0; i < nf; i++) {
        v4d m = {0, 0, 0, 0}, p = m;
        for (int s = Mp[i]; s < Mp[i + 1]; s++) m += W[s];
        for (int q = Ip[i]; q < Ip[i + 1]; q++) p += W[Ii[q]];
        B[i] = (c->base[i] - m) + p;
    }
    for (int i = 0; i < nf; i++) {
        int lo = c->Rp[i], hi = c->Rp[i + 1]; /* columns ascending: the last one is the latest row */
        if (c->fpair[i]) {
            solve_pair(B, i, i + 1, c->Ri + lo, c->Rx + lo, c->Rx + hi, hi - lo, Dinv[i], Dinv[i + 1], c->Rx[c->Rp[i + 2] - 1], &prev);
            i++;
            continue;
        }
        solve_row(B, i, c->Ri, c->Rx, lo, hi > lo ? hi - 1 : hi, hi > lo ? hi - 1 : -1, Dinv[i], &prev, i - 1); /* L y = b */
    }
    for (int j = nf - 1; j >= 0; j--) { /* Lᵀ x = y; rows ascending: the first one is the latest */
        int lo = Lp[j] + 1, hi = Lp[j + 1];
        if (c->bpair[j]) {
            solve_pair(B, j, j - 1, Li + lo, Lx + lo, Lx + Lp[j - 1] + 2, hi - lo, Dinv[j], Dinv[j - 1], Lx[Lp[j - 1] + 1], &prev);
            j--;
            continue;
        }
        solve_row(B, j, Li, Lx, hi > lo ? lo + 1 : lo, hi, hi > lo ? lo : -1, Dinv[j], &prev, j + 1);
    }
    for (int i = nf; i < n; i++) B[i] = X[i];
    c->xr = B, c->b = X;
}

/* positions of the free nodes from the rows back to x */
static void rows_to_x(drape_cloth *c)
{
    for (int a = 0; a < c->nfree; a++) {
        const v4d *r = c->xr + c->pos[a];
        double *x = c->x + 3 * c->node_of[a];
        x[0] = (*r)[0], x[1] = (*r)[1], x[2] = (*r)[2];
    }
}

double drape_cloth_energy(const drape_cloth *c, const double *x)
{
    double h2 = c->p.dt * c->p.dt, e = 0;
    for (int i = 0; i < c->n; i++)
        for (int k = 0; k < 3; k++) {
            double r = x[3 * i + k] - c->y[3 * i + k];
            e += 0.5 / h2 * c->mass[i] * r * r;
        }
    for (int s = 0; s < c->ns; s++) {
        const double *a = x + 3 * c->springs[2 * s], *b = x + 3 * c->springs[2 * s + 1];
        double l = sqrt((b[0] - a[0]) * (b[0] - a[0]) + (b[1] - a[1]) * (b[1] - a[1]) + (b[2] - a[2]) * (b[2] - a[2]));
        e += 0.5 * c->k[s] * (l - c->l0[s]) * (l - c->l0[s]);
    }
    for (int a = 0; a < c->n_att; a++)
        for (int k = 0; k < 3; k++) {
            double r = x[3 * c->att_node[a] + k] - c->att_target[3 * a + k];
            e += 0.5 * c->p.attach * r * r;
        }
    return e;
}

int drape_cloth_step_traced(drape_cloth *c, double *energies, drape_error *err)
{
    (void)err; /* nothing in a step can fail: inputs were checked when they were set */
    double h = c->p.dt;
    int n3 = 3 * c->n;
    /* momentum target y = x + h v + h² g, g = (0, −gravity, 0); pinned nodes stay */
    for (int i = 0; i < c->n; i++)
        for (int k = 0; k < 3; k++)
            c->y[3 * i + k] = c->x[3 * i + k] + h * c->v[3 * i + k] - (k == 1 ? h * h * c->p.gravity : 0.0);
    double *x0 = c->v; /* v is rewritten below: keep x_n in it meanwhile */
    for (int i = 0; i < n3; i++) x0[i] = c->x[i];
    if (c->nfree) {
        for (int i = 0; i < c->n; i++) {
            const double *x = c->x + 3 * i;
            c->xr[c->row_of[i]] = (v4d){x[0], x[1], x[2], 0};
        }
        for (int a = 0; a < c->nfree; a++) {
            int i = c->node_of[a];
            v4d *r = c->base + c->pos[a];
            for (int k = 0; k < 3; k++) (*r)[k] = c->mh2[a] * c->y[3 * i + k] + c->pin_rhs[3 * a + k];
        }
        for (int a = 0; a < c->n_att; a++) {
            v4d *r = c->base + c->pos[c->free_of[c->att_node[a]]];
            for (int k = 0; k < 3; k++) (*r)[k] += c->p.attach * c->att_target[3 * a + k];
        }
    }
    for (int it = 0; it < c->p.iters && c->nfree; it++) {
        iterate(c);
        if (energies) rows_to_x(c), energies[it] = drape_cloth_energy(c, c->x);
    }
    if (c->nfree && !energies) rows_to_x(c);
    for (int i = 0; i < n3; i++) c->v[i] = (c->x[i] - x0[i]) / h;
    c->contacts = c->col ? drape_collider_project(c->col, c->x, c->v, c->is_free, c->n, c->p.margin, c->p.friction) : 0;
    if (c->p.damping > 0)
        for (int i = 0; i < n3; i++) c->v[i] *= 1 - c->p.damping;
    return DRAPE_OK;
}

int drape_cloth_set_targets(drape_cloth *c, const double *targets, drape_error *err)
{
    for (int i = 0; i < 3 * c->n_att; i++)
        if (!isfinite(targets[i])) return drape_fail(err, DRAPE_ENONFINITE, "cloth: target %d is NaN or Inf", i / 3);
    memcpy(c->att_target, targets, (size_t)c->n_att * 3 * sizeof *targets);
    return DRAPE_OK;
}

int drape_cloth_set_state(drape_cloth *c, const double *x, const double *v, drape_error *err)
{
    for (int i = 0; i < 3 * c->n; i++)
        if (!isfinite(x[i]) || (v && !isfinite(v[i])))
            return drape_fail(err, DRAPE_ENONFINITE, "cloth: state of vertex %d is NaN or Inf", i / 3);
    for (int i = 0; i < c->n; i++)
        if (c->is_free[i])
            for (int d = 0; d < 3; d++) c->x[3 * i + d] = x[3 * i + d], c->v[3 * i + d] = v ? v[3 * i + d] : 0;
    return DRAPE_OK;
}

void drape_cloth_set_collider(drape_cloth *c, const drape_collider *col) { c->col = col; }
int drape_cloth_bend_springs(const drape_cloth *c) { return c->ns - c->ns_edge; }
int drape_cloth_contacts(const drape_cloth *c) { return c->contacts; }

int drape_cloth_step(drape_cloth *c, drape_error *err) { return drape_cloth_step_traced(c, NULL, err); }

const double *drape_cloth_positions(const drape_cloth *c) { return c->x; }
const double *drape_cloth_velocities(const drape_cloth *c) { return c->v; }
int drape_cloth_nodes(const drape_cloth *c) { return c->n; }
int drape_cloth_springs(const drape_cloth *c) { return c->ns; }
int drape_cloth_factorizations(const drape_cloth *c) { return c->factorizations; }
