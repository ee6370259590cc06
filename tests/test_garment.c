/* `drape garment add` (tools/garment_cmd.c, runtime/rig.c,
 * runtime/garment_mesh.c) end to end: a long skirt made here as an OBJ (and
 * as a GLB) from the shipped model's skirt goes in; the bundle loads, its
 * rig is train/assets.py garment_rig()'s, `drape sim garment` runs it, a
 * real draped streams it in lbs and physics modes over a real WebSocket and
 * refuses neural with mode_unavailable; each refusal has its message. The
 * check against Python is in suite `assets` and the browser's in `web`, as
 * their kinds are elsewhere (make test-unit leaves those suites out). */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../proto/client.h"
#include "../proto/errors.h"
#include "../proto/pack.h"
#include "../runtime/npy.h"
#include "../runtime/garment_mesh.h"
#include "util.h"

#define OUT 65536
static char out[OUT];
static const char *MODEL = "models/default.safetensors";

static const char *drape_bin(void) { return getenv("DRAPE_BIN") ? getenv("DRAPE_BIN") : "build/drape"; }
static const char *py(void) { return getenv("DRAPE_PYTHON") ? getenv("DRAPE_PYTHON") : "/usr/bin/python3"; }

/* tu_tmp's path, kept: tu_tmp answers in one buffer, and a test holds several */
static const char *tmp(const char *name)
{
    static char ring[8][512];
    static int next;
    char *p = ring[next++ % 8];
    snprintf(p, sizeof ring[0], "%s", tu_tmp(name));
    return p;
}

/* a bundle's garment written out as an OBJ, as it is */
static void write_garment_obj(const char *path, const drape_garment *g)
{
    FILE *f = fopen(path, "w");
    cr_assert(f, "%s", path);
    for (int v = 0; v < g->V; v++) fprintf(f, "v %.9g %.9g %.9g\n", g->rest[3 * v], g->rest[3 * v + 1], g->rest[3 * v + 2]);
    for (int t = 0; t < g->Nuv; t++) fprintf(f, "vt %.9g %.9g\n", g->uv[2 * t], g->uv[2 * t + 1]);
    for (int i = 0; i < g->F; i++) {
        const int32_t *a = g->faces + 3 * i, *t = g->uv_faces + 3 * i;
        fprintf(f, "f %d/%d %d/%d %d/%d\n", a[0] + 1, t[0] + 1, a[1] + 1, t[1] + 1, a[2] + 1, t[2] + 1);
    }
    fclose(f);
}

/* How the OBJ is made from the shipped skirt. */
typedef struct {
    double scale;      /* all coordinates (100: centimetres) */
    int no_uv;         /* no vt at all */
    int fold_uv;       /* u -> |u - 0.5| + 0.25: the atlas's halves on each other */
    int fins;          /* faces added on that many edges, each a third face there (non-manifold) */
    const char *extra; /* lines appended verbatim */
} obj_recipe;

/* The long skirt: the shipped skirt 4% wider and 25% longer below its top,
 * a garment of its own on the same body. */
static void long_skirt(const drape_garment *g, int v, double x[3])
{
    double top = -1e9;
    for (int i = 0; i < g->V; i++) top = fmax(top, g->rest[3 * i + 1]);
    x[0] = 1.04 * g->rest[3 * v];
    x[1] = top - 1.25 * (top - g->rest[3 * v + 1]);
    x[2] = 1.04 * g->rest[3 * v + 2];
}

static const char *write_obj(const char *name, const obj_recipe *r)
{
    drape_model *m = tu_load(MODEL);
    const drape_garment *g = &m->garments[drape_model_garment(m, "skirt")];
    const char *path = tmp(name);
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    fprintf(f, "# a long skirt for the tests\no long_skirt\n");
    for (int v = 0; v < g->V; v++) {
        double x[3];
        long_skirt(g, v, x);
        fprintf(f, "v %.9g %.9g %.9g\n", r->scale * x[0], r->scale * x[1], r->scale * x[2]);
    }
    for (int t = 0; !r->no_uv && t < g->Nuv; t++) {
        double u = g->uv[2 * t], w = g->uv[2 * t + 1];
        if (r->fold_uv) u = fabs(u - 0.5) + 0.25;
        fprintf(f, "vt %.9g %.9g\n", u, w);
    }
    for (int i = 0; i < g->F; i++) {
        const int32_t *a = g->faces + 3 * i, *t = g->uv_faces + 3 * i;
        if (r->no_uv) fprintf(f, "f %d %d %d\n", a[0] + 1, a[1] + 1, a[2] + 1);
        else fprintf(f, "f %d/%d %d/%d %d/%d\n", a[0] + 1, t[0] + 1, a[1] + 1, t[1] + 1, a[2] + 1, t[2] + 1);
    }
    /* fins: two faces more on an edge of each of the first faces, to new
     * vertices 1 cm above and below its middle (a UV of no area: the
     * overlap check skips them), so the edge is in three or four faces */
    for (int i = 0; i < r->fins; i++) {
        const int32_t *a = g->faces + 3 * (4 * i), *t = g->uv_faces + 3 * (4 * i);
        double p[3], q[3];
        long_skirt(g, a[0], p);
        long_skirt(g, a[1], q);
        for (int s = -1; s <= 1; s += 2) {
            fprintf(f, "v %.9g %.9g %.9g\n", (p[0] + q[0]) / 2, (p[1] + q[1]) / 2 + 0.01 * s, (p[2] + q[2]) / 2);
            fprintf(f, "f %d/%d %d/%d -1/%d\n", a[0] + 1, t[0] + 1, a[1] + 1, t[1] + 1, t[0] + 1);
        }
    }
    if (r->extra) fputs(r->extra, f);
    cr_assert_eq(fclose(f), 0);
    drape_model_free(m);
    return path;
}

/* runs `drape garment add` with flags after --model and --out; the status */
static int add(const char *mesh, const char *name, const char *outpath, const char *flags)
{
    return tu_run(out, OUT, "%s garment add --model %s --mesh %s --name %s --out %s %s", drape_bin(), MODEL, mesh, name,
                  outpath, flags ? flags : "");
}

/* The bundle the server tests and the rig check share: the long skirt as "longskirt". */
static const char *added_bundle(void)
{
    static char path[512];
    const char *obj = write_obj("long.obj", &(obj_recipe){.scale = 1});
    snprintf(path, sizeof path, "%s", tmp("with_long.safetensors"));
    cr_assert_eq(add(obj, "longskirt", path, NULL), 0, "%s", out);
    return path;
}

Test(garment, add_writes_a_bundle_that_loads_with_the_garment_untrained)
{
    const char *path = added_bundle();
    cr_assert(strstr(out, "wrote"), "%s", out);
    drape_model *in = tu_load(MODEL), *m = tu_load(path);
    cr_assert_eq(m->cfg.n_garments, in->cfg.n_garments + 1);
    int gi = drape_model_garment(m, "longskirt");
    cr_assert_eq(gi, in->cfg.n_garments, "appended last");
    for (int i = 0; i < m->cfg.n_garments; i++) cr_assert_eq(m->cfg.untrained[i], i == gi, "garment %d", i);
    /* everything of the input is there as it was: each tensor by name, with
     * its dtype, shape and bytes */
    cr_assert_eq(m->n_tensors, in->n_tensors + 11);
    drape_st *st_in, *st_out;
    drape_error e = {0};
    cr_assert_eq(drape_st_open(&st_in, MODEL, &e), 0, "%s", e.msg);
    cr_assert_eq(drape_st_open(&st_out, path, &e), 0, "%s", e.msg);
    cr_assert_eq(drape_st_count(st_out), drape_st_count(st_in) + 11);
    for (int i = 0; i < drape_st_count(st_in); i++) {
        const drape_tensor *a = drape_st_at(st_in, i), *b = drape_st_find(st_out, a->name);
        cr_assert_not_null(b, "%s is gone", a->name);
        cr_assert_eq(b->dtype, a->dtype, "%s", a->name);
        cr_assert_eq(b->ndim, a->ndim, "%s", a->name);
        cr_assert_eq(memcmp(b->shape, a->shape, sizeof(int64_t) * (size_t)a->ndim), 0, "%s: shape", a->name);
        cr_assert_eq(b->nbytes, a->nbytes, "%s", a->name);
        cr_assert_eq(memcmp(b->data, a->data, a->nbytes), 0, "%s: bytes", a->name);
    }
    drape_st_free(st_in);
    drape_st_free(st_out);
    cr_assert_eq(m->n_own, in->n_own);
    cr_assert_eq(m->cfg.has_teacher, in->cfg.has_teacher);
    const drape_garment *g = &m->garments[gi], *s = &in->garments[drape_model_garment(in, "skirt")];
    cr_assert_eq(g->V, s->V);
    cr_assert_eq(g->F, s->F);
    cr_assert_eq(g->Nuv, s->Nuv);
    cr_assert_eq(memcmp(g->faces, s->faces, sizeof(int32_t) * 3 * (size_t)g->F), 0);
    /* --attach waist (the default): the vertices within 1 cm of the top, as the shipped skirt's */
    cr_assert_eq(g->n_attach, s->n_attach);
    cr_assert_eq(memcmp(g->attach, s->attach, sizeof(int32_t) * (size_t)g->n_attach), 0);
    drape_model_free(in);
    drape_model_free(m);
    cr_assert_eq(tu_run(out, OUT, "%s info %s", drape_bin(), path), 0, "%s", out);
    cr_assert(strstr(out, "longskirt"), "%s", out);
    cr_assert(strstr(out, "network untrained (modes lbs, physics)"), "%s", out);
    cr_assert(strstr(out, "network trained (modes neural, lbs, physics)"), "%s", out);
}

/* The rig is garment_rig()'s: the Python function on the same rest mesh
 * (float32, as the bundle holds it) gives the same bones, nearest bones and
 * body vertices, and W0 within float rounding. On the shipped skirt, a
 * built-in garment, made into an OBJ as it is. */
Test(assets, garment_add_rig_is_garment_rig)
{
    drape_model *m = tu_load(MODEL);
    const drape_garment *g = &m->garments[drape_model_garment(m, "skirt")];
    const char *obj = tmp("skirt_as_is.obj");
    write_garment_obj(obj, g);
    const char *path = tmp("with_skirt2.safetensors");
    cr_assert_eq(add(obj, "skirt2", path, NULL), 0, "%s", out);
    drape_model *n = tu_load(path);
    const drape_garment *c = &n->garments[drape_model_garment(n, "skirt2")];
    cr_assert_eq(memcmp(c->rest, g->rest, sizeof(float) * 3 * (size_t)g->V), 0, "%%.9g round-trips a float");
    drape_model_free(n);
    drape_model_free(m);
    int rc = tu_run(out, OUT, "%s tests/clients/rig_check.py %s skirt2", py(), path);
    cr_assert_eq(rc, 0, "%s", out);
    cr_log_info("%s", out);
}

/* An OBJ and a GLB of the same garment (glTF's vertices split at UV seams,
 * its v running down) give the same garment. */
static void put32(FILE *f, uint32_t x) { fwrite((unsigned char[4]){x, x >> 8, x >> 16, x >> 24}, 1, 4, f); }

Test(garment, a_glb_gives_the_garment_its_obj_gives)
{
    drape_model *m = tu_load(MODEL);
    const drape_garment *g = &m->garments[drape_model_garment(m, "skirt")];
    /* one glTF vertex per UV index, at a vertex that takes it; indices = uv_faces */
    int n = g->Nuv;
    float *pos = calloc((size_t)n * 3, sizeof *pos), *tex = calloc((size_t)n * 2, sizeof *tex);
    for (int i = 0; i < 3 * g->F; i++) {
        double x[3];
        long_skirt(g, g->faces[i], x);
        for (int d = 0; d < 3; d++) pos[3 * g->uv_faces[i] + d] = (float)x[d];
    }
    for (int t = 0; t < n; t++) tex[2 * t] = g->uv[2 * t], tex[2 * t + 1] = 1 - g->uv[2 * t + 1];
    size_t pb = sizeof(float) * 3 * n, tb = sizeof(float) * 2 * n, ib = sizeof(uint32_t) * 3 * g->F;
    char json[2048];
    int jl = snprintf(json, sizeof json,
                      "{\"asset\":{\"version\":\"2.0\"},\"scene\":0,\"scenes\":[{\"nodes\":[0]}],\"nodes\":[{\"mesh\":0}],"
                      "\"meshes\":[{\"primitives\":[{\"attributes\":{\"POSITION\":0,\"TEXCOORD_0\":1},\"indices\":2}]}],"
                      "\"buffers\":[{\"byteLength\":%zu}],\"bufferViews\":[{\"buffer\":0,\"byteOffset\":0,\"byteLength\":%zu},"
                      "{\"buffer\":0,\"byteOffset\":%zu,\"byteLength\":%zu},{\"buffer\":0,\"byteOffset\":%zu,\"byteLength\":%zu}],"
                      "\"accessors\":[{\"bufferView\":0,\"componentType\":5126,\"count\":%d,\"type\":\"VEC3\"},"
                      "{\"bufferView\":1,\"componentType\":5126,\"count\":%d,\"type\":\"VEC2\"},"
                      "{\"bufferView\":2,\"componentType\":5125,\"count\":%d,\"type\":\"SCALAR\"}]}",
                      pb + tb + ib, pb, pb, tb, pb + tb, ib, n, n, 3 * g->F);
    while (jl % 4) json[jl++] = ' ';
    const char *glb = tmp("long.glb");
    FILE *f = fopen(glb, "wb");
    put32(f, 0x46546C67u), put32(f, 2), put32(f, (uint32_t)(12 + 8 + jl + 8 + pb + tb + ib));
    put32(f, (uint32_t)jl), put32(f, 0x4E4F534Au), fwrite(json, 1, (size_t)jl, f);
    put32(f, (uint32_t)(pb + tb + ib)), put32(f, 0x004E4942u);
    fwrite(pos, 1, pb, f), fwrite(tex, 1, tb, f), fwrite(g->uv_faces, 1, ib, f);
    fclose(f);
    free(pos), free(tex);
    const char *obj = write_obj("long2.obj", &(obj_recipe){.scale = 1});
    drape_gmesh a, b;
    drape_error e = {0};
    cr_assert_eq(drape_gmesh_read(&a, obj, &e), 0, "%s", e.msg);
    cr_assert_eq(drape_gmesh_read(&b, glb, &e), 0, "%s", e.msg);
    cr_assert_eq(b.V, a.V, "seams welded: %d vertices, the OBJ's %d", b.V, a.V);
    cr_assert_eq(b.F, a.F);
    for (int i = 0; i < 3 * a.F; i++) {
        /* 1e-6 m: the OBJ's text rounds once more than the GLB's floats */
        for (int d = 0; d < 3; d++)
            cr_assert_float_eq(b.v[3 * b.faces[i] + d], a.v[3 * a.faces[i] + d], 1e-6, "corner %d", i);
        for (int d = 0; d < 2; d++)
            cr_assert_float_eq(b.uv[2 * b.uv_faces[i] + d], a.uv[2 * a.uv_faces[i] + d], 1e-6, "corner %d", i);
    }
    drape_gmesh_free(&a);
    drape_gmesh_free(&b);
    drape_model_free(m);
    cr_assert_eq(add(glb, "longskirt", tmp("with_glb.safetensors"), NULL), 0, "%s", out);
    cr_assert(strstr(out, "64 vertices attached (waist)"), "%s", out);
}

/* A GLB whose accessor lies outside its buffer view is refused, whatever its
 * signs: a negative byteStride once wrapped the bounds check's sum round and
 * the reader read far outside the file. One triangle; view 0 holds its 36
 * bytes of positions. */
static int parse_glb_view(const char *view, const char *accessor, drape_error *e)
{
    char json[1024];
    int jl = snprintf(json, sizeof json,
                      "{\"asset\":{\"version\":\"2.0\"},\"meshes\":[{\"primitives\":[{\"attributes\":"
                      "{\"POSITION\":0,\"TEXCOORD_0\":1}}]}],\"buffers\":[{\"byteLength\":60}],"
                      "\"bufferViews\":[{\"buffer\":0,%s},{\"buffer\":0,\"byteOffset\":36,\"byteLength\":24}],"
                      "\"accessors\":[{\"bufferView\":0,\"componentType\":5126,\"count\":3,\"type\":\"VEC3\"%s},"
                      "{\"bufferView\":1,\"componentType\":5126,\"count\":3,\"type\":\"VEC2\"}]}",
                      view, accessor);
    while (jl % 4) json[jl++] = ' ';
    unsigned char glb[2048] = {0};
    size_t n = 0;
#define PUT32(x) (glb[n] = (x) & 255, glb[n + 1] = (x) >> 8 & 255, glb[n + 2] = (x) >> 16 & 255, glb[n + 3] = (uint32_t)(x) >> 24, n += 4)
    PUT32(0x46546C67u), PUT32(2), PUT32(12 + 8 + jl + 8 + 60);
    PUT32(jl), PUT32(0x4E4F534Au);
    memcpy(glb + n, json, (size_t)jl), n += (size_t)jl;
    PUT32(60), PUT32(0x004E4942u);
#undef PUT32
    float bin[15] = {0, 1, 0, 0.1f, 1, 0, 0, 1, 0.1f, 0, 0, 1, 0, 0, 1};
    memcpy(glb + n, bin, sizeof bin), n += sizeof bin;
    drape_gmesh m;
    int rc = drape_gmesh_parse(&m, glb, n, "t.glb", e);
    if (!rc) drape_gmesh_free(&m);
    return rc;
}

Test(garment, refuses_glb_accessors_outside_their_view)
{
    drape_error e = {0};
    cr_assert_eq(parse_glb_view("\"byteOffset\":0,\"byteLength\":36", "", &e), 0, "the control: %s", e.msg);
    const struct {
        const char *view, *accessor;
    } bad[] = {
        {"\"byteOffset\":0,\"byteLength\":36,\"byteStride\":-4398046511104", ",\"byteOffset\":8796093022208"},
        {"\"byteOffset\":0,\"byteLength\":36,\"byteStride\":-4", ",\"byteOffset\":8"},
        {"\"byteOffset\":0,\"byteLength\":36", ",\"byteOffset\":4"},
        {"\"byteOffset\":0,\"byteLength\":36", ",\"byteOffset\":-4"},
        {"\"byteOffset\":-36,\"byteLength\":72", ""},
        {"\"byteOffset\":48,\"byteLength\":36", ""},
        {"\"byteOffset\":0,\"byteLength\":9223372036854775807", ",\"byteOffset\":9223372036854775000"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        e = (drape_error){0};
        int rc = parse_glb_view(bad[i].view, bad[i].accessor, &e);
        cr_assert_eq(rc, DRAPE_EFORMAT, "case %zu: rc %d (%s)", i, rc, e.msg);
        cr_assert(strstr(e.msg, "outside") || strstr(e.msg, "not a plain"), "case %zu: %s", i, e.msg);
    }
}

/* `drape sim garment` runs the added garment (physics needs no network);
 * `drape infer` runs it with --lbs-only and refuses it without. */
Test(garment, sim_garment_and_lbs_run_and_neural_is_refused)
{
    const char *path = added_bundle();
    const char *poses = tmp("poses.npy");
    float p[12 * 75];
    tu_random_poses(p, 12, 0.2f, 0.05f, 7);
    drape_error e = {0};
    cr_assert_eq(drape_npy_write(poses, p, 2, (const int64_t[]){12, 75}, &e), 0, "%s", e.msg);
    const char *sim = tmp("sim.npy");
    cr_assert_eq(tu_run(out, OUT, "%s sim garment --model %s --garment longskirt --poses %s --out %s --settle 10",
                        drape_bin(), path, poses, sim), 0, "%s", out);
    cr_assert(strstr(out, "settings: the bundle's teacher for longskirt"), "the common teacher flags apply: %s", out);
    drape_npy x;
    cr_assert_eq(drape_npy_read(&x, sim, &e), 0, "%s", e.msg);
    cr_assert_eq(x.ndim, 3);
    cr_assert_eq(x.shape[0], 12);
    cr_assert_eq(x.shape[1], 2048);
    for (int64_t i = 0; i < x.shape[0] * x.shape[1] * 3; i++) cr_assert(isfinite(x.data[i]));
    drape_npy_free(&x);
    cr_assert_eq(tu_run(out, OUT, "%s infer --model %s --garment longskirt --poses %s --out %s --lbs-only", drape_bin(),
                        path, poses, tmp("lbs.npy")), 0, "%s", out);
    cr_assert_eq(tu_run(out, OUT, "%s infer --model %s --garment longskirt --poses %s --out %s", drape_bin(), path,
                        poses, tmp("neural.npy")), 1, "%s", out);
    cr_assert(strstr(out, "garment 'longskirt' has no trained network"), "%s", out);
}

static drape_server_msg expect_msg(drape_client *c, const char *op)
{
    drape_server_msg m;
    drape_error e = {0};
    int r = drape_client_recv(c, &m, 20000, &e);
    cr_assert_eq(r, 1, "recv: %d %s", r, e.msg);
    cr_assert_str_eq(m.op, op, "%s: %s %s", m.op, m.code, m.message);
    return m;
}

/* A real draped serves the added garment: /v1/model lists its modes and
 * network; over a real WebSocket it streams in lbs and physics modes and
 * refuses neural (mode_unavailable, naming the garment and its modes), and
 * so does POST /v1/frames; the trained garments are untouched. */
Test(garment, draped_streams_it_in_lbs_and_physics_and_refuses_neural, .timeout = 120)
{
    const char *path = added_bundle();
    tu_server s = tu_draped_start(path, "");
    cr_assert_eq(tu_run(out, OUT, "curl -s -S '%s/v1/model'", s.url), 0, "%s", out);
    cr_assert(strstr(out, "\"garment_modes\":{\"skirt\":[\"neural\",\"lbs\",\"physics\"]"), "%s", out);
    cr_assert(strstr(out, "\"longskirt\":[\"lbs\",\"physics\"]"), "%s", out);
    cr_assert(strstr(out, "\"networks\":{\"skirt\":\"trained\""), "%s", out);
    cr_assert(strstr(out, "\"longskirt\":\"untrained\""), "%s", out);
    drape_client *c;
    drape_error e = {0};
    cr_assert_eq(drape_client_connect(&c, s.ws, NULL, &e), 0, "%s", e.msg);
    drape_avatar_key lbs = {0, 1, ""}, phys = {0, 2, ""}, neural = {0, 3, ""}, skirt = {0, 4, ""};
    cr_assert_eq(drape_client_open(c, &neural, NULL, "longskirt", NULL, -1, DRAPE_FMT_F32, DRAPE_MODE_NEURAL, &e), 0);
    drape_server_msg m = expect_msg(c, "error");
    cr_assert_str_eq(m.code, "mode_unavailable");
    cr_assert(strstr(m.message, "'longskirt'") && strstr(m.message, "lbs and physics"), "%s", m.message);
    drape_server_msg_clear(&m);
    const drape_avatar_key *keys[3] = {&lbs, &phys, &skirt};
    const int modes[3] = {DRAPE_MODE_LBS, DRAPE_MODE_PHYSICS, DRAPE_MODE_NEURAL};
    for (int k = 0; k < 3; k++) {
        cr_assert_eq(drape_client_open(c, keys[k], NULL, k == 2 ? "skirt" : "longskirt", NULL, -1, DRAPE_FMT_F32,
                                       modes[k], &e), 0, "%s", e.msg);
        m = expect_msg(c, "opened");
        cr_assert_eq(m.vertices, 2048);
        drape_server_msg_clear(&m);
    }
    float pose[72] = {0}, *xyz = malloc(sizeof(float) * 3 * 2048);
    int frames[5] = {0};
    for (uint64_t seq = 1; seq <= 6; seq++) {
        pose[2] = 0.1f * sinf(0.3f * (float)seq);
        for (int k = 0; k < 3; k++) cr_assert_eq(drape_client_pose(c, keys[k], seq, pose, NULL, &e), 0, "%s", e.msg);
        for (int got = 0; got < 3;) {
            m = expect_msg(c, "frame");
            cr_assert_eq(m.count, 2048);
            cr_assert_eq(drape_client_decode(&m, xyz), 0);
            for (int i = 0; i < 3 * 2048; i++) cr_assert(isfinite(xyz[i]));
            frames[m.avatar.num]++;
            got++;
            drape_server_msg_clear(&m);
        }
    }
    cr_assert_eq(frames[1], 6, "lbs frames");
    cr_assert_eq(frames[2], 6, "physics frames");
    cr_assert_eq(frames[4], 6, "the trained skirt's neural frames");
    free(xyz);
    drape_client_close(c, 2000);
    /* stateless frames: lbs runs, neural is refused with the same code */
    char body[1024] = "{\"garment\":\"longskirt\",\"mode\":\"%s\",\"pose\":[";
    char req[1200];
    for (int i = 0; i < 72; i++) strcat(body, i ? ",0" : "0");
    strcat(body, "]}");
    snprintf(req, sizeof req, body, "lbs");
    cr_assert_eq(tu_run(out, OUT, "curl -s -S -o /dev/null -w '%%{http_code}' -X POST '%s/v1/frames' -d '%s'", s.url, req),
                 0, "%s", out);
    cr_assert_str_eq(out, "200");
    snprintf(req, sizeof req, body, "neural");
    cr_assert_eq(tu_run(out, OUT, "curl -s -S -X POST '%s/v1/frames' -d '%s'", s.url, req), 0, "%s", out);
    cr_assert(strstr(out, "mode_unavailable") && strstr(out, "longskirt"), "%s", out);
    cr_assert_eq(tu_run(out, OUT, "curl -s -S '%s/metrics'", s.url), 0, "%s", out);
    cr_assert(strstr(out, "drape_stream_errors_total{code=\"mode_unavailable\"} 1"), "%s", out);
    cr_assert_eq(tu_draped_stop(&s), 0);
}

/* ---- refusals: exit status 1, one line naming the problem, no OUT ---- */

static void refused(const char *mesh, const char *name, const char *flags, const char *msg)
{
    const char *o = tmp("refused.safetensors");
    int rc = add(mesh, name, o, flags);
    cr_assert_eq(rc, 1, "status %d:\n%s", rc, out);
    cr_assert(strstr(out, "drape garment add: "), "%s", out);
    cr_assert(strstr(out, msg), "wanted '%s' in:\n%s", msg, out);
    cr_assert_eq(access(o, F_OK), -1, "nothing written");
    cr_log_info("%s", out);
}

Test(garment, refuses_a_mesh_without_uvs)
{
    refused(write_obj("nouv.obj", &(obj_recipe){.scale = 1, .no_uv = 1}), "g", NULL, "no UVs: the garment needs a UV atlas");
}

Test(garment, refuses_non_manifold_edges_beyond_the_tolerance)
{
    /* 3 of about 6,000 edges: within 0.1%; 12: beyond it */
    const char *ok = write_obj("fin3.obj", &(obj_recipe){.scale = 1, .fins = 3});
    cr_assert_eq(add(ok, "fins", tmp("fins.safetensors"), NULL), 0, "%s", out);
    cr_assert(strstr(out, "3 non-manifold"), "%s", out);
    refused(write_obj("fin12.obj", &(obj_recipe){.scale = 1, .fins = 12}), "g", NULL,
            "edges are non-manifold (in three or more faces), over the tolerance of 0.1% (--max-nonmanifold 0.001)");
    cr_assert(strstr(out, ": 12 of "), "%s", out);
}

Test(garment, refuses_overlapping_uv_charts)
{
    refused(write_obj("fold.obj", &(obj_recipe){.scale = 1, .fold_uv = 1}), "g", NULL, "UV charts overlap: ");
    cr_assert(strstr(out, "lie inside two faces, over the tolerance of 1%"), "%s", out);
}

Test(garment, refuses_a_mesh_far_from_the_body)
{
    /* the same skirt in centimetres */
    refused(write_obj("cm.obj", &(obj_recipe){.scale = 100}), "g", NULL, "too far from the body: vertex ");
    cr_assert(strstr(out, "over 0.5 m (--max-distance"), "%s", out);
}

Test(garment, refuses_too_many_vertices)
{
    /* a 260 x 260 grid with UVs around the hips: 67,600 vertices */
    const char *path = tmp("big.obj");
    FILE *f = fopen(path, "w");
    int n = 260;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) fprintf(f, "v %g %g 0.2\nvt %g %g\n", -0.2 + 0.4 * j / (n - 1), 0.6 + 0.4 * i / (n - 1),
                                            (double)j / (n - 1), (double)i / (n - 1));
    for (int i = 0; i + 1 < n; i++)
        for (int j = 0; j + 1 < n; j++) {
            int a = i * n + j + 1, b = a + 1, c = a + n, d = c + 1;
            fprintf(f, "f %d/%d %d/%d %d/%d %d/%d\n", a, a, b, b, d, d, c, c); /* quads, split */
        }
    fclose(f);
    refused(path, "g", NULL, "67600 vertices, over the 65536 a garment may have");
}

Test(garment, refuses_bad_names_and_names_taken)
{
    const char *obj = write_obj("names.obj", &(obj_recipe){.scale = 1});
    refused(obj, "skirt", NULL, "--name skirt: the bundle already has a garment of that name");
    refused(obj, "'my cape'", NULL, "--name 'my cape': a garment's name is 1-63 characters of A-Z a-z 0-9 _ -");
    /* a bundle that holds a tensor under the name, though no garment of its config has it */
    drape_st *st = NULL;
    drape_error e = {0};
    cr_assert_eq(drape_st_open(&st, MODEL, &e), 0, "%s", e.msg);
    drape_st_writer *w = drape_st_writer_new();
    for (int i = 0; i < drape_st_count(st); i++) {
        const drape_tensor *t = drape_st_at(st, i);
        cr_assert_eq(drape_st_writer_add(w, t->name, t->dtype, t->ndim, t->shape, t->data), 0);
    }
    cr_assert_eq(drape_st_writer_meta(w, "drape.config", drape_st_meta(st, "drape.config")), 0);
    cr_assert_eq(drape_st_writer_add(w, "garment.ghost.rest", DRAPE_DT_F32, 2, (const int64_t[]){1, 3},
                                     (const float[]){0, 1, 0}), 0);
    const char *ghost = tmp("ghost.safetensors"), *o = tmp("ghost_out.safetensors");
    cr_assert_eq(drape_st_writer_save(w, ghost, &e), 0, "%s", e.msg);
    drape_st_writer_free(w);
    drape_st_free(st);
    cr_assert_eq(tu_run(out, OUT, "%s garment add --model %s --mesh %s --name ghost --out %s", drape_bin(), ghost, obj, o),
                 1, "%s", out);
    cr_assert(strstr(out, "--name ghost: ") && strstr(out, "already holds a tensor 'garment.ghost.rest'"), "%s", out);
    cr_assert_eq(access(o, F_OK), -1);
}

Test(garment, refuses_degenerate_faces_nan_loose_vertices_and_uvs_outside_the_square)
{
    refused(write_obj("degen.obj", &(obj_recipe){.scale = 1, .extra = "f 1/1 1/1 2/2\n"}), "g", NULL,
            "face 3968 (vertices 0, 0, 1) is degenerate");
    refused(write_obj("nan.obj", &(obj_recipe){.scale = 1, .extra = "v nan 0 0\n"}), "g", NULL,
            ": a vertex needs three finite numbers");
    refused(write_obj("loose.obj", &(obj_recipe){.scale = 1, .extra = "v 0 1 0.1\n"}), "g", NULL,
            "vertex 2048 is in no face");
    refused(write_obj("uv2.obj", &(obj_recipe){.scale = 1, .extra = "vt 1.5 0.5\nf 1/-1 2/2 3/3\n"}), "g", NULL,
            "is outside [0, 1]: the atlas must lie in the unit square");
}

Test(garment, attach_choices_and_their_refusals)
{
    const char *obj = write_obj("attach.obj", &(obj_recipe){.scale = 1});
    /* a skirt does not rest on the shoulders */
    refused(obj, "g", "--attach shoulders", "--attach shoulders: no vertex of ");
    const char *list = tmp("attach.txt");
    FILE *f = fopen(list, "w");
    fprintf(f, "# the first ring\n3, 1 2\n0\n2\n");
    fclose(f);
    const char *o = tmp("attach.safetensors");
    char flags[600];
    snprintf(flags, sizeof flags, "--attach %s", list);
    cr_assert_eq(add(obj, "g", o, flags), 0, "%s", out);
    drape_model *m = tu_load(o);
    const drape_garment *g = &m->garments[drape_model_garment(m, "g")];
    cr_assert_eq(g->n_attach, 4);
    for (int i = 0; i < 4; i++) cr_assert_eq(g->attach[i], i, "sorted, each once");
    drape_model_free(m);
    f = fopen(list, "w");
    fprintf(f, "1 2 99999\n");
    fclose(f);
    refused(obj, "g", flags, ":1: vertex 99999 is not in the mesh (2048 vertices)");
    refused(obj, "g", "--attach /no/such/file", "--attach /no/such/file: cannot open it");
}

/* The shoulders rule on the shipped T-shirt: the tops of both shoulders and
 * the neckline, nothing below the upper spine or out on the arms. */
Test(garment, attach_shoulders_takes_the_tops_of_the_shoulders)
{
    drape_model *m = tu_load(MODEL);
    const drape_garment *g = &m->garments[drape_model_garment(m, "tshirt")];
    const char *obj = tmp("tshirt.obj");
    write_garment_obj(obj, g);
    const char *o = tmp("shoulders.safetensors");
    cr_assert_eq(add(obj, "top", o, "--attach shoulders"), 0, "%s", out);
    drape_model *n = tu_load(o);
    const drape_garment *t = &n->garments[drape_model_garment(n, "top")];
    cr_assert_gt(t->n_attach, 20);
    float xmin = 1e9f, xmax = -1e9f, ymin = 1e9f;
    for (int i = 0; i < t->n_attach; i++) {
        const float *p = t->rest + 3 * t->attach[i];
        xmin = fminf(xmin, p[0]), xmax = fmaxf(xmax, p[0]), ymin = fminf(ymin, p[1]);
    }
    cr_log_info("shoulders: %d vertices, x in [%.3f, %.3f], y >= %.3f", t->n_attach, xmin, xmax, ymin);
    cr_assert(xmin < -0.12f && xmax > 0.12f, "both shoulders: x in [%g, %g]", xmin, xmax);
    cr_assert(xmin >= -0.171f && xmax <= 0.171f, "not the arms (the shoulder joints are at x = ±0.17)");
    cr_assert_gt(ymin, 1.28f, "above the upper spine joint");
    drape_model_free(n);
    drape_model_free(m);
}

/* The viewer offers the added garment only its modes (web/viewer.js, with
 * /v1/model's garment_modes): side by side lbs and physics, alone lbs; a
 * trained garment all three. In headless Chromium (tests/js/viewer_modes.mjs). */
Test(web, viewer_offers_an_added_garment_only_its_modes, .timeout = 180)
{
    const char *chromium = getenv("CHROMIUM") ? getenv("CHROMIUM") : "/usr/bin/chromium";
    if (access("web/node_modules/playwright-core", R_OK)) cr_skip_test("web/node_modules is missing (make deps)");
    if (access(chromium, X_OK)) cr_skip_test("%s is missing (apt-get install chromium)", chromium);
    const char *path = added_bundle();
    tu_server s = tu_draped_start(path, "--web-root web");
    int rc = tu_run(out, OUT, "node tests/js/viewer_modes.mjs %s longskirt skirt", s.url);
    int stop = tu_draped_stop(&s);
    cr_assert_eq(rc, 0, "%s", out);
    cr_log_info("%s", out);
    cr_assert_eq(stop, 0);
}
