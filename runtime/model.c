#include "model.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/mesh.h"
#include "safetensors.h"
#include "uvmap.h"

/* ---- config ---- */

static int cfg_int(const json_t *o, const char *key, int lo, int hi, int *out, drape_error *err)
{
    json_t *v = json_object_get(o, key);
    if (!v) return drape_fail(err, DRAPE_ENOTFOUND, "drape.config: missing key '%s'", key);
    if (!json_is_integer(v)) return drape_fail(err, DRAPE_EFORMAT, "drape.config: '%s' is not an integer", key);
    json_int_t x = json_integer_value(v);
    if (x < lo || x > hi)
        return drape_fail(err, DRAPE_ERANGE, "drape.config: '%s' = %lld is outside [%d, %d]", key, (long long)x, lo, hi);
    *out = (int)x;
    return DRAPE_OK;
}

static int cfg_int_array(const json_t *o, const char *key, int min_n, int max_n, int lo, int hi, int *out,
                         int *n, drape_error *err)
{
    json_t *v = json_object_get(o, key);
    if (!v) return drape_fail(err, DRAPE_ENOTFOUND, "drape.config: missing key '%s'", key);
    if (!json_is_array(v) || (int)json_array_size(v) < min_n || (int)json_array_size(v) > max_n)
        return drape_fail(err, DRAPE_EFORMAT, "drape.config: '%s' must be an array of %d to %d integers", key, min_n, max_n);
    for (size_t i = 0; i < json_array_size(v); i++) {
        json_t *e = json_array_get(v, i);
        if (!json_is_integer(e) || json_integer_value(e) < lo || json_integer_value(e) > hi)
            return drape_fail(err, DRAPE_ERANGE, "drape.config: '%s'[%zu] must be an integer in [%d, %d]", key, i, lo, hi);
        out[i] = (int)json_integer_value(e);
    }
    *n = (int)json_array_size(v);
    return DRAPE_OK;
}

int drape_model_name_ok(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n >= DRAPE_NAME_MAX) return 0;
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= '0' && s[i] <= '9') ||
              s[i] == '_' || s[i] == '-'))
            return 0;
    return 1;
}

/* the index of the config's garment NAME, or -1 */
static int config_garment(const drape_config *c, const char *name)
{
    for (int i = 0; i < c->n_garments; i++)
        if (!strcmp(c->garments[i], name)) return i;
    return -1;
}

/* "refine": {"<garment>": {"iters": N, "stiffness": k, "margin": m[, "rho": r]}, ...}
 * (docs/conventions.md, "The refine step"); absent: no garment is refined;
 * rho absent or 0: plain sweeps */
static int config_refine(drape_config *c, const json_t *r, drape_error *err)
{
    if (!r) return DRAPE_OK;
    if (!json_is_object(r)) return drape_fail(err, DRAPE_EFORMAT, "drape.config: 'refine' must be an object of garments");
    const char *name;
    json_t *v;
    json_object_foreach((json_t *)r, name, v) {
        int g = config_garment(c, name);
        if (g < 0) return drape_fail(err, DRAPE_ENOTFOUND, "drape.config: refine: '%.64s' is not a garment of the model", name);
        json_t *it = json_object_get(v, "iters"), *k = json_object_get(v, "stiffness"), *mg = json_object_get(v, "margin");
        json_t *rh = json_object_get(v, "rho");
        if (!json_is_object(v) || json_object_size(v) != 3u + (rh != NULL) || !json_is_integer(it) ||
            !json_is_number(k) || !json_is_number(mg) || (rh && !json_is_number(rh)))
            return drape_fail(err, DRAPE_EFORMAT, "drape.config: refine.%s must be {\"iters\": integer, "
                                                  "\"stiffness\": number, \"margin\": number[, \"rho\": number]}", name);
        double kv = json_number_value(k), mv = json_number_value(mg), rv = rh ? json_number_value(rh) : 0;
        if (json_integer_value(it) < 0 || json_integer_value(it) > 100 || !(kv > 0 && kv <= 100) || !(mv >= 0 && mv <= 0.05) ||
            !(rv >= 0 && rv < 1))
            return drape_fail(err, DRAPE_ERANGE, "drape.config: refine.%s: iters in [0, 100], stiffness in (0, 100], "
                                                 "margin in [0, 0.05] m, rho in [0, 1)", name);
        c->refine[g].iters = (int)json_integer_value(it);
        c->refine[g].stiffness = (float)kv;
        c->refine[g].margin = (float)mv;
        c->refine[g].rho = rv;
    }
    return DRAPE_OK;
}

/* "teacher": {"args": "FLAGS", "garments": {"<garment>": "FLAGS", ...}, ...}:
 * the `drape sim garment` flags the bundle was trained against
 * (docs/design.md §3.3); a garment's own after the common ones, so they win.
 * Keys other than these are train/'s; its "prelude": {"<garment>":
 * "KIND:SEED:SECONDS"} is kept to be named (a string that is not short
 * printable text is left alone, as before).
 * Only the strings are checked here; `drape sim garment` parses the flags. */
static int teacher_flags(const json_t *v, const char *what, drape_error *err)
{
    const char *s = json_string_value(v);
    if (!s) return drape_fail(err, DRAPE_EFORMAT, "drape.config: teacher.%s must be a string of flags", what);
    for (const char *p = s; *p; p++)
        if ((unsigned char)*p < 0x20 || (unsigned char)*p > 0x7e)
            return drape_fail(err, DRAPE_EFORMAT, "drape.config: teacher.%s: only printable ASCII", what);
    if (strlen(s) >= DRAPE_TEACHER_MAX / 2)
        return drape_fail(err, DRAPE_ERANGE, "drape.config: teacher.%s: longer than %d characters", what,
                          DRAPE_TEACHER_MAX / 2 - 1);
    return DRAPE_OK;
}

static int config_teacher(drape_config *c, const json_t *t, drape_error *err)
{
    if (!t) return DRAPE_OK;
    if (!json_is_object(t)) return drape_fail(err, DRAPE_EFORMAT, "drape.config: 'teacher' must be an object");
    const json_t *args = json_object_get(t, "args"), *per = json_object_get(t, "garments");
    int rc;
    if (args && (rc = teacher_flags(args, "args", err))) return rc;
    if (per && !json_is_object(per))
        return drape_fail(err, DRAPE_EFORMAT, "drape.config: teacher.garments must be an object of garments");
    const char *name;
    json_t *v;
    json_object_foreach((json_t *)per, name, v) {
        int g = config_garment(c, name);
        if (g < 0)
            return drape_fail(err, DRAPE_ENOTFOUND, "drape.config: teacher.garments: '%.64s' is not a garment of the model",
                              name);
        char what[DRAPE_NAME_MAX + 16];
        snprintf(what, sizeof what, "garments.%s", name);
        if ((rc = teacher_flags(v, what, err))) return rc;
    }
    const json_t *pre = json_object_get(t, "prelude");
    for (int g = 0; g < c->n_garments; g++) {
        const char *p = json_string_value(json_object_get(pre, c->garments[g]));
        int ok = p && strlen(p) < sizeof c->teacher_prelude[g];
        for (const char *q = p; ok && *q; q++) ok = (unsigned char)*q >= 0x20 && (unsigned char)*q <= 0x7e;
        if (ok) snprintf(c->teacher_prelude[g], sizeof c->teacher_prelude[g], "%s", p);
    }
    for (int g = 0; g < c->n_garments; g++) {
        const char *own = json_string_value(json_object_get(per, c->garments[g]));
        snprintf(c->teacher[g], DRAPE_TEACHER_MAX, "%s%s%s", args ? json_string_value(args) : "",
                 args && own ? " " : "", own ? own : "");
    }
    c->has_teacher = 1;
    return DRAPE_OK;
}

/* "physics": {"<garment>": {"pull": K}}: the served physics settings a
 * garment departs from (docs/design.md §3.3), chosen against its teacher:
 * the pull towards the skinned garment, K in [0, 1e6] 1/s² (sim/garment.h
 * drape_garment_sim_served) */
static int config_physics(drape_config *c, const json_t *o, drape_error *err)
{
    if (!o) return DRAPE_OK;
    if (!json_is_object(o)) return drape_fail(err, DRAPE_EFORMAT, "drape.config: 'physics' must be an object of garments");
    const char *name;
    json_t *v;
    json_object_foreach((json_t *)o, name, v) {
        int g = config_garment(c, name);
        if (g < 0) return drape_fail(err, DRAPE_ENOTFOUND, "drape.config: physics: '%.64s' is not a garment of the model", name);
        json_t *k = json_object_get(v, "pull");
        if (!json_is_object(v) || json_object_size(v) != 1 || !json_is_number(k))
            return drape_fail(err, DRAPE_EFORMAT, "drape.config: physics.%s must be {\"pull\": number}", name);
        double kv = json_number_value(k);
        if (!(kv >= 0 && kv <= 1e6))
            return drape_fail(err, DRAPE_ERANGE, "drape.config: physics.%s: pull %g is not in [0, 1e6] 1/s^2", name, kv);
        c->physics[g].has_pull = 1;
        c->physics[g].pull = kv;
    }
    return DRAPE_OK;
}

/* A set of garments by name, e.g. "stale_networks": ["skirt", ...]: flag[g]
 * is 1 for each one listed; absent: none. */
static int config_garment_set(const drape_config *c, const json_t *o, const char *key, int *flag, drape_error *err)
{
    const json_t *a = json_object_get(o, key);
    if (!a) return DRAPE_OK;
    if (!json_is_array(a)) return drape_fail(err, DRAPE_EFORMAT, "drape.config: '%s' must be an array of garment names", key);
    for (size_t i = 0; i < json_array_size(a); i++) {
        const char *s = json_string_value(json_array_get(a, i));
        int g = s ? config_garment(c, s) : -1;
        if (g < 0)
            return drape_fail(err, DRAPE_ENOTFOUND, "drape.config: %s[%zu] is not a garment of the model", key, i);
        flag[g] = 1;
    }
    return DRAPE_OK;
}

static int config_parse(drape_config *c, const char *text, drape_error *err)
{
    if (!text) return drape_fail(err, DRAPE_ENOTFOUND, "__metadata__ has no 'drape.config'");
    json_error_t je;
    json_t *o = json_loads(text, JSON_REJECT_DUPLICATES, &je);
    if (!o) return drape_fail(err, DRAPE_EFORMAT, "drape.config is not valid JSON: %s", je.text);
    int rc, n;
    memset(c, 0, sizeof *c);
    if (!json_is_object(o)) { rc = drape_fail(err, DRAPE_EFORMAT, "drape.config is not a JSON object"); goto out; }
    if ((rc = cfg_int(o, "format_version", 1, 1, &c->format_version, err)) ||
        (rc = cfg_int(o, "fps", 1, 1000, &c->fps, err)) ||
        (rc = cfg_int(o, "betas", 1, DRAPE_MAX_BETAS, &c->betas, err)) ||
        (rc = cfg_int(o, "bones", 1, 4096, &c->bones, err)) ||
        (rc = cfg_int(o, "skin_k", 1, 64, &c->skin_k, err)) ||
        (rc = cfg_int(o, "hidden", 1, 8192, &c->hidden, err)) ||
        (rc = cfg_int(o, "z_dim", 1, 4096, &c->z_dim, err)) ||
        (rc = cfg_int(o, "pose_dim", 1, 1024, &c->pose_dim, err)) ||
        (rc = cfg_int(o, "feat_dim", 1, 1024, &c->feat_dim, err)) ||
        (rc = cfg_int(o, "latent", 1, 4096, &c->latent, err)) ||
        (rc = cfg_int(o, "blocks", 0, 64, &c->blocks, err)) ||
        (rc = cfg_int(o, "knn", 1, 64, &c->knn, err)))
        goto out;
    if (c->skin_k > c->bones) {
        rc = drape_fail(err, DRAPE_ERANGE, "drape.config: skin_k %d exceeds bones %d", c->skin_k, c->bones);
        goto out;
    }
    int uv[2];
    if ((rc = cfg_int_array(o, "uv_size", 2, 2, 4, 4096, uv, &n, err))) goto out;
    c->uv_h = uv[0];
    c->uv_w = uv[1];
    if ((rc = cfg_int_array(o, "conv", 1, DRAPE_MAX_CONV, 1, 4096, c->conv, &c->n_conv, err))) goto out;
    if (c->conv[c->n_conv - 1] != 3) {
        rc = drape_fail(err, DRAPE_ERANGE, "drape.config: the last conv width must be 3 (a displacement), not %d",
                        c->conv[c->n_conv - 1]);
        goto out;
    }
    c->beta_min = -3;
    c->beta_max = 3;
    json_t *br = json_object_get(o, "beta_range");
    if (br) {
        if (!json_is_array(br) || json_array_size(br) != 2 || !json_is_number(json_array_get(br, 0)) ||
            !json_is_number(json_array_get(br, 1)) ||
            json_number_value(json_array_get(br, 0)) >= json_number_value(json_array_get(br, 1))) {
            rc = drape_fail(err, DRAPE_EFORMAT, "drape.config: 'beta_range' must be [lo, hi] with lo < hi");
            goto out;
        }
        c->beta_min = (float)json_number_value(json_array_get(br, 0));
        c->beta_max = (float)json_number_value(json_array_get(br, 1));
    }
    json_t *g = json_object_get(o, "garments");
    if (!json_is_array(g) || json_array_size(g) < 1 || json_array_size(g) > DRAPE_MAX_GARMENTS) {
        rc = drape_fail(err, DRAPE_EFORMAT, "drape.config: 'garments' must list 1 to %d names", DRAPE_MAX_GARMENTS);
        goto out;
    }
    for (size_t i = 0; i < json_array_size(g); i++) {
        const char *s = json_string_value(json_array_get(g, i));
        if (!s || !drape_model_name_ok(s)) {
            rc = drape_fail(err, DRAPE_EFORMAT, "drape.config: garments[%zu] must be a name of 1-%d characters [A-Za-z0-9_-]",
                            i, DRAPE_NAME_MAX - 1);
            goto out;
        }
        for (size_t k = 0; k < i; k++)
            if (!strcmp(c->garments[k], s)) {
                rc = drape_fail(err, DRAPE_EFORMAT, "drape.config: garment '%s' listed twice", s);
                goto out;
            }
        snprintf(c->garments[i], DRAPE_NAME_MAX, "%s", s);
    }
    c->n_garments = (int)json_array_size(g);
    json_t *up = json_object_get(o, "up"), *units = json_object_get(o, "units");
    if ((up && (!json_is_string(up) || strcmp(json_string_value(up), "y"))) ||
        (units && (!json_is_string(units) || strcmp(json_string_value(units), "m")))) {
        rc = drape_fail(err, DRAPE_EFORMAT, "drape.config: only \"up\": \"y\" and \"units\": \"m\" are supported");
        goto out;
    }
    /* module A's pose history: docs/design.md §2.4's three frames unless the bundle
     * says otherwise (docs/conventions.md, "Pose history") */
    c->n_hist = 3;
    c->hist[0] = 2, c->hist[1] = 1, c->hist[2] = 0;
    if (json_object_get(o, "history")) {
        if ((rc = cfg_int_array(o, "history", 2, DRAPE_MAX_HISTORY, 0, DRAPE_MAX_HISTORY_SPAN - 1, c->hist,
                                &c->n_hist, err)))
            goto out;
        for (int i = 0; i < c->n_hist; i++)
            if ((i + 1 < c->n_hist && c->hist[i] <= c->hist[i + 1]) || (i + 1 == c->n_hist && c->hist[i] != 0)) {
                rc = drape_fail(err, DRAPE_EFORMAT, "drape.config: 'history' must be offsets back from t, "
                                                    "decreasing, the last 0 (for example [16, 8, 4, 2, 1, 0])");
                goto out;
            }
    }
    if ((rc = config_refine(c, json_object_get(o, "refine"), err))) goto out;
    if ((rc = config_teacher(c, json_object_get(o, "teacher"), err))) goto out;
    if ((rc = config_physics(c, json_object_get(o, "physics"), err))) goto out;
    if ((rc = config_garment_set(c, o, "stale_networks", c->stale_net, err))) goto out;
    if ((rc = config_garment_set(c, o, "untrained", c->untrained, err))) goto out;
    rc = DRAPE_OK;
out:
    json_decref(o);
    return rc;
}

/* ---- the table of expected tensors ---- */

typedef struct {
    char name[128];
    int f32; /* 1: float (F32/F16 accepted), 0: I32 */
    int ndim;
    int64_t shape[4];
    const void **view;
    const drape_tensor *t;
    size_t off;
} want;

typedef struct {
    want *w;
    int n, cap;
} want_list;

static int want_add(want_list *l, const void **view, int f32, int ndim, const int64_t *shape, const char *fmt, ...)
    __attribute__((format(printf, 6, 7)));
static int want_add(want_list *l, const void **view, int f32, int ndim, const int64_t *shape, const char *fmt, ...)
{
    if (l->n == l->cap) {
        int cap = l->cap ? 2 * l->cap : 128;
        want *nw = realloc(l->w, (size_t)cap * sizeof *nw);
        if (!nw) return DRAPE_ENOMEM;
        l->w = nw;
        l->cap = cap;
    }
    want *w = &l->w[l->n++];
    memset(w, 0, sizeof *w);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(w->name, sizeof w->name, fmt, ap);
    va_end(ap);
    w->f32 = f32;
    w->ndim = ndim;
    memcpy(w->shape, shape, (size_t)ndim * sizeof *shape);
    w->view = view;
    return DRAPE_OK;
}

static int add_linear(want_list *l, drape_linear *lin, int in, int out, const char *prefix)
{
    lin->in = in;
    lin->out = out;
    int rc = want_add(l, (const void **)&lin->w, 1, 2, (const int64_t[]){out, in}, "%s.weight", prefix);
    return rc ? rc : want_add(l, (const void **)&lin->b, 1, 1, (const int64_t[]){out}, "%s.bias", prefix);
}

static int add_mlp_ln(want_list *l, drape_mlp_ln *m, int in, int d, const char *prefix)
{
    char p[128];
    int rc;
    snprintf(p, sizeof p, "%s.0", prefix);
    if ((rc = add_linear(l, &m->l0, in, d, p))) return rc;
    snprintf(p, sizeof p, "%s.1", prefix);
    if ((rc = add_linear(l, &m->l1, d, d, p))) return rc;
    if ((rc = want_add(l, (const void **)&m->ln_w, 1, 1, (const int64_t[]){d}, "%s.norm.weight", prefix))) return rc;
    return want_add(l, (const void **)&m->ln_b, 1, 1, (const int64_t[]){d}, "%s.norm.bias", prefix);
}

/* Optional: the range of Bone-Net's raw inputs in training, `in_min` and
 * `in_max` [X] (docs/design.md §3.3), both or neither; inputs outside it are
 * clamped to it. Without them nothing is clamped (in_min NULL). */
static int add_in_range(want_list *l, drape_net *n, int64_t X, const drape_st *st, const char *pre)
{
    char lo[160], hi[160];
    snprintf(lo, sizeof lo, "%sbonenet.in_min", pre);
    snprintf(hi, sizeof hi, "%sbonenet.in_max", pre);
    if (!drape_st_find(st, lo) && !drape_st_find(st, hi)) return DRAPE_OK;
    int rc = want_add(l, (const void **)&n->in_min, 1, 1, (const int64_t[]){X}, "%s", lo);
    return rc ? rc : want_add(l, (const void **)&n->in_max, 1, 1, (const int64_t[]){X}, "%s", hi);
}

/* The network's tensors, named `pre` + docs/design.md §3's names: "" for the shared
 * network, "garment.<g>.net." for a garment's own. An own network has the
 * shared one's shapes (its Δw hidden width is the shared one's too). */
static int build_net_wants(want_list *l, drape_net *n, const drape_config *c, const drape_st *st, const char *pre)
{
    int B = c->bones, H = c->hidden, dh = c->latent, rc;
    char p[160];
#define NAME(...) (snprintf(p, sizeof p, "%s", pre), snprintf(p + strlen(p), sizeof p - strlen(p), __VA_ARGS__), p)
    /* module A */
    int64_t X = drape_bonenet_in(c);
    if ((rc = want_add(l, (const void **)&n->in_mean, 1, 1, (const int64_t[]){X}, "%sbonenet.in_mean", pre)) ||
        (rc = want_add(l, (const void **)&n->in_std, 1, 1, (const int64_t[]){X}, "%sbonenet.in_std", pre)) ||
        (rc = add_in_range(l, n, X, st, pre)) ||
        (rc = add_linear(l, &n->bonenet[0], X, H, NAME("bonenet.0"))) ||
        (rc = add_linear(l, &n->bonenet[1], H, H, NAME("bonenet.1"))) ||
        (rc = add_linear(l, &n->bonenet[2], H, H, NAME("bonenet.2"))) ||
        (rc = add_linear(l, &n->bonenet[3], H, 9 * B, NAME("bonenet.3"))) ||
        (rc = add_linear(l, &n->pose_embed, H, c->pose_dim, NAME("pose_embed"))) ||
        (rc = add_linear(l, &n->modulator[0], c->z_dim, H, NAME("modulator.0"))) ||
        (rc = add_linear(l, &n->modulator[1], H, H, NAME("modulator.1"))) ||
        (rc = add_linear(l, &n->modulator[2], H, 6 * H, NAME("modulator.2"))))
        return rc;
    int cin = 3 + c->feat_dim + c->pose_dim + 1;
    for (int i = 0; i < c->n_conv; i++) {
        drape_conv *cv = &n->conv[i];
        cv->in = cin;
        cv->out = c->conv[i];
        if ((rc = want_add(l, (const void **)&cv->w, 1, 4, (const int64_t[]){cv->out, cin, 3, 3}, "%sconv.%d.weight", pre,
                           i)) ||
            (rc = want_add(l, (const void **)&cv->b, 1, 1, (const int64_t[]){cv->out}, "%sconv.%d.bias", pre, i)))
            return rc;
        cin = cv->out;
    }
    /* module B */
    n->edge_mlp = calloc((size_t)c->blocks + 1, sizeof *n->edge_mlp);
    n->node_mlp = calloc((size_t)c->blocks + 1, sizeof *n->node_mlp);
    if (!n->edge_mlp || !n->node_mlp) return DRAPE_ENOMEM;
    if ((rc = add_mlp_ln(l, &n->node_embed, 8, dh, NAME("encoder.node_embed"))) ||
        (rc = add_mlp_ln(l, &n->edge_embed, 7, dh, NAME("encoder.edge_embed"))))
        return rc;
    for (int i = 0; i < c->blocks; i++) {
        if ((rc = add_mlp_ln(l, &n->edge_mlp[i], 3 * dh, dh, NAME("encoder.blocks.%d.edge_mlp", i)))) return rc;
        if ((rc = add_mlp_ln(l, &n->node_mlp[i], 2 * dh, dh, NAME("encoder.blocks.%d.node_mlp", i)))) return rc;
    }
    const drape_tensor *dw0 = drape_st_find(st, "heads.dw.0.weight");
    int dw_hidden = dw0 && dw0->ndim == 2 && dw0->shape[0] >= 1 && dw0->shape[0] <= 4096 ? (int)dw0->shape[0] : 64;
    if ((rc = add_linear(l, &n->head_z[0], dh, dh, NAME("heads.z.0"))) ||
        (rc = add_linear(l, &n->head_z[1], dh, c->z_dim, NAME("heads.z.1"))) ||
        (rc = add_linear(l, &n->head_dw[0], dh, dw_hidden, NAME("heads.dw.0"))) ||
        (rc = add_linear(l, &n->head_dw[1], dw_hidden, B, NAME("heads.dw.1"))) ||
        (rc = add_linear(l, &n->head_feat, dh, c->feat_dim, NAME("heads.feat"))))
        return rc;
#undef NAME
    return DRAPE_OK;
}

/* Whether the bundle has a tensor whose name starts with p. */
static int has_prefix(const drape_st *st, const char *p)
{
    size_t n = strlen(p);
    for (int i = 0; i < drape_st_count(st); i++)
        if (!strncmp(drape_st_at(st, i)->name, p, n)) return 1;
    return 0;
}

/* Garment sizes come from its own tensors: read them first. */
static int garment_sizes(const drape_st *st, const char *g, int *V, int *F, int *Nuv, drape_error *err)
{
    char name[128];
    const char *which[3] = {"rest", "faces", "uv"};
    int *dst[3] = {V, F, Nuv};
    for (int i = 0; i < 3; i++) {
        snprintf(name, sizeof name, "garment.%s.%s", g, which[i]);
        const drape_tensor *t = drape_st_find(st, name);
        if (!t) return drape_fail(err, DRAPE_ENOTFOUND, "missing tensor '%s'", name);
        if (t->ndim != 2 || t->shape[0] < 1 || t->shape[0] > (1 << 22))
            return drape_fail(err, DRAPE_ESHAPE, "tensor '%s': expected [N, %d] with 1 <= N <= %d", name,
                              i == 2 ? 2 : 3, 1 << 22);
        *dst[i] = (int)t->shape[0];
    }
    return DRAPE_OK;
}

static int build_wants(want_list *l, drape_model *m, const drape_st *st, drape_error *err)
{
    const drape_config *c = &m->cfg;
    int B = c->bones, S = c->betas, rc;
    const drape_tensor *vt = drape_st_find(st, "body.v_template"), *bf = drape_st_find(st, "body.faces");
    if (!vt) return drape_fail(err, DRAPE_ENOTFOUND, "missing tensor 'body.v_template'");
    if (!bf) return drape_fail(err, DRAPE_ENOTFOUND, "missing tensor 'body.faces'");
    if (vt->ndim != 2 || vt->shape[0] < 1 || vt->shape[0] > (1 << 22))
        return drape_fail(err, DRAPE_ESHAPE, "tensor 'body.v_template': expected [Nb, 3], 1 <= Nb <= %d", 1 << 22);
    if (bf->ndim != 2 || bf->shape[0] < 1 || bf->shape[0] > (1 << 23))
        return drape_fail(err, DRAPE_ESHAPE, "tensor 'body.faces': expected [Fb, 3], 1 <= Fb <= %d", 1 << 23);
    m->Nb = (int)vt->shape[0];
    m->Fb = (int)bf->shape[0];
    int Nb = m->Nb;
    if ((rc = want_add(l, (const void **)&m->v_template, 1, 2, (const int64_t[]){Nb, 3}, "body.v_template")) ||
        (rc = want_add(l, (const void **)&m->shapedirs, 1, 3, (const int64_t[]){Nb, 3, S}, "body.shapedirs")) ||
        (rc = want_add(l, (const void **)&m->J_regressor, 1, 2, (const int64_t[]){DRAPE_JOINTS, Nb}, "body.J_regressor")) ||
        (rc = want_add(l, (const void **)&m->weights, 1, 2, (const int64_t[]){Nb, DRAPE_JOINTS}, "body.weights")) ||
        (rc = want_add(l, NULL, 0, 1, (const int64_t[]){DRAPE_JOINTS}, "body.parents")) ||
        (rc = want_add(l, (const void **)&m->body_faces, 0, 2, (const int64_t[]){m->Fb, 3}, "body.faces")))
        return rc;
    for (int gi = 0; gi < c->n_garments; gi++) {
        drape_garment *g = &m->garments[gi];
        const char *n = c->garments[gi];
        memcpy(g->name, n, strlen(n) + 1); /* validated shorter than DRAPE_NAME_MAX */
        if ((rc = garment_sizes(st, n, &g->V, &g->F, &g->Nuv, err))) return rc;
        int V = g->V, k = c->skin_k;
        if ((rc = want_add(l, (const void **)&g->rest, 1, 2, (const int64_t[]){V, 3}, "garment.%s.rest", n)) ||
            (rc = want_add(l, (const void **)&g->faces, 0, 2, (const int64_t[]){g->F, 3}, "garment.%s.faces", n)) ||
            (rc = want_add(l, (const void **)&g->uv, 1, 2, (const int64_t[]){g->Nuv, 2}, "garment.%s.uv", n)) ||
            (rc = want_add(l, (const void **)&g->uv_faces, 0, 2, (const int64_t[]){g->F, 3}, "garment.%s.uv_faces", n)) ||
            (rc = want_add(l, (const void **)&g->bones, 1, 2, (const int64_t[]){B, 3}, "garment.%s.bones", n)) ||
            (rc = want_add(l, (const void **)&g->bone_joint_w, 1, 2, (const int64_t[]){B, DRAPE_JOINTS}, "garment.%s.bone_joint_w", n)) ||
            (rc = want_add(l, (const void **)&g->skin_idx, 0, 2, (const int64_t[]){V, k}, "garment.%s.skin_idx", n)) ||
            (rc = want_add(l, (const void **)&g->skin_w0, 1, 2, (const int64_t[]){V, k}, "garment.%s.skin_w0", n)) ||
            (rc = want_add(l, (const void **)&g->body_nn, 0, 1, (const int64_t[]){V}, "garment.%s.body_nn", n)) ||
            (rc = want_add(l, (const void **)&g->bone_body_nn, 0, 1, (const int64_t[]){B}, "garment.%s.bone_body_nn", n)))
            return rc;
        /* optional: the vertices `drape sim garment` attaches (train/assets.py) */
        char an[128];
        snprintf(an, sizeof an, "garment.%s.attach", n);
        const drape_tensor *at = drape_st_find(st, an);
        if (at) {
            if (at->ndim != 1 || at->shape[0] < 1 || at->shape[0] > V)
                return drape_fail(err, DRAPE_ESHAPE, "tensor '%s': expected [A] with 1 <= A <= %d (the vertices)", an, V);
            g->n_attach = (int)at->shape[0];
            if ((rc = want_add(l, (const void **)&g->attach, 0, 1, (const int64_t[]){g->n_attach}, "%s", an))) return rc;
        }
    }
    if ((rc = build_net_wants(l, &m->net, c, st, ""))) return rc;
    /* garments with a network of their own: all of its tensors or none */
    for (int gi = 0; gi < c->n_garments; gi++) {
        char p[128];
        snprintf(p, sizeof p, "garment.%s.net.", c->garments[gi]);
        if (!has_prefix(st, p)) continue;
        drape_model *v = calloc(1, sizeof *v);
        if (!v) return DRAPE_ENOMEM;
        v->is_view = 1; /* only its network until the load copies the model in (drape_model_free on failure) */
        m->own[gi] = v;
        m->n_own++;
        if ((rc = build_net_wants(l, &v->net, c, st, p))) return rc;
    }
    return DRAPE_OK;
}

static void shape_str(char *buf, size_t n, const int64_t *s, int nd)
{
    size_t o = 0;
    o += (size_t)snprintf(buf + o, n - o, "[");
    for (int i = 0; i < nd && o < n; i++) o += (size_t)snprintf(buf + o, n - o, i ? ", %lld" : "%lld", (long long)s[i]);
    if (o < n) snprintf(buf + o, n - o, "]");
}

/* ---- value checks on the copied data ---- */

static int check_index(const int32_t *x, int64_t n, int hi, const char *name, drape_error *err)
{
    for (int64_t i = 0; i < n; i++)
        if (x[i] < 0 || x[i] >= hi)
            return drape_fail(err, DRAPE_ERANGE, "tensor '%s': element %lld = %d is outside [0, %d)", name, (long long)i,
                              x[i], hi);
    return DRAPE_OK;
}

/* Bone-Net's input scale divides: every element > 0; its range, when there
 * is one, is not empty (pre: the network's name prefix). */
static int check_in_std(const drape_net *n, const drape_config *c, const char *pre, drape_error *err)
{
    for (int i = 0; i < drape_bonenet_in(c); i++) {
        if (!(n->in_std[i] > 0))
            return drape_fail(err, DRAPE_ERANGE, "tensor '%sbonenet.in_std': element %d must be > 0", pre, i);
        if (n->in_min && !(n->in_min[i] <= n->in_max[i]))
            return drape_fail(err, DRAPE_ERANGE, "tensor '%sbonenet.in_min': element %d = %g exceeds in_max's %g", pre,
                              i, n->in_min[i], n->in_max[i]);
    }
    return DRAPE_OK;
}

static int check_values(const drape_model *m, drape_error *err)
{
    const drape_config *c = &m->cfg;
    int rc;
    if (m->parents[0] != -1) return drape_fail(err, DRAPE_ERANGE, "tensor 'body.parents': joint 0 must have parent -1");
    for (int k = 1; k < DRAPE_JOINTS; k++)
        if (m->parents[k] < 0 || m->parents[k] >= k)
            return drape_fail(err, DRAPE_ERANGE, "tensor 'body.parents': parent of joint %d must be in [0, %d)", k, k);
    if ((rc = check_index(m->body_faces, 3 * (int64_t)m->Fb, m->Nb, "body.faces", err))) return rc;
    if ((rc = check_in_std(&m->net, c, "", err))) return rc;
    for (int gi = 0; gi < c->n_garments; gi++) {
        char pre[DRAPE_NAME_MAX + 16];
        snprintf(pre, sizeof pre, "garment.%s.net.", c->garments[gi]);
        if (m->own[gi] && (rc = check_in_std(&m->own[gi]->net, c, pre, err))) return rc;
    }
    for (int gi = 0; gi < c->n_garments; gi++) {
        const drape_garment *g = &m->garments[gi];
        char name[128];
#define IDX(field, count, hi)                                                     \
    snprintf(name, sizeof name, "garment.%s." #field, g->name);                  \
    if ((rc = check_index(g->field, count, hi, name, err))) return rc;
        IDX(faces, 3 * (int64_t)g->F, g->V)
        IDX(uv_faces, 3 * (int64_t)g->F, g->Nuv)
        IDX(skin_idx, (int64_t)g->V * c->skin_k, c->bones)
        IDX(body_nn, g->V, m->Nb)
        IDX(bone_body_nn, c->bones, m->Nb)
        if (g->n_attach) { IDX(attach, g->n_attach, g->V) }
#undef IDX
        for (int i = 1; i < g->n_attach; i++)
            if (g->attach[i] <= g->attach[i - 1])
                return drape_fail(err, DRAPE_ERANGE, "tensor 'garment.%s.attach': must be strictly ascending (element %d)",
                                  g->name, i);
        for (int i = 0; i < 2 * g->Nuv; i++)
            if (g->uv[i] < 0 || g->uv[i] > 1)
                return drape_fail(err, DRAPE_ERANGE, "tensor 'garment.%s.uv': element %d = %g is outside [0, 1]", g->name,
                                  i, g->uv[i]);
        for (int i = 0; i < g->V * c->skin_k; i++)
            if (g->skin_w0[i] < 0)
                return drape_fail(err, DRAPE_ERANGE, "tensor 'garment.%s.skin_w0': element %d is negative", g->name, i);
    }
    return DRAPE_OK;
}

int drape_model_load(drape_model **out, const char *path, drape_error *err)
{
    *out = NULL;
    drape_st *st = NULL;
    want_list L = {0};
    int rc = drape_st_open(&st, path, err);
    if (rc) return rc;
    drape_model *m = calloc(1, sizeof *m);
    if (!m) { drape_st_free(st); return drape_fail(err, DRAPE_ENOMEM, "out of memory"); }
    if ((rc = config_parse(&m->cfg, drape_st_meta(st, "drape.config"), err))) goto fail;
    if ((rc = build_wants(&L, m, st, err))) {
        if (rc == DRAPE_ENOMEM) drape_fail(err, rc, "out of memory");
        goto fail;
    }
    /* validate presence, dtype and shape; lay out the arena */
    size_t off = 0;
    for (int i = 0; i < L.n; i++) {
        want *w = &L.w[i];
        const drape_tensor *t = drape_st_find(st, w->name);
        if (!t) { rc = drape_fail(err, DRAPE_ENOTFOUND, "missing tensor '%s'", w->name); goto fail; }
        if (w->f32 ? t->dtype == DRAPE_DT_I32 : t->dtype != DRAPE_DT_I32) {
            rc = drape_fail(err, DRAPE_EDTYPE, "tensor '%s': dtype %s, expected %s", w->name, drape_dtype_name(t->dtype),
                            w->f32 ? "F32 or F16" : "I32");
            goto fail;
        }
        int same = t->ndim == w->ndim;
        for (int d = 0; same && d < w->ndim; d++) same = t->shape[d] == w->shape[d];
        if (!same) {
            char want_s[96], got_s[96];
            shape_str(want_s, sizeof want_s, w->shape, w->ndim);
            shape_str(got_s, sizeof got_s, t->shape, t->ndim);
            rc = drape_fail(err, DRAPE_ESHAPE, "tensor '%s': shape %s, expected %s from the config", w->name, got_s, want_s);
            goto fail;
        }
        w->t = t;
        w->off = off;
        off += ((size_t)t->numel * 4 + 63) & ~(size_t)63;
    }
    m->arena_bytes = off;
    m->arena = aligned_alloc(64, off ? off : 64);
    if (!m->arena) { rc = drape_fail(err, DRAPE_ENOMEM, "cannot allocate %zu bytes for the model", off); goto fail; }
    for (int i = 0; i < L.n; i++) {
        want *w = &L.w[i];
        void *dst = m->arena + w->off;
        if (w->f32) drape_st_to_f32(dst, w->t);
        else drape_st_to_i32(dst, w->t);
        if (w->view) *w->view = dst;
        else memcpy(m->parents, dst, sizeof m->parents); /* body.parents */
    }
    m->n_tensors = drape_st_count(st);
    m->n_unused_tensors = m->n_tensors - L.n;
    m->file_bytes = drape_st_data_bytes(st);
    drape_st_free(st);
    st = NULL;
    free(L.w);
    L.w = NULL;
    if ((rc = check_values(m, err))) goto fail;
    /* derived tables */
    rc = drape_mesh_edges(&m->body_edges, &m->n_body_edges, m->body_faces, m->Fb);
    for (int gi = 0; !rc && gi < m->cfg.n_garments; gi++) {
        drape_garment *g = &m->garments[gi];
        rc = drape_mesh_edges(&g->edges, &g->n_edges, g->faces, g->F);
        if (!rc) rc = drape_garment_prepare(g, &m->cfg);
    }
    if (rc) { drape_fail(err, rc, "out of memory building the garment tables"); goto fail; }
    /* the views: this model with another network */
    for (int gi = 0; gi < m->cfg.n_garments; gi++) {
        drape_model *v = m->own[gi];
        if (!v) continue;
        drape_net own = v->net;
        *v = *m;
        v->net = own;
        v->is_view = 1;
        v->n_own = 0;
        memset(v->own, 0, sizeof v->own);
    }
    for (int gi = 0; gi < m->cfg.n_garments; gi++) {
        const drape_garment *g = &m->garments[gi];
        m->derived_bytes += (size_t)m->cfg.uv_h * m->cfg.uv_w * 16 + (size_t)g->n_edges * 8 + (size_t)g->n_cov * 4;
    }
    *out = m;
    return DRAPE_OK;
fail:
    free(L.w);
    drape_st_free(st);
    drape_model_free(m);
    if (err && strncmp(err->msg, path, strlen(path))) drape_error_prefix(err, path);
    return rc;
}

void drape_model_free(drape_model *m)
{
    if (!m) return;
    for (int gi = 0; gi < DRAPE_MAX_GARMENTS; gi++) drape_model_free(m->own[gi]);
    if (m->is_view) { /* its own network's block lists, nothing else */
        free(m->net.edge_mlp);
        free(m->net.node_mlp);
        free(m);
        return;
    }
    for (int gi = 0; gi < DRAPE_MAX_GARMENTS; gi++) drape_garment_release(&m->garments[gi]);
    free(m->body_edges);
    free(m->net.edge_mlp);
    free(m->net.node_mlp);
    free(m->arena);
    free(m);
}

int drape_model_garment(const drape_model *m, const char *name)
{
    for (int i = 0; i < m->cfg.n_garments; i++)
        if (!strcmp(m->cfg.garments[i], name)) return i;
    return DRAPE_ENOTFOUND;
}

int drape_model_check_betas(const drape_model *m, const float *betas, int n, drape_error *err)
{
    if (n < 0 || n > m->cfg.betas)
        return drape_fail(err, DRAPE_EINVAL, "betas: %d values given, the model has %d", n, m->cfg.betas);
    for (int i = 0; i < n; i++) {
        if (!isfinite(betas[i])) return drape_fail(err, DRAPE_ENONFINITE, "betas[%d] is not finite", i);
        if (betas[i] < m->cfg.beta_min || betas[i] > m->cfg.beta_max)
            return drape_fail(err, DRAPE_ERANGE, "betas[%d] = %g is outside the model's range [%g, %g]", i, betas[i],
                              m->cfg.beta_min, m->cfg.beta_max);
    }
    return DRAPE_OK;
}
