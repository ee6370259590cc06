#include "body_import.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/mesh.h"
#include "motion.h"
#include "npz.h"
#include "safetensors.h"

const int32_t drape_smpl_parents[DRAPE_JOINTS] = {-1, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8,
                                                  9, 9, 9, 12, 13, 14, 16, 17, 18, 19, 20, 21};

#define LAYOUT "SMPL's layout: v_template, shapedirs, J_regressor, weights, kintree_table, f"

/* ---- reading and checking ---- */

/* An array by SMPL's name, its kind (float or integer) and rank checked. */
static int get(drape_npy *a, const uint8_t *z, size_t len, const char *name, int want_int, int ndim, drape_error *err)
{
    char entry[64];
    snprintf(entry, sizeof entry, "%s.npy", name);
    int rc = drape_npz_array_num(a, z, len, entry, DRAPE_BODY_MAX_ARRAY, err);
    if (rc == DRAPE_ENOTFOUND) return drape_fail(err, rc, "no array '%s' (" LAYOUT ")", name);
    if (rc == DRAPE_EDTYPE && !strcmp(name, "J_regressor")) {
        char why[DRAPE_ERRMSG_MAX]; /* the reader's "npz:J_regressor.npy: dtype ..." */
        const char *d = strstr(err->msg, "dtype");
        snprintf(why, sizeof why, "%s", d ? d : err->msg);
        return drape_fail(err, rc, "J_regressor: %s; only a dense [24, N] array is read (a scipy sparse matrix "
                                   "saved as an object is not: save J_regressor.toarray())", why);
    }
    if (rc) return rc;
    if (want_int && a->kind == 'f')
        return drape_fail(err, DRAPE_EDTYPE, "%s: dtype float, expected an integer type (indices)", name);
    if (!want_int && a->kind != 'f')
        return drape_fail(err, DRAPE_EDTYPE, "%s: dtype integer, expected float32 or float64", name);
    if (a->ndim != ndim) return drape_fail(err, DRAPE_ESHAPE, "%s: %d dimensions, expected %d", name, a->ndim, ndim);
    for (int64_t i = 0; i < a->numel; i++)
        if (!isfinite(a->data[i]))
            return drape_fail(err, DRAPE_ENONFINITE, "%s: element %lld is not finite", name, (long long)i);
    return DRAPE_OK;
}

static int shape_is(const drape_npy *a, const char *name, int64_t d0, int64_t d1, const char *what, drape_error *err)
{
    if (a->shape[0] == d0 && a->shape[1] == d1) return DRAPE_OK;
    return drape_fail(err, DRAPE_ESHAPE, "%s: shape [%lld, %lld, ...], expected %s", name, (long long)a->shape[0],
                      (long long)a->shape[1], what);
}

/* The joint tree: SMPL's 24 joints with SMPL's parents, or refused by name. */
static int check_kintree(const drape_npy *k, drape_error *err)
{
    if (k->shape[0] != 2) return drape_fail(err, DRAPE_ESHAPE, "kintree_table: shape [%lld, ...], expected [2, 24]",
                                            (long long)k->shape[0]);
    int64_t J = k->shape[1];
    if (J != DRAPE_JOINTS) {
        const char *which = J == 52 ? "SMPL-H's (SMPL's 22 body joints and 30 hand joints)"
                            : J == 55 ? "SMPL-X's (body, jaw, eyes and hands)"
                            : J == 22 ? "SMPL's body without its two hand joints"
                                      : "not SMPL's";
        return drape_fail(err, DRAPE_ERANGE, "kintree_table: %lld joints, %s layout; only SMPL's 24 joints "
                                             "(pelvis ... r_hand) are supported", (long long)J, which);
    }
    for (int j = 0; j < DRAPE_JOINTS; j++) {
        float id = k->data[DRAPE_JOINTS + j], p = k->data[j];
        if (id != (float)j)
            return drape_fail(err, DRAPE_ERANGE, "kintree_table: column %d is joint %.0f; SMPL's order has %d (%s) "
                                                 "there", j, id, j, drape_smpl_joint_names[j]);
        /* the root's parent: -1, or SMPL's own uint32 -1 (4294967295) */
        int root = p < 0 || p >= 2147483648.0f;
        if (j == 0 ? !root : root || p != (float)drape_smpl_parents[j]) {
            char got[48];
            if (root) snprintf(got, sizeof got, "no parent");
            else if (p < DRAPE_JOINTS && p == floorf(p))
                snprintf(got, sizeof got, "parent %d (%s)", (int)p, drape_smpl_joint_names[(int)p]);
            else snprintf(got, sizeof got, "parent %.0f", p);
            char want[48];
            if (j == 0) snprintf(want, sizeof want, "none: it is the root");
            else snprintf(want, sizeof want, "%d (%s)", drape_smpl_parents[j], drape_smpl_joint_names[drape_smpl_parents[j]]);
            return drape_fail(err, DRAPE_ERANGE, "kintree_table: joint %d (%s) has %s; SMPL's parent is %s", j,
                              drape_smpl_joint_names[j], got, want);
        }
    }
    return DRAPE_OK;
}

static float *take(drape_npy *a)
{
    float *d = a->data;
    a->data = NULL;
    return d;
}

int drape_smpl_read(drape_smpl_body *b, const uint8_t *z, size_t len, int betas, drape_error *err)
{
    memset(b, 0, sizeof *b);
    drape_npy v = {0}, sd = {0}, jr = {0}, w = {0}, kt = {0}, f = {0};
    int rc;
    if (betas < 1 || betas > DRAPE_MAX_BETAS)
        return drape_fail(err, DRAPE_EINVAL, "betas: %d, expected 1 to %d", betas, DRAPE_MAX_BETAS);
    /* SMPL ships .pkl files (pickled, with chumpy objects): name it */
    if (len >= 2 && z[0] == 0x80 && z[1] >= 2 && z[1] <= 5)
        return drape_fail(err, DRAPE_EFORMAT, "a Python pickle (SMPL's .pkl?), not an .npz: convert it with numpy "
                                              "first (docs/body.md)");
    /* the joint tree first: a file of another skeleton is refused by name
     * before its large arrays are read */
    if ((rc = get(&kt, z, len, "kintree_table", 1, 2, err)) || (rc = check_kintree(&kt, err))) goto out;
    if ((rc = get(&v, z, len, "v_template", 0, 2, err))) goto out;
    int64_t N = v.shape[0];
    if (N < 4 || N > DRAPE_BODY_MAX_VERTICES || v.shape[1] != 3) {
        rc = drape_fail(err, DRAPE_ESHAPE, "v_template: shape [%lld, %lld], expected [N, 3] with 4 <= N <= %d",
                        (long long)N, (long long)v.shape[1], DRAPE_BODY_MAX_VERTICES);
        goto out;
    }
    for (int64_t i = 0; i < v.numel; i++)
        if (fabsf(v.data[i]) > DRAPE_BODY_MAX_COORD) {
            rc = drape_fail(err, DRAPE_ERANGE, "v_template: coordinate %g (vertex %lld) is beyond +-%g m: SMPL's "
                                               "units are metres", v.data[i], (long long)(i / 3), DRAPE_BODY_MAX_COORD);
            goto out;
        }
    if ((rc = get(&sd, z, len, "shapedirs", 0, 3, err))) goto out;
    if ((rc = shape_is(&sd, "shapedirs", N, 3, "[N, 3, S] (N: v_template's vertices)", err))) goto out;
    if (sd.shape[2] < betas) {
        rc = drape_fail(err, DRAPE_ESHAPE, "shapedirs: %lld shape directions, the bundle's body has %d betas: "
                                           "too few", (long long)sd.shape[2], betas);
        goto out;
    }
    if ((rc = get(&jr, z, len, "J_regressor", 0, 2, err)) ||
        (rc = shape_is(&jr, "J_regressor", DRAPE_JOINTS, N, "[24, N] (N: v_template's vertices)", err)))
        goto out;
    /* a joint is a weighted average of vertices: otherwise it would not
     * follow the body as it moves */
    for (int j = 0; j < DRAPE_JOINTS; j++) {
        double s = 0;
        for (int64_t i = 0; i < N; i++) s += jr.data[j * N + i];
        if (fabs(s - 1) > 1e-3) {
            rc = drape_fail(err, DRAPE_ERANGE, "J_regressor: row %d (%s) sums to %g, expected 1 (a weighted average "
                                               "of vertices)", j, drape_smpl_joint_names[j], s);
            goto out;
        }
    }
    if ((rc = get(&w, z, len, "weights", 0, 2, err)) ||
        (rc = shape_is(&w, "weights", N, DRAPE_JOINTS, "[N, 24] (N: v_template's vertices)", err)))
        goto out;
    for (int64_t i = 0; i < N; i++) {
        double s = 0;
        for (int k = 0; k < DRAPE_JOINTS; k++) {
            float x = w.data[i * DRAPE_JOINTS + k];
            if (x < 0) {
                rc = drape_fail(err, DRAPE_ERANGE, "weights: vertex %lld has a negative weight %g on joint %d",
                                (long long)i, x, k);
                goto out;
            }
            s += x;
        }
        if (fabs(s - 1) > 1e-3) {
            rc = drape_fail(err, DRAPE_ERANGE, "weights: vertex %lld's weights sum to %g, expected 1", (long long)i, s);
            goto out;
        }
    }
    if ((rc = get(&f, z, len, "f", 1, 2, err))) goto out;
    if (f.shape[1] != 3 || f.shape[0] < 1 || f.shape[0] > DRAPE_BODY_MAX_FACES) {
        rc = drape_fail(err, DRAPE_ESHAPE, "f: shape [%lld, %lld], expected [F, 3] with 1 <= F <= %d",
                        (long long)f.shape[0], (long long)f.shape[1], DRAPE_BODY_MAX_FACES);
        goto out;
    }
    b->faces = malloc(sizeof *b->faces * (size_t)f.numel);
    b->shapedirs = malloc(sizeof *b->shapedirs * (size_t)N * 3 * (size_t)betas);
    if (!b->faces || !b->shapedirs) { rc = drape_fail(err, DRAPE_ENOMEM, "out of memory"); goto out; }
    for (int64_t i = 0; i < f.numel; i++) {
        if (!(f.data[i] >= 0 && f.data[i] < (float)N)) {
            rc = drape_fail(err, DRAPE_ERANGE, "f: face %lld's vertex %.0f is outside [0, %lld)", (long long)(i / 3),
                            f.data[i], (long long)N);
            goto out;
        }
        b->faces[i] = (int32_t)f.data[i];
    }
    for (int64_t i = 0; i < N * 3; i++) memcpy(b->shapedirs + i * betas, sd.data + i * sd.shape[2], sizeof(float) * (size_t)betas);
    b->N = (int)N;
    b->F = (int)f.shape[0];
    b->S = betas;
    b->S_file = (int)sd.shape[2];
    b->has_posedirs = drape_npz_has(z, len, "posedirs.npy");
    b->v_template = take(&v);
    b->J_regressor = take(&jr);
    b->weights = take(&w);
    rc = DRAPE_OK;
out:
    drape_npy_free(&v), drape_npy_free(&sd), drape_npy_free(&jr), drape_npy_free(&w), drape_npy_free(&kt),
        drape_npy_free(&f);
    if (rc) drape_smpl_free(b);
    return rc;
}

int drape_smpl_read_file(drape_smpl_body *b, const char *path, int betas, drape_error *err)
{
    memset(b, 0, sizeof *b);
    FILE *fp = fopen(path, "rb");
    if (!fp) return drape_fail(err, DRAPE_EIO, "%s: cannot open", path);
    uint8_t *buf = NULL;
    long n = -1;
    if (!fseek(fp, 0, SEEK_END)) n = ftell(fp);
    int rc;
    if (n < 0 || fseek(fp, 0, SEEK_SET)) rc = drape_fail(err, DRAPE_EIO, "cannot read");
    else if ((size_t)n > DRAPE_BODY_MAX_FILE)
        rc = drape_fail(err, DRAPE_ERANGE, "%ld bytes, over the limit of %zu", n, DRAPE_BODY_MAX_FILE);
    else if (!(buf = malloc((size_t)n ? (size_t)n : 1))) rc = drape_fail(err, DRAPE_ENOMEM, "out of memory");
    else if (fread(buf, 1, (size_t)n, fp) != (size_t)n) rc = drape_fail(err, DRAPE_EIO, "cannot read");
    else rc = drape_smpl_read(b, buf, (size_t)n, betas, err);
    fclose(fp);
    free(buf);
    if (rc) drape_error_prefix(err, path);
    return rc;
}

void drape_smpl_free(drape_smpl_body *b)
{
    free(b->v_template);
    free(b->shapedirs);
    free(b->J_regressor);
    free(b->weights);
    free(b->faces);
    memset(b, 0, sizeof *b);
}

/* ---- refitting (docs/body.md) ---- */

/* The nearest of v [N,3] to x (squared distance in double, ties to the lower
 * index, as train/assets.py's nearest). keep >= 0: that index stays unless
 * another is nearer by more than float rounding, so the same body gives the
 * bundle's own rig back though it was computed in float64 before rounding. */
static int nearest(const float *v, int N, const double x[3], int keep)
{
    int best = 0;
    double bd = INFINITY;
    for (int i = 0; i < N; i++) {
        double dx = v[3 * i] - x[0], dy = v[3 * i + 1] - x[1], dz = v[3 * i + 2] - x[2], d = dx * dx + dy * dy + dz * dz;
        if (d < bd) bd = d, best = i;
    }
    if (keep >= 0 && keep < N && best != keep) {
        double dx = v[3 * keep] - x[0], dy = v[3 * keep + 1] - x[1], dz = v[3 * keep + 2] - x[2];
        double dk = dx * dx + dy * dy + dz * dz;
        if (dk <= bd * (1 + 1e-6) + 1e-14) best = keep;
    }
    return best;
}

/* J [24,3] = J_regressor·v in double */
static void joints(double J[DRAPE_JOINTS * 3], const float *Jr, const float *v, int N)
{
    for (int j = 0; j < DRAPE_JOINTS; j++)
        for (int c = 0; c < 3; c++) {
            double s = 0;
            for (int i = 0; i < N; i++) s += (double)Jr[(size_t)j * N + i] * v[3 * i + c];
            J[3 * j + c] = s;
        }
}

typedef struct {
    const drape_model *m;   /* the bundle: the old body */
    const drape_smpl_body *b; /* the new */
    int vertex_mode;
    float *n_old, *n_new;   /* vertex normals */
    double J_old[DRAPE_JOINTS * 3], J_new[DRAPE_JOINTS * 3];
} refit;

/* where x, nearest to old body vertex nn, goes on the new body */
static void carry(const refit *r, const float *x, int nn, double y[3])
{
    const drape_model *m = r->m;
    for (int c = 0; c < 3; c++) {
        double d = 0;
        if (r->vertex_mode) d = (double)r->b->v_template[3 * nn + c] - m->v_template[3 * nn + c];
        else
            for (int k = 0; k < DRAPE_JOINTS; k++)
                d += (double)m->weights[(size_t)nn * DRAPE_JOINTS + k] * (r->J_new[3 * k + c] - r->J_old[3 * k + c]);
        y[c] = x[c] + d;
    }
}

static double side(const float *v, const float *n, int i, const double x[3])
{
    return (x[0] - v[3 * i]) * n[3 * i] + (x[1] - v[3 * i + 1]) * n[3 * i + 1] + (x[2] - v[3 * i + 2]) * n[3 * i + 2];
}

/* A garment: rest, bones and the rig, into the caller's arrays. */
static void refit_garment(const refit *r, const drape_garment *g, int B, float *rest, int32_t *body_nn, float *bones,
                          int32_t *bone_nn, float *bone_w, double *max_move, int *pushed, int *changed)
{
    const drape_model *m = r->m;
    const drape_smpl_body *b = r->b;
    int keep = r->vertex_mode;
    *max_move = 0, *pushed = 0, *changed = 0;
    for (int v = 0; v < g->V; v++) {
        const float *x = g->rest + 3 * v;
        int n0 = g->body_nn[v];
        double y[3], x0[3] = {x[0], x[1], x[2]};
        carry(r, x, n0, y);
        int nn = nearest(b->v_template, b->N, y, keep ? n0 : -1);
        /* keep the clearance it had, up to DRAPE_BODY_CLEARANCE, along the
         * new body's normal (a vertex inside the old body is left alone) */
        double c_old = side(m->v_template, r->n_old, n0, x0), c_new = side(b->v_template, r->n_new, nn, y);
        double want = c_old < DRAPE_BODY_CLEARANCE ? c_old : DRAPE_BODY_CLEARANCE;
        if (c_old >= 0 && c_new < want) {
            for (int c = 0; c < 3; c++) y[c] += (want - c_new) * r->n_new[3 * nn + c];
            nn = nearest(b->v_template, b->N, y, nn);
            ++*pushed;
        }
        double mv = 0;
        for (int c = 0; c < 3; c++) {
            rest[3 * v + c] = (float)y[c];
            mv += (y[c] - x[c]) * (y[c] - x[c]);
        }
        if (sqrt(mv) > *max_move) *max_move = sqrt(mv);
        body_nn[v] = nn;
        *changed += nn != n0;
    }
    /* bones sit on garment vertices (farthest point sampling over rest,
     * docs/design.md §2.2): such a bone goes where its vertex went; any
     * other is carried as a vertex is, without the clearance */
    for (int k = 0; k < B; k++) {
        const float *p = g->bones + 3 * k;
        int on = -1;
        for (int v = 0; v < g->V && on < 0; v++)
            if (!memcmp(g->rest + 3 * v, p, 3 * sizeof(float))) on = v;
        double y[3];
        if (on >= 0) y[0] = rest[3 * on], y[1] = rest[3 * on + 1], y[2] = rest[3 * on + 2];
        else carry(r, p, g->bone_body_nn[k], y);
        for (int c = 0; c < 3; c++) bones[3 * k + c] = (float)y[c];
        bone_nn[k] = nearest(b->v_template, b->N, y, keep ? g->bone_body_nn[k] : -1);
        memcpy(bone_w + (size_t)k * DRAPE_JOINTS, b->weights + (size_t)bone_nn[k] * DRAPE_JOINTS,
               sizeof(float) * DRAPE_JOINTS);
    }
}

/* garments listed in the config's "untrained" (no network of their own
 * training: nothing to flag) */
static int listed(const json_t *cfg, const char *key, const char *name)
{
    const json_t *a = json_object_get(cfg, key);
    for (size_t i = 0; json_is_array(a) && i < json_array_size(a); i++)
        if (json_is_string(json_array_get(a, i)) && !strcmp(json_string_value(json_array_get(a, i)), name)) return 1;
    return 0;
}

/* the config with "stale_networks" and "body_import" set */
static char *new_config(const drape_model *m, const char *text, const drape_smpl_body *b, const char *source,
                        drape_body_report *rep, drape_error *err)
{
    json_error_t je;
    json_t *o = json_loads(text, JSON_REJECT_DUPLICATES, &je);
    if (!o) { drape_fail(err, DRAPE_EFORMAT, "drape.config is not valid JSON: %s", je.text); return NULL; }
    json_t *stale = json_array();
    for (int g = 0; g < m->cfg.n_garments; g++) {
        const char *name = m->cfg.garments[g];
        rep->g[g].stale = !listed(o, "untrained", name);
        if (rep->g[g].stale) json_array_append_new(stale, json_string(name));
    }
    json_object_set_new(o, "stale_networks", stale);
    const char *base = strrchr(source, '/') ? strrchr(source, '/') + 1 : source;
    json_object_set_new(o, "body_import", json_pack("{s:s,s:i,s:i,s:i,s:s}", "file", base, "vertices", b->N, "faces",
                                                    b->F, "shape_directions_in_file", b->S_file, "refit",
                                                    rep->vertex_mode ? "vertex" : "joints"));
    char *s = json_dumps(o, JSON_COMPACT);
    json_decref(o);
    if (!s) drape_fail(err, DRAPE_ENOMEM, "out of memory");
    return s;
}

static int is_replaced(const char *name, const drape_config *c)
{
    if (!strncmp(name, "body.", 5)) return 1;
    static const char *const rig[] = {"rest", "bones", "bone_joint_w", "body_nn", "bone_body_nn"};
    for (int g = 0; g < c->n_garments; g++) {
        size_t n = strlen(c->garments[g]);
        if (strncmp(name, "garment.", 8) || strncmp(name + 8, c->garments[g], n) || name[8 + n] != '.') continue;
        for (size_t k = 0; k < sizeof rig / sizeof *rig; k++)
            if (!strcmp(name + 9 + n, rig[k])) return 1;
    }
    return 0;
}

int drape_body_import(const char *in, const drape_smpl_body *b, const char *source, const char *out,
                      drape_body_report *rep, drape_error *err)
{
    memset(rep, 0, sizeof *rep);
    drape_model *m = NULL;
    drape_st *st = NULL;
    drape_st_writer *w = NULL;
    char *cfg = NULL;
    refit r = {0};
    float *fit[DRAPE_MAX_GARMENTS] = {0};
    int rc = drape_model_load(&m, in, err);
    if (rc) return rc;
    if ((rc = drape_st_open(&st, in, err))) goto out;
    if (b->S != m->cfg.betas) {
        rc = drape_fail(err, DRAPE_EINVAL, "the body was read with %d shape directions, the bundle has %d betas", b->S,
                        m->cfg.betas);
        goto out;
    }
    r.m = m;
    r.b = b;
    r.vertex_mode = b->N == m->Nb && b->F == m->Fb && !memcmp(b->faces, m->body_faces, sizeof(int32_t) * 3 * (size_t)b->F);
    rep->vertex_mode = r.vertex_mode;
    rep->n_garments = m->cfg.n_garments;
    r.n_old = malloc(sizeof(float) * 3 * (size_t)m->Nb);
    r.n_new = malloc(sizeof(float) * 3 * (size_t)b->N);
    w = drape_st_writer_new();
    if (!r.n_old || !r.n_new || !w) { rc = drape_fail(err, DRAPE_ENOMEM, "out of memory"); goto out; }
    drape_mesh_normals(r.n_old, m->v_template, m->Nb, m->body_faces, m->Fb);
    drape_mesh_normals(r.n_new, b->v_template, b->N, b->faces, b->F);
    joints(r.J_old, m->J_regressor, m->v_template, m->Nb);
    joints(r.J_new, b->J_regressor, b->v_template, b->N);
    if (!(cfg = new_config(m, drape_st_meta(st, "drape.config"), b, source, rep, err))) { rc = err->code; goto out; }
    /* metadata: every key as it was, the config updated */
    for (int i = 0; i < drape_st_meta_count(st); i++) {
        const char *k = drape_st_meta_key(st, i);
        if ((rc = drape_st_writer_meta(w, k, strcmp(k, "drape.config") ? drape_st_meta(st, k) : cfg))) goto nomem;
    }
    /* every garment refitted: per garment one block, rest [V,3] | body_nn [V]
     * | bones [B,3] | bone_body_nn [B] | bone_joint_w [B,24] */
    int B = m->cfg.bones;
    for (int gi = 0; gi < m->cfg.n_garments; gi++) {
        const drape_garment *g = &m->garments[gi];
        size_t V = (size_t)g->V;
        float *rest = fit[gi] = malloc(sizeof(float) * (4 * V + (size_t)B * (4 + DRAPE_JOINTS)));
        if (!rest) goto nomem;
        float *bones = rest + 4 * V;
        refit_garment(&r, g, B, rest, (int32_t *)(rest + 3 * V), bones, (int32_t *)(bones + 3 * (size_t)B),
                      bones + 4 * (size_t)B, &rep->g[gi].max_move, &rep->g[gi].pushed, &rep->g[gi].nn_changed);
    }
    /* tensors in the bundle's order; the replaced ones where they were */
    for (int i = 0; i < drape_st_count(st); i++) {
        const drape_tensor *t = drape_st_at(st, i);
        if (!is_replaced(t->name, &m->cfg)) {
            if ((rc = drape_st_writer_add(w, t->name, t->dtype, t->ndim, t->shape, t->data))) goto nomem;
            continue;
        }
        const char *n = t->name;
        int64_t N = b->N;
#define ADD(dt, nd, data, ...) rc = drape_st_writer_add(w, n, dt, nd, (const int64_t[]){__VA_ARGS__}, data)
        if (!strcmp(n, "body.v_template")) ADD(DRAPE_DT_F32, 2, b->v_template, N, 3);
        else if (!strcmp(n, "body.shapedirs")) ADD(DRAPE_DT_F32, 3, b->shapedirs, N, 3, b->S);
        else if (!strcmp(n, "body.J_regressor")) ADD(DRAPE_DT_F32, 2, b->J_regressor, DRAPE_JOINTS, N);
        else if (!strcmp(n, "body.weights")) ADD(DRAPE_DT_F32, 2, b->weights, N, DRAPE_JOINTS);
        else if (!strcmp(n, "body.parents")) ADD(DRAPE_DT_I32, 1, drape_smpl_parents, DRAPE_JOINTS);
        else if (!strcmp(n, "body.faces")) ADD(DRAPE_DT_I32, 2, b->faces, b->F, 3);
        else if (!strncmp(n, "body.", 5)) rc = drape_st_writer_add(w, n, t->dtype, t->ndim, t->shape, t->data);
        else {
            /* a garment's rig tensor, from its refit */
            const char *gname = n + 8;
            int gi = 0;
            for (int g = 0; g < m->cfg.n_garments; g++) {
                size_t l = strlen(m->cfg.garments[g]);
                if (!strncmp(gname, m->cfg.garments[g], l) && gname[l] == '.') gi = g;
            }
            const drape_garment *g = &m->garments[gi];
            const char *what = gname + strlen(g->name) + 1;
            size_t V = (size_t)g->V;
            float *rest = fit[gi], *bones = rest + 4 * V, *bone_w = bones + 4 * (size_t)B;
            int32_t *body_nn = (int32_t *)(rest + 3 * V), *bone_nn = (int32_t *)(bones + 3 * (size_t)B);
            if (!strcmp(what, "rest")) ADD(DRAPE_DT_F32, 2, rest, g->V, 3);
            else if (!strcmp(what, "body_nn")) ADD(DRAPE_DT_I32, 1, body_nn, g->V);
            else if (!strcmp(what, "bones")) ADD(DRAPE_DT_F32, 2, bones, B, 3);
            else if (!strcmp(what, "bone_body_nn")) ADD(DRAPE_DT_I32, 1, bone_nn, B);
            else ADD(DRAPE_DT_F32, 2, bone_w, B, DRAPE_JOINTS);
        }
#undef ADD
        if (rc) goto nomem;
    }
    /* the writer renames a whole file over out: a failed write leaves
     * whatever was there (the input itself, when out is in) as it was */
    rc = drape_st_writer_save(w, out, err);
    goto out;
nomem:
    rc = drape_fail(err, DRAPE_ENOMEM, "out of memory");
out:
    for (int gi = 0; gi < DRAPE_MAX_GARMENTS; gi++) free(fit[gi]);
    free(cfg);
    free(r.n_old);
    free(r.n_new);
    drape_st_writer_free(w);
    drape_st_free(st);
    drape_model_free(m);
    return rc;
}
