/* A file written whole or not at all. It is written beside its path
 * (PATH.tmp-PID) and renamed over it once every write succeeded, so a
 * failed write (a full disk, a file-size limit) leaves the path as it was:
 * the previous output, or the input itself when a tool writes over it. A
 * path that exists and is not a regular file (/dev/null, /dev/stdout, a
 * pipe) is written in place. */
#ifndef DRAPE_OUTFILE_H
#define DRAPE_OUTFILE_H

#include <stdio.h>

#include "status.h"

typedef struct {
    FILE *f;
    const char *path;
    char tmp[4096]; /* "" when written in place */
} drape_outfile;

/* mode: "wb" or "w". DRAPE_EIO (naming path) when it cannot be created. */
int drape_outfile_open(drape_outfile *o, const char *path, const char *mode, drape_error *err);
/* ok: whether every write succeeded. Closes, then renames over path, or
 * removes what was written: DRAPE_OK, or DRAPE_EIO naming path. */
int drape_outfile_close(drape_outfile *o, int ok, drape_error *err);

#endif
