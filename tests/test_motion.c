/* Motion import (runtime/motion.c, docs/motion.md): BVH files written here
 * from known SMPL poses through this file's own forward kinematics, for
 * three skeletons (SMPL-named T-pose in metres; Mixamo-named A-pose in cm
 * with unmapped joints in its chains, an unmapped root and other channel
 * orders; CMU-named in CMU's units, its rest facing +x), must come back as
 * those poses; AMASS npz files written by numpy; resampling; every class of
 * malformed file; `drape motion import` and draped's /v1/motions routes. */
#include <criterion/criterion.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../core/kinematics.h"
#include "../proto/buf.h"
#include "../runtime/motion.h"
#include "../runtime/npy.h"
#include "util.h"

#define NJ 24
static const int parent24[NJ] = {-1, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 9, 9, 12, 13, 14, 16, 17, 18, 19, 20, 21};
static const int child24[NJ] = {-1, 4, 5, 6, 7, 8, 9, 10, 11, 12, -1, -1, 15, 16, 17, -1, 18, 19, 20, 21, 22, 23, -1, -1};

/* ---- 3×3 rotations in double, row-major ---- */

static void mmul(double *o, const double *a, const double *b)
{
    double r[9];
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) r[3 * i + j] = a[3 * i] * b[j] + a[3 * i + 1] * b[3 + j] + a[3 * i + 2] * b[6 + j];
    memcpy(o, r, sizeof r);
}

static void mT(double *o, const double *a)
{
    double r[9];
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) r[3 * i + j] = a[3 * j + i];
    memcpy(o, r, sizeof r);
}

static void mvec(double *o, const double *a, const double *v)
{
    double r[3];
    for (int i = 0; i < 3; i++) r[i] = a[3 * i] * v[0] + a[3 * i + 1] * v[1] + a[3 * i + 2] * v[2];
    memcpy(o, r, sizeof r);
}

/* Rodrigues, written out again here */
static void maa(double *R, const double *aa)
{
    double t = sqrt(aa[0] * aa[0] + aa[1] * aa[1] + aa[2] * aa[2]);
    double k[3] = {0, 0, 0};
    if (t > 0)
        for (int i = 0; i < 3; i++) k[i] = aa[i] / t;
    double c = cos(t), s = sin(t), C = 1 - c;
    double r[9] = {c + k[0] * k[0] * C,        k[0] * k[1] * C - k[2] * s, k[0] * k[2] * C + k[1] * s,
                   k[1] * k[0] * C + k[2] * s, c + k[1] * k[1] * C,        k[1] * k[2] * C - k[0] * s,
                   k[2] * k[0] * C - k[1] * s, k[2] * k[1] * C + k[0] * s, c + k[2] * k[2] * C};
    memcpy(R, r, sizeof r);
}

static void maaf(double *R, const float *aa)
{
    double d[3] = {aa[0], aa[1], aa[2]};
    maa(R, d);
}

static void maxis(double *R, int axis, double rad)
{
    double aa[3] = {0, 0, 0};
    aa[axis] = rad;
    maa(R, aa);
}

/* angles (degrees) of R = R_i(a)·R_j(b)·R_k(c) for any order "XYZ" ...
 * "ZYX": the cyclic orders' formulas, their signs flipped for the others */
static void meuler(double *deg, const double *R, const char *order)
{
    int i = order[0] - 'X', j = order[1] - 'X', k = order[2] - 'X';
    double sg = (j - i + 3) % 3 == 1 ? 1 : -1; /* XYZ, YZX, ZXY: +1 */
    double b = atan2(sg * R[3 * i + k], sqrt(R[3 * i + i] * R[3 * i + i] + R[3 * i + j] * R[3 * i + j]));
    double a = atan2(-sg * R[3 * j + k], R[3 * k + k]);
    double c = atan2(-sg * R[3 * i + j], R[3 * i + i]);
    deg[0] = a * 180 / M_PI, deg[1] = b * 180 / M_PI, deg[2] = c * 180 / M_PI;
}

/* the smallest rotation taking direction a to b */
static void mswing(double *R, const double *a, const double *b)
{
    double na = sqrt(a[0] * a[0] + a[1] * a[1] + a[2] * a[2]), nb = sqrt(b[0] * b[0] + b[1] * b[1] + b[2] * b[2]);
    double u[3] = {a[0] / na, a[1] / na, a[2] / na}, v[3] = {b[0] / nb, b[1] / nb, b[2] / nb};
    double x[3] = {u[1] * v[2] - u[2] * v[1], u[2] * v[0] - u[0] * v[2], u[0] * v[1] - u[1] * v[0]};
    double s = sqrt(x[0] * x[0] + x[1] * x[1] + x[2] * x[2]), ang = atan2(s, u[0] * v[0] + u[1] * v[1] + u[2] * v[2]);
    double aa[3] = {0, 0, 0};
    if (s > 1e-12)
        for (int q = 0; q < 3; q++) aa[q] = x[q] / s * ang;
    maa(R, aa);
}

/* the angle of R_a^T R_b for two axis-angle rotations */
static double turn(const float *a, const double *b)
{
    double Ra[9], Rb[9], D[9];
    maaf(Ra, a);
    maa(Rb, b);
    mT(Ra, Ra);
    mmul(D, Ra, Rb);
    double c = (D[0] + D[4] + D[8] - 1) / 2;
    return acos(fmax(-1.0, fmin(1.0, c)));
}

/* the largest entry of A − R(aa): the importer's axis-angle through this
 * file's Rodrigues against a matrix built without any log map */
static double mgap(const double *A, const float *aa)
{
    double R[9], d = 0;
    maaf(R, aa);
    for (int i = 0; i < 9; i++) d = fmax(d, fabs(A[i] - R[i]));
    return d;
}

/* ---- test skeletons and the BVH writer ---- */

typedef struct {
    char name[64];
    int parent, smpl, end; /* smpl: the SMPL joint it is, −1: unmapped; end: an End Site */
    double pos[3];         /* rest position, Drape's axes, metres */
} tjoint;

typedef struct {
    tjoint j[80];
    int n;
    double units;                   /* file units per metre */
    double yaw;                     /* the file's axes are Drape's turned by R_y(yaw) */
    const char *root_pos, *root_rot, *rot; /* channel orders */
} tskel;

static int add(tskel *s, const char *name, int parent, int smpl, double x, double y, double z)
{
    tjoint *j = &s->j[s->n];
    snprintf(j->name, sizeof j->name, "%s", name);
    j->parent = parent, j->smpl = smpl, j->end = 0;
    j->pos[0] = x, j->pos[1] = y, j->pos[2] = z;
    return s->n++;
}

static int add_smpl(tskel *s, const char *name, int parent, int k)
{
    const float *J = drape_motion_smpl_rest;
    return add(s, name, parent, k, J[3 * k], J[3 * k + 1], J[3 * k + 2]);
}

static void add_end(tskel *s, int parent, double dx, double dy, double dz)
{
    const double *p = s->j[parent].pos;
    int e = add(s, "", parent, -1, p[0] + dx, p[1] + dy, p[2] + dz);
    s->j[e].end = 1;
}

static int find(const tskel *s, int smpl)
{
    for (int i = 0; i < s->n; i++)
        if (s->j[i].smpl == smpl) return i;
    return -1;
}

/* SMPL's names and rest, T-pose, metres */
static tskel skel_smpl(void)
{
    tskel s = {.units = 1, .root_pos = "XYZ", .root_rot = "ZXY", .rot = "ZXY"};
    int at[NJ];
    for (int k = 0; k < NJ; k++) at[k] = add_smpl(&s, drape_smpl_joint_names[k], k ? at[parent24[k]] : -1, k);
    add_end(&s, at[15], 0, 0.1, 0);
    add_end(&s, at[10], 0, 0, 0.05);
    add_end(&s, at[11], 0, 0, 0.05);
    add_end(&s, at[22], 0.08, 0, 0);
    add_end(&s, at[23], -0.08, 0, 0);
    return s;
}

/* the arm from the shoulder out, turned 45° down (an A-pose) */
static void a_pose(tskel *s, int from)
{
    double c = cos(M_PI / 4), sn = sin(M_PI / 4);
    const double *o = s->j[from].pos;
    for (int i = 0; i < s->n; i++) {
        int a = i;
        while (a >= 0 && a != from) a = s->j[a].parent;
        if (a < 0 || i == from) continue;
        double dx = s->j[i].pos[0] - o[0], dy = s->j[i].pos[1] - o[1];
        double side = dx > 0 ? 1 : -1; /* left arm (+x) turns about −z, right about +z */
        s->j[i].pos[0] = o[0] + c * dx + side * sn * dy;
        s->j[i].pos[1] = o[1] - side * sn * dx + c * dy;
    }
}

static double mid(const float *J, int a, int b, int d) { return (J[3 * a + d] + J[3 * b + d]) / 2; }

/* Mixamo's names behind "mixamorig:", an unmapped root above the hips, an
 * unmapped joint inside each thigh and in the spine, the arms in an A-pose,
 * centimetres, XYZ rotations, the root's positions in Z X Y order */
static tskel skel_mixamo(void)
{
    const float *J = drape_motion_smpl_rest;
    tskel s = {.units = 100, .root_pos = "ZXY", .root_rot = "XYZ", .rot = "XYZ"};
    int ref = add(&s, "mixamorig:Reference", -1, -1, 0, 0, 0);
    int hips = add_smpl(&s, "mixamorig:Hips", ref, 0);
    int sp = add_smpl(&s, "mixamorig:Spine", hips, 3);
    int spm = add(&s, "mixamorig:SpineMid", sp, -1, mid(J, 3, 6, 0), mid(J, 3, 6, 1), mid(J, 3, 6, 2));
    int sp1 = add_smpl(&s, "mixamorig:Spine1", spm, 6);
    int sp2 = add_smpl(&s, "mixamorig:Spine2", sp1, 9);
    int neck = add_smpl(&s, "mixamorig:Neck", sp2, 12);
    int head = add_smpl(&s, "mixamorig:Head", neck, 15);
    add_end(&s, head, 0, 0.12, 0);
    for (int side = 0; side < 2; side++) {
        const char *S = side ? "Right" : "Left";
        char nm[64];
#define NM(x) (snprintf(nm, sizeof nm, "mixamorig:%s%s", S, x), nm)
        int sh = add_smpl(&s, NM("Shoulder"), sp2, 13 + side);
        int arm = add_smpl(&s, NM("Arm"), sh, 16 + side);
        int fa = add_smpl(&s, NM("ForeArm"), arm, 18 + side);
        int hand = add_smpl(&s, NM("Hand"), fa, 20 + side);
        int mid1 = add_smpl(&s, NM("HandMiddle1"), hand, 22 + side);
        add_end(&s, mid1, side ? -0.04 : 0.04, 0, 0);
        a_pose(&s, arm);
        int up = add_smpl(&s, NM("UpLeg"), hips, 1 + side);
        int roll = add(&s, NM("UpLegRoll"), up, -1, mid(J, 1 + side, 4 + side, 0), mid(J, 1 + side, 4 + side, 1),
                       mid(J, 1 + side, 4 + side, 2));
        int leg = add_smpl(&s, NM("Leg"), roll, 4 + side);
        int foot = add_smpl(&s, NM("Foot"), leg, 7 + side);
        int toe = add_smpl(&s, NM("ToeBase"), foot, 10 + side);
        add_end(&s, toe, 0, 0, 0.06);
#undef NM
    }
    return s;
}

/* CMU's MotionBuilder-friendly names: LHipJoint and Neck1 unmapped, a
 * thumb off each hand, CMU's units (1/0.45 inch), YZX rotations, and the
 * rest facing +x */
static tskel skel_cmu(void)
{
    const float *J = drape_motion_smpl_rest;
    tskel s = {.units = 1 / (0.0254 / 0.45), .yaw = M_PI / 2, .root_pos = "XYZ", .root_rot = "YZX", .rot = "YZX"};
    int hips = add_smpl(&s, "Hips", -1, 0);
    int lb = add_smpl(&s, "LowerBack", hips, 3);
    int sp = add_smpl(&s, "Spine", lb, 6);
    int sp1 = add_smpl(&s, "Spine1", sp, 9);
    int neck = add_smpl(&s, "Neck", sp1, 12);
    int neck1 = add(&s, "Neck1", neck, -1, mid(J, 12, 15, 0), mid(J, 12, 15, 1), mid(J, 12, 15, 2));
    int head = add_smpl(&s, "Head", neck1, 15);
    add_end(&s, head, 0, 0.1, 0);
    for (int side = 0; side < 2; side++) {
        const char *S = side ? "Right" : "Left";
        char nm[64];
        snprintf(nm, sizeof nm, "%sHipJoint", side ? "R" : "L");
        int hj = add(&s, nm, hips, -1, J[0], J[1], J[2]);
#define NM(x) (snprintf(nm, sizeof nm, "%s%s", S, x), nm)
        int up = add_smpl(&s, NM("UpLeg"), hj, 1 + side);
        int leg = add_smpl(&s, NM("Leg"), up, 4 + side);
        int foot = add_smpl(&s, NM("Foot"), leg, 7 + side);
        int toe = add_smpl(&s, NM("ToeBase"), foot, 10 + side);
        add_end(&s, toe, 0, 0, 0.05);
        int sh = add_smpl(&s, NM("Shoulder"), sp1, 13 + side);
        int arm = add_smpl(&s, NM("Arm"), sh, 16 + side);
        int fa = add_smpl(&s, NM("ForeArm"), arm, 18 + side);
        int hand = add_smpl(&s, NM("Hand"), fa, 20 + side);
        int fb = add_smpl(&s, NM("FingerBase"), hand, 22 + side);
        add_end(&s, fb, side ? -0.05 : 0.05, 0, 0);
        snprintf(nm, sizeof nm, "%sThumb", side ? "R" : "L");
        const double *hp = s.j[hand].pos;
        int th = add(&s, nm, hand, -1, hp[0] + (side ? -0.02 : 0.02), hp[1], hp[2] + 0.03);
        add_end(&s, th, 0, 0, 0.03);
#undef NM
    }
    return s;
}

/* Random SMPL poses (each axis-angle component in ±1 rad) and a root that
 * travels: poses [T,75], trans relative to the rest pelvis. */
static void random_motion(float *poses, int T, uint64_t seed)
{
    uint64_t st = seed;
    for (int t = 0; t < T; t++) {
        float *p = poses + 75 * t;
        for (int i = 0; i < 72; i++) p[i] = tu_rand(&st);
        p[72] = 0.3f + 0.8f * t / T + 0.05f * tu_rand(&st);
        p[73] = 0.05f * tu_rand(&st);
        p[74] = -0.2f + 1.5f * t / T + 0.05f * tu_rand(&st);
    }
}

static void channels(FILE *f, const char *pos, const char *rot)
{
    fprintf(f, "CHANNELS %d", (pos ? 3 : 0) + 3);
    for (int i = 0; pos && i < 3; i++) fprintf(f, " %cposition", pos[i]);
    for (int i = 0; i < 3; i++) fprintf(f, " %crotation", rot[i]);
    fprintf(f, "\n");
}

/* the joints in depth-first order, children in the list's order: a BVH's */
static int dfs(const tskel *s, int at, int *order, int n)
{
    order[n++] = at;
    for (int i = 0; i < s->n; i++)
        if (s->j[i].parent == at) n = dfs(s, i, order, n);
    return n;
}

/* the joint's one child (an unmapped joint inside a bone has one) */
static int only_child(const tskel *s, int i)
{
    for (int c = 0; c < s->n; c++)
        if (s->j[c].parent == i) return c;
    return -1;
}

/* An unmapped joint's own turn at frame t. One inside a bone (between a
 * mapped joint and the next, as Mixamo's UpLegRoll or CMU's Neck1) only
 * twists about that bone unless bend: so SMPL's bone still points where the
 * test's poses put it. fpos [T][n][3] (may be NULL): every joint's place
 * relative to the root, in Drape's axes. */
static void write_bvh_ex(const char *path, const tskel *s, const float *poses, int T, double fps, int bend,
                         double *fpos);

/* writes s as a BVH at fps whose frames are the SMPL poses [T,75] */
static void write_bvh(const char *path, const tskel *s, const float *poses, int T, double fps)
{
    write_bvh_ex(path, s, poses, T, fps, 0, NULL);
}

static void write_bvh_ex(const char *path, const tskel *s, const float *poses, int T, double fps, int bend,
                         double *fpos)
{
    int order[80];
    cr_assert_eq(dfs(s, 0, order, 0), s->n);
    double M[9], MT[9];
    maxis(M, 1, s->yaw);
    mT(MT, M);
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    fprintf(f, "HIERARCHY\n");
    int depth = 0, stack[80];
    for (int oi = 0; oi < s->n; oi++) {
        int i = order[oi];
        const tjoint *j = &s->j[i];
        while (depth && stack[depth - 1] != j->parent) fprintf(f, "%*s}\n", 2 * --depth, "");
        double d[3];
        for (int k = 0; k < 3; k++) d[k] = (j->pos[k] - (j->parent >= 0 ? s->j[j->parent].pos[k] : 0)) * s->units;
        mvec(d, M, d);
        if (j->end) fprintf(f, "%*sEnd Site\n", 2 * depth, "");
        else fprintf(f, "%*s%s %s\n", 2 * depth, "", j->parent < 0 ? "ROOT" : "JOINT", j->name);
        fprintf(f, "%*s{\n%*sOFFSET %.10g %.10g %.10g\n", 2 * depth, "", 2 * depth + 2, "", d[0], d[1], d[2]);
        if (!j->end) {
            fprintf(f, "%*s", 2 * depth + 2, "");
            channels(f, j->parent < 0 ? s->root_pos : NULL, j->parent < 0 ? s->root_rot : s->rot);
        }
        stack[depth++] = j->end ? -2 : i;
    }
    while (depth) fprintf(f, "%*s}\n", 2 * --depth, "");
    fprintf(f, "MOTION\nFrames: %d\nFrame Time: %.10g\n", T, 1 / fps);
    /* per bone the rest correction the importer applies (docs/motion.md) */
    double C[NJ][9];
    const float *Jr = drape_motion_smpl_rest;
    for (int k = 0; k < NJ; k++) {
        maxis(C[k], 0, 0);
        int m = child24[k];
        if (m < 0 || find(s, k) < 0 || find(s, m) < 0) { /* a leaf continues its parent's bone */
            if (k) memcpy(C[k], C[parent24[k]], sizeof C[k]);
            continue;
        }
        double a[3], b[3];
        for (int q = 0; q < 3; q++) a[q] = Jr[3 * m + q] - Jr[3 * k + q], b[q] = s->j[find(s, m)].pos[q] - s->j[find(s, k)].pos[q];
        mswing(C[k], a, b);
    }
    double *W = malloc(sizeof *W * 9 * (size_t)s->n);
    for (int t = 0; t < T; t++) {
        const float *p = poses + 75 * t;
        double G[NJ][9];
        for (int k = 0; k < NJ; k++) {
            double R[9];
            maaf(R, p + 3 * k);
            if (k) mmul(G[k], G[parent24[k]], R);
            else memcpy(G[0], R, sizeof R);
        }
        int root = 0, pel = find(s, 0);
        for (int oi = 0; oi < s->n; oi++) {
            int i = order[oi];
            const tjoint *j = &s->j[i];
            if (j->end) continue;
            double *w = W + 9 * i, L[9], Lf[9], deg[3];
            if (j->smpl >= 0) {
                double CT[9];
                mT(CT, C[j->smpl]);
                mmul(w, G[j->smpl], CT);
            } else { /* an unmapped joint turns by its own motion */
                double e[3] = {0.3 * sin(0.7 * t + i), 0.2 * cos(0.4 * t + 2 * i), 0.25 * sin(0.3 * t - i)}, E[9];
                int c = only_child(s, i);
                int inside = j->parent >= 0 && s->j[j->parent].smpl >= 0 && c >= 0 && s->j[c].smpl >= 0 &&
                             s->j[j->parent].smpl != 0;
                if (inside && !bend) { /* a twist about the bone */
                    double ax[3], na = 0, ang = 0.5 * sin(0.5 * t + i);
                    for (int q = 0; q < 3; q++) ax[q] = s->j[c].pos[q] - j->pos[q], na += ax[q] * ax[q];
                    for (int q = 0; q < 3; q++) e[q] = ax[q] / sqrt(na) * ang;
                }
                maa(E, e);
                if (j->parent >= 0) mmul(w, W + 9 * j->parent, E);
                else memcpy(w, E, sizeof E);
            }
            if (j->parent >= 0) {
                double PT[9];
                mT(PT, W + 9 * j->parent);
                mmul(L, PT, w);
            } else {
                memcpy(L, w, sizeof L);
            }
            if (fpos) {
                double *q = fpos + 3 * ((size_t)t * s->n + i), off[3];
                if (j->parent < 0) q[0] = q[1] = q[2] = 0;
                else {
                    for (int k = 0; k < 3; k++) off[k] = j->pos[k] - s->j[j->parent].pos[k];
                    mvec(off, W + 9 * j->parent, off);
                    for (int k = 0; k < 3; k++) q[k] = fpos[3 * ((size_t)t * s->n + j->parent) + k] + off[k];
                }
            }
            mmul(Lf, M, L); /* in the file's axes: M L Mᵀ */
            mmul(Lf, Lf, MT);
            meuler(deg, Lf, j->parent < 0 ? s->root_rot : s->rot);
            if (j->parent < 0) {
                /* the root's position puts the pelvis at J_0 + trans */
                double P[3], off[3], o2[3];
                for (int q = 0; q < 3; q++) P[q] = (Jr[q] + p[72 + q]) * s->units;
                mvec(P, M, P);
                if (pel != root) { /* the pelvis hangs below an unmapped root */
                    double Wf[9];
                    for (int q = 0; q < 3; q++) off[q] = (s->j[pel].pos[q] - j->pos[q]) * s->units;
                    mvec(off, M, off);
                    mmul(Wf, M, w);
                    mmul(Wf, Wf, MT);
                    mvec(o2, Wf, off);
                    for (int q = 0; q < 3; q++) P[q] -= o2[q];
                }
                for (int q = 0; q < 3; q++) off[q] = j->pos[q] * s->units;
                mvec(off, M, off);
                double ch[3];
                for (int q = 0; q < 3; q++) ch[q] = P[q] - off[q];
                fprintf(f, "%.10g %.10g %.10g", ch[s->root_pos[0] - 'X'], ch[s->root_pos[1] - 'X'], ch[s->root_pos[2] - 'X']);
            }
            fprintf(f, " %.10g %.10g %.10g", deg[0], deg[1], deg[2]);
        }
        fprintf(f, "\n");
    }
    free(W);
    fclose(f);
}

/* imported m against the SMPL poses [T,75] the file was made from */
static void expect_poses(const drape_motion *m, const float *poses, int T, double tol_rad, double tol_m)
{
    cr_assert_eq(m->frames, T);
    double worst = 0, worst_t = 0;
    for (int t = 0; t < T; t++) {
        for (int k = 0; k < NJ; k++) {
            double want[3] = {poses[75 * t + 3 * k], poses[75 * t + 3 * k + 1], poses[75 * t + 3 * k + 2]};
            worst = fmax(worst, turn(m->poses + 75 * t + 3 * k, want));
        }
        for (int q = 0; q < 3; q++) {
            double want = q == 1 ? poses[75 * t + 73] : poses[75 * t + 72 + q] - poses[72 + q];
            worst_t = fmax(worst_t, fabs(m->poses[75 * t + 72 + q] - want));
        }
    }
    cr_assert_leq(worst, tol_rad, "worst joint off by %g rad", worst);
    cr_assert_leq(worst_t, tol_m, "worst translation off by %g m", worst_t);
}

static void round_trip_scaled(tskel s, const char *skeleton, const char *units, int T, double scale);

static void round_trip(tskel s, const char *skeleton, const char *units, int T)
{
    round_trip_scaled(s, skeleton, units, T, 0);
}

/* scale: metres per file unit given (--scale), 0 to detect them */
static void round_trip_scaled(tskel s, const char *skeleton, const char *units, int T, double scale)
{
    float *poses = malloc(sizeof *poses * 75 * (size_t)T);
    random_motion(poses, T, 7);
    const char *path = tu_tmp("rt.bvh");
    write_bvh(path, &s, poses, T, 30);
    drape_motion m;
    drape_error e = {0};
    drape_motion_opts o = {.keep_heading = 1, .scale = scale};
    cr_assert_eq(drape_motion_load(&m, path, &o, &e), 0, "%s", e.msg);
    cr_assert_str_eq(m.skeleton, skeleton);
    cr_assert_str_eq(m.units, units);
    cr_assert_eq(m.mapped, 24);
    cr_assert_eq(m.source_fps, 30);
    cr_assert_eq(m.source_frames, T);
    expect_poses(&m, poses, T, 1e-4, 1e-5);
    drape_motion_free(&m);
    free(poses);
}

Test(motion, smpl_named_bvh_round_trips)
{
    round_trip(skel_smpl(), "smpl", "m", 40);
}

Test(motion, mixamo_a_pose_in_cm_with_extra_joints_round_trips)
{
    round_trip(skel_mixamo(), "mixamo", "cm", 40);
}

Test(motion, cmu_names_units_and_a_rest_facing_x_round_trip)
{
    round_trip(skel_cmu(), "cmu", "cmu", 40);
}

/* SMPL's skeleton under another map's names (the first of each joint's
 * aliases in runtime/motion.c), in other units and channel orders */
static tskel skel_renamed(const char *const names[NJ], double units, const char *root_rot, const char *rot)
{
    tskel s = skel_smpl();
    for (int i = 0; i < s.n; i++)
        if (s.j[i].smpl >= 0) snprintf(s.j[i].name, sizeof s.j[i].name, "%s", names[s.j[i].smpl]);
    s.units = units, s.root_rot = root_rot, s.rot = rot;
    return s;
}

/* Poser and three.js's names, inches, XZY joints under a YXZ root */
Test(motion, poser_names_in_inches_round_trip)
{
    static const char *const poser[NJ] = {"hip", "lThigh", "rThigh", "abdomen", "lShin", "rShin", "abdomen2",
                                          "lFoot", "rFoot", "chest", "lToe", "rToe", "neck", "lCollar", "rCollar",
                                          "head", "lShldr", "rShldr", "lForeArm", "rForeArm", "lHand", "rHand",
                                          "lMid1", "rMid1"};
    round_trip(skel_renamed(poser, 1 / 0.0254, "YXZ", "XZY"), "poser", "inch", 40);
}

/* CMU's ASF names (lfemur, ltibia, ...), millimetres, ZYX */
Test(motion, cmu_asf_names_in_mm_round_trip)
{
    static const char *const asf[NJ] = {"root", "lfemur", "rfemur", "lowerback", "ltibia", "rtibia", "upperback",
                                        "lfoot", "rfoot", "thorax", "ltoes", "rtoes", "lowerneck", "lclavicle",
                                        "rclavicle", "head", "lhumerus", "rhumerus", "lradius", "rradius", "lwrist",
                                        "rwrist", "lhand", "rhand"};
    round_trip(skel_renamed(asf, 1000, "ZYX", "ZYX"), "cmu", "mm", 40);
}

/* --scale: units given, not detected (a file in decimetres, which the leg
 * length would not name) */
Test(motion, scale_given_round_trips)
{
    round_trip_scaled(skel_renamed(drape_smpl_joint_names, 10, "ZXY", "ZXY"), "smpl", "scale", 40, 0.1);
}

/* SMPL's forward kinematics on Drape's rest joints: X [24][3] */
static void smpl_fk(double *X, const float *pose)
{
    const float *J = drape_motion_smpl_rest;
    double G[NJ][9];
    for (int k = 0; k < NJ; k++) {
        double R[9];
        maaf(R, pose + 3 * k);
        if (!k) {
            memcpy(G[0], R, sizeof R);
            for (int q = 0; q < 3; q++) X[q] = J[q] + pose[72 + q];
            continue;
        }
        int p = parent24[k];
        mmul(G[k], G[p], R);
        double off[3] = {J[3 * k] - J[3 * p], J[3 * k + 1] - J[3 * p + 1], J[3 * k + 2] - J[3 * p + 2]};
        mvec(off, G[p], off);
        for (int q = 0; q < 3; q++) X[3 * k + q] = X[3 * p + q] + off[q];
    }
}

/* Retargeting by bone direction: with unmapped joints that bend inside
 * bones (Neck1, UpLegRoll, SpineMid turning freely) every SMPL bone of the
 * import still points where the file's bone points, in every frame. */
static void bones_follow(tskel s)
{
    enum { T = 20 };
    float poses[75 * T];
    random_motion(poses, T, 31);
    double *fp = malloc(sizeof *fp * 3 * (size_t)T * s.n);
    const char *path = tu_tmp("bend.bvh");
    write_bvh_ex(path, &s, poses, T, 30, 1, fp);
    drape_motion m;
    drape_error e = {0};
    drape_motion_opts o = {.keep_heading = 1};
    cr_assert_eq(drape_motion_load(&m, path, &o, &e), 0, "%s", e.msg);
    double worst = 0;
    for (int t = 0; t < T; t++) {
        double X[NJ * 3];
        smpl_fk(X, m.poses + 75 * t);
        for (int k = 0; k < NJ; k++) {
            int c = child24[k];
            if (c < 0) continue;
            const double *a = fp + 3 * ((size_t)t * s.n + find(&s, k)), *b = fp + 3 * ((size_t)t * s.n + find(&s, c));
            double u[3], v[3], nu = 0, nv = 0, dot = 0;
            for (int q = 0; q < 3; q++) u[q] = b[q] - a[q], v[q] = X[3 * c + q] - X[3 * k + q];
            for (int q = 0; q < 3; q++) nu += u[q] * u[q], nv += v[q] * v[q], dot += u[q] * v[q];
            worst = fmax(worst, acos(fmin(1.0, dot / sqrt(nu * nv))));
        }
    }
    cr_assert_lt(worst, 1e-4, "a bone is %g rad off the file's", worst);
    drape_motion_free(&m);
    free(fp);
}

Test(motion, bones_follow_the_file_through_bending_unmapped_joints)
{
    bones_follow(skel_cmu());
    bones_follow(skel_mixamo());
}

/* Not through this file's FK: an A-pose file whose one frame raises both
 * arms 45° at the shoulder (everything else at zero) stands in a T-pose,
 * so it is SMPL's rest, hands straight with the forearms included. */
Test(motion, a_pose_file_with_arms_raised_is_smpl_rest)
{
    tskel s = skel_mixamo();
    float zero[75] = {0};
    const char *path = tu_tmp("apose.bvh");
    write_bvh(path, &s, zero, 1, 30);
    FILE *f = fopen(path, "r+");
    static char text[1 << 16];
    size_t n = fread(text, 1, sizeof text - 1, f);
    text[n] = 0;
    char *line = strstr(text, "Frame Time:");
    line = strchr(line, '\n') + 1;
    int order[80], m = dfs(&s, 0, order, 0);
    *line = 0;
    drape_buf b = {0};
    drape_buf_printf(&b, "%s0 0 0 0 0 0", text);
    for (int i = 1; i < m; i++) {
        const tjoint *j = &s.j[order[i]];
        if (j->end) continue;
        /* XYZ rotations: the left arm turns up about +z, the right about −z */
        double z = strstr(j->name, "LeftArm") ? 45 : strstr(j->name, "RightArm") ? -45 : 0;
        drape_buf_printf(&b, " 0 0 %g", z);
    }
    drape_buf_printf(&b, "\n");
    drape_motion mo;
    drape_error e = {0};
    drape_motion_opts o = {.keep_heading = 1};
    cr_assert_eq(drape_motion_read(&mo, b.p, b.len, &o, &e), 0, "%s", e.msg);
    for (int k = 0; k < NJ; k++) {
        const float *a = mo.poses + 3 * k;
        cr_assert_lt(sqrt(a[0] * a[0] + a[1] * a[1] + a[2] * a[2]), 1e-5, "%s is not at rest: %g %g %g",
                     drape_smpl_joint_names[k], a[0], a[1], a[2]);
    }
    for (int q = 0; q < 3; q++) cr_assert_lt(fabs(mo.poses[72 + q]), 1e-5);
    drape_motion_free(&mo);
    drape_buf_free(&b);
    fclose(f);
}

/* The default turns the whole motion about the vertical so frame 0 faces
 * +z: every frame is the kept-heading one turned by the same R_y(−ψ0). */
Test(motion, frame_zero_faces_plus_z_by_default)
{
    enum { T = 12 };
    float poses[75 * T];
    random_motion(poses, T, 11);
    tskel s = skel_smpl();
    const char *path = tu_tmp("heading.bvh");
    write_bvh(path, &s, poses, T, 30);
    drape_motion keep, face;
    drape_error e = {0};
    drape_motion_opts ok = {.keep_heading = 1}, of = {0};
    cr_assert_eq(drape_motion_load(&keep, path, &ok, &e), 0, "%s", e.msg);
    cr_assert_eq(drape_motion_load(&face, path, &of, &e), 0, "%s", e.msg);
    double R0[9];
    maaf(R0, face.poses);
    double fx = R0[2], fz = R0[8]; /* R0 (0, 0, 1) */
    cr_assert_lt(fabs(fx), 1e-5, "frame 0 faces (%g, %g)", fx, fz);
    cr_assert_gt(fz, 0);
    double K0[9];
    maaf(K0, keep.poses);
    double psi = atan2(K0[2], K0[8]), Ry[9];
    cr_assert_gt(fabs(psi), 0.05, "the test's frame 0 should face elsewhere");
    maxis(Ry, 1, -psi);
    for (int t = 0; t < T; t++) {
        double K[9], want[9];
        maaf(K, keep.poses + 75 * t);
        mmul(want, Ry, K);
        /* compared as matrices, so the library's log map is on one side only */
        cr_assert_lt(mgap(want, face.poses + 75 * t), 1e-4, "frame %d", t);
        for (int k = 1; k < NJ; k++) {
            double kk[3] = {keep.poses[75 * t + 3 * k], keep.poses[75 * t + 3 * k + 1], keep.poses[75 * t + 3 * k + 2]};
            cr_assert_lt(turn(face.poses + 75 * t + 3 * k, kk), 1e-6);
        }
        double tr[3] = {keep.poses[75 * t + 72], keep.poses[75 * t + 73], keep.poses[75 * t + 74]};
        mvec(tr, Ry, tr);
        for (int q = 0; q < 3; q++) cr_assert_lt(fabs(face.poses[75 * t + 72 + q] - tr[q]), 1e-5);
    }
    drape_motion_free(&keep);
    drape_motion_free(&face);
}

/* ---- AMASS npz ---- */

static const char *py(void) { return getenv("DRAPE_PYTHON") ? getenv("DRAPE_PYTHON") : "/usr/bin/python3"; }

/* writes poses [T,W] and trans [T,3] (float32 .npy here) as an AMASS-like
 * npz of float64 arrays, compressed or not */
static void write_npz(const char *npz, const float *poses, int T, int W, const float *trans, double fps, int compressed)
{
    drape_error e = {0};
    char pp[300], tp[300]; /* tu_tmp's answer lasts until its next call */
    snprintf(pp, sizeof pp, "%s", tu_tmp("npz_poses.npy"));
    snprintf(tp, sizeof tp, "%s", tu_tmp("npz_trans.npy"));
    cr_assert_eq(drape_npy_write(pp, poses, 2, (int64_t[]){T, W}, &e), 0, "%s", e.msg);
    cr_assert_eq(drape_npy_write(tp, trans, 2, (int64_t[]){T, 3}, &e), 0, "%s", e.msg);
    char out[4096];
    int rc = tu_run(out, sizeof out,
                    "%s -c \"import numpy as np; np.%s('%s', poses=np.load('%s').astype(np.float64), "
                    "trans=np.load('%s').astype(np.float64), mocap_framerate=np.array(%g, dtype=np.float64), "
                    "betas=np.zeros(16), gender=np.array('female'))\"",
                    py(), compressed ? "savez_compressed" : "savez", npz, pp, tp, fps);
    cr_assert_eq(rc, 0, "numpy could not write the npz: %s", out);
}

static void npz_case(int W, int compressed)
{
    enum { T = 20 };
    float *poses = malloc(sizeof *poses * T * (size_t)W), trans[3 * T];
    uint64_t st = 5;
    for (int i = 0; i < T * W; i++) poses[i] = tu_rand(&st);
    for (int t = 0; t < T; t++) trans[3 * t] = 0.2f + 0.03f * t, trans[3 * t + 1] = -0.5f + 0.05f * t, trans[3 * t + 2] = 0.95f + 0.01f * tu_rand(&st);
    char path[300];
    snprintf(path, sizeof path, "%s", tu_tmp(compressed ? "amass_c.npz" : "amass.npz"));
    write_npz(path, poses, T, W, trans, 60, compressed);
    drape_motion m;
    drape_error e = {0};
    drape_motion_opts o = {.fps = 60, .keep_heading = 1};
    cr_assert_eq(drape_motion_load(&m, path, &o, &e), 0, "%s", e.msg);
    cr_assert_str_eq(m.format, "npz");
    cr_assert_str_eq(m.skeleton, W == 72 ? "smpl" : "smplh");
    cr_assert_eq(m.source_fps, 60);
    cr_assert_eq(m.frames, T);
    /* z up to y up: Q = R_x(−90°) */
    double Q[9];
    maxis(Q, 0, -M_PI / 2);
    int body = W == 72 ? 24 : 22;
    for (int t = 0; t < T; t++) {
        const float *p = poses + (size_t)W * t, *g = m.poses + 75 * t;
        double R[9], want[9];
        maaf(R, p);
        mmul(want, Q, R);
        /* compared as matrices, so the library's log map is on one side only */
        cr_assert_lt(mgap(want, g), 1e-5, "root of frame %d", t);
        for (int i = 3; i < 3 * body; i++) cr_assert_eq(g[i], p[i], "frame %d value %d", t, i);
        for (int i = 3 * body; i < 72; i++) cr_assert_eq(g[i], 0, "hands at rest");
        /* (x, y, z) → (x, z, −y); horizontal from frame 0, height over the rest pelvis */
        cr_assert_lt(fabs(g[72] - (trans[3 * t] - trans[0])), 1e-6);
        cr_assert_lt(fabs(g[73] - (trans[3 * t + 2] - drape_motion_smpl_rest[1])), 1e-6);
        cr_assert_lt(fabs(g[74] - (-(trans[3 * t + 1] - trans[1]))), 1e-6);
    }
    drape_motion_free(&m);
    free(poses);
}

Test(motion, amass_npz_stored_and_deflated)
{
    npz_case(156, 0);
    npz_case(156, 1);
    npz_case(72, 1);
}

/* An array is refused before it is inflated when it is larger than the
 * motion trans describes could hold: 200,000 frames of poses (a 115-MB
 * float64 array that deflates to ~110 KB) beside 10 frames of trans; the
 * address space does not grow by the array's size (it would, by 115 MB, if
 * it were inflated and then refused). A small upload once inflated to a
 * gigabyte this way (POST /v1/motions/convert). */
Test(motion, amass_npz_poses_larger_than_trans_says_are_refused_before_inflating)
{
    char path[300], out[4096];
    snprintf(path, sizeof path, "%s", tu_tmp("amass_big.npz"));
    int rc = tu_run(out, sizeof out,
                    "%s -c \"import numpy as np; np.savez_compressed('%s', poses=np.zeros((200000, 72)), "
                    "trans=np.zeros((10, 3)), mocap_framerate=np.array(30.0))\"",
                    py(), path);
    cr_assert_eq(rc, 0, "numpy could not write the npz: %s", out);
    drape_motion m;
    drape_error e = {0};
    long peak = tu_vm_peak_kb();
    cr_assert_gt(peak, 0, "no VmPeak in /proc/self/status");
    rc = drape_motion_load(&m, path, NULL, &e);
    cr_assert_lt(tu_vm_peak_kb() - peak, 32 << 10, "the address space grew by %ld MB", (tu_vm_peak_kb() - peak) >> 10);
    cr_assert_eq(rc, DRAPE_ERANGE, "rc %d: %s", rc, e.msg);
    cr_assert(strstr(e.msg, "poses.npy") && strstr(e.msg, "over"), "%s", e.msg);
    cr_assert_null(m.poses);
}

/* ---- resampling ---- */

Test(motion, resample_120_to_30_is_every_fourth_frame)
{
    enum { T = 41 };
    float in[75 * T], *out;
    random_motion(in, T, 3);
    int n;
    drape_error e = {0};
    cr_assert_eq(drape_motion_resample(&out, &n, in, T, 120, 30, &e), 0, "%s", e.msg);
    cr_assert_eq(n, 11);
    for (int i = 0; i < n; i++) cr_assert_eq(memcmp(out + 75 * i, in + 75 * 4 * i, sizeof(float) * 75), 0, "frame %d", i);
    free(out);
}

/* angle between two axis-angle rotations */
static double gap(const float *a, const float *b)
{
    double d[3] = {b[0], b[1], b[2]};
    return turn(a, d);
}

Test(motion, resample_24_to_30_slerps)
{
    enum { T = 25 };
    float in[75 * T], *out;
    random_motion(in, T, 4);
    int n;
    drape_error e = {0};
    cr_assert_eq(drape_motion_resample(&out, &n, in, T, 24, 30, &e), 0, "%s", e.msg);
    cr_assert_eq(n, 31); /* 1 s of motion: 24 intervals at 24 fps, 30 at 30 */
    for (int i = 0; i < n; i++) {
        double u = i * 0.8;
        int i0 = (int)floor(u + 1e-9);
        double w = u - i0;
        const float *a = in + 75 * i0, *b = a + 75, *o = out + 75 * i;
        if (w < 1e-9) { /* on a source frame */
            cr_assert_eq(memcmp(o, a, sizeof(float) * 75), 0, "frame %d", i);
            continue;
        }
        for (int k = 0; k < NJ; k++) {
            /* on the shorter arc from a to b, a fraction w of the way */
            double ab = gap(a + 3 * k, b + 3 * k);
            cr_assert_lt(fabs(gap(a + 3 * k, o + 3 * k) - w * ab), 1e-5, "frame %d joint %d", i, k);
            cr_assert_lt(fabs(gap(o + 3 * k, b + 3 * k) - (1 - w) * ab), 1e-5, "frame %d joint %d", i, k);
        }
        for (int q = 72; q < 75; q++) cr_assert_lt(fabs(o[q] - ((1 - w) * a[q] + w * b[q])), 1e-6);
    }
    /* 20 → 40: every odd frame is a midpoint */
    free(out);
    cr_assert_eq(drape_motion_resample(&out, &n, in, T, 20, 40, &e), 0, "%s", e.msg);
    cr_assert_eq(n, 49);
    for (int i = 1; i < n; i += 2)
        for (int k = 0; k < NJ; k++) {
            const float *a = in + 75 * (i / 2) + 3 * k, *b = a + 75, *o = out + 75 * i + 3 * k;
            cr_assert_lt(fabs(gap(a, o) - gap(o, b)), 1e-5);
            cr_assert_lt(fabs(gap(a, o) - gap(a, b) / 2), 1e-5);
        }
    free(out);
}

/* A BVH at 120 fps imported at 30 is the 120-fps import's every 4th frame */
Test(motion, bvh_at_120_imported_at_30)
{
    enum { T = 33 };
    float poses[75 * T];
    random_motion(poses, T, 9);
    tskel s = skel_mixamo();
    const char *path = tu_tmp("fast.bvh");
    write_bvh(path, &s, poses, T, 120);
    drape_motion a, b;
    drape_error e = {0};
    drape_motion_opts o30 = {.fps = 30}, o120 = {.fps = 120};
    cr_assert_eq(drape_motion_load(&a, path, &o30, &e), 0, "%s", e.msg);
    cr_assert_eq(drape_motion_load(&b, path, &o120, &e), 0, "%s", e.msg);
    cr_assert_eq(a.source_fps, 120);
    cr_assert_eq(b.frames, T);
    cr_assert_eq(a.frames, 9);
    for (int i = 0; i < a.frames; i++)
        cr_assert_eq(memcmp(a.poses + 75 * i, b.poses + 75 * 4 * i, sizeof(float) * 75), 0, "frame %d", i);
    drape_motion_free(&a);
    /* a file whose Frame Time is wrong: read as 60 fps, 30 out is every 2nd */
    drape_motion_opts o60 = {.fps = 30, .source_fps = 60};
    cr_assert_eq(drape_motion_load(&a, path, &o60, &e), 0, "%s", e.msg);
    cr_assert_eq(a.source_fps, 60);
    cr_assert_eq(a.frames, 17);
    for (int i = 0; i < a.frames; i++)
        cr_assert_eq(memcmp(a.poses + 75 * i, b.poses + 75 * 2 * i, sizeof(float) * 75), 0, "frame %d", i);
    drape_motion_free(&a);
    drape_motion_free(&b);
}

/* ---- malformed files ---- */

/* a small valid BVH (SMPL names, 3 frames) with replace[0] replaced by
 * replace[1] (once) */
static char *small_bvh(const char *from, const char *to)
{
    enum { T = 3 };
    float poses[75 * T];
    random_motion(poses, T, 1);
    tskel s = skel_smpl();
    const char *path = tu_tmp("small.bvh");
    write_bvh(path, &s, poses, T, 30);
    FILE *f = fopen(path, "rb");
    static char text[1 << 16];
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = 0;
    char *r = malloc(n + 1 + (to ? strlen(to) : 0));
    if (!from) return strcpy(r, text);
    char *at = strstr(text, from);
    cr_assert_not_null(at, "'%s' not in the BVH", from);
    size_t pre = (size_t)(at - text);
    memcpy(r, text, pre);
    strcpy(r + pre, to);
    strcat(r, at + strlen(from));
    return r;
}

static void expect_error(const char *text, int code, const char *needle)
{
    drape_motion m;
    drape_error e = {0};
    int rc = drape_motion_read(&m, (const uint8_t *)text, strlen(text), NULL, &e);
    cr_assert_eq(rc, code, "expected %d for '%s', got %d: %s", code, needle, rc, e.msg);
    cr_assert(strstr(e.msg, needle), "expected '%s' in: %s", needle, e.msg);
    cr_assert_null(m.poses);
}

Test(motion, each_malformed_file_class_has_its_message)
{
    char *ok = small_bvh(NULL, NULL);
    drape_motion m;
    drape_error e = {0};
    cr_assert_eq(drape_motion_read(&m, (const uint8_t *)ok, strlen(ok), NULL, &e), 0, "%s", e.msg);
    drape_motion_free(&m);
    /* truncated: the last frame line cut off, or the hierarchy */
    char *cut = strdup(ok);
    *strrchr(cut, '\n') = 0;
    *strrchr(cut, '\n') = 0;
    expect_error(cut, DRAPE_EFORMAT, "truncated: Frames: 3 declared, the file ends after 2");
    strchr(cut + strlen(cut) / 3, '\n')[1] = 0; /* inside the hierarchy, after a whole line */
    expect_error(cut, DRAPE_EFORMAT, "truncated");
    free(cut);
    /* wrong channel count: a frame line with one value too few or too many */
    char *few = strdup(ok);
    char *last = strrchr(few, '\n');
    *last = 0;
    *strrchr(few, ' ') = '\n';
    *strrchr(few, '\n') = 0;
    expect_error(few, DRAPE_EFORMAT, "values, the channels take 75");
    free(few);
    size_t n = strlen(ok);
    char *many = malloc(n + 8);
    memcpy(many, ok, n - 1);
    strcpy(many + n - 1, " 1.5\n");
    expect_error(many, DRAPE_EFORMAT, "more than the 75 values");
    free(many);
    /* unknown joints: names no map knows */
    char *unk = small_bvh("JOINT l_hip", "JOINT thigh_L");
    expect_error(unk, DRAPE_ENOTFOUND, "unknown joints");
    expect_error(unk, DRAPE_ENOTFOUND, "misses l_hip");
    free(unk);
    const char *strange = "HIERARCHY\nROOT a\n{\nOFFSET 0 0 0\nCHANNELS 3 Xrotation Yrotation Zrotation\n"
                          "JOINT b\n{\nOFFSET 0 1 0\nCHANNELS 3 Xrotation Yrotation Zrotation\nEnd Site\n{\n"
                          "OFFSET 0 1 0\n}\n}\n}\nMOTION\nFrames: 1\nFrame Time: 0.0333\n0 0 0 0 0 0\n";
    expect_error(strange, DRAPE_ENOTFOUND, "fits no joint map");
    /* NaN and Inf */
    char *nan = small_bvh("Frame Time: 0.03333333333\n", "Frame Time: 0.03333333333\nnan ");
    expect_error(nan, DRAPE_ENONFINITE, "not finite");
    free(nan);
    char *inf = small_bvh("OFFSET 0 ", "OFFSET 1e999 ");
    expect_error(inf, DRAPE_ENONFINITE, "not a finite number");
    free(inf);
    /* bad numbers */
    char *bad = small_bvh("Frame Time: ", "Frame Time: 0.0x");
    expect_error(bad, DRAPE_EFORMAT, "is not a number");
    free(bad);
    bad = small_bvh("CHANNELS 3 Zrotation", "CHANNELS 3 Wrotation");
    expect_error(bad, DRAPE_EFORMAT, "unknown channel 'Wrotation'");
    free(bad);
    /* unbalanced braces */
    bad = small_bvh("}\nMOTION", "}\n}\nMOTION");
    expect_error(bad, DRAPE_EFORMAT, "unbalanced braces");
    free(bad);
    bad = small_bvh("}\nMOTION", "MOTION");
    expect_error(bad, DRAPE_EFORMAT, "unbalanced braces");
    free(bad);
    /* oversized: frames, joints, a file */
    bad = small_bvh("Frames: 3", "Frames: 100001");
    expect_error(bad, DRAPE_ERANGE, "Frames: 100001 (1 to 100000)");
    free(bad);
    drape_buf big = {0};
    drape_buf_printf(&big, "HIERARCHY\nROOT j0\n{\nOFFSET 0 0 0\nCHANNELS 3 Xrotation Yrotation Zrotation\n");
    for (int i = 1; i <= 300; i++) drape_buf_printf(&big, "JOINT j%d\n{\nOFFSET 0 1 0\nCHANNELS 3 Xrotation Yrotation Zrotation\n", i);
    drape_buf_append(&big, "", 1);
    expect_error((const char *)big.p, DRAPE_ERANGE, "more than 256 joints");
    drape_buf_free(&big);
    const char *huge = tu_tmp("huge.bvh");
    FILE *f = fopen(huge, "w");
    fputs(ok, f);
    cr_assert_eq(ftruncate(fileno(f), (off_t)DRAPE_MOTION_MAX_BYTES + 1), 0);
    fclose(f);
    cr_assert_eq(drape_motion_load(&m, huge, NULL, &e), DRAPE_ERANGE);
    cr_assert(strstr(e.msg, "over the limit"), "%s", e.msg);
    /* neither format */
    expect_error("hello", DRAPE_EFORMAT, "not a motion file");
    expect_error("PK\x03\x04 broken", DRAPE_EFORMAT, "npz");
    free(ok);
}

/* a map file names what no built-in map knows */
Test(motion, a_map_file_reads_any_names)
{
    enum { T = 6 };
    float poses[75 * T];
    random_motion(poses, T, 21);
    tskel s = skel_smpl();
    drape_buf map = {0};
    for (int i = 0; i < s.n; i++)
        if (!s.j[i].end) {
            char nm[64];
            snprintf(nm, sizeof nm, "bone_%02d", i);
            drape_buf_printf(&map, "%s %s  # joint %d\n", s.j[i].name, nm, i);
            strcpy(s.j[i].name, nm);
        }
    const char *path = tu_tmp("mapped.bvh");
    write_bvh(path, &s, poses, T, 30);
    drape_motion m;
    drape_error e = {0};
    drape_motion_opts o = {.keep_heading = 1};
    cr_assert_eq(drape_motion_load(&m, path, &o, &e), DRAPE_ENOTFOUND);
    o.map = (const char *)map.p;
    o.map_len = map.len;
    cr_assert_eq(drape_motion_load(&m, path, &o, &e), 0, "%s", e.msg);
    cr_assert_str_eq(m.skeleton, "map");
    expect_poses(&m, poses, T, 1e-4, 1e-5);
    drape_motion_free(&m);
    const char *bad = "pelvis bone_00\nelbow bone_05\n";
    o.map = bad;
    o.map_len = strlen(bad);
    cr_assert_eq(drape_motion_load(&m, path, &o, &e), DRAPE_EFORMAT);
    cr_assert(strstr(e.msg, "line 2: 'elbow' is not an SMPL joint"), "%s", e.msg);
    drape_buf_free(&map);
}

/* ---- drape motion import, then drape infer on its output ---- */

static const char *bin(void) { return getenv("DRAPE_BIN") ? getenv("DRAPE_BIN") : "build/drape"; }

Test(motion, drape_motion_import_feeds_drape_infer)
{
    enum { T = 48 };
    float poses[75 * T];
    random_motion(poses, T, 13);
    tskel s = skel_cmu();
    char bvh[300], npy[300], verts[300], out[8192];
    snprintf(bvh, sizeof bvh, "%s", tu_tmp("walk.bvh"));
    snprintf(npy, sizeof npy, "%s", tu_tmp("walk.npy"));
    snprintf(verts, sizeof verts, "%s", tu_tmp("walk_verts.npy"));
    write_bvh(bvh, &s, poses, T, 120);
    cr_assert_eq(tu_run(out, sizeof out, "%s motion import '%s' --out '%s' --fps 30", bin(), bvh, npy), 0, "%s", out);
    cr_assert(strstr(out, "skeleton cmu (24 of 24 SMPL joints), units cmu"), "%s", out);
    cr_assert(strstr(out, "48 frames at 120 fps -> 12 frames at 30 fps"), "%s", out);
    drape_npy a;
    drape_error e = {0};
    cr_assert_eq(drape_npy_read(&a, npy, &e), 0, "%s", e.msg);
    cr_assert_eq(a.ndim, 2);
    cr_assert_eq(a.shape[0], 12);
    cr_assert_eq(a.shape[1], 75);
    drape_npy_free(&a);
    cr_assert_eq(tu_run(out, sizeof out, "%s infer --model '%s' --garment skirt --poses '%s' --out '%s'", bin(),
                        tu_bundle("tiny_random"), npy, verts), 0, "%s", out);
    cr_assert_eq(drape_npy_read(&a, verts, &e), 0, "%s", e.msg);
    cr_assert_eq(a.shape[0], 12);
    drape_npy_free(&a);
    /* a bad file: one line naming it, exit 1; a bad option: exit 2 */
    FILE *f = fopen(bvh, "w");
    fputs("HIERARCHY\nROOT Hips\n{\n", f);
    fclose(f);
    cr_assert_eq(tu_run(out, sizeof out, "%s motion import '%s' --out '%s'", bin(), bvh, npy), 1, "%s", out);
    cr_assert(strstr(out, "walk.bvh: truncated"), "%s", out);
    cr_assert_eq(tu_run(out, sizeof out, "%s motion import '%s' --out '%s' --skeleton robot", bin(), bvh, npy), 2, "%s", out);
}

/* ---- draped: POST /v1/motions/convert, GET /v1/motions[/name] ---- */

static char sout[1 << 20];

static int curl(tu_server *s, const char *args, const char *path)
{
    return tu_run(sout, sizeof sout, "curl -s -S -w '\\nHTTP %%{http_code}\\n' %s '%s%s'", args, s->url, path);
}

static void expect_code(const char *what, int code)
{
    char want[32];
    snprintf(want, sizeof want, "HTTP %d", code);
    cr_assert(strstr(sout, want), "%s: expected %s, got:\n%.2000s", what, want, sout);
}

Test(motion, draped_converts_and_lists_motions)
{
    enum { T = 48 };
    float poses[75 * T];
    random_motion(poses, T, 17);
    tskel s = skel_mixamo();
    char bvh[300], npy[300], dir[300], args[800], out[4096];
    snprintf(bvh, sizeof bvh, "%s", tu_tmp("post.bvh"));
    snprintf(npy, sizeof npy, "%s", tu_tmp("post.npy"));
    snprintf(dir, sizeof dir, "%s", tu_tmp("motions"));
    write_bvh(bvh, &s, poses, T, 60);
    /* the same file through the tool, at the model's rate (tiny: 30 fps) */
    cr_assert_eq(tu_run(out, sizeof out, "%s motion import '%s' --out '%s'", bin(), bvh, npy), 0, "%s", out);
    drape_npy ref;
    drape_error e = {0};
    cr_assert_eq(drape_npy_read(&ref, npy, &e), 0, "%s", e.msg);
    /* a motions folder: two clips, one title, one file that is no clip */
    mkdir(dir, 0755);
    char p[400];
    snprintf(p, sizeof p, "%s/walk_1.npy", dir);
    cr_assert_eq(drape_npy_write(p, ref.data, 2, ref.shape, &e), 0, "%s", e.msg);
    snprintf(p, sizeof p, "%s/idle.npy", dir);
    cr_assert_eq(drape_npy_write(p, ref.data, 2, (int64_t[]){5, 75}, &e), 0, "%s", e.msg);
    snprintf(p, sizeof p, "%s/notes.txt", dir);
    FILE *f = fopen(p, "w");
    fputs("not a clip\n", f);
    fclose(f);
    snprintf(p, sizeof p, "%s/index.json", dir);
    f = fopen(p, "w");
    fputs("{\"walk_1\": {\"title\": \"A walk\"}}\n", f);
    fclose(f);
    char extra[600];
    snprintf(extra, sizeof extra, "--motions-dir %s --motion-max-bytes 1000000", dir);
    tu_server srv = tu_draped_start("tiny_random", extra);
    snprintf(args, sizeof args, "-X POST --data-binary @%s", bvh);
    curl(&srv, args, "/v1/motions/convert");
    expect_code("convert", 200);
    char want[200];
    snprintf(want, sizeof want, "\"frames\":%lld,", (long long)ref.shape[0]);
    cr_assert(strstr(sout, want), "frames differ from drape motion import's (%s): %.500s", want, sout);
    cr_assert(strstr(sout, "\"fps\":30,") && strstr(sout, "\"source_fps\":60,") &&
              strstr(sout, "\"skeleton\":\"mixamo\"") && strstr(sout, "\"units\":\"cm\"") &&
              strstr(sout, "\"pose\":[[") && strstr(sout, "\"trans\":[["), "%.600s", sout);
    /* the values are the tool's, every pose and trans value of every frame */
    char *http = strstr(sout, "\nHTTP 200");
    json_error_t je;
    json_t *body = json_loadb(sout, (size_t)(http - sout), 0, &je);
    cr_assert_not_null(body, "%s: %.300s", je.text, sout);
    json_t *jp = json_object_get(body, "pose"), *jt = json_object_get(body, "trans");
    cr_assert(json_array_size(jp) == (size_t)ref.shape[0] && json_array_size(jt) == (size_t)ref.shape[0],
              "%zu pose and %zu trans frames, the tool's %lld", json_array_size(jp), json_array_size(jt),
              (long long)ref.shape[0]);
    for (size_t t = 0; t < (size_t)ref.shape[0]; t++) {
        json_t *pt = json_array_get(jp, t), *tt = json_array_get(jt, t);
        cr_assert(json_array_size(pt) == 72 && json_array_size(tt) == 3, "frame %zu", t);
        for (size_t i = 0; i < 75; i++) {
            json_t *v = i < 72 ? json_array_get(pt, i) : json_array_get(tt, i - 72);
            cr_assert(json_is_number(v), "frame %zu value %zu", t, i);
            cr_assert_lt(fabs(json_number_value(v) - ref.data[75 * t + i]), 1e-5, "frame %zu value %zu: %g, the tool's %g",
                         t, i, json_number_value(v), ref.data[75 * t + i]);
        }
    }
    json_decref(body);
    curl(&srv, args, "/v1/motions/convert?fps=60&heading=keep");
    snprintf(want, sizeof want, "\"frames\":%d,", T);
    cr_assert(strstr(sout, want), "%.300s", sout);
    curl(&srv, args, "/v1/motions/convert?fps=abc");
    expect_code("bad fps", 400);
    cr_assert(strstr(sout, "bad_field"), "%s", sout);
    curl(&srv, args, "/v1/motions/convert?skeleton=robot");
    expect_code("bad skeleton", 400);
    /* a bad file: 400 bad_motion with the parser's message */
    const char *badp = tu_tmp("bad.bvh");
    f = fopen(badp, "w");
    fputs("HIERARCHY\nROOT Hips\n{\nOFFSET 0 0 0\n", f);
    fclose(f);
    snprintf(args, sizeof args, "-X POST --data-binary @%s", badp);
    curl(&srv, args, "/v1/motions/convert");
    expect_code("bad bvh", 400);
    cr_assert(strstr(sout, "\"code\":\"bad_motion\"") && strstr(sout, "truncated"), "%s", sout);
    curl(&srv, "-X POST --data-binary 'hello'", "/v1/motions/convert");
    expect_code("not a motion", 400);
    cr_assert(strstr(sout, "bad_motion") && strstr(sout, "not a motion file"), "%s", sout);
    /* oversized: 413, counted, and the server goes on */
    const char *bigp = tu_tmp("big.bvh");
    tu_run(out, sizeof out, "head -c 1200000 /dev/zero | tr '\\0' ' ' > %s", bigp);
    snprintf(args, sizeof args, "-X POST --data-binary @%s", bigp);
    curl(&srv, args, "/v1/motions/convert");
    expect_code("oversized", 413);
    cr_assert(strstr(sout, "1000000"), "%s", sout);
    /* the list, a clip, unknown and bad names */
    curl(&srv, "", "/v1/motions");
    expect_code("list", 200);
    snprintf(want, sizeof want, "{\"name\":\"walk_1\",\"frames\":%lld,\"fps\":30,\"title\":\"A walk\"}", (long long)ref.shape[0]);
    cr_assert(strstr(sout, want), "%s in %s", want, sout);
    cr_assert(strstr(sout, "{\"name\":\"idle\",\"frames\":5,\"fps\":30,\"title\":\"idle\"}"), "%s", sout);
    cr_assert(strstr(sout, "{\"motions\":[{\"name\":\"idle\""), "sorted by name: %s", sout);
    cr_assert(!strstr(sout, "notes"), "%s", sout);
    curl(&srv, "", "/v1/motions/walk_1");
    expect_code("clip", 200);
    snprintf(want, sizeof want, "\"frames\":%lld,", (long long)ref.shape[0]);
    cr_assert(strstr(sout, want) && strstr(sout, "\"pose\":[[") && strstr(sout, "\"title\":\"A walk\""), "%.300s", sout);
    curl(&srv, "", "/v1/motions/nothing");
    expect_code("unknown", 404);
    cr_assert(strstr(sout, "unknown_motion"), "%s", sout);
    curl(&srv, "", "/v1/motions/..%2Fsecret");
    expect_code("bad name", 404);
    cr_assert(strstr(sout, "unknown_motion"), "%s", sout);
    curl(&srv, "", "/metrics");
    cr_assert(strstr(sout, "drape_limit_hits_total{limit=\"motion\"} 1"), "%s", sout);
    cr_assert(strstr(sout, "drape_http_requests_total{route=\"motions\",code=\"200\"}"), "%s", sout);
    cr_assert_eq(tu_draped_stop(&srv), 0);
    /* a folder that is not there: an empty list */
    tu_server srv2 = tu_draped_start("tiny_random", "--motions-dir /nonexistent/motions");
    curl(&srv2, "", "/v1/motions");
    expect_code("no folder", 200);
    cr_assert(strstr(sout, "{\"motions\":[]}"), "%s", sout);
    cr_assert_eq(tu_draped_stop(&srv2), 0);
    drape_npy_free(&ref);
}

/* --start and --seconds cut the file before it is placed: the kept joints
 * are the full import's from the start frame on (joints 1..23 are local,
 * untouched by the origin and the heading), frame 0 of the cut is at the
 * origin, and a start past the end is refused */
Test(motion, start_and_seconds_cut_the_file)
{
    enum { T = 48 };
    float poses[75 * T];
    random_motion(poses, T, 5);
    tskel s = skel_smpl();
    const char *path = tu_tmp("cut.bvh");
    write_bvh(path, &s, poses, T, 30);
    drape_motion full, cut;
    drape_error e = {0};
    drape_motion_opts of = {0}, oc = {.start = 0.5, .seconds = 0.8};
    cr_assert_eq(drape_motion_load(&full, path, &of, &e), 0, "%s", e.msg);
    cr_assert_eq(drape_motion_load(&cut, path, &oc, &e), 0, "%s", e.msg);
    cr_assert_eq(cut.frames, 25, "0.8 s at 30 fps from frame 15: 25 frames, got %d", cut.frames);
    for (int t = 0; t < cut.frames; t++)
        for (int k = 1; k < NJ; k++) {
            const float *a = full.poses + 75 * (t + 15) + 3 * k;
            double want[3] = {a[0], a[1], a[2]};
            cr_assert_lt(turn(cut.poses + 75 * t + 3 * k, want), 1e-6, "frame %d joint %d", t, k);
        }
    cr_assert_lt(fabs(cut.poses[72]) + fabs(cut.poses[74]), 1e-6, "the cut's frame 0 is not at the origin");
    drape_motion_free(&full);
    drape_motion_free(&cut);
    drape_motion_opts late = {.start = 10};
    cr_assert_eq(drape_motion_load(&cut, path, &late, &e), DRAPE_ERANGE);
    cr_assert(strstr(e.msg, "start 10 s: the file lasts"), "%s", e.msg);
}

/* every Euler channel order, joints and root alike */
Test(motion, every_euler_order_round_trips)
{
    const char *o[6] = {"XYZ", "XZY", "YXZ", "YZX", "ZXY", "ZYX"};
    for (int i = 0; i < 6; i++) round_trip(skel_renamed(drape_smpl_joint_names, 1, o[5 - i], o[i]), "smpl", "m", 10);
}
