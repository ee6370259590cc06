/* `make bench`: module A per-frame latency at batch 1 and 32 and module B per
 * identity, for each bundle given, on the CPU backend; in the same run the
 * same bundle through the PyTorch reference (train/bench_ref.py) with the same
 * thread count; prints a table with the ratios.
 *
 *   drape_bench BUNDLE...      env: DRAPE_BENCH_THREADS (default: all cores),
 *                                   DRAPE_PYTHON (default /usr/bin/python3) */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench_util.h"
#include "../runtime/backend.h"
#include "../runtime/model.h"
#include "../runtime/omp_env.h"

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
    /* module B: fresh identities (distinct betas), median time */
    drape_identity *ids[8] = {0};
    double tb[8];
    for (int i = 0; i < *reps_b; i++) {
        float betas[4] = {rnd(&s) * 2, rnd(&s) * 2, rnd(&s) * 2, rnd(&s) * 2};
        double t0 = now_ms();
        if (drape_identity_create(be, &ids[i], i % m->cfg.n_garments, betas, 4, &e)) {
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

int main(int argc, char **argv)
{
    drape_blas_threads_init();
    if (argc < 2) {
        fprintf(stderr, "usage: drape_bench BUNDLE...\n");
        return 2;
    }
    setvbuf(stdout, NULL, _IOLBF, 0); /* rows appear as they are measured */
    int threads = getenv("DRAPE_BENCH_THREADS") ? atoi(getenv("DRAPE_BENCH_THREADS")) : (int)sysconf(_SC_NPROCESSORS_ONLN);
    printf("threads: %d (OpenMP for C, torch.set_num_threads for PyTorch)\n\n", threads);
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
