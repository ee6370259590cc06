/* The 16-bit vertex formats of the wire (docs/protocol.md §3), one copy of
 * their per-element math for both compilers: the host packer
 * (drape_pack16, proto/pack.c's f16 and q16) and the CUDA backend, which
 * packs frames on the device so that only packed bytes cross PCIe. The
 * device result is byte-identical to the host's: integer bit manipulation
 * for f16, the same double arithmetic (no FMA possible) and round-to-nearest
 * even for q16, and a bounding box chosen with the host loop's tie rule. */
#ifndef DRAPE_PACK16_H
#define DRAPE_PACK16_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#ifndef DRAPE_HD
#ifdef __CUDACC__
#define DRAPE_HD __host__ __device__
#else
#define DRAPE_HD
#endif
#endif

/* What a frame may ask its backend to pack it as (drape_frame.pack); the
 * wire's f16 and q16 (proto/pack.h maps its formats to these). */
enum { DRAPE_PACK_NONE = 0, DRAPE_PACK_F16 = 1, DRAPE_PACK_Q16 = 2 };

/* IEEE half bits of f, round to nearest even; overflow to infinity, NaN stays NaN */
static inline DRAPE_HD uint16_t hd_f32_to_f16(float f)
{
    uint32_t x;
    memcpy(&x, &f, 4);
    uint16_t sign = (uint16_t)((x >> 16) & 0x8000);
    uint32_t exp = (x >> 23) & 255, man = x & 0x7fffff;
    if (exp == 255) return (uint16_t)(sign | 0x7c00 | (man ? 0x200 : 0));
    int e = (int)exp - 127 + 15;
    if (e >= 31) return (uint16_t)(sign | 0x7c00);
    if (e <= 0) {
        if (e < -10) return sign;
        man |= 0x800000;
        uint32_t shift = (uint32_t)(14 - e);
        uint32_t half = man >> shift, rem = man & ((1u << shift) - 1), mid = 1u << (shift - 1);
        if (rem > mid || (rem == mid && (half & 1))) half++;
        return (uint16_t)(sign | half);
    }
    uint32_t half = ((uint32_t)e << 10) | (man >> 13), rem = man & 0x1fff;
    if (rem > 0x1000 || (rem == 0x1000 && (half & 1))) half++; /* may carry into exp: fine */
    return (uint16_t)(sign | half);
}

/* q16 of x in [lo, hi]: round((x − lo)/(hi − lo)·65535), clamped; 0 when hi ≤ lo */
static inline DRAPE_HD uint16_t hd_quantize16(float x, float lo, float hi)
{
    if (!(hi > lo)) return 0;
    double t = ((double)x - lo) / ((double)hi - lo) * 65535.0;
    if (t <= 0) return 0;
    if (t >= 65535) return 65535;
    return (uint16_t)lrint(t);
}

/* The box the host loop finds (proto/pack.c): the first vertex's value, then
 * each later one that is strictly smaller (larger). Among equal values (+0
 * and −0) the lowest index wins. A parallel reduction keeps that by carrying
 * the index: this picks between candidates (v, i) and (v2, i2); an index < 0
 * is no candidate. */
static inline DRAPE_HD void hd_bbox_pick(float *v, int *i, float v2, int i2, int is_max)
{
    if (i2 < 0) return;
    if (*i < 0 || (is_max ? v2 > *v : v2 < *v) || (v2 == *v && i2 < *i)) {
        *v = v2;
        *i = i2;
    }
}

/* bbox [6] (min xyz, max xyz) of xyz [n,3] by the rule above; all 0 when
 * n is 0. DRAPE_ENONFINITE when a coordinate is NaN or infinite. Every
 * host packer (drape_pack16, proto/pack.c's drape_pack) starts here. */
int drape_pack_bbox(float bbox[6], const float *xyz, int n);

/* The host packer: bbox [6] (min xyz, max xyz) of xyz [n,3], then its 6n
 * little-endian bytes in fmt (DRAPE_PACK_F16 or _Q16) into dst. dst may be
 * xyz itself (the bytes of vertex i are written after it is read, and before
 * any later vertex's floats). DRAPE_ENONFINITE (nothing written) when a
 * coordinate is NaN or infinite; core/pack16.c. */
int drape_pack16(uint8_t *dst, float bbox[6], int fmt, const float *xyz, int n);

#endif
