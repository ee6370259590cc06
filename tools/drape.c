/* `drape`: the command-line tool.
 *   drape info MODEL
 *   drape infer --model M --garment G [--betas b0,b1,...] --poses IN.npy --out OUT.npy
 *               [--lbs-only] [--backend cpu|cuda|auto] [--threads N] [--batch N]
 *   drape sim cloth ...   (tools/sim_cmd.c)
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
            "       drape load --url ws://HOST:PORT/v1/stream --avatars N --fps F --duration S [--connections C]\n"
            "                  [--format f32|f16|q16|meshopt] [--garment NAME] [--betas ...] [--json]   (drape load for all)\n");
    return 2;
}

static int die(const char *what, const drape_error *e)
{
    fprintf(stderr, "drape %s: %s\n", what, e->msg);
    return 1;
}

static int cmd_info(int argc, char **argv)
{
    if (argc != 1) return usage();
    drape_model *m;
    drape_error e = {0};
    if (drape_model_load(&m, argv[0], &e)) return die("info", &e);
    const drape_config *c = &m->cfg;
    printf("model      %s\n", argv[0]);
    printf("format     %d   fps %d   units m, y up\n", c->format_version, c->fps);
    printf("body       %d vertices, %d faces, %d betas in [%g, %g]\n", m->Nb, m->Fb, c->betas, c->beta_min, c->beta_max);
    printf("bones      %d (skin_k %d)\n", c->bones, c->skin_k);
    printf("bone-net   hidden %d, z_dim %d, pose_dim %d\n", c->hidden, c->z_dim, c->pose_dim);
    printf("uv         %d x %d, feat_dim %d, conv [", c->uv_h, c->uv_w, c->feat_dim);
    for (int i = 0; i < c->n_conv; i++) printf(i ? ", %d" : "%d", c->conv[i]);
    printf("]\nencoder    latent %d, blocks %d, knn %d\n", c->latent, c->blocks, c->knn);
    printf("garments   %d\n", c->n_garments);
    for (int i = 0; i < c->n_garments; i++) {
        const drape_garment *g = &m->garments[i];
        double T = (double)c->uv_h * c->uv_w;
        printf("  %-12s %d vertices, %d faces, %d uv (%d seam copies), %.1f%% texels covered, conv computes %.1f%%\n",
               g->name, g->V, g->F, g->Nuv, g->copy_start[g->V] - g->V, 100.0 * g->n_cov / T,
               100.0 * g->active_texels[1] / T);
    }
    printf("tensors    %d (%d not used by this runtime), %zu bytes of data\n", m->n_tensors, m->n_unused_tensors,
           m->file_bytes);
    printf("memory     %.1f MiB of weights and meshes, %.1f MiB of derived tables (UV raster, edges)\n",
           m->arena_bytes / 1048576.0, m->derived_bytes / 1048576.0);
    drape_model_free(m);
    return 0;
}

static int parse_floats(const char *s, float *out, int max, int *n)
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

static int cmd_infer(int argc, char **argv)
{
    const char *model = NULL, *garment = NULL, *betas_s = "", *poses_p = NULL, *out_p = NULL, *backend = "cpu";
    int lbs = 0, threads = 0, batch = 32;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--lbs-only")) { lbs = 1; continue; }
        if (!v) { fprintf(stderr, "drape infer: %s needs a value\n", a); return usage(); }
        if (!strcmp(a, "--model")) model = v;
        else if (!strcmp(a, "--garment")) garment = v;
        else if (!strcmp(a, "--betas")) betas_s = v;
        else if (!strcmp(a, "--poses")) poses_p = v;
        else if (!strcmp(a, "--out")) out_p = v;
        else if (!strcmp(a, "--backend")) backend = v;
        else if (!strcmp(a, "--threads")) threads = atoi(v);
        else if (!strcmp(a, "--batch")) batch = atoi(v);
        else { fprintf(stderr, "drape infer: unknown option %s\n", a); return usage(); }
        i++;
    }
    if (!model || !garment || !poses_p || !out_p) {
        fprintf(stderr, "drape infer: --model, --garment, --poses and --out are required\n");
        return usage();
    }
    if (threads < 0 || threads > 256 || batch < 1 || batch > 4096) {
        fprintf(stderr, "drape infer: --threads must be in [0, 256] and --batch in [1, 4096]\n");
        return 2;
    }
    float betas[DRAPE_MAX_BETAS];
    int nb;
    if (parse_floats(betas_s, betas, DRAPE_MAX_BETAS, &nb)) {
        fprintf(stderr, "drape infer: --betas must be up to %d comma-separated numbers, got '%s'\n", DRAPE_MAX_BETAS,
                betas_s);
        return 2;
    }
    drape_error e = {0};
    drape_model *m = NULL;
    drape_backend *be = NULL;
    drape_identity *id = NULL;
    drape_npy poses = {0};
    float *out = NULL;
    int rc = 1;
    if (drape_npy_read(&poses, poses_p, &e)) { die("infer", &e); goto done; }
    if (poses.ndim != 2 || poses.shape[1] != DRAPE_FRAME_FLOATS) {
        fprintf(stderr, "drape infer: %s: poses must be float32 [T, %d] (72 axis-angle + 3 translation), got %d dims%s%lld\n",
                poses_p, DRAPE_FRAME_FLOATS, poses.ndim, poses.ndim == 2 ? " with width " : "",
                poses.ndim == 2 ? (long long)poses.shape[1] : 0LL);
        goto done;
    }
    if (poses.shape[0] > (1 << 20)) { fprintf(stderr, "drape infer: too many frames\n"); goto done; }
    if (drape_poses_check(poses.data, poses.shape[0], &e)) { fprintf(stderr, "drape infer: %s: %s\n", poses_p, e.msg); goto done; }
    if (drape_model_load(&m, model, &e)) { die("infer", &e); goto done; }
    int gi = drape_model_garment(m, garment);
    if (gi < 0) {
        fprintf(stderr, "drape infer: garment '%s' is not in the model (", garment);
        for (int i = 0; i < m->cfg.n_garments; i++) fprintf(stderr, i ? ", %s" : "%s", m->cfg.garments[i]);
        fprintf(stderr, ")\n");
        goto done;
    }
    drape_backend_opts o = {.threads = threads};
    if (drape_backend_create(&be, backend, m, &o, &e)) { die("infer", &e); goto done; }
    if (drape_identity_create(be, &id, gi, betas, nb, &e)) { die("infer", &e); goto done; }
    int T = (int)poses.shape[0], V = m->garments[gi].V;
    out = malloc((size_t)T * V * 3 * sizeof *out);
    if (!out) { fprintf(stderr, "drape infer: out of memory\n"); goto done; }
    if (drape_sequence_run(be, id, poses.data, T, lbs, out, batch, &e)) { die("infer", &e); goto done; }
    int64_t shape[3] = {T, V, 3};
    if (drape_npy_write(out_p, out, 3, shape, &e)) { die("infer", &e); goto done; }
    rc = 0;
done:
    free(out);
    drape_npy_free(&poses);
    if (be) drape_identity_free(be, id);
    drape_backend_free(be);
    drape_model_free(m);
    return rc;
}

int main(int argc, char **argv)
{
    drape_omp_env(argv);
    if (argc < 2) return usage();
    if (!strcmp(argv[1], "info")) return cmd_info(argc - 2, argv + 2);
    if (!strcmp(argv[1], "infer")) return cmd_infer(argc - 2, argv + 2);
    if (!strcmp(argv[1], "sim")) return drape_cmd_sim(argc - 2, argv + 2);
    if (!strcmp(argv[1], "load")) return drape_cmd_load(argc - 2, argv + 2);
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) { usage(); return 0; }
    fprintf(stderr, "drape: unknown command '%s'\n", argv[1]);
    return usage();
}
