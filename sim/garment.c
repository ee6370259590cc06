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
#include "garment_test.h"

drape_garment_sim_params drape_garment_sim_defaults(void)
{
    return (drape_garment_sim_params){
        .iters = 10, .substeps = 0, .max_substeps = 16, .max_disp = 0.01, .settle = 60, .gravity = 9.81,
        .density = 0.15, .stretch = 200, .bend = 2, .attach = 1000, .attach_band = 0.01, .damping = 0.02,
        .margin = 0.005, .vertex_margin = -1, .friction = 0.3, .reach = 0.08,
    };
}

drape_garment_sim_params drape_garment_sim_realtime(void)
{
    /* docs/server.md ("Physics") has their cost against the teacher and the
     * runs behind each choice */
    drape_garment_sim_params p = drape_garment_sim_defaults();
    p.substeps = 4;   /* 120 Hz; fewer substeps with more iterations beat more substeps with fewer */
    p.iters = 10;
    p.cheby = 0.9;    /* halves the edge error at 4 substeps; 0.97 overshoots */
    p.warm = 1;       /* the same contacts found in a fraction of the candidates */
    p.cell = 0.03;
    p.max_stray = 1.0;
    p.guide = DRAPE_GUIDE_DEFAULT; /* a weak pull (0.5 Hz) to the skinned garment: the coarse steps drift less
                                      from the teacher's cloth (docs/training-log.md, "A pull towards skinning") */
    return p;
}

drape_garment_sim_params drape_garment_sim_served(const drape_model *m, int gi)
{
    drape_garment_sim_params p = drape_garment_sim_realtime();
    if (m->cfg.physics[gi].has_pull) p.guide = m->cfg.physics[gi].pull;
    return p;
}

static int check_inputs(const drape_model *m, int gi, const float *poses, int T, drape_error *err)
{
    if (gi < 0 || gi >= m->cfg.n_garments)
        return drape_fail(err, DRAPE_ENOTFOUND, "garment index %d is not in the model (%d garments)", gi,
                          m->cfg.n_garments);
    if (T > (1 << 20)) return drape_fail(err, DRAPE_EINVAL, "too many frames (%d)", T);
    return poses ? drape_poses_check(poses, T, NULL, err) : DRAPE_OK; /* NULL: the garment only */
}

/* Frame 0 of the LBS run is the zero pose at the origin: every A_k is the
 * identity there, so the skinned garment is g(β) itself. */
int drape_garment_lbs(const drape_model *m, int gi, const float *betas, int n_betas, const float *poses, int T,
                      float *rest, float *lbs, drape_error *err)
{
    int rc = check_inputs(m, gi, lbs ? poses : NULL, T, err);
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
        p->max_substeps > 64 || p->settle < 0 || p->settle > 100000 || p->adapt < 0 || p->adapt > 64)
        return drape_fail(err, DRAPE_EINVAL, "garment sim: iters must be in [1, 1000], substeps in [0, 64], "
                                             "max substeps and adapt in [1, 64] and [0, 64], settle in [0, 100000]");
    if (!(p->max_disp > 0) || !(p->stretch > 0) || !isfinite(p->stretch) || !(p->bend >= 0) || !isfinite(p->bend) ||
        !(p->reach > p->margin) || !isfinite(p->vertex_margin) || !(p->reach > p->vertex_margin))
        return drape_fail(err, DRAPE_EINVAL, "garment sim: max displacement and stretch must be positive, bend >= 0, "
                                             "reach greater than the margin and the vertex margin");
    if (!(p->cell >= 0) || !isfinite(p->cell) || !(p->max_stray >= 0) || !isfinite(p->max_stray) || !(p->cheby >= 0) ||
        !(p->cheby < 1) || !(p->guide >= 0) || !(p->guide <= 1e6))
        return drape_fail(err, DRAPE_EINVAL, "garment sim: cell and max stray must be finite and >= 0, cheby in [0, 1), "
                                             "guide in [0, 1e6]");
    return DRAPE_OK;
}

/* the largest squared distance a body vertex moves from a [Nb,3] to b */
static double body_motion2(const float *a, const float *b, int Nb)
{
    double d2 = 0;
    for (int i = 0; i < 3 * Nb; i += 3) {
        double dx = b[i] - a[i], dy = b[i + 1] - a[i + 1], dz = b[i + 2] - a[i + 2];
        d2 = fmax(d2, dx * dx + dy * dy + dz * dz);
    }
    return d2;
}

/* The automatic substep rule: the largest motion of a body vertex between
 * two frames, over the sequence, split into steps of at most max_disp. One
 * count for the whole run keeps the matrix (and its factor) constant. */
static int pick_substeps(const drape_garment_sim_params *p, const float *body, int Nb, int T)
{
    if (p->substeps > 0) return p->substeps;
    double d2 = 0;
    for (int t = 1; t < T; t++)
        d2 = fmax(d2, body_motion2(body + (size_t)(t - 1) * Nb * 3, body + (size_t)t * Nb * 3, Nb));
    double k = ceil(sqrt(d2) / p->max_disp); /* clamped as a double: a tiny max_disp overflows an int */
    return k < 1 ? 1 : k > p->max_substeps ? p->max_substeps : (int)k;
}

/* ---- the rig: what a garment's simulation shares across runs ---- */

/* The divergence bound (0: never): max_stray, or twice the garment's own
 * size (its rest bounding box's diagonal) where that is larger. A vertex
 * and its skinned place each lie within about that size of the attached
 * vertices, so a cloth that swings as far as it can stays inside; a fixed
 * 1 m did not: on a pirouette the dress's hem, lagging half a turn behind,
 * stood 1.2 m from its skinned place (the teacher's 1.0) and was thrown
 * back to skinning mid-spin. A teleport or a state that ran away is still
 * far past it. */
static double rig_stray(const float *rest, int V, double max_stray)
{
    if (!(max_stray > 0) || V < 1) return max_stray > 0 ? max_stray : 0;
    double lo[3] = {rest[0], rest[1], rest[2]}, hi[3] = {rest[0], rest[1], rest[2]};
    for (int i = 1; i < V; i++)
        for (int d = 0; d < 3; d++) lo[d] = fmin(lo[d], rest[3 * i + d]), hi[d] = fmax(hi[d], rest[3 * i + d]);
    double diag = sqrt((hi[0] - lo[0]) * (hi[0] - lo[0]) + (hi[1] - lo[1]) * (hi[1] - lo[1]) +
                       (hi[2] - lo[2]) * (hi[2] - lo[2]));
    return fmax(max_stray, 2 * diag);
}

struct drape_garment_rig {
    const drape_model *m;
    int gi, V, Nb, na, substeps;
    double stray2;  /* the divergence bound squared (rig_stray), 0: never */
    float betas[DRAPE_MAX_BETAS];
    drape_garment_sim_params p;
    float *rest;   /* [V,3] g(β) */
    float *v_s, J[DRAPE_JOINTS * 3]; /* the shaped body, its joints */
    int32_t *att;  /* [na] attached vertices */
    drape_cloth_system *sys[DRAPE_GARMENT_LEVELS]; /* [levels]: substeps << level a frame */
    int levels;    /* 1, or with adapt as many counts as fit under it */
    size_t bytes;
};

void drape_garment_rig_free(drape_garment_rig *r)
{
    if (!r) return;
    for (int l = 0; l < r->levels; l++) drape_cloth_system_free(r->sys[l]);
    free(r->rest);
    free(r->v_s);
    free(r->att);
    free(r);
}

int drape_garment_rig_create(drape_garment_rig **out, const drape_model *m, int gi, const float *betas, int n_betas,
                             const drape_garment_sim_params *p, int substeps, drape_error *err)
{
    *out = NULL;
    int rc = check_params(p, err);
    if (rc || (rc = check_inputs(m, gi, NULL, 0, err)) || (rc = drape_model_check_betas(m, betas, n_betas, err)))
        return rc;
    if (substeps < 1 || substeps > 64) return drape_fail(err, DRAPE_EINVAL, "garment sim: substeps must be in [1, 64]");
    const drape_garment *g = &m->garments[gi];
    drape_garment_rig *r = calloc(1, sizeof *r);
    if (!r) return drape_fail(err, DRAPE_ENOMEM, "out of memory");
    r->m = m, r->gi = gi, r->V = g->V, r->Nb = m->Nb, r->p = *p, r->substeps = substeps;
    if (n_betas > 0) memcpy(r->betas, betas, (size_t)n_betas * sizeof *betas);
    int V = g->V, k = substeps;
    r->rest = malloc((size_t)V * 3 * sizeof *r->rest);
    r->v_s = malloc((size_t)m->Nb * 3 * sizeof *r->v_s);
    double *X = malloc((size_t)V * 3 * sizeof *X);
    if (!r->rest || !r->v_s || !X) rc = drape_fail(err, DRAPE_ENOMEM, "out of memory");
    if (!rc) rc = drape_garment_lbs(m, gi, r->betas, m->cfg.betas, NULL, 0, r->rest, NULL, err);
    if (!rc && drape_body_shape(r->v_s, r->J, m, r->betas)) rc = drape_fail(err, DRAPE_ENOMEM, "out of memory");
    if (!rc) rc = attached_set(&r->att, &r->na, g, r->rest, p->attach_band, err);
    if (rc) {
        free(X);
        drape_garment_rig_free(r);
        return rc;
    }
    double lim = rig_stray(r->rest, V, p->max_stray);
    r->stray2 = lim * lim;
    double l0 = 0; /* mean rest edge length: the stiffness scale */
    for (int e = 0; e < g->n_edges; e++) {
        const float *a = r->rest + 3 * g->edges[2 * e], *c = r->rest + 3 * g->edges[2 * e + 1];
        l0 += sqrt((double)(c[0] - a[0]) * (c[0] - a[0]) + (double)(c[1] - a[1]) * (c[1] - a[1]) +
                   (double)(c[2] - a[2]) * (c[2] - a[2]));
    }
    l0 /= g->n_edges > 0 ? g->n_edges : 1;
    for (int i = 0; i < 3 * V; i++) X[i] = r->rest[i];
    /* the same system at each count: a frame switches factors, not state */
    size_t sys_bytes = 0;
    for (int kl = k; !rc && r->levels < DRAPE_GARMENT_LEVELS && (kl == k || kl <= p->adapt); kl *= 2) {
        drape_cloth_params cp = {.dt = 1.0 / (m->cfg.fps * kl), .gravity = p->gravity, .iters = p->iters,
                                 .ym = p->stretch * l0 * l0, .mass = DRAPE_MASS_AREA, .density = p->density,
                                 .bend = p->bend * l0 * l0, .attach = p->attach,
                                 /* per frame, so the drag does not grow with the substeps a motion needs */
                                 .damping = 1 - pow(1 - p->damping, 1.0 / kl),
                                 .margin = p->margin, .friction = p->friction, .cheby = p->cheby, .guide = p->guide};
        rc = drape_cloth_system_create(&r->sys[r->levels], X, V, g->faces, g->F, NULL, 0, r->att, r->na, &cp, err);
        if (!rc) sys_bytes += drape_cloth_system_bytes(r->sys[r->levels++]);
    }
    free(X);
    if (rc) {
        drape_garment_rig_free(r);
        return rc;
    }
    r->bytes = sizeof *r + sys_bytes + (size_t)V * 3 * sizeof(float) + (size_t)m->Nb * 3 * sizeof(float) +
               (size_t)r->na * sizeof(int32_t);
    *out = r;
    return DRAPE_OK;
}

size_t drape_garment_rig_bytes(const drape_garment_rig *r) { return r->bytes; }
int drape_garment_rig_substeps(const drape_garment_rig *r) { return r->substeps; }
int drape_garment_rig_attached(const drape_garment_rig *r) { return r->na; }
const int32_t *drape_garment_rig_attach_set(const drape_garment_rig *r) { return r->att; }
int drape_garment_rig_vertices(const drape_garment_rig *r) { return r->V; }

/* ---- a run: one simulation over a rig, fed a pose at a time ---- */

struct drape_garment_run {
    const drape_garment_rig *r;
    drape_cloth *cloth;
    drape_collider *col;
    float *lbs[2], *body[2], *body_s; /* [V,3], [Nb,3]: the previous pose's (0) and this one's (1) */
    float *gd[2];   /* [V,3] the guide frames likewise (the rig's guide > 0), else NULL */
    double *X, *tgt;
    int started, contacts, level; /* level: the rig's system the cloth steps over now */
    size_t bytes;
};

void drape_garment_run_free(drape_garment_run *s)
{
    if (!s) return;
    drape_cloth_free(s->cloth);
    drape_collider_free(s->col);
    for (int i = 0; i < 2; i++) free(s->lbs[i]), free(s->body[i]), free(s->gd[i]);
    free(s->body_s);
    free(s->X);
    free(s->tgt);
    free(s);
}

/* a new collider: the body's topology, no positions yet (so the first ones
 * start at rest) */
static int new_collider(drape_garment_run *s, drape_error *err)
{
    const drape_garment_rig *r = s->r;
    drape_collider_free(s->col);
    s->col = NULL;
    int rc = drape_collider_create(&s->col, err);
    if (!rc) rc = drape_collider_set_mesh(s->col, r->m->body_faces, r->m->Fb, r->Nb, r->p.reach, err);
    if (!rc) rc = drape_collider_set_vertex_margin(s->col, r->p.vertex_margin, err);
    if (!rc) rc = drape_collider_set_points(s->col, r->V, r->p.warm, r->p.track, r->p.cell, err);
    if (!rc) drape_collider_set_plain_search(s->col, r->p.plain_search);
    if (!rc) drape_cloth_set_collider(s->cloth, s->col);
    return rc;
}

int drape_garment_run_create(drape_garment_run **out, const drape_garment_rig *r, drape_error *err)
{
    *out = NULL;
    drape_garment_run *s = calloc(1, sizeof *s);
    if (!s) return drape_fail(err, DRAPE_ENOMEM, "out of memory");
    s->r = r;
    size_t V3 = (size_t)r->V * 3, B3 = (size_t)r->Nb * 3;
    int rc = DRAPE_OK;
    for (int i = 0; i < 2; i++) {
        s->lbs[i] = malloc(V3 * sizeof(float));
        s->body[i] = malloc(B3 * sizeof(float));
        if (r->p.guide > 0) s->gd[i] = malloc(V3 * sizeof(float));
        if (!s->lbs[i] || !s->body[i] || (r->p.guide > 0 && !s->gd[i])) rc = DRAPE_ENOMEM;
    }
    s->body_s = malloc(B3 * sizeof(float));
    s->X = malloc(V3 * sizeof(double));
    s->tgt = malloc(((size_t)r->na + 1) * 3 * sizeof(double));
    if (rc || !s->body_s || !s->X || !s->tgt) rc = drape_fail(err, DRAPE_ENOMEM, "out of memory");
    if (!rc) rc = drape_cloth_create_on(&s->cloth, r->sys[0], err);
    if (!rc) rc = new_collider(s, err);
    if (rc) {
        drape_garment_run_free(s);
        return rc;
    }
    s->bytes = sizeof *s + drape_cloth_bytes(s->cloth) + drape_collider_bytes(s->col) + V3 * (2 * sizeof(float) + sizeof(double)) +
               B3 * 3 * sizeof(float) + (size_t)r->na * 3 * sizeof(double) + (s->gd[0] ? 2 * V3 * sizeof(float) : 0);
    *out = s;
    return DRAPE_OK;
}

size_t drape_garment_run_bytes(const drape_garment_run *s) { return s->bytes; }
int drape_garment_run_contacts(const drape_garment_run *s) { return s->contacts; }

/* pose [75] → the skinned garment and the posed body in slot i; the guide
 * frame (NULL: the skinned garment) too when the rig has a guide */
static int pose_into(drape_garment_run *s, int i, const float *pose, const float *guide, drape_error *err)
{
    const drape_garment_rig *r = s->r;
    float A[DRAPE_JOINTS * 12];
    int rc = drape_poses_check(pose, 1, NULL, err);
    if (!rc) rc = drape_skin_lbs(s->lbs[i], r->m, r->gi, r->betas, pose, 1, err);
    if (rc) return rc;
    if (guide && !s->gd[i]) return drape_fail(err, DRAPE_EINVAL, "guide: the rig was made without one (guide 0)");
    if (s->gd[i]) {
        for (int k = 0; guide && k < 3 * r->V; k++)
            if (!isfinite(guide[k])) return drape_fail(err, DRAPE_ENONFINITE, "guide: vertex %d is NaN or Inf", k / 3);
        memcpy(s->gd[i], guide ? guide : s->lbs[i], (size_t)r->V * 3 * sizeof(float));
    }
    drape_fk(A, pose, pose + DRAPE_POSE_DIM, r->J, r->m->parents);
    drape_body_pose(s->body[i], r->m, r->v_s, A);
    return DRAPE_OK;
}

/* targets = lerp(lbs_a, lbs_b, t) at the attached vertices; body likewise */
static int move_to(drape_garment_run *s, const float *lbs_a, const float *lbs_b, const float *body_a,
                   const float *body_b, float t, drape_error *err)
{
    const drape_garment_rig *r = s->r;
    for (int a = 0; a < r->na; a++)
        for (int d = 0; d < 3; d++) {
            int i = 3 * r->att[a] + d;
            s->tgt[3 * a + d] = lbs_a[i] + t * (lbs_b[i] - lbs_a[i]);
        }
    for (int i = 0; i < 3 * r->Nb; i++) s->body_s[i] = body_a[i] + t * (body_b[i] - body_a[i]);
    int rc = drape_cloth_set_targets(s->cloth, s->tgt, err);
    if (!rc && s->gd[0]) { /* the guide likewise, through X (free until the next start) */
        for (int i = 0; i < 3 * r->V; i++) s->X[i] = s->gd[0][i] + t * (s->gd[1][i] - s->gd[0][i]);
        rc = drape_cloth_set_guide(s->cloth, s->X, err);
    }
    return rc ? rc : drape_collider_update_mesh(s->col, s->body_s, err);
}

static void store(float *out, const drape_cloth *c, int V)
{
    const double *x = drape_cloth_positions(c);
    for (int i = 0; i < 3 * V; i++) out[i] = (float)x[i];
}

static int run_start(drape_garment_run *s, const float *pose, const float *guide, int settle, float *out,
                     drape_error *err);

int drape_garment_run_first(drape_garment_run *s, const float *pose, float *out, drape_error *err)
{
    return run_start(s, pose, NULL, s->r->p.settle, out, err);
}

int drape_garment_run_first_guided(drape_garment_run *s, const float *pose, const float *guide, float *out,
                                   drape_error *err)
{
    return run_start(s, pose, guide, s->r->p.settle, out, err);
}

int drape_garment_run_substeps(const drape_garment_run *s) { return s->r->substeps; }
int drape_garment_run_frame_substeps(const drape_garment_run *s) { return s->r->substeps << s->level; }

/* the rig's level l for the steps that follow (the layouts match: made alike) */
static int use_level(drape_garment_run *s, int l, drape_error *err)
{
    if (l == s->level) return DRAPE_OK;
    int rc = drape_cloth_use_system(s->cloth, s->r->sys[l], err);
    if (!rc) s->level = l;
    return rc;
}

/* adapt: the fewest of the rig's counts that move no body vertex more than
 * max_disp a substep between the two poses' bodies */
static int frame_level(const drape_garment_run *s)
{
    const drape_garment_rig *r = s->r;
    if (r->levels < 2) return 0;
    double d = sqrt(body_motion2(s->body[0], s->body[1], r->Nb));
    int l = 0;
    while (l + 1 < r->levels && d > r->p.max_disp * (r->substeps << l)) l++;
    return l;
}

int drape_garment_run_restart(drape_garment_run *s, const float *pose, int settle, float *out, drape_error *err)
{
    return run_start(s, pose, NULL, settle, out, err);
}

static int run_start(drape_garment_run *s, const float *pose, const float *guide, int settle, float *out,
                     drape_error *err)
{
    const drape_garment_rig *r = s->r;
    s->started = 0;
    int rc = pose_into(s, 1, pose, guide, err);
    if (!rc) rc = use_level(s, 0, err); /* settled at the run's own count */
    if (rc) return rc;
    if (s->gd[0]) memcpy(s->gd[0], s->gd[1], (size_t)r->V * 3 * sizeof(float));
    drape_cloth_reset(s->cloth);
    if ((rc = new_collider(s, err))) return rc;
    /* start: skinned to the first pose (or the guide there), at rest */
    const float *x0 = s->gd[1] ? s->gd[1] : s->lbs[1];
    for (int i = 0; i < 3 * r->V; i++) s->X[i] = x0[i];
    if ((rc = drape_cloth_set_state(s->cloth, s->X, NULL, err)) ||
        (rc = move_to(s, s->lbs[1], s->lbs[1], s->body[1], s->body[1], 0, err)))
        return rc;
    for (int k = 0; k < settle && !rc; k++) rc = drape_cloth_step(s->cloth, err);
    if (rc) return rc;
    /* a restart is the way out of a diverged state: it must not hand one on */
    const double *x = drape_cloth_positions(s->cloth);
    for (int i = 0; i < 3 * r->V; i++)
        if (!isfinite(x[i])) return drape_fail(err, DRAPE_ENONFINITE, "the cloth settled to a state that is not finite");
    s->contacts = drape_cloth_contacts(s->cloth);
    store(out, s->cloth, r->V);
    s->started = 1;
    return DRAPE_OK;
}

/* Whether the state left the garment's reach: not finite, or a vertex
 * farther than the rig's bound (rig_stray) from its skinned place. */
static int diverged(const drape_garment_run *s)
{
    const drape_garment_rig *r = s->r;
    const double *x = drape_cloth_positions(s->cloth), *v = drape_cloth_velocities(s->cloth);
    double lim = r->stray2;
    for (int i = 0; i < r->V; i++) {
        const double *p = x + 3 * i, *u = v + 3 * i;
        const float *q = s->lbs[1] + 3 * i;
        double d2 = (p[0] - q[0]) * (p[0] - q[0]) + (p[1] - q[1]) * (p[1] - q[1]) + (p[2] - q[2]) * (p[2] - q[2]);
        if (!(d2 <= lim) || !isfinite(u[0] + u[1] + u[2])) return 1;
    }
    return 0;
}

static void swap_slots(drape_garment_run *s)
{
    float *t = s->lbs[0];
    s->lbs[0] = s->lbs[1], s->lbs[1] = t;
    t = s->body[0], s->body[0] = s->body[1], s->body[1] = t;
    t = s->gd[0], s->gd[0] = s->gd[1], s->gd[1] = t;
}

int drape_garment_run_next(drape_garment_run *s, const float *pose, float *out, int *reset, drape_error *err)
{
    return drape_garment_run_next_guided(s, pose, NULL, out, reset, err);
}

int drape_garment_run_next_guided(drape_garment_run *s, const float *pose, const float *guide, float *out, int *reset,
                                  drape_error *err)
{
    const drape_garment_rig *r = s->r;
    if (reset) *reset = 0;
    if (!s->started) return run_start(s, pose, guide, r->p.settle, out, err);
    swap_slots(s);
    int rc = pose_into(s, 1, pose, guide, err);
    if (rc) { /* this pose is refused; the state stays at the previous one */
        swap_slots(s);
        return rc;
    }
    int l = frame_level(s), k = r->substeps << l;
    if ((rc = use_level(s, l, err))) return rc;
    for (int j = 1; j <= k && !rc; j++) {
        rc = move_to(s, s->lbs[0], s->lbs[1], s->body[0], s->body[1], (float)j / k, err);
        if (!rc) rc = drape_cloth_step(s->cloth, err);
    }
    if (rc) return rc;
    s->contacts = drape_cloth_contacts(s->cloth);
    if (r->p.max_stray > 0 && diverged(s)) {
        /* back to the skinned garment (or the guide) at this pose, settled:
         * the frame the caller gets is that, and it says so */
        if (reset) *reset = 1;
        return run_start(s, pose, guide, r->p.settle, out, err);
    }
    store(out, s->cloth, r->V);
    return DRAPE_OK;
}

int drape_garment_simulate(const drape_model *m, int gi, const float *betas, int n_betas, const float *poses, int T,
                           const drape_garment_sim_params *p, float *out, drape_garment_sim_stats *stats,
                           drape_error *err)
{
    return drape_garment_simulate_guided(m, gi, betas, n_betas, poses, T, NULL, p, out, stats, err);
}

int drape_garment_simulate_guided(const drape_model *m, int gi, const float *betas, int n_betas, const float *poses,
                                  int T, const float *guide, const drape_garment_sim_params *p, float *out,
                                  drape_garment_sim_stats *stats, drape_error *err)
{
    double t0 = drape_now_ms();
    int rc = check_params(p, err);
    if (rc || (rc = check_inputs(m, gi, poses, T, err))) return rc;
    if (T < 1) return drape_fail(err, DRAPE_EINVAL, "garment sim: no frames");
    int Nb = m->Nb, k = p->substeps;
    if (k == 0) { /* the automatic rule looks at the whole sequence's body motion */
        float *body = malloc((size_t)T * Nb * 3 * sizeof *body);
        if (!body) return drape_fail(err, DRAPE_ENOMEM, "out of memory");
        rc = drape_garment_body_frames(m, betas, n_betas, poses, T, body, err);
        if (!rc) k = pick_substeps(p, body, Nb, T);
        free(body);
        if (rc) return rc;
    }
    drape_garment_rig *r = NULL;
    drape_garment_run *s = NULL;
    if ((rc = drape_garment_rig_create(&r, m, gi, betas, n_betas, p, k, err)) ||
        (rc = drape_garment_run_create(&s, r, err))) {
        drape_garment_rig_free(r);
        return rc;
    }
    int V = r->V, resets = 0;
    double t1 = drape_now_ms(), contacts = 0, steps = 0;
    size_t GV = (size_t)V * 3;
    rc = drape_garment_run_first_guided(s, poses, guide, out, err);
    double t2 = drape_now_ms(), c2 = (drape_cpu_ns() * 1e-6);
    for (int t = 1; t < T && !rc; t++) {
        int reset = 0;
        rc = drape_garment_run_next_guided(s, poses + (size_t)t * DRAPE_FRAME_FLOATS, guide ? guide + t * GV : NULL,
                                           out + (size_t)t * V * 3, &reset, err);
        resets += reset;
        contacts += drape_garment_run_contacts(s);
        steps += drape_garment_run_frame_substeps(s);
    }
    double t3 = drape_now_ms(), c3 = (drape_cpu_ns() * 1e-6);
    if (stats)
        *stats = (drape_garment_sim_stats){.substeps = k, .attached = r->na, .resets = resets,
                                           .mean_substeps = T > 1 ? steps / (T - 1) : k,
                                           .contacts = T > 1 ? contacts / (T - 1) : 0,
                                           .setup_ms = t1 - t0, .settle_ms = t2 - t1,
                                           .ms_per_frame = T > 1 ? (t3 - t2) / (T - 1) : 0,
                                           .cpu_ms_per_frame = T > 1 ? (c3 - c2) / (T - 1) : 0};
    drape_garment_run_free(s);
    drape_garment_rig_free(r);
    return rc;
}

/* sim/garment_test.h */
int drape_garment_run_test_kick(drape_garment_run *s, const double v[3], drape_error *err)
{
    int V = s->r->V;
    double *vel = malloc((size_t)V * 3 * sizeof *vel);
    if (!vel) return drape_fail(err, DRAPE_ENOMEM, "out of memory");
    for (int i = 0; i < V; i++)
        for (int d = 0; d < 3; d++) vel[3 * i + d] = v[d];
    int rc = drape_cloth_set_state(s->cloth, drape_cloth_positions(s->cloth), vel, err);
    free(vel);
    return rc;
}
