/* The backend interface's generic half: what every backend does the same
 * way, whichever made it (kernels/backends.c makes them). The inference
 * pipeline of one batch is two stages: module A on the backend, then the
 * refine step on the host (runtime/refine.h) for the garments that ask for
 * it, unless the backend runs it inside its own run (the CUDA backend:
 * ops->identity_refine); module B of an identity likewise, then its refine
 * tables. */
#include <stdlib.h>
#include <string.h>

#include "backend_impl.h"
#include "refine.h"

void drape_backend_free(drape_backend *be)
{
    if (be) be->ops->destroy(be);
}

const char *drape_backend_name(const drape_backend *be) { return be->ops->name; }
const drape_model *drape_backend_model(const drape_backend *be) { return be->model; }
int drape_backend_healthy(const drape_backend *be) { return !be->ops->healthy || be->ops->healthy(be); }

int drape_identity_create(drape_backend *be, drape_identity **out, int garment, const float *betas, int n_betas,
                          drape_error *err)
{
    *out = NULL;
    const drape_model *m = be->model;
    if (garment < 0 || garment >= m->cfg.n_garments)
        return drape_fail(err, DRAPE_ENOTFOUND, "garment index %d: the model has %d garments", garment, m->cfg.n_garments);
    int rc = drape_model_check_betas(m, betas, n_betas, err);
    if (rc) return rc;
    float full[DRAPE_MAX_BETAS] = {0};
    if (n_betas) memcpy(full, betas, (size_t)n_betas * sizeof *full);
    if ((rc = be->ops->identity_create(be, out, garment, full, err))) return rc;
    /* the refine step is the same on every backend: made here, run by drape_backend_run */
    if ((rc = drape_refine_create(&(*out)->refine, m, garment, full, err))) {
        be->ops->identity_free(be, *out);
        *out = NULL;
        return rc;
    }
    (*out)->bytes += drape_refine_bytes((*out)->refine);
    if ((*out)->refine && be->ops->identity_refine) {
        drape_refine_view v;
        drape_refine_view_get((*out)->refine, &v);
        if ((rc = be->ops->identity_refine(be, *out, &v, err))) {
            drape_identity_free(be, *out);
            *out = NULL;
            return rc;
        }
    }
    return DRAPE_OK;
}

void drape_identity_free(drape_backend *be, drape_identity *id)
{
    if (!id) return;
    drape_refine_free(id->refine);
    id->refine = NULL;
    be->ops->identity_free(be, id);
}

int drape_identity_garment(const drape_identity *id) { return id->garment; }
size_t drape_identity_bytes(const drape_identity *id) { return id->bytes; }
size_t drape_identity_device_bytes(const drape_identity *id) { return id->device_bytes; }

static const char *const precision_names[DRAPE_PRECISION_COUNT] = {"fp32", "tf32", "bf16", "fp16"};

int drape_precision_parse(const char *name)
{
    for (int i = 0; name && i < DRAPE_PRECISION_COUNT; i++)
        if (!strcmp(name, precision_names[i])) return i;
    return -1;
}

const char *drape_precision_name(int precision)
{
    return precision >= 0 && precision < DRAPE_PRECISION_COUNT ? precision_names[precision] : "unknown";
}

int drape_backend_run(drape_backend *be, drape_frame *frames, int n, drape_error *err)
{
    if (n < 0) return drape_fail(err, DRAPE_EINVAL, "negative frame count");
    for (int i = 0; i < n; i++) {
        if (frames[i].pack != DRAPE_PACK_NONE && frames[i].pack != DRAPE_PACK_F16 && frames[i].pack != DRAPE_PACK_Q16)
            return drape_fail(err, DRAPE_EINVAL, "frame %d: pack %d is none, f16 or q16", i, frames[i].pack);
        frames[i].packed = 0;
    }
    int rc = n ? be->ops->run(be, frames, n, err) : DRAPE_OK;
    if (rc) return rc;
    /* the refine step on the host, after either backend (runtime/refine.h),
     * then the packing the backend did not do (the CPU backend's, a refined
     * frame's), one frame per thread; frame t is the history's last */
    int t = be->model->cfg.n_hist - 1;
#pragma omp parallel for schedule(dynamic) num_threads(be->threads) if (n > 1)
    for (int i = 0; i < n; i++) {
        drape_frame *f = &frames[i];
        drape_error e = {0};
        if (!f->lbs_only && f->id->refine && !f->id->refine_in_run && drape_refine_frame(f->id->refine, f->out, f->pose[t], f->trans[t], &e)) {
#pragma omp critical(drape_refine_error)
            if (!rc) {
                rc = e.code;
                if (err) *err = e;
            }
            continue;
        }
        if (f->pack && !f->packed) {
            int V = be->model->garments[f->id->garment].V;
            f->packed = drape_pack16((uint8_t *)f->out, f->bbox, f->pack, f->out, V) ? -1 : 1;
        }
    }
    return rc;
}
