/* The bodies of POST /v1/identities and /v1/frames (parse.h). */
#include "parse.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../proto/msg.h"
#include "../proto/pack.h"

json_t *draped_parse_body(const uint8_t *p, size_t len, json_error_t *je)
{
    return json_loadb((const char *)p, len, JSON_REJECT_DUPLICATES, je);
}

int draped_parse_recipe(const drape_model *m, json_t *o, int *garment, float *betas, int *nb, char *msg, size_t cap,
                        drape_errcode *code)
{
    json_t *g = json_object_get(o, "garment"), *b = json_object_get(o, "betas");
    *code = DRAPE_EC_BAD_FIELD;
    if (!json_is_string(g)) return snprintf(msg, cap, "'garment' must be a string"), -1;
    *garment = drape_model_garment(m, json_string_value(g));
    if (*garment < 0) {
        *code = DRAPE_EC_UNKNOWN_GARMENT;
        return snprintf(msg, cap, "unknown garment '%s'", json_string_value(g)), -1;
    }
    *nb = 0;
    if (b && !json_is_null(b)) {
        if (!json_is_array(b)) return snprintf(msg, cap, "'betas' must be an array of numbers"), -1;
        size_t n = json_array_size(b);
        if ((int)n > m->cfg.betas) {
            *code = DRAPE_EC_BAD_BETAS;
            return snprintf(msg, cap, "'betas' has %zu values; this model has %d", n, m->cfg.betas), -1;
        }
        for (size_t i = 0; i < n; i++) {
            json_t *v = json_array_get(b, i);
            if (!json_is_number(v)) return snprintf(msg, cap, "betas[%zu] is not a number", i), -1;
            betas[i] = (float)json_number_value(v);
        }
        *nb = (int)n;
        drape_error e = {0};
        if (drape_model_check_betas(m, betas, *nb, &e)) {
            *code = DRAPE_EC_BAD_BETAS;
            return snprintf(msg, cap, "%.250s", e.msg), -1;
        }
    }
    return 0;
}

int draped_parse_frames_list(json_t *o, json_t **list, size_t *n)
{
    *list = json_is_array(o) ? o : json_object_get(o, "items");
    *n = *list ? json_array_size(*list) : 1;
    return *list && (!json_is_array(*list) || *n == 0 || *n > DRAPED_MAX_ITEMS) ? -1 : 0;
}

/* pose arrays: [72] (every history frame the same) or one [72] per frame of
 * the model's history (cfg.hist, oldest first: t−2, t−1, t by default) */
static int parse_frames(json_t *a, const drape_config *c, int width, float out[][DRAPE_FRAME_FLOATS], int off,
                        const char *what, char *msg, size_t cap)
{
    if (!json_is_array(a)) return snprintf(msg, cap, "'%s' must be an array", what), -1;
    size_t n = json_array_size(a);
    int nested = n > 0 && json_is_array(json_array_get(a, 0)), nf = c->n_hist;
    if (nested && n != (size_t)nf) {
        char frames[96] = "";
        for (int k = 0, len = 0; k < nf && len < (int)sizeof frames; k++)
            len += snprintf(frames + len, sizeof frames - (size_t)len, c->hist[k] ? "%st-%d" : "%st", k ? ", " : "",
                            c->hist[k]);
        return snprintf(msg, cap, "'%s' must hold %d frames (%s), not %zu", what, nf, frames, n), -1;
    }
    for (int f = 0; f < nf; f++) {
        json_t *row = nested ? json_array_get(a, (size_t)f) : a;
        if (!json_is_array(row) || json_array_size(row) != (size_t)width)
            return snprintf(msg, cap, "'%s' frames must have %d numbers", what, width), -1;
        for (int i = 0; i < width; i++) {
            json_t *v = json_array_get(row, (size_t)i);
            if (!json_is_number(v)) return snprintf(msg, cap, "'%s' value %d is not a number", what, i), -1;
            double x = json_number_value(v);
            if (!isfinite(x) || !isfinite((float)x))
                return snprintf(msg, cap, "'%s' value %d is not finite (NaN, Inf or beyond float range)", what, i), -1;
            out[f][off + i] = (float)x;
        }
    }
    return 0;
}

int draped_parse_frame_item(const drape_model *m, const drape_pose_limits *lim, json_t *o, draped_frame_item *it,
                            char *msg, size_t cap, drape_errcode *code)
{
    *code = DRAPE_EC_BAD_FIELD;
    if (!json_is_object(o)) return snprintf(msg, cap, "an item must be a JSON object"), -1;
    json_t *fmt = json_object_get(o, "format"), *mode = json_object_get(o, "mode");
    it->format = DRAPE_FMT_F32;
    if (fmt && (!json_is_string(fmt) || (it->format = drape_format_parse(json_string_value(fmt))) < 0))
        return snprintf(msg, cap, "'format' must be f32, f16, q16 or meshopt"), -1;
    it->lbs = 0;
    if (mode) {
        const char *md = json_is_string(mode) ? json_string_value(mode) : "";
        if (!strcmp(md, "lbs")) it->lbs = 1;
        else if (strcmp(md, "neural"))
            return snprintf(msg, cap, "'mode' must be neural or lbs (physics is not served yet)"), -1;
    }
    memset(it->pose, 0, sizeof it->pose);
    const drape_config *c = &m->cfg;
    if (parse_frames(json_object_get(o, "poses") ? json_object_get(o, "poses") : json_object_get(o, "pose"), c,
                     DRAPE_MSG_POSE,
                     it->pose, 0, "poses", msg, cap))
        return -1;
    json_t *tr = json_object_get(o, "trans");
    if (tr && parse_frames(tr, c, 3, it->pose, DRAPE_MSG_POSE, "trans", msg, cap)) return -1;
    for (int f = 0; f < c->n_hist; f++) {
        drape_error why = {0};
        if (drape_pose_validate(it->pose[f], lim, &why))
            return snprintf(msg, cap, "frame %d of %d: %.200s", f, c->n_hist, why.msg), DRAPED_PARSE_POSE_LIMIT;
    }
    json_t *id = json_object_get(o, "identity"), *gj = json_object_get(o, "garment");
    if (id && !json_is_string(id)) return snprintf(msg, cap, "'identity' must be a string"), -1;
    if (!id && !gj) return snprintf(msg, cap, "'identity' or 'garment' is required"), -1;
    int g;
    it->n_betas = 0;
    memset(it->betas, 0, sizeof it->betas);
    if (gj && draped_parse_recipe(m, o, &g, it->betas, &it->n_betas, msg, cap, code)) return -1;
    it->identity = id ? json_string_value(id) : NULL;
    it->garment = gj ? json_string_value(gj) : NULL;
    return 0;
}
