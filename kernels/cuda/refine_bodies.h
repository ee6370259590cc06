/* The refine step on the device (runtime/refine.h): its bodies, written once
 * for both compilers. runtime/refine.c is the plain reference: a scatter
 * over the garment's edges in edge order, a grid search for the nearest body
 * vertex. Here every sum is gathered per vertex over incidence lists kept in
 * ascending edge (face) order, and the nearest body vertex is an exact search
 * over the body's clusters (nearly rigid pieces, their boxes posed each
 * frame) with refine.c's tie rule (the lower index), so that on the host
 * hd_refine_frame gives refine.c's frame to the last bit (tests/test_cuda.c;
 * on the device nvcc's FMA contraction rounds differently). The one
 * difference left: refine.c bounds its search's cells per frame
 * (REFINE_CELLS_PER_VERTEX) and keeps the nearest seen when a wild pose
 * spends them; the clusters' search always finds the nearest.
 *
 * hd_refine_frame is one CUDA block's work for one frame (tid, nt: the
 * thread and the block's size; HD_SYNC between phases); on the host it runs
 * with tid 0, nt 1, where the phases follow each other as the block's do. */
#ifndef DRAPE_CUDA_REFINE_BODIES_H
#define DRAPE_CUDA_REFINE_BODIES_H

#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "../../core/kinematics.h"
#include "../../runtime/refine.h"

/* a host test may define HD_SYNC as a barrier of its own, to run a frame on
 * several threads as a block does */
#ifndef HD_SYNC
#ifdef __CUDA_ARCH__
#define HD_SYNC() __syncthreads()
#else
#define HD_SYNC() ((void)0)
#endif
#endif

/* Incidence lists of n items of k vertex indices each (faces: k 3, edges:
 * k 2) over V vertices: start [V+1], list [k·n] the items at each vertex in
 * ascending order (an item listing a vertex twice is there twice, as the
 * scatter adds it twice). Host only. */
static inline void hd_incidence(int32_t *start, int32_t *list, const int32_t *idx, int n, int k, int V)
{
    for (int v = 0; v <= V; v++) start[v] = 0;
    for (int i = 0; i < n * k; i++) start[idx[i] + 1]++;
    for (int v = 0; v < V; v++) start[v + 1] += start[v];
    for (int i = 0; i < n; i++)
        for (int c = 0; c < k; c++) list[start[idx[k * i + c]]++] = i;
    for (int v = V; v > 0; v--) start[v] = start[v - 1];
    start[0] = 0;
}

/* vertex i of the posed body: (Σ_k w_ik A_k) v_s_i, drape_body_pose's sum order */
static inline DRAPE_HD void hd_body_vertex(float *v, const float *w, const float *A, const float *vs)
{
    float M[12] = {0};
    for (int k = 0; k < HD_JOINTS; k++)
        if (w[k] != 0)
            for (int j = 0; j < 12; j++) M[j] += w[k] * A[12 * k + j];
    hd_apply(v, M, vs);
}

/* vertex i's normal: the float cross products of its faces summed in double
 * in face order, normalized (drape_mesh_normals) */
static inline DRAPE_HD void hd_vertex_normal(float *n, int i, const float *v, const int32_t *faces,
                                             const int32_t *vf_start, const int32_t *vf)
{
    double acc[3] = {0, 0, 0};
    for (int q = vf_start[i]; q < vf_start[i + 1]; q++) {
        const int32_t *f = faces + 3 * vf[q];
        const float *a = v + 3 * f[0], *b = v + 3 * f[1], *c = v + 3 * f[2];
        float e1[3] = {b[0] - a[0], b[1] - a[1], b[2] - a[2]};
        float e2[3] = {c[0] - a[0], c[1] - a[1], c[2] - a[2]};
        float x[3] = {e1[1] * e2[2] - e1[2] * e2[1], e1[2] * e2[0] - e1[0] * e2[2], e1[0] * e2[1] - e1[1] * e2[0]};
        for (int d = 0; d < 3; d++) acc[d] += x[d];
    }
    double l = sqrt(acc[0] * acc[0] + acc[1] * acc[1] + acc[2] * acc[2]);
    for (int d = 0; d < 3; d++) n[d] = l > 0 ? (float)(acc[d] / l) : 0.0f;
}

/* The body's vertices in clusters that move nearly rigidly: the same
 * dominant joint and the same 10-cm cell of the template. start [C+1],
 * vert [Nb] each cluster's vertices (ascending), of [Nb] each vertex's
 * cluster. Host only; returns C (at most Nb). */
#define HD_CLUSTER_CELL 0.1f

static inline int hd_cluster_cmp(const void *a, const void *b)
{
    const int64_t *x = (const int64_t *)a, *y = (const int64_t *)b;
    return x[0] < y[0] ? -1 : x[0] > y[0] ? 1 : x[1] < y[1] ? -1 : x[1] > y[1];
}

static inline int hd_body_clusters(int32_t *start, int32_t *vert, int32_t *of, const float *weights, const float *v,
                                   int Nb, int64_t *scratch /* [2·Nb] */)
{
    for (int i = 0; i < Nb; i++) {
        int j = 0;
        for (int k = 1; k < HD_JOINTS; k++)
            if (weights[(size_t)HD_JOINTS * i + k] > weights[(size_t)HD_JOINTS * i + j]) j = k;
        int64_t key = j;
        for (int d = 0; d < 3; d++) key = key * 4096 + ((int64_t)floorf(v[3 * i + d] / HD_CLUSTER_CELL) & 4095);
        scratch[2 * i] = key, scratch[2 * i + 1] = i;
    }
    qsort(scratch, (size_t)Nb, 2 * sizeof *scratch, hd_cluster_cmp);
    int C = 0;
    for (int q = 0; q < Nb; q++) {
        if (!q || scratch[2 * q] != scratch[2 * q - 2]) start[C++] = q;
        vert[q] = (int32_t)scratch[2 * q + 1];
        of[vert[q]] = C - 1;
    }
    start[C] = Nb;
    return C;
}

/* box [6] (min xyz, max xyz) of the points ids [n] of pts */
static inline DRAPE_HD void hd_cluster_box(float *box, const float *pts, const int32_t *ids, int n)
{
    for (int d = 0; d < 3; d++) box[d] = INFINITY, box[3 + d] = -INFINITY;
    for (int q = 0; q < n; q++)
        for (int d = 0; d < 3; d++) {
            float c = pts[3 * ids[q] + d];
            box[d] = fminf(box[d], c), box[3 + d] = fmaxf(box[3 + d], c);
        }
}

/* the nearest of pts ids [n] to p, kept in *best (squared) and *idx; of
 * equal distances the lower index, whatever order the points come in */
static inline DRAPE_HD void hd_scan(const float *pts, const int32_t *ids, int n, const double *p, double *best, int *idx)
{
    for (int q = 0; q < n; q++) {
        int i = ids[q];
        double d0 = p[0] - pts[3 * i], d1 = p[1] - pts[3 * i + 1], d2 = p[2] - pts[3 * i + 2];
        double r = d0 * d0 + d1 * d1 + d2 * d2;
        if (r < *best || (r == *best && i < *idx)) *best = r, *idx = i;
    }
}

/* squared distance from p to box b [6] (min xyz, max xyz); and whether a
 * box that far may hold a point not farther than best (the slack covers
 * the rounding, as core/geom.c's searches do) */
static inline DRAPE_HD double hd_box_dist2(const float *b, const double *p)
{
    double g2 = 0;
    for (int d = 0; d < 3; d++) {
        double g = p[d] < b[d] ? b[d] - p[d] : p[d] > b[3 + d] ? p[d] - b[3 + d] : 0;
        g2 += g * g;
    }
    return g2;
}
#define HD_BOX_MAY_HOLD(g2, best) ((g2) <= (best) * (1 + 1e-9) + 1e-18)

/* Clusters are numbered by dominant joint, then cell (hd_body_clusters):
 * runs of HD_CLUSTER_GROUP of them lie close together, and a box around
 * each run (stored after the clusters' boxes) lets the search pass over a
 * run at once. */
#define HD_CLUSTER_GROUP 16
#define HD_CLUSTER_GROUPS(C) (((C) + HD_CLUSTER_GROUP - 1) / HD_CLUSTER_GROUP)

/* boxes [C + groups, 6]: group q's box, the union of its clusters' */
static inline DRAPE_HD void hd_group_box(float *boxes, int C, int q)
{
    float *gb = boxes + 6 * ((size_t)C + q);
    for (int d = 0; d < 3; d++) gb[d] = INFINITY, gb[3 + d] = -INFINITY;
    for (int c = q * HD_CLUSTER_GROUP; c < C && c < (q + 1) * HD_CLUSTER_GROUP; c++)
        for (int d = 0; d < 3; d++) {
            gb[d] = fminf(gb[d], boxes[6 * c + d]);
            gb[3 + d] = fmaxf(gb[3 + d], boxes[6 * c + 3 + d]);
        }
}

/* The body vertex nearest p, of equal distances the lower index (refine.c's
 * answer): the hint's cluster first, then every cluster whose box is not
 * farther than the best so far (the slack covers the box distance's
 * rounding, as core/geom.c's searches do). boxes [C,6]. A p that is not
 * finite compares with nothing: the hint comes back, as from core/geom.c's
 * search that starts there (the frame goes out flagged, not read out of
 * bounds). */
static inline DRAPE_HD int hd_nearest_body(const float *pts, const int32_t *start, const int32_t *vert, const int32_t *of,
                                           const float *boxes, int C, const double *p, int hint)
{
    double best = INFINITY;
    int idx = 0x7fffffff, h = of[hint], G = HD_CLUSTER_GROUPS(C);
    hd_scan(pts, vert + start[h], start[h + 1] - start[h], p, &best, &idx);
    /* a group's box holds its clusters' boxes: not farther than any of them */
    for (int q = 0; q < G; q++) {
        if (!HD_BOX_MAY_HOLD(hd_box_dist2(boxes + 6 * ((size_t)C + q), p), best)) continue;
        for (int c = q * HD_CLUSTER_GROUP; c < C && c < (q + 1) * HD_CLUSTER_GROUP; c++) {
            if (c == h || !HD_BOX_MAY_HOLD(hd_box_dist2(boxes + 6 * c, p), best)) continue;
            hd_scan(pts, vert + start[c], start[c + 1] - start[c], p, &best, &idx);
        }
    }
    return idx == 0x7fffffff ? hint : idx;
}

/* x moved along the body normal n to n·(x − b) = margin where it is less */
static inline DRAPE_HD void hd_refine_push(double *x, const float *b, const float *n, double margin)
{
    double d = n[0] * (x[0] - b[0]) + n[1] * (x[1] - b[1]) + n[2] * (x[2] - b[2]);
    if (d < margin)
        for (int c = 0; c < 3; c++) x[c] += (margin - d) * n[c];
}

/* edge e's term of a sweep, t [3] = s d with d = x_i - x_j, s = l0_e / |d|
 * (refine.c's) */
static inline DRAPE_HD void hd_refine_term(double *t, int e, const double *x, const int32_t *edges, const double *l0)
{
    int i = edges[2 * e], j = edges[2 * e + 1];
    double d[3] = {x[3 * i] - x[3 * j], x[3 * i + 1] - x[3 * j + 1], x[3 * i + 2] - x[3 * j + 2]};
    double l = sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]), s = l0[e] / fmax(l, 1e-12);
    for (int c = 0; c < 3; c++) t[c] = s * d[c];
}

/* the terms sd [E,3] worked out once per edge for both its ends (the edge
 * pass, per_edge), whose square root and division were most of a sweep
 * when each end did them */
static inline DRAPE_HD void hd_refine_edge(double *sd, int e, const double *x, const int32_t *edges, const double *l0)
{
    hd_refine_term(sd + 3 * e, e, x, edges, l0);
}

/* one Jacobi sweep at vertex v: xn_v = (p_v + k Σ_e (x_u + l0_e d̂_vu)) / (1 + k deg_v), inv = 1/(1 + k deg_v);
 * sd [E,3] the edges' terms (hd_refine_edge), or NULL: each edge's term
 * worked out here; ve_start/ve: the edges at each vertex, ascending
 * (refine.c's scatter order) */
static inline DRAPE_HD void hd_refine_sweep(double *xn, int v, const double *x, const double *p, const int32_t *edges,
                                            const int32_t *ve_start, const int32_t *ve, const double *sd,
                                            const double *l0, double k, double inv)
{
    double acc[3] = {0, 0, 0};
    for (int q = ve_start[v]; q < ve_start[v + 1]; q++) {
        int e = ve[q], i = edges[2 * e], j = edges[2 * e + 1];
        double own[3];
        const double *t = sd ? sd + 3 * e : own;
        if (!sd) hd_refine_term(own, e, x, edges, l0);
        for (int c = 0; c < 3; c++) acc[c] += v == i ? x[3 * j + c] + t[c] : x[3 * i + c] - t[c];
    }
    for (int c = 0; c < 3; c++) xn[3 * v + c] = (p[3 * v + c] + k * acc[c]) * inv;
}

/* The model's body, for the step: weights [Nb,24], faces [Fb,3], the faces
 * at each vertex vf_start [Nb+1], vf [3·Fb]; its C clusters c_start [C+1],
 * c_vert [Nb], c_of [Nb] (hd_body_clusters) */
typedef struct {
    const float *weights;
    const int32_t *faces, *vf_start, *vf;
    int Nb;
    const int32_t *c_start, *c_vert, *c_of;
    int C;
} hd_refine_body;

/* What one frame's refine reads: the body, the garment's edges, the edges
 * at each vertex and each vertex's rest-time body vertex, the identity's
 * tables (runtime/refine.h: drape_refine_view) and the step's settings. */
typedef struct {
    hd_refine_body b;
    const int32_t *edges, *ve_start, *ve, *body_nn;
    int V, E, iters;
    double k, margin, rho;
    const float *v_s;         /* [Nb,3] the identity's shaped rest body */
    const double *l0, *inv;   /* [n_edges], [V] */
    int per_edge;             /* the sweeps' edge terms in a pass of their own (hd_refine_edge) */
} hd_refine_args;

/* Doubles of one frame's work scratch: four [V,3] iterates, and with the
 * edge pass (per_edge) the edges' terms [E,3] */
#define HD_REFINE_WORK(V, E, per_edge) (12 * (size_t)(V) + ((per_edge) ? 3 * (size_t)(E) : 0))

/* One frame, in place: x [V,3] world positions (in: module A's, out:
 * refined); A [24,12] frame t's skinning transforms. Scratch: body
 * [6·Nb + 6·C + 6·groups] floats (posed vertices, normals, cluster and
 * group boxes), work [HD_REFINE_WORK(V, E, per_edge)] doubles, nn [V]. */
static inline DRAPE_HD void hd_refine_frame(float *x, float *body, double *work, int32_t *nn, const float *A,
                                            const hd_refine_args *r, int tid, int nt)
{
    const hd_refine_body *B = &r->b;
    const int V = r->V, E = r->E, Nb = B->Nb;
    float *bv = body, *bn = body + 3 * (size_t)Nb, *boxes = bn + 3 * (size_t)Nb;
    double *p = work, *xa = p + 3 * (size_t)V, *xb = xa + 3 * (size_t)V, *xo = xb + 3 * (size_t)V;
    double *sd = xo + 3 * (size_t)V;
    for (int i = tid; i < Nb; i += nt) hd_body_vertex(bv + 3 * i, B->weights + (size_t)HD_JOINTS * i, A, r->v_s + 3 * i);
    for (int v = tid; v < V; v += nt)
        for (int c = 0; c < 3; c++) p[3 * v + c] = xa[3 * v + c] = x[3 * v + c];
    HD_SYNC();
    for (int i = tid; i < Nb; i += nt) hd_vertex_normal(bn + 3 * i, i, bv, B->faces, B->vf_start, B->vf);
    for (int c = tid; c < B->C; c += nt)
        hd_cluster_box(boxes + 6 * c, bv, B->c_vert + B->c_start[c], B->c_start[c + 1] - B->c_start[c]);
    HD_SYNC();
    for (int q = tid; q < HD_CLUSTER_GROUPS(B->C); q += nt) hd_group_box(boxes, B->C, q);
    HD_SYNC();
    /* the garment's rest-time body vertex is a near guess to start from
     * (refine.c's hint); then the first sweep's push */
    for (int v = tid; v < V; v += nt) {
        nn[v] = hd_nearest_body(bv, B->c_start, B->c_vert, B->c_of, boxes, B->C, p + 3 * v, r->body_nn[v]);
        if (r->iters > 0) hd_refine_push(xa + 3 * v, bv + 3 * nn[v], bn + 3 * nn[v], r->margin);
    }
    HD_SYNC();
    /* xo: the iterate before xa, which the accelerated sweeps extrapolate
     * from. A vertex's sweep also does the next sweep's push, which reads
     * only that vertex. Either way (per_edge or not), refine.c's arithmetic. */
    double w = 1, rho2 = r->rho * r->rho;
    for (int it = 0; it < r->iters; it++) {
        if (r->per_edge) {
            for (int e = tid; e < E; e += nt) hd_refine_edge(sd, e, xa, r->edges, r->l0);
            HD_SYNC();
        }
        int cheb = r->rho > 0 && it >= DRAPE_REFINE_PLAIN_SWEEPS, push = it + 1 < r->iters;
        if (cheb) w = it == DRAPE_REFINE_PLAIN_SWEEPS ? 2 / (2 - rho2) : 4 / (4 - rho2 * w);
        for (int v = tid; v < V; v += nt) {
            hd_refine_sweep(xb, v, xa, p, r->edges, r->ve_start, r->ve, r->per_edge ? sd : NULL, r->l0, r->k,
                            r->inv[v]);
            if (cheb)
                for (int c = 0; c < 3; c++) xb[3 * v + c] = w * (xb[3 * v + c] - xo[3 * v + c]) + xo[3 * v + c];
            if (push) hd_refine_push(xb + 3 * v, bv + 3 * nn[v], bn + 3 * nn[v], r->margin);
        }
        HD_SYNC();
        double *t = xo;
        xo = xa, xa = xb, xb = t;
    }
    for (int v = tid; v < V; v += nt) {
        nn[v] = hd_nearest_body(bv, B->c_start, B->c_vert, B->c_of, boxes, B->C, xa + 3 * v, nn[v]);
        hd_refine_push(xa + 3 * v, bv + 3 * nn[v], bn + 3 * nn[v], r->margin);
        for (int c = 0; c < 3; c++) x[3 * v + c] = (float)xa[3 * v + c];
    }
}

#endif
