/* safetensors reader and writer.
 *
 * File: u64 LE header length N, N bytes of JSON header, then the data
 * section. Header: {"name": {"dtype", "shape", "data_offsets": [b, e]}, ...,
 * "__metadata__": {"key": "string", ...}}. Offsets are relative to the data
 * section; tensors must tile it exactly (contiguous, no holes, no overlap).
 *
 * The reader validates everything and never trusts the file: header length
 * against the file size and a hard limit, JSON, dtypes, shapes, offsets
 * (overflow-checked), and that float tensors hold only finite values. */
#ifndef DRAPE_SAFETENSORS_H
#define DRAPE_SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>

#include "../core/status.h"

#define DRAPE_ST_MAX_DIMS 8
#define DRAPE_ST_MAX_HEADER (64u << 20) /* hard limit on the JSON header */
#define DRAPE_ST_MAX_TENSORS 65536

typedef enum { DRAPE_DT_F32 = 0, DRAPE_DT_F16 = 1, DRAPE_DT_I32 = 2 } drape_dtype;

typedef struct {
    const char *name;
    drape_dtype dtype;
    int ndim;
    int64_t shape[DRAPE_ST_MAX_DIMS];
    int64_t numel;
    const void *data; /* may be unaligned: read with drape_st_to_f32/_i32 */
    size_t nbytes;
} drape_tensor;

typedef struct drape_st drape_st;

const char *drape_dtype_name(drape_dtype dt);
size_t drape_dtype_size(drape_dtype dt);

/* Reads and validates a whole file. */
int drape_st_open(drape_st **out, const char *path, drape_error *err);
/* Validates an in-memory file; takes ownership of buf (malloc'ed) on success
 * and on failure. */
int drape_st_parse(drape_st **out, void *buf, size_t len, drape_error *err);
void drape_st_free(drape_st *st);

int drape_st_count(const drape_st *st);
const drape_tensor *drape_st_at(const drape_st *st, int i);
const drape_tensor *drape_st_find(const drape_st *st, const char *name);
/* String value of a __metadata__ key, or NULL. */
const char *drape_st_meta(const drape_st *st, const char *key);
size_t drape_st_data_bytes(const drape_st *st);
/* The __metadata__ keys, 0 <= i < count (a bundle rewritten keeps them all). */
int drape_st_meta_count(const drape_st *st);
const char *drape_st_meta_key(const drape_st *st, int i);

/* Copies a tensor's values out as float32 (F32, F16) or int32 (I32). */
void drape_st_to_f32(float *out, const drape_tensor *t);
void drape_st_to_i32(int32_t *out, const drape_tensor *t);

/* Writer: collect tensors (data is copied), then write once. */
typedef struct drape_st_writer drape_st_writer;
drape_st_writer *drape_st_writer_new(void);
int drape_st_writer_add(drape_st_writer *w, const char *name, drape_dtype dt, int ndim,
                        const int64_t *shape, const void *data);
int drape_st_writer_meta(drape_st_writer *w, const char *key, const char *value);
/* Written beside path and renamed over it: path is the whole new file, or
 * as it was when the write fails. */
int drape_st_writer_save(drape_st_writer *w, const char *path, drape_error *err);
void drape_st_writer_free(drape_st_writer *w);

#endif
