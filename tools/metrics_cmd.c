/* `drape metrics`: quality of a garment vertex sequence (sim/metrics.h).
 *   drape metrics --model M --garment G [--betas b0,...] --poses IN.npy --verts X.npy [--ref Y.npy]
 * X.npy and Y.npy are float32 [T,V,3] world positions for the T poses of
 * IN.npy (what `drape infer` and `drape sim garment` write); the rest shape
 * is the garment retargeted to the betas, the body is posed per frame.
 * Prints one JSON object. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../runtime/npy.h"
#include "../sim/metrics.h"
#include "tools.h"

static int check_verts(const char *path, const drape_npy *a, int64_t T, int V)
{
    if (a->ndim == 3 && a->shape[0] == T && a->shape[1] == V && a->shape[2] == 3) return 0;
    fprintf(stderr, "drape metrics: %s: must be float32 [%lld, %d, 3] (frames of the poses, the garment's vertices), got [",
            path, (long long)T, V);
    for (int i = 0; i < a->ndim; i++) fprintf(stderr, i ? ", %lld" : "%lld", (long long)a->shape[i]);
    fprintf(stderr, "]\n");
    return 1;
}

typedef struct {
    drape_tool_job_args job;
    const char *verts, *ref;
} metrics_opts;
static const drape_opt metrics_opts_table[] = {
    DRAPE_TOOL_JOB_OPTS(metrics_opts),
    DRAPE_OPT_P(metrics_opts, verts, "verts", "X.npy", DRAPE_OPT_REQUIRED,
                "the vertices judged, float32 [T, V, 3] (what drape infer and drape sim garment write)"),
    DRAPE_OPT_P(metrics_opts, ref, "ref", "Y.npy", 0, "a reference of the same shape: adds the mean and max distance to it"),
};
static const drape_cmd_spec metrics_spec = {
    "metrics",
    "Judges a garment vertex sequence for the poses (sim/metrics.h), against the garment retargeted to the betas\n"
    "and the body posed per frame, and prints one JSON object.",
    NULL, 0, metrics_opts_table, sizeof metrics_opts_table / sizeof *metrics_opts_table,
};

int drape_cmd_metrics(int argc, char **argv)
{
    metrics_opts o = {0};
    int rc = drape_opts_parse(&metrics_spec, &o, argc, argv);
    if (rc) return drape_opts_status(rc);
    drape_error e = {0};
    drape_tool_job j;
    drape_npy X = {0}, Y = {0};
    rc = drape_tool_job_open(&j, "metrics", &o.job);
    if (rc) goto done;
    rc = 1;
    const drape_model *m = j.m;
    const drape_garment *g = &m->garments[j.gi];
    int T = j.T;
    if (drape_npy_read(&X, o.verts, &e)) { drape_tool_die("metrics", &e); goto done; }
    if (check_verts(o.verts, &X, T, g->V)) goto done;
    if (o.ref) {
        if (drape_npy_read(&Y, o.ref, &e)) { drape_tool_die("metrics", &e); goto done; }
        if (check_verts(o.ref, &Y, T, g->V)) goto done;
    }
    drape_metrics_summary s;
    if (drape_tool_judge(&j, 1, (const float *const[]){X.data}, (const float *const[]){o.ref ? Y.data : NULL}, &s, &e)) {
        drape_tool_die("metrics", &e);
        goto done;
    }
    printf("{\"garment\": \"%s\", \"frames\": %d, \"vertices\": %d, \"edge_error\": %.9g, \"area_error\": %.9g, "
           "\"collision_pct\": %.9g, \"energy\": {\"stretch\": %.9g, \"bending\": %.9g, \"inertia\": %.9g, "
           "\"gravity\": %.9g}",
           g->name, s.frames, g->V, s.edge_error, s.area_error, s.collision_pct, s.stretch, s.bending, s.inertia,
           s.gravity);
    if (s.has_ref) printf(", \"ref\": {\"mean\": %.9g, \"max\": %.9g}", s.ref_mean, s.ref_max);
    printf("}\n");
    rc = 0;
done:
    drape_npy_free(&X);
    drape_npy_free(&Y);
    drape_tool_job_close(&j);
    return rc;
}
