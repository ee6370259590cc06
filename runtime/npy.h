/* .npy arrays (float32, C order) in and out: the pose and vertex files of
 * `drape infer`. The reader validates magic, version, header, dtype and that
 * the data is all there. */
#ifndef DRAPE_NPY_H
#define DRAPE_NPY_H

#include <stdint.h>
#include <stdio.h>

#include "../core/status.h"

#define DRAPE_NPY_MAX_DIMS 4

typedef struct {
    int ndim;
    int64_t shape[DRAPE_NPY_MAX_DIMS];
    int64_t numel;
    float *data;
    char kind; /* the file's: 'f' float, 'i' signed or 'u' unsigned integer */
} drape_npy;

int drape_npy_read(drape_npy *out, const char *path, drape_error *err);
/* The same from an open stream (fuzz/fuzz_npy.c reads from memory with
 * fmemopen); path only names it in messages. A stream that cannot seek (a
 * pipe) is read in doubling chunks, so a short one fails as truncated
 * having allocated about what it sent, not what its header claims. */
int drape_npy_fread(drape_npy *out, FILE *f, const char *path, drape_error *err);
/* The same, also taking float64 ('<f8') and converting it to float32 (a
 * value past float's range becomes ±Inf: callers check finiteness). */
int drape_npy_fread_f64(drape_npy *out, FILE *f, const char *path, drape_error *err);
/* The same, also taking little-endian integers (int16, int32, int64, uint8 to uint64),
 * converted to float32 (exact up to 2^24); kind says which it was. */
int drape_npy_fread_num(drape_npy *out, FILE *f, const char *path, drape_error *err);
int drape_npy_write(const char *path, const float *data, int ndim, const int64_t *shape, drape_error *err);
void drape_npy_free(drape_npy *a);

#endif
