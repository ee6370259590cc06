/* Test-only hooks of the backends: what the tests read that no program
 * needs. Not part of the backend interface (backend.h). */
#ifndef DRAPE_BACKEND_TEST_H
#define DRAPE_BACKEND_TEST_H

#include "backend.h"

/* Module B's cached outputs of a CUDA identity copied to host arrays (any
 * may be NULL), in the CPU identity's layouts. DRAPE_EINVAL when be does not
 * run id's garment on CUDA, DRAPE_ENOTSUP without the plugin. */
int drape_backend_cuda_identity_read(drape_backend *be, const drape_identity *id, float *film, float *skin_w, float *g,
                                     float *c, float *J, float *F_cov, drape_error *err);

#endif
