/* `drape body import`: a body in SMPL's .npz layout into a bundle, its
 * garments refitted (runtime/body_import.h, docs/body.md).
 *   drape body import BODY.npz --model IN.safetensors --out OUT.safetensors
 * Prints what it read (vertices, faces, shape directions, posedirs ignored),
 * how the garments were refitted, and which networks are now flagged as
 * trained on another body. */
#include <stdio.h>
#include <string.h>

#include "../runtime/body_import.h"
#include "../runtime/model.h"
#include "tools.h"

typedef struct { const char *in, *model, *out; } body_import_opts;
static const drape_opt body_import_table[] = {
    DRAPE_OPT_P(body_import_opts, model, "model", "IN.safetensors", DRAPE_OPT_REQUIRED,
                "the bundle whose body is replaced (its garments are refitted to the new one)"),
    DRAPE_OPT_P(body_import_opts, out, "out", "OUT.safetensors", DRAPE_OPT_REQUIRED, "where the new bundle goes"),
};
static const drape_cmd_spec body_import_spec = {
    "body import",
    "Reads a body in SMPL's .npz layout (v_template, shapedirs, J_regressor, weights, kintree_table, f; "
    "posedirs ignored), checks it is SMPL's 24-joint skeleton, and writes the bundle with that body and its "
    "garments refitted; networks trained on the old body are flagged until retrained.",
    "BODY.npz", offsetof(body_import_opts, in), body_import_table, sizeof body_import_table / sizeof *body_import_table,
};

static int cmd_import(int argc, char **argv)
{
    body_import_opts o = {0};
    int rc = drape_opts_parse(&body_import_spec, &o, argc, argv);
    if (rc) return drape_opts_status(rc);
    drape_error e = {0};
    drape_model *m;
    /* the bundle first: its betas say how many shape directions to read */
    if (drape_model_load(&m, o.model, &e)) return drape_tool_die("body import", &e);
    int betas = m->cfg.betas;
    drape_model_free(m);
    drape_smpl_body b;
    if (drape_smpl_read_file(&b, o.in, betas, &e)) return drape_tool_die("body import", &e);
    printf("%s: %d vertices, %d faces, SMPL's 24 joints, %d shape directions (the first %d kept)\n", o.in, b.N, b.F,
           b.S_file, b.S);
    if (b.has_posedirs)
        printf("note: posedirs ignored (Drape's body has no pose-dependent correctives: docs/design.md 2.1)\n");
    drape_body_report r;
    rc = drape_body_import(o.model, &b, o.in, o.out, &r, &e);
    drape_smpl_free(&b);
    if (rc) return drape_tool_die("body import", &e);
    printf("refit: %s\n", r.vertex_mode ? "the bundle's body mesh: each garment vertex moves with its nearest body "
                                          "vertex"
                                        : "another mesh: each garment vertex moves with the joints, as its nearest "
                                          "old body vertex is skinned");
    m = NULL;
    if (drape_model_load(&m, o.out, &e)) return drape_tool_die("body import", &e);
    for (int g = 0; g < r.n_garments; g++)
        printf("  %-12s moved up to %.1f mm, %d vertices pushed out to keep their clearance, body_nn changed for %d "
               "of %d%s\n",
               m->cfg.garments[g], 1e3 * r.g[g].max_move, r.g[g].pushed, r.g[g].nn_changed, m->garments[g].V,
               r.g[g].stale ? "; network trained on another body (stale_networks)" : "");
    drape_model_free(m);
    printf("wrote %s\n", o.out);
    return 0;
}

static const drape_subcmd body_commands[] = {
    {"import", "a body in SMPL's .npz layout into a bundle, its garments refitted", cmd_import},
};

int drape_cmd_body(int argc, char **argv)
{
    return drape_subcmd_run("drape body", body_commands, sizeof body_commands / sizeof *body_commands, argc, argv);
}
