/* The backend interface: where modules A and B run (the CPU backend, or the
 * CUDA one where it is built and a device is present).
 *
 * Callers see opaque handles and these functions only; a backend is a small
 * vtable (backend_impl.h). A backend instance is driven by one thread at a
 * time (the batcher owns it); identities are read-only once created and may
 * be shared by any number of frames in a batch. */
#ifndef DRAPE_BACKEND_H
#define DRAPE_BACKEND_H

#include <stddef.h>

#include "model.h"
#include "../core/status.h"

typedef struct drape_backend drape_backend;
typedef struct drape_identity drape_identity;

typedef struct {
    int threads;   /* the most threads of the backend's host work (the CPU
                      backend's math, the refine step); 0 = one per core.
                      The CPU backend uses as many of them as cores are
                      free (docs/design.md §1.2) */
    int precision; /* GEMMs of the CUDA backend: 0 FP32 (reference), 1 TF32,
                      2 BF16 (tensor cores, FP32 accumulation); the CPU
                      backend is always FP32 */
} drape_backend_opts;

/* One frame of one avatar: docs/design.md §2.4's inputs and its output. */
typedef struct {
    const drape_identity *id;
    /* [72] and [3] each: the frames of the model's history (cfg.hist,
     * oldest first, t last; docs/design.md §2.4's t−2, t−1, t by default); a frame
     * before the first of a sequence is the first (drape_history_index) */
    const float *pose[DRAPE_MAX_HISTORY];
    const float *trans[DRAPE_MAX_HISTORY];
    int lbs_only;          /* plain skinning baseline (docs/design.md §2.4, last paragraph) */
    float *out;            /* [V,3] world positions, written by run */
} drape_frame;

/* The frame `offset` back from frame t of a sequence that starts at frame 0:
 * before the start it is the first frame (as train/reference.frame_windows). */
static inline long long drape_history_index(long long t, int offset) { return t >= offset ? t - offset : 0; }

/* kind: "cpu", "cuda" or "auto" (cuda when built and a device is present).
 * "cuda" without a device (or in a build without nvcc) is DRAPE_ENOTSUP. */
int drape_backend_create(drape_backend **out, const char *kind, const drape_model *m, const drape_backend_opts *opts,
                         drape_error *err);
void drape_backend_free(drape_backend *be);
const char *drape_backend_name(const drape_backend *be);
const drape_model *drape_backend_model(const drape_backend *be);
/* false once a device error has made the backend unusable (it then refuses
 * work with DRAPE_EBACKEND; recreate it); always true for the CPU */
int drape_backend_healthy(const drape_backend *be);

/* Module B for (garment, betas): validates betas (count, finite, range). */
int drape_identity_create(drape_backend *be, drape_identity **out, int garment, const float *betas, int n_betas,
                          drape_error *err);
void drape_identity_free(drape_backend *be, drape_identity *id);
int drape_identity_garment(const drape_identity *id);
size_t drape_identity_bytes(const drape_identity *id);

/* Module A for n frames of any identities (and garments) in one call. */
int drape_backend_run(drape_backend *be, drape_frame *frames, int n, drape_error *err);

#endif
