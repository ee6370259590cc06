/* `make bench`: module A per-frame latency at batch 1 and 32 and module B per
 * identity, for each bundle given, on the CPU backend; in the same run the
 * same bundle through the PyTorch reference (train/bench_ref.py) with the same
 * thread count; prints a table with the ratios.
 *
 *   drape_bench BUNDLE...      env: DRAPE_BENCH_THREADS (default: all cores),
 *                                   DRAPE_PYTHON (default /usr/bin/python3)
 *
 * `drape_bench --pose-cost BUNDLE GARMENT|all`: what a frame costs at the
 * pose validator's limits against a calm frame of the same garment, one
 * frame at a time through the whole pipeline (module A and the refine
 * step); the peer is the calm frame, measured in the same run, alternating
 * (make bench: every garment with a network).
 *
 * `drape_bench --contention BUNDLE MODEL DRAPED DRAPE`: module A at batch 1,
 * C against PyTorch interleaved, next to neighbours the benchmark starts and
 * stops itself (bench_contention.c). */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench_contention.h"
#include "bench_util.h"
#include "../core/simd.h"
#include "../runtime/backend.h"
#include "../runtime/model.h"
#include "../runtime/omp_env.h"
#include "../runtime/sequence.h"

#define MAXB 32

typedef struct {
    double a1, a32, b; /* ms per frame at batch 1, at batch 32; ms per identity */
} figures;

/* Repeats fn until `budget_ms` is spent (at least min_reps), median in ms. */
static double time_module_a(drape_backend *be, drape_frame *fr, int n, double budget_ms, int min_reps)
{
    double t[200];
    int reps = 0;
    double start = now_ms();
    drape_error e = {0};
    do {
        double t0 = now_ms();
        if (drape_backend_run(be, fr, n, &e)) { fprintf(stderr, "bench: %s\n", e.msg); exit(1); }
        t[reps++] = now_ms() - t0;
    } while (reps < 200 && (reps < min_reps || now_ms() - start < budget_ms));
    return median(t, reps);
}

static int bench_c(const char *path, int threads, figures *f, int *reps_b)
{
    drape_model *m;
    drape_error e = {0};
    if (drape_model_load(&m, path, &e)) { fprintf(stderr, "bench: %s\n", e.msg); return 1; }
    drape_backend *be;
    drape_backend_opts o = {.threads = threads};
    if (drape_backend_create(&be, "cpu", m, &o, &e)) { fprintf(stderr, "bench: %s\n", e.msg); return 1; }
    int paper = m->cfg.uv_h >= 512;
    *reps_b = paper ? 2 : 5;
    unsigned s = 1;
    /* module B: fresh identities (distinct betas), median time, after one
     * untimed (the first call pays first-touch and the BLAS threads' start,
     * as train/bench_ref.py warms up before it times). All of the skirt
     * (garment 0), as the PyTorch peer times */
    drape_identity *ids[8] = {0};
    double tb[8];
    {
        drape_identity *warm;
        float betas[4] = {0.5f, -0.5f, 0, 0};
        if (drape_identity_create(be, &warm, 0, betas, 4, &e)) { fprintf(stderr, "bench: %s\n", e.msg); return 1; }
        drape_identity_free(be, warm);
    }
    for (int i = 0; i < *reps_b; i++) {
        float betas[4] = {rnd(&s) * 2, rnd(&s) * 2, rnd(&s) * 2, rnd(&s) * 2};
        double t0 = now_ms();
        if (drape_identity_create(be, &ids[i], 0, betas, 4, &e)) {
            fprintf(stderr, "bench: %s\n", e.msg);
            return 1;
        }
        tb[i] = now_ms() - t0;
    }
    f->b = median(tb, *reps_b);
    /* module A: MAXB avatars over those identities, each with its own poses */
    static float poses[MAXB][DRAPE_MAX_HISTORY][75];
    drape_frame fr[MAXB];
    float *out[MAXB];
    for (int a = 0; a < MAXB; a++) {
        for (int k = 0; k < m->cfg.n_hist; k++)
            for (int i = 0; i < 75; i++) poses[a][k][i] = 0.3f * rnd(&s);
        fr[a] = (drape_frame){.id = ids[a % *reps_b]};
        for (int k = 0; k < m->cfg.n_hist; k++) {
            fr[a].pose[k] = poses[a][k];
            fr[a].trans[k] = poses[a][k] + 72;
        }
        out[a] = malloc(sizeof(float) * 3 * m->garments[drape_identity_garment(fr[a].id)].V);
        fr[a].out = out[a];
    }
    time_module_a(be, fr, 1, 0, 2); /* warm-up: first-touch of the maps, BLAS threads */
    f->a1 = time_module_a(be, fr, 1, paper ? 3000 : 2000, paper ? 3 : 20);
    time_module_a(be, fr, MAXB, 0, 1); /* warm-up at the batch's own size (its larger maps) */
    f->a32 = time_module_a(be, fr, MAXB, paper ? 0 : 3000, paper ? 1 : 3) / MAXB;
    for (int a = 0; a < MAXB; a++) free(out[a]);
    for (int i = 0; i < *reps_b; i++) drape_identity_free(be, ids[i]);
    drape_backend_free(be);
    drape_model_free(m);
    return 0;
}

static int bench_torch(const char *path, int threads, int paper, figures *f)
{
    const char *py = getenv("DRAPE_PYTHON");
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "%s train/bench_ref.py --model '%s' --garment skirt --threads %d --batches 1,%d --iters %d",
             py ? py : "/usr/bin/python3", path, threads, MAXB, paper ? 1 : 20);
    FILE *p = popen(cmd, "r");
    if (!p) return 1;
    char line[1024];
    f->a1 = f->a32 = f->b = NAN;
    while (fgets(line, sizeof line, p)) {
        json_t *o = json_loads(line, 0, NULL);
        if (!o) continue;
        const char *what = json_string_value(json_object_get(o, "what"));
        if (what && !strcmp(what, "moduleA")) {
            int b = (int)json_integer_value(json_object_get(o, "batch"));
            double ms = json_number_value(json_object_get(o, "ms_per_frame"));
            if (b == 1) f->a1 = ms;
            else if (b == MAXB) f->a32 = ms;
        } else if (what && !strcmp(what, "moduleB")) {
            f->b = json_number_value(json_object_get(o, "ms_per_identity"));
        }
        json_decref(o);
    }
    return pclose(p) != 0;
}

/* ms per frame of T frames of poses [T,75] run one at a time */
static double per_frame(drape_backend *be, const drape_identity *id, const float *poses, int T, float *out)
{
    drape_error e = {0};
    double t0 = now_ms();
    if (drape_sequence_run(be, id, poses, T, 0, out, 1, &e)) { fprintf(stderr, "bench: %s\n", e.msg); exit(1); }
    return (now_ms() - t0) / T;
}

/* calm: small random joint angles near the origin; at the limits: every
 * angle at ±DRAPE_POSE_MAX_ANGLE and the root jumping between ±DRAPE_POSE_MAX_TRANS
 * each frame (issue 35's stalling client, brought inside the limits). The
 * two alternate, three runs each, medians compared; per garment, or every
 * garment with "all". The per-frame bound is the pose fuzzer's (make fuzz):
 * this is the sustained cost of a stream of such frames. */
static int pose_cost_one(const drape_model *m, drape_backend *be, int g, int *met);

static int pose_cost(const char *path, const char *garment, int threads)
{
    drape_model *m;
    drape_backend *be;
    drape_error e = {0};
    drape_backend_opts o = {.threads = threads};
    if (drape_model_load(&m, path, &e) || drape_backend_create(&be, "cpu", m, &o, &e)) {
        fprintf(stderr, "bench: %s\n", e.msg);
        return 1;
    }
    int all = !strcmp(garment, "all"), g0 = all ? 0 : drape_model_garment(m, garment), rc = 0, met = 1;
    if (g0 < 0) {
        fprintf(stderr, "bench: garment '%s' is not in %s\n", garment, path);
        return 1;
    }
    printf("| garment | refined | calm frame (ms) | frame at the limits (ms) | limits / calm |\n|---|---|---:|---:|---:|\n");
    for (int g = g0; g < (all ? m->cfg.n_garments : g0 + 1) && !rc; g++)
        if (!m->cfg.untrained[g]) rc = pose_cost_one(m, be, g, &met);
    printf("\ngoal: a frame at the pose limits costs at most 6x a calm frame: %s\n", met ? "met" : "NOT met");
    drape_backend_free(be);
    drape_model_free(m);
    return rc;
}

static int pose_cost_one(const drape_model *m, drape_backend *be, int g, int *met)
{
    enum { T = 40, MULTIPLE = 6 };
    drape_identity *id;
    drape_error e = {0};
    if (drape_identity_create(be, &id, g, NULL, 0, &e)) {
        fprintf(stderr, "bench: garment '%s': %s\n", m->garments[g].name, e.msg);
        return 1;
    }
    static float calm[T * DRAPE_FRAME_FLOATS], wild[T * DRAPE_FRAME_FLOATS];
    unsigned s = 7;
    for (int t = 0; t < T; t++)
        for (int i = 0; i < DRAPE_FRAME_FLOATS; i++) {
            float *c = calm + t * DRAPE_FRAME_FLOATS + i, *w = wild + t * DRAPE_FRAME_FLOATS + i;
            *c = i < 72 ? 0.3f * rnd(&s) : 0.0f;
            *w = i < 72 ? (rnd(&s) < 0 ? -1 : 1) * (float)DRAPE_POSE_MAX_ANGLE
                        : ((t + i) % 2 ? 1 : -1) * (float)DRAPE_POSE_MAX_TRANS;
        }
    if (drape_poses_check(wild, T, NULL, &e)) { fprintf(stderr, "bench: %s\n", e.msg); return 1; }
    float *out = malloc(sizeof(float) * 3 * (size_t)m->garments[g].V * T);
    double tc[3], tw[3];
    int finite = 1;
    for (int r = 0; r < 3; r++) {
        tc[r] = per_frame(be, id, calm, T, out);
        tw[r] = per_frame(be, id, wild, T, out);
        for (size_t i = 0; i < 3 * (size_t)m->garments[g].V * T; i++) finite &= isfinite(out[i]) != 0;
    }
    double c = median(tc, 3), w = median(tw, 3);
    *met &= w <= MULTIPLE * c;
    printf("| %s | %s | %.2f | %.2f | %.2fx%s |\n", m->garments[g].name, m->cfg.refine[g].iters > 0 ? "yes" : "no", c,
           w, w / c, finite ? "" : " (output NOT finite)");
    free(out);
    drape_identity_free(be, id);
    return !finite;
}

int main(int argc, char **argv)
{
    if (argc == 2 && !strcmp(argv[1], "--neighbour-omp")) return bench_neighbour_omp();
    drape_blas_threads_init();
    if (argc == 6 && !strcmp(argv[1], "--contention")) return bench_contention(argv[2], argv[3], argv[4], argv[5]);
    if (argc == 4 && !strcmp(argv[1], "--pose-cost")) {
        int threads = getenv("DRAPE_BENCH_THREADS") ? atoi(getenv("DRAPE_BENCH_THREADS")) : 1;
        return pose_cost(argv[2], argv[3], threads);
    }
    if (argc < 2) {
        fprintf(stderr, "usage: drape_bench BUNDLE...\n");
        return 2;
    }
    setvbuf(stdout, NULL, _IOLBF, 0); /* rows appear as they are measured */
    int threads = getenv("DRAPE_BENCH_THREADS") ? atoi(getenv("DRAPE_BENCH_THREADS")) : (int)sysconf(_SC_NPROCESSORS_ONLN);
    printf("threads: %d (OpenMP for C, torch.set_num_threads for PyTorch); the C loops' cpu build: %s (core/simd.h)\n\n",
           threads, drape_simd_build());
    printf("| config | measure | C runtime (ms) | PyTorch (ms) | PyTorch / C |\n");
    printf("|---|---|---:|---:|---:|\n");
    int fail = 0, goal_met = -1, goal32 = -1;
    for (int i = 1; i < argc; i++) {
        figures c = {0}, t = {NAN, NAN, NAN};
        int reps_b;
        drape_model *m;
        drape_error e = {0};
        if (drape_model_load(&m, argv[i], &e)) { fprintf(stderr, "bench: %s\n", e.msg); return 1; }
        int paper = m->cfg.uv_h >= 512;
        char name[160];
        snprintf(name, sizeof name, "%s (uv %d, conv %d layers, B %d, V %d)", paper ? "paper" : "small", m->cfg.uv_w,
                 m->cfg.n_conv, m->cfg.bones, m->garments[0].V);
        drape_model_free(m);
        if (bench_c(argv[i], threads, &c, &reps_b)) return 1;
        if (bench_torch(argv[i], threads, paper, &t)) {
            fprintf(stderr, "bench: the PyTorch peer failed\n");
            fail = 1;
        }
        const char *what[3] = {"module A per frame, batch 1", "module A per frame, batch 32", "module B per identity"};
        double cv[3] = {c.a1, c.a32, c.b}, tv[3] = {t.a1, t.a32, t.b};
        for (int k = 0; k < 3; k++)
            printf("| %s | %s | %.2f | %.2f | %.2fx |\n", name, what[k], cv[k], tv[k], tv[k] / cv[k]);
        if (!paper) {
            goal_met = t.a1 / c.a1 >= 1.5;
            goal32 = t.a32 / c.a32 >= 1.0;
        }
    }
    if (goal_met >= 0)
        printf("\ngoal (small config): C >= 1.5x PyTorch at batch 1: %s; no slower at batch 32: %s\n",
               goal_met ? "met" : "NOT met", goal32 ? "met" : "NOT met");
    return fail;
}
