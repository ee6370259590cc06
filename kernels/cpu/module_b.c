/* Module B on the CPU (docs/design.md §2.3): once per identity. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../../runtime/body.h"
#include "../../runtime/skin.h"
#include "../../core/kinematics.h"
#include "../../core/mesh.h"
#include "cpu_backend.h"
#include "ops.h"

/* Directed edge list of the body–garment graph. */
typedef struct {
    int E;
    int32_t *snd, *rcv;
    unsigned char *type; /* 0 garment-garment, 1 body-body, 2 garment-body */
} graph;

static void graph_add(graph *gr, int a, int b, int type)
{
    gr->snd[gr->E] = a; gr->rcv[gr->E] = b; gr->type[gr->E++] = (unsigned char)type;
    gr->snd[gr->E] = b; gr->rcv[gr->E] = a; gr->type[gr->E++] = (unsigned char)type;
}

/* nn [V,knn]: the knn nearest body vertices of each garment vertex, ties to
 * the lower index (insertion keeps the first of equal distances). */
static void knn_body(int32_t *nn, const float *gv, int V, const float *vs, int Nb, int knn)
{
    float best[64]; /* knn <= 64 (config bound) */
    for (int v = 0; v < V; v++) hd_knn_vertex(nn + (size_t)v * knn, best, gv + 3 * (size_t)v, vs, Nb, knn);
}

int cpu_module_b(cpu_identity **out, const drape_model *m, int garment, const float *betas, int threads,
                 drape_error *err)
{
    const drape_config *cf = &m->cfg;
    const drape_garment *g = &m->garments[garment];
    int V = g->V, Nb = m->Nb, N = V + Nb, B = cf->bones, H = cf->hidden, dh = cf->latent;
    int k = cf->skin_k, knn = cf->knn < Nb ? cf->knn : Nb, df = cf->feat_dim;
    int Emax = 2 * (g->n_edges + m->n_body_edges + V * knn);

    size_t nfl = (size_t)6 * H + (size_t)V * k + 3 * (size_t)V + 3 * (size_t)B + 3 * DRAPE_JOINTS + (size_t)g->n_cov * df;
    cpu_identity *id = calloc(1, sizeof *id + nfl * sizeof(float));
    float *vs = malloc((size_t)Nb * 3 * sizeof *vs), *nrm = malloc((size_t)Nb * 3 * sizeof *nrm);
    float *x = malloc((size_t)N * 8 * sizeof *x), *h = malloc((size_t)N * dh * sizeof *h);
    float *hcat = malloc((size_t)N * 2 * dh * sizeof *hcat), *hnew = malloc((size_t)N * dh * sizeof *hnew);
    float *ef = malloc((size_t)Emax * 7 * sizeof *ef), *e = malloc((size_t)Emax * dh * sizeof *e);
    float *ecat = malloc((size_t)Emax * 3 * dh * sizeof *ecat), *enew = malloc((size_t)Emax * dh * sizeof *enew);
    float *tmp = malloc((size_t)(Emax > N ? Emax : N) * dh * sizeof *tmp);
    int32_t *nn = malloc((size_t)V * knn * sizeof *nn);
    graph gr = {0, malloc((size_t)Emax * sizeof(int32_t)), malloc((size_t)Emax * sizeof(int32_t)), malloc((size_t)Emax)};
    int dwh = m->net.head_dw[0].out;
    float *dwh_buf = malloc((size_t)V * (dwh > B ? dwh : B) * sizeof(float)), *dw = malloc((size_t)V * B * sizeof(float));
    float *f = malloc((size_t)V * df * sizeof *f);
    float *small = malloc((size_t)(2 * dh + cf->z_dim + 2 * H) * sizeof *small);
    int rc = DRAPE_OK;
    if (!id || !vs || !nrm || !x || !h || !hcat || !hnew || !ef || !e || !ecat || !enew || !tmp || !nn || !gr.snd ||
        !gr.rcv || !gr.type || !dwh_buf || !dw || !f || !small) {
        rc = drape_fail(err, DRAPE_ENOMEM, "module B: out of memory (graph of %d nodes, %d edges)", N, Emax);
        goto out;
    }
    float *p = id->data;
    id->film = p; p += 6 * H;
    id->skin_w = p; p += (size_t)V * k;
    id->g = p; p += 3 * V;
    id->c = p; p += 3 * B;
    id->J = p; p += 3 * DRAPE_JOINTS;
    id->F_cov = p;
    id->base.garment = garment;
    id->base.bytes = sizeof *id + nfl * sizeof(float);

    /* 1. retarget garment and bones to the body shape */
    drape_body_shape(vs, id->J, m, betas);
    drape_retarget(id->g, g->rest, g->body_nn, V, m, betas);
    drape_retarget(id->c, g->bones, g->bone_body_nn, B, m, betas);

    /* 2. the graph: garment nodes 0..V−1, body nodes V..N−1 */
    drape_mesh_normals(nrm, vs, Nb, m->body_faces, m->Fb);
    for (int v = 0; v < V; v++) {
        float *r = x + 8 * v;
        memcpy(r, id->g + 3 * v, 3 * sizeof *r);
        r[3] = r[4] = r[5] = 0;
        r[6] = 0;
        r[7] = 1;
    }
    for (int i = 0; i < Nb; i++) {
        float *r = x + 8 * (V + i);
        memcpy(r, vs + 3 * i, 3 * sizeof *r);
        memcpy(r + 3, nrm + 3 * i, 3 * sizeof *r);
        r[6] = 1;
        r[7] = 0;
    }
    for (int i = 0; i < g->n_edges; i++) graph_add(&gr, g->edges[2 * i], g->edges[2 * i + 1], 0);
    for (int i = 0; i < m->n_body_edges; i++) graph_add(&gr, V + m->body_edges[2 * i], V + m->body_edges[2 * i + 1], 1);
    knn_body(nn, id->g, V, vs, Nb, knn);
    for (int v = 0; v < V; v++)
        for (int j = 0; j < knn; j++) graph_add(&gr, v, V + nn[(size_t)v * knn + j], 2);
    int E = gr.E;
    const float *pos[2] = {id->g, vs};
    for (int i = 0; i < E; i++) {
        int s = gr.snd[i], r = gr.rcv[i];
        const float *xs = s < V ? pos[0] + 3 * s : pos[1] + 3 * (s - V);
        const float *xr = r < V ? pos[0] + 3 * r : pos[1] + 3 * (r - V);
        float *o = ef + 7 * (size_t)i;
        for (int d = 0; d < 3; d++) o[d] = xs[d] - xr[d];
        o[3] = sqrtf(o[0] * o[0] + o[1] * o[1] + o[2] * o[2]);
        o[4] = gr.type[i] == 0;
        o[5] = gr.type[i] == 1;
        o[6] = gr.type[i] == 2;
    }

    /* 3. encoder */
    cpu_mlp_ln(h, tmp, x, &m->net.node_embed, N, threads);
    cpu_mlp_ln(e, tmp, ef, &m->net.edge_embed, E, threads);
    for (int bl = 0; bl < cf->blocks; bl++) {
        cpu_edge_concat(ecat, e, h, gr.snd, gr.rcv, E, dh);
        cpu_mlp_ln(enew, tmp, ecat, &m->net.edge_mlp[bl], E, threads);
        for (size_t i = 0; i < (size_t)E * dh; i++) e[i] += enew[i];
        cpu_scatter_add(hnew, e, gr.rcv, E, N, dh); /* Σ of the new edges */
        for (int i = 0; i < N; i++) {
            memcpy(hcat + (size_t)i * 2 * dh, h + (size_t)i * dh, (size_t)dh * sizeof *h);
            memcpy(hcat + (size_t)i * 2 * dh + dh, hnew + (size_t)i * dh, (size_t)dh * sizeof *h);
        }
        cpu_mlp_ln(hnew, tmp, hcat, &m->net.node_mlp[bl], N, threads);
        for (size_t i = 0; i < (size_t)N * dh; i++) h[i] += hnew[i];
    }

    /* 4. heads on the garment nodes F_c = h[0:V] */
    float *mean = small, *zh = small + dh, *z = small + 2 * dh;
    for (int d = 0; d < dh; d++) {
        double acc = 0;
        for (int v = 0; v < V; v++) acc += h[(size_t)v * dh + d];
        mean[d] = (float)(acc / V);
    }
    cpu_linear(zh, mean, &m->net.head_z[0], 1, threads);
    cpu_relu(zh, dh);
    cpu_linear(z, zh, &m->net.head_z[1], 1, threads);
    cpu_linear(dwh_buf, h, &m->net.head_dw[0], V, threads);
    cpu_relu(dwh_buf, (int64_t)V * dwh);
    cpu_linear(dw, dwh_buf, &m->net.head_dw[1], V, threads);
    cpu_linear(f, h, &m->net.head_feat, V, threads);

    /* 5. cached: FiLM vectors, skin weights, F_UV */
    float *m1 = z + cf->z_dim, *m2 = m1 + H;
    cpu_linear(m1, z, &m->net.modulator[0], 1, threads);
    cpu_relu(m1, H);
    cpu_linear(m2, m1, &m->net.modulator[1], 1, threads);
    cpu_relu(m2, H);
    cpu_linear(id->film, m2, &m->net.modulator[2], 1, threads);
    cpu_skin_weights(id->skin_w, g->skin_w0, dw, g->skin_idx, V, k, B);
    for (int c = 0; c < g->n_cov; c++) {
        int t = g->cov_texel[c];
        const int32_t *fc = g->faces + 3 * g->texel_face[t];
        const float *l = g->texel_bary + 3 * t;
        float *o = id->F_cov + (size_t)c * df;
        for (int d = 0; d < df; d++)
            o[d] = l[0] * f[(size_t)fc[0] * df + d] + l[1] * f[(size_t)fc[1] * df + d] + l[2] * f[(size_t)fc[2] * df + d];
    }
    *out = id;
    id = NULL;
out:
    free(id);
    free(vs); free(nrm); free(x); free(h); free(hcat); free(hnew); free(ef); free(e); free(ecat); free(enew);
    free(tmp); free(nn); free(gr.snd); free(gr.rcv); free(gr.type); free(dwh_buf); free(dw); free(f); free(small);
    return rc;
}
