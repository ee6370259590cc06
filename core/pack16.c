/* The host packer of the 16-bit wire formats (pack16.h). */
#include "pack16.h"

#include "status.h"

int drape_pack_bbox(float bbox[6], const float *xyz, int n)
{
    for (int k = 0; k < 6; k++) bbox[k] = 0;
    for (int i = 0; i < n; i++)
        for (int k = 0; k < 3; k++) {
            float x = xyz[3 * (size_t)i + k];
            if (!isfinite(x)) return DRAPE_ENONFINITE;
            if (i == 0 || x < bbox[k]) bbox[k] = x;
            if (i == 0 || x > bbox[3 + k]) bbox[3 + k] = x;
        }
    return 0;
}

int drape_pack16(uint8_t *dst, float bbox[6], int fmt, const float *xyz, int n)
{
    if (n < 0 || (fmt != DRAPE_PACK_F16 && fmt != DRAPE_PACK_Q16) || (n && (!xyz || !dst))) return DRAPE_EINVAL;
    int rc = drape_pack_bbox(bbox, xyz, n);
    if (rc) return rc;
    /* ascending: element e's two bytes (at 2e) land on floats already read */
    for (size_t e = 0; e < 3 * (size_t)n; e++) {
        float x = xyz[e];
        int k = (int)(e % 3);
        uint16_t v = fmt == DRAPE_PACK_F16 ? hd_f32_to_f16(x) : hd_quantize16(x, bbox[k], bbox[3 + k]);
        dst[2 * e] = (uint8_t)v;
        dst[2 * e + 1] = (uint8_t)(v >> 8);
    }
    return DRAPE_OK;
}
