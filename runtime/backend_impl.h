/* For backend implementations only: the vtable and the common headers that
 * every backend's handles start with. */
#ifndef DRAPE_BACKEND_IMPL_H
#define DRAPE_BACKEND_IMPL_H

#include "backend.h"
#include "refine.h"

/* What a backend is, for the code that must treat one kind apart (a nets
 * backend's parts, the CUDA plugin's test reads); never found by comparing
 * function pointers. */
typedef enum { DRAPE_BACKEND_CPU = 1, DRAPE_BACKEND_CUDA = 2, DRAPE_BACKEND_NETS = 3 } drape_backend_kind;

typedef struct {
    const char *name;
    drape_backend_kind kind;
    int (*create)(drape_backend **out, const drape_model *m, const drape_backend_opts *opts,
                  drape_error *err); /* opts->threads resolved (> 0) */
    void (*destroy)(drape_backend *be);
    int (*identity_create)(drape_backend *be, drape_identity **out, int garment, const float *betas,
                           drape_error *err); /* betas: S values, validated */
    void (*identity_free)(drape_backend *be, drape_identity *id);
    int (*run)(drape_backend *be, drape_frame *frames, int n, drape_error *err);
    int (*healthy)(const drape_backend *be); /* NULL: always healthy */
    /* optional: take an identity's refine step (its tables in r) into the
     * backend's run; returns 0 and sets id->refine_in_run when it did, 0
     * with it unset when the host is to run it. NULL: the host runs it. */
    int (*identity_refine)(drape_backend *be, drape_identity *id, const drape_refine_view *r, drape_error *err);
} drape_backend_ops;

struct drape_backend {
    const drape_backend_ops *ops;
    const drape_model *model;
    /* the most threads of this backend's parallel regions (opts.threads,
     * or one per core): given per region, never set process-wide */
    int threads;
};

struct drape_identity {
    int garment;
    size_t bytes;
    size_t device_bytes; /* of bytes, those in device memory */
    struct drape_refine *refine; /* the refine step's (runtime/refine.h), made by drape_identity_create; NULL: off */
    int refine_in_run;           /* the backend's run refines its frames (ops->identity_refine), not the host */
};

extern const drape_backend_ops drape_backend_cpu;

#endif
