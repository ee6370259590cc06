/* `drape eval`: the model, plain skinning and the physics teacher on the
 * same motion, judged the same way (sim/metrics.h).
 *   drape eval --model M --garment G [--betas b0,...] --poses IN.npy
 *              [--teacher T.npy] [--backend auto|cpu|cuda] [--threads N]
 * The teacher is `drape sim garment` with its defaults, run here unless
 * --teacher gives its output ([T,V,3], e.g. from the dataset). Prints one
 * JSON object: per method the mean and max vertex error against the teacher
 * (mm), edge and area error, collision %, and the energies; and the ratio of
 * the model's mean error to skinning's. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../runtime/backend.h"
#include "../runtime/npy.h"
#include "../runtime/sequence.h"
#include "../sim/garment.h"
#include "../sim/metrics.h"
#include "tools.h"

int drape_tool_judge(const drape_tool_job *j, int k, const float *const X[], const float *const ref[],
                     drape_metrics_summary s[], drape_error *e)
{
    const drape_model *m = j->m;
    const drape_garment *g = &m->garments[j->gi];
    drape_metrics_material mat = drape_metrics_default_material(m->cfg.fps);
    drape_metrics *mx[DRAPE_TOOL_JUDGE_MAX] = {NULL};
    size_t fv = (size_t)g->V * 3, fb = (size_t)m->Nb * 3;
    float *rest = malloc(fv * sizeof *rest), *body = malloc(DRAPE_TOOL_BODY_CHUNK * fb * sizeof *body);
    int rc = rest && body ? DRAPE_OK : drape_fail(e, DRAPE_ENOMEM, "out of memory");
    if (!rc) rc = drape_garment_lbs(m, j->gi, j->betas, j->nb, j->poses.data, j->T, rest, NULL, e);
    for (int i = 0; i < k && !rc; i++)
        rc = drape_metrics_create(&mx[i], rest, g->V, g->faces, g->F, m->body_faces, m->Fb, m->Nb, &mat, e);
    for (int t0 = 0; !rc && t0 < j->T; t0 += DRAPE_TOOL_BODY_CHUNK) {
        int n = j->T - t0 < DRAPE_TOOL_BODY_CHUNK ? j->T - t0 : DRAPE_TOOL_BODY_CHUNK;
        rc = drape_garment_body_frames(m, j->betas, j->nb, j->poses.data + (size_t)t0 * DRAPE_FRAME_FLOATS, n, body, e);
        for (int t = t0; !rc && t < t0 + n; t++)
            for (int i = 0; i < k && !rc; i++)
                rc = drape_metrics_add(mx[i], X[i] + t * fv, body + (size_t)(t - t0) * fb, ref[i] ? ref[i] + t * fv : NULL, e);
    }
    for (int i = 0; i < k; i++) {
        if (!rc) drape_metrics_get(mx[i], &s[i]);
        drape_metrics_free(mx[i]);
    }
    free(rest);
    free(body);
    return rc;
}

static void print_method(const char *name, const drape_metrics_summary *s, int last)
{
    printf("\"%s\": {", name);
    if (s->has_ref) printf("\"mean_mm\": %.6g, \"max_mm\": %.6g, ", s->ref_mean * 1e3, s->ref_max * 1e3);
    printf("\"edge_error\": %.6g, \"area_error\": %.6g, \"collision_pct\": %.6g, \"energy\": {\"stretch\": %.6g, "
           "\"bending\": %.6g, \"inertia\": %.6g, \"gravity\": %.6g}}%s",
           s->edge_error, s->area_error, s->collision_pct, s->stretch, s->bending, s->inertia, s->gravity,
           last ? "" : ", ");
}

typedef struct {
    drape_tool_job_args job;
    const char *teacher;
    int backend, threads;
} eval_opts;
static const drape_opt eval_opts_table[] = {
    DRAPE_TOOL_JOB_OPTS(eval_opts),
    DRAPE_OPT_P(eval_opts, teacher, "teacher", "T.npy", 0,
                "the teacher's vertices for these poses, float32 [T, V, 3] (default: run drape sim garment's defaults)"),
    DRAPE_TOOL_BACKEND_OPTS(eval_opts),
};
static const drape_cmd_spec eval_spec = {
    "eval",
    "Runs the model, plain skinning and the physics teacher on the same motion and prints one JSON object:\n"
    "per method the mean and max vertex error against the teacher (mm), edge and area error, collision %,\n"
    "the energies, and the model's mean error over skinning's.",
    NULL, 0, eval_opts_table, sizeof eval_opts_table / sizeof *eval_opts_table,
};

int drape_cmd_eval(int argc, char **argv)
{
    eval_opts o = {0};
    int rc = drape_opts_parse(&eval_spec, &o, argc, argv);
    if (rc) return drape_opts_status(rc);
    drape_error e = {0};
    drape_tool_job j;
    drape_npy Tn = {0};
    drape_backend *be = NULL;
    drape_identity *id = NULL;
    float *xm = NULL, *xl = NULL, *xt = NULL;
    rc = drape_tool_job_open(&j, "eval", &o.job);
    if (rc) goto done;
    rc = 1;
    const drape_model *m = j.m;
    const drape_garment *g = &m->garments[j.gi];
    int T = j.T;
    size_t n = (size_t)T * g->V * 3;
    xm = malloc(n * sizeof(float));
    xl = malloc(n * sizeof(float));
    if (!xm || !xl) { fprintf(stderr, "drape eval: out of memory\n"); goto done; }
    drape_backend_opts bo = {.threads = o.threads};
    if (drape_backend_create(&be, drape_tool_backends[o.backend], m, &bo, &e) || drape_identity_create(be, &id, j.gi, j.betas, j.nb, &e) ||
        drape_sequence_run(be, id, j.poses.data, T, 0, xm, 16, &e) ||
        drape_sequence_run(be, id, j.poses.data, T, 1, xl, 16, &e)) {
        drape_tool_die("eval", &e);
        goto done;
    }
    if (o.teacher) {
        if (drape_npy_read(&Tn, o.teacher, &e)) { drape_tool_die("eval", &e); goto done; }
        if (Tn.ndim != 3 || Tn.shape[0] != T || Tn.shape[1] != g->V || Tn.shape[2] != 3) {
            fprintf(stderr, "drape eval: %s: must be float32 [%d, %d, 3] (the teacher for these poses)\n", o.teacher, T,
                    g->V);
            goto done;
        }
        xt = Tn.data;
    } else {
        xt = malloc(n * sizeof(float));
        drape_garment_sim_params sp = drape_garment_sim_defaults();
        if (!xt || drape_garment_simulate(m, j.gi, j.betas, j.nb, j.poses.data, T, &sp, xt, NULL, &e)) {
            drape_tool_die("eval", &e);
            goto done;
        }
    }
    /* the model and skinning against the teacher, the teacher on its own */
    drape_metrics_summary s[3];
    if (drape_tool_judge(&j, 3, (const float *const[]){xm, xl, xt}, (const float *const[]){xt, xt, NULL}, s, &e)) {
        drape_tool_die("eval", &e);
        goto done;
    }
    printf("{\"garment\": \"%s\", \"frames\": %d, \"vertices\": %d, ", g->name, T, g->V);
    print_method("model", &s[0], 0);
    print_method("lbs", &s[1], 0);
    print_method("teacher", &s[2], 0);
    printf("\"model_over_lbs\": %.6g}\n", s[1].ref_mean > 0 ? s[0].ref_mean / s[1].ref_mean : 0.0);
    rc = 0;
done:
    if (id) drape_identity_free(be, id);
    drape_backend_free(be);
    if (xt && xt != Tn.data) free(xt);
    drape_npy_free(&Tn);
    free(xm);
    free(xl);
    drape_tool_job_close(&j);
    return rc;
}
