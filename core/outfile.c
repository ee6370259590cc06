/* Files written whole or not at all (outfile.h). */
#include "outfile.h"

#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int drape_outfile_open(drape_outfile *o, const char *path, const char *mode, drape_error *err)
{
    o->path = path;
    o->tmp[0] = 0;
    struct stat st;
    int in_place = !stat(path, &st) && !S_ISREG(st.st_mode);
    if (!in_place && snprintf(o->tmp, sizeof o->tmp, "%s.tmp-%ld", path, (long)getpid()) >= (int)sizeof o->tmp)
        return drape_fail(err, DRAPE_EINVAL, "%s: path too long", path);
    o->f = fopen(in_place ? path : o->tmp, mode);
    if (!o->f) {
        o->tmp[0] = 0;
        return drape_fail(err, DRAPE_EIO, "cannot create %s", path);
    }
    return DRAPE_OK;
}

int drape_outfile_close(drape_outfile *o, int ok, drape_error *err)
{
    ok = !fclose(o->f) && ok;
    o->f = NULL;
    if (o->tmp[0] && (!ok || rename(o->tmp, o->path))) {
        remove(o->tmp);
        ok = 0;
    }
    return ok ? DRAPE_OK : drape_fail(err, DRAPE_EIO, "cannot write %s", o->path);
}
