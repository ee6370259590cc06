/* `make gpu-check`'s benchmark: module A per frame at batch 1, 8, 32, 64 and
 * 256 and module B per identity, for each bundle, on the CUDA backend (FP32,
 * TF32, BF16, FP16), the CPU backend and the PyTorch reference on the same
 * GPU (train/bench_ref.py --device cuda, eager) in the same run; prints a
 * table with, per precision, the largest |CUDA − CPU| and |CUDA − CUDA FP32|
 * of the batch-32 outputs and the device launches of a batch of 1.
 *
 *   drape_bench_gpu [--refine] BUNDLE...   (--refine: bench_refine below)
 *   drape_bench_gpu --profile BUNDLE PRECISION BATCH GARMENT PACK
 *                               (where a batch's device time goes: bench_profile)
 *                               env: DRAPE_BENCH_THREADS (CPU threads, default all cores),
 *                                    DRAPE_PYTHON (default /usr/bin/python3),
 *                                    DRAPE_BENCH_JSON (a file: the numbers as JSON
 *                                    lines too, for bench/gpu_goals.py)
 *
 * The CPU backend runs only the batches that finish in reasonable time (1
 * and 32; the paper-scale configuration takes about a second per frame). */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench_util.h"
#include "../runtime/backend.h"
#include "../runtime/backend_test.h"
#include "../runtime/model.h"
#include "../runtime/omp_env.h"

#define NB 5
static const int BATCHES[NB] = {1, 8, 32, 64, 256};
#define MAXN 256

typedef struct {
    drape_backend *be;
    drape_identity *ids[4];
    int n_ids;
    double b_ms; /* module B, median ms per identity */
} rig;

static int rig_open(rig *r, const drape_model *m, const char *kind, int precision, int threads)
{
    drape_error e = {0};
    drape_backend_opts o = {.threads = threads, .precision = precision};
    memset(r, 0, sizeof *r);
    if (drape_backend_create(&r->be, kind, m, &o, &e)) {
        fprintf(stderr, "bench: %s: %s\n", kind, e.msg);
        return 1;
    }
    unsigned s = 7;
    double t[4];
    r->n_ids = 4;
    for (int i = 0; i < r->n_ids; i++) {
        float betas[4] = {rnd(&s) * 2, rnd(&s) * 2, rnd(&s) * 2, rnd(&s) * 2};
        double t0 = now_ms();
        if (drape_identity_create(r->be, &r->ids[i], i % m->cfg.n_garments, betas, 4, &e)) {
            fprintf(stderr, "bench: %s: %s\n", kind, e.msg);
            return 1;
        }
        t[i] = now_ms() - t0;
    }
    qsort(t + 1, 3, sizeof *t, cmp_d); /* the first one pays for warm-up */
    r->b_ms = t[2];
    return 0;
}

static void rig_close(rig *r)
{
    for (int i = 0; i < r->n_ids; i++) drape_identity_free(r->be, r->ids[i]);
    drape_backend_free(r->be);
}

/* frames [n] of identities ids [n_ids] in turn with fixed random poses (the
 * model's history frames of avatar a at poses + HIST_FLOATS·a), packed as
 * pack; outs owned by caller */
#define HIST_FLOATS (DRAPE_MAX_HISTORY * 75)
static void frames_of(drape_frame *fr, float *poses, float **outs, drape_identity *const *ids, int n_ids, int pack,
                      const drape_model *m, int n)
{
    for (int a = 0; a < n; a++) {
        fr[a] = (drape_frame){.id = ids[a % n_ids], .out = outs[a], .pack = pack};
        for (int k = 0; k < m->cfg.n_hist; k++) {
            fr[a].pose[k] = poses + HIST_FLOATS * a + 75 * k;
            fr[a].trans[k] = poses + HIST_FLOATS * a + 75 * k + 72;
        }
    }
}

/* ... of the rig's identities, unpacked */
static void make_frames(drape_frame *fr, float *poses, float **outs, const rig *r, const drape_model *m, int n)
{
    frames_of(fr, poses, outs, r->ids, r->n_ids, DRAPE_PACK_NONE, m, n);
}

/* median ms per frame over reps runs of the batch (after one warm-up) */
static double time_batch(drape_backend *be, drape_frame *fr, int n, double budget_ms)
{
    double t[50];
    int reps = 0;
    drape_error e = {0};
    if (drape_backend_run(be, fr, n, &e)) {
        fprintf(stderr, "bench: %s\n", e.msg);
        exit(1);
    }
    double start = now_ms();
    do {
        double t0 = now_ms();
        if (drape_backend_run(be, fr, n, &e)) {
            fprintf(stderr, "bench: %s\n", e.msg);
            exit(1);
        }
        t[reps++] = now_ms() - t0;
    } while (reps < 50 && now_ms() - start < budget_ms);
    qsort(t, (size_t)reps, sizeof *t, cmp_d);
    return t[reps / 2] / n;
}

/* The PyTorch reference on the GPU, eager: module B ms per identity and module
 * A ms per frame per batch (NAN where it did not run). */
static void bench_torch(const char *path, double *b_ms, double *a_ms)
{
    const char *py = getenv("DRAPE_PYTHON");
    char cmd[1024], list[64] = "";
    for (int b = 0; b < NB; b++) snprintf(list + strlen(list), sizeof list - strlen(list), b ? ",%d" : "%d", BATCHES[b]);
    snprintf(cmd, sizeof cmd, "%s train/bench_ref.py --model '%s' --garment skirt --device cuda --batches %s --iters 20",
             py ? py : "/usr/bin/python3", path, list);
    *b_ms = NAN;
    for (int b = 0; b < NB; b++) a_ms[b] = NAN;
    FILE *p = popen(cmd, "r");
    if (!p) return;
    char line[1024];
    while (fgets(line, sizeof line, p)) {
        json_t *o = json_loads(line, 0, NULL);
        if (!o) continue;
        const char *what = json_string_value(json_object_get(o, "what"));
        if (what && !strcmp(what, "moduleB")) *b_ms = json_number_value(json_object_get(o, "ms_per_identity"));
        if (what && !strcmp(what, "moduleA"))
            for (int b = 0; b < NB; b++)
                if (json_integer_value(json_object_get(o, "batch")) == BATCHES[b])
                    a_ms[b] = json_number_value(json_object_get(o, "ms_per_frame"));
        json_decref(o);
    }
    pclose(p);
}

static FILE *json_out; /* DRAPE_BENCH_JSON */

/* one measurement as a JSON line: what (backend, precision or peer), batch, ms per frame */
static void json_row(const char *bundle, const char *backend, const char *precision, int batch, double ms)
{
    if (!json_out || isnan(ms)) return;
    fprintf(json_out, "{\"bundle\":\"%s\",\"backend\":\"%s\",\"precision\":\"%s\",\"batch\":%d,\"ms_per_frame\":%.6f}\n",
            bundle, backend, precision, batch, ms);
    fflush(json_out);
}

/* The bundle at path, its name, the fixed random poses of MAXN avatars and
 * output buffers for them (outs [MAXN], ref [32]); NULL when it does not load */
static float poses[MAXN * HIST_FLOATS];
static drape_model *bench_setup(const char *path, const char **name, float **outs, float **ref)
{
    drape_model *m;
    drape_error e = {0};
    if (drape_model_load(&m, path, &e)) {
        fprintf(stderr, "bench: %s\n", e.msg);
        return NULL;
    }
    *name = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
    int Vmax = 0;
    for (int i = 0; i < m->cfg.n_garments; i++) Vmax = m->garments[i].V > Vmax ? m->garments[i].V : Vmax;
    unsigned s = 1;
    for (int i = 0; i < MAXN * HIST_FLOATS; i++) poses[i] = 0.3f * rnd(&s);
    for (int a = 0; a < MAXN; a++) outs[a] = malloc(sizeof(float) * 3 * Vmax);
    for (int a = 0; a < 32; a++) ref[a] = malloc(sizeof(float) * 3 * Vmax);
    return m;
}

static int bench_bundle(const char *path, int threads)
{
    drape_error e = {0};
    const char *name;
    float *outs[MAXN], *ref[32];
    drape_model *m = bench_setup(path, &name, outs, ref);
    if (!m) return 1;
    int Vmax = 0;
    for (int i = 0; i < m->cfg.n_garments; i++) Vmax = m->garments[i].V > Vmax ? m->garments[i].V : Vmax;
    drape_frame fr[MAXN];
    int paper = m->cfg.uv_h >= 512;

    /* CPU first: its batch-32 outputs are the reference for the error column */
    rig cpu;
    if (rig_open(&cpu, m, "cpu", 0, threads)) return 1;
    double cpu_a[NB];
    for (int b = 0; b < NB; b++) cpu_a[b] = NAN;
    make_frames(fr, poses, ref, &cpu, m, 32);
    cpu_a[2] = time_batch(cpu.be, fr, 32, paper ? 0 : 2000);
    make_frames(fr, poses, outs, &cpu, m, 1);
    cpu_a[0] = time_batch(cpu.be, fr, 1, paper ? 2000 : 1000);
    printf("| %s | cpu (%d threads) | B %.2f ms |", name, threads, cpu.b_ms);
    for (int b = 0; b < NB; b++) printf(isnan(cpu_a[b]) ? " — |" : " %.3f |", cpu_a[b]);
    printf(" — |\n");

    for (int b = 0; b < NB; b++) json_row(name, "cpu", "fp32", BATCHES[b], cpu_a[b]);

    /* FP32 first: its batch-32 outputs are the reference of the reduced precisions' second error */
    float *ref32[32];
    for (int a = 0; a < 32; a++) ref32[a] = malloc(sizeof(float) * 3 * Vmax);
    for (int p = 0; p < DRAPE_PRECISION_COUNT; p++) {
        rig gpu;
        if (rig_open(&gpu, m, "cuda", p, threads)) return 1;
        double a[NB];
        for (int b = 0; b < NB; b++) {
            make_frames(fr, poses, outs, &gpu, m, BATCHES[b]);
            a[b] = time_batch(gpu.be, fr, BATCHES[b], 1000);
            json_row(name, "cuda", drape_precision_name(p), BATCHES[b], a[b]);
        }
        make_frames(fr, poses, outs, &gpu, m, 1);
        if (drape_backend_run(gpu.be, fr, 1, &e)) {
            fprintf(stderr, "bench: %s\n", e.msg);
            return 1;
        }
        int launches = drape_backend_cuda_launches(gpu.be);
        /* same frames as the CPU's batch of 32: cpu.ids[i] and gpu.ids[i] share betas */
        make_frames(fr, poses, p ? outs : ref32, &gpu, m, 32);
        if (drape_backend_run(gpu.be, fr, 32, &e)) {
            fprintf(stderr, "bench: %s\n", e.msg);
            return 1;
        }
        double err = 0, err32 = 0;
        for (int f = 0; f < 32; f++) {
            int V = m->garments[drape_identity_garment(fr[f].id)].V;
            for (int i = 0; i < 3 * V; i++) {
                err = fmax(err, fabs((double)fr[f].out[i] - ref[f][i]));
                err32 = fmax(err32, fabs((double)fr[f].out[i] - ref32[f][i]));
            }
        }
        printf("| %s | cuda %s | B %.2f ms |", name, drape_precision_name(p), gpu.b_ms);
        for (int b = 0; b < NB; b++) printf(" %.4f |", a[b]);
        printf(" %.2e m vs CPU, %.2e m vs FP32; %.0f frames/s at 256; %d launches at batch 1 |\n", err, err32,
               1e3 / a[NB - 1], launches);
        if (json_out)
            fprintf(json_out,
                    "{\"bundle\":\"%s\",\"backend\":\"cuda\",\"precision\":\"%s\",\"err_cpu_m\":%.3e,"
                    "\"err_fp32_m\":%.3e,\"launches_b1\":%d}\n",
                    name, drape_precision_name(p), err, err32, launches);
        rig_close(&gpu);
    }
    rig_close(&cpu);
    double tb, ta[NB];
    bench_torch(path, &tb, ta);
    printf(isnan(tb) ? "| %s | PyTorch eager (cuda) | — |" : "| %s | PyTorch eager (cuda) | B %.2f ms |", name, tb);
    for (int b = 0; b < NB; b++) printf(isnan(ta[b]) ? " — |" : " %.4f |", ta[b]);
    printf(" — |\n");
    for (int b = 0; b < NB; b++) json_row(name, "torch_eager", "fp32", BATCHES[b], ta[b]);
    for (int a = 0; a < MAXN; a++) free(outs[a]);
    for (int a = 0; a < 32; a++) {
        free(ref[a]);
        free(ref32[a]);
    }
    drape_model_free(m);
    return 0;
}

/* --refine BUNDLE: the refine step inside the CUDA batch (refine.cu)
 * against the same backend with DRAPE_CUDA_REFINE=host (module A on the
 * device, the step on the host's threads, as before), FP16, ms per frame
 * per batch, and the largest |device − host| over a batch of 32. */
static int bench_refine(const char *path, int threads)
{
    drape_error e = {0};
    const char *name;
    float *outs[MAXN], *host32[32];
    drape_model *m = bench_setup(path, &name, outs, host32);
    if (!m) return 1;
    int refined = 0;
    for (int i = 0; i < m->cfg.n_garments; i++) refined += m->cfg.refine[i].iters > 0;
    drape_frame fr[MAXN];
    double t[2][NB], err = 0;
    printf("| %s (%d of %d garments refined) | refine | A b=1 | A b=8 | A b=32 | A b=64 | A b=256 | |device − host| |\n",
           name, refined, m->cfg.n_garments);
    printf("|---|---|---|---|---|---|---|---|\n");
    for (int dev = 0; dev < 2; dev++) {
        if (!dev) setenv("DRAPE_CUDA_REFINE", "host", 1);
        rig gpu;
        int rc = rig_open(&gpu, m, "cuda", DRAPE_PRECISION_FP16, threads);
        unsetenv("DRAPE_CUDA_REFINE");
        if (rc) return 1;
        for (int b = 0; b < NB; b++) {
            make_frames(fr, poses, outs, &gpu, m, BATCHES[b]);
            t[dev][b] = time_batch(gpu.be, fr, BATCHES[b], 1000);
            json_row(name, dev ? "cuda_refine_device" : "cuda_refine_host", "fp16", BATCHES[b], t[dev][b]);
        }
        make_frames(fr, poses, dev ? outs : host32, &gpu, m, 32);
        if (drape_backend_run(gpu.be, fr, 32, &e)) {
            fprintf(stderr, "bench: %s\n", e.msg);
            return 1;
        }
        for (int f = 0; dev && f < 32; f++) {
            int V = m->garments[drape_identity_garment(fr[f].id)].V;
            for (int i = 0; i < 3 * V; i++) err = fmax(err, fabs((double)fr[f].out[i] - host32[f][i]));
        }
        printf("| %s | %s |", name, dev ? "on the device" : "on the host");
        for (int b = 0; b < NB; b++) printf(" %.4f |", t[dev][b]);
        if (dev)
            printf(" %.2e m; host / device %.2fx at 1, %.2fx at 256 |\n", err, t[0][0] / t[1][0], t[0][NB - 1] / t[1][NB - 1]);
        else
            printf(" (%d threads) |\n", threads);
        rig_close(&gpu);
    }
    for (int a = 0; a < MAXN; a++) free(outs[a]);
    for (int a = 0; a < 32; a++) free(host32[a]);
    drape_model_free(m);
    return 0;
}

/* --profile BUNDLE PRECISION BATCH GARMENT PACK: the batch (every frame
 * the same garment's, packed as PACK: 0 f32, 1 f16, 2 q16) timed with
 * graphs (ms per batch, the median), then run again with
 * DRAPE_CUDA_PROFILE=1, whose backend prints each stage's device time */
static int bench_profile(const char *path, int precision, int n, int garment, int pack)
{
    drape_error e = {0};
    drape_model *m = NULL;
    if (drape_model_load(&m, path, &e)) {
        fprintf(stderr, "bench: %s\n", e.msg);
        return 1;
    }
    if (n < 1 || n > MAXN || garment < 0 || garment >= m->cfg.n_garments || precision < 0 ||
        precision >= DRAPE_PRECISION_COUNT || pack < 0 || pack > DRAPE_PACK_Q16) {
        fprintf(stderr, "bench: batch 1..%d, garment 0..%d, precision 0..%d, pack 0..%d\n", MAXN,
                m->cfg.n_garments - 1, DRAPE_PRECISION_COUNT - 1, DRAPE_PACK_Q16);
        drape_model_free(m);
        return 2;
    }
    int rc = 0;
    float *poses = malloc(sizeof(float) * HIST_FLOATS * MAXN), *outs[MAXN];
    unsigned s = 11;
    for (int i = 0; i < HIST_FLOATS * MAXN; i++) poses[i] = rnd(&s) * 0.4f;
    for (int a = 0; a < n; a++) outs[a] = malloc(sizeof(float) * 3 * m->garments[garment].V);
    for (int pass = 0; pass < 2 && !rc; pass++) {
        if (pass) setenv("DRAPE_CUDA_PROFILE", "1", 1);
        drape_backend *be = NULL;
        drape_identity *id = NULL;
        drape_backend_opts o = {.threads = 1, .precision = precision};
        if (drape_backend_create(&be, "cuda", m, &o, &e) || drape_identity_create(be, &id, garment, NULL, 0, &e)) {
            fprintf(stderr, "bench: %s\n", e.msg);
            if (be) drape_backend_free(be);
            unsetenv("DRAPE_CUDA_PROFILE");
            rc = 1;
            break;
        }
        drape_frame fr[MAXN];
        frames_of(fr, poses, outs, &id, 1, pack, m, n);
        double ms = time_batch(be, fr, n, 1000.0) * n;
        if (!pass)
            printf("%s, %s, garment %s, batch %d, pack %d: %.4f ms per batch with graphs (%.4f ms per frame), "
                   "%d launches\n", path, drape_precision_name(precision), m->garments[garment].name, n, pack, ms, ms / n,
                   drape_backend_cuda_launches(be));
        drape_identity_free(be, id);
        drape_backend_free(be); /* pass 1: prints the profile */
        unsetenv("DRAPE_CUDA_PROFILE");
    }
    for (int a = 0; a < n; a++) free(outs[a]);
    free(poses);
    drape_model_free(m);
    return rc;
}

int main(int argc, char **argv)
{
    drape_blas_threads_init();
    if (argc < 2) {
        fprintf(stderr, "usage: drape_bench_gpu BUNDLE... | drape_bench_gpu --refine BUNDLE\n");
        return 2;
    }
    setvbuf(stdout, NULL, _IOLBF, 0);
    int threads = getenv("DRAPE_BENCH_THREADS") ? atoi(getenv("DRAPE_BENCH_THREADS")) : (int)sysconf(_SC_NPROCESSORS_ONLN);
    const char *jp = getenv("DRAPE_BENCH_JSON");
    if (jp && *jp && !(json_out = fopen(jp, "a"))) {
        fprintf(stderr, "bench: cannot write %s\n", jp);
        return 1;
    }
    if (argc == 7 && !strcmp(argv[1], "--profile")) {
        int rc = bench_profile(argv[2], atoi(argv[3]), atoi(argv[4]), atoi(argv[5]), atoi(argv[6]));
        if (json_out) fclose(json_out);
        return rc;
    }
    if (argc == 3 && !strcmp(argv[1], "--refine")) {
        int rc = bench_refine(argv[2], threads);
        if (json_out) fclose(json_out);
        return rc;
    }
    printf("module A: ms per frame at batch");
    for (int b = 0; b < NB; b++) printf(" %d", BATCHES[b]);
    printf("; module B: ms per identity; error: max |CUDA − CPU| and |CUDA − CUDA FP32| over a batch of 32;"
           " launches: the device's kernels and copies for a batch of 1 (its CUDA graph's nodes)\n\n");
    printf("| bundle | backend | module B | A b=1 | A b=8 | A b=32 | A b=64 | A b=256 | error, throughput |\n");
    printf("|---|---|---|---|---|---|---|---|---|\n");
    int rc = 0;
    for (int i = 1; i < argc && !rc; i++) rc = bench_bundle(argv[i], threads);
    if (json_out) fclose(json_out);
    return rc;
}
