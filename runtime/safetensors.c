#include "safetensors.h"
#include "../core/half.h"
#include "../core/outfile.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct drape_st {
    unsigned char *buf; /* whole file */
    size_t len;
    const unsigned char *data; /* data section */
    size_t data_len;
    int n;
    drape_tensor *t;
    json_t *meta; /* __metadata__ object or NULL */
};

const char *drape_dtype_name(drape_dtype dt)
{
    switch (dt) {
    case DRAPE_DT_F32: return "F32";
    case DRAPE_DT_F16: return "F16";
    case DRAPE_DT_I32: return "I32";
    }
    return "?";
}

size_t drape_dtype_size(drape_dtype dt) { return dt == DRAPE_DT_F16 ? 2 : 4; }

static int dtype_parse(const char *s, drape_dtype *dt)
{
    if (!strcmp(s, "F32")) *dt = DRAPE_DT_F32;
    else if (!strcmp(s, "F16")) *dt = DRAPE_DT_F16;
    else if (!strcmp(s, "I32")) *dt = DRAPE_DT_I32;
    else return -1;
    return 0;
}

static int tensor_finite(const drape_tensor *t, int64_t *bad)
{
    const unsigned char *p = t->data;
    for (int64_t i = 0; i < t->numel; i++) {
        if (t->dtype == DRAPE_DT_F32) {
            uint32_t x;
            memcpy(&x, p + 4 * i, 4);
            if (((x >> 23) & 255) == 255) { *bad = i; return 0; }
        } else if (t->dtype == DRAPE_DT_F16) {
            uint16_t h;
            memcpy(&h, p + 2 * i, 2);
            if (((h >> 10) & 31) == 31) { *bad = i; return 0; }
        }
    }
    return 1;
}

static int cmp_offset(const void *a, const void *b)
{
    const drape_tensor *x = a, *y = b;
    const unsigned char *px = x->data, *py = y->data;
    if (px != py) return px < py ? -1 : 1;
    /* empty tensors sit at the same offset as the next one: put them first */
    return x->nbytes < y->nbytes ? -1 : x->nbytes > y->nbytes;
}

int drape_st_parse(drape_st **out, void *buf_, size_t len, drape_error *err)
{
    unsigned char *buf = buf_;
    drape_st *st = NULL;
    json_t *root = NULL;
    int rc;
    *out = NULL;
    if (len < 8) {
        rc = drape_fail(err, DRAPE_EFORMAT, "file is %zu bytes, shorter than the 8-byte header length", len);
        goto fail;
    }
    uint64_t hlen = 0;
    for (int i = 7; i >= 0; i--) hlen = (hlen << 8) | buf[i];
    if (hlen < 2 || hlen > DRAPE_ST_MAX_HEADER) {
        rc = drape_fail(err, DRAPE_EFORMAT, "header length %llu is outside [2, %u]",
                        (unsigned long long)hlen, DRAPE_ST_MAX_HEADER);
        goto fail;
    }
    if (hlen > len - 8) {
        rc = drape_fail(err, DRAPE_EFORMAT, "header length %llu exceeds the file (%zu bytes): truncated?",
                        (unsigned long long)hlen, len);
        goto fail;
    }
    json_error_t jerr;
    root = json_loadb((const char *)buf + 8, (size_t)hlen, JSON_REJECT_DUPLICATES, &jerr);
    if (!root) {
        rc = drape_fail(err, DRAPE_EFORMAT, "header is not valid JSON: %s (at byte %d)", jerr.text, jerr.position);
        goto fail;
    }
    if (!json_is_object(root)) {
        rc = drape_fail(err, DRAPE_EFORMAT, "header is not a JSON object");
        goto fail;
    }
    st = calloc(1, sizeof *st);
    if (!st) { rc = drape_fail(err, DRAPE_ENOMEM, "out of memory"); goto fail; }
    st->buf = buf;
    st->len = len;
    st->data = buf + 8 + hlen;
    st->data_len = len - 8 - (size_t)hlen;
    size_t ntens = json_object_size(root);
    if (ntens > DRAPE_ST_MAX_TENSORS) {
        rc = drape_fail(err, DRAPE_EFORMAT, "header lists %zu entries, more than the limit %d", ntens, DRAPE_ST_MAX_TENSORS);
        goto fail;
    }
    st->t = calloc(ntens ? ntens : 1, sizeof *st->t);
    if (!st->t) { rc = drape_fail(err, DRAPE_ENOMEM, "out of memory"); goto fail; }

    const char *key;
    json_t *val;
    json_object_foreach(root, key, val) {
        if (!strcmp(key, "__metadata__")) {
            if (!json_is_object(val)) {
                rc = drape_fail(err, DRAPE_EFORMAT, "__metadata__ is not an object");
                goto fail;
            }
            const char *mk;
            json_t *mv;
            json_object_foreach(val, mk, mv) {
                if (!json_is_string(mv)) {
                    rc = drape_fail(err, DRAPE_EFORMAT, "__metadata__.%s is not a string", mk);
                    goto fail;
                }
            }
            st->meta = json_incref(val);
            continue;
        }
        drape_tensor *t = &st->t[st->n];
        if (!json_is_object(val)) {
            rc = drape_fail(err, DRAPE_EFORMAT, "tensor '%s': entry is not an object", key);
            goto fail;
        }
        json_t *jd = json_object_get(val, "dtype"), *js = json_object_get(val, "shape"),
               *jo = json_object_get(val, "data_offsets");
        if (!json_is_string(jd) || !json_is_array(js) || !json_is_array(jo) || json_array_size(jo) != 2) {
            rc = drape_fail(err, DRAPE_EFORMAT, "tensor '%s': needs string dtype, array shape and [begin, end] data_offsets", key);
            goto fail;
        }
        if (dtype_parse(json_string_value(jd), &t->dtype)) {
            rc = drape_fail(err, DRAPE_EDTYPE, "tensor '%s': unsupported dtype %s (F32, F16, I32 are)", key,
                            json_string_value(jd));
            goto fail;
        }
        size_t nd = json_array_size(js);
        if (nd > DRAPE_ST_MAX_DIMS) {
            rc = drape_fail(err, DRAPE_EFORMAT, "tensor '%s': %zu dimensions, at most %d", key, nd, DRAPE_ST_MAX_DIMS);
            goto fail;
        }
        t->ndim = (int)nd;
        uint64_t numel = 1;
        for (size_t d = 0; d < nd; d++) {
            json_t *jv = json_array_get(js, d);
            if (!json_is_integer(jv) || json_integer_value(jv) < 0) {
                rc = drape_fail(err, DRAPE_EFORMAT, "tensor '%s': shape[%zu] is not a non-negative integer", key, d);
                goto fail;
            }
            uint64_t dim = (uint64_t)json_integer_value(jv);
            if (dim && numel > UINT64_MAX / 8 / dim) {
                rc = drape_fail(err, DRAPE_EFORMAT, "tensor '%s': shape overflows", key);
                goto fail;
            }
            numel *= dim;
            t->shape[d] = (int64_t)dim;
        }
        t->numel = (int64_t)numel;
        json_t *jb = json_array_get(jo, 0), *je = json_array_get(jo, 1);
        if (!json_is_integer(jb) || !json_is_integer(je) || json_integer_value(jb) < 0 ||
            json_integer_value(je) < json_integer_value(jb)) {
            rc = drape_fail(err, DRAPE_EFORMAT, "tensor '%s': data_offsets must be integers 0 <= begin <= end", key);
            goto fail;
        }
        uint64_t b = (uint64_t)json_integer_value(jb), e = (uint64_t)json_integer_value(je);
        uint64_t want = numel * drape_dtype_size(t->dtype);
        if (e - b != want) {
            rc = drape_fail(err, DRAPE_EFORMAT, "tensor '%s': data_offsets span %llu bytes but shape and dtype need %llu",
                            key, (unsigned long long)(e - b), (unsigned long long)want);
            goto fail;
        }
        if (e > st->data_len) {
            rc = drape_fail(err, DRAPE_EFORMAT, "tensor '%s': data_offsets [%llu, %llu] run past the data section (%zu bytes): truncated?",
                            key, (unsigned long long)b, (unsigned long long)e, st->data_len);
            goto fail;
        }
        t->name = strdup(key);
        if (!t->name) { rc = drape_fail(err, DRAPE_ENOMEM, "out of memory"); goto fail; }
        t->data = st->data + b;
        t->nbytes = (size_t)want;
        st->n++;
    }

    /* The tensors must tile the data section: sort by offset and walk. */
    drape_tensor *sorted = malloc((st->n ? st->n : 1) * sizeof *sorted);
    if (!sorted) { rc = drape_fail(err, DRAPE_ENOMEM, "out of memory"); goto fail; }
    memcpy(sorted, st->t, st->n * sizeof *sorted);
    qsort(sorted, st->n, sizeof *sorted, cmp_offset);
    const unsigned char *pos = st->data;
    for (int i = 0; i < st->n; i++) {
        const unsigned char *b = sorted[i].data;
        if (b != pos) {
            rc = b < pos ? drape_fail(err, DRAPE_EFORMAT, "tensor '%s': data overlaps the previous tensor '%s'",
                                      sorted[i].name, sorted[i - 1].name)
                         : drape_fail(err, DRAPE_EFORMAT, "tensor '%s': hole of %td bytes before its data",
                                      sorted[i].name, b - pos);
            free(sorted);
            goto fail;
        }
        pos = b + sorted[i].nbytes;
    }
    free(sorted);
    if ((size_t)(pos - st->data) != st->data_len) {
        rc = drape_fail(err, DRAPE_EFORMAT, "data section has %zu bytes after the last tensor",
                        st->data_len - (size_t)(pos - st->data));
        goto fail;
    }
    for (int i = 0; i < st->n; i++) {
        int64_t bad;
        if (!tensor_finite(&st->t[i], &bad)) {
            rc = drape_fail(err, DRAPE_ENONFINITE, "tensor '%s': element %lld is NaN or Inf", st->t[i].name,
                            (long long)bad);
            goto fail;
        }
    }
    json_decref(root);
    *out = st;
    return DRAPE_OK;
fail:
    json_decref(root);
    if (st) drape_st_free(st);
    else free(buf);
    return rc;
}

int drape_st_open(drape_st **out, const char *path, drape_error *err)
{
    *out = NULL;
    FILE *f = fopen(path, "rb");
    if (!f) return drape_fail(err, DRAPE_EIO, "cannot open %s", path);
    if (fseek(f, 0, SEEK_END)) { fclose(f); return drape_fail(err, DRAPE_EIO, "cannot seek %s", path); }
    long sz = ftell(f);
    if (sz < 0 || fseek(f, 0, SEEK_SET)) { fclose(f); return drape_fail(err, DRAPE_EIO, "cannot size %s", path); }
    unsigned char *buf = malloc(sz ? (size_t)sz : 1);
    if (!buf) { fclose(f); return drape_fail(err, DRAPE_ENOMEM, "%s: cannot allocate %ld bytes", path, sz); }
    if (fread(buf, 1, (size_t)sz, f) != (size_t)sz) {
        fclose(f);
        free(buf);
        return drape_fail(err, DRAPE_EIO, "cannot read %s", path);
    }
    fclose(f);
    int rc = drape_st_parse(out, buf, (size_t)sz, err);
    if (rc) drape_error_prefix(err, path);
    return rc;
}

void drape_st_free(drape_st *st)
{
    if (!st) return;
    for (int i = 0; i < st->n; i++) free((char *)st->t[i].name);
    free(st->t);
    json_decref(st->meta);
    free(st->buf);
    free(st);
}

int drape_st_count(const drape_st *st) { return st->n; }
const drape_tensor *drape_st_at(const drape_st *st, int i) { return &st->t[i]; }
size_t drape_st_data_bytes(const drape_st *st) { return st->data_len; }

const drape_tensor *drape_st_find(const drape_st *st, const char *name)
{
    for (int i = 0; i < st->n; i++)
        if (!strcmp(st->t[i].name, name)) return &st->t[i];
    return NULL;
}

const char *drape_st_meta(const drape_st *st, const char *key)
{
    return st->meta ? json_string_value(json_object_get(st->meta, key)) : NULL;
}

int drape_st_meta_count(const drape_st *st) { return st->meta ? (int)json_object_size(st->meta) : 0; }

const char *drape_st_meta_key(const drape_st *st, int i)
{
    void *it = st->meta ? json_object_iter(st->meta) : NULL;
    for (; it && i > 0; i--) it = json_object_iter_next(st->meta, it);
    return it ? json_object_iter_key(it) : NULL;
}

void drape_st_to_f32(float *out, const drape_tensor *t)
{
    if (t->dtype == DRAPE_DT_F32) {
        memcpy(out, t->data, t->nbytes);
    } else if (t->dtype == DRAPE_DT_F16) {
        const unsigned char *p = t->data;
        for (int64_t i = 0; i < t->numel; i++) {
            uint16_t h;
            memcpy(&h, p + 2 * i, 2);
            out[i] = drape_f16_to_f32(h);
        }
    } else {
        const unsigned char *p = t->data;
        for (int64_t i = 0; i < t->numel; i++) {
            int32_t v;
            memcpy(&v, p + 4 * i, 4);
            out[i] = (float)v;
        }
    }
}

void drape_st_to_i32(int32_t *out, const drape_tensor *t) { memcpy(out, t->data, t->nbytes); }

/* ---- writer ---- */

typedef struct {
    char *name;
    drape_dtype dt;
    int ndim;
    int64_t shape[DRAPE_ST_MAX_DIMS];
    void *data;
    size_t nbytes;
} wtensor;

struct drape_st_writer {
    wtensor *t;
    int n, cap;
    json_t *meta;
};

drape_st_writer *drape_st_writer_new(void)
{
    drape_st_writer *w = calloc(1, sizeof *w);
    if (w && !(w->meta = json_object())) { free(w); return NULL; }
    return w;
}

int drape_st_writer_add(drape_st_writer *w, const char *name, drape_dtype dt, int ndim,
                        const int64_t *shape, const void *data)
{
    if (ndim < 0 || ndim > DRAPE_ST_MAX_DIMS) return DRAPE_EINVAL;
    if (w->n == w->cap) {
        int cap = w->cap ? 2 * w->cap : 64;
        wtensor *nt = realloc(w->t, cap * sizeof *nt);
        if (!nt) return DRAPE_ENOMEM;
        w->t = nt;
        w->cap = cap;
    }
    wtensor *t = &w->t[w->n];
    size_t numel = 1;
    for (int d = 0; d < ndim; d++) numel *= (size_t)shape[d];
    t->nbytes = numel * drape_dtype_size(dt);
    t->name = strdup(name);
    t->data = malloc(t->nbytes ? t->nbytes : 1);
    if (!t->name || !t->data) { free(t->name); free(t->data); return DRAPE_ENOMEM; }
    memcpy(t->data, data, t->nbytes);
    memcpy(t->shape, shape, ndim * sizeof *shape);
    t->dt = dt;
    t->ndim = ndim;
    w->n++;
    return DRAPE_OK;
}

int drape_st_writer_meta(drape_st_writer *w, const char *key, const char *value)
{
    return json_object_set_new(w->meta, key, json_string(value)) ? DRAPE_ENOMEM : DRAPE_OK;
}

int drape_st_writer_save(drape_st_writer *w, const char *path, drape_error *err)
{
    json_t *h = json_object();
    if (!h) return drape_fail(err, DRAPE_ENOMEM, "out of memory");
    if (json_object_size(w->meta)) json_object_set(h, "__metadata__", w->meta);
    size_t off = 0;
    for (int i = 0; i < w->n; i++) {
        wtensor *t = &w->t[i];
        json_t *shape = json_array();
        for (int d = 0; d < t->ndim; d++) json_array_append_new(shape, json_integer(t->shape[d]));
        json_object_set_new(h, t->name,
                            json_pack("{s:s, s:o, s:[I,I]}", "dtype", drape_dtype_name(t->dt), "shape", shape,
                                      "data_offsets", (json_int_t)off, (json_int_t)(off + t->nbytes)));
        off += t->nbytes;
    }
    char *js = json_dumps(h, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(h);
    if (!js) return drape_fail(err, DRAPE_ENOMEM, "out of memory");
    size_t jl = strlen(js), padded = (jl + 7) & ~(size_t)7;
    /* whole or as it was (the input itself, when a tool writes over its input) */
    drape_outfile o;
    int rc = drape_outfile_open(&o, path, "wb", err);
    if (rc) {
        free(js);
        return rc;
    }
    FILE *f = o.f;
    unsigned char hl[8];
    for (int i = 0; i < 8; i++) hl[i] = (unsigned char)((uint64_t)padded >> (8 * i));
    int ok = fwrite(hl, 1, 8, f) == 8 && fwrite(js, 1, jl, f) == jl;
    for (size_t i = jl; ok && i < padded; i++) ok = fputc(' ', f) != EOF;
    for (int i = 0; ok && i < w->n; i++) ok = fwrite(w->t[i].data, 1, w->t[i].nbytes, f) == w->t[i].nbytes;
    free(js);
    return drape_outfile_close(&o, ok, err);
}

void drape_st_writer_free(drape_st_writer *w)
{
    if (!w) return;
    for (int i = 0; i < w->n; i++) { free(w->t[i].name); free(w->t[i].data); }
    free(w->t);
    json_decref(w->meta);
    free(w);
}
