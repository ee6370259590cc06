#include "garment.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../runtime/skin.h"
#include "../runtime/body.h"
#include "../runtime/sequence.h"
#include "cloth.h"
#include "collide.h"
#include "../core/clock.h"

drape_garment_sim_params drape_garment_sim_defaults(void)
{
    return (drape_garment_sim_params){
        .iters = 10, .substeps = 0, .max_substeps = 16, .max_disp = 0.01, .settle = 60, .gravity = 9.81,
        .density = 0.15, .stretch = 200, .bend = 2, .attach = 1000, .attach_band = 0.01, .damping = 0.02,
        .margin = 0.005, .vertex_margin = -1, .friction = 0.3, .reach = 0.08,
    };
}

static int check_inputs(const drape_model *m, int gi, const float *poses, int T, drape_error *err)
{
    if (gi < 0 || gi >= m->cfg.n_garments)
        return drape_fail(err, DRAPE_ENOTFOUND, "garment index %d is not in the model (%d garments)", gi,
                          m->cfg.n_garments);
    if (T > (1 << 20)) return drape_fail(err, DRAPE_EINVAL, "too many frames (%d)", T);
    return drape_poses_check(poses, T, NULL, err);
}

/* Frame 0 of the LBS run is the zero pose at the origin: every A_k is the
 * identity there, so the skinned garment is g(β) itself. */
int drape_garment_lbs(const drape_model *m, int gi, const float *betas, int n_betas, const float *poses, int T,
                      float *rest, float *lbs, drape_error *err)
{
    int rc = check_inputs(m, gi, poses, T, err);
    if (rc) return rc;
    int V3 = 3 * m->garments[gi].V, Tn = lbs ? T + 1 : 1;
    float b[DRAPE_MAX_BETAS] = {0};
    if ((rc = drape_model_check_betas(m, betas, n_betas, err))) return rc;
    if (n_betas > 0) memcpy(b, betas, (size_t)n_betas * sizeof *b);
    float *p = calloc((size_t)Tn * DRAPE_FRAME_FLOATS, sizeof *p), *out = malloc((size_t)Tn * V3 * sizeof *out);
    if (!p || !out) rc = drape_fail(err, DRAPE_ENOMEM, "out of memory");
    if (!rc && lbs) memcpy(p + DRAPE_FRAME_FLOATS, poses, (size_t)T * DRAPE_FRAME_FLOATS * sizeof *p);
    if (!rc) rc = drape_skin_lbs(out, m, gi, b, p, Tn, err);
    if (!rc) {
        memcpy(rest, out, (size_t)V3 * sizeof *out);
        if (lbs) memcpy(lbs, out + V3, (size_t)T * V3 * sizeof *out);
    }
    free(p);
    free(out);
    return rc;
}

int drape_garment_body_frames(const drape_model *m, const float *betas, int n_betas, const float *poses, int T,
                              float *body, drape_error *err)
{
    int rc = drape_model_check_betas(m, betas, n_betas, err);
    if (rc) return rc;
    if ((rc = drape_poses_check(poses, T, NULL, err))) return rc;
    float b[DRAPE_MAX_BETAS] = {0}, J[DRAPE_JOINTS * 3], A[DRAPE_JOINTS * 12];
    if (n_betas > 0) memcpy(b, betas, (size_t)n_betas * sizeof *b);
    float *v_s = malloc((size_t)m->Nb * 3 * sizeof *v_s);
    if (!v_s) return drape_fail(err, DRAPE_ENOMEM, "out of memory");
    drape_body_shape(v_s, J, m, b);
    for (int t = 0; t < T; t++) {
        const float *pose = poses + (size_t)t * DRAPE_FRAME_FLOATS;
        drape_fk(A, pose, pose + DRAPE_POSE_DIM, J, m->parents);
        drape_body_pose(body + (size_t)t * m->Nb * 3, m, v_s, A);
    }
    free(v_s);
    return DRAPE_OK;
}

void drape_garment_walk(float *poses, int T, double fps)
{
    memset(poses, 0, sizeof(float) * DRAPE_FRAME_FLOATS * T);
    for (int t = 0; t < T; t++) {
        float ph = (float)(2 * M_PI * t / fps), *p = poses + (size_t)DRAPE_FRAME_FLOATS * t;
        p[3] = 0.35f * sinf(ph), p[6] = -0.35f * sinf(ph);                   /* hips about x */
        p[12] = 0.3f * (1 - cosf(ph)), p[15] = 0.3f * (1 + cosf(ph));         /* knees */
        p[1] = 0.3f * sinf(0.5f * ph);                                        /* root yaw */
        p[74] = (float)(t / fps);
    }
}

int drape_garment_waist(int32_t **idx, int *n, const float *rest, int V, double band, drape_error *err)
{
    *idx = NULL;
    *n = 0;
    if (!(band >= 0)) return drape_fail(err, DRAPE_EINVAL, "attachment band must be >= 0, got %g", band);
    float top = -INFINITY;
    for (int i = 0; i < V; i++) top = fmaxf(top, rest[3 * i + 1]);
    *idx = malloc(((size_t)V + 1) * sizeof **idx);
    if (!*idx) return drape_fail(err, DRAPE_ENOMEM, "out of memory");
    for (int i = 0; i < V; i++)
        if (rest[3 * i + 1] >= top - band) (*idx)[(*n)++] = i;
    return DRAPE_OK;
}

/* The bundle's attach set when it has one (chosen on the unshaped garment,
 * so the same for every betas), else the band rule on the shaped rest. */
static int attached_set(int32_t **idx, int *n, const drape_garment *g, const float *rest, double band, drape_error *err)
{
    if (!g->n_attach) return drape_garment_waist(idx, n, rest, g->V, band, err);
    *idx = malloc((size_t)g->n_attach * sizeof **idx);
    if (!*idx) return drape_fail(err, DRAPE_ENOMEM, "out of memory");
    memcpy(*idx, g->attach, (size_t)g->n_attach * sizeof **idx);
    *n = g->n_attach;
    return DRAPE_OK;
}

static int check_params(const drape_garment_sim_params *p, drape_error *err)
{
    if (p->iters < 1 || p->iters > 1000 || p->substeps < 0 || p->substeps > 64 || p->max_substeps < 1 ||
        p->max_substeps > 64 || p->settle < 0 || p->settle > 100000)
        return drape_fail(err, DRAPE_EINVAL, "garment sim: iters must be in [1, 1000], substeps in [0, 64], "
                                             "max substeps in [1, 64], settle in [0, 100000]");
    if (!(p->max_disp > 0) || !(p->stretch > 0) || !isfinite(p->stretch) || !(p->bend >= 0) || !isfinite(p->bend) ||
        !(p->reach > p->margin) || !isfinite(p->vertex_margin) || !(p->reach > p->vertex_margin))
        return drape_fail(err, DRAPE_EINVAL, "garment sim: max displacement and stretch must be positive, bend >= 0, "
                                             "reach greater than the margin and the vertex margin");
    return DRAPE_OK;
}

/* The automatic substep rule: the largest motion of a body vertex between
 * two frames, over the sequence, split into steps of at most max_disp. One
 * count for the whole run keeps the matrix (and its factor) constant. */
static int pick_substeps(const drape_garment_sim_params *p, const float *body, int Nb, int T)
{
    if (p->substeps > 0) return p->substeps;
    double d2 = 0;
    for (int t = 1; t < T; t++) {
        const float *a = body + (size_t)(t - 1) * Nb * 3, *b = body + (size_t)t * Nb * 3;
        for (int i = 0; i < 3 * Nb; i += 3) {
            double dx = b[i] - a[i], dy = b[i + 1] - a[i + 1], dz = b[i + 2] - a[i + 2];
            d2 = fmax(d2, dx * dx + dy * dy + dz * dz);
        }
    }
    int k = (int)ceil(sqrt(d2) / p->max_disp);
    return k < 1 ? 1 : k > p->max_substeps ? p->max_substeps : k;
}

typedef struct {
    float *rest, *lbs, *body, *body_s;
    double *X, *tgt;
    int32_t *att;
    drape_cloth *cloth;
    drape_collider *col;
} sim_buffers;

static void buffers_free(sim_buffers *b)
{
    free(b->rest); free(b->lbs); free(b->body); free(b->body_s); free(b->X); free(b->tgt); free(b->att);
    drape_cloth_free(b->cloth);
    drape_collider_free(b->col);
}

/* targets = lerp(lbs_a, lbs_b, s) at the attached vertices; body likewise */
static int move_to(sim_buffers *b, int na, int Nb, const float *lbs_a, const float *lbs_b, const float *body_a,
                   const float *body_b, float s, drape_error *err)
{
    for (int a = 0; a < na; a++)
        for (int d = 0; d < 3; d++) {
            int i = 3 * b->att[a] + d;
            b->tgt[3 * a + d] = lbs_a[i] + s * (lbs_b[i] - lbs_a[i]);
        }
    for (int i = 0; i < 3 * Nb; i++) b->body_s[i] = body_a[i] + s * (body_b[i] - body_a[i]);
    int rc = drape_cloth_set_targets(b->cloth, b->tgt, err);
    return rc ? rc : drape_collider_update_mesh(b->col, b->body_s, err);
}

static void store(float *out, const drape_cloth *c, int V)
{
    const double *x = drape_cloth_positions(c);
    for (int i = 0; i < 3 * V; i++) out[i] = (float)x[i];
}

int drape_garment_simulate(const drape_model *m, int gi, const float *betas, int n_betas, const float *poses, int T,
                           const drape_garment_sim_params *p, float *out, drape_garment_sim_stats *stats,
                           drape_error *err)
{
    double t0 = drape_now_ms();
    int rc = check_params(p, err);
    if (rc || (rc = check_inputs(m, gi, poses, T, err))) return rc;
    const drape_garment *g = &m->garments[gi];
    int V = g->V, Nb = m->Nb, na = 0;
    sim_buffers b = {0};
    b.rest = malloc((size_t)V * 3 * sizeof *b.rest);
    b.lbs = malloc((size_t)T * V * 3 * sizeof *b.lbs);
    b.body = malloc((size_t)T * Nb * 3 * sizeof *b.body);
    b.body_s = malloc((size_t)Nb * 3 * sizeof *b.body_s);
    b.X = malloc((size_t)V * 3 * sizeof *b.X);
    b.tgt = malloc((size_t)V * 3 * sizeof *b.tgt);
    if (!b.rest || !b.lbs || !b.body || !b.body_s || !b.X || !b.tgt) {
        buffers_free(&b);
        return drape_fail(err, DRAPE_ENOMEM, "out of memory");
    }
    if ((rc = drape_garment_lbs(m, gi, betas, n_betas, poses, T, b.rest, b.lbs, err)) ||
        (rc = drape_garment_body_frames(m, betas, n_betas, poses, T, b.body, err)) ||
        (rc = attached_set(&b.att, &na, g, b.rest, p->attach_band, err))) {
        buffers_free(&b);
        return rc;
    }
    int k = pick_substeps(p, b.body, Nb, T);
    double l0 = 0; /* mean rest edge length: the stiffness scale */
    for (int e = 0; e < g->n_edges; e++) {
        const float *a = b.rest + 3 * g->edges[2 * e], *c = b.rest + 3 * g->edges[2 * e + 1];
        l0 += sqrt((double)(c[0] - a[0]) * (c[0] - a[0]) + (double)(c[1] - a[1]) * (c[1] - a[1]) +
                   (double)(c[2] - a[2]) * (c[2] - a[2]));
    }
    l0 /= g->n_edges > 0 ? g->n_edges : 1;
    for (int i = 0; i < 3 * V; i++) b.X[i] = b.rest[i];
    drape_cloth_params cp = {.dt = 1.0 / (m->cfg.fps * k), .gravity = p->gravity, .iters = p->iters,
                             .ym = p->stretch * l0 * l0, .mass = DRAPE_MASS_AREA, .density = p->density,
                             .bend = p->bend * l0 * l0, .attach = p->attach,
                             /* per frame, so the drag does not grow with the substeps a motion needs */
                             .damping = 1 - pow(1 - p->damping, 1.0 / k),
                             .margin = p->margin, .friction = p->friction};
    if ((rc = drape_cloth_create_attached(&b.cloth, b.X, V, g->faces, g->F, NULL, 0, b.att, na, &cp, err)) ||
        (rc = drape_collider_create(&b.col, err)) ||
        (rc = drape_collider_set_mesh(b.col, m->body_faces, m->Fb, Nb, p->reach, err)) ||
        (rc = drape_collider_set_vertex_margin(b.col, p->vertex_margin, err))) {
        buffers_free(&b);
        return rc;
    }
    drape_cloth_set_collider(b.cloth, b.col);
    for (int i = 0; i < 3 * V; i++) b.X[i] = b.lbs[i]; /* start: skinned to the first pose, at rest */
    if ((rc = drape_cloth_set_state(b.cloth, b.X, NULL, err)) ||
        (rc = move_to(&b, na, Nb, b.lbs, b.lbs, b.body, b.body, 0, err))) {
        buffers_free(&b);
        return rc;
    }
    double t1 = drape_now_ms(), contacts = 0;
    for (int s = 0; s < p->settle && !rc; s++) rc = drape_cloth_step(b.cloth, err);
    store(out, b.cloth, V);
    double t2 = drape_now_ms(), c2 = (drape_cpu_ns() * 1e-6);
    for (int t = 1; t < T && !rc; t++) {
        const float *la = b.lbs + (size_t)(t - 1) * V * 3, *ba = b.body + (size_t)(t - 1) * Nb * 3;
        for (int s = 1; s <= k && !rc; s++) {
            rc = move_to(&b, na, Nb, la, la + (size_t)V * 3, ba, ba + (size_t)Nb * 3, (float)s / k, err);
            if (!rc) rc = drape_cloth_step(b.cloth, err);
        }
        contacts += drape_cloth_contacts(b.cloth);
        store(out + (size_t)t * V * 3, b.cloth, V);
    }
    double t3 = drape_now_ms(), c3 = (drape_cpu_ns() * 1e-6);
    if (stats)
        *stats = (drape_garment_sim_stats){.substeps = k, .attached = na, .contacts = T > 1 ? contacts / (T - 1) : 0,
                                           .setup_ms = t1 - t0, .settle_ms = t2 - t1,
                                           .ms_per_frame = T > 1 ? (t3 - t2) / (T - 1) : 0,
                                           .cpu_ms_per_frame = T > 1 ? (c3 - c2) / (T - 1) : 0};
    buffers_free(&b);
    return rc;
}
