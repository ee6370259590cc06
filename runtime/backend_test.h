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

/* The device work of the CUDA backend's last batch: its kernel launches and
 * copies (the nodes of the batch's CUDA graph). −1 when be is not CUDA's (a
 * model of several networks: its first network's backend) or ran nothing. */
int drape_backend_cuda_launches(const drape_backend *be);

#endif
