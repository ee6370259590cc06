/* The backends there are, and how one is made: "cpu" (kernels/cpu), "cuda"
 * (the plugin libdrape_cuda.so, opened on demand) and "auto"; and a model
 * whose garments do not all share one network, made of one backend per
 * network behind one handle. */
#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../runtime/backend_impl.h"

static drape_backend *backend_for(drape_backend *be, int garment);

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
    be = backend_for(be, id->garment);
    return p->identity_read(be, id, film, skin_w, g, c, J, F_cov, err);
}

static int create_one(drape_backend **out, const char *kind, const drape_model *m, const drape_backend_opts *opts,
                      drape_error *err)
{
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

/* ---- a model whose garments do not all share one network ----
 *
 * One backend per network, each made on the model's view with that network
 * (drape_model_for_garment), behind one handle: an identity belongs to its
 * garment's backend, and a batch is split by network, each part one batch
 * of that backend. The kernels never see more than one network. */

typedef struct {
    drape_backend base;
    drape_backend_ops ops;                        /* these functions, the inner backends' name */
    drape_backend *inner[DRAPE_MAX_GARMENTS + 1]; /* [0] the shared network's, [1 + g] garment g's own */
    drape_frame *part;                            /* a batch's frames of one network */
    int part_cap;
} nets_backend;

static int net_slot(const drape_model *m, int garment) { return m->own[garment] ? 1 + garment : 0; }

static void nets_destroy(drape_backend *be)
{
    nets_backend *nb = (nets_backend *)be;
    for (int i = 0; i <= DRAPE_MAX_GARMENTS; i++) drape_backend_free(nb->inner[i]);
    free(nb->part);
    free(nb);
}

static int nets_identity_create(drape_backend *be, drape_identity **out, int garment, const float *betas, drape_error *err)
{
    drape_backend *in = ((nets_backend *)be)->inner[net_slot(be->model, garment)];
    return in->ops->identity_create(in, out, garment, betas, err);
}

static void nets_identity_free(drape_backend *be, drape_identity *id)
{
    drape_backend *in = ((nets_backend *)be)->inner[net_slot(be->model, id->garment)];
    in->ops->identity_free(in, id);
}

static int nets_run(drape_backend *be, drape_frame *frames, int n, drape_error *err)
{
    nets_backend *nb = (nets_backend *)be;
    const drape_model *m = be->model;
    int first = net_slot(m, frames[0].id->garment), mixed = 0;
    for (int i = 1; i < n && !mixed; i++) mixed = net_slot(m, frames[i].id->garment) != first;
    if (!mixed) return nb->inner[first]->ops->run(nb->inner[first], frames, n, err);
    if (n > nb->part_cap) {
        drape_frame *p = realloc(nb->part, (size_t)n * sizeof *p);
        if (!p) return drape_fail(err, DRAPE_ENOMEM, "out of memory splitting a batch of %d frames by network", n);
        nb->part = p;
        nb->part_cap = n;
    }
    /* run only writes each frame's out, so the parts are copies */
    for (int s = 0; s <= DRAPE_MAX_GARMENTS; s++) {
        if (!nb->inner[s]) continue;
        int k = 0;
        for (int i = 0; i < n; i++)
            if (net_slot(m, frames[i].id->garment) == s) nb->part[k++] = frames[i];
        int rc = k ? nb->inner[s]->ops->run(nb->inner[s], nb->part, k, err) : DRAPE_OK;
        if (rc) return rc;
    }
    return DRAPE_OK;
}

static int nets_healthy(const drape_backend *be)
{
    const nets_backend *nb = (const nets_backend *)be;
    for (int i = 0; i <= DRAPE_MAX_GARMENTS; i++)
        if (nb->inner[i] && !drape_backend_healthy(nb->inner[i])) return 0;
    return 1;
}

/* The backend that runs garment g's identities: be itself but for a nets backend. */
static drape_backend *backend_for(drape_backend *be, int garment)
{
    return be->ops->run == nets_run ? ((nets_backend *)be)->inner[net_slot(be->model, garment)] : be;
}

static int create_nets(drape_backend **out, const char *kind, const drape_model *m, const drape_backend_opts *opts,
                       drape_error *err)
{
    nets_backend *nb = calloc(1, sizeof *nb);
    if (!nb) return drape_fail(err, DRAPE_ENOMEM, "out of memory");
    nb->base.ops = &nb->ops;
    nb->base.model = m;
    for (int g = 0; g < m->cfg.n_garments; g++) {
        int s = net_slot(m, g), rc;
        if (nb->inner[s]) continue;
        if ((rc = create_one(&nb->inner[s], kind, drape_model_for_garment(m, g), opts, err))) {
            nets_destroy(&nb->base);
            return rc;
        }
        nb->ops.name = nb->inner[s]->ops->name; /* "cpu" or "cuda", the same for every part */
    }
    nb->ops.destroy = nets_destroy;
    nb->ops.identity_create = nets_identity_create;
    nb->ops.identity_free = nets_identity_free;
    nb->ops.run = nets_run;
    nb->ops.healthy = nets_healthy;
    *out = &nb->base;
    return DRAPE_OK;
}

int drape_backend_create(drape_backend **out, const char *kind, const drape_model *m, const drape_backend_opts *opts,
                         drape_error *err)
{
    static const drape_backend_opts defaults = {0};
    *out = NULL;
    if (!opts) opts = &defaults;
    if (opts->precision < 0 || opts->precision > 2)
        return drape_fail(err, DRAPE_EINVAL, "precision %d: 0 (fp32), 1 (tf32) or 2 (bf16)", opts->precision);
    return m->n_own ? create_nets(out, kind, m, opts, err) : create_one(out, kind, m, opts, err);
}
