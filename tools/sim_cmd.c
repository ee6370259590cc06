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

typedef struct {
    const char *mesh, *out, *pin;
    double ym, dt, gravity, density;
    int steps, iters, mass;
} cloth_opts;
static const char *const mass_modes[] = {"unit", "area", NULL}; /* in drape_mass_mode's order */
static const drape_opt cloth_opts_table[] = {
    DRAPE_OPT_P(cloth_opts, mesh, "mesh", "IN.obj", DRAPE_OPT_REQUIRED, "the cloth: a triangle mesh"),
    DRAPE_OPT_P(cloth_opts, out, "out", "OUT.obj", DRAPE_OPT_REQUIRED, "the mesh after the last step"),
    DRAPE_OPT_S(cloth_opts, pin, "pin", "", "i,j,...", 0, "pinned vertices, 0-based indices"),
    DRAPE_OPT_D(cloth_opts, ym, "ym", "80", 0, DRAPE_OPT_UNBOUNDED, "K", DRAPE_OPT_GT_MIN,
                "spring stiffness scale, k = ym / l0^2"),
    DRAPE_OPT_D(cloth_opts, dt, "dt", NULL, 0, DRAPE_OPT_UNBOUNDED, "S", DRAPE_OPT_GT_MIN, "time step, s"),
    DRAPE_OPT_I(cloth_opts, steps, "steps", "240", 0, 1e7, "N", 0, "steps"),
    DRAPE_OPT_I(cloth_opts, iters, "iters", "8", 1, 1000, "N", 0, "local/global iterations per step"),
    DRAPE_OPT_D_ANY(cloth_opts, gravity, "gravity", "9.8", "G",
                "m/s^2, along -y"),
    DRAPE_OPT_E(cloth_opts, mass, "mass", "unit", mass_modes, "unit: every node weighs 1; area: by its triangles' area"),
    DRAPE_OPT_D_ANY(cloth_opts, density, "density", "0.2", "KG",
                "kg/m^2, for --mass area (> 0)"),
};
static const drape_cmd_spec cloth_spec = {
    "sim cloth", "The seed notebook's mass-spring cloth on any triangle mesh; prints the time per step.", NULL, 0,
    cloth_opts_table, sizeof cloth_opts_table / sizeof *cloth_opts_table,
};

static int cmd_cloth(int argc, char **argv)
{
    cloth_opts o = {.dt = 1.0 / 30};
    int rc = drape_opts_parse(&cloth_spec, &o, argc, argv);
    if (rc) return drape_opts_status(rc);
    int32_t *pins;
    int n_pins;
    if (parse_pins(o.pin, &pins, &n_pins)) {
        free(pins);
        return drape_opts_fail(&cloth_spec, "--pin must be comma-separated vertex indices (0-based), got '%s'", o.pin);
    }
    drape_error e = {0};
    drape_obj m;
    drape_cloth *c = NULL;
    rc = 1;
    if (drape_obj_read(&m, o.mesh, &e)) { fprintf(stderr, "drape sim cloth: %s\n", e.msg); free(pins); return 1; }
    drape_cloth_params p = {.dt = o.dt, .gravity = o.gravity, .iters = o.iters, .ym = o.ym,
                            .mass = o.mass ? DRAPE_MASS_AREA : DRAPE_MASS_UNIT, .density = o.density};
    double t0 = drape_now_ms();
    if (drape_cloth_create(&c, m.v, m.n, m.faces, m.F, pins, n_pins, &p, &e)) {
        fprintf(stderr, "drape sim cloth: %s: %s\n", o.mesh, e.msg);
        goto done;
    }
    double t1 = drape_now_ms();
    int steps = o.steps;
    for (int s = 0; s < steps; s++)
        if (drape_cloth_step(c, &e)) { fprintf(stderr, "drape sim cloth: step %d: %s\n", s, e.msg); goto done; }
    double t2 = drape_now_ms();
    if (drape_obj_write(o.out, drape_cloth_positions(c), m.n, m.faces, m.F, &e)) {
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

typedef struct {
    drape_tool_job_args job;
    const char *out;
    int realtime;
    const char *guide;
    double guide_k;
    drape_garment_sim_params p;
} garment_opts;
/* The defaults are sim/garment.c's (NULL here); the bounds are its checks'
 * and the cloth's where they are inclusive. */
static const drape_opt garment_opts_table[] = {
    DRAPE_TOOL_JOB_OPTS(garment_opts),
    DRAPE_OPT_P(garment_opts, out, "out", "OUT.npy", DRAPE_OPT_REQUIRED,
                "where the vertices go: float32 [T, V, 3], as drape infer writes them"),
    DRAPE_OPT_F(garment_opts, realtime, "realtime",
                "draped's physics mode exactly (docs/server.md): its served settings, frame by frame; takes none "
                "of the options below but --guide and --substeps (draped --physics-substeps' count)"),
    DRAPE_OPT_P(garment_opts, guide, "guide", "G.npy", 0,
                "guide frames float32 [T, V, 3] (drape infer's output on the same poses): every vertex pulled "
                "towards its frame's by a spring (docs/conventions.md, \"Garment simulation\"); a diagnostic, not served"),
    DRAPE_OPT_D(garment_opts, guide_k, "guide-k", "0", 0, 1e6, "K", 0,
                "the guide's stiffness per unit mass, 1/s^2 (with --guide; 0: 10)"),
    DRAPE_OPT_I(garment_opts, p.iters, "iters", NULL, 1, 1000, "N", 0, "local/global iterations per substep"),
    DRAPE_OPT_I(garment_opts, p.substeps, "substeps", NULL, 0, 64, "N", 0, "substeps per frame; 0: from the motion"),
    DRAPE_OPT_I(garment_opts, p.max_substeps, "max-substeps", NULL, 1, 64, "N", 0, "at most this many, when automatic"),
    DRAPE_OPT_D(garment_opts, p.max_disp, "max-disp", NULL, 0, DRAPE_OPT_UNBOUNDED, "M", DRAPE_OPT_GT_MIN,
                "automatic: the fewest substeps that move no body vertex more than this per substep, m"),
    DRAPE_OPT_I(garment_opts, p.adapt, "adapt", NULL, 0, 64, "N", 0,
                "per frame, up to this many substeps: the count doubled while a body vertex moves more than "
                "--max-disp a substep in that frame; 0: off"),
    DRAPE_OPT_I(garment_opts, p.settle, "settle", NULL, 0, 100000, "N", 0, "steps at the first pose before frame 0"),
    DRAPE_OPT_D(garment_opts, p.stretch, "stretch", NULL, 0, DRAPE_OPT_UNBOUNDED, "K", DRAPE_OPT_GT_MIN,
                "edge springs, N/m"),
    DRAPE_OPT_D(garment_opts, p.bend, "bend", NULL, 0, DRAPE_OPT_UNBOUNDED, "K", 0, "bending springs, N/m"),
    DRAPE_OPT_D(garment_opts, p.density, "density", NULL, 0, DRAPE_OPT_UNBOUNDED, "KG", DRAPE_OPT_GT_MIN, "kg/m^2"),
    DRAPE_OPT_D(garment_opts, p.attach, "attach", NULL, 0, DRAPE_OPT_UNBOUNDED, "K", 0,
                "the waist's attachment to its skinned positions, N/m"),
    DRAPE_OPT_D_ANY(garment_opts, p.attach_band, "band", NULL, "M",
                "without the bundle's attach list, the vertices within this of the top are attached, m"),
    DRAPE_OPT_D(garment_opts, p.damping, "damping", NULL, 0, 1, "D", DRAPE_OPT_LT_MAX,
                "velocity scaled by 1 - damping after every step"),
    DRAPE_OPT_D(garment_opts, p.margin, "margin", NULL, 0, DRAPE_OPT_UNBOUNDED, "M", 0,
                "distance kept from the body's triangles, m"),
    DRAPE_OPT_D_ANY(garment_opts, p.vertex_margin, "vertex-margin", NULL, "M",
                "also keep every free vertex this far above its nearest body vertex's tangent plane, m; negative: off"),
    DRAPE_OPT_D(garment_opts, p.friction, "friction", NULL, 0, 1, "MU", 0, "Coulomb coefficient against the body's motion"),
    DRAPE_OPT_D_ANY(garment_opts, p.reach, "reach", NULL, "M",
                "how deep inside the body a vertex is still found, m (> margin and vertex-margin)"),
    DRAPE_OPT_D_ANY(garment_opts, p.gravity, "gravity", NULL, "G", "m/s^2, along -y"),
    DRAPE_OPT_D(garment_opts, p.cell, "cell", NULL, 0, 1, "M", 0,
                "the body grid's cell, m; 0: a body triangle's width, at least the reach"),
    DRAPE_OPT_I(garment_opts, p.warm, "warm", NULL, 0, 1, "0|1", 0,
                "1: each vertex's collision query starts from its last nearest triangle"),
    DRAPE_OPT_I(garment_opts, p.track, "track", NULL, 0, 1, "0|1", 0,
                "1: a vertex the body passed over in a substep goes back to the side it was on"),
    DRAPE_OPT_D(garment_opts, p.cheby, "cheby", NULL, 0, 1, "RHO", DRAPE_OPT_LT_MAX,
                "Chebyshev acceleration of the iterations with this spectral radius estimate; 0: off"),
    DRAPE_OPT_D(garment_opts, p.max_stray, "max-stray", NULL, 0, 1000, "M", 0,
                "a vertex this far from its skinned place, and twice the garment's size, (or a state not finite) "
                "restarts the run there, m; 0: never"),
};
static const drape_cmd_spec garment_spec = {
    "sim garment",
    "Simulates a bundle's garment on its moving body (sim/garment.h); prints the substeps and the time per frame.",
    NULL, 0, garment_opts_table, sizeof garment_opts_table / sizeof *garment_opts_table,
};

/* The bundle's teacher flags for this garment (docs/design.md §3.3), the
 * command line's over them: parsed again with them in front. Says which it
 * used. 0, or the exit status after a message. */
static int with_teacher(garment_opts *o, const drape_tool_job *j, int argc, char **argv)
{
    const char *t = j->m->cfg.teacher[j->gi];
    if (!j->m->cfg.has_teacher) {
        printf("settings: the defaults and the command line (the bundle carries no teacher settings)\n");
        return 0;
    }
    char buf[DRAPE_TEACHER_MAX], *save = NULL, **all = malloc(((size_t)argc + DRAPE_TEACHER_MAX / 2) * sizeof *all);
    if (!all) return fprintf(stderr, "drape sim garment: out of memory\n"), 1;
    snprintf(buf, sizeof buf, "%s", t);
    int n = 0, rc = 0;
    for (char *tok = strtok_r(buf, " ", &save); tok; tok = strtok_r(NULL, " ", &save)) {
        /* only the simulator's own flags: not the job's, --out, --realtime
         * or the guide's (the table's first eight) */
        for (int k = 0; k < 8 && !rc; k++) {
            size_t len = strlen(garment_opts_table[k].name);
            if (!strncmp(tok, "--", 2) && !strncmp(tok + 2, garment_opts_table[k].name, len) && (tok[2 + len] == 0 || tok[2 + len] == '='))
                rc = 2;
        }
        all[n++] = tok;
    }
    garment_opts o2 = {.p = drape_garment_sim_defaults()};
    if (!rc) {
        memcpy(all + n, argv, (size_t)argc * sizeof *all);
        rc = drape_opts_status(drape_opts_parse(&garment_spec, &o2, n + argc, all));
    }
    free(all);
    if (rc) return fprintf(stderr, "drape sim garment: the bundle's teacher settings for %s are not usable: '%s'\n",
                           j->m->cfg.garments[j->gi], t), rc;
    *o = o2;
    printf("settings: the bundle's teacher for %s (%s), the command line's over them\n", j->m->cfg.garments[j->gi],
           *t ? t : "none of its own");
    const char *pre = j->m->cfg.teacher_prelude[j->gi];
    if (*pre)
        printf("note: the bundle's teacher played a worn-in start before each clip (train/'s motion %s, "
               "train/dataset.py --garment-prelude); this run starts from rest, so until the cloth settles its "
               "frames are not that reference's (train/eval.py plays the prelude)\n", pre);
    return 0;
}

static int cmd_garment(int argc, char **argv)
{
    garment_opts o = {.p = drape_garment_sim_defaults()};
    int rc = drape_opts_parse(&garment_spec, &o, argc, argv);
    if (rc) return drape_opts_status(rc);
    int realtime_substeps = 0; /* --realtime's count, as draped --physics-substeps sets it per garment */
    if (o.realtime) { /* the served settings are one set: a changed one would not be what draped runs */
        drape_garment_sim_params d = drape_garment_sim_defaults();
        realtime_substeps = o.p.substeps;
        o.p.substeps = d.substeps;
        if (memcmp(&d, &o.p, sizeof d))
            return drape_opts_fail(&garment_spec,
                                   "--realtime runs the served settings; it takes no simulation options but --substeps");
    }
    if (o.guide_k > 0 && !o.guide) return drape_opts_fail(&garment_spec, "--guide-k takes --guide");
    drape_error e = {0};
    drape_tool_job j;
    float *out = NULL;
    rc = drape_tool_job_open(&j, "sim garment", &o.job);
    /* --realtime is the server's settings for this garment, not the teacher's */
    if (!rc && o.realtime) {
        o.p = drape_garment_sim_served(j.m, j.gi); /* with the garment's own pull, from the bundle */
        if (realtime_substeps) o.p.substeps = realtime_substeps;
        printf("settings: realtime, the settings draped's physics mode serves %s (pull %g/s^2%s)\n",
               j.m->cfg.garments[j.gi], o.p.guide, j.m->cfg.physics[j.gi].has_pull ? ", the bundle's" : "");
    }
    else if (rc || (rc = with_teacher(&o, &j, argc, argv))) goto done;
    rc = 1;
    const drape_garment *g = &j.m->garments[j.gi];
    int T = j.T, V = g->V;
    out = malloc((size_t)T * V * 3 * sizeof *out);
    if (!out) { fprintf(stderr, "drape sim garment: out of memory\n"); goto done; }
    drape_garment_sim_stats st;
    drape_npy gd = {0};
    if (o.guide) {
        if (drape_npy_read(&gd, o.guide, &e)) { drape_tool_die("sim garment", &e); goto done; }
        if (gd.ndim != 3 || gd.shape[0] != T || gd.shape[1] != V || gd.shape[2] != 3) {
            fprintf(stderr, "drape sim garment: %s: guide frames must be [%d, %d, 3] (the poses' frames, %s's vertices)\n",
                    o.guide, T, V, g->name);
            drape_npy_free(&gd);
            goto done;
        }
        o.p.guide = o.guide_k > 0 ? o.guide_k : DRAPE_GUIDE_DEFAULT;
    }
    rc = drape_garment_simulate_guided(j.m, j.gi, j.betas, j.nb, j.poses.data, T, gd.data, &o.p, out, &st, &e);
    drape_npy_free(&gd);
    if (rc) {
        rc = 1;
        drape_tool_die("sim garment", &e);
        goto done;
    }
    rc = 1;
    int64_t shape[3] = {T, V, 3};
    if (drape_npy_write(o.out, out, 3, shape, &e)) { drape_tool_die("sim garment", &e); goto done; }
    printf("%s: %d vertices, %d attached; %d frames, %d substeps (at most %d, %g m) of %d iterations%s, vertex margin "
           "%g m; setup %.1f ms, settle %.1f ms, %.3f ms per frame (%.3f ms CPU), %.1f vertices in contact per frame",
           g->name, V, st.attached, T, st.substeps, o.p.max_substeps, o.p.max_disp, o.p.iters,
           o.realtime ? " (realtime)" : "", o.p.vertex_margin, st.setup_ms, st.settle_ms, st.ms_per_frame,
           st.cpu_ms_per_frame, st.contacts);
    if (o.guide) printf("; guided by %s at %g/s^2", o.guide, o.p.guide);
    if (st.mean_substeps != st.substeps) printf("; %.2f substeps a frame on average (adapt %d)", st.mean_substeps, o.p.adapt);
    if (st.resets) printf("; %d resets (the state diverged)", st.resets);
    printf("\n");
    rc = 0;
done:
    free(out);
    drape_tool_job_close(&j);
    return rc;
}

static const drape_subcmd sim_commands[] = {
    {"cloth", "the seed notebook's cloth on a triangle mesh", cmd_cloth},
    {"garment", "a bundle's garment on its moving body", cmd_garment},
};

int drape_cmd_sim(int argc, char **argv)
{
    return drape_subcmd_run("drape sim", sim_commands, sizeof sim_commands / sizeof *sim_commands, argc, argv);
}
