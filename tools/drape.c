/* `drape`: the command-line tool.
 *   drape info MODEL
 *   drape infer --model M --garment G [--betas b0,b1,...] --poses IN.npy --out OUT.npy
 *               [--lbs-only] [--backend cpu|cuda|auto] [--threads N] [--batch N]
 *   drape sim cloth|garment ...   (tools/sim_cmd.c)
 *   drape metrics ...             (tools/metrics_cmd.c)
 *   drape eval ...                (tools/eval_cmd.c)
 *   drape load --url ws://HOST:PORT/v1/stream ...   (tools/load_cmd.c)
 * Every failure prints one clear line to stderr and exits non-zero. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../runtime/omp_env.h"
#include "../runtime/backend.h"
#include "../runtime/model.h"
#include "../runtime/npy.h"
#include "../runtime/sequence.h"
#include "tools.h"

static int usage(void)
{
    fprintf(stderr,
            "usage: drape info MODEL\n"
            "       drape infer --model MODEL --garment NAME [--betas b0,b1,...] --poses IN.npy --out OUT.npy\n"
            "                   [--lbs-only] [--backend cpu|cuda|auto] [--threads N] [--batch N]\n"
            "       drape sim cloth --mesh IN.obj [--pin i,j,...] ... --out OUT.obj   (drape sim for all options)\n"
            "       drape sim garment --model MODEL --garment NAME [--betas ...] --poses IN.npy --out OUT.npy ...\n"
            "       drape metrics --model MODEL --garment NAME [--betas ...] --poses IN.npy --verts X.npy [--ref Y.npy]\n"
            "       drape eval --model MODEL --garment NAME [--betas ...] --poses IN.npy [--teacher T.npy]\n"
            "       drape load --url ws://HOST:PORT/v1/stream --avatars N --fps F --duration S [--connections C]\n"
            "                  [--format f32|f16|q16|meshopt] [--garment NAME] [--betas ...] [--json]   (drape load for all)\n");
    return 2;
}

int drape_tool_die(const char *what, const drape_error *e)
{
    fprintf(stderr, "drape %s: %s\n", what, e->msg);
    return 1;
}

static int cmd_info(int argc, char **argv)
{
    if (argc != 1) return usage();
    drape_model *m;
    drape_error e = {0};
    if (drape_model_load(&m, argv[0], &e)) return drape_tool_die("info", &e);
    const drape_config *c = &m->cfg;
    printf("model      %s\n", argv[0]);
    printf("format     %d   fps %d   units m, y up\n", c->format_version, c->fps);
    printf("body       %d vertices, %d faces, %d betas in [%g, %g]\n", m->Nb, m->Fb, c->betas, c->beta_min, c->beta_max);
    printf("bones      %d (skin_k %d)\n", c->bones, c->skin_k);
    printf("bone-net   hidden %d, z_dim %d, pose_dim %d, history t", c->hidden, c->z_dim, c->pose_dim);
    for (int i = c->n_hist - 2; i >= 0; i--) printf(", t-%d", c->hist[i]);
    printf("\n");
    printf("uv         %d x %d, feat_dim %d, conv [", c->uv_h, c->uv_w, c->feat_dim);
    for (int i = 0; i < c->n_conv; i++) printf(i ? ", %d" : "%d", c->conv[i]);
    printf("]\nencoder    latent %d, blocks %d, knn %d\n", c->latent, c->blocks, c->knn);
    printf("garments   %d\n", c->n_garments);
    for (int i = 0; i < c->n_garments; i++) {
        const drape_garment *g = &m->garments[i];
        double T = (double)c->uv_h * c->uv_w;
        printf("  %-12s %d vertices, %d faces, %d uv (%d seam copies), %.1f%% texels covered, conv computes %.1f%%",
               g->name, g->V, g->F, g->Nuv, g->copy_start[g->V] - g->V, 100.0 * g->n_cov / T,
               100.0 * g->active_texels[1] / T);
        if (g->n_attach) printf(", %d attached in simulation", g->n_attach);
        if (m->own[i]) printf(", its own network");
        if (c->refine[i].iters)
            printf(", refined (%d sweeps, stiffness %g, margin %g m)", c->refine[i].iters, c->refine[i].stiffness,
                   c->refine[i].margin);
        printf("\n");
    }
    printf("tensors    %d (%d not used by this runtime), %zu bytes of data\n", m->n_tensors, m->n_unused_tensors,
           m->file_bytes);
    printf("memory     %.1f MiB of weights and meshes, %.1f MiB of derived tables (UV raster, edges)\n",
           m->arena_bytes / 1048576.0, m->derived_bytes / 1048576.0);
    drape_model_free(m);
    return 0;
}

int drape_tool_parse_floats(const char *s, float *out, int max, int *n)
{
    *n = 0;
    if (!*s) return 0;
    for (;;) {
        char *end;
        errno = 0;
        float v = strtof(s, &end);
        if (end == s || errno == ERANGE || *n == max) return -1;
        out[(*n)++] = v;
        if (*end == '\0') return 0;
        if (*end != ',') return -1;
        s = end + 1;
    }
}

int drape_tool_job_opt(drape_tool_job_args *j, const char *a, const char *v)
{
    const char **slot = !strcmp(a, "--model") ? &j->model : !strcmp(a, "--garment") ? &j->garment
                      : !strcmp(a, "--betas") ? &j->betas : !strcmp(a, "--poses") ? &j->poses : NULL;
    if (slot) *slot = v;
    return slot != NULL;
}

static int read_poses(const char *cmd, const char *path, drape_npy *poses)
{
    drape_error e = {0};
    if (drape_npy_read(poses, path, &e)) return drape_tool_die(cmd, &e);
    if (poses->ndim != 2 || poses->shape[1] != DRAPE_FRAME_FLOATS) {
        fprintf(stderr, "drape %s: %s: poses must be float32 [T, %d] (72 axis-angle + 3 translation), got %d dims%s%lld\n",
                cmd, path, DRAPE_FRAME_FLOATS, poses->ndim, poses->ndim == 2 ? " with width " : "",
                poses->ndim == 2 ? (long long)poses->shape[1] : 0LL);
        return 1;
    }
    if (poses->shape[0] > (1 << 20)) { fprintf(stderr, "drape %s: too many frames\n", cmd); return 1; }
    if (drape_poses_check(poses->data, poses->shape[0], &e)) {
        fprintf(stderr, "drape %s: %s: %s\n", cmd, path, e.msg);
        return 1;
    }
    return 0;
}

int drape_tool_job_open(drape_tool_job *j, const char *cmd, const drape_tool_job_args *a)
{
    *j = (drape_tool_job){0};
    if (!a->model || !a->garment || !a->poses) {
        fprintf(stderr, "drape %s: --model, --garment and --poses are required\n", cmd);
        return 2;
    }
    const char *bs = a->betas ? a->betas : "";
    if (drape_tool_parse_floats(bs, j->betas, DRAPE_MAX_BETAS, &j->nb)) {
        fprintf(stderr, "drape %s: --betas must be up to %d comma-separated numbers, got '%s'\n", cmd, DRAPE_MAX_BETAS,
                bs);
        return 2;
    }
    if (read_poses(cmd, a->poses, &j->poses)) return 1;
    j->T = (int)j->poses.shape[0];
    drape_error e = {0};
    if (drape_model_load(&j->m, a->model, &e)) return drape_tool_die(cmd, &e);
    j->gi = drape_model_garment(j->m, a->garment);
    if (j->gi >= 0) return 0;
    fprintf(stderr, "drape %s: garment '%s' is not in the model (", cmd, a->garment);
    for (int i = 0; i < j->m->cfg.n_garments; i++) fprintf(stderr, i ? ", %s" : "%s", j->m->cfg.garments[i]);
    fprintf(stderr, ")\n");
    return 1;
}

void drape_tool_job_close(drape_tool_job *j)
{
    drape_npy_free(&j->poses);
    drape_model_free(j->m);
    *j = (drape_tool_job){0};
}

static int cmd_infer(int argc, char **argv)
{
    drape_tool_job_args ja = {0};
    const char *out_p = NULL, *backend = "cpu";
    int lbs = 0, threads = 0, batch = 32;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--lbs-only")) { lbs = 1; continue; }
        if (!v) { fprintf(stderr, "drape infer: %s needs a value\n", a); return usage(); }
        if (drape_tool_job_opt(&ja, a, v)) {}
        else if (!strcmp(a, "--out")) out_p = v;
        else if (!strcmp(a, "--backend")) backend = v;
        else if (!strcmp(a, "--threads")) threads = atoi(v);
        else if (!strcmp(a, "--batch")) batch = atoi(v);
        else { fprintf(stderr, "drape infer: unknown option %s\n", a); return usage(); }
        i++;
    }
    if (!ja.model || !ja.garment || !ja.poses || !out_p) {
        fprintf(stderr, "drape infer: --model, --garment, --poses and --out are required\n");
        return usage();
    }
    if (threads < 0 || threads > 256 || batch < 1 || batch > 4096) {
        fprintf(stderr, "drape infer: --threads must be in [0, 256] and --batch in [1, 4096]\n");
        return 2;
    }
    drape_error e = {0};
    drape_tool_job j;
    drape_backend *be = NULL;
    drape_identity *id = NULL;
    float *out = NULL;
    int rc = drape_tool_job_open(&j, "infer", &ja);
    if (rc) goto done;
    rc = 1;
    drape_backend_opts o = {.threads = threads};
    if (drape_backend_create(&be, backend, j.m, &o, &e)) { drape_tool_die("infer", &e); goto done; }
    if (drape_identity_create(be, &id, j.gi, j.betas, j.nb, &e)) { drape_tool_die("infer", &e); goto done; }
    int T = j.T, V = j.m->garments[j.gi].V;
    out = malloc((size_t)T * V * 3 * sizeof *out);
    if (!out) { fprintf(stderr, "drape infer: out of memory\n"); goto done; }
    if (drape_sequence_run(be, id, j.poses.data, T, lbs, out, batch, &e)) { drape_tool_die("infer", &e); goto done; }
    int64_t shape[3] = {T, V, 3};
    if (drape_npy_write(out_p, out, 3, shape, &e)) { drape_tool_die("infer", &e); goto done; }
    rc = 0;
done:
    free(out);
    if (be) drape_identity_free(be, id);
    drape_backend_free(be);
    drape_tool_job_close(&j);
    return rc;
}

int main(int argc, char **argv)
{
    /* `sim cloth` runs neither OpenMP nor BLAS: it skips the re-exec, half of
     * its start-up, which the notebook benchmark counts */
    if (argc > 2 && !strcmp(argv[1], "sim") && !strcmp(argv[2], "cloth")) drape_blas_single();
    else drape_omp_env(argv);
    if (argc < 2) return usage();
    if (!strcmp(argv[1], "info")) return cmd_info(argc - 2, argv + 2);
    if (!strcmp(argv[1], "infer")) return cmd_infer(argc - 2, argv + 2);
    if (!strcmp(argv[1], "sim")) return drape_cmd_sim(argc - 2, argv + 2);
    if (!strcmp(argv[1], "load")) return drape_cmd_load(argc - 2, argv + 2);
    if (!strcmp(argv[1], "metrics")) return drape_cmd_metrics(argc - 2, argv + 2);
    if (!strcmp(argv[1], "eval")) return drape_cmd_eval(argc - 2, argv + 2);
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) { usage(); return 0; }
    fprintf(stderr, "drape: unknown command '%s'\n", argv[1]);
    return usage();
}
