/* Module A on the CPU (docs/design.md §2.4): a batch of frames of any identities.
 * Bone-Net runs as one GEMM per layer over the whole batch (FiLM per row,
 * from each row's identity); skinning and the UV conv stack run per frame. */
#include <stdlib.h>
#include <string.h>

#include "../../core/kinematics.h"
#include "../../runtime/body.h"
#include "cpu_backend.h"
#include "ops.h"

static int grow(cpu_backend *be, int n, drape_error *err)
{
    if (n <= be->cap) return DRAPE_OK;
    const drape_config *c = &be->base.model->cfg;
    int B = c->bones, H = c->hidden;
    size_t sizes[8] = {(size_t)drape_bonenet_in(c), (size_t)H, (size_t)H, (size_t)9 * B, (size_t)c->pose_dim,
                       (size_t)12 * B, (size_t)3 * B, 12};
    float **bufs[8] = {&be->X, &be->h1, &be->h2, &be->net, &be->phi, &be->T_hat, &be->q, &be->Hf};
    for (int i = 0; i < 8; i++) {
        float *p = realloc(*bufs[i], sizes[i] * (size_t)n * sizeof(float));
        if (!p) return drape_fail(err, DRAPE_ENOMEM, "module A: out of memory for a batch of %d", n);
        *bufs[i] = p;
    }
    be->cap = n;
    return DRAPE_OK;
}

/* Step 1–2 for one frame: bone transforms in H_t and the Bone-Net input
 * X [(2F−1)·3B]: the F history frames' bone positions, then the F − 1
 * differences of consecutive ones (oldest first). */
static void frame_bones(float *X, float *T_hat, float *q_t, float *Hf, const drape_model *m, const drape_frame *fr)
{
    const drape_config *c = &m->cfg;
    const cpu_identity *id = (const cpu_identity *)fr->id;
    const drape_garment *g = &m->garments[id->base.garment];
    int B = c->bones, nf = c->n_hist, t = nf - 1;
    float Hinv[12], A[DRAPE_JOINTS * 12];
    drape_heading(Hf, fr->pose[t], fr->trans[t], id->J);
    drape_tf_inverse_rigid(Hinv, Hf);
    for (int F = 0; F < nf; F++) {
        float *q = X + (size_t)3 * B * F;
        drape_fk(A, fr->pose[F], fr->trans[F], id->J, m->parents);
        for (int b = 0; b < B; b++) {
            float T[12] = {0}, p[3];
            const float *w = g->bone_joint_w + (size_t)b * DRAPE_JOINTS;
            for (int k = 0; k < DRAPE_JOINTS; k++)
                if (w[k] != 0)
                    for (int i = 0; i < 12; i++) T[i] += w[k] * A[12 * k + i];
            drape_tf_apply(p, T, id->c + 3 * b);
            drape_tf_apply(q + 3 * b, Hinv, p);
            if (F == t) drape_tf_compose(T_hat + 12 * b, Hinv, T);
        }
    }
    memcpy(q_t, X + (size_t)3 * B * t, (size_t)3 * B * sizeof *q_t);
    for (int F = 0; F < t; F++)
        for (int i = 0; i < 3 * B; i++)
            X[(size_t)3 * B * (nf + F) + i] = X[(size_t)3 * B * (F + 1) + i] - X[(size_t)3 * B * F + i];
    for (int i = 0; i < drape_bonenet_in(c); i++)
        X[i] = hd_bone_standardize(X[i], i, m->net.in_mean, m->net.in_std, m->net.in_min, m->net.in_max);
}

/* Steps 7–9: displacement δ [V,3] from the conv stack over the UV atlas. */
static void frame_uv(cpu_backend *be, float *delta, const cpu_identity *id, const float *phat, const float *phi)
{
    const drape_model *m = be->base.model;
    const drape_config *c = &m->cfg;
    const drape_garment *g = &m->garments[id->base.garment];
    int Hu = c->uv_h, Wu = c->uv_w, L = c->n_conv;
    cpu_uv_input(be->map_in, g, phat, id->F_cov, phi, c->feat_dim, c->pose_dim, Hu, Wu);
    const float *in = be->map_in;
    float *outs[2] = {be->map_a, be->map_b};
    for (int l = 0; l < L; l++) {
        const cpu_conv *cv = &be->conv[l];
        int mode = l == L - 1 ? 0 : cv->in == cv->out ? 2 : 1;
        float *out = outs[l & 1];
        cpu_conv3x3(out, in, cv, Hu, Wu, g->spans[l + 1], g->n_spans[l + 1], mode, be->pool, be->team);
        in = out;
    }
    cpu_uv_sample(delta, g, in, Hu, Wu);
}

int cpu_module_a(cpu_backend *be, drape_frame *frames, int n, drape_error *err)
{
    const drape_model *m = be->base.model;
    const drape_config *c = &m->cfg;
    int B = c->bones, H = c->hidden, rc = grow(be, n, err);
    if (rc) return rc;
    for (int f = 0; f < n; f++)
        frame_bones(be->X + (size_t)f * drape_bonenet_in(c), be->T_hat + (size_t)f * 12 * B, be->q + (size_t)f * 3 * B,
                    be->Hf + 12 * f, m, &frames[f]);

    /* Bone-Net over the batch: (2F−1)·3B → H → H → H (FiLM, ReLU) → 9B; φ from h₃ */
    float *in = be->X, *hs[2] = {be->h1, be->h2};
    for (int l = 0; l < 3; l++) {
        float *h = hs[l & 1];
        cpu_linear(h, in, &m->net.bonenet[l], n, be->team);
        for (int f = 0; f < n; f++) {
            const float *film = ((const cpu_identity *)frames[f].id)->film;
            cpu_film_relu(h + (size_t)f * H, film + (size_t)2 * l * H, film + (size_t)(2 * l + 1) * H, H);
        }
        in = h;
    }
    cpu_linear(be->net, in, &m->net.bonenet[3], n, be->team);
    cpu_linear(be->phi, in, &m->net.pose_embed, n, be->team);

    for (int f = 0; f < n; f++) {
        const drape_frame *fr = &frames[f];
        const cpu_identity *id = (const cpu_identity *)fr->id;
        const drape_garment *g = &m->garments[id->base.garment];
        cpu_bone_correct(be->M, be->T_hat + (size_t)f * 12 * B, be->q + (size_t)f * 3 * B,
                         fr->lbs_only ? NULL : be->net + (size_t)f * 9 * B, B);
        cpu_skin(be->phat, id->g, be->M, g->skin_idx, fr->lbs_only ? g->skin_w0 : id->skin_w, g->V, c->skin_k);
        if (!fr->lbs_only) {
            frame_uv(be, be->delta, id, be->phat, be->phi + (size_t)f * c->pose_dim);
            for (int i = 0; i < 3 * g->V; i++) be->phat[i] += be->delta[i];
        }
        const float *Hf = be->Hf + 12 * f;
        for (int v = 0; v < g->V; v++) drape_tf_apply(fr->out + 3 * v, Hf, be->phat + 3 * v);
    }
    return DRAPE_OK;
}
