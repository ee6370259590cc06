/* The JSON bodies of POST /v1/identities and POST /v1/frames, parsed and
 * checked against the model (garment names, betas, the pose history): bytes
 * in, values out, nothing looked up in the identity cache. routes.c resolves
 * what they name; fuzz/fuzz_http.c drives them without a daemon. */
#ifndef DRAPED_PARSE_H
#define DRAPED_PARSE_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "../proto/errors.h"
#include "../runtime/model.h"
#include "../runtime/sequence.h"

#define DRAPED_MAX_ITEMS 256 /* items of one POST /v1/frames */

/* A request body as JSON (duplicate keys refused); NULL with je filled. */
json_t *draped_parse_body(const uint8_t *p, size_t len, json_error_t *je);

/* "garment" and "betas" of o: the garment's index in m and the betas
 * (*nb of them, checked against m). 0, or -1 with msg and *code. */
int draped_parse_recipe(const drape_model *m, json_t *o, int *garment, float *betas, int *nb, char *msg, size_t cap,
                        drape_errcode *code);

/* The items of a /v1/frames body: the body when it is an array, else its
 * "items"; *list NULL (and *n 1) when it has neither: the body is the one
 * item. -1 when "items" is not an array of 1..DRAPED_MAX_ITEMS. */
int draped_parse_frames_list(json_t *o, json_t **list, size_t *n);

/* One item of /v1/frames, as far as the model alone can check it. */
typedef struct {
    int format, lbs;
    float pose[DRAPE_MAX_HISTORY][DRAPE_FRAME_FLOATS]; /* the model's history frames, t last */
    const char *identity, *garment;                    /* NULL: absent; they point into the JSON */
    float betas[DRAPE_MAX_BETAS];
    int n_betas;
} draped_frame_item;

/* 0, or -1 with msg and *code; DRAPED_PARSE_POSE_LIMIT (msg and *code too)
 * when a frame is past lim (drape_pose_validate), which the caller counts. */
#define DRAPED_PARSE_POSE_LIMIT (-2)
int draped_parse_frame_item(const drape_model *m, const drape_pose_limits *lim, json_t *o, draped_frame_item *it,
                            char *msg, size_t cap, drape_errcode *code);

#endif
