#include "rig.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../core/geom.h"
#include "../core/mesh.h"
#include "uvmap.h"

#define JOINTS 24

void drape_rig_free(drape_rig *r)
{
    free(r->bones);
    free(r->bone_joint_w);
    free(r->skin_idx);
    free(r->skin_w0);
    free(r->body_nn);
    free(r->bone_body_nn);
    memset(r, 0, sizeof *r);
}

/* Squared distance summed as numpy sums a row of three: (dx² + dy²) + dz². */
static double dist2(const double *a, const double *b)
{
    double dx = a[0] - b[0], dy = a[1] - b[1], dz = a[2] - b[2];
    return dx * dx + dy * dy + dz * dz;
}

/* nn[i]: the nearest of pts [n,3] to q[i] (ties to the lower index). */
static int nearest_all(int32_t *nn, const double *q, int nq, const double *pts, int n)
{
    drape_grid g = {0};
    double lo[3] = {HUGE_VAL, HUGE_VAL, HUGE_VAL}, hi[3] = {-HUGE_VAL, -HUGE_VAL, -HUGE_VAL};
    for (int i = 0; i < n; i++)
        for (int d = 0; d < 3; d++) lo[d] = fmin(lo[d], pts[3 * i + d]), hi[d] = fmax(hi[d], pts[3 * i + d]);
    double span = fmax(hi[0] - lo[0], fmax(hi[1] - lo[1], hi[2] - lo[2]));
    /* about 8 points per cell on a surface of n points */
    double cell = span > 0 ? span * sqrt(8.0 / (n > 8 ? n : 8)) : 1.0;
    if (drape_grid_build(&g, pts, pts, n, cell)) return DRAPE_ENOMEM;
    for (int i = 0; i < nq; i++) nn[i] = drape_grid_nearest(&g, pts, q + 3 * i);
    drape_grid_free(&g);
    return DRAPE_OK;
}

/* ---- Dijkstra over the edge graph ---- */

typedef struct { double d; int v; } heap_item;

static void heap_push(heap_item *h, int *n, double d, int v)
{
    int i = (*n)++;
    while (i > 0) {
        int p = (i - 1) / 2;
        if (h[p].d <= d) break;
        h[i] = h[p];
        i = p;
    }
    h[i] = (heap_item){d, v};
}

static heap_item heap_pop(heap_item *h, int *n)
{
    heap_item top = h[0], last = h[--(*n)];
    int i = 0;
    for (;;) {
        int c = 2 * i + 1;
        if (c >= *n) break;
        if (c + 1 < *n && h[c + 1].d < h[c].d) c++;
        if (last.d <= h[c].d) break;
        h[i] = h[c];
        i = c;
    }
    if (*n) h[i] = last;
    return top;
}

/* geo [V] from src along the graph (CSR adj_start/adj/adj_w); inf where
 * unreachable. A relaxation per edge direction: the heap holds at most 2E+1. */
static void dijkstra(double *geo, int V, const int32_t *adj_start, const int32_t *adj, const double *adj_w, int src,
                     heap_item *heap)
{
    for (int v = 0; v < V; v++) geo[v] = HUGE_VAL;
    int n = 0;
    geo[src] = 0;
    heap_push(heap, &n, 0, src);
    while (n) {
        heap_item it = heap_pop(heap, &n);
        if (it.d > geo[it.v]) continue; /* a stale entry */
        for (int e = adj_start[it.v]; e < adj_start[it.v + 1]; e++) {
            double nd = it.d + adj_w[e];
            if (nd < geo[adj[e]]) {
                geo[adj[e]] = nd;
                heap_push(heap, &n, nd, adj[e]);
            }
        }
    }
}

int drape_rig_make(drape_rig *r, const float *rest, int V, const int32_t *faces, int F,
                           const float *body_v, const float *body_w, int Nb, int B, int k, double sigma,
                           drape_error *err)
{
    memset(r, 0, sizeof *r);
    if (!(k >= 1 && k <= B && B <= V))
        return drape_fail(err, DRAPE_EINVAL, "need k <= bones <= V (k=%d, bones=%d, V=%d)", k, B, V);
    r->V = V, r->B = B, r->k = k;
    int rc = DRAPE_ENOMEM, ne = 0;
    double *x = malloc(sizeof *x * 3 * (size_t)V), *bv = malloc(sizeof *bv * 3 * (size_t)Nb);
    double *d = malloc(sizeof *d * (size_t)V), *geo = malloc(sizeof *geo * (size_t)V * B);
    double *gd = malloc(sizeof *gd * (size_t)V);
    int32_t *bone_vid = malloc(sizeof *bone_vid * (size_t)B), *edges = NULL, *adj_start = NULL, *adj = NULL;
    double *adj_w = NULL, *bone_x = malloc(sizeof *bone_x * 3 * (size_t)B);
    heap_item *heap = NULL;
    r->bones = malloc(sizeof *r->bones * 3 * (size_t)B);
    r->bone_joint_w = malloc(sizeof *r->bone_joint_w * JOINTS * (size_t)B);
    r->skin_idx = malloc(sizeof *r->skin_idx * (size_t)V * k);
    r->skin_w0 = malloc(sizeof *r->skin_w0 * (size_t)V * k);
    r->body_nn = malloc(sizeof *r->body_nn * (size_t)V);
    r->bone_body_nn = malloc(sizeof *r->bone_body_nn * (size_t)B);
    if (!x || !bv || !d || !geo || !gd || !bone_vid || !bone_x || !r->bones || !r->bone_joint_w || !r->skin_idx ||
        !r->skin_w0 || !r->body_nn || !r->bone_body_nn)
        goto done;
    for (int i = 0; i < 3 * V; i++) x[i] = rest[i];
    for (int i = 0; i < 3 * Nb; i++) bv[i] = body_v[i];

    /* farthest point sampling from vertex 0 (assets.farthest_points) */
    bone_vid[0] = 0;
    for (int v = 0; v < V; v++) d[v] = dist2(x + 3 * v, x);
    for (int b = 1; b < B; b++) {
        int best = 0;
        for (int v = 1; v < V; v++)
            if (d[v] > d[best]) best = v; /* argmax: ties to the lower index */
        bone_vid[b] = best;
        for (int v = 0; v < V; v++) d[v] = fmin(d[v], dist2(x + 3 * v, x + 3 * best));
    }

    /* the edge graph, weighted by rest length */
    if (drape_mesh_edges(&edges, &ne, faces, F)) goto done;
    adj_start = calloc((size_t)V + 1, sizeof *adj_start);
    adj = malloc(sizeof *adj * 2 * (size_t)(ne ? ne : 1));
    adj_w = malloc(sizeof *adj_w * 2 * (size_t)(ne ? ne : 1));
    heap = malloc(sizeof *heap * (2 * (size_t)ne + 1));
    if (!adj_start || !adj || !adj_w || !heap) goto done;
    for (int e = 0; e < ne; e++) adj_start[edges[2 * e] + 1]++, adj_start[edges[2 * e + 1] + 1]++;
    for (int v = 0; v < V; v++) adj_start[v + 1] += adj_start[v];
    int32_t *fill = malloc(sizeof *fill * (size_t)V);
    if (!fill) goto done;
    memcpy(fill, adj_start, sizeof *fill * (size_t)V);
    for (int e = 0; e < ne; e++) {
        int i = edges[2 * e], j = edges[2 * e + 1];
        double len = sqrt(dist2(x + 3 * i, x + 3 * j));
        adj[fill[i]] = j, adj_w[fill[i]++] = len;
        adj[fill[j]] = i, adj_w[fill[j]++] = len;
    }
    free(fill);
    for (int b = 0; b < B; b++) {
        dijkstra(gd, V, adj_start, adj, adj_w, bone_vid[b], heap);
        for (int v = 0; v < V; v++) geo[(size_t)v * B + b] = gd[v];
    }

    /* each vertex's k nearest bones by (distance, bone), as a stable sort's
     * first k: bones in order, each inserted after those no farther */
    for (int v = 0; v < V; v++) {
        const double *g = geo + (size_t)v * B;
        int32_t *idx = r->skin_idx + (size_t)v * k;
        int m = 0;
        for (int b = 0; b < B; b++) {
            if (m == k && !(g[b] < g[idx[k - 1]])) continue;
            int at = m < k ? m : k - 1;
            while (at > 0 && g[idx[at - 1]] > g[b]) {
                idx[at] = idx[at - 1];
                at--;
            }
            idx[at] = b;
            if (m < k) m++;
        }
        double w[64], s = 0; /* k <= 64 (drape.config's bound) */
        for (int j = 0; j < k; j++) {
            w[j] = exp(-g[idx[j]] * g[idx[j]] / (2 * sigma * sigma)); /* exp(-inf) = 0 */
            s += w[j];
        }
        float *w0 = r->skin_w0 + (size_t)v * k;
        for (int j = 0; j < k; j++) w0[j] = s == 0 ? (j == 0) : (float)(w[j] / s);
    }

    for (int b = 0; b < B; b++) memcpy(bone_x + 3 * b, x + 3 * (size_t)bone_vid[b], sizeof(double) * 3);
    if (nearest_all(r->bone_body_nn, bone_x, B, bv, Nb) || nearest_all(r->body_nn, x, V, bv, Nb)) goto done;
    for (int b = 0; b < B; b++) {
        memcpy(r->bones + 3 * b, rest + 3 * (size_t)bone_vid[b], sizeof(float) * 3);
        memcpy(r->bone_joint_w + JOINTS * b, body_w + JOINTS * (size_t)r->bone_body_nn[b], sizeof(float) * JOINTS);
    }
    rc = DRAPE_OK;
done:
    free(x), free(bv), free(d), free(geo), free(gd), free(bone_vid), free(bone_x);
    free(edges), free(adj_start), free(adj), free(adj_w), free(heap);
    if (rc) {
        drape_rig_free(r);
        drape_fail(err, rc, "out of memory computing the garment's rig");
    }
    return rc;
}

/* ---- measurements ---- */

static int cmp_edge(const void *a, const void *b)
{
    const int32_t *x = a, *y = b;
    return x[0] != y[0] ? (x[0] > y[0]) - (x[0] < y[0]) : (x[1] > y[1]) - (x[1] < y[1]);
}

int drape_rig_nonmanifold(const int32_t *faces, int F, int *n_edges)
{
    int32_t *e = malloc(sizeof *e * 6 * (size_t)F);
    if (!e) return DRAPE_ENOMEM;
    for (int f = 0; f < F; f++)
        for (int c = 0; c < 3; c++) {
            int32_t i = faces[3 * f + c], j = faces[3 * f + (c + 1) % 3];
            e[6 * f + 2 * c] = i < j ? i : j;
            e[6 * f + 2 * c + 1] = i < j ? j : i;
        }
    qsort(e, 3 * (size_t)F, sizeof *e * 2, cmp_edge);
    int bad = 0, unique = 0;
    for (int s = 0; s < 3 * F;) {
        int t = s;
        while (t < 3 * F && !cmp_edge(e + 2 * s, e + 2 * t)) t++;
        unique++;
        bad += t - s > 2;
        s = t;
    }
    free(e);
    *n_edges = unique;
    return bad;
}

/* hits: 0 empty, 1 on an edge only, 2 strictly inside one face, 3 inside two or more */
static void overlap_visit(void *ctx, int t, double la, double lb, double lc)
{
    uint8_t *h = (uint8_t *)ctx + t;
    if (la > 1e-9 && lb > 1e-9 && lc > 1e-9) *h = (uint8_t)(*h < 2 ? *h + 2 : 3); /* inside */
    else if (!*h) *h = 1;                                                         /* on an edge */
}

int drape_rig_uv_overlap(const float *uv, const int32_t *uv_faces, int F, int hu, int wu, int64_t *covered,
                         int64_t *twice)
{
    uint8_t *hits = calloc((size_t)hu * wu, 1);
    if (!hits) return DRAPE_ENOMEM;
    for (int f = 0; f < F; f++)
        drape_uv_face_texels(uv + 2 * uv_faces[3 * f], uv + 2 * uv_faces[3 * f + 1], uv + 2 * uv_faces[3 * f + 2], hu,
                             wu, overlap_visit, hits);
    int64_t cov = 0, two = 0;
    for (size_t t = 0; t < (size_t)hu * wu; t++) cov += hits[t] != 0, two += hits[t] == 3;
    free(hits);
    *covered = cov;
    *twice = two;
    return DRAPE_OK;
}

typedef struct {
    const double *bv;
    const int32_t *bf;
    const double *p;
    double best;
} surf_query;

static void surf_visit(void *ctx, int f)
{
    surf_query *q = ctx;
    double c[3], w[3];
    double d2 = drape_closest_on_triangle(c, w, q->p, q->bv + 3 * q->bf[3 * f], q->bv + 3 * q->bf[3 * f + 1],
                                          q->bv + 3 * q->bf[3 * f + 2]);
    if (d2 < q->best) q->best = d2;
}

int drape_rig_body_distance(double *dist, const float *rest, int V, const float *body_v, int Nb,
                                const int32_t *body_faces, int Fb)
{
    int rc = DRAPE_ENOMEM;
    double *bv = malloc(sizeof *bv * 3 * (size_t)Nb), *x = malloc(sizeof *x * 3 * (size_t)V);
    double *lo = malloc(sizeof *lo * 3 * (size_t)Fb), *hi = malloc(sizeof *hi * 3 * (size_t)Fb);
    int32_t *nn = malloc(sizeof *nn * (size_t)V);
    drape_grid g = {0};
    if (!bv || !x || !lo || !hi || !nn) goto done;
    for (int i = 0; i < 3 * Nb; i++) bv[i] = body_v[i];
    for (int i = 0; i < 3 * V; i++) x[i] = rest[i];
    double span = 0;
    for (int f = 0; f < Fb; f++)
        for (int d = 0; d < 3; d++) {
            double a = bv[3 * body_faces[3 * f] + d], b = bv[3 * body_faces[3 * f + 1] + d],
                   c = bv[3 * body_faces[3 * f + 2] + d];
            lo[3 * f + d] = fmin(a, fmin(b, c));
            hi[3 * f + d] = fmax(a, fmax(b, c));
            span = fmax(span, hi[3 * f + d] - lo[3 * f + d]);
        }
    if (nearest_all(nn, x, V, bv, Nb)) goto done;
    if (drape_grid_build(&g, lo, hi, Fb, span > 0 ? span : 1)) goto done;
    for (int v = 0; v < V; v++) {
        /* the nearest body vertex bounds the search box */
        const double *p = x + 3 * v;
        double r = sqrt(dist2(p, bv + 3 * (size_t)nn[v]));
        surf_query q = {bv, body_faces, p, r * r};
        double qlo[3] = {p[0] - r, p[1] - r, p[2] - r}, qhi[3] = {p[0] + r, p[1] + r, p[2] + r};
        drape_grid_visit(&g, qlo, qhi, surf_visit, &q);
        dist[v] = sqrt(q.best);
    }
    rc = DRAPE_OK;
done:
    drape_grid_free(&g);
    free(bv), free(x), free(lo), free(hi), free(nn);
    return rc;
}

/* ---- attach sets ---- */

int drape_rig_attach_top(int32_t **out, int *n, const float *rest, int V, double band)
{
    *n = 0;
    *out = malloc(sizeof **out * (size_t)V);
    if (!*out) return DRAPE_ENOMEM;
    float top = -HUGE_VALF;
    for (int v = 0; v < V; v++) top = fmaxf(top, rest[3 * v + 1]);
    /* in float64 like numpy's `rest[:, 1] >= rest[:, 1].max() - band` on float32 rest */
    for (int v = 0; v < V; v++)
        if ((double)rest[3 * v + 1] >= (double)top - band) (*out)[(*n)++] = v;
    return DRAPE_OK;
}

int drape_rig_attach_shoulders(int32_t **out, int *n, const float *rest, int V, const float *body_v,
                               const float *J_regressor, int Nb, const int32_t *body_faces, int Fb, double band)
{
    *n = 0;
    *out = malloc(sizeof **out * (size_t)V);
    double *dist = malloc(sizeof *dist * (size_t)V), *x = malloc(sizeof *x * 3 * (size_t)V);
    double *bv = malloc(sizeof *bv * 3 * (size_t)Nb);
    float *normals = malloc(sizeof *normals * 3 * (size_t)Nb);
    int32_t *nn = malloc(sizeof *nn * (size_t)V);
    int rc = DRAPE_ENOMEM;
    if (!*out || !dist || !x || !bv || !normals || !nn) goto done;
    for (int i = 0; i < 3 * V; i++) x[i] = rest[i];
    for (int i = 0; i < 3 * Nb; i++) bv[i] = body_v[i];
    /* the rest joints that bound the shoulders: spine3 (9) below, the shoulder joints (16, 17) at the sides */
    double J[JOINTS][3] = {{0}};
    for (int j = 0; j < JOINTS; j++)
        for (int i = 0; i < Nb; i++)
            for (int d = 0; d < 3; d++) J[j][d] += (double)J_regressor[(size_t)j * Nb + i] * bv[3 * i + d];
    double xlo = fmin(J[16][0], J[17][0]), xhi = fmax(J[16][0], J[17][0]);
    drape_mesh_normals(normals, body_v, Nb, body_faces, Fb);
    if (nearest_all(nn, x, V, bv, Nb) || drape_rig_body_distance(dist, rest, V, body_v, Nb, body_faces, Fb))
        goto done;
    for (int v = 0; v < V; v++) {
        const double *p = x + 3 * v;
        if (dist[v] <= band && normals[3 * nn[v] + 1] >= 0.5f && p[1] >= J[9][1] && p[0] >= xlo && p[0] <= xhi)
            (*out)[(*n)++] = v;
    }
    rc = DRAPE_OK;
done:
    free(dist), free(x), free(bv), free(normals), free(nn);
    if (rc) free(*out), *out = NULL;
    return rc;
}
