/* Vertex formats on the wire (docs/design.md §6). Every format carries the frame's
 * axis-aligned bounding box (min xyz, max xyz of the positions).
 *   f32      3 little-endian floats per vertex
 *   f16      3 IEEE half floats per vertex (round to nearest even)
 *   q16      3 unorm16 per vertex in the bbox: q = round((x-min)/(max-min)*65535)
 *            (an axis with max == min packs as 0); error ≤ extent/131070 per axis
 *   meshopt  q16 padded to 4 uint16 per vertex (the 4th is 0; meshoptimizer
 *            needs a vertex size that is a multiple of 4), then
 *            meshopt_encodeVertexBuffer(vertex_size 8)
 * All little-endian. */
#ifndef DRAPE_PACK_H
#define DRAPE_PACK_H

#include <stddef.h>
#include <stdint.h>

#include "../core/half.h" /* the f16 format's conversions */

#include "buf.h"

typedef enum { DRAPE_FMT_F32 = 0, DRAPE_FMT_F16, DRAPE_FMT_Q16, DRAPE_FMT_MESHOPT, DRAPE_FMT_COUNT } drape_format;

/* "f32", "f16", "q16", "meshopt" → format, or -1. */
int drape_format_parse(const char *name);
const char *drape_format_name(int fmt);

/* Packs xyz [n,3] into out (appended); bbox[6] receives min xyz, max xyz. */
int drape_pack(drape_buf *out, float bbox[6], int fmt, const float *xyz, int n);

/* Decodes data (as drape_pack wrote it) into xyz [n,3]. DRAPE_EFORMAT when
 * len does not fit n vertices of the format or the meshopt stream is corrupt. */
int drape_unpack(float *xyz, int n, int fmt, const float bbox[6], const uint8_t *data, size_t len);

/* The worst absolute per-coordinate error of fmt for this bbox (0 for f32;
 * for f16 a bound from the largest magnitude). */
float drape_pack_error_bound(int fmt, const float bbox[6]);

#endif
