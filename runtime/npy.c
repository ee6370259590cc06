#include "npy.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/outfile.h"

#define NPY_MAX_HEADER 65536
#define NPY_MAX_BYTES ((int64_t)1 << 34)
#define NPY_PIPE_CHUNK ((int64_t)1 << 14) /* floats: a pipe's first buffer */

/* Finds `'key':` in the header dict and returns the text after it. */
static const char *dict_value(const char *h, const char *key)
{
    char pat[32];
    snprintf(pat, sizeof pat, "'%s'", key);
    const char *p = strstr(h, pat);
    if (!p) return NULL;
    p += strlen(pat);
    while (*p == ' ') p++;
    if (*p != ':') return NULL;
    p++;
    while (*p == ' ') p++;
    return p;
}

/* What a reader accepts besides float32: float64 ('<f8', AMASS's arrays),
 * and little-endian integers (SMPL's faces and kintree_table), all converted
 * to float32. */
enum { NPY_F64 = 1, NPY_INT = 2 };

typedef struct { const char *descr; size_t size; char kind; } npy_dtype;
static const npy_dtype npy_dtypes[] = {
    {"'<f4'", 4, 'f'}, {"'<f8'", 8, 'f'}, {"'<i4'", 4, 'i'}, {"'<i8'", 8, 'i'},
    {"'<u4'", 4, 'u'}, {"'<u8'", 8, 'u'}, {"'|u1'", 1, 'u'}, {"'<i2'", 2, 'i'}, {"'<u2'", 2, 'u'},
};

/* one element of dtype t at p as a float (integers past 2^24 round) */
static float npy_elem(const unsigned char *p, const npy_dtype *t)
{
    if (t->kind == 'f') {
        if (t->size == 4) { float v; memcpy(&v, p, 4); return v; }
        double v;
        memcpy(&v, p, 8);
        return (float)v;
    }
    uint64_t u = 0;
    for (size_t i = 0; i < t->size; i++) u |= (uint64_t)p[i] << (8 * i);
    if (t->kind == 'u') return (float)u;
    if (t->size < 8 && (u >> (8 * t->size - 1)) & 1) u |= ~(uint64_t)0 << (8 * t->size); /* sign-extend */
    return (float)(int64_t)u;
}

static int npy_fread(drape_npy *out, FILE *f, const char *path, int accept, drape_error *err)
{
    memset(out, 0, sizeof *out);
    unsigned char pre[10];
    char *h = NULL;
    int rc;
    if (fread(pre, 1, 8, f) != 8 || memcmp(pre, "\x93NUMPY", 6)) {
        rc = drape_fail(err, DRAPE_EFORMAT, "%s: not a .npy file (bad magic)", path);
        goto out;
    }
    uint32_t hlen;
    if (pre[6] == 1) {
        if (fread(pre + 8, 1, 2, f) != 2) { rc = drape_fail(err, DRAPE_EFORMAT, "%s: truncated header", path); goto out; }
        hlen = pre[8] | (uint32_t)pre[9] << 8;
    } else if (pre[6] == 2 || pre[6] == 3) {
        unsigned char b[4];
        if (fread(b, 1, 4, f) != 4) { rc = drape_fail(err, DRAPE_EFORMAT, "%s: truncated header", path); goto out; }
        hlen = b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
    } else {
        rc = drape_fail(err, DRAPE_EFORMAT, "%s: unsupported .npy version %d", path, pre[6]);
        goto out;
    }
    if (hlen > NPY_MAX_HEADER) { rc = drape_fail(err, DRAPE_EFORMAT, "%s: header too long", path); goto out; }
    h = calloc(hlen + 1, 1);
    if (!h) { rc = drape_fail(err, DRAPE_ENOMEM, "out of memory"); goto out; }
    if (fread(h, 1, hlen, f) != hlen) { rc = drape_fail(err, DRAPE_EFORMAT, "%s: truncated header", path); goto out; }
    const char *d = dict_value(h, "descr"), *fo = dict_value(h, "fortran_order"), *s = dict_value(h, "shape");
    if (!d || !fo || !s) { rc = drape_fail(err, DRAPE_EFORMAT, "%s: header lacks descr, fortran_order or shape", path); goto out; }
    const npy_dtype *dt = NULL;
    for (size_t i = 0; i < sizeof npy_dtypes / sizeof *npy_dtypes; i++) {
        const npy_dtype *t = &npy_dtypes[i];
        if (strncmp(d, t->descr, 5)) continue;
        if (i == 0 || (t->kind == 'f' && (accept & NPY_F64)) || (t->kind != 'f' && (accept & NPY_INT))) dt = t;
    }
    if (!dt) {
        char got[16] = {0};
        for (int i = 0; i < 15 && d[i] && d[i] != ','; i++) got[i] = d[i];
        rc = drape_fail(err, DRAPE_EDTYPE, "%s: dtype %s, expected %s", path, got,
                        accept & NPY_INT ? "float32, float64 or a little-endian integer"
                        : accept & NPY_F64 ? "float32 or float64 ('<f4', '<f8')" : "float32 ('<f4')");
        goto out;
    }
    size_t esize = dt->size;
    out->kind = dt->kind;
    if (strncmp(fo, "False", 5)) { rc = drape_fail(err, DRAPE_EFORMAT, "%s: Fortran order is not supported", path); goto out; }
    if (*s != '(') { rc = drape_fail(err, DRAPE_EFORMAT, "%s: bad shape", path); goto out; }
    s++;
    out->numel = 1;
    for (;;) {
        while (*s == ' ' || *s == ',') s++;
        if (*s == ')') break;
        char *end;
        long long v = strtoll(s, &end, 10);
        if (end == s || v < 0 || out->ndim == DRAPE_NPY_MAX_DIMS || v > NPY_MAX_BYTES) {
            rc = drape_fail(err, DRAPE_EFORMAT, "%s: bad shape (at most %d dims)", path, DRAPE_NPY_MAX_DIMS);
            goto out;
        }
        out->shape[out->ndim++] = v;
        /* checked before the product, which would overflow for (2^32, 2^32) */
        if (v && out->numel > NPY_MAX_BYTES / 4 / v) { rc = drape_fail(err, DRAPE_ERANGE, "%s: array too large", path); goto out; }
        out->numel *= v;
        if (out->numel * 4 > NPY_MAX_BYTES) { rc = drape_fail(err, DRAPE_ERANGE, "%s: array too large", path); goto out; }
        s = end;
    }
    /* the data must be there before its size is allocated: a 130-byte file
     * claiming (2^32,) made this ask for 16 GB (fuzz/fuzz_npy.c). A stream
     * that cannot seek (a pipe, `drape infer --poses -`) has no size to
     * check, so its buffer grows with what arrives instead (below). */
    long here = ftell(f), end = -1;
    if (here >= 0 && !fseek(f, 0, SEEK_END)) {
        end = ftell(f);
        if (fseek(f, here, SEEK_SET)) { rc = drape_fail(err, DRAPE_EIO, "%s: cannot seek", path); goto out; }
    }
    int seekable = end >= here && here >= 0;
    if (seekable && (uint64_t)(end - here) < (uint64_t)out->numel * esize) {
        rc = drape_fail(err, DRAPE_EFORMAT, "%s: truncated data (%lld floats expected)", path, (long long)out->numel);
        goto out;
    }
    /* unseekable: start at 64 KB and double up to the claimed size, so a
     * short stream costs at most twice what it sent */
    int64_t cap = seekable || out->numel < NPY_PIPE_CHUNK ? out->numel : NPY_PIPE_CHUNK, got = 0;
    out->data = malloc((size_t)(cap ? cap : 1) * sizeof(float));
    if (!out->data) { rc = drape_fail(err, DRAPE_ENOMEM, "out of memory"); goto out; }
    while (got < out->numel) {
        if (got == cap) {
            cap = cap > out->numel / 2 ? out->numel : cap * 2;
            float *grown = realloc(out->data, (size_t)cap * sizeof(float));
            if (!grown) { rc = drape_fail(err, DRAPE_ENOMEM, "out of memory"); goto out; }
            out->data = grown;
        }
        size_t want = (size_t)(cap - got), n;
        if (esize == 4 && dt->kind == 'f') {
            n = fread(out->data + got, sizeof(float), want, f);
        } else {
            unsigned char v[8];
            for (n = 0; n < want && fread(v, esize, 1, f) == 1; n++) out->data[got + (int64_t)n] = npy_elem(v, dt);
        }
        got += (int64_t)n;
        if (n < want) {
            rc = drape_fail(err, DRAPE_EFORMAT, "%s: truncated data (%lld floats expected)", path, (long long)out->numel);
            goto out;
        }
    }
    rc = DRAPE_OK;
out:
    free(h);
    if (rc) drape_npy_free(out);
    return rc;
}

int drape_npy_fread(drape_npy *out, FILE *f, const char *path, drape_error *err)
{
    return npy_fread(out, f, path, 0, err);
}

int drape_npy_fread_f64(drape_npy *out, FILE *f, const char *path, drape_error *err)
{
    return npy_fread(out, f, path, NPY_F64, err);
}

int drape_npy_fread_num(drape_npy *out, FILE *f, const char *path, drape_error *err)
{
    return npy_fread(out, f, path, NPY_F64 | NPY_INT, err);
}

int drape_npy_read(drape_npy *out, const char *path, drape_error *err)
{
    memset(out, 0, sizeof *out);
    FILE *f = fopen(path, "rb");
    if (!f) return drape_fail(err, DRAPE_EIO, "cannot open %s", path);
    int rc = drape_npy_fread(out, f, path, err);
    fclose(f);
    return rc;
}

int drape_npy_write(const char *path, const float *data, int ndim, const int64_t *shape, drape_error *err)
{
    char dict[256];
    int n = snprintf(dict, sizeof dict, "{'descr': '<f4', 'fortran_order': False, 'shape': (");
    int64_t numel = 1;
    for (int i = 0; i < ndim; i++) {
        n += snprintf(dict + n, sizeof dict - n, ndim == 1 ? "%lld," : i ? ", %lld" : "%lld", (long long)shape[i]);
        numel *= shape[i];
    }
    n += snprintf(dict + n, sizeof dict - n, "), }");
    int total = 10 + n + 1, pad = (64 - total % 64) % 64; /* header aligned to 64 */
    drape_outfile o;
    int rc = drape_outfile_open(&o, path, "wb", err);
    if (rc) return rc;
    FILE *f = o.f;
    unsigned char pre[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0};
    uint16_t hl = (uint16_t)(n + pad + 1);
    pre[8] = hl & 255;
    pre[9] = hl >> 8;
    int ok = fwrite(pre, 1, 10, f) == 10 && fwrite(dict, 1, (size_t)n, f) == (size_t)n;
    for (int i = 0; ok && i < pad; i++) ok = fputc(' ', f) != EOF;
    ok = ok && fputc('\n', f) != EOF && fwrite(data, sizeof(float), (size_t)numel, f) == (size_t)numel;
    return drape_outfile_close(&o, ok, err);
}

void drape_npy_free(drape_npy *a)
{
    free(a->data);
    a->data = NULL;
}
