/* `drape garment add`: a garment of one's own into a bundle (docs/garments.md).
 *   drape garment add --model IN.safetensors --mesh G.obj|G.glb --name NAME --out OUT.safetensors
 *                     [--attach waist|shoulders|FILE] [--band 0.01] [--shoulder-band 0.06]
 *                     [--max-distance 0.5] [--max-nonmanifold 0.001] [--max-uv-overlap 0.01]
 * Reads the mesh (runtime/garment_mesh.h), judges it (each refusal names what
 * is wrong and the tolerance it broke), makes its rig as the built-in
 * garments' is made (runtime/rig.h), and writes the input bundle
 * with the garment added: its tensors, its name appended to the config's
 * `garments` and listed in `untrained` (no network was trained for it: it
 * runs in lbs and physics modes). The new bundle is loaded back before it
 * replaces OUT. */
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../runtime/garment_mesh.h"
#include "../runtime/rig.h"
#include "../runtime/safetensors.h"
#include "tools.h"

/* The most vertices an added garment may have. The bundle format takes up
 * to 4,194,304 (runtime/model.c), but every served frame carries them all (a
 * f32 frame of 65,536 vertices is 768 KiB) and the physics mode factorizes
 * the garment's cloth per identity; the built-in garments have about 2,000. */
#define GARMENT_MAX_VERTICES 65536
#define GARMENT_MAX_ATTACH_BYTES (16u << 20)
#define DEGENERATE_AREA 1e-12 /* m²: a face smaller than this is refused */

typedef struct {
    const char *model, *mesh, *name, *out, *attach;
    double band, shoulder_band, max_distance, max_nonmanifold, max_uv_overlap;
} add_opts;
static const drape_opt add_opts_table[] = {
    DRAPE_OPT_P(add_opts, model, "model", "IN.safetensors", DRAPE_OPT_REQUIRED, "the bundle the garment is added to"),
    DRAPE_OPT_P(add_opts, mesh, "mesh", "G.obj|G.glb", DRAPE_OPT_REQUIRED,
                "the garment: a triangle mesh with a UV atlas, on the bundle's rest body (beta 0, T-pose), meters, y up"),
    DRAPE_OPT_S(add_opts, name, "name", NULL, "NAME", DRAPE_OPT_REQUIRED,
                "the garment's name: 1-63 characters of A-Z a-z 0-9 _ -, not already in the bundle"),
    DRAPE_OPT_P(add_opts, out, "out", "OUT.safetensors", DRAPE_OPT_REQUIRED, "the new bundle (may be IN itself)"),
    DRAPE_OPT_S(add_opts, attach, "attach", "waist", "waist|shoulders|FILE", 0,
                "the vertices the simulator holds: waist (within --band of the top), shoulders (those resting on "
                "the shoulders), or a file of 0-based vertex indices"),
    DRAPE_OPT_D(add_opts, band, "band", "0.01", 0, 1, "M", DRAPE_OPT_GT_MIN, "--attach waist: meters below the top"),
    DRAPE_OPT_D(add_opts, shoulder_band, "shoulder-band", "0.06", 0, 0.2, "M", DRAPE_OPT_GT_MIN,
                "--attach shoulders: meters from the body's surface"),
    DRAPE_OPT_D(add_opts, max_distance, "max-distance", "0.5", 0, 2, "M", DRAPE_OPT_GT_MIN,
                "refuse a mesh with a vertex farther than this from the rest body's surface"),
    DRAPE_OPT_D(add_opts, max_nonmanifold, "max-nonmanifold", "0.001", 0, 1, "FRACTION", 0,
                "refuse a mesh with more than this share of its edges in three or more faces"),
    DRAPE_OPT_D(add_opts, max_uv_overlap, "max-uv-overlap", "0.01", 0, 1, "FRACTION", 0,
                "refuse an atlas with more than this share of its covered texels inside two charts (at the "
                "bundle's UV size)"),
};
static const drape_cmd_spec add_spec = {
    "garment add",
    "Adds a garment (an OBJ or GLB mesh with UVs) to a bundle: makes its rig and attach set, and lists it as "
    "untrained (lbs and physics modes until its network is trained).",
    NULL, 0, add_opts_table, sizeof add_opts_table / sizeof *add_opts_table,
};

/* one line to stderr, "drape garment add: ..."; returns 1 (the exit status) */
static int FAIL(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int FAIL(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("drape garment add: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    return 1;
}

static int name_ok(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n >= DRAPE_NAME_MAX) return 0;
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= '0' && s[i] <= '9') ||
              s[i] == '_' || s[i] == '-'))
            return 0;
    return 1;
}

/* FILE: vertex indices separated by white space or commas; '#' starts a
 * comment. Sorted and deduplicated into *out. */
static int read_attach_file(const char *path, int V, int32_t **out, int *n)
{
    *out = NULL, *n = 0;
    FILE *f = fopen(path, "r");
    if (!f) return FAIL("--attach %s: cannot open it: %s (waist, shoulders or a file of vertex indices)", path, strerror(errno));
    char *seen = calloc((size_t)V, 1);
    int rc = 0, c, line = 1;
    long long val = -1;
    size_t bytes = 0;
    if (!seen) { fclose(f); return FAIL("out of memory"); }
    for (;;) {
        c = fgetc(f);
        if (++bytes > GARMENT_MAX_ATTACH_BYTES) { rc = FAIL("--attach %s: over %u bytes", path, GARMENT_MAX_ATTACH_BYTES); break; }
        if (c >= '0' && c <= '9') {
            val = (val < 0 ? 0 : val) * 10 + (c - '0');
            if (val > 1000000000000LL) val = 1000000000000LL; /* past any mesh; no overflow */
            continue;
        }
        if (val >= V) { rc = FAIL("--attach %s:%d: vertex %lld is not in the mesh (%d vertices)", path, line, val, V); break; }
        if (val >= 0) seen[val] = 1, val = -1;
        if (c == EOF) break;
        if (c == '#') {
            while ((c = fgetc(f)) != EOF && c != '\n') bytes++;
            if (c == EOF) break;
        }
        if (c == '\n') line++;
        else if (c != ' ' && c != '\t' && c != ',' && c != '\r') {
            char what[16];
            snprintf(what, sizeof what, c > 0x20 && c < 0x7f ? "'%c'" : "byte 0x%02x", c);
            rc = FAIL("--attach %s:%d: %s is not part of a vertex index (0-based integers separated by spaces, "
                      "commas or new lines)", path, line, what);
            break;
        }
    }
    fclose(f);
    if (!rc) {
        *out = malloc(sizeof **out * (size_t)V);
        if (!*out) rc = FAIL("out of memory");
        for (int v = 0; !rc && v < V; v++)
            if (seen[v]) (*out)[(*n)++] = v;
    }
    free(seen);
    return rc;
}

/* The mesh's judgement, before anything is made from it; 0 or 1 after the message. */
static int judge(const add_opts *o, const drape_model *m, const drape_gmesh *g)
{
    const drape_config *c = &m->cfg;
    if (!g->Nuv)
        return FAIL("%s: no UVs: the garment needs a UV atlas (OBJ 'vt' on every face corner, glTF TEXCOORD_0)", o->mesh);
    if (g->V > GARMENT_MAX_VERTICES)
        return FAIL("%s: %d vertices, over the %d a garment may have", o->mesh, g->V, GARMENT_MAX_VERTICES);
    if (g->V < c->bones)
        return FAIL("%s: %d vertices, fewer than the bundle's %d virtual bones", o->mesh, g->V, c->bones);
    char *used = calloc((size_t)g->V, 1);
    if (!used) return FAIL("out of memory");
    for (int f = 0; f < g->F; f++) {
        const int32_t *t = g->faces + 3 * f;
        for (int k = 0; k < 3; k++) used[t[k]] = 1;
        const float *a = g->v + 3 * t[0], *b = g->v + 3 * t[1], *d = g->v + 3 * t[2];
        double e1[3], e2[3];
        for (int k = 0; k < 3; k++) e1[k] = (double)b[k] - a[k], e2[k] = (double)d[k] - a[k];
        double cx = e1[1] * e2[2] - e1[2] * e2[1], cy = e1[2] * e2[0] - e1[0] * e2[2], cz = e1[0] * e2[1] - e1[1] * e2[0];
        double area = 0.5 * sqrt(cx * cx + cy * cy + cz * cz);
        if (t[0] == t[1] || t[1] == t[2] || t[0] == t[2] || !(area >= DEGENERATE_AREA)) {
            free(used);
            return FAIL("%s: face %d (vertices %d, %d, %d) is degenerate: area %.3g m², under %g", o->mesh, f, t[0], t[1],
                        t[2], area, DEGENERATE_AREA);
        }
    }
    for (int v = 0; v < g->V; v++)
        if (!used[v]) {
            free(used);
            return FAIL("%s: vertex %d is in no face (remove loose vertices)", o->mesh, v);
        }
    free(used);
    for (int i = 0; i < 2 * g->Nuv; i++)
        if (!(g->uv[i] >= 0 && g->uv[i] <= 1))
            return FAIL("%s: UV %d = (%g, %g) is outside [0, 1]: the atlas must lie in the unit square", o->mesh, i / 2,
                        g->uv[i & ~1], g->uv[i | 1]);
    int n_edges = 0, bad = drape_rig_nonmanifold(g->faces, g->F, &n_edges);
    if (bad < 0) return FAIL("out of memory");
    if (bad > o->max_nonmanifold * n_edges)
        return FAIL("%s: %d of %d edges are non-manifold (in three or more faces), over the tolerance of %g%% "
                    "(--max-nonmanifold %g)", o->mesh, bad, n_edges, 100 * o->max_nonmanifold, o->max_nonmanifold);
    int64_t covered = 0, twice = 0;
    if (drape_rig_uv_overlap(g->uv, g->uv_faces, g->F, c->uv_h, c->uv_w, &covered, &twice)) return FAIL("out of memory");
    if (!covered)
        return FAIL("%s: the UV atlas covers no texel of the bundle's %d x %d raster", o->mesh, c->uv_h, c->uv_w);
    if (twice > o->max_uv_overlap * covered)
        return FAIL("%s: UV charts overlap: %lld of %lld covered texels (%.2f%%) at %d x %d lie inside two faces, over "
                    "the tolerance of %g%% (--max-uv-overlap %g)", o->mesh, (long long)twice, (long long)covered,
                    100.0 * twice / covered, c->uv_h, c->uv_w, 100 * o->max_uv_overlap, o->max_uv_overlap);
    double *dist = malloc(sizeof *dist * (size_t)g->V);
    if (!dist || drape_rig_body_distance(dist, g->v, g->V, m->v_template, m->Nb, m->body_faces, m->Fb)) {
        free(dist);
        return FAIL("out of memory");
    }
    int far = 0;
    double mean = 0;
    for (int v = 0; v < g->V; v++) {
        mean += dist[v] / g->V;
        if (dist[v] > dist[far]) far = v;
    }
    double worst = dist[far];
    free(dist);
    if (worst > o->max_distance)
        return FAIL("%s: too far from the body: vertex %d (%.3f, %.3f, %.3f) is %.3f m from the rest body's surface, over "
                    "%g m (--max-distance; mean %.3f m). The mesh must be modelled on the bundle's rest body (beta 0, "
                    "T-pose), in meters, y up", o->mesh, far, g->v[3 * far], g->v[3 * far + 1], g->v[3 * far + 2], worst,
                    o->max_distance, mean);
    printf("mesh       %d vertices, %d faces, %d UVs; %d edges, %d non-manifold; %lld texels covered, %lld overlapped; "
           "distance to the body: mean %.3f m, max %.3f m\n", g->V, g->F, g->Nuv, n_edges, bad, (long long)covered,
           (long long)twice, mean, worst);
    return 0;
}

/* The input's drape.config with the garment appended and listed untrained. */
static char *new_config(const char *text, const char *name)
{
    json_t *o = json_loads(text, JSON_REJECT_DUPLICATES, NULL), *u;
    if (!o) return NULL;
    json_array_append_new(json_object_get(o, "garments"), json_string(name));
    if (!json_is_array(u = json_object_get(o, "untrained"))) json_object_set_new(o, "untrained", u = json_array());
    json_array_append_new(u, json_string(name));
    char *s = json_dumps(o, JSON_PRESERVE_ORDER);
    json_decref(o);
    return s;
}

static int write_bundle(const add_opts *o, const drape_st *in, const drape_gmesh *g, const drape_rig *r,
                        const int32_t *attach, int n_attach, const char *tmp, drape_error *e)
{
    drape_st_writer *w = drape_st_writer_new();
    if (!w) return drape_fail(e, DRAPE_ENOMEM, "out of memory");
    int rc = DRAPE_OK;
    for (int i = 0; !rc && i < drape_st_count(in); i++) {
        const drape_tensor *t = drape_st_at(in, i);
        rc = drape_st_writer_add(w, t->name, t->dtype, t->ndim, t->shape, t->data);
    }
    const char *key;
    for (int i = 0; !rc && (key = drape_st_meta_key(in, i)); i++) {
        if (!strcmp(key, "drape.config")) {
            char *cfg = new_config(drape_st_meta(in, key), o->name);
            rc = cfg ? drape_st_writer_meta(w, key, cfg) : DRAPE_ENOMEM;
            free(cfg);
        } else {
            rc = drape_st_writer_meta(w, key, drape_st_meta(in, key));
        }
    }
    int64_t V = g->V, F = g->F, B = r->B, k = r->k;
    char n[DRAPE_NAME_MAX + 32];
#define ADD(field, dt, nd, data, ...)                                                                       \
    if (!rc) {                                                                                              \
        snprintf(n, sizeof n, "garment.%s." field, o->name);                                               \
        rc = drape_st_writer_add(w, n, dt, nd, (const int64_t[]){__VA_ARGS__}, data);                       \
    }
    ADD("rest", DRAPE_DT_F32, 2, g->v, V, 3)
    ADD("faces", DRAPE_DT_I32, 2, g->faces, F, 3)
    ADD("uv", DRAPE_DT_F32, 2, g->uv, g->Nuv, 2)
    ADD("uv_faces", DRAPE_DT_I32, 2, g->uv_faces, F, 3)
    ADD("bones", DRAPE_DT_F32, 2, r->bones, B, 3)
    ADD("bone_joint_w", DRAPE_DT_F32, 2, r->bone_joint_w, B, DRAPE_JOINTS)
    ADD("skin_idx", DRAPE_DT_I32, 2, r->skin_idx, V, k)
    ADD("skin_w0", DRAPE_DT_F32, 2, r->skin_w0, V, k)
    ADD("body_nn", DRAPE_DT_I32, 1, r->body_nn, V)
    ADD("bone_body_nn", DRAPE_DT_I32, 1, r->bone_body_nn, B)
    ADD("attach", DRAPE_DT_I32, 1, attach, n_attach)
#undef ADD
    if (rc) drape_fail(e, rc, "out of memory");
    else rc = drape_st_writer_save(w, tmp, e);
    drape_st_writer_free(w);
    return rc;
}

static int cmd_add(int argc, char **argv)
{
    add_opts o = {0};
    int rc = drape_opts_parse(&add_spec, &o, argc, argv);
    if (rc) return drape_opts_status(rc);
    if (!name_ok(o.name))
        return FAIL("--name '%s': a garment's name is 1-%d characters of A-Z a-z 0-9 _ -", o.name, DRAPE_NAME_MAX - 1);
    drape_error e = {0};
    drape_model *m = NULL, *check = NULL;
    drape_st *in = NULL;
    drape_gmesh g = {0};
    drape_rig r = {0};
    int32_t *attach = NULL;
    int n_attach = 0;
    char tmp[4096] = "";
    rc = 1;
    if (drape_model_load(&m, o.model, &e)) { drape_tool_die("garment add", &e); goto done; }
    const drape_config *c = &m->cfg;
    if (drape_model_garment(m, o.name) >= 0) {
        FAIL("--name %s: the bundle already has a garment of that name", o.name);
        goto done;
    }
    if (c->n_garments >= DRAPE_MAX_GARMENTS) {
        FAIL("%s: the bundle already has %d garments, the most a bundle may have", o.model, c->n_garments);
        goto done;
    }
    if (drape_gmesh_read(&g, o.mesh, &e)) { drape_tool_die("garment add", &e); goto done; }
    if (judge(&o, m, &g)) goto done;
    const char *how = o.attach;
    if (!strcmp(o.attach, "waist")) {
        if (drape_rig_attach_top(&attach, &n_attach, g.v, g.V, o.band)) { FAIL("out of memory"); goto done; }
    } else if (!strcmp(o.attach, "shoulders")) {
        if (drape_rig_attach_shoulders(&attach, &n_attach, g.v, g.V, m->v_template, m->J_regressor, m->Nb,
                                           m->body_faces, m->Fb, o.shoulder_band)) {
            FAIL("out of memory");
            goto done;
        }
        if (!n_attach) {
            FAIL("--attach shoulders: no vertex of %s lies within %g m of the body's shoulders (--shoulder-band); use "
                 "--attach waist or a file of vertex indices", o.mesh, o.shoulder_band);
            goto done;
        }
    } else {
        how = "file";
        if (read_attach_file(o.attach, g.V, &attach, &n_attach)) goto done;
        if (!n_attach) { FAIL("--attach %s: lists no vertex", o.attach); goto done; }
    }
    if (drape_rig_make(&r, g.v, g.V, g.faces, g.F, m->v_template, m->weights, m->Nb, c->bones, c->skin_k,
                               DRAPE_RIG_SIGMA, &e)) {
        drape_tool_die("garment add", &e);
        goto done;
    }
    if (drape_st_open(&in, o.model, &e)) { drape_tool_die("garment add", &e); goto done; }
    char prefix[DRAPE_NAME_MAX + 16];
    snprintf(prefix, sizeof prefix, "garment.%s.", o.name);
    for (int i = 0; i < drape_st_count(in); i++) /* a tensor left over under that name: ours would clash */
        if (!strncmp(drape_st_at(in, i)->name, prefix, strlen(prefix))) {
            FAIL("--name %s: %s already holds a tensor '%s' (not a garment of its config); remove it or choose "
                 "another name", o.name, o.model, drape_st_at(in, i)->name);
            goto done;
        }
    /* written beside OUT, loaded back, then renamed over it: OUT is whole or untouched */
    snprintf(tmp, sizeof tmp, "%s.tmp-%ld", o.out, (long)getpid());
    if (write_bundle(&o, in, &g, &r, attach, n_attach, tmp, &e)) { drape_tool_die("garment add", &e); goto done; }
    if (drape_model_load(&check, tmp, &e)) {
        drape_tool_die("garment add", &e);
        goto done;
    }
    if (rename(tmp, o.out)) {
        FAIL("cannot write %s: %s", o.out, strerror(errno));
        goto done;
    }
    tmp[0] = 0;
    printf("rig        %d bones, skin_k %d, W0 sigma %g m; %d vertices attached (%s)\n", c->bones, c->skin_k,
           DRAPE_RIG_SIGMA, n_attach, how);
    printf("wrote      %s: garment '%s' added (untrained: modes lbs, physics)\n", o.out, o.name);
    rc = 0;
done:
    if (tmp[0]) remove(tmp);
    drape_model_free(check);
    drape_st_free(in);
    drape_rig_free(&r);
    drape_gmesh_free(&g);
    free(attach);
    drape_model_free(m);
    return rc;
}

static const drape_subcmd garment_commands[] = {
    {"add", "a garment of one's own (an OBJ or GLB mesh with UVs) into a bundle", cmd_add},
};

int drape_cmd_garment(int argc, char **argv)
{
    return drape_subcmd_run("drape garment", garment_commands, sizeof garment_commands / sizeof *garment_commands,
                            argc, argv);
}
