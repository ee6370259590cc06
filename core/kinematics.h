/* The scalar geometry and kinematics of the whole program, one copy: rigid
 * transforms, forward kinematics, the heading frame, the 6D rotation, the
 * bilinear UV taps, shape retargeting and the k nearest points. Each is a
 * per-element function written once for both compilers: plain C on the host
 * (runtime/body.c, the CPU backend, the cloth engine) and __host__
 * __device__ in the CUDA kernels, so both backends compute the same thing.
 * Nothing here allocates. Rotations go through float64 inside
 * (docs/design.md, "Numerics"). */
#ifndef DRAPE_KINEMATICS_H
#define DRAPE_KINEMATICS_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __CUDACC__
#define DRAPE_HD __host__ __device__
#else
#define DRAPE_HD
#endif

#define HD_JOINTS 24 /* SMPL's joints (DRAPE_JOINTS) */

/* ---- Bone-Net's input ---- */

/* Input i from its raw value v (docs/design.md §2.4.2): first clamped to the
 * range it had in training when the bundle carries one (lo, hi [X]; lo NULL:
 * none, docs/design.md §3.3), then standardized. */
static inline DRAPE_HD float hd_bone_standardize(float v, int i, const float *mean, const float *std, const float *lo,
                                                 const float *hi)
{
    if (lo) v = fminf(fmaxf(v, lo[i]), hi[i]);
    return (v - mean[i]) / std[i];
}

/* ---- rigid transforms: 3×4 row-major [R | t] ---- */

/* R [9] = rodrigues(aa), float64 inside (conventions.md) */
static inline DRAPE_HD void hd_rodrigues(float R[9], const float *aa)
{
    double x = aa[0], y = aa[1], z = aa[2];
    double a = sqrt(x * x + y * y + z * z);
    double K[9] = {0, -z, y, z, 0, -x, -y, x, 0};
    double s = 1.0, c1 = 0.0;
    if (a >= 1e-12) {
        for (int i = 0; i < 9; i++) K[i] /= a;
        s = sin(a);
        c1 = 1.0 - cos(a);
    }
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) {
            double k2 = 0;
            for (int l = 0; l < 3; l++) k2 += K[3 * i + l] * K[3 * l + j];
            R[3 * i + j] = (float)((i == j) + s * K[3 * i + j] + c1 * k2);
        }
}

/* The angle (rad, in [0, π]) of the rotation from axis-angle a to axis-angle
 * b, from the dot product of their unit quaternions: a turn through ±π,
 * where the axis-angle vector flips, is the small turn it is. */
static inline DRAPE_HD double hd_turn_angle(const float *a, const float *b)
{
    double ta = sqrt((double)a[0] * a[0] + (double)a[1] * a[1] + (double)a[2] * a[2]);
    double tb = sqrt((double)b[0] * b[0] + (double)b[1] * b[1] + (double)b[2] * b[2]);
    double sa = ta > 1e-12 ? sin(ta / 2) / ta : 0.5, sb = tb > 1e-12 ? sin(tb / 2) / tb : 0.5;
    double dot = cos(ta / 2) * cos(tb / 2) + sa * sb * ((double)a[0] * b[0] + (double)a[1] * b[1] + (double)a[2] * b[2]);
    return 2 * acos(fmin(1.0, fabs(dot)));
}

/* ---- unit quaternions q = (w, x, y, z), float64: the motion importer's
 * log map and interpolation (runtime/motion.c) ---- */

/* q [4] of axis-angle aa */
static inline DRAPE_HD void hd_quat_from_aa(double *q, const float *aa)
{
    double x = aa[0], y = aa[1], z = aa[2], a = sqrt(x * x + y * y + z * z);
    double s = a > 1e-12 ? sin(a / 2) / a : 0.5;
    q[0] = cos(a / 2), q[1] = s * x, q[2] = s * y, q[3] = s * z;
}

/* aa [3] of q (not necessarily normalized), angle in [0, π]: q and −q are
 * the same rotation, so the one with w ≥ 0 is taken */
static inline DRAPE_HD void hd_quat_to_aa(float *aa, const double *q)
{
    double sg = q[0] < 0 ? -1.0 : 1.0, w = sg * q[0], x = sg * q[1], y = sg * q[2], z = sg * q[3];
    double v = sqrt(x * x + y * y + z * z), a = 2 * atan2(v, w);
    double k = v > 1e-12 ? a / v : 2.0 / (w > 0 ? w : 1.0); /* a/v → 2/w as v → 0 */
    aa[0] = (float)(k * x), aa[1] = (float)(k * y), aa[2] = (float)(k * z);
}

/* q [4] of a rotation matrix R [9] (row-major), the largest component
 * solved first so no division is by a small number */
static inline DRAPE_HD void hd_quat_from_rotmat(double *q, const float *R)
{
    double m00 = R[0], m11 = R[4], m22 = R[8], tr = m00 + m11 + m22;
    if (tr > 0) {
        double s = 2 * sqrt(1 + tr);
        q[0] = s / 4, q[1] = (R[7] - R[5]) / s, q[2] = (R[2] - R[6]) / s, q[3] = (R[3] - R[1]) / s;
    } else if (m00 > m11 && m00 > m22) {
        double s = 2 * sqrt(1 + m00 - m11 - m22);
        q[0] = (R[7] - R[5]) / s, q[1] = s / 4, q[2] = (R[1] + R[3]) / s, q[3] = (R[2] + R[6]) / s;
    } else if (m11 > m22) {
        double s = 2 * sqrt(1 + m11 - m00 - m22);
        q[0] = (R[2] - R[6]) / s, q[1] = (R[1] + R[3]) / s, q[2] = s / 4, q[3] = (R[5] + R[7]) / s;
    } else {
        double s = 2 * sqrt(1 + m22 - m00 - m11);
        q[0] = (R[3] - R[1]) / s, q[1] = (R[2] + R[6]) / s, q[2] = (R[5] + R[7]) / s, q[3] = s / 4;
    }
}

/* aa [3] = log(R): the axis-angle of rotation matrix R [9], angle in [0, π] */
static inline DRAPE_HD void hd_aa_from_rotmat(float *aa, const float *R)
{
    double q[4];
    hd_quat_from_rotmat(q, R);
    hd_quat_to_aa(aa, q);
}

/* out [3] = the rotation a fraction t of the way from axis-angle a to b
 * along the shorter arc (slerp of their unit quaternions) */
static inline DRAPE_HD void hd_slerp_aa(float *out, const float *a, const float *b, double t)
{
    double qa[4], qb[4], q[4];
    hd_quat_from_aa(qa, a);
    hd_quat_from_aa(qb, b);
    double d = qa[0] * qb[0] + qa[1] * qb[1] + qa[2] * qb[2] + qa[3] * qb[3];
    if (d < 0) {
        d = -d;
        for (int i = 0; i < 4; i++) qb[i] = -qb[i];
    }
    double wa = 1 - t, wb = t;
    if (d < 1 - 1e-12) { /* else equal to float precision: the blend is either */
        double th = acos(d), s = sin(th);
        wa = sin((1 - t) * th) / s;
        wb = sin(t * th) / s;
    }
    for (int i = 0; i < 4; i++) q[i] = wa * qa[i] + wb * qb[i];
    double n = sqrt(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3]);
    for (int i = 0; i < 4; i++) q[i] /= n;
    hd_quat_to_aa(out, q);
}

/* out = a ∘ b (3×4 each); out may alias a or b */
static inline DRAPE_HD void hd_compose(float *out, const float *a, const float *b)
{
    float r[12];
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 4; j++) {
            float acc = j == 3 ? a[4 * i + 3] : 0.0f;
            for (int l = 0; l < 3; l++) acc += a[4 * i + l] * b[4 * l + j];
            r[4 * i + j] = acc;
        }
    for (int i = 0; i < 12; i++) out[i] = r[i];
}

/* y = a x; y may alias x */
static inline DRAPE_HD void hd_apply(float *y, const float *a, const float *x)
{
    float r[3];
    for (int i = 0; i < 3; i++) r[i] = a[4 * i] * x[0] + a[4 * i + 1] * x[1] + a[4 * i + 2] * x[2] + a[4 * i + 3];
    for (int i = 0; i < 3; i++) y[i] = r[i];
}

/* out = a⁻¹ for a rigid a; out may alias a */
static inline DRAPE_HD void hd_inverse_rigid(float *out, const float *a)
{
    float r[12];
    for (int i = 0; i < 3; i++) {
        for (int j = 0; j < 3; j++) r[4 * i + j] = a[4 * j + i];
        r[4 * i + 3] = -(a[i] * a[3] + a[4 + i] * a[7] + a[8 + i] * a[11]);
    }
    for (int i = 0; i < 12; i++) out[i] = r[i];
}

/* hd_fk in three steps, so that a device can run the joints side by side:
 * joint k's local transform [12] (its rotation, the offset from its parent) */
static inline DRAPE_HD void hd_fk_local(float *local, const float *pose, const float *trans, const float *J,
                                        const int32_t *parents, int k)
{
    float R[9];
    hd_rodrigues(R, pose + 3 * k);
    for (int i = 0; i < 3; i++) {
        for (int j = 0; j < 3; j++) local[4 * i + j] = R[3 * i + j];
        local[4 * i + 3] = k == 0 ? J[i] + trans[i] : J[3 * k + i] - J[3 * parents[k] + i];
    }
}

/* G [24,12] the world transforms, chained down the tree from local [24,12] */
static inline DRAPE_HD void hd_fk_chain(float *G, const float *local, const int32_t *parents)
{
    for (int i = 0; i < 12; i++) G[i] = local[i];
    for (int k = 1; k < HD_JOINTS; k++) hd_compose(G + 12 * k, G + 12 * parents[k], local + 12 * k);
}

/* A_k [12] joint k's skinning transform from its world transform g [12] */
static inline DRAPE_HD void hd_fk_skin(float *A_k, const float *g, const float *J, int k)
{
    for (int i = 0; i < 3; i++) {
        for (int j = 0; j < 3; j++) A_k[4 * i + j] = g[4 * i + j];
        A_k[4 * i + 3] = g[4 * i + 3] - (g[4 * i] * J[3 * k] + g[4 * i + 1] * J[3 * k + 1] + g[4 * i + 2] * J[3 * k + 2]);
    }
}

/* A [24,12] skinning transforms of one pose [72] + trans [3] for shaped
 * joints J [24,3] (docs/design.md §2.1); G [24,12] scratch, the world
 * transforms. */
static inline DRAPE_HD void hd_fk(float *A, float *G, const float *pose, const float *trans, const float *J,
                                  const int32_t *parents)
{
    float local[HD_JOINTS * 12];
    for (int k = 0; k < HD_JOINTS; k++) hd_fk_local(local + 12 * k, pose, trans, J, parents, k);
    hd_fk_chain(G, local, parents);
    for (int k = 0; k < HD_JOINTS; k++) hd_fk_skin(A + 12 * k, G + 12 * k, J, k);
}

/* H [12] heading frame [R_y(ψ) | J_0 + trans] of the current pose */
static inline DRAPE_HD void hd_heading(float *H, const float *pose, const float *trans, const float *J0)
{
    float R[9];
    hd_rodrigues(R, pose);
    double fx = R[2], fz = R[8], psi;
    if (sqrt(fx * fx + fz * fz) < 1e-6) psi = atan2(-(double)R[6], (double)R[0]);
    else psi = atan2(fx, fz);
    float s = (float)sin(psi), c = (float)cos(psi);
    float h[12] = {c, 0, s, J0[0] + trans[0], 0, 1, 0, J0[1] + trans[1], -s, 0, c, J0[2] + trans[2]};
    for (int i = 0; i < 12; i++) H[i] = h[i];
}

/* ---- rotations from network outputs, UV sampling, module B geometry ---- */

/* Below this a column's norm gives no direction (hd_rot6d) */
#define HD_ROT6D_EPS 1e-6f

/* v scaled by a power of two (exact, direction kept) when its largest
 * component passes 2^60, so that its squares cannot overflow; NaN and Inf
 * are left as they are */
static inline DRAPE_HD void hd_rot6d_tame(float *v)
{
    float m = fmaxf(fabsf(v[0]), fmaxf(fabsf(v[1]), fabsf(v[2])));
    if (!(m > 0x1p60f) || isinf(m)) return;
    int e;
    frexpf(m, &e);
    for (int i = 0; i < 3; i++) v[i] = ldexpf(v[i], -e);
}

/* R [9] of a 6D vector with identity offset (docs/design.md §2.4 step 4),
 * total over finite inputs: a network output whose a1 is (nearly) zero, or
 * whose a2 is zero or along a1, gave NaN and the server refused the frame.
 * Such an e1 is the identity's x; such an e2 the identity's y made
 * perpendicular to e1 (z where e1 is nearer ±y). Other inputs: the plain
 * Gram–Schmidt, bit for bit as before. */
static inline DRAPE_HD void hd_rot6d(float *R, const float *r)
{
    float a1[3] = {r[0] + 1.0f, r[1], r[2]}, a2[3] = {r[3], r[4] + 1.0f, r[5]};
    hd_rot6d_tame(a1);
    hd_rot6d_tame(a2);
    float n1 = sqrtf(a1[0] * a1[0] + a1[1] * a1[1] + a1[2] * a1[2]);
    if (n1 < HD_ROT6D_EPS) a1[0] = 1, a1[1] = a1[2] = 0, n1 = 1;
    float e1[3] = {a1[0] / n1, a1[1] / n1, a1[2] / n1};
    float d = e1[0] * a2[0] + e1[1] * a2[1] + e1[2] * a2[2];
    float u[3] = {a2[0] - d * e1[0], a2[1] - d * e1[1], a2[2] - d * e1[2]};
    float n2 = sqrtf(u[0] * u[0] + u[1] * u[1] + u[2] * u[2]);
    /* u is rounding noise when a2's part along e1 dwarfs it */
    if (n2 < HD_ROT6D_EPS || n2 < 1e-4f * fabsf(d)) {
        float ax[3] = {0, 1, 0};
        if (e1[1] * e1[1] > 0.5f) ax[1] = 0, ax[2] = 1;
        d = e1[0] * ax[0] + e1[1] * ax[1] + e1[2] * ax[2];
        for (int i = 0; i < 3; i++) u[i] = ax[i] - d * e1[i];
        n2 = sqrtf(u[0] * u[0] + u[1] * u[1] + u[2] * u[2]); /* at least √½ */
    }
    float e2[3] = {u[0] / n2, u[1] / n2, u[2] / n2};
    float e3[3] = {e1[1] * e2[2] - e1[2] * e2[1], e1[2] * e2[0] - e1[0] * e2[2], e1[0] * e2[1] - e1[1] * e2[0]};
    for (int i = 0; i < 3; i++) {
        R[3 * i] = e1[i];
        R[3 * i + 1] = e2[i];
        R[3 * i + 2] = e3[i];
    }
}

/* Bilinear taps (conventions.md): texel indices i*Wu+j and weights */
static inline DRAPE_HD void hd_uv_taps(int32_t *idx, float *w, float u, float v, int Hu, int Wu)
{
    float x = u * (float)Wu - 0.5f, y = v * (float)Hu - 0.5f;
    x = x < 0 ? 0 : x > Wu - 1 ? (float)(Wu - 1) : x;
    y = y < 0 ? 0 : y > Hu - 1 ? (float)(Hu - 1) : y;
    int x0 = (int)floorf(x), y0 = (int)floorf(y);
    int x1 = x0 + 1 < Wu ? x0 + 1 : Wu - 1, y1 = y0 + 1 < Hu ? y0 + 1 : Hu - 1;
    float fx = x - (float)x0, fy = y - (float)y0;
    idx[0] = y0 * Wu + x0; w[0] = (1 - fy) * (1 - fx);
    idx[1] = y0 * Wu + x1; w[1] = (1 - fy) * fx;
    idx[2] = y1 * Wu + x0; w[2] = fy * (1 - fx);
    idx[3] = y1 * Wu + x1; w[3] = fy * fx;
}

/* One thread per point: out [3] = x + shapedirs[nn]·β (docs/design.md §2.3 step 1) */
static inline DRAPE_HD void hd_retarget_point(float *out, const float *x, int nn, const float *shapedirs,
                                              const float *betas, int S)
{
    for (int d = 0; d < 3; d++) {
        const float *sd = shapedirs + ((size_t)nn * 3 + d) * S;
        float acc = x[d];
        for (int s = 0; s < S; s++) acc += sd[s] * betas[s];
        out[d] = acc;
    }
}

/* One thread per garment vertex: ids [knn] of the nearest body vertices vs
 * [Nb,3] to x [3], ascending squared distance, ties to the lower index;
 * best [knn] scratch. */
static inline DRAPE_HD void hd_knn_vertex(int32_t *ids, float *best, const float *x, const float *vs, int Nb, int knn)
{
    int have = 0;
    for (int i = 0; i < Nb; i++) {
        float dx = vs[3 * i] - x[0], dy = vs[3 * i + 1] - x[1], dz = vs[3 * i + 2] - x[2];
        float d = dx * dx + dy * dy + dz * dz;
        if (have == knn && d >= best[knn - 1]) continue;
        int pos = have < knn ? have++ : knn - 1;
        while (pos > 0 && best[pos - 1] > d) {
            best[pos] = best[pos - 1];
            ids[pos] = ids[pos - 1];
            pos--;
        }
        best[pos] = d;
        ids[pos] = i;
    }
}

#endif
