/* IEEE 754 half precision: F16 tensors in a bundle and the f16 wire format.
 * Round to nearest even; overflow goes to infinity, NaN stays NaN. */
#ifndef DRAPE_HALF_H
#define DRAPE_HALF_H

#include <stdint.h>

float drape_f16_to_f32(uint16_t h);
uint16_t drape_f32_to_f16(float f);

#endif
