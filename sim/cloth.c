#include "cloth.h"

#include <cholmod.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../core/mesh.h"
#include "../core/geom.h"
#include "../core/simd.h"

/* a row: x y z and a zero pad. GCC lowers it to two SSE2 operations or one
 * AVX one; element-wise arithmetic without contraction (ISO C mode) rounds
 * exactly as scalar code does. */
typedef double v4d __attribute__((vector_size(32)));
typedef long long v4i __attribute__((vector_size(32)));

/* What depends only on rest data: the springs, masses, the factor and the
 * layouts of the iterations. Immutable once made, so any number of cloths
 * (an avatar each, in the server) share one. */
struct drape_cloth_system {
    drape_cloth_params p;
    int n, ns, nfree, ns_edge; /* springs [0, ns_edge) are mesh edges, the rest bending */
    int32_t *springs;      /* [ns,2] */
    double *l0, *k;        /* [ns] */
    double *mass;          /* [n] lumped */
    double *X0;            /* [n,3] rest positions: a new state's start, the pinned nodes' place */
    v4d *w0;               /* [ns+1] k_s times the rest direction, local step's order: a new state's d_s */
    int32_t *free_of;      /* [n] free index or −1 for a pinned node */
    int32_t *node_of;      /* [nfree] */
    int n_att;
    int32_t *att_node;     /* [n_att] attached vertices */
    uint8_t *is_free;      /* [n] the collider's mask */
    double *pin_rhs;       /* [nfree,3] −H_fp x_p, constant */
    double *mh2;           /* [nfree] m/h² */
    /* P H Pᵀ = L Lᵀ from CHOLMOD (simplicial), kept in panels of 4
     * consecutive columns, so the per-iteration solve is two triangular
     * sweeps over three interleaved right-hand sides, with no library call,
     * allocation or BLAS thread. A panel is the 4×4 triangle on its diagonal
     * and, for each row below it that any of its columns reaches, the 4
     * entries of that row (zeros where a column does not reach it): each
     * such row is loaded once per panel, not once per entry, and the inner
     * loops have one trip count per panel, not per column. */
    int nf4;               /* nfree rounded up to whole panels; rows [nfree, nf4) are padding (stay 0) */
    int32_t *Pp, *PI;      /* [nf4/4+1], [Pp[np]]: panel p's rows below it, PI[Pp[p] .. Pp[p+1]), ascending, an even count (row nrows fills) */
    double *PF;            /* [4·Pp[np]] their 4 entries, read by both sweeps (the backward one scales its sums by 1/L_jj after) */
    double *PT;            /* [np,12] the in-panel triangle's inverses: 6 forward (L's rows scaled by 1/L_ii), 6 backward (columns by 1/L_jj) */
    double *Dinv;          /* [nf4] 1 / L_jj, 0 on padding */
    int32_t *sp_pos;       /* [ns,2] row of each spring end (row_of), springs in the local step's order: */
    double *ks, *l0s;      /* [ns] k, l0 in that order, by the row of the first end (stable) */
    int32_t *pos;          /* [nfree] free index → row of the permuted system */
    int32_t *row_of;       /* [n] node → row: a free one's in the permuted system, the pinned ones after them */
    int nrows;             /* nf4 + pinned nodes; one more row, always zero, fills the panels' pairs */
    int32_t *Mp;           /* [nrows+1] row r is the first end of springs [Mp[r], Mp[r+1]) (local step's order) */
    int32_t *Ip, *Ii;      /* [nfree+1], [≤ ns]: the springs row r is the second end of, ascending */
    int deg;               /* springs per free row, at most, when ≤ 16 (else 0: the lists above are used) */
    int32_t *Ai;           /* [nfree,deg] a row's springs, padded with ns (W[ns] = 0) */
    double *As;            /* [nfree,deg] −1 first end, +1 second end, 0 padding */
    int factorizations;
    size_t bytes;          /* what all of the above holds */
};

/* One cloth's state and workspaces over a system. */
struct drape_cloth {
    const drape_cloth_system *s;
    drape_cloth_system *own; /* the system when this cloth made it (freed with it), else NULL */
    double *x, *v, *y;     /* [n,3] */
    v4d *w;                /* [ns+1] k_s d_s, d_s the spring's direction from the local step (x y z, pad 0), local step's order; w[ns] = 0 */
    double *att_target;    /* [n_att,3] */
    double *guide;         /* [n,3] the guide's targets, NULL when params.guide is 0 */
    drape_collider *col;
    int contacts;
    v4d *b;                /* [nrows+1] right-hand side, then solution, in rows; rows ≥ nf4 collect pinned ends' terms, unread */
    v4d *xr;               /* [nrows+1] positions in rows during a step's iterations */
    v4d *base;             /* [nrows+1] the right-hand side's per-step part M y/h² − H_fp x_p + attach·t */
    double *q2;            /* [ns] squared spring lengths, then l0/|e| */
    v4d *e;                /* [ns] x_j − x_i of each spring, local step's order */
    v4d *xm;               /* [nrows+1] the iterate before the last (Chebyshev), NULL when off */
    size_t bytes;
};

/* r_s = l0_s / sqrt(q_s) in place: a plain loop the compiler vectorizes */
DRAPE_CLONES static void rest_ratios(double *restrict q, const double *restrict l0, int ns)
{
    for (int s = 0; s < ns; s++) q[s] = l0[s] / sqrt(q[s]);
}

static int fail_free(drape_cloth_system *c, drape_error *err, int code, const char *msg)
{
    drape_cloth_system_free(c);
    return drape_fail(err, code, "%s", msg);
}

static int cmp_i32(const void *a, const void *b)
{
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

/* The simplicial factor into panels (see the struct), the permutation into
 * pos. Nonzero on allocation failure. */
static int to_panels(drape_cloth_system *c, const cholmod_factor *L)
{
    const int32_t *Lp = L->p, *Li = L->i, *cnt = L->nz, *perm = L->Perm;
    const double *Lx = L->x;
    int nf = c->nfree, nf4 = (nf + 3) & ~3, np = nf4 / 4;
    c->nf4 = nf4;
    c->pos = malloc((size_t)nf * sizeof(int32_t));
    c->Dinv = calloc((size_t)nf4, sizeof(double));
    c->Pp = calloc((size_t)np + 1, sizeof(int32_t));
    c->PT = calloc((size_t)np * 12, sizeof(double));
    int32_t *mark = malloc((size_t)nf4 * sizeof(int32_t)), *slot = malloc((size_t)nf4 * sizeof(int32_t));
    if (!c->pos || !c->Dinv || !c->Pp || !c->PT || !mark || !slot) goto fail;
    for (int j = 0; j < nf; j++) c->pos[perm[j]] = j, c->Dinv[j] = 1.0 / Lx[Lp[j]]; /* diagonal first */
    /* panel p's rows below it: the union of its columns' rows ≥ 4p + 4 */
    for (int i = 0; i < nf4; i++) mark[i] = -1;
    for (int p = 0; p < np; p++) {
        int n_below = 0;
        for (int j = 4 * p; j < 4 * p + 4 && j < nf; j++)
            for (int k = Lp[j] + 1; k < Lp[j] + cnt[j]; k++)
                if (Li[k] >= 4 * p + 4 && mark[Li[k]] != p) mark[Li[k]] = p, n_below++;
        c->Pp[p + 1] = c->Pp[p] + n_below + (n_below & 1); /* even: the loops take rows in pairs */
    }
    size_t nb = (size_t)c->Pp[np];
    c->PI = malloc((nb + 1) * sizeof(int32_t));
    c->PF = calloc(4 * nb + 1, sizeof(double));
    if (!c->PI || !c->PF) goto fail;
    for (int i = 0; i < nf4; i++) mark[i] = -1;
    for (int p = 0; p < np; p++) {
        int q = c->Pp[p];
        for (int j = 4 * p; j < 4 * p + 4 && j < nf; j++)
            for (int k = Lp[j] + 1; k < Lp[j] + cnt[j]; k++)
                if (Li[k] >= 4 * p + 4 && mark[Li[k]] != p) mark[Li[k]] = p, c->PI[q++] = Li[k];
        qsort(c->PI + c->Pp[p], (size_t)(q - c->Pp[p]), sizeof(int32_t), cmp_i32);
        for (int r = c->Pp[p]; r < q; r++) slot[c->PI[r]] = r;
        if (q < c->Pp[p + 1]) c->PI[q] = nf4 + (c->n - nf); /* the pair's filler: the zero row after all others, zero entries */
        double *tf = c->PT + 12 * p, *tb = tf + 6;
        double T[4][4] = {{0}}, U[4][4] = {{0}}; /* unit triangles: forward T (rows scaled), backward U (columns scaled, transposed) */
        for (int j = 4 * p; j < 4 * p + 4 && j < nf; j++) {
            int u = j - 4 * p;
            for (int k = Lp[j] + 1; k < Lp[j] + cnt[j]; k++) {
                int i = Li[k], t = i - 4 * p;
                double v = Lx[k];
                if (t < 4) { /* in-panel, t > u */
                    T[t][u] = v * c->Dinv[i];
                    U[u][t] = v * c->Dinv[j];
                } else {
                    c->PF[4 * (size_t)slot[i] + u] = v;
                }
            }
        }
        /* their inverses (unit triangular too), so that each of the panel's
         * 4 solutions is a sum of independent products rather than a chain */
        double M[4][4] = {{0}}, N[4][4] = {{0}};
        for (int t = 0; t < 4; t++) M[t][t] = N[t][t] = 1;
        for (int t = 1; t < 4; t++)
            for (int u = t - 1; u >= 0; u--)
                for (int k = u; k < t; k++) M[t][u] -= T[t][k] * M[k][u];
        for (int u = 2; u >= 0; u--)
            for (int t = u + 1; t < 4; t++)
                for (int k = u + 1; k <= t; k++) N[u][t] -= U[u][k] * N[k][t];
        const double mf[6] = {M[1][0], M[2][0], M[2][1], M[3][0], M[3][1], M[3][2]};
        const double nb[6] = {N[0][1], N[0][2], N[0][3], N[1][2], N[1][3], N[2][3]};
        memcpy(tf, mf, sizeof mf);
        memcpy(tb, nb, sizeof nb);
    }
    free(mark);
    free(slot);
    return 0;
fail:
    free(mark);
    free(slot);
    return -1;
}

/* H = M/h² + Σ_s k_s (e_i − e_j)(e_i − e_j)ᵀ over the free nodes (lower
 * triangle, as CHOLMOD's symmetric storage wants); springs to a pinned node
 * move into the constant right-hand side −H_fp x_p. Factorized once, and the
 * factor copied out as plain CSC. */
static int factorize(drape_cloth_system *c, const double *X, drape_error *err)
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
        for (int a = 0; a < nf; a++) ADD(a, a, c->mass[c->node_of[a]] * (1 / h2 + c->p.guide));
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
    if (L && cholmod_factorize(A, L, &cm) && cm.status == CHOLMOD_OK && L->is_ll && !L->is_super)
        ok = to_panels(c, L) == 0;
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
static int add_bending(drape_cloth_system *c, const int32_t *faces, int F)
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
           !(p->damping < 1) || !(p->margin >= 0) || !isfinite(p->margin) || !(p->friction >= 0) || !(p->friction <= 1) ||
           !(p->cheby >= 0) || !(p->cheby < 1) || !(p->guide >= 0) || !isfinite(p->guide);
}

int drape_cloth_system_create(drape_cloth_system **out, const double *X, int n, const int32_t *faces, int F,
                              const int32_t *pins, int n_pins, const int32_t *attach, int n_attach,
                              const drape_cloth_params *p, drape_error *err)
{
    *out = NULL;
    if (n < 1 || F < 1) return drape_fail(err, DRAPE_EINVAL, "cloth: needs vertices and triangles (got %d, %d)", n, F);
    if (n_attach < 0 || n_pins < 0) return drape_fail(err, DRAPE_EINVAL, "cloth: negative pin or attachment count");
    if (bad_params(p, n_attach))
        return drape_fail(err, DRAPE_EINVAL,
                          "cloth: dt, ym (and density, attach with attachments) must be positive, iters >= 1, gravity "
                          "finite, bend, margin and guide >= 0, damping and cheby in [0, 1), friction in [0, 1]");
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
    drape_cloth_system *c = calloc(1, sizeof *c);
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
    c->X0 = malloc((size_t)n * 3 * sizeof(double));
    c->w0 = aligned_alloc(32, ((size_t)ns + 1) * sizeof(v4d));
    c->free_of = malloc((size_t)n * sizeof(int32_t));
    c->is_free = malloc((size_t)n);
    c->att_node = malloc(((size_t)n_attach + 1) * sizeof(int32_t));
    v4d *w = aligned_alloc(32, ((size_t)ns + 1) * sizeof(v4d)); /* the rest directions, in spring order */
    if (!c->l0 || !c->k || !c->mass || !c->X0 || !c->w0 || !c->free_of || !c->is_free || !c->att_node || !w) {
        free(area);
        free(w);
        return fail_free(c, err, DRAPE_ENOMEM, "out of memory");
    }
    memcpy(c->X0, X, (size_t)n * 3 * sizeof(double));
    for (int s = 0; s < ns; s++) {
        const double *a = X + 3 * c->springs[2 * s], *b = X + 3 * c->springs[2 * s + 1];
        double l = sqrt((b[0] - a[0]) * (b[0] - a[0]) + (b[1] - a[1]) * (b[1] - a[1]) + (b[2] - a[2]) * (b[2] - a[2]));
        if (!(l > 1e-12)) {
            free(area);
            free(w);
            char msg[96];
            snprintf(msg, sizeof msg, "cloth: %s %d-%d has zero length", s < c->ns_edge ? "edge" : "bending spring",
                     c->springs[2 * s], c->springs[2 * s + 1]);
            return fail_free(c, err, DRAPE_EINVAL, msg);
        }
        c->l0[s] = l;
        c->k[s] = (s < c->ns_edge ? p->ym : p->bend) / (l * l);
        w[s] = c->k[s] * (v4d){b[0] - a[0], b[1] - a[1], b[2] - a[2], 0}; /* rest direction, kept by a collapsed spring */
    }
    for (int i = 0; i < n; i++) c->mass[i] = p->mass == DRAPE_MASS_UNIT ? 1.0 : 0.0;
    if (p->mass == DRAPE_MASS_AREA)
        for (int f = 0; f < F; f++)
            for (int k = 0; k < 3; k++) c->mass[faces[3 * f + k]] += p->density * area[f] / 3.0;
    free(area);
    int rc = DRAPE_OK;
    for (int i = 0; i < n; i++) c->free_of[i] = 0;
    for (int i = 0; i < n_pins; i++) {
        if (pins[i] < 0 || pins[i] >= n) {
            char msg[96];
            snprintf(msg, sizeof msg, "cloth: pin %d is not a vertex (the mesh has %d)", pins[i], n);
            free(w);
            return fail_free(c, err, DRAPE_ERANGE, msg);
        }
        c->free_of[pins[i]] = -1;
    }
    for (int i = 0; i < n; i++) {
        if (c->free_of[i] == 0 && !(c->mass[i] > 0)) {
            free(w);
            return fail_free(c, err, DRAPE_EINVAL, "cloth: a free vertex has no mass (not in any triangle)");
        }
        c->free_of[i] = c->free_of[i] < 0 ? -1 : c->nfree++;
    }
    for (int i = 0; i < n; i++) c->is_free[i] = c->free_of[i] >= 0;
    for (int a = 0; a < n_attach; a++) {
        int i = attach[a];
        char msg[128];
        if (i < 0 || i >= n || c->is_free[i] != 1) {
            snprintf(msg, sizeof msg, "cloth: attachment %d (vertex %d) is %s", a, i,
                     i < 0 || i >= n ? "not a vertex" : c->is_free[i] == 2 ? "listed twice" : "pinned");
            free(w);
            return fail_free(c, err, i < 0 || i >= n ? DRAPE_ERANGE : DRAPE_EINVAL, msg);
        }
        c->is_free[i] = 2; /* marks duplicates; reset below */
        c->att_node[a] = i;
    }
    c->n_att = n_attach;
    for (int a = 0; a < n_attach; a++) c->is_free[attach[a]] = 1;
    c->node_of = malloc(((size_t)c->nfree + 1) * sizeof(int32_t));
    c->pin_rhs = calloc((size_t)c->nfree * 3 + 1, sizeof(double));
    if (!c->node_of || !c->pin_rhs) {
        free(w);
        return fail_free(c, err, DRAPE_ENOMEM, "out of memory");
    }
    for (int i = 0; i < n; i++)
        if (c->free_of[i] >= 0) c->node_of[c->free_of[i]] = i;
    if (c->nfree == 0) { /* everything pinned: nothing to solve */
        free(w);
        *out = c;
        return DRAPE_OK;
    }

    if ((rc = factorize(c, X, err))) {
        free(w);
        drape_cloth_system_free(c);
        return rc;
    }
    c->sp_pos = malloc((size_t)c->ns * 2 * sizeof(int32_t) + 1);
    c->mh2 = malloc((size_t)c->nfree * sizeof(double));
    c->row_of = malloc((size_t)n * sizeof(int32_t));
    int N = c->nrows = c->nf4 + (n - c->nfree);
    c->Ip = calloc((size_t)c->nfree + 2, sizeof(int32_t));
    c->Mp = calloc((size_t)N + 2, sizeof(int32_t));
    c->Ii = malloc(((size_t)c->ns + 1) * sizeof(int32_t));
    c->ks = malloc(((size_t)c->ns + 1) * sizeof(double));
    c->l0s = malloc(((size_t)c->ns + 1) * sizeof(double));
    int32_t *ord = malloc(((size_t)c->ns + 1) * sizeof(int32_t));
    if (!c->sp_pos || !c->mh2 || !c->row_of || !c->Mp || !c->Ip || !c->Ii || !c->ks || !c->l0s || !ord) {
        free(ord);
        free(w);
        return fail_free(c, err, DRAPE_ENOMEM, "out of memory");
    }
    for (int a = 0; a < c->nfree; a++) c->mh2[a] = c->mass[c->node_of[a]] / (p->dt * p->dt);
    for (int i = 0, np = 0; i < n; i++) c->row_of[i] = c->free_of[i] < 0 ? c->nf4 + np++ : c->pos[c->free_of[i]];
    /* the local step's spring order: by the row of the first end, so that a
     * row's −k d terms are consecutive */
    for (int s = 0; s < c->ns; s++) c->Mp[c->row_of[c->springs[2 * s]] + 2]++;
    for (int r = 0; r < N; r++) c->Mp[r + 2] += c->Mp[r + 1];
    for (int s = 0; s < c->ns; s++) ord[c->Mp[c->row_of[c->springs[2 * s]] + 1]++] = s;
    for (int t = 0; t < c->ns; t++) {
        int s = ord[t];
        c->sp_pos[2 * t] = c->row_of[c->springs[2 * s]], c->sp_pos[2 * t + 1] = c->row_of[c->springs[2 * s + 1]];
        c->ks[t] = c->k[s], c->l0s[t] = c->l0[s], c->w0[t] = w[s];
    }
    c->w0[c->ns] = (v4d){0, 0, 0, 0};
    free(ord);
    free(w);
    /* each free row's spring ends, by rows, in spring order (so the sums are
     * the ones a scatter in spring order would make) */
    for (int q = 1; q < 2 * c->ns; q += 2)
        if (c->sp_pos[q] < c->nfree) c->Ip[c->sp_pos[q] + 2]++;
    for (int r = 0; r < c->nfree; r++) c->Ip[r + 2] += c->Ip[r + 1];
    for (int q = 1; q < 2 * c->ns; q += 2)
        if (c->sp_pos[q] < c->nfree) c->Ii[c->Ip[c->sp_pos[q] + 1]++] = q / 2;
    /* the same lists at a fixed width, when it is small: one loop of a
     * constant trip count per row instead of two of varying ones */
    int deg = 0;
    for (int r = 0; r < c->nfree; r++)
        if (c->Mp[r + 1] - c->Mp[r] + c->Ip[r + 1] - c->Ip[r] > deg) deg = c->Mp[r + 1] - c->Mp[r] + c->Ip[r + 1] - c->Ip[r];
    if (deg <= 16) {
        c->Ai = malloc((size_t)c->nfree * deg * sizeof(int32_t) + 1);
        c->As = malloc((size_t)c->nfree * deg * sizeof(double) + 1);
        if (!c->Ai || !c->As) return fail_free(c, err, DRAPE_ENOMEM, "out of memory");
        c->deg = deg;
        for (int r = 0; r < c->nfree; r++) {
            int32_t *ai = c->Ai + (size_t)r * deg;
            double *as = c->As + (size_t)r * deg;
            int t = 0;
            for (int s = c->Mp[r]; s < c->Mp[r + 1]; s++, t++) ai[t] = s, as[t] = -1;
            for (int q = c->Ip[r]; q < c->Ip[r + 1]; q++, t++) ai[t] = c->Ii[q], as[t] = 1;
            for (; t < deg; t++) ai[t] = c->ns, as[t] = 0;
        }
    }
    size_t np = (size_t)c->nf4 / 4, nb = (size_t)c->Pp[np];
    c->bytes = sizeof *c + (size_t)ns * (2 * sizeof(int32_t) + 4 * sizeof(double) + sizeof(v4d) + 2 * sizeof(int32_t)) +
               (size_t)n * (4 * sizeof(double) + 2 * sizeof(int32_t) + 1) +
               (size_t)c->nfree * (sizeof(int32_t) * 3 + 4 * sizeof(double) + (size_t)c->deg * 12) +
               (size_t)N * sizeof(int32_t) + np * (sizeof(int32_t) + 12 * sizeof(double)) +
               nb * (sizeof(int32_t) + 4 * sizeof(double)) + (size_t)c->nf4 * sizeof(double);
    *out = c;
    return DRAPE_OK;
}

void drape_cloth_system_free(drape_cloth_system *c)
{
    if (!c) return;
    free(c->pos);
    free(c->Pp); free(c->PI); free(c->PF); free(c->PT); free(c->Dinv); free(c->sp_pos); free(c->mh2);
    free(c->row_of); free(c->Mp); free(c->Ip); free(c->ks); free(c->l0s); free(c->Ii); free(c->Ai); free(c->As);
    free(c->springs); free(c->l0); free(c->k); free(c->mass); free(c->X0); free(c->w0);
    free(c->free_of); free(c->node_of); free(c->pin_rhs);
    free(c->is_free); free(c->att_node);
    free(c);
}

size_t drape_cloth_system_bytes(const drape_cloth_system *s) { return s->bytes; }

int drape_cloth_create_on(drape_cloth **out, const drape_cloth_system *s, drape_error *err)
{
    *out = NULL;
    drape_cloth *c = calloc(1, sizeof *c);
    if (!c) return drape_fail(err, DRAPE_ENOMEM, "out of memory");
    c->s = s;
    size_t n = (size_t)s->n, ns = (size_t)s->ns, N = (size_t)s->nrows;
    c->x = malloc(n * 3 * sizeof(double));
    c->v = calloc(n * 3, sizeof(double));
    c->y = malloc(n * 3 * sizeof(double));
    c->w = aligned_alloc(32, (ns + 1) * sizeof(v4d));
    c->att_target = malloc(((size_t)s->n_att + 1) * 3 * sizeof(double));
    c->b = aligned_alloc(32, (N + 1) * sizeof(v4d));
    c->xr = aligned_alloc(32, (N + 1) * sizeof(v4d));
    c->base = aligned_alloc(32, (N + 1) * sizeof(v4d));
    c->q2 = malloc(ns * sizeof(double) + 1);
    c->e = aligned_alloc(32, (ns + 1) * sizeof(v4d));
    if (s->p.cheby > 0) c->xm = aligned_alloc(32, (N + 1) * sizeof(v4d));
    if (s->p.guide > 0) c->guide = malloc(n * 3 * sizeof(double));
    if (!c->x || !c->v || !c->y || !c->w || !c->att_target || !c->b || !c->xr || !c->base || !c->q2 || !c->e ||
        (s->p.cheby > 0 && !c->xm) || (s->p.guide > 0 && !c->guide)) {
        drape_cloth_free(c);
        return drape_fail(err, DRAPE_ENOMEM, "out of memory");
    }
    drape_cloth_reset(c); /* a new cloth is a reset one */
    c->bytes = sizeof *c + n * 9 * sizeof(double) + (ns + 1) * (2 * sizeof(v4d) + sizeof(double)) +
               (N + 1) * 3 * sizeof(v4d) + (size_t)s->n_att * 3 * sizeof(double) +
               (c->guide ? n * 3 * sizeof(double) : 0);
    *out = c;
    return DRAPE_OK;
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
    drape_cloth_system *s;
    *out = NULL;
    int rc = drape_cloth_system_create(&s, X, n, faces, F, pins, n_pins, attach, n_attach, p, err);
    if (rc) return rc;
    if ((rc = drape_cloth_create_on(out, s, err))) {
        drape_cloth_system_free(s);
        return rc;
    }
    (*out)->own = s;
    return DRAPE_OK;
}

void drape_cloth_free(drape_cloth *c)
{
    if (!c) return;
    free(c->x); free(c->v); free(c->y); free(c->w); free(c->att_target);
    free(c->b); free(c->xr); free(c->base); free(c->q2); free(c->e); free(c->xm); free(c->guide);
    drape_cloth_system_free(c->own);
    free(c);
}

size_t drape_cloth_bytes(const drape_cloth *c) { return c->bytes; }

/* One local/global iteration. Local: d_s = l0 (x_j − x_i)/|x_j − x_i| (the
 * previous d_s if the spring collapsed). Global: x_free = H⁻¹ (M y/h² + GᵀW d
 * − H_fp x_p), the right-hand side built in the factor's row order on the
 * per-step part, then L y = b, Lᵀ x = y. Positions live in rows (xr) during
 * the iterations: the solution becomes xr, the pinned rows carried over. */
DRAPE_CLONES static void iterate(drape_cloth *c)
{
    const drape_cloth_system *S = c->s;
    v4d *B = c->b, *X = c->xr;
    int nf = S->nfree, ns = S->ns;
    const int32_t *sp = S->sp_pos;
    double *q2 = c->q2;
    v4d *E = c->e;
    v4d *W = c->w;
    for (int s0 = 0; s0 < ns; s0 += 128) { /* in blocks that stay in L1 */
        int s1 = s0 + 128 < ns ? s0 + 128 : ns;
        int s = s0;
        for (; s + 4 <= s1; s += 4) { /* four springs' squared lengths at once, transposed */
            v4d e0 = X[sp[2 * s + 1]] - X[sp[2 * s]], e1 = X[sp[2 * s + 3]] - X[sp[2 * s + 2]];
            v4d e2 = X[sp[2 * s + 5]] - X[sp[2 * s + 4]], e3 = X[sp[2 * s + 7]] - X[sp[2 * s + 6]];
            E[s] = e0, E[s + 1] = e1, E[s + 2] = e2, E[s + 3] = e3;
            v4d t0 = __builtin_shuffle(e0, e1, (v4i){0, 4, 2, 6}), t1 = __builtin_shuffle(e0, e1, (v4i){1, 5, 3, 7});
            v4d t2 = __builtin_shuffle(e2, e3, (v4i){0, 4, 2, 6}), t3 = __builtin_shuffle(e2, e3, (v4i){1, 5, 3, 7});
            v4d ex = __builtin_shuffle(t0, t2, (v4i){0, 1, 4, 5}), ez = __builtin_shuffle(t0, t2, (v4i){2, 3, 6, 7});
            v4d ey = __builtin_shuffle(t1, t3, (v4i){0, 1, 4, 5});
            v4d q = (ex * ex + ey * ey) + ez * ez;
            memcpy(q2 + s, &q, sizeof q);
        }
        for (; s < s1; s++) {
            v4d e = X[sp[2 * s + 1]] - X[sp[2 * s]];
            q2[s] = e[0] * e[0] + e[1] * e[1] + e[2] * e[2];
            E[s] = e;
        }
        rest_ratios(q2 + s0, S->l0s + s0, s1 - s0);
        for (int s = s0; s < s1; s++) {
            double r = q2[s];
            v4d w = S->ks[s] * (r * E[s]);
            W[s] = r < INFINITY ? w : W[s]; /* |e| = 0 gives inf or NaN (l0 > 0): kept out */
        }
    }
    /* the right-hand side row by row (gathering its springs' terms), then
     * both sweeps panel by panel: the forward one scatters each panel's
     * solution to the rows below it, the backward one gathers them */
    const int32_t *Ip = S->Ip, *Mp = S->Mp, *Ii = S->Ii;
    int deg = S->deg;
    if (deg) {
        const int32_t *ai = S->Ai;
        const double *as = S->As;
        for (int i = 0; i < nf; i++) {
            v4d m = c->base[i], p = {0, 0, 0, 0};
            int t = 0;
            for (; t + 1 < deg; t += 2) m += as[t] * W[ai[t]], p += as[t + 1] * W[ai[t + 1]];
            if (t < deg) m += as[t] * W[ai[t]];
            B[i] = m + p;
            ai += deg, as += deg;
        }
    } else
    for (int i = 0; i < nf; i++) {
        v4d m = {0, 0, 0, 0}, p = m;
        for (int s = Mp[i]; s < Mp[i + 1]; s++) m += W[s];
        for (int q = Ip[i]; q < Ip[i + 1]; q++) p += W[Ii[q]];
        B[i] = (c->base[i] - m) + p;
    }
    const int32_t *Pp = S->Pp, *PI = S->PI;
    const double *PF = S->PF, *Dinv = S->Dinv;
    int np = S->nf4 / 4;
    for (int p = 0; p < np; p++) { /* L y = b: the panel's 4, then scattered to the rows below */
        v4d *Y = B + 4 * p;
        const double *t = S->PT + 12 * p, *d = Dinv + 4 * p;
        v4d z0 = Y[0] * d[0], z1 = Y[1] * d[1], z2 = Y[2] * d[2], z3 = Y[3] * d[3];
        v4d y0 = z0, y1 = z1 + t[0] * z0, y2 = (z2 + t[1] * z0) + t[2] * z1;
        v4d y3 = (z3 + t[3] * z0) + (t[4] * z1 + t[5] * z2);
        Y[0] = y0, Y[1] = y1, Y[2] = y2, Y[3] = y3;
        for (int q = Pp[p]; q < Pp[p + 1]; q += 2) {
            const double *f = PF + 4 * q;
            B[PI[q]] -= (f[0] * y0 + f[1] * y1) + (f[2] * y2 + f[3] * y3);
            B[PI[q + 1]] -= (f[4] * y0 + f[5] * y1) + (f[6] * y2 + f[7] * y3);
        }
    }
    for (int p = np - 1; p >= 0; p--) { /* Lᵀ x = y: gathered from the rows below, then the panel's 4 */
        v4d *Y = B + 4 * p;
        const double *t = S->PT + 12 * p + 6, *d = Dinv + 4 * p;
        v4d a0 = Y[0], a1 = Y[1], a2 = Y[2], a3 = Y[3]; /* scaled by 1/L_jj once the sums are in */
        v4d b0 = {0, 0, 0, 0}, b1 = b0, b2 = b0, b3 = b0;
        /* two rows at a time, eight independent sums; the rows solved
         * longest ago first, so that only the last terms wait for the
         * panel just solved */
        for (int q = Pp[p + 1] - 2; q >= Pp[p]; q -= 2) {
            v4d u = B[PI[q]], w = B[PI[q + 1]];
            const double *g = PF + 4 * q;
            a0 -= g[0] * u, a1 -= g[1] * u, a2 -= g[2] * u, a3 -= g[3] * u;
            b0 -= g[4] * w, b1 -= g[5] * w, b2 -= g[6] * w, b3 -= g[7] * w;
        }
        a0 = (a0 + b0) * d[0], a1 = (a1 + b1) * d[1], a2 = (a2 + b2) * d[2], a3 = (a3 + b3) * d[3];
        v4d x3 = a3, x2 = a2 + t[5] * a3, x1 = (a1 + t[3] * a2) + t[4] * a3;
        v4d x0 = (a0 + t[0] * a1) + (t[1] * a2 + t[2] * a3);
        Y[0] = x0, Y[1] = x1, Y[2] = x2, Y[3] = x3;
    }
    for (int i = S->nf4; i < S->nrows; i++) B[i] = X[i];
    c->xr = B, c->b = X;
}

/* positions of the free nodes from the rows back to x */
static void rows_to_x(drape_cloth *c)
{
    const drape_cloth_system *S = c->s;
    for (int a = 0; a < S->nfree; a++) {
        const v4d *r = c->xr + S->pos[a];
        double *x = c->x + 3 * S->node_of[a];
        x[0] = (*r)[0], x[1] = (*r)[1], x[2] = (*r)[2];
    }
}

double drape_cloth_energy(const drape_cloth *c, const double *x)
{
    const drape_cloth_system *S = c->s;
    double h2 = S->p.dt * S->p.dt, e = 0;
    for (int i = 0; i < S->n; i++)
        for (int k = 0; k < 3; k++) {
            double r = x[3 * i + k] - c->y[3 * i + k];
            e += 0.5 / h2 * S->mass[i] * r * r;
        }
    for (int s = 0; s < S->ns; s++) {
        const double *a = x + 3 * S->springs[2 * s], *b = x + 3 * S->springs[2 * s + 1];
        double l = sqrt((b[0] - a[0]) * (b[0] - a[0]) + (b[1] - a[1]) * (b[1] - a[1]) + (b[2] - a[2]) * (b[2] - a[2]));
        e += 0.5 * S->k[s] * (l - S->l0[s]) * (l - S->l0[s]);
    }
    for (int a = 0; a < S->n_att; a++)
        for (int k = 0; k < 3; k++) {
            double r = x[3 * S->att_node[a] + k] - c->att_target[3 * a + k];
            e += 0.5 * S->p.attach * r * r;
        }
    for (int i = 0; c->guide && i < S->n; i++)
        for (int k = 0; k < 3 && S->is_free[i]; k++) {
            double r = x[3 * i + k] - c->guide[3 * i + k];
            e += 0.5 * S->p.guide * S->mass[i] * r * r;
        }
    return e;
}

int drape_cloth_step_traced(drape_cloth *c, double *energies, drape_error *err)
{
    (void)err; /* nothing in a step can fail: inputs were checked when they were set */
    const drape_cloth_system *S = c->s;
    double h = S->p.dt;
    int n3 = 3 * S->n;
    /* momentum target y = x + h v + h² g, g = (0, −gravity, 0); x_n kept in
     * v (rewritten below); positions into rows; the right-hand side's
     * per-step part. One pass over the nodes. */
    double gh2 = h * h * S->p.gravity;
    for (int i = 0; i < S->n; i++) {
        double *x = c->x + 3 * i, *v = c->v + 3 * i, *y = c->y + 3 * i;
        y[0] = x[0] + h * v[0], y[1] = (x[1] + h * v[1]) - gh2, y[2] = x[2] + h * v[2];
        v[0] = x[0], v[1] = x[1], v[2] = x[2];
        if (!S->nfree) continue;
        int r = S->row_of[i], a = S->free_of[i];
        c->xr[r] = (v4d){x[0], x[1], x[2], 0};
        if (a >= 0) {
            double m = S->mh2[a];
            const double *pr = S->pin_rhs + 3 * a;
            c->base[r] = (v4d){m * y[0] + pr[0], m * y[1] + pr[1], m * y[2] + pr[2], 0};
            if (c->guide) {
                double mg = S->mass[i] * S->p.guide;
                const double *g = c->guide + 3 * i;
                c->base[r] += (v4d){mg * g[0], mg * g[1], mg * g[2], 0};
            }
        }
    }
    for (int a = 0; a < S->n_att && S->nfree; a++) {
        v4d *r = c->base + S->pos[S->free_of[S->att_node[a]]];
        for (int k = 0; k < 3; k++) (*r)[k] += S->p.attach * c->att_target[3 * a + k];
    }
    double rho2 = S->p.cheby * S->p.cheby, omega = 1;
    for (int it = 0; it < S->p.iters && S->nfree; it++) {
        iterate(c); /* xr: this iteration's result, b: the iterate it started from */
        if (c->xm) {
            /* x_{k+1} = ω (x̂_{k+1} − x_{k−1}) + x_{k−1}, ω from the Chebyshev
             * recurrence; the first two iterations are plain */
            if (it >= 2) {
                omega = it == 2 ? 2 / (2 - rho2) : 4 / (4 - rho2 * omega);
                for (int r = 0; r < S->nfree; r++) {
                    int q = S->pos[r];
                    c->xr[q] = omega * (c->xr[q] - c->xm[q]) + c->xm[q];
                }
            }
            v4d *t = c->xm;
            c->xm = c->b, c->b = t; /* the iterate it started from is the one before the next */
        }
        if (energies) rows_to_x(c), energies[it] = drape_cloth_energy(c, c->x);
    }
    /* positions back from the rows (the pinned rows carry theirs), v = (x − x_n)/h */
    double inv_h = 1 / h; /* a division per coordinate was a third of a step's own work */
    for (int i = 0; i < S->n; i++) {
        double *x = c->x + 3 * i, *v = c->v + 3 * i;
        if (S->nfree) {
            const v4d *r = c->xr + S->row_of[i];
            x[0] = (*r)[0], x[1] = (*r)[1], x[2] = (*r)[2];
        }
        v[0] = (x[0] - v[0]) * inv_h, v[1] = (x[1] - v[1]) * inv_h, v[2] = (x[2] - v[2]) * inv_h;
    }
    c->contacts =
        c->col ? drape_collider_project(c->col, c->x, c->v, S->is_free, S->n, S->p.margin, S->p.friction, h) : 0;
    if (S->p.damping > 0)
        for (int i = 0; i < n3; i++) c->v[i] *= 1 - S->p.damping;
    return DRAPE_OK;
}

int drape_cloth_set_targets(drape_cloth *c, const double *targets, drape_error *err)
{
    for (int i = 0; i < 3 * c->s->n_att; i++)
        if (!isfinite(targets[i])) return drape_fail(err, DRAPE_ENONFINITE, "cloth: target %d is NaN or Inf", i / 3);
    memcpy(c->att_target, targets, (size_t)c->s->n_att * 3 * sizeof *targets);
    return DRAPE_OK;
}

int drape_cloth_set_guide(drape_cloth *c, const double *guide, drape_error *err)
{
    int n3 = 3 * c->s->n;
    if (!c->guide) return drape_fail(err, DRAPE_EINVAL, "cloth: made without a guide (params.guide is 0)");
    for (int i = 0; i < n3; i++)
        if (!isfinite(guide[i])) return drape_fail(err, DRAPE_ENONFINITE, "cloth: guide of vertex %d is NaN or Inf", i / 3);
    memcpy(c->guide, guide, (size_t)n3 * sizeof *guide);
    return DRAPE_OK;
}

int drape_cloth_set_state(drape_cloth *c, const double *x, const double *v, drape_error *err)
{
    const drape_cloth_system *S = c->s;
    for (int i = 0; i < 3 * S->n; i++)
        if (!isfinite(x[i]) || (v && !isfinite(v[i])))
            return drape_fail(err, DRAPE_ENONFINITE, "cloth: state of vertex %d is NaN or Inf", i / 3);
    for (int i = 0; i < S->n; i++)
        if (S->is_free[i])
            for (int d = 0; d < 3; d++) c->x[3 * i + d] = x[3 * i + d], c->v[3 * i + d] = v ? v[3 * i + d] : 0;
    return DRAPE_OK;
}

void drape_cloth_reset(drape_cloth *c)
{
    const drape_cloth_system *S = c->s;
    memcpy(c->x, S->X0, (size_t)S->n * 3 * sizeof(double));
    memset(c->v, 0, (size_t)S->n * 3 * sizeof(double));
    for (int a = 0; a < S->n_att; a++)
        for (int d = 0; d < 3; d++) c->att_target[3 * a + d] = S->X0[3 * S->att_node[a] + d];
    if (S->nfree) memcpy(c->w, S->w0, ((size_t)S->ns + 1) * sizeof(v4d));
    /* the solve's workspaces zero: their padding rows and row N stay so (a
     * state that went non-finite leaves NaN there, 0 × NaN, which nothing
     * else rewrites), the pinned rows of base too, and xm takes turns with b */
    size_t N = (size_t)S->nrows + 1;
    memset(c->b, 0, N * sizeof(v4d));
    memset(c->xr, 0, N * sizeof(v4d));
    memset(c->base, 0, N * sizeof(v4d));
    if (c->xm) memset(c->xm, 0, N * sizeof(v4d));
    if (c->guide) memcpy(c->guide, S->X0, (size_t)S->n * 3 * sizeof(double));
    c->contacts = 0;
}

void drape_cloth_set_collider(drape_cloth *c, drape_collider *col) { c->col = col; }
int drape_cloth_bend_springs(const drape_cloth *c) { return c->s->ns - c->s->ns_edge; }
int drape_cloth_contacts(const drape_cloth *c) { return c->contacts; }

int drape_cloth_step(drape_cloth *c, drape_error *err) { return drape_cloth_step_traced(c, NULL, err); }

const double *drape_cloth_positions(const drape_cloth *c) { return c->x; }
const double *drape_cloth_velocities(const drape_cloth *c) { return c->v; }
int drape_cloth_nodes(const drape_cloth *c) { return c->s->n; }
int drape_cloth_springs(const drape_cloth *c) { return c->s->ns; }
int drape_cloth_factorizations(const drape_cloth *c) { return c->s->factorizations; }
const drape_cloth_system *drape_cloth_get_system(const drape_cloth *c) { return c->s; }

int drape_cloth_use_system(drape_cloth *c, const drape_cloth_system *s, drape_error *err)
{
    const drape_cloth_system *o = c->s;
    /* the state and workspaces are laid out by the rows and the springs'
     * order, and sized by the Chebyshev and guide terms: those must match */
    if (s->n != o->n || s->ns != o->ns || s->nrows != o->nrows || s->nfree != o->nfree || s->n_att != o->n_att ||
        (s->p.cheby > 0) != (o->p.cheby > 0) || (s->p.guide > 0) != (o->p.guide > 0) ||
        memcmp(s->row_of, o->row_of, (size_t)s->n * sizeof *s->row_of) ||
        memcmp(s->sp_pos, o->sp_pos, (size_t)s->ns * 2 * sizeof *s->sp_pos) ||
        memcmp(s->att_node, o->att_node, (size_t)s->n_att * sizeof *s->att_node))
        return drape_fail(err, DRAPE_EINVAL, "cloth: the system is not laid out as this cloth's");
    c->s = s;
    return DRAPE_OK;
}

void drape_grid_mesh(double *X, int32_t *T, int nx, int ny, double w, double h)
{
    for (int j = 0; j < ny; j++)
        for (int i = 0; i < nx; i++) {
            double *p = X + 3 * (j * nx + i);
            p[0] = -w / 2 + w * i / (nx - 1);
            p[1] = -h / 2 + h * j / (ny - 1);
            p[2] = 0;
        }
    int f = 0;
    for (int j = 0; j + 1 < ny; j++)
        for (int i = 0; i + 1 < nx; i++, f += 2) {
            int a = j * nx + i, b = a + 1, c = a + nx, d = c + 1;
            int32_t *t = T + 3 * f;
            t[0] = a, t[1] = b, t[2] = d, t[3] = a, t[4] = d, t[5] = c;
        }
}
