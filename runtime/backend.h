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
#include "../core/pack16.h"
#include "../core/status.h"

typedef struct drape_backend drape_backend;
typedef struct drape_identity drape_identity;

/* The CUDA backend's arithmetic (docs/conventions.md, "CUDA backend"); the
 * CPU backend is always FP32. FP32 and TF32 run the UV conv as im2col +
 * cuBLAS on FP32 maps; BF16 and FP16 run it as the tensor-core implicit
 * GEMM on 16-bit maps (FP32 accumulation). The dense layers are cuBLAS with
 * FP32 storage, their inputs rounded to the precision's type. */
typedef enum {
    DRAPE_PRECISION_FP32 = 0, /* the reference */
    DRAPE_PRECISION_TF32 = 1,
    DRAPE_PRECISION_BF16 = 2,
    DRAPE_PRECISION_FP16 = 3,
    DRAPE_PRECISION_COUNT
} drape_precision;

/* "fp32", "tf32", "bf16", "fp16" → drape_precision, or −1 */
int drape_precision_parse(const char *name);
const char *drape_precision_name(int precision); /* "unknown" out of range */

typedef struct {
    int threads;   /* the most threads of the backend's host work (the CPU
                      backend's math, the refine step); 0 = one per core.
                      The CPU backend uses as many of them as cores are
                      free (docs/design.md §1.2) */
    int precision; /* drape_precision (CUDA only) */
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
    /* Packed output (docs/protocol.md §3): pack = DRAPE_PACK_F16 or
     * DRAPE_PACK_Q16 (core/pack16.h) asks run for the frame in that wire
     * format: out then holds its 6V bytes (from its start) instead of the
     * positions, bbox their box, and run sets packed = 1; packed = −1 when
     * the positions were not finite (out is then undefined). The CUDA
     * backend packs on the device (only those bytes cross PCIe), the others
     * after the refine step on the host, with the same bytes. */
    int pack;
    int packed;
    float bbox[6];
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
/* the part of those bytes in device memory (0 on the CPU backend) */
size_t drape_identity_device_bytes(const drape_identity *id);

/* Module A for n frames of any identities (and garments) in one call. */
int drape_backend_run(drape_backend *be, drape_frame *frames, int n, drape_error *err);

#endif
