/* `drape`: the command-line tool.
 *   drape info MODEL
 *   drape infer --model M --garment G [--betas b0,b1,...] --poses IN.npy --out OUT.npy
 *               [--lbs-only] [--backend auto|cpu|cuda] [--threads N] [--batch N] [--cuts t1,t2,...]
 *   drape sim cloth|garment ...   (tools/sim_cmd.c)
 *   drape metrics ...             (tools/metrics_cmd.c)
 *   drape eval ...                (tools/eval_cmd.c)
 *   drape load --url ws://HOST:PORT/v1/stream ...   (tools/load_cmd.c)
 *   drape motion import IN --out OUT.npy ...        (tools/motion_cmd.c)
 *   drape garment add --model IN --mesh G.obj --name NAME --out OUT   (tools/garment_cmd.c)
 *   drape body import BODY.npz --model IN --out OUT (tools/body_cmd.c)
 * Options are read by one parser from a table per command (tools/options.h);
 * `drape --help` lists the commands, `drape CMD --help` a command's options.
 * Every failure prints one clear line to stderr and exits non-zero: 2 for a
 * usage error, 1 for anything else. */
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

const char *const drape_tool_backends[] = {"auto", "cpu", "cuda", NULL};

int drape_tool_die(const char *what, const drape_error *e)
{
    fprintf(stderr, "drape %s: %s\n", what, e->msg);
    return 1;
}

typedef struct { const char *model; } info_opts;
static const drape_cmd_spec info_spec = {
    "info", "Prints a model bundle's configuration, garments and sizes.", "MODEL", offsetof(info_opts, model), NULL, 0,
};

static int cmd_info(int argc, char **argv)
{
    info_opts o = {0};
    int rc = drape_opts_parse(&info_spec, &o, argc, argv);
    if (rc) return drape_opts_status(rc);
    drape_model *m;
    drape_error e = {0};
    if (drape_model_load(&m, o.model, &e)) return drape_tool_die("info", &e);
    const drape_config *c = &m->cfg;
    printf("model      %s\n", o.model);
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
        if (c->untrained[i]) printf(", network untrained (modes lbs, physics)");
        else if (c->stale_net[i]) printf(", network trained on another body (retrain it: docs/body.md), modes neural, lbs, physics");
        else printf(", network trained (modes neural, lbs, physics)");
        if (c->refine[i].iters) {
            printf(", refined (%d sweeps, stiffness %g, margin %g m", c->refine[i].iters, c->refine[i].stiffness,
                   c->refine[i].margin);
            if (c->refine[i].rho > 0) printf(", Chebyshev rho %g", c->refine[i].rho);
            printf(")");
        }
        /* the physics mode's own pull (docs/design.md §3.3); else the served one */
        if (c->physics[i].has_pull) printf(", physics pulled to skinning at %g/s^2", c->physics[i].pull);
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

static int read_poses(const char *cmd, const char *path, drape_npy *poses)
{
    drape_error e = {0};
    if (drape_npy_read(poses, path, &e)) return drape_tool_die(cmd, &e);
    if (poses->ndim != 2 || poses->shape[1] != DRAPE_FRAME_FLOATS) {
        fprintf(stderr, "drape %s: %s: poses must be float32 [T, %d] (72 axis-angle + 3 translation), got [", cmd, path,
                DRAPE_FRAME_FLOATS);
        for (int i = 0; i < poses->ndim; i++) fprintf(stderr, i ? ", %lld" : "%lld", (long long)poses->shape[i]);
        fprintf(stderr, "]\n");
        return 1;
    }
    if (poses->shape[0] > (1 << 20)) { fprintf(stderr, "drape %s: too many frames\n", cmd); return 1; }
    if (drape_poses_check(poses->data, poses->shape[0], NULL, &e)) {
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
    /* a --betas value the model refuses is a bad option: status 2, as the README says */
    if (drape_model_check_betas(j->m, j->betas, j->nb, &e)) {
        fprintf(stderr, "drape %s: --betas %s: %s\n", cmd, bs, e.msg);
        return 2;
    }
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

typedef struct {
    drape_tool_job_args job;
    const char *out, *cuts;
    int lbs_only, backend, threads, batch;
} infer_opts;
static const drape_opt infer_opts_table[] = {
    DRAPE_TOOL_JOB_OPTS(infer_opts),
    DRAPE_OPT_P(infer_opts, out, "out", "OUT.npy", DRAPE_OPT_REQUIRED,
                "where the vertices go: float32 [T, V, 3], world positions in meters, y up"),
    DRAPE_OPT_F(infer_opts, lbs_only, "lbs-only", "plain skinning, without the network's corrections (the baseline)"),
    DRAPE_TOOL_BACKEND_OPTS(infer_opts),
    DRAPE_OPT_I(infer_opts, batch, "batch", "32", 1, 4096, "N", 0, "frames per backend call"),
    DRAPE_OPT_S(infer_opts, cuts, "cuts", "", "t1,t2,...", 0,
                "frames where the motion starts again (a loop, a teleport): their history begins there, as a "
                "stream's after a cut"),
};
static const drape_cmd_spec infer_spec = {
    "infer", "Writes a garment's vertices for a pose sequence.", NULL, 0, infer_opts_table,
    sizeof infer_opts_table / sizeof *infer_opts_table,
};

/* --cuts: ascending frame indices in [1, T), strictly parsed */
static int parse_cuts(const char *s, int T, int **out, int *n)
{
    *out = NULL, *n = 0;
    if (!s || !*s) return 0;
    int cap = 1;
    for (const char *p = s; *p; p++) cap += *p == ',';
    *out = malloc(sizeof **out * (size_t)cap);
    if (!*out) return fprintf(stderr, "drape infer: out of memory\n"), 1;
    for (const char *p = s;;) {
        char *end;
        errno = 0;
        long v = strtol(p, &end, 10);
        if (end == p || errno || (*end && *end != ',') || v < 1 || v >= T || (*n && v <= (*out)[*n - 1])) {
            fprintf(stderr, "drape infer: --cuts must be ascending frame indices in [1, %d), got '%s'\n", T, s);
            free(*out), *out = NULL;
            return 1;
        }
        (*out)[(*n)++] = (int)v;
        if (!*end) return 0;
        p = end + 1;
    }
}

static int cmd_infer(int argc, char **argv)
{
    infer_opts o = {0};
    int rc = drape_opts_parse(&infer_spec, &o, argc, argv);
    if (rc) return drape_opts_status(rc);
    drape_error e = {0};
    drape_tool_job j;
    drape_backend *be = NULL;
    drape_identity *id = NULL;
    float *out = NULL;
    rc = drape_tool_job_open(&j, "infer", &o.job);
    if (rc) goto done;
    rc = 1;
    if (j.m->cfg.untrained[j.gi] && !o.lbs_only) { /* as draped refuses mode neural for it */
        fprintf(stderr, "drape infer: garment '%s' has no trained network (it runs with --lbs-only, or in drape sim "
                        "garment); train it first (docs/garments.md)\n", o.job.garment);
        goto done;
    }
    drape_backend_opts bo = {.threads = o.threads};
    if (drape_backend_create(&be, drape_tool_backends[o.backend], j.m, &bo, &e) ||
        drape_identity_create(be, &id, j.gi, j.betas, j.nb, &e)) {
        drape_tool_die("infer", &e);
        goto done;
    }
    int T = j.T, V = j.m->garments[j.gi].V;
    out = malloc((size_t)T * V * 3 * sizeof *out);
    if (!out) { fprintf(stderr, "drape infer: out of memory\n"); goto done; }
    int64_t shape[3] = {T, V, 3};
    int *cuts = NULL, n_cuts = 0;
    if (parse_cuts(o.cuts, T, &cuts, &n_cuts)) {
        rc = 2; /* a bad option's status, though only the poses' length shows it */
        goto done;
    }
    int bad = drape_sequence_run_cuts(be, id, j.poses.data, T, cuts, n_cuts, o.lbs_only, out, o.batch, &e) ||
              drape_npy_write(o.out, out, 3, shape, &e);
    free(cuts);
    if (bad) {
        drape_tool_die("infer", &e);
        goto done;
    }
    rc = 0;
done:
    free(out);
    if (be) drape_identity_free(be, id);
    drape_backend_free(be);
    drape_tool_job_close(&j);
    return rc;
}

static const drape_subcmd commands[] = {
    {"info", "a model bundle's configuration, garments and sizes", cmd_info},
    {"infer", "a garment's vertices for a pose sequence", cmd_infer},
    {"sim", "the cloth engine: on a mesh (sim cloth) or a garment on the moving body (sim garment)", drape_cmd_sim},
    {"metrics", "the quality of a garment vertex sequence", drape_cmd_metrics},
    {"eval", "the model, plain skinning and the physics teacher on the same motion", drape_cmd_eval},
    {"load", "an open-loop load generator for draped's /v1/stream", drape_cmd_load},
    {"motion", "motion files in: a BVH or AMASS npz to a pose file (motion import)", drape_cmd_motion},
    {"garment", "a garment of one's own into a bundle (garment add)", drape_cmd_garment},
    {"body", "a body of one's own: an SMPL-layout npz into a bundle, garments refitted (body import)", drape_cmd_body},
};

int main(int argc, char **argv)
{
    /* `sim cloth` runs neither OpenMP nor BLAS: it skips the re-exec, half of
     * its start-up, which the notebook benchmark counts */
    if (argc > 2 && !strcmp(argv[1], "sim") && !strcmp(argv[2], "cloth")) drape_blas_single();
    else drape_omp_env(argv);
    return drape_subcmd_run("drape", commands, sizeof commands / sizeof *commands, argc - 1, argv + 1);
}
