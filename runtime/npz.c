#include "npz.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#define ZIP_MAX_ENTRIES 4096
#define DEFLATE_MAX_RATIO 1032 /* deflate cannot expand one byte into more */

static uint32_t rd16(const uint8_t *p) { return p[0] | (uint32_t)p[1] << 8; }
static uint32_t rd32(const uint8_t *p) { return rd16(p) | rd16(p + 2) << 16; }
static uint64_t rd64(const uint8_t *p) { return rd32(p) | (uint64_t)rd32(p + 4) << 32; }

typedef struct {
    uint64_t csize, usize, offset;
    uint32_t crc, method, flags;
} zip_entry;

/* The central directory's place from the end record (zip64's when the
 * classic fields are saturated). */
static int find_directory(const uint8_t *z, size_t len, uint64_t *cd_off, uint64_t *cd_size, uint64_t *n,
                          drape_error *err)
{
    if (len < 22) return drape_fail(err, DRAPE_EFORMAT, "npz: too short for a zip file");
    /* the end record is the last 22 bytes but a comment of up to 64 KiB */
    size_t e = len - 22, lo = e > 65535 ? e - 65535 : 0;
    while (rd32(z + e) != 0x06054b50)
        if (e-- == lo) return drape_fail(err, DRAPE_EFORMAT, "npz: no zip end record (truncated?)");
    *n = rd16(z + e + 10);
    *cd_size = rd32(z + e + 12);
    *cd_off = rd32(z + e + 16);
    if (*n == 0xFFFF || *cd_size == 0xFFFFFFFF || *cd_off == 0xFFFFFFFF) {
        if (e < 20 || rd32(z + e - 20) != 0x07064b50)
            return drape_fail(err, DRAPE_EFORMAT, "npz: zip64 end record locator missing");
        uint64_t at = rd64(z + e - 20 + 8);
        if (at > len || len - at < 56 || rd32(z + at) != 0x06064b50)
            return drape_fail(err, DRAPE_EFORMAT, "npz: bad zip64 end record");
        *n = rd64(z + at + 32);
        *cd_size = rd64(z + at + 40);
        *cd_off = rd64(z + at + 48);
    }
    if (*cd_off > len || *cd_size > len - *cd_off) return drape_fail(err, DRAPE_EFORMAT, "npz: directory out of the file");
    if (*n > ZIP_MAX_ENTRIES) return drape_fail(err, DRAPE_ERANGE, "npz: more than %d entries", ZIP_MAX_ENTRIES);
    return DRAPE_OK;
}

/* The zip64 extra field (id 1) holds, in this order, the sizes and offset
 * whose classic fields are 0xFFFFFFFF. */
static int zip64_extra(zip_entry *ze, const uint8_t *x, size_t xlen, drape_error *err)
{
    while (xlen >= 4) {
        uint32_t id = rd16(x), sz = rd16(x + 2);
        if (sz > xlen - 4) break;
        if (id == 1) {
            const uint8_t *p = x + 4, *end = p + sz;
            uint64_t *f[3] = {&ze->usize, &ze->csize, &ze->offset};
            for (int i = 0; i < 3; i++) {
                if (*f[i] != 0xFFFFFFFF) continue;
                if (end - p < 8) return drape_fail(err, DRAPE_EFORMAT, "npz: short zip64 field");
                *f[i] = rd64(p);
                p += 8;
            }
            return DRAPE_OK;
        }
        x += 4 + sz;
        xlen -= 4 + sz;
    }
    if (ze->usize == 0xFFFFFFFF || ze->csize == 0xFFFFFFFF || ze->offset == 0xFFFFFFFF)
        return drape_fail(err, DRAPE_EFORMAT, "npz: zip64 sizes missing");
    return DRAPE_OK;
}

static int find_entry(const uint8_t *z, size_t len, const char *name, zip_entry *ze, drape_error *err)
{
    uint64_t off = 0, size = 0, n = 0;
    int rc = find_directory(z, len, &off, &size, &n, err);
    if (rc) return rc;
    const uint8_t *p = z + off, *end = z + off + size;
    size_t nlen = strlen(name);
    for (uint64_t i = 0; i < n; i++) {
        if (end - p < 46 || rd32(p) != 0x02014b50) return drape_fail(err, DRAPE_EFORMAT, "npz: bad directory entry");
        size_t fl = rd16(p + 28), xl = rd16(p + 30), cl = rd16(p + 32);
        if ((size_t)(end - p - 46) < fl + xl + cl) return drape_fail(err, DRAPE_EFORMAT, "npz: bad directory entry");
        if (fl == nlen && !memcmp(p + 46, name, nlen)) {
            *ze = (zip_entry){.flags = rd16(p + 8), .method = rd16(p + 10), .crc = rd32(p + 16),
                              .csize = rd32(p + 20), .usize = rd32(p + 24), .offset = rd32(p + 42)};
            return zip64_extra(ze, p + 46 + fl, xl, err);
        }
        p += 46 + fl + xl + cl;
    }
    return DRAPE_ENOTFOUND;
}

int drape_npz_has(const uint8_t *zip, size_t len, const char *name)
{
    zip_entry ze;
    drape_error e = {0};
    return find_entry(zip, len, name, &ze, &e) == DRAPE_OK;
}

static int npz_array(drape_npy *out, const uint8_t *z, size_t len, const char *name, size_t max_bytes, int ints,
                     drape_error *err)
{
    memset(out, 0, sizeof *out);
    zip_entry ze;
    int rc = find_entry(z, len, name, &ze, err);
    if (rc == DRAPE_ENOTFOUND) return drape_fail(err, rc, "npz: no array '%s'", name);
    if (rc) return rc;
    if (ze.flags & 1) return drape_fail(err, DRAPE_EFORMAT, "npz: %s is encrypted", name);
    if (ze.method != 0 && ze.method != 8)
        return drape_fail(err, DRAPE_EFORMAT, "npz: %s: compression method %u (only stored and deflate)", name,
                          ze.method);
    if (ze.offset > len || len - ze.offset < 30 || rd32(z + ze.offset) != 0x04034b50)
        return drape_fail(err, DRAPE_EFORMAT, "npz: %s: bad local header", name);
    uint64_t data = ze.offset + 30 + rd16(z + ze.offset + 26) + rd16(z + ze.offset + 28);
    if (data > len || ze.csize > len - data) return drape_fail(err, DRAPE_EFORMAT, "npz: %s: truncated", name);
    if (ze.usize == 0) return drape_fail(err, DRAPE_EFORMAT, "npz: %s: empty", name);
    if (ze.usize > max_bytes || ze.usize > UINT32_MAX || ze.csize > UINT32_MAX)
        return drape_fail(err, DRAPE_ERANGE, "npz: %s: %llu bytes, over %zu", name, (unsigned long long)ze.usize,
                          max_bytes);
    /* sizes the compressed bytes cannot hold are refused before allocating */
    if (ze.method == 0 ? ze.usize != ze.csize : ze.usize / DEFLATE_MAX_RATIO > ze.csize)
        return drape_fail(err, DRAPE_EFORMAT, "npz: %s: sizes disagree", name);
    const uint8_t *src = z + data;
    uint8_t *buf = NULL;
    if (ze.method == 8) {
        buf = malloc(ze.usize);
        if (!buf) return drape_fail(err, DRAPE_ENOMEM, "out of memory");
        z_stream s = {0};
        if (inflateInit2(&s, -MAX_WBITS) != Z_OK) {
            free(buf);
            return drape_fail(err, DRAPE_ENOMEM, "npz: zlib: cannot start");
        }
        /* one call: all input, exactly usize bytes of room; a stream that
         * wants more or ends early disagrees with its directory */
        s.next_in = (Bytef *)src;
        s.avail_in = (uInt)ze.csize;
        s.next_out = buf;
        s.avail_out = (uInt)ze.usize;
        int zr = inflate(&s, Z_FINISH);
        uint64_t got = s.total_out;
        inflateEnd(&s);
        if (zr != Z_STREAM_END || got != ze.usize) {
            free(buf);
            return drape_fail(err, DRAPE_EFORMAT, "npz: %s: bad deflate data", name);
        }
        src = buf;
    }
    if (crc32(0L, src, (uInt)ze.usize) != ze.crc) {
        free(buf);
        return drape_fail(err, DRAPE_EFORMAT, "npz: %s: CRC mismatch", name);
    }
    FILE *f = fmemopen((void *)src, ze.usize, "rb");
    if (!f) {
        free(buf);
        return drape_fail(err, DRAPE_ENOMEM, "out of memory");
    }
    char path[80];
    snprintf(path, sizeof path, "npz:%.64s", name);
    rc = ints ? drape_npy_fread_num(out, f, path, err) : drape_npy_fread_f64(out, f, path, err);
    fclose(f);
    free(buf);
    return rc;
}

int drape_npz_array(drape_npy *out, const uint8_t *zip, size_t len, const char *name, size_t max_bytes,
                    drape_error *err)
{
    return npz_array(out, zip, len, name, max_bytes, 0, err);
}

int drape_npz_array_num(drape_npy *out, const uint8_t *zip, size_t len, const char *name, size_t max_bytes,
                        drape_error *err)
{
    return npz_array(out, zip, len, name, max_bytes, 1, err);
}
