/* Issue 32 §2 end to end: a garment made here (a long skirt, as an OBJ on
 * the shipped model's rest body) goes through `drape garment add`, streams
 * in physics mode from a real draped (neural refused: no network yet), gets
 * a network from a short run of train/recipes/garment.toml, and the new
 * bundle streams it in neural mode over a real WebSocket: finite, and not
 * plain skinning. */
#include <criterion/criterion.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../proto/client.h"
#include "../proto/errors.h"
#include "../proto/pack.h"
#include "util.h"

#define OUT 65536
static char out[OUT];
static const char *MODEL = "models/default.safetensors";
#define GARMENT "longskirt"

static const char *py(void) { return getenv("DRAPE_PYTHON") ? getenv("DRAPE_PYTHON") : "/usr/bin/python3"; }
static const char *bin(void) { return getenv("DRAPE_BIN") ? getenv("DRAPE_BIN") : "build/drape"; }

/* A long skirt as a tube of RINGS x COLS vertices from the waist (1.00 m)
 * to the shins (0.30 m), around the rest body: each ring 3 cm outside the
 * widest body vertex near its height and never narrower than the ring
 * above (it hangs), flaring out a little; its atlas the tube cut open
 * along one seam. Written as OBJ to PATH. */
#define RINGS 22
#define COLS 40
static void write_long_skirt(const char *path)
{
    drape_model *m = tu_load(MODEL);
    double cz = 0;
    int n = 0;
    for (int i = 0; i < m->Nb; i++)
        if (fabsf(m->v_template[3 * i + 1] - 1.0f) < 0.05f) cz += m->v_template[3 * i + 2], n++;
    cr_assert_gt(n, 0, "no body vertex at the waist");
    cz /= n;
    double r[RINGS], prev = 0;
    for (int j = 0; j < RINGS; j++) {
        double y = 1.00 - 0.70 * j / (RINGS - 1), widest = 0;
        for (int i = 0; i < m->Nb; i++) {
            const float *v = m->v_template + 3 * i;
            if (fabs(v[1] - y) < 0.03) widest = fmax(widest, hypot(v[0], v[2] - cz));
        }
        r[j] = prev = fmax(widest + 0.03, prev) + (j ? 0.004 : 0);
    }
    drape_model_free(m);
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f, "%s", path);
    fprintf(f, "# a long skirt made by tests/test_garment_train.c\n");
    for (int j = 0; j < RINGS; j++)
        for (int i = 0; i < COLS; i++) {
            double a = 2 * M_PI * i / COLS;
            fprintf(f, "v %.5f %.5f %.5f\n", r[j] * sin(a), 1.00 - 0.70 * j / (RINGS - 1), cz + r[j] * cos(a));
        }
    for (int j = 0; j < RINGS; j++) /* COLS + 1 columns of UVs: the seam's are two */
        for (int i = 0; i <= COLS; i++) fprintf(f, "vt %.5f %.5f\n", 0.02 + 0.96 * i / COLS, 0.98 - 0.96 * j / (RINGS - 1));
    for (int j = 0; j + 1 < RINGS; j++)
        for (int i = 0; i < COLS; i++) {
            int a = j * COLS + i + 1, b = j * COLS + (i + 1) % COLS + 1, c = a + COLS, d = b + COLS; /* 1-based */
            int ta = j * (COLS + 1) + i + 1, tb = ta + 1, tc = ta + COLS + 1, td = tc + 1;
            fprintf(f, "f %d/%d %d/%d %d/%d\nf %d/%d %d/%d %d/%d\n", a, ta, c, tc, d, td, a, ta, d, td, b, tb);
        }
    fclose(f);
}

/* GET /v1/model's "garment_modes" and "networks" of GARMENT, as "modes|network" */
static const char *modes_of(const tu_server *s, char *buf, size_t cap)
{
    cr_assert_eq(tu_run(out, OUT, "curl -s -S '%s/v1/model'", s->url), 0, "%s", out);
    json_error_t je;
    json_t *j = json_loads(out, 0, &je);
    cr_assert_not_null(j, "/v1/model: %s\n%s", je.text, out);
    json_t *modes = json_object_get(json_object_get(j, "garment_modes"), GARMENT);
    const char *net = json_string_value(json_object_get(json_object_get(j, "networks"), GARMENT));
    cr_assert(json_is_array(modes) && net, "/v1/model has no modes or network for " GARMENT ":\n%s", out);
    size_t k = 0;
    buf[0] = 0;
    for (size_t i = 0; i < json_array_size(modes); i++)
        k += (size_t)snprintf(buf + k, cap - k, "%s%s", i ? "," : "", json_string_value(json_array_get(modes, i)));
    snprintf(buf + k, cap - k, "|%s", net);
    json_decref(j);
    return buf;
}

static drape_server_msg next_msg(drape_client *c, const char *op)
{
    drape_server_msg m;
    drape_error e = {0};
    int r = drape_client_recv(c, &m, 60000, &e);
    cr_assert_eq(r, 1, "recv: %d %s", r, e.msg);
    cr_assert_str_eq(m.op, op, "%s: %s %s", m.op, m.code, m.message);
    return m;
}

/* a slow walk on the spot, frame t */
static void walk_pose(int t, float pose[72], float trans[3])
{
    memset(pose, 0, 72 * sizeof *pose);
    double s = sin(0.25 * t);
    pose[3 * 1] = (float)(0.4 * s), pose[3 * 2] = (float)(-0.4 * s); /* hips */
    pose[3 * 4] = (float)(0.3 * (1 - cos(0.25 * t)));                 /* left knee */
    pose[3 * 16 + 2] = -1.1f, pose[3 * 17 + 2] = 1.1f;                 /* arms down */
    trans[0] = 0, trans[1] = 0, trans[2] = 0.01f * (float)t;
}

/* Opens one avatar per mode in MODES on one connection, streams FRAMES
 * poses of the walk to each and keeps the last frame of each in xyz[k]
 * (V vertices); every frame must be finite. */
static void stream(const tu_server *s, const int *modes, int n_modes, int frames, float **xyz, int *V)
{
    drape_client *c;
    drape_error e = {0};
    cr_assert_eq(drape_client_connect(&c, s->ws, NULL, &e), 0, "%s", e.msg);
    float betas[2] = {0.5f, -0.5f};
    for (int k = 0; k < n_modes; k++) {
        drape_avatar_key a = {0, (uint64_t)k + 1, ""};
        cr_assert_eq(drape_client_open(c, &a, NULL, GARMENT, betas, 2, DRAPE_FMT_F32, modes[k], &e), 0, "%s", e.msg);
        drape_server_msg m = next_msg(c, "opened");
        cr_assert_eq(m.mode, modes[k]);
        *V = m.vertices;
        drape_server_msg_clear(&m);
        xyz[k] = malloc(sizeof(float) * 3 * (size_t)*V);
        cr_assert_not_null(xyz[k]);
    }
    for (int t = 0; t < frames; t++)
        for (int k = 0; k < n_modes; k++) {
            drape_avatar_key a = {0, (uint64_t)k + 1, ""};
            float pose[72], trans[3];
            walk_pose(t, pose, trans);
            cr_assert_eq(drape_client_pose(c, &a, (uint64_t)t + 1, pose, trans, &e), 0, "%s", e.msg);
            drape_server_msg m = next_msg(c, "frame");
            cr_assert_eq(m.seq, (uint64_t)t + 1);
            cr_assert_eq(m.count, *V);
            cr_assert_eq(drape_client_decode(&m, xyz[k]), 0);
            drape_server_msg_clear(&m);
            for (int i = 0; i < 3 * *V; i++)
                cr_assert(isfinite(xyz[k][i]), "mode %d, frame %d: vertex %d is not finite", modes[k], t, i / 3);
        }
    drape_client_close(c, 2000);
}

/* mean distance between two frames of V vertices, m */
static double mean_dist(const float *a, const float *b, int V)
{
    double d = 0;
    for (int i = 0; i < V; i++)
        d += sqrt(pow(a[3 * i] - b[3 * i], 2) + pow(a[3 * i + 1] - b[3 * i + 1], 2) + pow(a[3 * i + 2] - b[3 * i + 2], 2));
    return d / V;
}

Test(garment_train, an_added_garment_streams_physics_then_neural_once_trained, .timeout = 600)
{
    char obj[300], added[300], trained[300], dir[300], buf[128];
    snprintf(obj, sizeof obj, "%s", tu_tmp("longskirt.obj"));
    snprintf(added, sizeof added, "%s", tu_tmp("added.safetensors"));
    snprintf(trained, sizeof trained, "%s", tu_tmp("trained.safetensors"));
    snprintf(dir, sizeof dir, "%s", tu_tmp("garment_stage"));
    write_long_skirt(obj);
    int rc = tu_run(out, OUT, "%s garment add --model %s --mesh %s --name " GARMENT " --out %s", bin(), MODEL, obj, added);
    cr_assert_eq(rc, 0, "garment add:\n%s", out);

    /* added: lbs and physics, not neural; physics frames flow */
    tu_server s = tu_draped_start(added, "");
    cr_assert_str_eq(modes_of(&s, buf, sizeof buf), "lbs,physics|untrained");
    float *xyz[2] = {0};
    int V = 0;
    stream(&s, (int[]){DRAPE_MODE_PHYSICS}, 1, 10, xyz, &V);
    cr_assert_eq(V, RINGS * COLS);
    free(xyz[0]);
    drape_client *c;
    drape_error e = {0};
    cr_assert_eq(drape_client_connect(&c, s.ws, NULL, &e), 0, "%s", e.msg);
    drape_avatar_key a = {0, 9, ""};
    cr_assert_eq(drape_client_open(c, &a, NULL, GARMENT, NULL, -1, DRAPE_FMT_F32, DRAPE_MODE_NEURAL, &e), 0, "%s", e.msg);
    drape_server_msg m = next_msg(c, "error");
    cr_assert_str_eq(m.code, drape_errcode_wire(DRAPE_EC_MODE_UNAVAILABLE), "%s", m.message);
    drape_server_msg_clear(&m);
    drape_client_close(c, 2000);
    cr_assert_eq(tu_draped_stop(&s), 0);
    /* make eval's list of garments to judge leaves it out, and says why */
    rc = tu_run(out, OUT, "%s train/eval.py --model %s --list-garments", py(), added);
    cr_assert(rc == 0 && strstr(out, "skirt,dress,tshirt\n") && strstr(out, "skipped " GARMENT ": no network trained"),
              "eval --list-garments:\n%s", out);

    /* the garment's stage, short: 1 s of walk from the teacher, a few steps of each fit */
    rc = tu_run(out, OUT,
                "%s train/recipe.py run train/recipes/garment.toml --dir %s --out %s --drape %s --set bundle=%s "
                "--set garment=" GARMENT " --set plan='--motions walk,spin --held-out spin --train-betas 1 "
                "--train-seeds 1 --seconds 1' --set steps=12 --set finetune_steps=6 --set fit_flags='--frames 2 "
                "--threads 2 --log-every 6'",
                py(), dir, trained, bin(), added);
    cr_assert(rc == 0 && strstr(out, "7 step(s) run"), "the garment's recipe:\n%s", out);
    /* trained: each fit lowers its loss on a fixed batch (train/train.py's
     * "fixed-batch loss before B after A", the same frames both times) */
    const char *p = strstr(out, "recipe: fit: runs");
    cr_assert(p, "%s", out);
    const char *steps[2] = {"recipe: fit: runs", "recipe: finetune: runs"};
    for (int k = 0; k < 2; k++) {
        const char *at = strstr(out, steps[k]), *l = at ? strstr(at, "fixed-batch loss before ") : NULL;
        double before = NAN, after = NAN;
        cr_assert(l && sscanf(l, "fixed-batch loss before %lf after %lf", &before, &after) == 2, "%s:\n%s", steps[k], out);
        cr_log_info("%s: fixed-batch loss %g -> %g", steps[k], before, after);
        cr_assert(isfinite(before) && isfinite(after) && after < before,
                  "%s: the fixed-batch loss did not fall (%g before, %g after)", steps[k], before, after);
    }
    rc = tu_run(out, OUT, "%s train/eval.py --model %s --list-garments", py(), trained);
    cr_assert(rc == 0 && strstr(out, "skirt,dress,tshirt," GARMENT) && !strstr(out, "skipped"), "%s", out);
    rc = tu_run(out, OUT, "%s info %s", bin(), trained);
    p = strstr(out, "\n  " GARMENT " ");
    cr_assert(rc == 0 && p, "drape info:\n%s", out);
    char line[512];
    snprintf(line, sizeof line, "%.*s", (int)strcspn(p + 1, "\n"), p + 1);
    cr_assert(strstr(line, "its own network") && strstr(line, "network trained (modes neural, lbs, physics)"),
              "drape info: %s", line);

    /* trained: neural too; its frames are finite and not skinning's */
    s = tu_draped_start(trained, "");
    cr_assert_str_eq(modes_of(&s, buf, sizeof buf), "neural,lbs,physics|trained");
    stream(&s, (int[]){DRAPE_MODE_NEURAL, DRAPE_MODE_LBS}, 2, 10, xyz, &V);
    double d = mean_dist(xyz[0], xyz[1], V);
    cr_log_info("neural vs lbs, the last frame: %.2f mm on average", 1000 * d);
    cr_assert_gt(d, 1e-4, "the trained network's frames are skinning's (%.3g m apart)", d);
    cr_assert_lt(d, 0.2, "the trained network's frames are far from the garment (%.3g m from skinning)", d);
    free(xyz[0]);
    free(xyz[1]);
    cr_assert_eq(tu_draped_stop(&s), 0);
}
