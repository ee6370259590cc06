/* Bundle loading: a good bundle's views, and bad bundles rejected by name. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../runtime/model.h"
#include "../runtime/sequence.h"
#include "util.h"

Test(model, loads_tiny_bundle)
{
    drape_model *m = tu_load("tiny_random");
    cr_assert_eq(m->cfg.format_version, 1);
    cr_assert_eq(m->cfg.bones, 8);
    cr_assert_eq(m->cfg.n_conv, 3);
    cr_assert_eq(m->cfg.conv[2], 3);
    cr_assert_geq(drape_model_garment(m, "skirt"), 0);
    cr_assert_eq(drape_model_garment(m, "cape"), DRAPE_ENOTFOUND);
    const drape_garment *g = &m->garments[drape_model_garment(m, "skirt")];
    cr_assert_gt(g->V, 0);
    cr_assert_gt(g->Nuv, g->V, "a real atlas has seams: more UVs than vertices");
    cr_assert_gt(g->n_cov, 0);
    cr_assert_eq(m->n_unused_tensors, 0);
    /* every vertex has at least one UV copy, seam vertices more */
    int seams = 0;
    for (int v = 0; v < g->V; v++) {
        int n = g->copy_start[v + 1] - g->copy_start[v];
        cr_assert_geq(n, 1, "vertex %d has no UV", v);
        seams += n > 1;
    }
    cr_assert_gt(seams, 0);
    /* each earlier conv layer needs a superset of the texels of the next
     * (dilation): the runs expanded to masks of the padded map, each run
     * inside a row, off the border, counted in active_texels; every texel
     * needed by layer l+1 and its 3×3 taps are needed by layer l */
    int pw = m->cfg.uv_w + 2, ph = m->cfg.uv_h + 2;
    for (int gi = 0; gi < m->cfg.n_garments; gi++) {
        const drape_garment *gg = &m->garments[gi];
        unsigned char *mask[DRAPE_MAX_CONV + 1];
        for (int l = 0; l <= m->cfg.n_conv; l++) {
            mask[l] = calloc((size_t)pw * ph, 1);
            int64_t n = 0;
            for (int r = 0; r < gg->n_spans[l]; r++) {
                drape_span sp = gg->spans[l][r];
                cr_assert(sp.begin < sp.end && sp.begin / pw == (sp.end - 1) / pw && sp.begin / pw >= 1 &&
                              sp.begin / pw <= ph - 2 && sp.begin % pw >= 1 && (sp.end - 1) % pw <= pw - 2,
                          "garment %d layer %d run %d: [%d, %d)", gi, l, r, sp.begin, sp.end);
                for (int p = sp.begin; p < sp.end; p++) {
                    cr_assert_eq(mask[l][p], 0, "garment %d layer %d: texel %d in two runs", gi, l, p);
                    mask[l][p] = 1, n++;
                }
            }
            cr_assert_eq(n, gg->active_texels[l], "garment %d layer %d", gi, l);
        }
        cr_assert_gt(gg->active_texels[m->cfg.n_conv], 0);
        for (int l = 0; l < m->cfg.n_conv; l++)
            for (int p = 0; p < pw * ph; p++) {
                if (!mask[l + 1][p]) continue;
                for (int di = -1; di <= 1; di++)
                    for (int dj = -1; dj <= 1; dj++) {
                        int q = p + di * pw + dj, y = q / pw, x = q % pw;
                        if (y >= 1 && y <= ph - 2 && x >= 1 && x <= pw - 2) /* the border is zero */
                            cr_assert(mask[l][q], "garment %d: texel %d of layer %d reads %d, not in layer %d", gi, p,
                                      l + 1, q, l);
                    }
            }
        for (int l = 0; l <= m->cfg.n_conv; l++) free(mask[l]);
    }
    drape_model_free(m);
}

Test(model, betas_are_validated)
{
    drape_model *m = tu_load("tiny_random");
    drape_error e = {0};
    float ok[3] = {0.5f, -3.0f, 3.0f}, far[1] = {3.5f}, nan1[1] = {NAN};
    float many[17] = {0};
    cr_assert_eq(drape_model_check_betas(m, ok, 3, &e), 0);
    cr_assert_eq(drape_model_check_betas(m, far, 1, &e), DRAPE_ERANGE);
    cr_assert(strstr(e.msg, "betas[0]"), "%s", e.msg);
    cr_assert_eq(drape_model_check_betas(m, nan1, 1, &e), DRAPE_ENONFINITE);
    cr_assert_eq(drape_model_check_betas(m, many, 11, &e), DRAPE_EINVAL);
    drape_model_free(m);
}

/* ---- bad bundles: each made from the good one with one thing changed ---- */

static void expect_load_fails(const char *path, int code, const char *needle)
{
    drape_model *m = NULL;
    drape_error e = {0};
    int rc = drape_model_load(&m, path, &e);
    cr_assert_eq(rc, code, "expected %s, got %d: %s", drape_strerror(code), rc, e.msg);
    cr_assert_null(m);
    cr_assert(strstr(e.msg, needle), "message '%s' should name '%s'", e.msg, needle);
}

/* the tiny bundle with the config's KEY set to VALUE (JSON), written to
 * path, fails to load with code and a message naming needle */
static void expect_config_fails(const char *path, const char *key, const char *value, int code, const char *needle)
{
    char kv[512];
    snprintf(kv, sizeof kv, "\"%s\": %s", key, value);
    tu_config_plus(tu_bundle("tiny_random"), path, kv);
    expect_load_fails(path, code, needle);
}

static int wrong_shape(const char *name, drape_dtype *dt, int *nd, int64_t *shape, void *data, void *ctx)
{
    (void)dt; (void)nd; (void)data; (void)ctx;
    if (!strcmp(name, "bonenet.1.weight")) shape[1] = shape[1] * 2, shape[0] = shape[0] / 2;
    return 1;
}

Test(model, rejects_wrong_shape)
{
    const char *p = tu_tmp("shape.safetensors");
    tu_rewrite(tu_bundle("tiny_random"), p, wrong_shape, NULL, NULL);
    expect_load_fails(p, DRAPE_ESHAPE, "bonenet.1.weight");
}

static int wrong_dtype(const char *name, drape_dtype *dt, int *nd, int64_t *shape, void *data, void *ctx)
{
    (void)nd; (void)shape; (void)data; (void)ctx;
    if (!strcmp(name, "garment.skirt.skin_idx")) *dt = DRAPE_DT_F32;
    return 1;
}

Test(model, rejects_wrong_dtype)
{
    const char *p = tu_tmp("dtype.safetensors");
    tu_rewrite(tu_bundle("tiny_random"), p, wrong_dtype, NULL, NULL);
    expect_load_fails(p, DRAPE_EDTYPE, "garment.skirt.skin_idx");
}

static int nan_weight(const char *name, drape_dtype *dt, int *nd, int64_t *shape, void *data, void *ctx)
{
    (void)dt; (void)nd; (void)shape; (void)ctx;
    if (!strcmp(name, "conv.1.weight")) ((float *)data)[5] = NAN;
    return 1;
}

Test(model, rejects_nan_weight)
{
    const char *p = tu_tmp("nan.safetensors");
    tu_rewrite(tu_bundle("tiny_random"), p, nan_weight, NULL, NULL);
    expect_load_fails(p, DRAPE_ENONFINITE, "conv.1.weight");
}

static int drop_tensor(const char *name, drape_dtype *dt, int *nd, int64_t *shape, void *data, void *ctx)
{
    (void)dt; (void)nd; (void)shape; (void)data; (void)ctx;
    return strcmp(name, "encoder.blocks.1.node_mlp.norm.bias") != 0;
}

Test(model, rejects_missing_tensor)
{
    const char *p = tu_tmp("missing.safetensors");
    tu_rewrite(tu_bundle("tiny_random"), p, drop_tensor, NULL, NULL);
    expect_load_fails(p, DRAPE_ENOTFOUND, "encoder.blocks.1.node_mlp.norm.bias");
}

/* A garment's own network (garment.<g>.net.*) is a view: the model's body,
 * garments and arena, another network. */
Test(model, own_network_is_a_view)
{
    drape_model *m = tu_load("tinyown_random");
    cr_assert_eq(m->n_own, 1);
    cr_assert_null(m->own[0]);
    const drape_model *v = m->own[1];
    cr_assert_not_null(v);
    cr_assert_eq(drape_model_for_garment(m, 0), m);
    cr_assert_eq(drape_model_for_garment(m, 1), v);
    cr_assert(v->is_view && !v->n_own && !v->own[1]);
    cr_assert_eq(v->garments[1].rest, m->garments[1].rest);
    cr_assert_eq(v->garments[1].texel_face, m->garments[1].texel_face);
    cr_assert_eq(v->v_template, m->v_template);
    cr_assert_neq(v->net.bonenet[0].w, m->net.bonenet[0].w);
    cr_assert_neq(v->net.conv[1].b, m->net.conv[1].b);
    cr_assert_neq(v->net.node_mlp, m->net.node_mlp);
    cr_assert_eq(m->n_unused_tensors, 0, "every own-network tensor is used");
    drape_model_free(m);
}

static int drop_own_one(const char *name, drape_dtype *dt, int *nd, int64_t *shape, void *data, void *ctx)
{
    (void)dt; (void)nd; (void)shape; (void)data; (void)ctx;
    return strcmp(name, "garment.miniskirt.net.encoder.blocks.1.edge_mlp.1.weight") != 0;
}

static int own_bad_std(const char *name, drape_dtype *dt, int *nd, int64_t *shape, void *data, void *ctx)
{
    (void)dt; (void)nd; (void)shape; (void)ctx;
    if (!strcmp(name, "garment.miniskirt.net.bonenet.in_std")) ((float *)data)[3] = 0;
    return 1;
}

static int own_wrong_shape(const char *name, drape_dtype *dt, int *nd, int64_t *shape, void *data, void *ctx)
{
    (void)dt; (void)data; (void)ctx;
    if (!strcmp(name, "garment.miniskirt.net.heads.feat.bias")) *nd = 2, shape[0] = 2, shape[1] = 2; /* [4] as [2, 2] */
    return 1;
}

/* An own network is whole, of the shared one's shapes, and checked like it. */
Test(model, own_network_is_validated)
{
    const char *p = tu_tmp("own.safetensors");
    tu_rewrite(tu_bundle("tinyown_random"), p, drop_own_one, NULL, NULL);
    expect_load_fails(p, DRAPE_ENOTFOUND, "garment.miniskirt.net.encoder.blocks.1.edge_mlp.1.weight");
    tu_rewrite(tu_bundle("tinyown_random"), p, own_bad_std, NULL, NULL);
    expect_load_fails(p, DRAPE_ERANGE, "garment.miniskirt.net.bonenet.in_std");
    tu_rewrite(tu_bundle("tinyown_random"), p, own_wrong_shape, NULL, NULL);
    expect_load_fails(p, DRAPE_ESHAPE, "garment.miniskirt.net.heads.feat.bias");
}

static int bad_index(const char *name, drape_dtype *dt, int *nd, int64_t *shape, void *data, void *ctx)
{
    (void)dt; (void)nd; (void)shape; (void)ctx;
    if (!strcmp(name, "garment.skirt.faces")) ((int32_t *)data)[7] = 1 << 20;
    return 1;
}

Test(model, rejects_index_out_of_range)
{
    const char *p = tu_tmp("index.safetensors");
    tu_rewrite(tu_bundle("tiny_random"), p, bad_index, NULL, NULL);
    expect_load_fails(p, DRAPE_ERANGE, "garment.skirt.faces");
}

Test(model, rejects_bad_config)
{
    const char *p = tu_tmp("cfg.safetensors");
    tu_rewrite(tu_bundle("tiny_random"), p, NULL, "{\"format_version\": 1, \"fps\": 30", NULL);
    expect_load_fails(p, DRAPE_EFORMAT, "drape.config");
    /* a valid JSON config that disagrees with the tensors */
    drape_st *st;
    drape_error e = {0};
    cr_assert_eq(drape_st_open(&st, tu_bundle("tiny_random"), &e), 0);
    char cfg[4096];
    snprintf(cfg, sizeof cfg, "%s", drape_st_meta(st, "drape.config"));
    drape_st_free(st);
    char *h = strstr(cfg, "\"hidden\"");
    cr_assert_not_null(h);
    char *colon = strchr(h, ':');
    char fixed[4096];
    snprintf(fixed, sizeof fixed, "%.*s: 48%s", (int)(colon - cfg), cfg, strpbrk(colon, ",}"));
    tu_rewrite(tu_bundle("tiny_random"), p, NULL, fixed, NULL);
    expect_load_fails(p, DRAPE_ESHAPE, "bonenet.0.weight");
    tu_rewrite(tu_bundle("tiny_random"), p, NULL, "{\"format_version\": 1}", NULL);
    expect_load_fails(p, DRAPE_ENOTFOUND, "fps");
}

Test(model, pose_history_is_read_and_checked)
{
    const char *p = tu_tmp("history.safetensors");
    drape_model *m = NULL;
    drape_error e = {0};
    /* absent: docs/design.md §2.4's three frames */
    cr_assert_eq(drape_model_load(&m, tu_bundle("tiny_random"), &e), 0, "%s", e.msg);
    cr_assert(m->cfg.n_hist == 3 && m->cfg.hist[0] == 2 && m->cfg.hist[1] == 1 && m->cfg.hist[2] == 0);
    cr_assert_eq(drape_bonenet_in(&m->cfg), 15 * m->cfg.bones);
    drape_model_free(m);
    /* said explicitly: the same */
    tu_config_plus(tu_bundle("tiny_random"), p, "\"history\": [2, 1, 0]");
    cr_assert_eq(drape_model_load(&m, p, &e), 0, "%s", e.msg);
    cr_assert_eq(m->cfg.n_hist, 3);
    drape_model_free(m);
    /* a longer one, with its wider Bone-Net input */
    cr_assert_eq(drape_model_load(&m, tu_bundle("tinyhist_random"), &e), 0, "%s", e.msg);
    cr_assert(m->cfg.n_hist == 4 && m->cfg.hist[0] == 6 && m->cfg.hist[1] == 3 && m->cfg.hist[2] == 1 &&
              m->cfg.hist[3] == 0);
    cr_assert_eq(drape_bonenet_in(&m->cfg), 7 * 3 * m->cfg.bones);
    drape_model_free(m);
    /* a history the tensors were not made for: a shape error naming them */
    tu_config_plus(tu_bundle("tiny_random"), p, "\"history\": [16, 8, 4, 2, 1, 0]");
    expect_load_fails(p, DRAPE_ESHAPE, "bonenet.in_mean");
    /* malformed ones, each named */
    static const struct { const char *h; int code; const char *msg; } bad[] = {
        {"[1, 2, 0]", DRAPE_EFORMAT, "decreasing"},
        {"[2, 1]", DRAPE_EFORMAT, "the last 0"},
        {"[2, 2, 0]", DRAPE_EFORMAT, "decreasing"},
        {"[64, 0]", DRAPE_ERANGE, "[0, 63]"},
        {"[-1, 0]", DRAPE_ERANGE, "'history'"},
        {"[0]", DRAPE_EFORMAT, "2 to 8"},
        {"[9, 8, 7, 6, 5, 4, 3, 2, 0]", DRAPE_EFORMAT, "2 to 8"},
        {"\"long\"", DRAPE_EFORMAT, "'history'"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        expect_config_fails(p, "history", bad[i].h, bad[i].code, bad[i].msg);
}

Test(model, refine_config_is_read_and_checked)
{
    const char *p = tu_tmp("refine.safetensors");
    drape_model *m = NULL;
    drape_error e = {0};
    /* absent: no garment refined */
    cr_assert_eq(drape_model_load(&m, tu_bundle("tiny_random"), &e), 0, "%s", e.msg);
    cr_assert(m->cfg.refine[0].iters == 0 && m->cfg.refine[1].iters == 0);
    drape_model_free(m);
    tu_config_plus(tu_bundle("tiny_random"), p, "\"refine\": {\"miniskirt\": {\"iters\": 7, \"stiffness\": 2.5, \"margin\": 0.004}}");
    cr_assert_eq(drape_model_load(&m, p, &e), 0, "%s", e.msg);
    cr_assert(m->cfg.refine[0].iters == 0 && m->cfg.refine[1].iters == 7);
    cr_assert_float_eq(m->cfg.refine[1].stiffness, 2.5f, 1e-6);
    cr_assert_float_eq(m->cfg.refine[1].margin, 0.004f, 1e-6);
    cr_assert_eq(m->cfg.refine[1].rho, 0, "no rho: plain sweeps");
    drape_model_free(m);
    tu_config_plus(tu_bundle("tiny_random"), p, "\"refine\": {\"skirt\": {\"iters\": 50, \"stiffness\": 100, \"margin\": 0, \"rho\": 0.9983}}");
    cr_assert_eq(drape_model_load(&m, p, &e), 0, "%s", e.msg);
    cr_assert(m->cfg.refine[0].iters == 50 && m->cfg.refine[0].rho == 0.9983);
    drape_model_free(m);
    static const struct { const char *r; int code; const char *msg; } bad[] = {
        {"{\"coat\": {\"iters\": 10, \"stiffness\": 1, \"margin\": 0}}", DRAPE_ENOTFOUND, "'coat' is not a garment"},
        {"{\"skirt\": {\"iters\": 101, \"stiffness\": 1, \"margin\": 0}}", DRAPE_ERANGE, "iters in [0, 100]"},
        {"{\"skirt\": {\"iters\": 10, \"stiffness\": 0, \"margin\": 0}}", DRAPE_ERANGE, "stiffness in (0, 100]"},
        {"{\"skirt\": {\"iters\": 10, \"stiffness\": 1, \"margin\": 0.2}}", DRAPE_ERANGE, "margin in [0, 0.05]"},
        {"{\"skirt\": {\"iters\": 10, \"stiffness\": 1}}", DRAPE_EFORMAT, "refine.skirt must be"},
        {"{\"skirt\": {\"iters\": 1.5, \"stiffness\": 1, \"margin\": 0}}", DRAPE_EFORMAT, "refine.skirt must be"},
        {"{\"skirt\": 3}", DRAPE_EFORMAT, "refine.skirt must be"},
        {"{\"skirt\": {\"iters\": 10, \"stiffness\": 1, \"margin\": 0, \"rho\": 1}}", DRAPE_ERANGE, "rho in [0, 1)"},
        {"{\"skirt\": {\"iters\": 10, \"stiffness\": 1, \"margin\": 0, \"rho\": -0.5}}", DRAPE_ERANGE, "rho in [0, 1)"},
        {"{\"skirt\": {\"iters\": 10, \"stiffness\": 1, \"margin\": 0, \"rho\": \"fast\"}}", DRAPE_EFORMAT, "refine.skirt must be"},
        {"{\"skirt\": {\"iters\": 10, \"stiffness\": 1, \"margin\": 0, \"speed\": 2}}", DRAPE_EFORMAT, "refine.skirt must be"},
        {"[\"skirt\"]", DRAPE_EFORMAT, "'refine' must be an object"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        expect_config_fails(p, "refine", bad[i].r, bad[i].code, bad[i].msg);
}

Test(model, rejects_truncated_bundle)
{
    const char *p = tu_tmp("trunc.safetensors");
    char out[512];
    cr_assert_eq(tu_run(out, sizeof out, "head -c 20000 '%s' > '%s'", tu_bundle("tiny_random"), p), 0);
    expect_load_fails(p, DRAPE_EFORMAT, "truncated");
}

/* The default model carries the attach sets `drape sim garment` uses
 * (train/assets.py: 1 cm below the unshaped garment's top), and its T-shirt
 * its own network. */
Test(model, default_model_has_its_attach_sets)
{
    drape_model *m = NULL;
    drape_error e = {0};
    cr_assert_eq(drape_model_load(&m, "models/default.safetensors", &e), 0, "%s", e.msg);
    cr_assert_eq(m->n_unused_tensors, 0);
    /* every garment runs a network of its own; the bundle's stays for
     * garments added later (docs/training.md, "The shipped recipe") */
    cr_assert_eq(m->n_own, 3);
    cr_assert_not_null(m->own[drape_model_garment(m, "tshirt")]);
    cr_assert_not_null(m->own[drape_model_garment(m, "dress")]);
    cr_assert_not_null(m->own[drape_model_garment(m, "skirt")]);
    for (int gi = 0; gi < m->cfg.n_garments; gi++) {
        const drape_garment *g = &m->garments[gi];
        cr_assert_geq(g->n_attach, 8, "%s: %d attached", g->name, g->n_attach);
        float top = -INFINITY;
        for (int v = 0; v < g->V; v++) top = fmaxf(top, g->rest[3 * v + 1]);
        for (int i = 0; i < g->n_attach; i++) {
            cr_assert(g->attach[i] >= 0 && g->attach[i] < g->V);
            cr_assert_geq(g->rest[3 * g->attach[i] + 1], top - 0.0101f, "%s: vertex %d is not at the top", g->name,
                          g->attach[i]);
        }
    }
    drape_model_free(m);
}

static int attach_out_of_range(const char *name, drape_dtype *dt, int *nd, int64_t *shape, void *data, void *ctx)
{
    (void)dt; (void)nd; (void)shape; (void)ctx;
    if (!strcmp(name, "garment.dress.attach")) ((int32_t *)data)[3] = 1 << 20;
    return 1;
}

static int attach_unsorted(const char *name, drape_dtype *dt, int *nd, int64_t *shape, void *data, void *ctx)
{
    (void)dt; (void)nd; (void)shape; (void)ctx;
    if (!strcmp(name, "garment.dress.attach")) ((int32_t *)data)[4] = ((int32_t *)data)[3];
    return 1;
}

static int attach_2d(const char *name, drape_dtype *dt, int *nd, int64_t *shape, void *data, void *ctx)
{
    (void)dt; (void)data; (void)ctx;
    if (!strcmp(name, "garment.dress.attach")) *nd = 2, shape[1] = 1;
    return 1;
}

Test(model, rejects_bad_attach_sets)
{
    const char *p = tu_tmp("attach.safetensors");
    tu_rewrite("models/default.safetensors", p, attach_out_of_range, NULL, NULL);
    expect_load_fails(p, DRAPE_ERANGE, "garment.dress.attach");
    tu_rewrite("models/default.safetensors", p, attach_unsorted, NULL, NULL);
    expect_load_fails(p, DRAPE_ERANGE, "strictly ascending");
    tu_rewrite("models/default.safetensors", p, attach_2d, NULL, NULL);
    expect_load_fails(p, DRAPE_ESHAPE, "garment.dress.attach");
}

Test(model, teacher_config_is_read_and_checked)
{
    const char *p = tu_tmp("teacher.safetensors");
    drape_model *m = NULL;
    drape_error e = {0};
    /* absent: none */
    cr_assert_eq(drape_model_load(&m, tu_bundle("tiny_random"), &e), 0, "%s", e.msg);
    cr_assert(!m->cfg.has_teacher && !m->cfg.teacher[0][0]);
    drape_model_free(m);
    /* the common flags, then a garment's own; train/'s prelude left alone */
    tu_config_plus(tu_bundle("tiny_random"), p, "\"teacher\": {\"args\": \"--iters 8 --max-substeps 4\", \"garments\": {\"miniskirt\": \"--iters 3\"}, "
                "\"prelude\": {\"miniskirt\": \"walk:1:1.5\"}}");
    cr_assert_eq(drape_model_load(&m, p, &e), 0, "%s", e.msg);
    cr_assert(m->cfg.has_teacher);
    cr_assert_str_eq(m->cfg.teacher[0], "--iters 8 --max-substeps 4");
    cr_assert_str_eq(m->cfg.teacher[1], "--iters 8 --max-substeps 4 --iters 3");
    drape_model_free(m);
    /* an empty object: the simulator's defaults, said explicitly */
    tu_config_plus(tu_bundle("tiny_random"), p, "\"teacher\": {}");
    cr_assert_eq(drape_model_load(&m, p, &e), 0, "%s", e.msg);
    cr_assert(m->cfg.has_teacher && !m->cfg.teacher[0][0] && !m->cfg.teacher[1][0]);
    drape_model_free(m);
    char longer[300], kv[400];
    memset(longer, 'x', 200);
    longer[200] = 0;
    snprintf(kv, sizeof kv, "{\"args\": \"%s\"}", longer);
    const struct { const char *t; int code; const char *msg; } bad[] = {
        {"\"--iters 3\"", DRAPE_EFORMAT, "'teacher' must be an object"},
        {"{\"args\": 3}", DRAPE_EFORMAT, "teacher.args must be a string"},
        {"{\"garments\": {\"coat\": \"--iters 3\"}}", DRAPE_ENOTFOUND, "'coat' is not a garment"},
        {"{\"garments\": {\"skirt\": [1]}}", DRAPE_EFORMAT, "teacher.garments.skirt must be a string"},
        {"{\"garments\": [\"skirt\"]}", DRAPE_EFORMAT, "teacher.garments must be an object"},
        {"{\"args\": \"--iters\\t3\"}", DRAPE_EFORMAT, "printable"},
        {kv, DRAPE_ERANGE, "longer than"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        expect_config_fails(p, "teacher", bad[i].t, bad[i].code, bad[i].msg);
}

/* The config's "physics" (docs/design.md §3.3): a garment's own pull in the
 * physics mode; absent, none (the served one); anything else is refused by
 * name. */
Test(model, physics_config_is_read_and_checked)
{
    const char *p = tu_tmp("physics.safetensors");
    drape_model *m = NULL;
    drape_error e = {0};
    cr_assert_eq(drape_model_load(&m, tu_bundle("tiny_random"), &e), 0, "%s", e.msg);
    for (int g = 0; g < m->cfg.n_garments; g++) cr_assert(!m->cfg.physics[g].has_pull);
    drape_model_free(m);
    tu_config_plus(tu_bundle("tiny_random"), p, "\"physics\": {\"skirt\": {\"pull\": 640}}");
    cr_assert_eq(drape_model_load(&m, p, &e), 0, "%s", e.msg);
    int sk = drape_model_garment(m, "skirt"), mini = drape_model_garment(m, "miniskirt");
    cr_assert(sk >= 0 && mini >= 0);
    cr_assert(m->cfg.physics[sk].has_pull && m->cfg.physics[sk].pull == 640);
    cr_assert(!m->cfg.physics[mini].has_pull);
    drape_model_free(m);
    /* 0 is a pull of its own: none at all */
    tu_config_plus(tu_bundle("tiny_random"), p, "\"physics\": {\"miniskirt\": {\"pull\": 0}}");
    cr_assert_eq(drape_model_load(&m, p, &e), 0, "%s", e.msg);
    cr_assert(m->cfg.physics[mini].has_pull && m->cfg.physics[mini].pull == 0);
    drape_model_free(m);
    const struct { const char *t; int code; const char *msg; } bad[] = {
        {"[\"skirt\"]", DRAPE_EFORMAT, "'physics' must be an object"},
        {"{\"coat\": {\"pull\": 1}}", DRAPE_ENOTFOUND, "'coat' is not a garment"},
        {"{\"skirt\": 640}", DRAPE_EFORMAT, "physics.skirt must be {\"pull\": number}"},
        {"{\"skirt\": {\"pull\": \"640\"}}", DRAPE_EFORMAT, "physics.skirt must be"},
        {"{\"skirt\": {\"pull\": 640, \"substeps\": 8}}", DRAPE_EFORMAT, "physics.skirt must be"},
        {"{\"skirt\": {\"pull\": -1}}", DRAPE_ERANGE, "pull -1 is not in [0, 1e6]"},
        {"{\"skirt\": {\"pull\": 2e6}}", DRAPE_ERANGE, "is not in [0, 1e6]"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        expect_config_fails(p, "physics", bad[i].t, bad[i].code, bad[i].msg);
}

/* The config's "untrained" (docs/garments.md): the garments listed have no
 * trained network; absent, none; a name that is not a garment, or not a
 * list, is refused by name. */
Test(model, untrained_config_is_read_and_checked)
{
    const char *p = tu_tmp("untrained.safetensors");
    drape_model *m = NULL;
    drape_error e = {0};
    cr_assert_eq(drape_model_load(&m, tu_bundle("tiny_random"), &e), 0, "%s", e.msg);
    for (int g = 0; g < m->cfg.n_garments; g++) cr_assert_eq(m->cfg.untrained[g], 0);
    drape_model_free(m);
    tu_config_plus(tu_bundle("tiny_random"), p, "\"untrained\": [\"miniskirt\"]");
    cr_assert_eq(drape_model_load(&m, p, &e), 0, "%s", e.msg);
    cr_assert_eq(m->cfg.untrained[drape_model_garment(m, "skirt")], 0);
    cr_assert_eq(m->cfg.untrained[drape_model_garment(m, "miniskirt")], 1);
    drape_model_free(m);
    const struct { const char *t; int code; const char *msg; } bad[] = {
        {"\"skirt\"", DRAPE_EFORMAT, "'untrained' must be an array of garment"},
        {"[\"coat\"]", DRAPE_ENOTFOUND, "untrained[0] is not a garment of the model"},
        {"[\"skirt\", 3]", DRAPE_ENOTFOUND, "untrained[1] is not a garment of the model"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        expect_config_fails(p, "untrained", bad[i].t, bad[i].code, bad[i].msg);
}

/* A copy of src with Bone-Net input ranges (docs/design.md §3.3) for the
 * network `pre` ("" the shared one): in_mean ± k·in_std; which: 1 in_min
 * only, 2 in_max only, 3 both; k < 0 gives an empty range. */
static void with_range(const char *src, const char *dst, const char *pre, float k, int which)
{
    drape_st *st = NULL;
    drape_error e = {0};
    cr_assert_eq(drape_st_open(&st, src, &e), 0, "%s", e.msg);
    drape_st_writer *w = drape_st_writer_new();
    cr_assert_eq(drape_st_writer_meta(w, "drape.config", drape_st_meta(st, "drape.config")), 0);
    for (int i = 0; i < drape_st_count(st); i++) {
        const drape_tensor *t = drape_st_at(st, i);
        cr_assert_eq(drape_st_writer_add(w, t->name, t->dtype, t->ndim, t->shape, t->data), 0);
    }
    char mean[160], sd[160], lo[160], hi[160];
    snprintf(mean, sizeof mean, "%sbonenet.in_mean", pre);
    snprintf(sd, sizeof sd, "%sbonenet.in_std", pre);
    snprintf(lo, sizeof lo, "%sbonenet.in_min", pre);
    snprintf(hi, sizeof hi, "%sbonenet.in_max", pre);
    const drape_tensor *tm = drape_st_find(st, mean), *ts = drape_st_find(st, sd);
    int64_t n = tm->numel;
    float *mu = malloc(sizeof(float) * n), *s = malloc(sizeof(float) * n), *a = malloc(sizeof(float) * n),
          *b = malloc(sizeof(float) * n);
    drape_st_to_f32(mu, tm);
    drape_st_to_f32(s, ts);
    for (int64_t i = 0; i < n; i++) a[i] = mu[i] - k * s[i], b[i] = mu[i] + k * s[i];
    if (which & 1) cr_assert_eq(drape_st_writer_add(w, lo, DRAPE_DT_F32, 1, &n, a), 0);
    if (which & 2) cr_assert_eq(drape_st_writer_add(w, hi, DRAPE_DT_F32, 1, &n, b), 0);
    cr_assert_eq(drape_st_writer_save(w, dst, &e), 0, "%s", e.msg);
    drape_st_writer_free(w);
    drape_st_free(st);
    free(mu), free(s), free(a), free(b);
}

/* frames [T,V,3] of garment 0 of a bundle for random poses, on the CPU backend */
static float *infer_frames(const char *bundle, const float *poses, int T, int *V)
{
    drape_model *m = tu_load(bundle);
    drape_backend *be = tu_backend(m);
    float betas[2] = {0.5f, -1};
    drape_identity *id = tu_identity(be, 0, betas, 2);
    *V = m->garments[0].V;
    float *out = malloc(sizeof(float) * (size_t)T * *V * 3);
    drape_error e = {0};
    cr_assert_eq(drape_sequence_run(be, id, poses, T, 0, out, 4, &e), 0, "%s", e.msg);
    drape_identity_free(be, id);
    drape_backend_free(be);
    drape_model_free(m);
    return out;
}

Test(model, bonenet_input_range_is_optional_checked_and_clamps)
{
    char wide[300], narrow[300], bad[300];
    snprintf(wide, sizeof wide, "%s", tu_tmp("wide.safetensors"));
    snprintf(narrow, sizeof narrow, "%s", tu_tmp("narrow.safetensors"));
    snprintf(bad, sizeof bad, "%s", tu_tmp("badrange.safetensors"));
    drape_model *m = tu_load("tiny_random");
    cr_assert_null(m->net.in_min, "a bundle without a range clamps nothing");
    drape_model_free(m);
    /* both or neither, one per network; not empty */
    with_range(tu_bundle("tiny_random"), bad, "", 1, 1);
    expect_load_fails(bad, DRAPE_ENOTFOUND, "bonenet.in_max");
    with_range(tu_bundle("tiny_random"), bad, "", 1, 2);
    expect_load_fails(bad, DRAPE_ENOTFOUND, "bonenet.in_min");
    with_range(tu_bundle("tiny_random"), bad, "", -1, 3);
    expect_load_fails(bad, DRAPE_ERANGE, "bonenet.in_min");
    with_range(tu_bundle("tinyown_random"), bad, "garment.miniskirt.net.", 1, 1);
    expect_load_fails(bad, DRAPE_ENOTFOUND, "garment.miniskirt.net.bonenet.in_max");
    with_range(tu_bundle("tinyown_random"), bad, "garment.miniskirt.net.", 2, 3);
    m = tu_load(bad);
    cr_assert(!m->net.in_min && m->own[1] && m->own[1]->net.in_min && m->own[1]->net.in_max,
              "the own network's range is its own");
    drape_model_free(m);
    /* a range no input reaches changes nothing; one they pass, changes the frames */
    enum { T = 6 };
    float poses[T * 75];
    tu_random_poses(poses, T, 0.6f, 0.3f, 21);
    with_range(tu_bundle("tiny_random"), wide, "", 1e6f, 3);
    with_range(tu_bundle("tiny_random"), narrow, "", 0.05f, 3);
    int V;
    float *plain = infer_frames("tiny_random", poses, T, &V), *w = infer_frames(wide, poses, T, &V),
          *n = infer_frames(narrow, poses, T, &V);
    cr_assert_eq(tu_max_abs_diff(plain, w, (int64_t)T * V * 3), 0, "a range nothing reaches changed the output");
    double d = tu_max_abs_diff(plain, n, (int64_t)T * V * 3);
    cr_assert(d > 1e-4 && isfinite(d), "clamping to ±0.05 std changed the output by only %g m", d);
    free(plain), free(w), free(n);
}
