/* libFuzzer harness: the safetensors reader (runtime/safetensors.c) over a
 * whole file in memory. What it accepts is read the way the model loader
 * reads it: every tensor converted out, looked up by name, the metadata.
 * Checks that each tensor's bytes are its shape times its dtype and that a
 * float tensor holds only finite values. */
#include <math.h>
#include <string.h>

#include "../runtime/safetensors.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
    void *buf = malloc(len ? len : 1);
    if (!buf) return 0;
    memcpy(buf, data, len);
    drape_st *st;
    drape_error err = {0};
    if (drape_st_parse(&st, buf, len, &err)) { /* buf is taken either way */
        FUZZ_CHECK(err.msg[0]);
        return 0;
    }
    size_t total = 0;
    for (int i = 0; i < drape_st_count(st); i++) {
        const drape_tensor *t = drape_st_at(st, i);
        FUZZ_CHECK(t->ndim >= 0 && t->ndim <= DRAPE_ST_MAX_DIMS);
        int64_t numel = 1;
        for (int d = 0; d < t->ndim; d++) numel *= t->shape[d];
        FUZZ_CHECK(numel == t->numel && t->nbytes == (size_t)numel * drape_dtype_size(t->dtype));
        FUZZ_CHECK(drape_st_find(st, t->name) == t);
        total += t->nbytes;
        void *out = malloc((size_t)numel * 4 + 4);
        if (!out) continue;
        if (t->dtype == DRAPE_DT_I32) {
            drape_st_to_i32(out, t);
        } else {
            drape_st_to_f32(out, t);
            for (int64_t k = 0; k < numel; k++) FUZZ_CHECK(isfinite(((float *)out)[k]));
        }
        free(out);
    }
    FUZZ_CHECK(total == drape_st_data_bytes(st));
    const char *cfg = drape_st_meta(st, "drape.config");
    if (cfg) FUZZ_CHECK(strlen(cfg) < len);
    drape_st_free(st);
    return 0;
}
