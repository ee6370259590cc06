/* `drape sim cloth`: the seed notebook's setup on any triangle mesh.
 *   drape sim cloth --mesh IN.obj [--pin i,j,...] [--ym 80] [--dt 0.0333333] [--steps 240]
 *                   [--iters 8] [--gravity 9.8] [--mass unit|area] [--density 0.2] --out OUT.obj
 * Prints the time per step.
 * `drape sim garment`: a bundle's garment on its moving body (sim/garment.h).
 *   drape sim garment --model M --garment G [--betas b0,...] --poses IN.npy --out OUT.npy [options]
 * Prints the substeps and the time per frame. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../runtime/npy.h"
#include "../sim/cloth.h"
#include "../sim/garment.h"
#include "../sim/obj.h"
#include "tools.h"
#include "../core/clock.h"

static int parse_double(const char *s, double *out)
{
    char *end;
    errno = 0;
    *out = strtod(s, &end);
    return end == s || *end || errno == ERANGE ? -1 : 0;
}

static int parse_pins(const char *s, int32_t **pins, int *n)
{
    *n = 0;
    *pins = malloc((strlen(s) / 2 + 2) * sizeof **pins);
    if (!*pins) return -1;
    if (!*s) return 0;
    for (;;) {
        char *end;
        errno = 0;
        long v = strtol(s, &end, 10);
        if (end == s || errno || v < 0 || v > INT32_MAX) return -1;
        (*pins)[(*n)++] = (int32_t)v;
        if (!*end) return 0;
        if (*end != ',') return -1;
        s = end + 1;
    }
}

static int cmd_cloth(int argc, char **argv)
{
    const char *mesh = NULL, *out = NULL, *pin_s = "", *mass = "unit";
    double ym = 80, dt = 1.0 / 30, gravity = 9.8, density = 0.2, steps_d = 240, iters_d = 8;
    for (int i = 0; i < argc; i += 2) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        double *num = !strcmp(a, "--ym") ? &ym : !strcmp(a, "--dt") ? &dt : !strcmp(a, "--gravity") ? &gravity
                    : !strcmp(a, "--density") ? &density : !strcmp(a, "--steps") ? &steps_d
                    : !strcmp(a, "--iters") ? &iters_d : NULL;
        if (!v) { fprintf(stderr, "drape sim cloth: %s needs a value\n", a); return 2; }
        if (num) {
            if (parse_double(v, num)) { fprintf(stderr, "drape sim cloth: %s: '%s' is not a number\n", a, v); return 2; }
        } else if (!strcmp(a, "--mesh")) mesh = v;
        else if (!strcmp(a, "--out")) out = v;
        else if (!strcmp(a, "--pin")) pin_s = v;
        else if (!strcmp(a, "--mass")) mass = v;
        else { fprintf(stderr, "drape sim cloth: unknown option %s\n", a); return 2; }
    }
    if (!mesh || !out) { fprintf(stderr, "drape sim cloth: --mesh and --out are required\n"); return 2; }
    if (steps_d < 0 || steps_d > 1e7 || iters_d < 1 || iters_d > 1000 || (int)steps_d != steps_d || (int)iters_d != iters_d) {
        fprintf(stderr, "drape sim cloth: --steps must be an integer in [0, 1e7] and --iters in [1, 1000]\n");
        return 2;
    }
    if (strcmp(mass, "unit") && strcmp(mass, "area")) { fprintf(stderr, "drape sim cloth: --mass is unit or area\n"); return 2; }
    int32_t *pins;
    int n_pins;
    if (parse_pins(pin_s, &pins, &n_pins)) {
        fprintf(stderr, "drape sim cloth: --pin must be comma-separated vertex indices (0-based), got '%s'\n", pin_s);
        free(pins);
        return 2;
    }
    drape_error e = {0};
    drape_obj m;
    drape_cloth *c = NULL;
    int rc = 1;
    if (drape_obj_read(&m, mesh, &e)) { fprintf(stderr, "drape sim cloth: %s\n", e.msg); free(pins); return 1; }
    drape_cloth_params p = {.dt = dt, .gravity = gravity, .iters = (int)iters_d, .ym = ym,
                            .mass = strcmp(mass, "unit") ? DRAPE_MASS_AREA : DRAPE_MASS_UNIT, .density = density};
    double t0 = drape_now_ms();
    if (drape_cloth_create(&c, m.v, m.n, m.faces, m.F, pins, n_pins, &p, &e)) {
        fprintf(stderr, "drape sim cloth: %s: %s\n", mesh, e.msg);
        goto done;
    }
    double t1 = drape_now_ms();
    int steps = (int)steps_d;
    for (int s = 0; s < steps; s++)
        if (drape_cloth_step(c, &e)) { fprintf(stderr, "drape sim cloth: step %d: %s\n", s, e.msg); goto done; }
    double t2 = drape_now_ms();
    if (drape_obj_write(out, drape_cloth_positions(c), m.n, m.faces, m.F, &e)) {
        fprintf(stderr, "drape sim cloth: %s\n", e.msg);
        goto done;
    }
    printf("%d nodes, %d springs, %d pinned; setup and factorization %.2f ms; %d steps, %.4f ms per step\n", m.n,
           drape_cloth_springs(c), n_pins, t1 - t0, steps, steps ? (t2 - t1) / steps : 0.0);
    rc = 0;
done:
    drape_cloth_free(c);
    drape_obj_free(&m);
    free(pins);
    return rc;
}

static const char GARMENT_USAGE[] =
    "usage: drape sim garment --model MODEL --garment NAME [--betas b0,...] --poses IN.npy --out OUT.npy\n"
    "           [--iters 10] [--substeps 0 (auto)] [--max-substeps 16] [--max-disp 0.01] [--settle 60]\n"
    "           [--stretch 200] [--bend 2] [--density 0.15] [--attach 1000] [--band 0.01] [--damping 0.02]\n"
    "           [--margin 0.005] [--vertex-margin -1 (off)] [--friction 0.3] [--reach 0.08] [--gravity 9.81]\n";

static int cmd_garment(int argc, char **argv)
{
    drape_tool_job_args ja = {0};
    const char *out_p = NULL;
    drape_garment_sim_params p = drape_garment_sim_defaults();
    double iters = p.iters, sub = p.substeps, maxsub = p.max_substeps, settle = p.settle;
    struct { const char *name; double *v; int integer; } num[] = {
        {"--iters", &iters, 1}, {"--substeps", &sub, 1}, {"--max-substeps", &maxsub, 1}, {"--settle", &settle, 1},
        {"--max-disp", &p.max_disp, 0}, {"--stretch", &p.stretch, 0}, {"--bend", &p.bend, 0},
        {"--density", &p.density, 0}, {"--attach", &p.attach, 0}, {"--band", &p.attach_band, 0},
        {"--damping", &p.damping, 0}, {"--margin", &p.margin, 0}, {"--vertex-margin", &p.vertex_margin, 0},
        {"--friction", &p.friction, 0}, {"--reach", &p.reach, 0}, {"--gravity", &p.gravity, 0},
    };
    for (int i = 0; i < argc; i += 2) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!v) { fprintf(stderr, "drape sim garment: %s needs a value\n%s", a, GARMENT_USAGE); return 2; }
        int found = 0;
        for (size_t k = 0; k < sizeof num / sizeof *num; k++)
            if (!strcmp(a, num[k].name)) {
                found = 1;
                if (parse_double(v, num[k].v) || (num[k].integer && (*num[k].v != (int)*num[k].v))) {
                    fprintf(stderr, "drape sim garment: %s: '%s' is not %s\n", a, v,
                            num[k].integer ? "an integer" : "a number");
                    return 2;
                }
            }
        if (found || drape_tool_job_opt(&ja, a, v)) continue;
        if (!strcmp(a, "--out")) out_p = v;
        else { fprintf(stderr, "drape sim garment: unknown option %s\n%s", a, GARMENT_USAGE); return 2; }
    }
    if (!out_p) { fprintf(stderr, "drape sim garment: --out is required\n%s", GARMENT_USAGE); return 2; }
    p.iters = (int)iters, p.substeps = (int)sub, p.max_substeps = (int)maxsub, p.settle = (int)settle;
    drape_error e = {0};
    drape_tool_job j;
    float *out = NULL;
    int rc = drape_tool_job_open(&j, "sim garment", &ja);
    if (rc) goto done;
    rc = 1;
    const drape_garment *g = &j.m->garments[j.gi];
    int T = j.T, V = g->V;
    out = malloc((size_t)T * V * 3 * sizeof *out);
    if (!out) { fprintf(stderr, "drape sim garment: out of memory\n"); goto done; }
    drape_garment_sim_stats st;
    if (drape_garment_simulate(j.m, j.gi, j.betas, j.nb, j.poses.data, T, &p, out, &st, &e)) {
        drape_tool_die("sim garment", &e);
        goto done;
    }
    int64_t shape[3] = {T, V, 3};
    if (drape_npy_write(out_p, out, 3, shape, &e)) { drape_tool_die("sim garment", &e); goto done; }
    printf("%s: %d vertices, %d attached; %d frames, %d substeps of %d iterations; setup %.1f ms, settle %.1f ms, "
           "%.3f ms per frame (%.3f ms CPU), %.1f vertices in contact per frame\n",
           g->name, V, st.attached, T, st.substeps, p.iters, st.setup_ms, st.settle_ms, st.ms_per_frame,
           st.cpu_ms_per_frame, st.contacts);
    rc = 0;
done:
    free(out);
    drape_tool_job_close(&j);
    return rc;
}

int drape_cmd_sim(int argc, char **argv)
{
    if (argc >= 1 && !strcmp(argv[0], "cloth")) return cmd_cloth(argc - 1, argv + 1);
    if (argc >= 1 && !strcmp(argv[0], "garment")) return cmd_garment(argc - 1, argv + 1);
    fprintf(stderr, "usage: drape sim cloth --mesh IN.obj [--pin i,j,...] [--ym 80] [--dt 0.0333333] [--steps 240]\n"
                    "                       [--iters 8] [--gravity 9.8] [--mass unit|area] [--density 0.2] --out OUT.obj\n"
                    "%s", GARMENT_USAGE);
    return 2;
}
