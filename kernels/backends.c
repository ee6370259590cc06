/* The backends there are, and how one is made: "cpu" (kernels/cpu), "cuda"
 * (the plugin libdrape_cuda.so, opened on demand) and "auto"; and a model
 * whose garments do not all share one network, made of one backend per
 * network behind one handle. */
#include <dlfcn.h>
#include <limits.h>
#include <omp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../core/log.h"
#include "../core/mesh.h"
#include "../runtime/backend_plugin.h"
#include "../runtime/backend_test.h"
#include "../runtime/body.h"
#include "cpu/ops.h"

static drape_backend *backend_for(drape_backend *be, int garment);

/* ---- the CUDA plugin (runtime/backend_plugin.h) ---- */

static int host_fail(drape_error *err, int code, const char *msg) { return drape_fail(err, code, "%s", msg); }
static void host_log(int level, const char *msg) { DRAPE_LOG(level, "%s", msg); }

static const drape_backend_services host_services = {
    .api_version = DRAPE_BACKEND_API_VERSION,
    .fail = host_fail,
    .log = host_log,
    .body_shape = drape_body_shape,
    .mesh_normals = drape_mesh_normals,
    .conv_pack = cpu_conv_pack,
};

static const drape_backend_plugin *cuda_loaded;
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
    drape_backend_plugin_init_fn init;
    *(void **)&init = dlsym(h, DRAPE_BACKEND_PLUGIN_INIT);
    const drape_backend_plugin *p = init ? init(&host_services) : NULL;
    if (!p) {
        snprintf(cuda_why, sizeof cuda_why, "%.200s has no %s", path, DRAPE_BACKEND_PLUGIN_INIT);
        return;
    }
    /* a plugin of another build: its tables are laid out differently, use nothing of it */
    if (p->api_version != DRAPE_BACKEND_API_VERSION) {
        snprintf(cuda_why, sizeof cuda_why, "%.160s speaks backend plugin API version %d, this program %d (rebuild it)",
                 path, p->api_version, DRAPE_BACKEND_API_VERSION);
        return;
    }
    if (!p->ops || !p->probe || !p->identity_read || !p->launches || p->ops->kind != DRAPE_BACKEND_CUDA) {
        snprintf(cuda_why, sizeof cuda_why, "%.200s: an incomplete backend table", path);
        return;
    }
    cuda_loaded = p;
}

/* The plugin, or NULL with the reason in why. */
static const drape_backend_plugin *cuda_plugin(char *why, size_t n)
{
    pthread_once(&cuda_once, cuda_load_once);
    if (!cuda_loaded && why && n) snprintf(why, n, "%s", cuda_why);
    return cuda_loaded;
}

int drape_backend_cuda_identity_read(drape_backend *be, const drape_identity *id, float *film, float *skin_w, float *g,
                                     float *c, float *J, float *F_cov, drape_error *err)
{
    char why[256];
    const drape_backend_plugin *p = cuda_plugin(why, sizeof why);
    if (!p) return drape_fail(err, DRAPE_ENOTSUP, "%s", why);
    be = backend_for(be, id->garment);
    if (be->ops->kind != DRAPE_BACKEND_CUDA)
        return drape_fail(err, DRAPE_EINVAL, "identity read: garment %d runs on the %s backend, not cuda", id->garment,
                          be->ops->name);
    return p->identity_read(be, id, film, skin_w, g, c, J, F_cov, err);
}

int drape_backend_cuda_launches(const drape_backend *be)
{
    char why[256];
    const drape_backend_plugin *p = cuda_plugin(why, sizeof why);
    be = backend_for((drape_backend *)be, 0);
    return p && be->ops->kind == DRAPE_BACKEND_CUDA ? p->launches(be) : -1;
}

/* opts: threads resolved */
static int create_one(drape_backend **out, const char *kind, const drape_model *m, const drape_backend_opts *opts,
                      drape_error *err)
{
    int is_auto = !strcmp(kind, "auto"), rc;
    const drape_backend_ops *ops = NULL;
    if (!strcmp(kind, "cpu")) {
        ops = &drape_backend_cpu;
    } else if (!strcmp(kind, "cuda") || is_auto) {
        /* the CUDA plugin and runtime are only touched here, when a device is asked for */
        char why[256];
        const drape_backend_plugin *p = cuda_plugin(why, sizeof why);
        if (p && p->probe(why, sizeof why) > 0) ops = p->ops;
        else if (is_auto) ops = &drape_backend_cpu;
        else if (!p)
            return drape_fail(err, DRAPE_ENOTSUP, "backend 'cuda': this build has no CUDA backend (%s)", why);
        else
            return drape_fail(err, DRAPE_ENOTSUP, "backend 'cuda': no usable CUDA device (%s)", why);
    } else {
        return drape_fail(err, DRAPE_EINVAL, "unknown backend '%s' (cpu, cuda, auto)", kind);
    }
    if ((rc = ops->create(out, m, opts, err))) return rc;
    (*out)->threads = opts->threads;
    return DRAPE_OK;
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
    int *part_of;                                 /* [part_cap] each part frame's index in the batch */
    int part_cap;
} nets_backend;

static int net_slot(const drape_model *m, int garment) { return m->own[garment] ? 1 + garment : 0; }

static void nets_destroy(drape_backend *be)
{
    nets_backend *nb = (nets_backend *)be;
    for (int i = 0; i <= DRAPE_MAX_GARMENTS; i++) drape_backend_free(nb->inner[i]);
    free(nb->part);
    free(nb->part_of);
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

static int nets_identity_refine(drape_backend *be, drape_identity *id, const drape_refine_view *r, drape_error *err)
{
    drape_backend *in = ((nets_backend *)be)->inner[net_slot(be->model, id->garment)];
    return in->ops->identity_refine ? in->ops->identity_refine(in, id, r, err) : DRAPE_OK;
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
        if (p) nb->part = p;
        int *q = p ? realloc(nb->part_of, (size_t)n * sizeof *q) : NULL;
        if (!q) return drape_fail(err, DRAPE_ENOMEM, "out of memory splitting a batch of %d frames by network", n);
        nb->part_of = q;
        nb->part_cap = n;
    }
    /* run writes each frame's out and its packing results: the parts are
     * copies, and those results go back to the batch's frames */
    for (int s = 0; s <= DRAPE_MAX_GARMENTS; s++) {
        if (!nb->inner[s]) continue;
        int k = 0;
        for (int i = 0; i < n; i++)
            if (net_slot(m, frames[i].id->garment) == s) {
                nb->part_of[k] = i;
                nb->part[k++] = frames[i];
            }
        int rc = k ? nb->inner[s]->ops->run(nb->inner[s], nb->part, k, err) : DRAPE_OK;
        if (rc) return rc;
        for (int j = 0; j < k; j++) {
            drape_frame *f = &frames[nb->part_of[j]];
            f->packed = nb->part[j].packed;
            memcpy(f->bbox, nb->part[j].bbox, sizeof f->bbox);
        }
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
    return be->ops->kind == DRAPE_BACKEND_NETS ? ((nets_backend *)be)->inner[net_slot(be->model, garment)] : be;
}

static int create_nets(drape_backend **out, const char *kind, const drape_model *m, const drape_backend_opts *opts,
                       drape_error *err)
{
    nets_backend *nb = calloc(1, sizeof *nb);
    if (!nb) return drape_fail(err, DRAPE_ENOMEM, "out of memory");
    nb->base.ops = &nb->ops;
    nb->base.model = m;
    nb->base.threads = opts->threads;
    nb->ops.kind = DRAPE_BACKEND_NETS;
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
    nb->ops.identity_refine = nets_identity_refine;
    *out = &nb->base;
    return DRAPE_OK;
}

int drape_backend_create(drape_backend **out, const char *kind, const drape_model *m, const drape_backend_opts *opts,
                         drape_error *err)
{
    drape_backend_opts o = {0};
    *out = NULL;
    if (opts) o = *opts;
    if (o.precision < 0 || o.precision >= DRAPE_PRECISION_COUNT)
        return drape_fail(err, DRAPE_EINVAL, "precision %d: 0 (fp32), 1 (tf32), 2 (bf16) or 3 (fp16)", o.precision);
    if (o.threads <= 0) o.threads = omp_get_num_procs();
    return m->n_own ? create_nets(out, kind, m, &o, err) : create_one(out, kind, m, &o, err);
}
