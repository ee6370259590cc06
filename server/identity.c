/* Resolving what a client names — an identity id, a garment with betas, or
 * both — to a pinned cache entry; shared by stream `open` and POST /v1/frames.
 * With both, the id is used when this replica knows it, and otherwise the
 * recipe re-creates it (after checking that it hashes to that id): a client
 * moved to another replica by failover keeps its id. */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "../proto/msg.h"
#include "app.h"

int draped_identity_resolve(draped *d, const char *id, const char *garment, const float *betas, int n_betas,
                            drape_idcache_entry **out, drape_errcode *code, drape_error *err)
{
    int has_id = id && *id, has_g = garment && *garment;
    *out = NULL;
    *code = DRAPE_EC_INTERNAL;
    int rc = DRAPE_ENOTFOUND;
    if (!has_id && !has_g) { /* "" names nothing: refused here, not looked up */
        *code = DRAPE_EC_BAD_FIELD;
        return drape_fail(err, DRAPE_EINVAL, "'identity' or 'garment' must name something (both are empty or absent)");
    }
    if (has_id) {
        rc = drape_idcache_acquire_key(d->cache, out, id, NULL, err);
        if (rc != DRAPE_ENOTFOUND || !has_g) {
            if (rc == DRAPE_ENOTFOUND) *code = DRAPE_EC_UNKNOWN_IDENTITY;
            else if (rc == DRAPE_ERANGE) *code = DRAPE_EC_LIMIT;
            return rc;
        }
    }
    int g = drape_model_garment(d->model, garment);
    if (g < 0) {
        *code = DRAPE_EC_UNKNOWN_GARMENT;
        return drape_fail(err, DRAPE_ENOTFOUND, "unknown garment '%s'", garment);
    }
    if (n_betas < 0) n_betas = 0;
    if ((rc = drape_model_check_betas(d->model, betas, n_betas, err))) {
        *code = DRAPE_EC_BAD_BETAS;
        return rc;
    }
    if (has_id) {
        char key[DRAPE_IDENTITY_KEY_LEN + 1];
        drape_idcache_key(d->cache, key, g, betas, n_betas);
        if (strcasecmp(key, id)) {
            *code = DRAPE_EC_BAD_FIELD;
            return drape_fail(err, DRAPE_EINVAL,
                              "identity '%s' is not garment '%s' with these betas (they make '%s' with this model)", id,
                              garment, key);
        }
    }
    rc = drape_idcache_acquire(d->cache, out, g, betas, n_betas, NULL, err);
    if (rc == DRAPE_ERANGE) *code = DRAPE_EC_LIMIT;
    return rc;
}

int draped_mode_refused(const draped *d, int g, int mode, char *msg, size_t cap)
{
    if (mode != DRAPE_MODE_NEURAL || !d->model->cfg.untrained[g]) return 0;
    snprintf(msg, cap, "garment '%s' has no trained network: it runs in modes lbs and physics, not neural",
             d->model->garments[g].name);
    return 1;
}
