/* Motion routes (docs/server.md, docs/motion.md):
 *   POST /v1/motions/convert   a BVH or AMASS npz body → SMPL poses (JSON)
 *   GET  /v1/motions           the .npy clips in --motions-dir
 *   GET  /v1/motions/{name}    one of them, in convert's shape
 * The conversion is runtime/motion.c, the same code as `drape motion
 * import`; a clip is the pose file `drape infer` reads ([T,75] float32). */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../runtime/motion.h"
#include "../runtime/npy.h"
#include "http.h"

#define MAX_CLIPS 1000

/* the body both answers share: the header fields, then pose [T][72] and
 * trans [T][3] */
static int write_motion(drape_buf *b, const float *poses, int T)
{
    int rc = drape_buf_printf(b, "\"pose\":[");
    for (int t = 0; t < T && !rc; t++) {
        const float *p = poses + 75 * t;
        rc |= drape_buf_printf(b, t ? ",[" : "[");
        for (int i = 0; i < 72 && !rc; i++) rc |= drape_buf_printf(b, i ? ",%.7g" : "%.7g", p[i]);
        rc |= drape_buf_printf(b, "]");
    }
    rc |= drape_buf_printf(b, "],\"trans\":[");
    for (int t = 0; t < T && !rc; t++) {
        const float *p = poses + 75 * t + 72;
        rc |= drape_buf_printf(b, "%s[%.7g,%.7g,%.7g]", t ? "," : "", p[0], p[1], p[2]);
    }
    return rc | drape_buf_printf(b, "]}");
}

static enum MHD_Result send_motion(draped *d, struct MHD_Connection *c, drape_buf *b, int rc)
{
    if (rc) {
        drape_buf_free(b);
        return draped_http_error_as(d, c, R_MOTIONS, 503, DRAPE_EC_INTERNAL, "out of memory");
    }
    return draped_http_buf(d, c, R_MOTIONS, 200, "application/json", b->p, b->len, MHD_RESPMEM_MUST_FREE);
}

/* ?key= as a number in [lo, hi]; 0 when absent (out untouched), −1 when bad */
static int query_number(struct MHD_Connection *c, const char *key, double lo, double hi, double *out)
{
    const char *v = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, key);
    if (!v) return 0;
    char *end;
    errno = 0;
    double x = strtod(v, &end);
    if (end == v || *end || errno || !isfinite(x) || x < lo || x > hi) return -1;
    *out = x;
    return 0;
}

enum MHD_Result draped_route_motion_convert(draped *d, struct MHD_Connection *c, const draped_req *rq)
{
    drape_motion_opts o = {.fps = d->model->cfg.fps};
    if (query_number(c, "fps", DRAPE_MOTION_MIN_FPS, DRAPE_MOTION_MAX_FPS, &o.fps))
        return draped_http_error(d, c, R_MOTIONS, DRAPE_EC_BAD_FIELD, "fps must be a number in [%g, %g]",
                                 DRAPE_MOTION_MIN_FPS, DRAPE_MOTION_MAX_FPS);
    if (query_number(c, "source_fps", DRAPE_MOTION_MIN_FPS, DRAPE_MOTION_MAX_FPS, &o.source_fps))
        return draped_http_error(d, c, R_MOTIONS, DRAPE_EC_BAD_FIELD, "source_fps must be a number in [%g, %g]",
                                 DRAPE_MOTION_MIN_FPS, DRAPE_MOTION_MAX_FPS);
    if (query_number(c, "scale", 0, 1e6, &o.scale))
        return draped_http_error(d, c, R_MOTIONS, DRAPE_EC_BAD_FIELD,
                                 "scale must be a number in [0, 1e6] (metres per file unit; 0: from the legs)");
    const char *sk = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "skeleton");
    if (sk) {
        o.skeleton = -1;
        for (int i = 0; drape_skeleton_names[i]; i++)
            if (!strcmp(sk, drape_skeleton_names[i])) o.skeleton = i;
        if (o.skeleton < 0)
            return draped_http_error(d, c, R_MOTIONS, DRAPE_EC_BAD_FIELD,
                                     "skeleton must be auto, cmu, poser, mixamo or smpl");
    }
    const char *hd = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "heading");
    if (hd && strcmp(hd, "keep") && strcmp(hd, "face"))
        return draped_http_error(d, c, R_MOTIONS, DRAPE_EC_BAD_FIELD, "heading must be keep or face");
    o.keep_heading = hd && !strcmp(hd, "keep");
    if (!rq->body.len)
        return draped_http_error(d, c, R_MOTIONS, DRAPE_EC_BAD_MOTION,
                                 "the body must be a BVH or npz file's bytes (curl --data-binary @FILE)");
    drape_motion m;
    drape_error err = {0};
    int rc = drape_motion_read(&m, rq->body.p, rq->body.len, &o, &err);
    if (rc == DRAPE_ENOMEM) return draped_http_error_as(d, c, R_MOTIONS, 503, DRAPE_EC_INTERNAL, "out of memory");
    if (rc) return draped_http_error(d, c, R_MOTIONS, DRAPE_EC_BAD_MOTION, "%s", err.msg);
    drape_buf b = {0};
    rc = drape_buf_printf(&b,
                          "{\"fps\":%g,\"frames\":%d,\"source_fps\":%g,\"source_frames\":%d,\"format\":\"%s\","
                          "\"skeleton\":\"%s\",\"units\":\"%s\",\"scale\":%.9g,\"leg_ratio\":%.9g,\"mapped\":%d,",
                          m.fps, m.frames, m.source_fps, m.source_frames, m.format, m.skeleton, m.units, m.scale,
                          m.leg_ratio, m.mapped);
    rc |= write_motion(&b, m.poses, m.frames);
    drape_motion_free(&m);
    return send_motion(d, c, &b, rc);
}

/* ---- the clips of --motions-dir ---- */

static int valid_name(const char *s, size_t n)
{
    if (n < 1 || n > 64) return 0;
    for (size_t i = 0; i < n; i++)
        if (!(s[i] == '_' || s[i] == '-' || (s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'z') ||
              (s[i] >= 'A' && s[i] <= 'Z')))
            return 0;
    return 1;
}

/* dir/name.npy as a pose file; 0, 1 when it is not there, −1 (msg) when
 * it is no clip */
static int read_clip(const draped *d, const char *name, drape_npy *a, char *msg, size_t cap)
{
    char path[700];
    snprintf(path, sizeof path, "%s/%s.npy", d->cfg.motions_dir, name);
    struct stat st;
    if (stat(path, &st) || !S_ISREG(st.st_mode)) return 1;
    drape_error e = {0};
    if (st.st_size > (off_t)DRAPE_MOTION_MAX_BYTES)
        return snprintf(msg, cap, "%.200s: over %u bytes", path, DRAPE_MOTION_MAX_BYTES), -1;
    if (drape_npy_read(a, path, &e)) return snprintf(msg, cap, "%.350s", e.msg), -1;
    if (a->ndim != 2 || a->shape[1] != 75 || a->shape[0] < 1 || a->shape[0] > DRAPE_MOTION_MAX_FRAMES) {
        drape_npy_free(a);
        return snprintf(msg, cap, "%.200s: not a pose file [T, 75]", path), -1;
    }
    if (drape_poses_check(a->data, a->shape[0], NULL, &e)) {
        drape_npy_free(a);
        return snprintf(msg, cap, "%.120s: %.250s", path, e.msg), -1;
    }
    return 0;
}

/* index.json: {"name": {"title": "...", "fps": 30}, ...}, optional; a clip
 * it does not name is titled by its name and plays at the model's rate */
static json_t *read_index(const draped *d)
{
    char path[700];
    snprintf(path, sizeof path, "%s/index.json", d->cfg.motions_dir);
    json_error_t je;
    json_t *j = json_load_file(path, 0, &je);
    if (j && !json_is_object(j)) {
        LOG_WARN("%s: not a JSON object, ignored", path);
        json_decref(j);
        j = NULL;
    }
    return j;
}

static void clip_meta(const draped *d, json_t *index, const char *name, const char **title, double *fps)
{
    json_t *e = index ? json_object_get(index, name) : NULL;
    json_t *t = json_object_get(e, "title"), *f = json_object_get(e, "fps");
    *title = json_is_string(t) ? json_string_value(t) : name;
    *fps = json_is_number(f) && json_number_value(f) >= DRAPE_MOTION_MIN_FPS &&
                   json_number_value(f) <= DRAPE_MOTION_MAX_FPS
               ? json_number_value(f)
               : d->model->cfg.fps;
}

static int by_name(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

enum MHD_Result draped_route_motions(draped *d, struct MHD_Connection *c, const draped_req *rq)
{
    (void)rq;
    json_t *list = json_array(), *index = read_index(d);
    char *names[MAX_CLIPS];
    int n = 0;
    DIR *dir = opendir(d->cfg.motions_dir);
    for (struct dirent *e; dir && (e = readdir(dir)) && n < MAX_CLIPS;) {
        size_t len = strlen(e->d_name);
        if (len > 4 && !strcmp(e->d_name + len - 4, ".npy") && valid_name(e->d_name, len - 4))
            if ((names[n] = strndup(e->d_name, len - 4))) n++;
    }
    if (dir) closedir(dir);
    qsort(names, (size_t)n, sizeof *names, by_name);
    for (int i = 0; i < n; i++) {
        drape_npy a;
        char msg[400];
        int rc = read_clip(d, names[i], &a, msg, sizeof msg);
        if (rc < 0) LOG_WARN("motions: %s (not listed)", msg);
        if (!rc) {
            const char *title;
            double fps;
            clip_meta(d, index, names[i], &title, &fps);
            /* a whole rate prints as one (30, not 30.0), as convert's does */
            json_t *jf = fps == floor(fps) ? json_integer((json_int_t)fps) : json_real(fps);
            json_array_append_new(list, json_pack("{s:s,s:I,s:o,s:s}", "name", names[i], "frames",
                                                  (json_int_t)a.shape[0], "fps", jf, "title", title));
            drape_npy_free(&a);
        }
        free(names[i]);
    }
    json_decref(index);
    return draped_http_json(d, c, R_MOTIONS, 200, json_pack("{s:o}", "motions", list));
}

enum MHD_Result draped_route_motion(draped *d, struct MHD_Connection *c, const draped_req *rq)
{
    const char *name = rq->url + strlen("/v1/motions/");
    if (!valid_name(name, strlen(name)))
        return draped_http_error(d, c, R_MOTIONS, DRAPE_EC_UNKNOWN_MOTION,
                                 "unknown motion: names are 1 to 64 of A-Z a-z 0-9 _ -");
    drape_npy a;
    char msg[400];
    int rc = read_clip(d, name, &a, msg, sizeof msg);
    if (rc > 0) return draped_http_error(d, c, R_MOTIONS, DRAPE_EC_UNKNOWN_MOTION, "unknown motion '%s'", name);
    if (rc) return draped_http_error(d, c, R_MOTIONS, DRAPE_EC_INTERNAL, "clip '%s': %s", name, msg);
    json_t *index = read_index(d);
    const char *title;
    double fps;
    clip_meta(d, index, name, &title, &fps);
    json_t *js = json_string(title); /* NULL for a title that is not UTF-8 */
    if (!js) js = json_string(name);
    char *jt = json_dumps(js, JSON_ENCODE_ANY);
    json_decref(js);
    json_decref(index);
    drape_buf b = {0};
    int T = (int)a.shape[0];
    rc = !jt || drape_buf_printf(&b,
                                 "{\"fps\":%g,\"frames\":%d,\"source_fps\":%g,\"source_frames\":%d,\"format\":\"npy\","
                                 "\"skeleton\":\"smpl\",\"units\":\"m\",\"name\":\"%s\",\"title\":%s,",
                                 fps, T, fps, T, name, jt);
    free(jt);
    if (!rc) rc = write_motion(&b, a.data, T);
    drape_npy_free(&a);
    return send_motion(d, c, &b, rc);
}
