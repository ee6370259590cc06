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
#include "../sim/garment.h"
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

int drape_cmd_metrics(int argc, char **argv)
{
    drape_tool_job_args ja = {0};
    const char *verts_p = NULL, *ref_p = NULL;
    for (int i = 0; i < argc; i += 2) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!v) { fprintf(stderr, "drape metrics: %s needs a value\n", a); return 2; }
        if (drape_tool_job_opt(&ja, a, v)) continue;
        if (!strcmp(a, "--verts")) verts_p = v;
        else if (!strcmp(a, "--ref")) ref_p = v;
        else { fprintf(stderr, "drape metrics: unknown option %s\n", a); return 2; }
    }
    if (!verts_p) {
        fprintf(stderr, "usage: drape metrics --model MODEL --garment NAME [--betas b0,...] --poses IN.npy --verts X.npy "
                        "[--ref Y.npy]\n");
        return 2;
    }
    drape_error e = {0};
    drape_tool_job j;
    drape_npy X = {0}, Y = {0};
    float *rest = NULL, *body = NULL;
    drape_metrics *mx = NULL;
    int rc = drape_tool_job_open(&j, "metrics", &ja);
    if (rc) goto done;
    rc = 1;
    const drape_model *m = j.m;
    const drape_garment *g = &m->garments[j.gi];
    int T = j.T;
    if (drape_npy_read(&X, verts_p, &e)) { drape_tool_die("metrics", &e); goto done; }
    if (check_verts(verts_p, &X, T, g->V)) goto done;
    if (ref_p) {
        if (drape_npy_read(&Y, ref_p, &e)) { drape_tool_die("metrics", &e); goto done; }
        if (check_verts(ref_p, &Y, T, g->V)) goto done;
    }
    rest = malloc((size_t)g->V * 3 * sizeof *rest);
    body = malloc((size_t)T * m->Nb * 3 * sizeof *body);
    if (!rest || !body) { fprintf(stderr, "drape metrics: out of memory\n"); goto done; }
    drape_metrics_material mat = drape_metrics_default_material(m->cfg.fps);
    if (drape_garment_lbs(m, j.gi, j.betas, j.nb, j.poses.data, T, rest, NULL, &e) ||
        drape_garment_body_frames(m, j.betas, j.nb, j.poses.data, T, body, &e) ||
        drape_metrics_create(&mx, rest, g->V, g->faces, g->F, m->body_faces, m->Fb, m->Nb, &mat, &e)) {
        drape_tool_die("metrics", &e);
        goto done;
    }
    size_t fv = (size_t)g->V * 3;
    for (int t = 0; t < T; t++)
        if (drape_metrics_add(mx, X.data + t * fv, body + (size_t)t * m->Nb * 3, ref_p ? Y.data + t * fv : NULL, &e)) {
            drape_tool_die("metrics", &e);
            goto done;
        }
    drape_metrics_summary s;
    drape_metrics_get(mx, &s);
    printf("{\"garment\": \"%s\", \"frames\": %d, \"vertices\": %d, \"edge_error\": %.9g, \"area_error\": %.9g, "
           "\"collision_pct\": %.9g, \"energy\": {\"stretch\": %.9g, \"bending\": %.9g, \"inertia\": %.9g, "
           "\"gravity\": %.9g}",
           g->name, s.frames, g->V, s.edge_error, s.area_error, s.collision_pct, s.stretch, s.bending, s.inertia,
           s.gravity);
    if (s.has_ref) printf(", \"ref\": {\"mean\": %.9g, \"max\": %.9g}", s.ref_mean, s.ref_max);
    printf("}\n");
    rc = 0;
done:
    drape_metrics_free(mx);
    free(rest);
    free(body);
    drape_npy_free(&X);
    drape_npy_free(&Y);
    drape_tool_job_close(&j);
    return rc;
}
