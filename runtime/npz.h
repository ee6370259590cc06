/* Arrays of an .npz held in memory: a zip of .npy files, as numpy's savez
 * (stored entries) and savez_compressed (deflate) write them, zip64 fields
 * included. Only what those write is read: no encryption, no multi-disk
 * archives, methods 0 and 8. The motion importer reads AMASS files with it
 * (docs/motion.md), the body importer SMPL's (docs/body.md). */
#ifndef DRAPE_NPZ_H
#define DRAPE_NPZ_H

#include <stddef.h>
#include <stdint.h>

#include "npy.h"

/* The array stored as `name` (e.g. "poses.npy") in the zip zip [len],
 * inflated (zlib) and CRC-checked, read as float32 (float64 converted):
 * DRAPE_OK, DRAPE_ENOTFOUND when the archive has no such entry, else
 * DRAPE_EFORMAT (or DRAPE_EDTYPE, DRAPE_ERANGE, DRAPE_ENOMEM) with a
 * message. An entry whose inflated size passes max_bytes is refused. */
int drape_npz_array(drape_npy *out, const uint8_t *zip, size_t len, const char *name, size_t max_bytes,
                    drape_error *err);

/* The same, integer arrays too (drape_npy_fread_num: out->kind says which). */
int drape_npz_array_num(drape_npy *out, const uint8_t *zip, size_t len, const char *name, size_t max_bytes,
                        drape_error *err);
/* Whether the archive lists an entry `name` (nothing is inflated). */
int drape_npz_has(const uint8_t *zip, size_t len, const char *name);

#endif
