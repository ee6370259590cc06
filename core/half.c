#include "half.h"

#include "pack16.h" /* the conversion, shared with the CUDA packer */

#include <math.h>
#include <string.h>

float drape_f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h >> 15) << 31, exp = (h >> 10) & 31, man = h & 1023;
    float f;
    if (exp == 0) {
        f = ldexpf((float)man, -24); /* subnormal or zero */
        return sign ? -f : f;
    }
    uint32_t bits = exp == 31 ? sign | 0x7f800000u | (man << 13)
                              : sign | ((exp + 112) << 23) | (man << 13);
    memcpy(&f, &bits, 4);
    return f;
}

uint16_t drape_f32_to_f16(float f) { return hd_f32_to_f16(f); }
