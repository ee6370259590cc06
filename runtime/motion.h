/* Motion in from the formats people have (docs/motion.md): BVH files of any
 * skeleton that a joint map names (CMU, Poser/three.js, Mixamo, SMPL-named,
 * or a map file), retargeted to SMPL's 24 joints by bone direction, and
 * AMASS's SMPL/SMPL-H .npz files; both resampled to a frame rate. The
 * result is what `drape infer` reads: float32 [T, 75] per frame, 72 local
 * axis-angle values in SMPL order then the root translation, y up, metres
 * (runtime/sequence.h). Every malformed file gets DRAPE_EFORMAT (or
 * DRAPE_ENONFINITE, DRAPE_ERANGE, DRAPE_ENOTFOUND for joints no map knows)
 * and one line that says what and where. */
#ifndef DRAPE_MOTION_H
#define DRAPE_MOTION_H

#include <stddef.h>
#include <stdint.h>

#include "../core/status.h"

/* Hard limits of the readers. */
#define DRAPE_MOTION_MAX_JOINTS 256            /* BVH joints (End Sites count apart, as many) */
#define DRAPE_MOTION_MAX_NAME 64               /* characters of a joint name */
#define DRAPE_MOTION_MAX_FRAMES 100000         /* frames in and out */
#define DRAPE_MOTION_MAX_BYTES (64u << 20)     /* a file (drape motion import; draped has its own flag) */
#define DRAPE_MOTION_MAX_MAP_BYTES (64u << 10) /* a joint map file */
#define DRAPE_MOTION_MIN_FPS 1.0               /* source and target frame rates */
#define DRAPE_MOTION_MAX_FPS 1000.0

/* The skeletons a BVH can be read as: the built-in joint maps, a map given
 * as text (drape_motion_opts.map), or whichever built-in map matches best. */
typedef enum {
    DRAPE_SKEL_AUTO,
    DRAPE_SKEL_CMU,
    DRAPE_SKEL_POSER,
    DRAPE_SKEL_MIXAMO,
    DRAPE_SKEL_SMPL,
    DRAPE_SKEL_MAP,
} drape_skeleton;
/* "auto", "cmu", "poser", "mixamo", "smpl", NULL: --skeleton's values, in
 * drape_skeleton's order */
extern const char *const drape_skeleton_names[];

/* SMPL's joints in order ("pelvis", "l_hip", ...) and the rest joints of
 * Drape's body (train/assets.py rest_joints: T-pose, y up, facing +z, left
 * on +x, feet on y = 0), the rest the retargeting aims at. */
extern const char *const drape_smpl_joint_names[24];
extern const float drape_motion_smpl_rest[24 * 3];

typedef struct {
    double fps;         /* output frame rate; 0: 30 */
    double scale;       /* metres per file unit; 0: from the leg length */
    int skeleton;       /* drape_skeleton; DRAPE_SKEL_MAP needs map */
    const char *map;    /* a joint map's text (lines "smpl_joint bvh_joint"), or NULL */
    size_t map_len;
    int keep_heading;   /* 0: turned so frame 0 faces +z; 1: the file's heading */
    double source_fps;  /* the file's frame rate when its own is wrong (CMU's 60-fps takes
                           converted with Frame Time 1/120); 0: the file's */
    double start;       /* s of the file skipped (a T-pose frame many files begin with); 0: none */
    double seconds;     /* s kept from start on; 0: to the end */
} drape_motion_opts;

typedef struct {
    int frames;            /* T */
    float *poses;          /* [T, 75] */
    double fps;            /* of poses */
    double source_fps;     /* of the file */
    int source_frames;
    char format[8];        /* "bvh", "npz" */
    char skeleton[16];     /* "cmu", "poser", "mixamo", "smpl", "map"; npz: "smpl", "smplh" */
    char units[16];        /* "m", "cm", "mm", "inch", "cmu" (1/0.45 inch), "scale" (given) */
    double scale;          /* metres per file unit */
    double leg_ratio;      /* Drape's leg over the file's (root translation scale) */
    int mapped;            /* SMPL joints the file drives (24 for npz) */
} drape_motion;

/* A BVH (starts with HIERARCHY) or an npz (starts with PK\3\4) in memory,
 * told apart by its first bytes. o may be NULL (the defaults). */
int drape_motion_read(drape_motion *out, const uint8_t *data, size_t len, const drape_motion_opts *o,
                      drape_error *err);
int drape_motion_read_bvh(drape_motion *out, const uint8_t *data, size_t len, const drape_motion_opts *o,
                          drape_error *err);
int drape_motion_read_npz(drape_motion *out, const uint8_t *data, size_t len, const drape_motion_opts *o,
                          drape_error *err);
/* The same from a file of at most DRAPE_MOTION_MAX_BYTES; messages start
 * with its path. */
int drape_motion_load(drape_motion *out, const char *path, const drape_motion_opts *o, drape_error *err);
void drape_motion_free(drape_motion *m);

/* out [T_out, 75] (malloc'd) = in [T_in, 75] at fps_out: frame i is the
 * source at time i / fps_out, its joints slerped (quaternions, shorter arc)
 * and its translation blended linearly between the two source frames
 * around it; T_out = floor((T_in − 1)·fps_out/fps_in) + 1. The readers
 * take a file's frame rate within 0.01 of a whole number as that number
 * (a BVH's Frame Time 0.0083333 is 120 fps), so 120 → 30 is every 4th
 * frame exactly; fps_in and fps_out are used as given. */
int drape_motion_resample(float **out, int *T_out, const float *in, int T_in, double fps_in, double fps_out,
                          drape_error *err);

#endif
