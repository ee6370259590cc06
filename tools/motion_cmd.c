/* `drape motion import`: a BVH or AMASS npz file to the pose file `drape
 * infer` reads (runtime/motion.h, docs/motion.md).
 *   drape motion import IN --out OUT.npy [--fps 30] [--source-fps 0] [--start S] [--seconds S] [--scale S] [--map FILE]
 *                          [--skeleton auto|cmu|poser|mixamo|smpl] [--keep-heading]
 * Prints what it found: format, skeleton, units, source and output frames. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../runtime/motion.h"
#include "../runtime/npy.h"
#include "tools.h"

typedef struct {
    const char *in, *out, *map;
    double fps, scale, source_fps, start, seconds;
    int skeleton, keep_heading;
} import_opts;
static const drape_opt import_opts_table[] = {
    DRAPE_OPT_P(import_opts, out, "out", "OUT.npy", DRAPE_OPT_REQUIRED,
                "where the poses go: float32 [T, 75], what drape infer --poses reads"),
    DRAPE_OPT_D(import_opts, fps, "fps", "30", DRAPE_MOTION_MIN_FPS, DRAPE_MOTION_MAX_FPS, "FPS", 0,
                "output frame rate (the file's is resampled: slerp per joint, linear translation)"),
    DRAPE_OPT_D(import_opts, source_fps, "source-fps", "0", 0, DRAPE_MOTION_MAX_FPS, "FPS", 0,
                "the file's frame rate, where its own is wrong (CMU's 60-fps takes converted at Frame Time "
                "1/120); 0: the file's"),
    DRAPE_OPT_D(import_opts, start, "start", "0", 0, 1e5, "S", 0,
                "seconds of the file skipped (e.g. the T-pose frame many CMU conversions begin with)"),
    DRAPE_OPT_D(import_opts, seconds, "seconds", "0", 0, 1e5, "S", 0, "seconds kept from --start on; 0: to the end"),
    DRAPE_OPT_D(import_opts, scale, "scale", "0", 0, 1e6, "S", 0,
                "BVH: metres per file unit; 0: the unit from the leg length, and the root moves as far as Drape's "
                "legs would carry it (given, the root moves S x the file's units)"),
    DRAPE_OPT_P(import_opts, map, "map", "FILE", 0,
                "BVH: a joint map, lines 'smpl_joint bvh_joint' (pelvis l_hip r_hip spine1 ... r_hand), instead "
                "of the built-in ones"),
    DRAPE_OPT_E(import_opts, skeleton, "skeleton", "auto", drape_skeleton_names,
                "BVH: which built-in joint map; auto: the one that names most joints"),
    DRAPE_OPT_F(import_opts, keep_heading, "keep-heading",
                "keep the file's heading (default: turned about the vertical so frame 0 faces +z)"),
};
static const drape_cmd_spec import_spec = {
    "motion import",
    "Reads a BVH (any skeleton a joint map names) or an AMASS SMPL/SMPL-H .npz, retargets it to SMPL's joints and "
    "writes the pose file drape infer reads.",
    "IN", offsetof(import_opts, in), import_opts_table, sizeof import_opts_table / sizeof *import_opts_table,
};

static int read_map(const char *path, char **text, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) return fprintf(stderr, "drape motion import: cannot open %s: %s\n", path, strerror(errno)), 1;
    *text = malloc(DRAPE_MOTION_MAX_MAP_BYTES + 1);
    *len = *text ? fread(*text, 1, DRAPE_MOTION_MAX_MAP_BYTES + 1, f) : 0;
    int bad = ferror(f);
    fclose(f);
    if (!*text || bad) return fprintf(stderr, "drape motion import: cannot read %s\n", path), 1;
    if (*len > DRAPE_MOTION_MAX_MAP_BYTES)
        return fprintf(stderr, "drape motion import: %s: over %u bytes\n", path, DRAPE_MOTION_MAX_MAP_BYTES), 1;
    return 0;
}

static int cmd_import(int argc, char **argv)
{
    import_opts o = {0};
    int rc = drape_opts_parse(&import_spec, &o, argc, argv);
    if (rc) return drape_opts_status(rc);
    drape_motion_opts mo = {.fps = o.fps, .scale = o.scale, .skeleton = o.skeleton, .keep_heading = o.keep_heading,
                            .source_fps = o.source_fps, .start = o.start, .seconds = o.seconds};
    char *map = NULL;
    if (o.map && read_map(o.map, &map, &mo.map_len)) {
        free(map);
        return 1;
    }
    mo.map = map;
    drape_motion m;
    drape_error e = {0};
    rc = drape_motion_load(&m, o.in, &mo, &e);
    free(map);
    if (rc) return drape_tool_die("motion import", &e);
    int64_t shape[2] = {m.frames, 75};
    if (drape_npy_write(o.out, m.poses, 2, shape, &e)) {
        drape_motion_free(&m);
        return drape_tool_die("motion import", &e);
    }
    printf("%s: %s, skeleton %s (%d of 24 SMPL joints), units %s (%g m), root motion x%.3g (%s); "
           "%d frames at %g fps -> %d frames at %g fps; heading %s; wrote %s\n",
           o.in, m.format, m.skeleton, m.mapped, m.units, m.scale, m.leg_ratio,
           o.scale > 0 || !strcmp(m.format, "npz") ? "as given" : "Drape's legs over the file's", m.source_frames,
           m.source_fps, m.frames, m.fps, o.keep_heading ? "kept" : "frame 0 faces +z", o.out);
    drape_motion_free(&m);
    return 0;
}

static const drape_subcmd motion_commands[] = {
    {"import", "a BVH or AMASS npz file to a pose file for drape infer", cmd_import},
};

int drape_cmd_motion(int argc, char **argv)
{
    return drape_subcmd_run("drape motion", motion_commands, sizeof motion_commands / sizeof *motion_commands, argc,
                            argv);
}
