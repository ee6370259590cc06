/* libFuzzer harness: the Wavefront OBJ reader (sim/obj.c) over a file in
 * memory. Checks that an accepted mesh has vertices and faces, finite
 * coordinates and faces that index its vertices. */
#include <math.h>

#include "../sim/obj.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
    FILE *f = fuzz_stream(data, len);
    if (!f) return 0;
    drape_obj m;
    drape_error err = {0};
    int rc = drape_obj_fread(&m, f, "fuzz.obj", &err);
    fclose(f);
    if (rc) {
        FUZZ_CHECK(err.msg[0] && !m.v && !m.faces);
        return 0;
    }
    FUZZ_CHECK(m.n > 0 && m.F > 0 && m.v && m.faces);
    for (int i = 0; i < 3 * m.n; i++) FUZZ_CHECK(isfinite(m.v[i]));
    for (int i = 0; i < 3 * m.F; i++) FUZZ_CHECK(m.faces[i] >= 0 && m.faces[i] < m.n);
    drape_obj_free(&m);
    return 0;
}
