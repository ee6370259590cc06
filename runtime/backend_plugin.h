/* The ABI between the program and a backend plugin. The CUDA backend is
 * one, libdrape_cuda.so (beside the program, or $DRAPE_CUDA_LIB), opened only
 * when a "cuda" or "auto" backend is asked for: cuBLAS and the CUDA runtime
 * are over half a gigabyte, and loading them cost every run of every tool
 * seconds (kernels/backends.c).
 *
 * One versioned entry point, in the way of ggml's backend registry. The
 * plugin exports only DRAPE_BACKEND_PLUGIN_INIT; the program
 * passes it the host services it may call (it links against nothing of the
 * program's) and gets back its table. Each side refuses the other when the
 * versions differ: the tables below, drape_backend_ops and the structs the
 * plugin reads (model.h, backend.h) are laid out as this version says.
 * Bump DRAPE_BACKEND_API_VERSION on any change to them. */
#ifndef DRAPE_BACKEND_PLUGIN_H
#define DRAPE_BACKEND_PLUGIN_H

#include <stdint.h>

#include "backend_impl.h"

#define DRAPE_BACKEND_API_VERSION 3 /* 2: drape_frame packs, identities count device bytes, launches; 3: the refine step in the run */
#define DRAPE_BACKEND_PLUGIN_INIT "drape_backend_plugin_init"

/* What the program does for the plugin. Messages come formatted: the
 * plugin formats, the program records (drape_fail) or logs them. */
typedef struct {
    int api_version; /* first, in every version */
    /* drape_fail (core/status.h): records code and msg in err, returns code */
    int (*fail)(drape_error *err, int code, const char *msg);
    /* the program's log (core/log.h), level DRAPE_LOG_* */
    void (*log)(int level, const char *msg);
    /* drape_body_shape (runtime/body.h) */
    int (*body_shape)(float *v_s, float *J, const drape_model *m, const float *betas);
    /* drape_mesh_normals (core/mesh.h) */
    void (*mesh_normals)(float *normals, const float *v, int V, const int32_t *faces, int F);
    /* cpu_conv_pack (kernels/cpu/ops.h): the conv weights in the taps layout */
    void (*conv_pack)(float *taps, float *wt, const float *w, int in, int out);
} drape_backend_services;

/* What the plugin offers. */
typedef struct {
    int api_version; /* first, in every version: the version the plugin was built for */
    const drape_backend_ops *ops;
    int (*probe)(char *why, size_t n); /* device count (0 on any error); why says what the runtime reported */
    /* module B's cached outputs of one of its identities copied to host
     * arrays (any may be NULL), in the CPU identity's layouts; for the tests */
    int (*identity_read)(drape_backend *be, const drape_identity *id, float *film, float *skin_w, float *g, float *c,
                         float *J, float *F_cov, drape_error *err);
    /* the kernel launches and copies of the last batch (the nodes of its
     * CUDA graph, or those launched when graphs are off); for the benchmarks */
    int (*launches)(const drape_backend *be);
} drape_backend_plugin;

/* The entry point. The plugin keeps the services only when their
 * api_version is its own; it returns its table either way, so that the
 * program can name both versions when it refuses. */
typedef const drape_backend_plugin *(*drape_backend_plugin_init_fn)(const drape_backend_services *host);

#endif
