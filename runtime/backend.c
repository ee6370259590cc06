#include <string.h>

#include "backend_impl.h"

int drape_backend_create(drape_backend **out, const char *kind, const drape_model *m, const drape_backend_opts *opts,
                         drape_error *err)
{
    static const drape_backend_opts defaults = {0};
    *out = NULL;
    if (!opts) opts = &defaults;
    if (opts->precision < 0 || opts->precision > 2)
        return drape_fail(err, DRAPE_EINVAL, "precision %d: 0 (fp32), 1 (tf32) or 2 (bf16)", opts->precision);
    int is_auto = !strcmp(kind, "auto");
    if (!strcmp(kind, "cpu")) return drape_backend_cpu.create(out, m, opts, err);
    if (!strcmp(kind, "cuda") || is_auto) {
#ifdef DRAPE_HAVE_CUDA
        /* the CUDA runtime is only touched here, when a device is asked for */
        char why[128];
        if (drape_cuda_probe(why, sizeof why) > 0) return drape_backend_cuda.create(out, m, opts, err);
        if (is_auto) return drape_backend_cpu.create(out, m, opts, err);
        return drape_fail(err, DRAPE_ENOTSUP, "backend 'cuda': no usable CUDA device (%s)", why);
#else
        if (is_auto) return drape_backend_cpu.create(out, m, opts, err);
        return drape_fail(err, DRAPE_ENOTSUP, "backend 'cuda': this build has no CUDA backend (nvcc was not found)");
#endif
    }
    return drape_fail(err, DRAPE_EINVAL, "unknown backend '%s' (cpu, cuda, auto)", kind);
}

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
    return be->ops->identity_create(be, out, garment, full, err);
}

void drape_identity_free(drape_backend *be, drape_identity *id)
{
    if (id) be->ops->identity_free(be, id);
}

int drape_identity_garment(const drape_identity *id) { return id->garment; }
size_t drape_identity_bytes(const drape_identity *id) { return id->bytes; }

int drape_backend_run(drape_backend *be, drape_frame *frames, int n, drape_error *err)
{
    if (n < 0) return drape_fail(err, DRAPE_EINVAL, "negative frame count");
    return n ? be->ops->run(be, frames, n, err) : DRAPE_OK;
}
