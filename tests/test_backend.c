/* Modules A and B through the backend interface: the invariances docs/design.md §2
 * promises, batching, and bad identities. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../runtime/body.h"
#include "../runtime/sequence.h"
#include "util.h"

typedef struct {
    drape_model *m;
    drape_backend *be;
    drape_identity *id;
    int V;
} rig;

static rig rig_open(const char *bundle, const float *betas, int nb)
{
    rig r;
    r.m = tu_load(bundle);
    r.be = tu_backend(r.m);
    r.id = tu_identity(r.be, 0, betas, nb);
    r.V = r.m->garments[0].V;
    return r;
}

static void rig_close(rig *r)
{
    drape_identity_free(r->be, r->id);
    drape_backend_free(r->be);
    drape_model_free(r->m);
}

static float *run_seq(rig *r, const float *poses, int T, int lbs)
{
    float *out = malloc(sizeof(float) * T * r->V * 3);
    drape_error e = {0};
    cr_assert_eq(drape_sequence_run(r->be, r->id, poses, T, lbs, out, 4, &e), 0, "%s", e.msg);
    return out;
}

Test(backend, zero_network_is_plain_skinning)
{
    float betas[4] = {1, -0.5f, 0.3f, 2};
    rig r = rig_open("tiny_zero", betas, 4);
    float poses[6 * 75];
    tu_random_poses(poses, 6, 0.4f, 0.3f, 11);
    float *full = run_seq(&r, poses, 6, 0), *lbs = run_seq(&r, poses, 6, 1);
    double d = tu_max_abs_diff(full, lbs, 6 * r.V * 3);
    cr_assert_leq(d, 1e-6, "zero network differs from skinning by %g m", d);
    free(full);
    free(lbs);
    rig_close(&r);
}

Test(backend, random_network_corrects_skinning)
{
    /* the contrapositive guard of the test above: corrections are not zero */
    rig r = rig_open("tiny_random", NULL, 0);
    float poses[4 * 75];
    tu_random_poses(poses, 4, 0.4f, 0.3f, 12);
    float *full = run_seq(&r, poses, 4, 0), *lbs = run_seq(&r, poses, 4, 1);
    cr_assert_gt(tu_max_abs_diff(full, lbs, 4 * r.V * 3), 1e-3);
    free(full);
    free(lbs);
    rig_close(&r);
}

Test(backend, rest_pose_reproduces_rest_garment)
{
    float poses[3 * 75] = {0};
    const char *bundles[2] = {"tiny_random", "tiny_zero"};
    for (int b = 0; b < 2; b++) {
        rig r = rig_open(bundles[b], NULL, 0);
        const float *rest = r.m->garments[0].rest;
        float *lbs = run_seq(&r, poses, 3, 1);
        for (int t = 0; t < 3; t++)
            cr_assert_leq(tu_max_abs_diff(lbs + t * r.V * 3, rest, r.V * 3), 1e-6, "%s frame %d", bundles[b], t);
        if (b == 1) { /* zero network: the full model too */
            float *full = run_seq(&r, poses, 3, 0);
            cr_assert_leq(tu_max_abs_diff(full, rest, r.V * 3), 1e-6);
            free(full);
        }
        free(lbs);
        rig_close(&r);
    }
}

/* axis-angle of a rotation matrix (angle < π), via the quaternion */
static void mat_to_aa(float aa[3], const double R[9])
{
    double w = sqrt(fmax(0, 1 + R[0] + R[4] + R[8])) / 2;
    double x = (R[7] - R[5]) / (4 * w), y = (R[2] - R[6]) / (4 * w), z = (R[3] - R[1]) / (4 * w);
    double s = sqrt(x * x + y * y + z * z), ang = 2 * atan2(s, w);
    double k = s > 0 ? ang / s : 2;
    aa[0] = (float)(k * x);
    aa[1] = (float)(k * y);
    aa[2] = (float)(k * z);
}

/* A constant yaw α about y and a translation d applied to every frame (root
 * orientation R_y(α)R_0, translation chosen so the pelvis moves rigidly)
 * moves the output by exactly that rigid motion. */
static void rigid_case(const char *bundle)
{
    float betas[3] = {0.7f, -1.2f, 0.4f};
    rig r = rig_open(bundle, betas, 3);
    enum { T = 5 };
    float poses[T * 75], moved[T * 75], J[72], full_betas[16] = {0.7f, -1.2f, 0.4f};
    tu_random_poses(poses, T, 0.3f, 0.2f, 21);
    drape_body_shape(NULL, J, r.m, full_betas);
    const double a = 0.8, ca = cos(a), sa = sin(a), d[3] = {0.3, -0.1, 1.5};
    const double Ry[9] = {ca, 0, sa, 0, 1, 0, -sa, 0, ca};
    memcpy(moved, poses, sizeof poses);
    for (int t = 0; t < T; t++) {
        float R0f[9];
        double R0[9], R[9];
        drape_rodrigues(R0f, poses + 75 * t);
        for (int i = 0; i < 9; i++) R0[i] = R0f[i];
        for (int i = 0; i < 3; i++)
            for (int j = 0; j < 3; j++) R[3 * i + j] = Ry[3 * i] * R0[j] + Ry[3 * i + 1] * R0[3 + j] + Ry[3 * i + 2] * R0[6 + j];
        mat_to_aa(moved + 75 * t, R);
        const float *tr = poses + 75 * t + 72;
        double o[3] = {J[0] + tr[0], J[1] + tr[1], J[2] + tr[2]};
        for (int i = 0; i < 3; i++)
            moved[75 * t + 72 + i] = (float)(Ry[3 * i] * o[0] + Ry[3 * i + 1] * o[1] + Ry[3 * i + 2] * o[2] + d[i] - J[i]);
    }
    for (int lbs = 0; lbs < 2; lbs++) {
        float *y0 = run_seq(&r, poses, T, lbs), *y1 = run_seq(&r, moved, T, lbs);
        double worst = 0;
        for (int i = 0; i < T * r.V; i++) {
            const float *p = y0 + 3 * i;
            for (int k = 0; k < 3; k++) {
                double want = Ry[3 * k] * p[0] + Ry[3 * k + 1] * p[1] + Ry[3 * k + 2] * p[2] + d[k];
                worst = fmax(worst, fabs(want - y1[3 * i + k]));
            }
        }
        cr_assert_leq(worst, 1e-5, "%s lbs=%d: rigid motion off by %g m", bundle, lbs, worst);
        free(y0);
        free(y1);
    }
    rig_close(&r);
}

Test(backend, rigid_motion_equivariance_tiny) { rigid_case("tiny_random"); }
Test(backend, rigid_motion_equivariance_small) { rigid_case("small_random"); }

/* Frames of different identities, modes and histories in one batch equal the
 * same frames run one at a time. */
static void batch_case(const char *bundle)
{
    drape_model *m = tu_load(bundle);
    drape_backend *be = tu_backend(m);
    float b0[2] = {0, 0}, b1[4] = {-2, 1, 0.5f, 3};
    drape_identity *ids[2] = {tu_identity(be, 0, b0, 2), tu_identity(be, m->cfg.n_garments - 1, b1, 4)};
    enum { N = 7 };
    float poses[(N + 2) * 75];
    tu_random_poses(poses, N + 2, 0.3f, 0.2f, 31);
    drape_frame fr[N];
    float *outs[N], *single[N];
    for (int f = 0; f < N; f++) {
        const drape_identity *id = ids[f % 2];
        int V = m->garments[drape_identity_garment(id)].V;
        outs[f] = malloc(sizeof(float) * V * 3);
        single[f] = malloc(sizeof(float) * V * 3);
        fr[f] = (drape_frame){.id = id, .lbs_only = f == 3, .out = outs[f]};
        for (int k = 0; k < 3; k++) {
            fr[f].pose[k] = poses + 75 * (f + k);
            fr[f].trans[k] = poses + 75 * (f + k) + 72;
        }
    }
    drape_error e = {0};
    cr_assert_eq(drape_backend_run(be, fr, N, &e), 0, "%s", e.msg);
    for (int f = 0; f < N; f++) {
        drape_frame one = fr[f];
        one.out = single[f];
        cr_assert_eq(drape_backend_run(be, &one, 1, &e), 0, "%s", e.msg);
        int V = m->garments[drape_identity_garment(fr[f].id)].V;
        cr_assert_leq(tu_max_abs_diff(outs[f], single[f], V * 3), 1e-5, "frame %d", f);
        free(outs[f]);
        free(single[f]);
    }
    drape_identity_free(be, ids[0]);
    drape_identity_free(be, ids[1]);
    drape_backend_free(be);
    drape_model_free(m);
}

Test(backend, batch_equals_single_frames) { batch_case("small_random"); }
/* the second garment has a network of its own: the batch is split by network */
Test(backend, batch_of_two_networks_equals_single_frames) { batch_case("tinyown_random"); }

/* Frames asked for f16 or q16 come back packed (the CPU backend packs after
 * the refine step, on the host): the bytes and box of drape_pack16 over the
 * positions the same frames give unpacked; through a model of two networks
 * (the batch split and put back) and a refined garment. */
static void packed_case(const char *bundle)
{
    drape_model *m = tu_load(bundle);
    drape_backend *be = tu_backend(m);
    float b1[3] = {1, -0.5f, 0.2f};
    int G = m->cfg.n_garments;
    drape_identity *ids[2] = {tu_identity(be, 0, NULL, 0), tu_identity(be, G - 1, b1, 3)};
    enum { N = 6 };
    float poses[(N + 2) * 75];
    tu_random_poses(poses, N + 2, 0.3f, 0.2f, 32);
    drape_frame fr[N], plain[N];
    for (int f = 0; f < N; f++) {
        int V = m->garments[drape_identity_garment(ids[f % 2])].V;
        fr[f] = (drape_frame){.id = ids[f % 2], .lbs_only = f == 4, .out = malloc(sizeof(float) * V * 3),
                              .pack = f % 3, .packed = 7};
        for (int k = 0; k < 3; k++) {
            fr[f].pose[k] = poses + 75 * (f + k);
            fr[f].trans[k] = poses + 75 * (f + k) + 72;
        }
        plain[f] = fr[f];
        plain[f].pack = DRAPE_PACK_NONE;
        plain[f].out = malloc(sizeof(float) * V * 3);
    }
    drape_error e = {0};
    cr_assert_eq(drape_backend_run(be, fr, N, &e), 0, "%s", e.msg);
    cr_assert_eq(drape_backend_run(be, plain, N, &e), 0, "%s", e.msg);
    for (int f = 0; f < N; f++) {
        int V = m->garments[drape_identity_garment(fr[f].id)].V;
        cr_assert_eq(plain[f].packed, 0);
        if (!fr[f].pack) {
            cr_assert_eq(fr[f].packed, 0);
            cr_assert(memcmp(fr[f].out, plain[f].out, sizeof(float) * V * 3) == 0, "frame %d", f);
        } else {
            uint8_t *want = malloc((size_t)V * 6);
            float box[6];
            cr_assert_eq(drape_pack16(want, box, fr[f].pack, plain[f].out, V), 0);
            cr_assert_eq(fr[f].packed, 1, "frame %d", f);
            cr_assert(memcmp(fr[f].out, want, (size_t)V * 6) == 0 && memcmp(fr[f].bbox, box, sizeof box) == 0,
                      "frame %d (pack %d)", f, fr[f].pack);
            free(want);
        }
        free(fr[f].out);
        free(plain[f].out);
    }
    fr[0].pack = 3;
    cr_assert_eq(drape_backend_run(be, fr, 1, &e), DRAPE_EINVAL);
    cr_assert(strstr(e.msg, "pack 3"), "%s", e.msg);
    drape_identity_free(be, ids[0]);
    drape_identity_free(be, ids[1]);
    drape_backend_free(be);
    drape_model_free(m);
}

Test(backend, packed_frames_two_networks) { packed_case("tinyown_random"); }
Test(backend, packed_frames_refined) { packed_case("tinyrefine_random"); }

static int drop_own(const char *name, drape_dtype *dt, int *nd, int64_t *shape, void *data, void *ctx)
{
    (void)dt; (void)nd; (void)shape; (void)data; (void)ctx;
    return strncmp(name, "garment.miniskirt.net.", 22) != 0;
}

/* A garment with a network of its own runs it, and only it does: without
 * those tensors the same bundle gives that garment the shared network's
 * result and leaves the other garment's unchanged. */
Test(backend, own_network_is_the_garments_alone)
{
    const char *shared = tu_tmp("shared.safetensors");
    tu_rewrite(tu_bundle("tinyown_random"), shared, drop_own, NULL, NULL);
    drape_model *m[2] = {tu_load("tinyown_random"), NULL};
    drape_error e = {0};
    cr_assert_eq(drape_model_load(&m[1], shared, &e), 0, "%s", e.msg);
    cr_assert_eq(m[0]->n_own, 1);
    cr_assert_eq(m[1]->n_own, 0);
    float betas[3] = {0.7f, -1, 0.4f}, poses[5 * 75];
    tu_random_poses(poses, 5, 0.35f, 0.2f, 77);
    float *out[2][2];
    for (int k = 0; k < 2; k++) {
        drape_backend *be = tu_backend(m[k]);
        cr_assert_str_eq(drape_backend_name(be), "cpu");
        for (int g = 0; g < 2; g++) {
            drape_identity *id = tu_identity(be, g, betas, 3);
            out[k][g] = malloc(sizeof(float) * 5 * m[k]->garments[g].V * 3);
            cr_assert_eq(drape_sequence_run(be, id, poses, 5, 0, out[k][g], 4, &e), 0, "%s", e.msg);
            drape_identity_free(be, id);
        }
        drape_backend_free(be);
    }
    int64_t n0 = 5 * m[0]->garments[0].V * 3, n1 = 5 * m[0]->garments[1].V * 3;
    cr_assert_eq(tu_max_abs_diff(out[0][0], out[1][0], n0), 0, "the skirt's shared network changed");
    double d = tu_max_abs_diff(out[0][1], out[1][1], n1);
    cr_assert_gt(d, 1e-4, "the miniskirt's own network gives the shared one's result (%g m apart)", d);
    for (int k = 0; k < 2; k++) {
        free(out[k][0]);
        free(out[k][1]);
        drape_model_free(m[k]);
    }
}

Test(backend, sequence_repeats_first_frame)
{
    rig r = rig_open("tiny_random", NULL, 0);
    float poses[2 * 75], three[3 * 75];
    tu_random_poses(poses, 2, 0.3f, 0.2f, 41);
    float *seq = run_seq(&r, poses, 2, 0);
    /* frame 1 of the sequence = frames (0, 0, 1) */
    memcpy(three, poses, 75 * sizeof(float));
    memcpy(three + 75, poses, 2 * 75 * sizeof(float));
    float *ref = run_seq(&r, three, 3, 0);
    cr_assert_leq(tu_max_abs_diff(seq + r.V * 3, ref + 2 * r.V * 3, r.V * 3), 1e-6);
    free(seq);
    free(ref);
    rig_close(&r);
}

Test(backend, bad_identities_are_refused)
{
    drape_model *m = tu_load("tiny_random");
    drape_backend *be = tu_backend(m);
    drape_identity *id = (drape_identity *)1;
    drape_error e = {0};
    float far[1] = {9}, nan1[2] = {0, NAN}, many[16] = {0};
    cr_assert_eq(drape_identity_create(be, &id, 0, far, 1, &e), DRAPE_ERANGE);
    cr_assert_null(id);
    cr_assert_eq(drape_identity_create(be, &id, 0, nan1, 2, &e), DRAPE_ENONFINITE);
    cr_assert_eq(drape_identity_create(be, &id, 0, many, 16, &e), DRAPE_EINVAL);
    cr_assert_eq(drape_identity_create(be, &id, 5, NULL, 0, &e), DRAPE_ENOTFOUND);
    cr_assert(strstr(e.msg, "garment"), "%s", e.msg);
    drape_backend *none = NULL;
    cr_assert_eq(drape_backend_create(&none, "tpu", m, NULL, &e), DRAPE_EINVAL);
    cr_assert_null(none);
    drape_backend_free(be);
    drape_model_free(m);
}
