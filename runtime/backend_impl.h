/* For backend implementations only: the vtable and the common headers that
 * every backend's handles start with. */
#ifndef DRAPE_BACKEND_IMPL_H
#define DRAPE_BACKEND_IMPL_H

#include "backend.h"

typedef struct {
    const char *name;
    int (*create)(drape_backend **out, const drape_model *m, const drape_backend_opts *opts, drape_error *err);
    void (*destroy)(drape_backend *be);
    int (*identity_create)(drape_backend *be, drape_identity **out, int garment, const float *betas,
                           drape_error *err); /* betas: S values, validated */
    void (*identity_free)(drape_backend *be, drape_identity *id);
    int (*run)(drape_backend *be, drape_frame *frames, int n, drape_error *err);
    int (*healthy)(const drape_backend *be); /* NULL: always healthy */
} drape_backend_ops;

struct drape_backend {
    const drape_backend_ops *ops;
    const drape_model *model;
};

struct drape_identity {
    int garment;
    size_t bytes;
    struct drape_refine *refine; /* the refine step's (runtime/refine.h), made by drape_identity_create; NULL: off */
};

extern const drape_backend_ops drape_backend_cpu;
/* The CUDA backend is a plugin, libdrape_cuda.so (beside the program, or
 * $DRAPE_CUDA_LIB), opened only when a "cuda" or "auto" backend is asked
 * for: cuBLAS and the CUDA runtime are over half a gigabyte, and loading
 * them cost every run of every tool seconds. The plugin exports
 * drape_backend_cuda, drape_cuda_probe and drape_cuda_identity_read, and
 * uses the runtime's functions from the program (linked -rdynamic). */
typedef struct {
    const drape_backend_ops *ops;
    int (*probe)(char *why, size_t n); /* device count (0 on any error); why says what the runtime reported */
    int (*identity_read)(drape_backend *be, const drape_identity *id, float *film, float *skin_w, float *g, float *c,
                         float *J, float *F_cov, drape_error *err);
} drape_cuda_plugin;

/* The plugin, or NULL with the reason in why. */
const drape_cuda_plugin *drape_cuda_plugin_load(char *why, size_t n);

/* Module B's cached outputs of a CUDA identity copied to host arrays (any
 * may be NULL), in the CPU identity's layouts; for the tests. */
int drape_backend_cuda_identity_read(drape_backend *be, const drape_identity *id, float *film, float *skin_w, float *g,
                                     float *c, float *J, float *F_cov, drape_error *err);

#endif
