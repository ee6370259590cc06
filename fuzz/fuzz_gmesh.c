/* libFuzzer harness: the garment mesh reader of `drape garment add`
 * (runtime/garment_mesh.c: OBJ with UVs, or binary glTF) over a file in
 * memory. Checks that an accepted mesh has vertices and faces, finite
 * coordinates, faces that index its vertices, and, when it has UVs, finite
 * UVs that its UV faces index. */
#include <math.h>

#include "../runtime/garment_mesh.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
    drape_gmesh m;
    drape_error err = {0};
    if (drape_gmesh_parse(&m, data, len, "fuzz", &err)) {
        FUZZ_CHECK(err.msg[0] && !m.v && !m.faces && !m.uv && !m.uv_faces);
        return 0;
    }
    FUZZ_CHECK(m.V > 0 && m.F > 0 && m.v && m.faces);
    for (int i = 0; i < 3 * m.V; i++) FUZZ_CHECK(isfinite(m.v[i]));
    for (int i = 0; i < 3 * m.F; i++) FUZZ_CHECK(m.faces[i] >= 0 && m.faces[i] < m.V);
    FUZZ_CHECK(!m.Nuv == !m.uv_faces);
    for (int i = 0; i < 2 * m.Nuv; i++) FUZZ_CHECK(isfinite(m.uv[i]));
    for (int i = 0; m.uv_faces && i < 3 * m.F; i++) FUZZ_CHECK(m.uv_faces[i] >= 0 && m.uv_faces[i] < m.Nuv);
    drape_gmesh_free(&m);
    return 0;
}
