/* The routes of the control plane (docs/server.md, "Routes"): probes,
 * metrics, the model, garments, the body, identities and stateless frames.
 * http.c has already checked the key and the method. */
#define _GNU_SOURCE
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/mesh.h"
#include "../proto/gltf.h"
#include "../proto/msg.h"
#include "../proto/pack.h"
#include "../runtime/body.h"
#include "frame.h"
#include "http.h"
#include "parse.h"

enum MHD_Result draped_route_healthz(draped *d, struct MHD_Connection *c, const draped_req *rq)
{
    (void)rq;
    return draped_http_json(d, c, R_HEALTHZ, 200, json_pack("{s:s}", "status", "ok"));
}

enum MHD_Result draped_route_readyz(draped *d, struct MHD_Connection *c, const draped_req *rq)
{
    (void)rq;
    if (!drape_backend_healthy(d->be)) atomic_store(&d->healthy, 0);
    int ok = d->model && d->be && atomic_load(&d->healthy) && !atomic_load(&d->stopping);
    return draped_http_json(d, c, R_READYZ, ok ? 200 : 503,
                            json_pack("{s:s,s:s}", "status", ok ? "ready" : "unavailable", "backend",
                                      atomic_load(&d->healthy) ? drape_backend_name(d->be) : "unhealthy"));
}

static json_t *floats(const float *v, size_t n)
{
    json_t *a = json_array();
    for (size_t i = 0; i < n; i++) json_array_append_new(a, json_real(v[i]));
    return a;
}

static json_t *ints(const int32_t *v, size_t n)
{
    json_t *a = json_array();
    for (size_t i = 0; i < n; i++) json_array_append_new(a, json_integer(v[i]));
    return a;
}

enum MHD_Result draped_route_model(draped *d, struct MHD_Connection *c, const draped_req *rq)
{
    (void)rq;
    const drape_config *cfg = &d->model->cfg;
    json_t *g = json_array();
    for (int i = 0; i < cfg->n_garments; i++) {
        const drape_garment *gm = &d->model->garments[i];
        json_array_append_new(g, json_pack("{s:s,s:i,s:i,s:b,s:b}", "name", gm->name, "vertices", gm->V, "faces", gm->F,
                                           "own_network", d->model->own[i] != NULL, "refined",
                                           cfg->refine[i].iters > 0));
    }
    json_t *conv = json_array();
    for (int i = 0; i < cfg->n_conv; i++) json_array_append_new(conv, json_integer(cfg->conv[i]));
    json_t *hist = json_array(); /* the frames /v1/frames' "poses" hold, offsets back from t */
    for (int i = 0; i < cfg->n_hist; i++) json_array_append_new(hist, json_integer(cfg->hist[i]));
    json_t *j = json_pack("{s:s,s:s,s:s,s:s,s:{s:i,s:i,s:i,s:i,s:[f,f],s:i,s:[i,i],s:o,s:o,s:i,s:i},s:o,s:[s,s,s,s],"
                          "s:[s,s,s],s:{s:i,s:i,s:I,s:I,s:I,s:I}}",
                          "version", DRAPED_VERSION, "instance", d->instance, "backend", drape_backend_name(d->be),
                          "model", d->cfg.model, "config", "fps", cfg->fps, "betas", cfg->betas, "bones", cfg->bones,
                          "joints", DRAPE_JOINTS, "beta_range", (double)cfg->beta_min, (double)cfg->beta_max,
                          "hidden", cfg->hidden, "uv", cfg->uv_h, cfg->uv_w, "conv", conv, "history", hist, "skin_k",
                          cfg->skin_k, "body_vertices", d->model->Nb, "garments", g, "formats", "f32", "f16", "q16",
                          "meshopt",
                          "modes", "neural", "lbs", "physics", "limits", "max_batch", (int)d->cfg.max_batch, "max_avatars",
                          (int)d->cfg.max_avatars, "pose_max_angle", (json_int_t)d->cfg.pose_max_angle,
                          "pose_max_trans", (json_int_t)d->cfg.pose_max_trans, "cut_speed",
                          (json_int_t)d->cfg.cut_speed, "cut_spin", (json_int_t)d->cfg.cut_spin);
    char digest[17];
    snprintf(digest, sizeof digest, "%016llx", (unsigned long long)d->digest);
    json_object_set_new(j, "digest", json_string(digest));
    /* per garment, what its network was trained for: "untrained" for a garment
     * added without one (docs/garments.md), "other_body" after `drape body
     * import` until it is retrained (docs/body.md) */
    json_t *nets = json_object(), *modes = json_object();
    for (int i = 0; i < cfg->n_garments; i++) {
        json_object_set_new(nets, cfg->garments[i], json_string(cfg->untrained[i]   ? "untrained"
                                                                : cfg->stale_net[i] ? "other_body"
                                                                                    : "trained"));
        /* the modes it runs in: no neural without a trained network (docs/garments.md) */
        json_object_set_new(modes, cfg->garments[i], cfg->untrained[i] ? json_pack("[s,s]", "lbs", "physics")
                                                                       : json_pack("[s,s,s]", "neural", "lbs", "physics"));
    }
    json_object_set_new(j, "garment_modes", modes);
    json_object_set_new(j, "networks", nets);
    drape_garment_sim_params rt = drape_garment_sim_realtime(); /* what mode physics runs, then per garment */
    json_t *ph = json_pack("{s:i,s:i,s:i,s:f}", "threads", (int)d->cfg.physics_threads, "substeps", rt.substeps,
                           "iterations", rt.iters, "pull", rt.guide), *per = json_object(), *pull = json_object();
    for (int i = 0; i < cfg->n_garments; i++) { /* --physics-substeps', the bundle's pull */
        const drape_garment_sim_params *gp = draped_physics_params(d->physics, i);
        json_object_set_new(per, cfg->garments[i], json_integer(gp->substeps));
        json_object_set_new(pull, cfg->garments[i], json_real(gp->guide));
    }
    json_object_set_new(ph, "garment_substeps", per);
    json_object_set_new(ph, "garment_pull", pull);
    json_object_set_new(j, "physics", ph);
    return draped_http_json(d, c, R_MODEL, 200, j);
}

/* The garment as binary glTF. Its vertices are the model's garment vertices
 * in order, so streamed frames update the geometry in place; a vertex on a
 * UV seam takes the first of its UVs (the JSON form has the exact per-face
 * UVs). Normals are the rest pose's. */
static enum MHD_Result route_garment_glb(draped *d, struct MHD_Connection *c, const drape_garment *g)
{
    float *uv = malloc(sizeof(float) * 2 * (size_t)g->V), *nrm = malloc(sizeof(float) * 3 * (size_t)g->V);
    drape_buf out = {0};
    int rc = DRAPE_ENOMEM;
    if (uv && nrm) {
        for (int v = 0; v < g->V; v++) {
            int k = g->copy_start[v] < g->copy_start[v + 1] ? g->copy_uv[g->copy_start[v]] : -1;
            uv[2 * v] = k >= 0 ? g->uv[2 * k] : 0.0f;
            uv[2 * v + 1] = k >= 0 ? g->uv[2 * k + 1] : 0.0f;
        }
        drape_mesh_normals(nrm, g->rest, g->V, g->faces, g->F);
        rc = drape_gltf_write(&out, g->rest, g->V, uv, nrm, g->faces, g->F, g->name);
    }
    free(uv);
    free(nrm);
    if (rc) {
        drape_buf_free(&out);
        return draped_http_error(d, c, R_GARMENT, DRAPE_EC_INTERNAL, "cannot write the glTF: %s", drape_strerror(rc));
    }
    return draped_http_buf(d, c, R_GARMENT, 200, "model/gltf-binary", out.p, out.len, MHD_RESPMEM_MUST_FREE);
}

enum MHD_Result draped_route_garment(draped *d, struct MHD_Connection *c, const draped_req *rq)
{
    const char *name = rq->url + strlen("/v1/garments/");
    int gi = drape_model_garment(d->model, name);
    if (gi < 0) return draped_http_error(d, c, R_GARMENT, DRAPE_EC_UNKNOWN_GARMENT, "unknown garment '%s'", name);
    const drape_garment *g = &d->model->garments[gi];
    const char *fmt = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "format");
    if (fmt && !strcmp(fmt, "glb")) return route_garment_glb(d, c, g);
    if (fmt && strcmp(fmt, "json"))
        return draped_http_error(d, c, R_GARMENT, DRAPE_EC_BAD_FIELD, "format '%s': use json or glb", fmt);
    json_t *j = json_pack("{s:s,s:i,s:i,s:i,s:o,s:o,s:o,s:o}", "name", g->name, "vertices", g->V, "faces", g->F,
                          "uvs", g->Nuv, "positions", floats(g->rest, (size_t)g->V * 3), "indices",
                          ints(g->faces, (size_t)g->F * 3), "uv", floats(g->uv, (size_t)g->Nuv * 2), "uv_indices",
                          ints(g->uv_faces, (size_t)g->F * 3));
    return draped_http_json(d, c, R_GARMENT, 200, j);
}

/* GET /v1/body?betas=b0,b1,...: the body model for a shape, for viewers
 * that pose it themselves (linear blend skinning with the 24 joints):
 * shaped rest vertices, faces, joints J(β), parents, and the 4 largest
 * skinning weights per vertex (renormalized). */
enum MHD_Result draped_route_body(draped *d, struct MHD_Connection *c, const draped_req *rq)
{
    (void)rq;
    const drape_model *m = d->model;
    float betas[DRAPE_MAX_BETAS] = {0};
    int nb = 0;
    const char *bs = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "betas");
    for (const char *p = bs; p && *p && nb <= DRAPE_MAX_BETAS;) {
        char *end;
        float v = strtof(p, &end);
        if (end == p || (*end && *end != ',') || nb == DRAPE_MAX_BETAS)
            return draped_http_error(d, c, R_BODY, DRAPE_EC_BAD_BETAS, "betas must be up to %d comma-separated numbers",
                                     m->cfg.betas);
        betas[nb++] = v;
        p = *end ? end + 1 : end;
    }
    drape_error e = {0};
    if (drape_model_check_betas(m, betas, nb, &e))
        return draped_http_error(d, c, R_BODY, DRAPE_EC_BAD_BETAS, "%s", e.msg);
    float *v = malloc(sizeof(float) * 3 * (size_t)m->Nb), J[DRAPE_JOINTS * 3];
    if (!v) return draped_http_error_as(d, c, R_BODY, 503, DRAPE_EC_INTERNAL, "out of memory");
    drape_body_shape(v, J, m, betas);
    json_t *idx = json_array(), *w = json_array();
    for (int i = 0; i < m->Nb; i++) {
        const float *wi = m->weights + (size_t)i * DRAPE_JOINTS;
        int top[4] = {0, 0, 0, 0};
        float tw[4] = {-1, -1, -1, -1}, sum = 0;
        for (int j = 0; j < DRAPE_JOINTS; j++)
            for (int k = 0; k < 4; k++)
                if (wi[j] > tw[k]) {
                    for (int q = 3; q > k; q--) {
                        tw[q] = tw[q - 1];
                        top[q] = top[q - 1];
                    }
                    tw[k] = wi[j];
                    top[k] = j;
                    break;
                }
        for (int k = 0; k < 4; k++) sum += tw[k] > 0 ? tw[k] : 0;
        for (int k = 0; k < 4; k++) {
            json_array_append_new(idx, json_integer(top[k]));
            json_array_append_new(w, json_real(sum > 0 && tw[k] > 0 ? tw[k] / sum : 0));
        }
    }
    json_t *j = json_pack("{s:i,s:o,s:o,s:o,s:o,s:o,s:o}", "vertices", m->Nb, "positions", floats(v, (size_t)m->Nb * 3),
                          "indices", ints(m->body_faces, (size_t)m->Fb * 3), "joints", floats(J, DRAPE_JOINTS * 3),
                          "parents", ints(m->parents, DRAPE_JOINTS), "skin_idx", idx, "skin_w", w);
    free(v);
    return draped_http_json(d, c, R_BODY, 200, j);
}

enum MHD_Result draped_route_identities(draped *d, struct MHD_Connection *c, const draped_req *rq)
{
    json_error_t je;
    json_t *o = draped_parse_body(rq->body.p, rq->body.len, &je);
    if (!json_is_object(o)) {
        json_decref(o);
        return draped_http_error(d, c, R_IDENTITIES, DRAPE_EC_BAD_MESSAGE, "body must be a JSON object: %s", je.text);
    }
    int g, nb;
    float betas[DRAPE_MAX_BETAS] = {0};
    char msg[256];
    drape_errcode code;
    if (draped_parse_recipe(d->model, o, &g, betas, &nb, msg, sizeof msg, &code)) {
        json_decref(o);
        return draped_http_error(d, c, R_IDENTITIES, code, "%s", msg);
    }
    json_decref(o);
    drape_idcache_entry *e;
    int hit;
    drape_error err = {0};
    int64_t t0 = drape_now_ns();
    int rc = drape_idcache_acquire(d->cache, &e, g, betas, nb, &hit, &err);
    if (rc == DRAPE_ERANGE) {
        COUNT(d->met.limits[L_CACHE]);
        return draped_http_error(d, c, R_IDENTITIES, DRAPE_EC_LIMIT, "%s", err.msg);
    }
    /* out of memory passes; an identity the cache cannot find is not there */
    if (rc) {
        unsigned status = rc == DRAPE_ENOTFOUND ? 404 : rc == DRAPE_ENOMEM ? 503 : 500;
        return draped_http_error_as(d, c, R_IDENTITIES, status, DRAPE_EC_INTERNAL, "%s", err.msg);
    }
    json_t *r = json_pack("{s:s,s:s,s:o,s:b,s:I,s:f}", "identity", drape_idcache_entry_key(e), "garment",
                          d->model->garments[g].name, "betas", floats(betas, (size_t)d->model->cfg.betas), "cached",
                          hit, "bytes", (json_int_t)drape_identity_bytes(drape_idcache_identity(e)), "encode_ms",
                          (double)(drape_now_ns() - t0) / 1e6);
    drape_idcache_release(d->cache, e);
    return draped_http_json(d, c, R_IDENTITIES, 200, r);
}

/* ---- POST /v1/frames ---- */

typedef struct {
    drape_job job;
    drape_idcache_entry *e;
    draped_frame_item req;
    float *out;
    pthread_mutex_t *mu;
    pthread_cond_t *cv;
    int *left;
    int status;
    drape_error err;
} http_item;

static void http_item_done(drape_job *j, int status, const drape_error *err)
{
    http_item *it = j->user;
    pthread_mutex_lock(it->mu);
    it->status = status;
    if (err) it->err = *err;
    (*it->left)--;
    pthread_cond_broadcast(it->cv);
    pthread_mutex_unlock(it->mu);
}

static int parse_item(draped *d, json_t *o, http_item *it, char *msg, size_t cap, drape_errcode *code)
{
    drape_pose_limits lim = draped_pose_limits(d);
    int prc = draped_parse_frame_item(d->model, &lim, o, &it->req, msg, cap, code);
    if (prc == DRAPED_PARSE_POSE_LIMIT) COUNT(d->met.limits[L_POSE]);
    if (prc) return -1;
    drape_error err = {0};
    int rc = draped_identity_resolve(d, it->req.identity, it->req.garment, it->req.betas, it->req.n_betas, &it->e,
                                     code, &err);
    if (rc) {
        if (*code == DRAPE_EC_LIMIT) COUNT(d->met.limits[L_CACHE]);
        return snprintf(msg, cap, "%.250s", err.msg), -1;
    }
    char why[DRAPE_ERRMSG_MAX];
    if (draped_mode_refused(d, drape_idcache_entry_garment(it->e), it->req.lbs ? DRAPE_MODE_LBS : DRAPE_MODE_NEURAL,
                            why, sizeof why)) {
        drape_idcache_release(d->cache, it->e);
        it->e = NULL;
        *code = DRAPE_EC_MODE_UNAVAILABLE;
        return snprintf(msg, cap, "%.250s", why), -1;
    }
    return 0;
}

static json_t *data_array(int fmt, const uint8_t *p, size_t len)
{
    json_t *a = json_array();
    if (fmt == DRAPE_FMT_F32)
        for (size_t i = 0; i + 4 <= len; i += 4) {
            float f;
            memcpy(&f, p + i, 4);
            json_array_append_new(a, json_real(f));
        }
    else if (fmt == DRAPE_FMT_MESHOPT)
        for (size_t i = 0; i < len; i++) json_array_append_new(a, json_integer(p[i]));
    else
        for (size_t i = 0; i + 2 <= len; i += 2) json_array_append_new(a, json_integer(p[i] | p[i + 1] << 8));
    return a;
}

enum MHD_Result draped_route_frames(draped *d, struct MHD_Connection *c, const draped_req *rq)
{
    json_error_t je;
    json_t *o = draped_parse_body(rq->body.p, rq->body.len, &je);
    if (!o) return draped_http_error(d, c, R_FRAMES, DRAPE_EC_BAD_MESSAGE, "body is not JSON: %s", je.text);
    json_t *list;
    size_t n;
    if (draped_parse_frames_list(o, &list, &n)) {
        json_decref(o);
        return draped_http_error(d, c, R_FRAMES, DRAPE_EC_BAD_FIELD, "'items' must be an array of 1..%d items",
                                 DRAPED_MAX_ITEMS);
    }
    http_item *items = calloc(n, sizeof *items);
    pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
    pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
    int left = 0;
    size_t made = 0;
    char msg[400];
    drape_errcode code = DRAPE_EC_INTERNAL;
    unsigned status = 0; /* 0: the code's */
    int bad = !items;
    if (bad) snprintf(msg, sizeof msg, "out of memory");
    for (; !bad && made < n; made++) {
        http_item *it = &items[made];
        char m[300];
        if (parse_item(d, list ? json_array_get(list, made) : o, it, m, sizeof m, &code)) {
            snprintf(msg, sizeof msg, "items[%zu]: %s", made, m);
            bad = 1;
            break;
        }
        int V = d->model->garments[drape_idcache_entry_garment(it->e)].V;
        it->out = malloc(sizeof(float) * 3 * (size_t)V);
        it->mu = &mu;
        it->cv = &cv;
        it->left = &left;
        draped_frame_job(&it->job, drape_idcache_identity(it->e), it->req.pose, d->model->cfg.n_hist, it->req.lbs,
                         it->req.format, it->out);
        it->job.done = http_item_done;
        it->job.user = it;
        if (!it->out) {
            drape_idcache_release(d->cache, it->e);
            snprintf(msg, sizeof msg, "out of memory");
            bad = 1;
            break;
        }
    }
    json_t *frames = NULL;
    if (!bad) {
        pthread_mutex_lock(&mu);
        for (size_t i = 0; i < n; i++) {
            left++;
            if (drape_batcher_submit(d->batcher, &items[i].job)) {
                left--;
                items[i].status = DRAPE_EINVAL;
                snprintf(items[i].err.msg, sizeof items[i].err.msg, "the server is shutting down");
            }
        }
        while (left > 0) pthread_cond_wait(&cv, &mu);
        pthread_mutex_unlock(&mu);
        frames = json_array();
        for (size_t i = 0; i < n && !bad; i++) {
            http_item *it = &items[i];
            if (it->status) {
                snprintf(msg, sizeof msg, "items[%zu]: %s", i, it->err.msg);
                status = 503; /* the backend failed this batch; the next may pass */
                code = DRAPE_EC_INTERNAL;
                bad = 1;
                break;
            }
            int V = d->model->garments[drape_idcache_entry_garment(it->e)].V;
            drape_buf pk = {0};
            float bbox[6];
            drape_timing t;
            drape_error perr = {0};
            if (draped_frame_pack(&pk, bbox, &t, &it->job, it->req.format, V, &perr)) {
                /* all or nothing, as for a bad item: no frame claims V vertices it has not got */
                draped_frame_failed(&d->met, &perr);
                snprintf(msg, sizeof msg, "items[%zu]: %s", i, perr.msg);
                code = DRAPE_EC_INTERNAL;
                bad = 1;
                drape_buf_free(&pk);
                break;
            }
            json_array_append_new(
                frames, json_pack("{s:s,s:i,s:s,s:o,s:o,s:{s:I,s:I,s:I}}", "identity",
                                  drape_idcache_entry_key(it->e), "count", V, "format", drape_format_name(it->req.format),
                                  "bbox", floats(bbox, 6), "data", data_array(it->req.format, pk.p, pk.len), "timing",
                                  "queue", (json_int_t)t.queue_us, "compute", (json_int_t)t.compute_us, "pack",
                                  (json_int_t)t.pack_us));
            drape_buf_free(&pk);
            COUNT(d->met.http_frames_total);
        }
    }
    for (size_t i = 0; i < made; i++) {
        drape_idcache_release(d->cache, items[i].e);
        free(items[i].out);
    }
    free(items);
    json_decref(o);
    if (bad) {
        json_decref(frames);
        return status ? draped_http_error_as(d, c, R_FRAMES, status, code, "%s", msg)
                      : draped_http_error(d, c, R_FRAMES, code, "%s", msg);
    }
    return draped_http_json(d, c, R_FRAMES, 200, json_pack("{s:o,s:s}", "frames", frames, "instance", d->instance));
}

enum MHD_Result draped_route_metrics(draped *d, struct MHD_Connection *c, const draped_req *rq)
{
    (void)rq;
    drape_idcache_stats cs;
    drape_idcache_get_stats(d->cache, &cs);
    drape_batcher_stats bs;
    drape_batcher_get_stats(d->batcher, &bs);
    drape_buf o = {0};
    draped_metrics_render(&o, &d->met);
    draped_metrics_render_runtime(&o, &cs, &bs, atomic_load(&d->healthy));
    draped_physics_stats ps;
    draped_physics_get_stats(d->physics, &ps);
    draped_metrics_render_physics(&o, cs.extras[DRAPED_PHYSICS_SLOT], cs.extra_builds[DRAPED_PHYSICS_SLOT], ps.threads,
                                  ps.busy, ps.queued);
    return draped_http_buf(d, c, R_METRICS, 200, "text/plain; version=0.0.4", o.p, o.len, MHD_RESPMEM_MUST_FREE);
}
