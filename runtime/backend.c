#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend_impl.h"

static drape_cuda_plugin cuda_plugin;
static const drape_cuda_plugin *cuda_loaded;
static char cuda_why[256];
static pthread_once_t cuda_once = PTHREAD_ONCE_INIT;

static void cuda_load_once(void)
{
    char path[PATH_MAX];
    const char *env = getenv("DRAPE_CUDA_LIB");
    if (env && *env) {
        snprintf(path, sizeof path, "%s", env);
    } else {
        ssize_t n = readlink("/proc/self/exe", path, sizeof path - 32);
        if (n <= 0) n = 0;
        path[n] = 0;
        char *slash = strrchr(path, '/');
        snprintf(slash ? slash + 1 : path, sizeof path - (size_t)(slash ? slash + 1 - path : 0), "libdrape_cuda.so");
    }
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        snprintf(cuda_why, sizeof cuda_why, "no CUDA backend plugin (%s)", dlerror());
        return;
    }
    cuda_plugin.ops = dlsym(h, "drape_backend_cuda");
    *(void **)&cuda_plugin.probe = dlsym(h, "drape_cuda_probe");
    *(void **)&cuda_plugin.identity_read = dlsym(h, "drape_cuda_identity_read");
    if (!cuda_plugin.ops || !cuda_plugin.probe || !cuda_plugin.identity_read) {
        snprintf(cuda_why, sizeof cuda_why, "%.200s lacks the backend's symbols", path);
        return;
    }
    cuda_loaded = &cuda_plugin;
}

const drape_cuda_plugin *drape_cuda_plugin_load(char *why, size_t n)
{
    pthread_once(&cuda_once, cuda_load_once);
    if (!cuda_loaded && why && n) snprintf(why, n, "%s", cuda_why);
    return cuda_loaded;
}

int drape_backend_cuda_identity_read(drape_backend *be, const drape_identity *id, float *film, float *skin_w, float *g,
                                     float *c, float *J, float *F_cov, drape_error *err)
{
    char why[256];
    const drape_cuda_plugin *p = drape_cuda_plugin_load(why, sizeof why);
    if (!p) return drape_fail(err, DRAPE_ENOTSUP, "%s", why);
    return p->identity_read(be, id, film, skin_w, g, c, J, F_cov, err);
}

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
        /* the CUDA plugin and runtime are only touched here, when a device is asked for */
        char why[256];
        const drape_cuda_plugin *p = drape_cuda_plugin_load(why, sizeof why);
        if (p && p->probe(why, sizeof why) > 0) return p->ops->create(out, m, opts, err);
        if (is_auto) return drape_backend_cpu.create(out, m, opts, err);
        if (!p)
            return drape_fail(err, DRAPE_ENOTSUP, "backend 'cuda': this build has no CUDA backend (%s)", why);
        return drape_fail(err, DRAPE_ENOTSUP, "backend 'cuda': no usable CUDA device (%s)", why);
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
