/* Motion import (docs/motion.md): BVH and AMASS npz to SMPL pose sequences.
 *
 * BVH: the hierarchy and the frames are read in one pass over the text, each
 * frame's channels go through the file's forward kinematics, and the world
 * rotation of every file joint a map names becomes the world rotation of
 * its SMPL joint, corrected per bone for the two rest poses; SMPL's local
 * rotations follow from those. Unmapped file joints need no rule of their
 * own: their rotations are inside their descendants' world rotations, so
 * they land in the next mapped joint's local rotation. */
#include "motion.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "../core/kinematics.h"
#include "npz.h"
#include "sequence.h"

#define NJ 24
#define MAX_END_SITES DRAPE_MOTION_MAX_JOINTS
#define MAX_TOKEN 128
/* an npz array's bytes at most, checked before it is inflated: a header and
 * float64s. mocap_framerate is one number; poses are at most SMPL-X's 165
 * values a frame, trans 3, over the frames trans says (read first), so a
 * small file cannot inflate to more than its motion could hold. */
#define NPZ_HEADER_MAX 4096
#define NPZ_POSE_WIDTH_MAX 165

const char *const drape_skeleton_names[] = {"auto", "cmu", "poser", "mixamo", "smpl", NULL};

const char *const drape_smpl_joint_names[NJ] = {
    "pelvis", "l_hip", "r_hip", "spine1", "l_knee", "r_knee", "spine2", "l_ankle",
    "r_ankle", "spine3", "l_foot", "r_foot", "neck", "l_collar", "r_collar", "head",
    "l_shoulder", "r_shoulder", "l_elbow", "r_elbow", "l_wrist", "r_wrist", "l_hand", "r_hand",
};

/* train/assets.py rest_joints(), which the default body's J_regressor reproduces */
const float drape_motion_smpl_rest[NJ * 3] = {
    0, 0.93f, 0,          0.085f, 0.86f, 0,     -0.085f, 0.86f, 0,    0, 1.04f, 0,
    0.09f, 0.49f, 0,      -0.09f, 0.49f, 0,     0, 1.16f, 0,          0.09f, 0.08f, 0,
    -0.09f, 0.08f, 0,     0, 1.28f, 0,          0.095f, 0.03f, 0.12f, -0.095f, 0.03f, 0.12f,
    0, 1.45f, 0,          0.07f, 1.38f, 0,      -0.07f, 1.38f, 0,     0, 1.55f, 0.01f,
    0.17f, 1.40f, 0,      -0.17f, 1.40f, 0,     0.43f, 1.40f, 0,      -0.43f, 1.40f, 0,
    0.68f, 1.40f, 0,      -0.68f, 1.40f, 0,     0.77f, 1.40f, 0,      -0.77f, 1.40f, 0,
};

/* docs/design.md §2 */
static const int smpl_parent[NJ] = {-1, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 9, 9, 12, 13, 14, 16, 17, 18, 19, 20, 21};
/* the child whose direction is a joint's bone (−1: a leaf, or the pelvis,
 * whose rest orientation the axes fix) */
static const int smpl_child[NJ] = {-1, 4, 5, 6, 7, 8, 9, 10, 11, 12, -1, -1, 15, 16, 17, -1, 18, 19, 20, 21, 22, 23, -1, -1};
enum { PELVIS = 0, L_HIP = 1, R_HIP = 2, L_KNEE = 4, R_KNEE = 5, L_ANKLE = 7, R_ANKLE = 8, L_SHOULDER = 16,
       R_SHOULDER = 17 };
/* what a skeleton must map: the legs (units, facing), the shoulders (facing) */
static const int required[] = {PELVIS, L_HIP, R_HIP, L_KNEE, R_KNEE, L_ANKLE, R_ANKLE, L_SHOULDER, R_SHOULDER};
/* one of these, top first, gives the up direction */
static const int up_joints[] = {15, 12, 9, 6, 3};

/* ---- joint maps: per SMPL joint the file's names for it, '|' between
 * aliases, "" for none. Names match case-insensitively, with or without a
 * "prefix:" namespace (mixamorig:Hips). ---- */

typedef struct {
    const char *name;
    const char *joints[NJ];
} joint_map;

static const joint_map maps[] = {
    /* CMU: the MotionBuilder-friendly BVH conversion, then the ASF names */
    {"cmu", {"Hips|root", "LeftUpLeg|lfemur", "RightUpLeg|rfemur", "LowerBack", "LeftLeg|ltibia", "RightLeg|rtibia",
             "Spine|upperback", "LeftFoot|lfoot", "RightFoot|rfoot", "Spine1|thorax", "LeftToeBase|ltoes",
             "RightToeBase|rtoes", "Neck|lowerneck", "LeftShoulder|lclavicle", "RightShoulder|rclavicle", "Head",
             "LeftArm|lhumerus", "RightArm|rhumerus", "LeftForeArm|lradius", "RightForeArm|rradius", "LeftHand|lwrist",
             "RightHand|rwrist", "LeftFingerBase|lhand", "RightFingerBase|rhand"}},
    /* Poser and three.js's BVH examples; DAZ's split bones by their first part */
    {"poser", {"hip", "lThigh|lThighBend", "rThigh|rThighBend", "abdomen|abdomenLower", "lShin", "rShin",
               "abdomen2|abdomenUpper", "lFoot", "rFoot", "chest|chestUpper", "lToe", "rToe", "neck|neckLower",
               "lCollar", "rCollar", "head", "lShldr|lShldrBend", "rShldr|rShldrBend", "lForeArm|lForearmBend",
               "rForeArm|rForearmBend", "lHand", "rHand", "lMid1", "rMid1"}},
    {"mixamo", {"Hips", "LeftUpLeg", "RightUpLeg", "Spine", "LeftLeg", "RightLeg", "Spine1", "LeftFoot", "RightFoot",
                "Spine2", "LeftToeBase", "RightToeBase", "Neck", "LeftShoulder", "RightShoulder", "Head", "LeftArm",
                "RightArm", "LeftForeArm", "RightForeArm", "LeftHand", "RightHand", "LeftHandMiddle1",
                "RightHandMiddle1"}},
    {"smpl", {"pelvis", "l_hip|left_hip", "r_hip|right_hip", "spine1", "l_knee|left_knee", "r_knee|right_knee",
              "spine2", "l_ankle|left_ankle", "r_ankle|right_ankle", "spine3", "l_foot|left_foot",
              "r_foot|right_foot", "neck", "l_collar|left_collar", "r_collar|right_collar", "head",
              "l_shoulder|left_shoulder", "r_shoulder|right_shoulder", "l_elbow|left_elbow", "r_elbow|right_elbow",
              "l_wrist|left_wrist", "r_wrist|right_wrist", "l_hand|left_hand", "r_hand|right_hand"}},
};
#define N_MAPS (int)(sizeof maps / sizeof maps[0])

/* ---- the BVH file ---- */

enum { CH_XPOS, CH_YPOS, CH_ZPOS, CH_XROT, CH_YROT, CH_ZROT };

typedef struct {
    char name[DRAPE_MOTION_MAX_NAME + 1];
    int parent, nch, first; /* first: its first value's index in a frame */
    int ch[6];
    float offset[3];
} bvh_joint;

typedef struct {
    const char *p, *end;
    int line;
} cursor;

typedef struct {
    bvh_joint *j;
    int n, n_end, n_values;
    int frames;
    double frame_time;
} bvh;

static void skip_ws(cursor *c)
{
    while (c->p < c->end && isspace((unsigned char)*c->p)) {
        if (*c->p == '\n') c->line++;
        c->p++;
    }
}

/* the next whitespace-separated token into t; 0 at the end of the text */
static int token(cursor *c, char *t, drape_error *err)
{
    skip_ws(c);
    size_t n = 0;
    while (c->p < c->end && !isspace((unsigned char)*c->p)) {
        if (n == MAX_TOKEN) return drape_fail(err, DRAPE_EFORMAT, "line %d: a token longer than %d characters", c->line, MAX_TOKEN);
        t[n++] = *c->p++;
    }
    t[n] = 0;
    return (int)n;
}

static int expect(cursor *c, const char *want, drape_error *err)
{
    char t[MAX_TOKEN + 1];
    int n = token(c, t, err);
    if (n < 0) return n;
    if (!n) return drape_fail(err, DRAPE_EFORMAT, "truncated: the file ends where '%s' was expected", want);
    if (strcmp(t, want)) return drape_fail(err, DRAPE_EFORMAT, "line %d: '%s' where '%s' was expected", c->line, t, want);
    return 0;
}

/* 0 for a finite decimal number, 1 for something else, 2 for NaN, Inf or a
 * number past float's range */
static int parse_number(const char *t, double *v)
{
    const char *s = t + (*t == '+' || *t == '-');
    if (isalpha((unsigned char)*s)) {
        if (!strncasecmp(s, "nan", 3) || !strncasecmp(s, "inf", 3)) return 2;
        return 1;
    }
    int digits = 0;
    while (isdigit((unsigned char)*s)) s++, digits++;
    if (*s == '.') s++;
    while (isdigit((unsigned char)*s)) s++, digits++;
    if (!digits) return 1;
    if (*s == 'e' || *s == 'E') {
        s++;
        s += *s == '+' || *s == '-';
        if (!isdigit((unsigned char)*s)) return 1;
        while (isdigit((unsigned char)*s)) s++;
    }
    if (*s) return 1;
    *v = strtod(t, NULL);
    return isfinite(*v) && fabs(*v) <= 1e30 ? 0 : 2;
}

static int number(cursor *c, double *v, const char *what, drape_error *err)
{
    char t[MAX_TOKEN + 1];
    int n = token(c, t, err);
    if (n < 0) return n;
    if (!n) return drape_fail(err, DRAPE_EFORMAT, "truncated: the file ends where %s was expected", what);
    int r = parse_number(t, v);
    if (r == 2) return drape_fail(err, DRAPE_ENONFINITE, "line %d: %s is '%s', not a finite number", c->line, what, t);
    if (r) return drape_fail(err, DRAPE_EFORMAT, "line %d: %s: '%s' is not a number", c->line, what, t);
    return 0;
}

/* A joint's name: the rest of its line (names may hold spaces), a '{' at its
 * end left for the caller (*brace). */
static int joint_name(cursor *c, char *out, int *brace, drape_error *err)
{
    while (c->p < c->end && (*c->p == ' ' || *c->p == '\t')) c->p++;
    const char *s = c->p;
    while (c->p < c->end && *c->p != '\n' && *c->p != '\r') c->p++;
    const char *e = c->p;
    while (e > s && isspace((unsigned char)e[-1])) e--;
    *brace = e > s && e[-1] == '{';
    if (*brace) {
        e--;
        while (e > s && isspace((unsigned char)e[-1])) e--;
    }
    if (e == s) return drape_fail(err, DRAPE_EFORMAT, "line %d: a joint without a name", c->line);
    if (e - s > DRAPE_MOTION_MAX_NAME)
        return drape_fail(err, DRAPE_EFORMAT, "line %d: a joint name longer than %d characters", c->line,
                          DRAPE_MOTION_MAX_NAME);
    for (const char *q = s; q < e; q++)
        if ((unsigned char)*q < 32) return drape_fail(err, DRAPE_EFORMAT, "line %d: a control character in a joint name", c->line);
    memcpy(out, s, (size_t)(e - s));
    out[e - s] = 0;
    return 0;
}

static int channel_type(const char *t)
{
    static const char *names[] = {"Xposition", "Yposition", "Zposition", "Xrotation", "Yrotation", "Zrotation"};
    for (int i = 0; i < 6; i++)
        if (!strcasecmp(t, names[i])) return i;
    return -1;
}

/* HIERARCHY ... up to the MOTION header's end (Frames, Frame Time) */
static int parse_hierarchy(cursor *c, bvh *b, drape_error *err)
{
    char t[MAX_TOKEN + 1];
    int rc;
    if ((rc = expect(c, "HIERARCHY", err))) return rc;
    if ((rc = expect(c, "ROOT", err))) return rc;
    b->j = calloc(DRAPE_MOTION_MAX_JOINTS, sizeof *b->j);
    if (!b->j) return drape_fail(err, DRAPE_ENOMEM, "out of memory");
    /* the open blocks: a joint's index, or −1 for an End Site */
    int stack[DRAPE_MOTION_MAX_JOINTS + MAX_END_SITES + 1], depth = 0, brace = 0;
    float end_offset[3];
    int started = 0;
    for (;;) {
        if (!started || !strcmp(t, "JOINT")) {
            if (b->n == DRAPE_MOTION_MAX_JOINTS)
                return drape_fail(err, DRAPE_ERANGE, "line %d: more than %d joints", c->line, DRAPE_MOTION_MAX_JOINTS);
            bvh_joint *j = &b->j[b->n];
            j->parent = started ? stack[depth - 1] : -1;
            if (started && j->parent < 0)
                return drape_fail(err, DRAPE_EFORMAT, "line %d: a JOINT inside an End Site", c->line);
            if ((rc = joint_name(c, j->name, &brace, err))) return rc;
            if (!brace && (rc = expect(c, "{", err))) return rc;
            stack[depth++] = b->n++;
            started = 1;
        } else if (!strcmp(t, "End")) {
            if ((rc = expect(c, "Site", err))) return rc;
            if ((rc = expect(c, "{", err))) return rc;
            if (stack[depth - 1] < 0) return drape_fail(err, DRAPE_EFORMAT, "line %d: an End Site inside an End Site", c->line);
            if (++b->n_end > MAX_END_SITES)
                return drape_fail(err, DRAPE_ERANGE, "line %d: more than %d End Sites", c->line, MAX_END_SITES);
            stack[depth++] = -1;
        } else if (!strcmp(t, "OFFSET")) {
            float *o = stack[depth - 1] >= 0 ? b->j[stack[depth - 1]].offset : end_offset;
            for (int k = 0; k < 3; k++) {
                double v;
                if ((rc = number(c, &v, "an OFFSET value", err))) return rc;
                o[k] = (float)v;
            }
        } else if (!strcmp(t, "CHANNELS")) {
            if (stack[depth - 1] < 0) return drape_fail(err, DRAPE_EFORMAT, "line %d: CHANNELS in an End Site", c->line);
            bvh_joint *j = &b->j[stack[depth - 1]];
            double v;
            if ((rc = number(c, &v, "the channel count", err))) return rc;
            if (j->nch) return drape_fail(err, DRAPE_EFORMAT, "line %d: a second CHANNELS for joint '%s'", c->line, j->name);
            if (v != floor(v) || v < 0 || v > 6)
                return drape_fail(err, DRAPE_ERANGE, "line %d: joint '%s' has %g channels (0 to 6)", c->line, j->name, v);
            j->nch = (int)v;
            j->first = b->n_values;
            b->n_values += j->nch;
            int seen = 0;
            for (int k = 0; k < j->nch; k++) {
                int n = token(c, t, err);
                if (n < 0) return n;
                if (!n) return drape_fail(err, DRAPE_EFORMAT, "truncated: the file ends inside CHANNELS of '%s'", j->name);
                int ty = channel_type(t);
                if (ty < 0) return drape_fail(err, DRAPE_EFORMAT, "line %d: unknown channel '%s'", c->line, t);
                if (seen & 1 << ty) return drape_fail(err, DRAPE_EFORMAT, "line %d: channel '%s' twice in '%s'", c->line, t, j->name);
                seen |= 1 << ty;
                j->ch[k] = ty;
            }
        } else if (!strcmp(t, "}")) {
            if (--depth == 0) break;
        } else if (!strcmp(t, "ROOT")) {
            return drape_fail(err, DRAPE_EFORMAT, "line %d: a second ROOT (one skeleton per file)", c->line);
        } else if (!strcmp(t, "MOTION")) {
            return drape_fail(err, DRAPE_EFORMAT, "line %d: unbalanced braces: MOTION inside the hierarchy", c->line);
        } else {
            return drape_fail(err, DRAPE_EFORMAT, "line %d: unexpected '%s' in the hierarchy", c->line, t);
        }
        int n = token(c, t, err);
        if (n < 0) return n;
        if (!n) return drape_fail(err, DRAPE_EFORMAT, "truncated: the file ends inside the hierarchy (unbalanced braces)");
    }
    int n = token(c, t, err);
    if (n < 0) return n;
    if (!n) return drape_fail(err, DRAPE_EFORMAT, "truncated: no MOTION section");
    if (!strcmp(t, "}")) return drape_fail(err, DRAPE_EFORMAT, "line %d: unbalanced braces: '}' after the root's end", c->line);
    if (strcmp(t, "MOTION")) return drape_fail(err, DRAPE_EFORMAT, "line %d: '%s' where MOTION was expected", c->line, t);
    if (!b->n_values) return drape_fail(err, DRAPE_EFORMAT, "the skeleton has no channels");
    double v;
    if ((rc = expect(c, "Frames:", err)) || (rc = number(c, &v, "the frame count", err))) return rc;
    if (v != floor(v) || v < 1 || v > DRAPE_MOTION_MAX_FRAMES)
        return drape_fail(err, DRAPE_ERANGE, "Frames: %g (1 to %d)", v, DRAPE_MOTION_MAX_FRAMES);
    b->frames = (int)v;
    if ((rc = expect(c, "Frame", err)) || (rc = expect(c, "Time:", err)) || (rc = number(c, &v, "the frame time", err)))
        return rc;
    if (!(v >= 1 / DRAPE_MOTION_MAX_FPS && v <= 1 / DRAPE_MOTION_MIN_FPS))
        return drape_fail(err, DRAPE_ERANGE, "Frame Time: %g s (%g to %g fps are read)", v, DRAPE_MOTION_MIN_FPS,
                          DRAPE_MOTION_MAX_FPS);
    b->frame_time = v;
    /* the rest of that line must be empty: frames start on the next */
    while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\r')) c->p++;
    if (c->p < c->end && *c->p != '\n') return drape_fail(err, DRAPE_EFORMAT, "line %d: values after Frame Time", c->line);
    return 0;
}

/* One frame's values, exactly n_values on one line (blank lines between
 * frames are skipped). */
static int parse_frame(cursor *c, const bvh *b, int f, float *v, drape_error *err)
{
    while (c->p < c->end && isspace((unsigned char)*c->p)) {
        if (*c->p == '\n') c->line++;
        c->p++;
    }
    if (c->p == c->end)
        return drape_fail(err, DRAPE_EFORMAT, "truncated: Frames: %d declared, the file ends after %d", b->frames, f);
    int n = 0;
    char t[MAX_TOKEN + 1];
    for (;;) {
        while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\r')) c->p++;
        if (c->p == c->end || *c->p == '\n') break;
        size_t k = 0;
        while (c->p < c->end && !isspace((unsigned char)*c->p)) {
            if (k == MAX_TOKEN) return drape_fail(err, DRAPE_EFORMAT, "line %d: a token longer than %d characters", c->line, MAX_TOKEN);
            t[k++] = *c->p++;
        }
        t[k] = 0;
        if (n == b->n_values)
            return drape_fail(err, DRAPE_EFORMAT, "line %d (frame %d): more than the %d values the channels take", c->line,
                              f, b->n_values);
        double x;
        int r = parse_number(t, &x);
        if (r == 2)
            return drape_fail(err, DRAPE_ENONFINITE, "line %d (frame %d): value %d is '%s', not finite", c->line, f, n, t);
        if (r) return drape_fail(err, DRAPE_EFORMAT, "line %d (frame %d): '%s' is not a number", c->line, f, t);
        v[n++] = (float)x;
    }
    if (n < b->n_values)
        return drape_fail(err, DRAPE_EFORMAT, "line %d (frame %d): %d values, the channels take %d%s", c->line, f, n,
                          b->n_values, c->p == c->end ? " (truncated?)" : "");
    return 0;
}

/* ---- matching names ---- */

/* the name after its namespace ("mixamorig:Hips" → "Hips") */
static const char *base_name(const char *s)
{
    const char *k = strrchr(s, ':');
    return k && k[1] ? k + 1 : s;
}

/* the file joint named by one of the '|'-separated aliases (first alias
 * first); *exact: it matched with its case */
static int find_joint(const bvh *b, const char *aliases, int *exact)
{
    for (const char *a = aliases; *a;) {
        const char *e = strchr(a, '|');
        size_t len = e ? (size_t)(e - a) : strlen(a);
        for (int i = 0; i < b->n; i++) {
            const char *nm = b->j[i].name, *bn = base_name(nm);
            if ((strlen(nm) == len && !strncasecmp(nm, a, len)) || (strlen(bn) == len && !strncasecmp(bn, a, len))) {
                *exact = !strncmp(nm, a, len) || !strncmp(bn, a, len);
                return i;
            }
        }
        a += len + (e != NULL);
    }
    return -1;
}

static int apply_map(const bvh *b, const joint_map *m, int *f, int *exact)
{
    int n = 0;
    *exact = 0;
    for (int k = 0; k < NJ; k++) {
        int ex = 0;
        f[k] = m->joints[k][0] ? find_joint(b, m->joints[k], &ex) : -1;
        n += f[k] >= 0;
        *exact += ex;
    }
    return n;
}

/* A map file: "smpl_joint bvh_joint" per line, '#' comments. */
static int parse_map(const char *text, size_t len, joint_map *m, char (*store)[DRAPE_MOTION_MAX_NAME + 1],
                     drape_error *err)
{
    if (len > DRAPE_MOTION_MAX_MAP_BYTES) return drape_fail(err, DRAPE_ERANGE, "joint map: over %u bytes", DRAPE_MOTION_MAX_MAP_BYTES);
    memset(m, 0, sizeof *m);
    m->name = "map";
    for (int k = 0; k < NJ; k++) m->joints[k] = "";
    int line = 0;
    for (size_t i = 0; i < len;) {
        size_t e = i;
        while (e < len && text[e] != '\n') e++;
        line++;
        char buf[256] = {0}, a[128] = {0}, bname[128] = {0}, extra[2];
        size_t n = e - i < sizeof buf - 1 ? e - i : sizeof buf - 1;
        memcpy(buf, text + i, n);
        i = e + 1;
        char *hash = strchr(buf, '#');
        if (hash) *hash = 0;
        int got = sscanf(buf, "%127s %127s %1s", a, bname, extra);
        if (got <= 0) continue;
        if (got != 2) return drape_fail(err, DRAPE_EFORMAT, "joint map line %d: expected 'smpl_joint bvh_joint'", line);
        int k = 0;
        while (k < NJ && strcasecmp(a, drape_smpl_joint_names[k])) k++;
        if (k == NJ) return drape_fail(err, DRAPE_EFORMAT, "joint map line %d: '%s' is not an SMPL joint (pelvis, l_hip, ...)", line, a);
        if (m->joints[k][0]) return drape_fail(err, DRAPE_EFORMAT, "joint map line %d: %s mapped twice", line, a);
        if (strlen(bname) > DRAPE_MOTION_MAX_NAME || strchr(bname, '|'))
            return drape_fail(err, DRAPE_EFORMAT, "joint map line %d: bad joint name '%s'", line, bname);
        memcpy(store[k], bname, strlen(bname) + 1); /* at most DRAPE_MOTION_MAX_NAME, checked above */
        m->joints[k] = store[k];
    }
    return 0;
}

/* Picks the map (the given one, or the built-in that names most SMPL
 * joints; ties: more with their exact case, then the table's order), and
 * checks it: required joints there, each joint below its SMPL parent's. */
static int choose_map(const bvh *b, const drape_motion_opts *o, int *f, char *skel, drape_error *err)
{
    joint_map custom;
    char store[NJ][DRAPE_MOTION_MAX_NAME + 1];
    const joint_map *m = NULL;
    int rc;
    if (o->map) {
        if ((rc = parse_map(o->map, o->map_len, &custom, store, err))) return rc;
        m = &custom;
    } else if (o->skeleton > DRAPE_SKEL_AUTO && o->skeleton < DRAPE_SKEL_MAP) {
        m = &maps[o->skeleton - 1];
    } else if (o->skeleton == DRAPE_SKEL_MAP) {
        return drape_fail(err, DRAPE_EINVAL, "skeleton 'map' needs a joint map");
    }
    if (m) {
        int ex;
        apply_map(b, m, f, &ex);
    } else {
        int best = -1, best_n = -1, best_ex = -1;
        for (int i = 0; i < N_MAPS; i++) {
            int ff[NJ], ex, n = apply_map(b, &maps[i], ff, &ex);
            if (n > best_n || (n == best_n && ex > best_ex)) best = i, best_n = n, best_ex = ex;
        }
        m = &maps[best];
        int ex;
        apply_map(b, m, f, &ex);
    }
    snprintf(skel, 16, "%s", m->name);
    char missing[200] = "";
    size_t used = 0;
    for (size_t r = 0; r < sizeof required / sizeof *required; r++)
        if (f[required[r]] < 0 && used < sizeof missing - 40)
            used += (size_t)snprintf(missing + used, sizeof missing - used, "%s%s", used ? ", " : "",
                                     drape_smpl_joint_names[required[r]]);
    int up = 0;
    for (size_t k = 0; k < sizeof up_joints / sizeof *up_joints; k++) up |= f[up_joints[k]] >= 0;
    if (!up && used < sizeof missing - 40)
        used += (size_t)snprintf(missing + used, sizeof missing - used, "%sone of head, neck, spine", used ? ", " : "");
    if (used) {
        int n = 0;
        for (int k = 0; k < NJ; k++) n += f[k] >= 0;
        return drape_fail(err, DRAPE_ENOTFOUND,
                          "unknown joints: the skeleton (root '%s') fits no joint map: the best, %s, names %d of 24 "
                          "SMPL joints and misses %s; give a map (--map FILE: lines 'smpl_joint bvh_joint')",
                          b->j[0].name, m->name, n, missing);
    }
    for (int k = 1; k < NJ; k++) {
        if (f[k] < 0) continue;
        for (int q = 0; q < k; q++)
            if (f[q] == f[k])
                return drape_fail(err, DRAPE_EFORMAT, "joint map %s: '%s' is both %s and %s", m->name, b->j[f[k]].name,
                                  drape_smpl_joint_names[q], drape_smpl_joint_names[k]);
        int a = smpl_parent[k];
        while (f[a] < 0) a = smpl_parent[a];
        int p = b->j[f[k]].parent;
        while (p >= 0 && p != f[a]) p = b->j[p].parent;
        if (p < 0)
            return drape_fail(err, DRAPE_EFORMAT, "joint map %s: '%s' (%s) is not below '%s' (%s) in the file", m->name,
                              b->j[f[k]].name, drape_smpl_joint_names[k], b->j[f[a]].name, drape_smpl_joint_names[a]);
    }
    return 0;
}

/* ---- rotations: 3×4 [R | 0] transforms through core/kinematics.h ---- */

static void rot_axis(float *T, int axis, double rad)
{
    float aa[3] = {0, 0, 0}, R[9];
    aa[axis] = (float)rad;
    hd_rodrigues(R, aa);
    for (int i = 0; i < 3; i++) {
        for (int k = 0; k < 3; k++) T[4 * i + k] = R[3 * i + k];
        T[4 * i + 3] = 0;
    }
}

static void rot3(float *R9, const float *T)
{
    for (int i = 0; i < 3; i++)
        for (int k = 0; k < 3; k++) R9[3 * i + k] = T[4 * i + k];
}

static void rot34(float *T, const float *R9)
{
    for (int i = 0; i < 3; i++) {
        for (int k = 0; k < 3; k++) T[4 * i + k] = R9[3 * i + k];
        T[4 * i + 3] = 0;
    }
}

/* the smallest rotation taking direction a to direction b */
static void swing(float *T, const double *a, const double *b)
{
    double na = sqrt(a[0] * a[0] + a[1] * a[1] + a[2] * a[2]), nb = sqrt(b[0] * b[0] + b[1] * b[1] + b[2] * b[2]);
    float aa[3] = {0, 0, 0}, R[9];
    if (na > 1e-12 && nb > 1e-12) {
        double u[3] = {a[0] / na, a[1] / na, a[2] / na}, v[3] = {b[0] / nb, b[1] / nb, b[2] / nb};
        double x[3] = {u[1] * v[2] - u[2] * v[1], u[2] * v[0] - u[0] * v[2], u[0] * v[1] - u[1] * v[0]};
        double s = sqrt(x[0] * x[0] + x[1] * x[1] + x[2] * x[2]), d = u[0] * v[0] + u[1] * v[1] + u[2] * v[2];
        double ang = atan2(s, d);
        if (s < 1e-9 && d < 0) { /* opposite: half a turn about any perpendicular */
            double p[3] = {fabs(u[0]) < 0.9 ? 1.0 : 0.0, fabs(u[0]) < 0.9 ? 0.0 : 1.0, 0};
            x[0] = u[1] * p[2] - u[2] * p[1], x[1] = u[2] * p[0] - u[0] * p[2], x[2] = u[0] * p[1] - u[1] * p[0];
            s = sqrt(x[0] * x[0] + x[1] * x[1] + x[2] * x[2]);
        }
        if (s > 1e-12)
            for (int i = 0; i < 3; i++) aa[i] = (float)(x[i] / s * ang);
    }
    hd_rodrigues(R, aa);
    rot34(T, R);
}

/* ---- BVH to SMPL ---- */

typedef struct {
    int f[NJ];          /* the file joint of each SMPL joint, −1: none */
    float hip_off[3];   /* the pelvis's offset from the file's pelvis joint, pelvis frame (metres) */
    float A[12], AT[12]; /* file axes to Drape's, and back */
    float C[NJ][12];    /* per-bone rest correction */
    int end[NJ];        /* the SMPL joint at the far end of joint k's bone, −1: no bone */
    float dir[NJ][3];   /* that bone in Drape's rest */
    double root_scale;  /* file units to Drape-body metres */
} retarget;

static int snap_axis(const double *v, int not_axis)
{
    int best = -1;
    for (int i = 0; i < 3; i++)
        if (i != not_axis && (best < 0 || fabs(v[i]) > fabs(v[best]))) best = i;
    return fabs(v[best]) < 1e-9 ? -1 : best;
}

static double dist(const double *p, int a, int b)
{
    double d[3] = {p[3 * a] - p[3 * b], p[3 * a + 1] - p[3 * b + 1], p[3 * a + 2] - p[3 * b + 2]};
    return sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]);
}

/* The rest pose's axes, units and per-bone corrections (docs/motion.md). */
static int plan_retarget(const bvh *b, const drape_motion_opts *o, retarget *rt, drape_motion *out, drape_error *err)
{
    double *P = calloc((size_t)b->n * 3, sizeof *P);
    if (!P) return drape_fail(err, DRAPE_ENOMEM, "out of memory");
    for (int i = 0; i < b->n; i++)
        for (int k = 0; k < 3; k++) P[3 * i + k] = b->j[i].offset[k] + (b->j[i].parent >= 0 ? P[3 * b->j[i].parent + k] : 0);
    const int *f = rt->f;
    int top = -1;
    for (size_t k = 0; k < sizeof up_joints / sizeof *up_joints && top < 0; k++)
        if (f[up_joints[k]] >= 0) top = f[up_joints[k]];
    double up[3], left[3];
    for (int k = 0; k < 3; k++) {
        up[k] = P[3 * top + k] - P[3 * f[PELVIS] + k];
        left[k] = P[3 * f[L_HIP] + k] - P[3 * f[R_HIP] + k] + P[3 * f[L_SHOULDER] + k] - P[3 * f[R_SHOULDER] + k];
    }
    int ua = snap_axis(up, -1), la = ua < 0 ? -1 : snap_axis(left, ua);
    if (ua < 0 || la < 0) {
        free(P);
        return drape_fail(err, DRAPE_EFORMAT, "the rest pose has no clear up and left (head above pelvis, left hip "
                                              "and shoulder beside the right ones)");
    }
    /* A's rows: the file's left, up and forward (left × up) axes */
    double L[3] = {0, 0, 0}, U[3] = {0, 0, 0}, F[3];
    L[la] = left[la] > 0 ? 1 : -1;
    U[ua] = up[ua] > 0 ? 1 : -1;
    F[0] = L[1] * U[2] - L[2] * U[1], F[1] = L[2] * U[0] - L[0] * U[2], F[2] = L[0] * U[1] - L[1] * U[0];
    float A9[9], AT9[9];
    for (int k = 0; k < 3; k++) {
        A9[k] = (float)L[k], A9[3 + k] = (float)U[k], A9[6 + k] = (float)F[k];
        AT9[3 * k] = (float)L[k], AT9[3 * k + 1] = (float)U[k], AT9[3 * k + 2] = (float)F[k];
    }
    rot34(rt->A, A9);
    rot34(rt->AT, AT9);
    /* units from the legs (hip to knee to ankle, both sides) */
    const float *J = drape_motion_smpl_rest;
    double Jd[NJ * 3];
    for (int i = 0; i < NJ * 3; i++) Jd[i] = J[i];
    double leg = (dist(P, f[L_HIP], f[L_KNEE]) + dist(P, f[L_KNEE], f[L_ANKLE]) + dist(P, f[R_HIP], f[R_KNEE]) +
                  dist(P, f[R_KNEE], f[R_ANKLE])) / 2;
    double leg_smpl = (dist(Jd, L_HIP, L_KNEE) + dist(Jd, L_KNEE, L_ANKLE) + dist(Jd, R_HIP, R_KNEE) +
                       dist(Jd, R_KNEE, R_ANKLE)) / 2;
    if (!(leg > 1e-9)) {
        free(P);
        return drape_fail(err, DRAPE_EFORMAT, "the rest pose's legs have no length (OFFSETs all zero?)");
    }
    static const struct { const char *name; double m; } units[] = {
        {"m", 1}, {"cm", 0.01}, {"mm", 0.001}, {"inch", 0.0254}, {"cmu", 0.0254 / 0.45},
    };
    if (o->scale > 0) {
        out->scale = o->scale;
        snprintf(out->units, sizeof out->units, "scale");
        rt->root_scale = o->scale;
    } else {
        int best = 0;
        for (int u = 1; u < (int)(sizeof units / sizeof *units); u++)
            if (fabs(log(leg * units[u].m / leg_smpl)) < fabs(log(leg * units[best].m / leg_smpl))) best = u;
        out->scale = units[best].m;
        snprintf(out->units, sizeof out->units, "%s", units[best].name);
        /* the root moves as far as Drape's legs would carry it */
        rt->root_scale = leg_smpl / leg;
    }
    out->leg_ratio = rt->root_scale / out->scale;
    /* The pelvis goes where it puts Drape's hips on the file's hips, as
     * they hang from the file's pelvis joint in the rest: skeletons put
     * that joint anywhere near the hips (CMU's 10 cm above and 5 cm behind
     * them, DAZ's hip 3 cm below), and the legs, not the joint, keep the
     * feet on the floor. */
    float hf[3], ha[3];
    for (int i = 0; i < 3; i++)
        hf[i] = (float)((P[3 * f[L_HIP] + i] + P[3 * f[R_HIP] + i]) / 2 - P[3 * f[PELVIS] + i]);
    hd_apply(ha, rt->A, hf);
    for (int i = 0; i < 3; i++)
        rt->hip_off[i] = (float)(ha[i] * rt->root_scale - ((J[3 * L_HIP + i] + J[3 * R_HIP + i]) / 2 - J[i]));
    /* per bone: the turn from Drape's rest bone to the file's, in Drape's
     * axes; a joint with no bone below it (a leaf: feet, head, hands)
     * continues its parent's, as its segment continues the parent's bone */
    for (int k = 0; k < NJ; k++) {
        float *C = rt->C[k];
        rot_axis(C, 0, 0);
        rt->end[k] = -1;
        /* the bone's end: the next mapped joint down the chain that is not
         * where this one is (CMU's Neck and LeftShoulder sit on Spine1,
         * LeftFingerBase on LeftHand) */
        int m = smpl_child[k];
        while (m >= 0 && (f[m] < 0 || (f[k] >= 0 && dist(P, f[m], f[k]) < 1e-6 * leg))) m = smpl_child[m];
        if (f[k] < 0 || m < 0) {
            if (k) memcpy(C, rt->C[smpl_parent[k]], sizeof rt->C[k]);
            continue;
        }
        float e[3], ef[3];
        for (int i = 0; i < 3; i++) ef[i] = (float)(P[3 * f[m] + i] - P[3 * f[k] + i]);
        hd_apply(e, rt->A, ef);
        double d[3], ed[3] = {e[0], e[1], e[2]};
        for (int i = 0; i < 3; i++) d[i] = Jd[3 * m + i] - Jd[3 * k + i];
        swing(C, d, ed);
        rt->end[k] = m;
        for (int i = 0; i < 3; i++) rt->dir[k][i] = (float)d[i];
    }
    free(P);
    return 0;
}

/* one frame's SMPL pose [72] and the pelvis's place (Drape axes, metres,
 * before re-basing: J_0 + trans) from the file's channel values v */
static void frame_to_smpl(const bvh *b, const retarget *rt, const float *v, float *W, float *pose, float *pos)
{
    for (int i = 0; i < b->n; i++) {
        const bvh_joint *j = &b->j[i];
        float local[12], r[12];
        rot_axis(local, 0, 0);
        for (int k = 0; k < 3; k++) local[4 * k + 3] = j->offset[k];
        for (int c = 0; c < j->nch; c++) {
            float x = v[j->first + c];
            if (j->ch[c] <= CH_ZPOS) {
                local[4 * j->ch[c] + 3] += x;
            } else {
                rot_axis(r, j->ch[c] - CH_XROT, x * (M_PI / 180));
                hd_compose(local, local, r); /* channels apply in their order: R = R1·R2·R3 */
            }
        }
        if (j->parent < 0) memcpy(W + 12 * i, local, sizeof local);
        else hd_compose(W + 12 * i, W + 12 * j->parent, local);
    }
    float G[NJ][12];
    for (int k = 0; k < NJ; k++) {
        if (rt->f[k] < 0) {
            memcpy(G[k], G[smpl_parent[k]], sizeof G[k]); /* k > 0: the pelvis is always mapped */
            continue;
        }
        float R9[9], t[12];
        rot3(R9, W + 12 * rt->f[k]);
        rot34(t, R9);
        hd_compose(t, rt->A, t);
        hd_compose(t, t, rt->AT);
        hd_compose(G[k], t, rt->C[k]);
        /* Aimed along the file's bone as it is now: where unmapped joints
         * lie inside a bone (CMU's Neck1 in the neck, DAZ's chestLower in
         * spine2's bone) the bone's end moved with them; the swing that
         * follows it is theirs, and the rest of their turn stays in the
         * next mapped joint. Without such joints it is the identity. */
        if (rt->end[k] >= 0) {
            const float *pa = W + 12 * rt->f[k], *pb = W + 12 * rt->f[rt->end[k]];
            float ef[3] = {pb[3] - pa[3], pb[7] - pa[7], pb[11] - pa[11]}, e[3], g[3], S[12];
            hd_apply(e, rt->A, ef);
            hd_apply(g, G[k], rt->dir[k]);
            double gd[3] = {g[0], g[1], g[2]}, ed[3] = {e[0], e[1], e[2]};
            swing(S, gd, ed);
            hd_compose(G[k], S, G[k]);
        }
    }
    for (int k = 0; k < NJ; k++) {
        float L[12], R9[9];
        if (k == 0) memcpy(L, G[0], sizeof L);
        else {
            hd_inverse_rigid(L, G[smpl_parent[k]]);
            hd_compose(L, L, G[k]);
        }
        rot3(R9, L);
        hd_aa_from_rotmat(pose + 3 * k, R9);
    }
    const float *w = W + 12 * rt->f[PELVIS];
    float p[3] = {w[3], w[7], w[11]}, off[3];
    hd_apply(pos, rt->A, p);
    hd_apply(off, G[0], rt->hip_off); /* G[0]: the pelvis's turn (no aim, no translation) */
    for (int k = 0; k < 3; k++) pos[k] = (float)(pos[k] * rt->root_scale + off[k]);
}

/* ---- shared by both formats ---- */

static double snap_fps(double fps) { return fabs(fps - round(fps)) < 0.01 ? round(fps) : fps; }

/* pelvis places pos [T,3] (Drape axes, metres) into translations: frame 0
 * at the origin horizontally; the height above the file's ground (y = 0)
 * kept, relative to Drape's rest pelvis; a file whose pelvis starts at
 * the ground or below has no ground at 0: its height is taken from frame 0
 * (docs/motion.md). Then the heading. */
static void finish(float *poses, const float *pos, int T, int keep_heading)
{
    double y0 = pos[1] < 0.05 ? pos[1] : drape_motion_smpl_rest[1];
    for (int t = 0; t < T; t++) {
        float *tr = poses + 75 * t + 72;
        tr[0] = (float)((double)pos[3 * t] - pos[0]);
        tr[1] = (float)((double)pos[3 * t + 1] - y0);
        tr[2] = (float)((double)pos[3 * t + 2] - pos[2]);
    }
    if (keep_heading) return;
    /* turn everything about the vertical through frame 0's pelvis so that
     * frame 0 faces +z (the heading of docs/design.md §2.1) */
    float H[12], Hi[12], zero[3] = {0, 0, 0};
    hd_heading(H, poses, zero, zero);
    hd_inverse_rigid(Hi, H);
    for (int t = 0; t < T; t++) {
        float *p = poses + 75 * t, R9[9], Rt[12];
        hd_rodrigues(R9, p);
        rot34(Rt, R9);
        hd_compose(Rt, Hi, Rt);
        rot3(R9, Rt);
        hd_aa_from_rotmat(p, R9);
        hd_apply(p + 72, Hi, p + 72); /* Hi has no translation: it turns trans about the vertical */
    }
}

/* o->start and o->seconds cut the source before it is placed: frame 0 of
 * the result is the first source frame at or after start, so the origin
 * and the heading are those of the kept part. */
static int trim(float *poses, float *pos, int *T, double fps, const drape_motion_opts *o, drape_error *err)
{
    if (!(o->start > 0) && !(o->seconds > 0)) return 0;
    int a = (int)ceil(o->start * fps - 1e-6);
    if (a >= *T) return drape_fail(err, DRAPE_ERANGE, "start %g s: the file lasts %g s", o->start, (*T - 1) / fps);
    int n = *T - a;
    if (o->seconds > 0 && o->seconds * fps + 1 < n) n = (int)floor(o->seconds * fps + 1e-6) + 1;
    memmove(poses, poses + 75 * (size_t)a, sizeof *poses * 75 * (size_t)n);
    memmove(pos, pos + 3 * (size_t)a, sizeof *pos * 3 * (size_t)n);
    *T = n;
    return 0;
}

static int finish_common(drape_motion *out, float *poses, int T, double src_fps, const drape_motion_opts *o,
                         drape_error *err)
{
    double fps = o->fps > 0 ? o->fps : 30;
    out->source_frames = T;
    out->source_fps = src_fps;
    out->fps = fps;
    int rc = drape_motion_resample(&out->poses, &out->frames, poses, T, src_fps, fps, err);
    free(poses);
    if (rc) return rc;
    drape_error e = {0};
    if (drape_poses_check(out->poses, out->frames, NULL, &e)) {
        rc = drape_fail(err, e.code, "after import: %s (a unit or scale off?)", e.msg);
        free(out->poses);
        out->poses = NULL;
    }
    return rc;
}

static const drape_motion_opts *opts_or_default(const drape_motion_opts *o)
{
    static const drape_motion_opts def = {0};
    return o ? o : &def;
}

static int check_fps(double fps, const char *what, drape_error *err)
{
    if (fps >= DRAPE_MOTION_MIN_FPS && fps <= DRAPE_MOTION_MAX_FPS) return 0;
    return drape_fail(err, DRAPE_ERANGE, "%s %g fps: %g to %g are read", what, fps, DRAPE_MOTION_MIN_FPS, DRAPE_MOTION_MAX_FPS);
}

static int check_opts(const drape_motion_opts *o, drape_error *err)
{
    if (o->fps && check_fps(o->fps, "output", err)) return DRAPE_ERANGE;
    if (o->source_fps && check_fps(o->source_fps, "source", err)) return DRAPE_ERANGE;
    if (!(o->scale >= 0 && o->scale <= 1e6)) return drape_fail(err, DRAPE_ERANGE, "scale %g: 0 (from the legs) to 1e6", o->scale);
    if (!(o->start >= 0 && o->start <= 1e5) || !(o->seconds >= 0 && o->seconds <= 1e5))
        return drape_fail(err, DRAPE_ERANGE, "start %g s, seconds %g: 0 to 1e5 s", o->start, o->seconds);
    if (o->skeleton < 0 || o->skeleton > DRAPE_SKEL_MAP) return drape_fail(err, DRAPE_EINVAL, "unknown skeleton %d", o->skeleton);
    return 0;
}

int drape_motion_read_bvh(drape_motion *out, const uint8_t *data, size_t len, const drape_motion_opts *o,
                          drape_error *err)
{
    memset(out, 0, sizeof *out);
    o = opts_or_default(o);
    snprintf(out->format, sizeof out->format, "bvh");
    int rc = check_opts(o, err);
    if (rc) return rc;
    cursor c = {(const char *)data, (const char *)data + len, 1};
    if (len >= 3 && !memcmp(data, "\xEF\xBB\xBF", 3)) c.p += 3;
    for (size_t i = 0; i < len; i++)
        if (!data[i]) return drape_fail(err, DRAPE_EFORMAT, "a NUL byte: not a text file");
    bvh b = {0};
    retarget rt;
    float *W = NULL, *v = NULL, *poses = NULL, *pos = NULL;
    rc = parse_hierarchy(&c, &b, err);
    if (!rc) rc = choose_map(&b, o, rt.f, out->skeleton, err);
    if (!rc) rc = plan_retarget(&b, o, &rt, out, err);
    if (rc) goto done;
    for (int k = 0; k < NJ; k++) out->mapped += rt.f[k] >= 0;
    W = malloc(sizeof *W * 12 * (size_t)b.n);
    v = malloc(sizeof *v * (size_t)b.n_values);
    poses = malloc(sizeof *poses * 75 * (size_t)b.frames);
    pos = malloc(sizeof *pos * 3 * (size_t)b.frames);
    if (!W || !v || !poses || !pos) {
        rc = drape_fail(err, DRAPE_ENOMEM, "out of memory");
        goto done;
    }
    for (int t = 0; t < b.frames; t++) {
        if ((rc = parse_frame(&c, &b, t, v, err))) goto done;
        frame_to_smpl(&b, &rt, v, W, poses + 75 * t, pos + 3 * t);
    }
    skip_ws(&c);
    if (c.p != c.end) {
        rc = drape_fail(err, DRAPE_EFORMAT, "line %d: more frame lines than the %d of Frames:", c.line, b.frames);
        goto done;
    }
    double src = o->source_fps > 0 ? o->source_fps : snap_fps(1 / b.frame_time);
    int T = b.frames;
    if ((rc = trim(poses, pos, &T, src, o, err))) goto done;
    finish(poses, pos, T, o->keep_heading);
    rc = finish_common(out, poses, T, src, o, err);
    poses = NULL;
done:
    free(b.j);
    free(W);
    free(v);
    free(poses);
    free(pos);
    if (rc) drape_motion_free(out);
    return rc;
}

/* ---- AMASS npz ---- */

int drape_motion_read_npz(drape_motion *out, const uint8_t *data, size_t len, const drape_motion_opts *o,
                          drape_error *err)
{
    memset(out, 0, sizeof *out);
    o = opts_or_default(o);
    snprintf(out->format, sizeof out->format, "npz");
    int rc = check_opts(o, err);
    if (rc) return rc;
    drape_npy P = {0}, Tr = {0}, R = {0};
    float *poses = NULL, *pos = NULL;
    rc = drape_npz_array(&R, data, len, "mocap_framerate.npy", NPZ_HEADER_MAX, err);
    if (rc == DRAPE_ENOTFOUND) rc = drape_npz_array(&R, data, len, "mocap_frame_rate.npy", NPZ_HEADER_MAX, err);
    if (rc == DRAPE_ENOTFOUND) rc = drape_fail(err, rc, "npz: no mocap_framerate (an AMASS file has one)");
    if (!rc) rc = drape_npz_array(&Tr, data, len, "trans.npy", NPZ_HEADER_MAX + (size_t)DRAPE_MOTION_MAX_FRAMES * 3 * 8, err);
    if (rc) goto done;
    int64_t T = Tr.ndim == 2 ? Tr.shape[0] : -1;
    if (T < 1 || Tr.shape[1] != 3) {
        rc = drape_fail(err, DRAPE_ESHAPE, "npz: trans must be [T, 3]");
        goto done;
    }
    if (T > DRAPE_MOTION_MAX_FRAMES) {
        rc = drape_fail(err, DRAPE_ERANGE, "npz: %lld frames, over %d", (long long)T, DRAPE_MOTION_MAX_FRAMES);
        goto done;
    }
    rc = drape_npz_array(&P, data, len, "poses.npy", NPZ_HEADER_MAX + (size_t)T * NPZ_POSE_WIDTH_MAX * 8, err);
    if (rc) goto done;
    int64_t width = P.ndim == 2 ? P.shape[1] : 0;
    if (P.ndim != 2 || P.shape[0] != T || width < 66) {
        rc = drape_fail(err, DRAPE_ESHAPE, "npz: poses must be [%lld, 72] (SMPL) or [%lld, >= 66] (SMPL-H, SMPL-X)",
                        (long long)T, (long long)T);
        goto done;
    }
    if (R.numel != 1 || R.ndim > 1) {
        rc = drape_fail(err, DRAPE_ESHAPE, "npz: mocap_framerate must be one number");
        goto done;
    }
    double src = o->source_fps > 0 ? o->source_fps : snap_fps(R.data[0]);
    if ((rc = check_fps(src, "npz: mocap_framerate", err))) goto done;
    for (int64_t i = 0; i < P.numel; i++)
        if (!isfinite(P.data[i])) {
            rc = drape_fail(err, DRAPE_ENONFINITE, "npz: poses[%lld][%lld] is NaN or Inf", (long long)(i / width),
                            (long long)(i % width));
            goto done;
        }
    for (int64_t i = 0; i < Tr.numel; i++)
        if (!isfinite(Tr.data[i])) {
            rc = drape_fail(err, DRAPE_ENONFINITE, "npz: trans[%lld][%lld] is NaN or Inf", (long long)(i / 3),
                            (long long)(i % 3));
            goto done;
        }
    /* SMPL: 24 joints; SMPL-H and SMPL-X: 22 body joints first, then their
     * own (jaw, eyes, fingers): SMPL's hand joints 22, 23 stay at rest */
    int body = width == 72 ? 72 : 66;
    snprintf(out->skeleton, sizeof out->skeleton, "%s", width == 72 ? "smpl" : width == 165 ? "smplx" : "smplh");
    snprintf(out->units, sizeof out->units, "m");
    out->scale = out->leg_ratio = 1;
    out->mapped = body / 3;
    poses = calloc((size_t)T * 75, sizeof *poses);
    pos = malloc(sizeof *pos * 3 * (size_t)T);
    if (!poses || !pos) {
        rc = drape_fail(err, DRAPE_ENOMEM, "out of memory");
        goto done;
    }
    /* z up to y up: Q = R_x(−90°), (x, y, z) → (x, z, −y); the root turns
     * by Q, the translation is rotated by it */
    static const float Q[12] = {1, 0, 0, 0, 0, 0, 1, 0, 0, -1, 0, 0};
    for (int64_t t = 0; t < T; t++) {
        float *p = poses + 75 * t, R9[9], Rt[12];
        memcpy(p, P.data + t * width, sizeof(float) * (size_t)body);
        hd_rodrigues(R9, p);
        rot34(Rt, R9);
        hd_compose(Rt, Q, Rt);
        rot3(R9, Rt);
        hd_aa_from_rotmat(p, R9);
        hd_apply(pos + 3 * t, Q, Tr.data + 3 * t);
    }
    int n = (int)T;
    if ((rc = trim(poses, pos, &n, src, o, err))) goto done;
    finish(poses, pos, n, o->keep_heading);
    rc = finish_common(out, poses, n, src, o, err);
    poses = NULL;
done:
    drape_npy_free(&P);
    drape_npy_free(&Tr);
    drape_npy_free(&R);
    free(poses);
    free(pos);
    if (rc) drape_motion_free(out);
    return rc;
}

/* ---- entry points ---- */

int drape_motion_read(drape_motion *out, const uint8_t *data, size_t len, const drape_motion_opts *o,
                      drape_error *err)
{
    memset(out, 0, sizeof *out);
    if (len >= 4 && !memcmp(data, "PK\x03\x04", 4)) return drape_motion_read_npz(out, data, len, o, err);
    size_t i = len >= 3 && !memcmp(data, "\xEF\xBB\xBF", 3) ? 3 : 0;
    while (i < len && isspace(data[i])) i++;
    if (len - i >= 9 && !memcmp(data + i, "HIERARCHY", 9)) return drape_motion_read_bvh(out, data, len, o, err);
    return drape_fail(err, DRAPE_EFORMAT, "not a motion file: a BVH starts with HIERARCHY, an npz with PK\\3\\4");
}

int drape_motion_load(drape_motion *out, const char *path, const drape_motion_opts *o, drape_error *err)
{
    memset(out, 0, sizeof *out);
    FILE *f = fopen(path, "rb");
    if (!f) return drape_fail(err, DRAPE_EIO, "cannot open %s: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fileno(f), &st) || !S_ISREG(st.st_mode)) {
        fclose(f);
        return drape_fail(err, DRAPE_EIO, "%s: not a regular file", path);
    }
    if ((uint64_t)st.st_size > DRAPE_MOTION_MAX_BYTES) {
        fclose(f);
        return drape_fail(err, DRAPE_ERANGE, "%s: %lld bytes, over the limit of %u", path, (long long)st.st_size,
                          DRAPE_MOTION_MAX_BYTES);
    }
    uint8_t *buf = malloc((size_t)st.st_size + 1);
    size_t n = buf ? fread(buf, 1, (size_t)st.st_size, f) : 0;
    fclose(f);
    if (!buf) return drape_fail(err, DRAPE_ENOMEM, "out of memory");
    if (n != (size_t)st.st_size) {
        free(buf);
        return drape_fail(err, DRAPE_EIO, "cannot read %s", path);
    }
    int rc = drape_motion_read(out, buf, n, o, err);
    free(buf);
    if (rc) drape_error_prefix(err, path);
    return rc;
}

void drape_motion_free(drape_motion *m)
{
    free(m->poses);
    m->poses = NULL;
    m->frames = 0;
}

int drape_motion_resample(float **out, int *T_out, const float *in, int T_in, double fps_in, double fps_out,
                          drape_error *err)
{
    *out = NULL;
    *T_out = 0;
    if (T_in < 1 || !(fps_in > 0) || !(fps_out > 0)) return drape_fail(err, DRAPE_EINVAL, "resample: bad arguments");
    double T = floor((T_in - 1) * fps_out / fps_in + 1e-9) + 1;
    if (T > DRAPE_MOTION_MAX_FRAMES)
        return drape_fail(err, DRAPE_ERANGE, "%d frames at %g fps are %.0f at %g fps, over %d", T_in, fps_in, T, fps_out,
                          DRAPE_MOTION_MAX_FRAMES);
    int n = (int)T;
    float *o = malloc(sizeof *o * 75 * (size_t)n);
    if (!o) return drape_fail(err, DRAPE_ENOMEM, "out of memory");
    for (int i = 0; i < n; i++) {
        double u = (double)i * fps_in / fps_out;
        int i0 = (int)floor(u + 1e-9);
        double w = u - i0;
        if (w < 1e-9 || i0 >= T_in - 1) { /* on a source frame: that frame, exactly */
            memcpy(o + 75 * i, in + 75 * (i0 < T_in ? i0 : T_in - 1), sizeof *o * 75);
            continue;
        }
        const float *a = in + 75 * i0, *b = a + 75;
        for (int k = 0; k < NJ; k++) hd_slerp_aa(o + 75 * i + 3 * k, a + 3 * k, b + 3 * k, w);
        for (int k = 72; k < 75; k++) o[75 * i + k] = (float)((1 - w) * a[k] + w * b[k]);
    }
    *out = o;
    *T_out = n;
    return 0;
}
