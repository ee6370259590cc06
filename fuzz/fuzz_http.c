/* libFuzzer harness: the JSON bodies of POST /v1/identities and POST
 * /v1/frames (server/parse.c), against a model that holds only what they
 * are checked against: garment names, beta count and range, the history.
 * Input: byte 0 picks the route (bit 2) and the model's history (bits 0-1),
 * the rest is the body. Checks that whatever parses is what the routes
 * then rely on: a known garment, betas in range, finite poses within the
 * pose limits (the defaults), a format the packer knows, and that a failure
 * says why. */
#include <math.h>
#include <string.h>

#include "../proto/msg.h"
#include "../proto/pack.h"
#include "../server/parse.h"
#include "fuzz.h"

static const int histories[4][8] = {{2, 1, 0}, {32, 16, 8, 4, 2, 1, 0}, {1, 0}, {63, 62, 40, 20, 10, 5, 1, 0}};
static const int history_len[4] = {3, 7, 2, 8};

static drape_model model;
static const drape_pose_limits limits = {DRAPE_POSE_MAX_ANGLE, DRAPE_POSE_MAX_TRANS};
static draped_frame_item item;

static void model_init(int h)
{
    static const char *const garments[] = {"skirt", "dress", "tshirt"};
    drape_config *c = &model.cfg;
    c->betas = 10;
    c->beta_min = -3.0f;
    c->beta_max = 3.0f;
    c->n_garments = 3;
    for (int g = 0; g < 3; g++) snprintf(c->garments[g], sizeof c->garments[g], "%s", garments[g]);
    c->n_hist = history_len[h];
    memcpy(c->hist, histories[h], sizeof c->hist);
}

static void check_betas(const float *betas, int nb)
{
    FUZZ_CHECK(nb >= 0 && nb <= model.cfg.betas);
    for (int i = 0; i < nb; i++) FUZZ_CHECK(betas[i] >= model.cfg.beta_min && betas[i] <= model.cfg.beta_max);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
    if (len < 1) return 0;
    model_init(data[0] & 3);
    int identities = data[0] >> 2 & 1;
    json_error_t je;
    json_t *o = draped_parse_body(data + 1, len - 1, &je);
    if (!o) return 0;
    char msg[300];
    drape_errcode code = DRAPE_EC_INTERNAL;
    msg[0] = 0;
    if (identities) {
        int g, nb;
        float betas[DRAPE_MAX_BETAS];
        if (!json_is_object(o)) goto out;
        if (draped_parse_recipe(&model, o, &g, betas, &nb, msg, sizeof msg, &code)) {
            FUZZ_CHECK(*msg && code != DRAPE_EC_INTERNAL);
            goto out;
        }
        FUZZ_CHECK(g >= 0 && g < model.cfg.n_garments);
        check_betas(betas, nb);
        goto out;
    }
    json_t *list;
    size_t n;
    if (draped_parse_frames_list(o, &list, &n)) goto out;
    FUZZ_CHECK(n >= 1 && n <= DRAPED_MAX_ITEMS);
    for (size_t i = 0; i < n; i++) {
        msg[0] = 0;
        code = DRAPE_EC_INTERNAL;
        int rc = draped_parse_frame_item(&model, &limits, list ? json_array_get(list, i) : o, &item, msg, sizeof msg,
                                         &code);
        if (rc) {
            FUZZ_CHECK(rc == -1 || rc == DRAPED_PARSE_POSE_LIMIT);
            FUZZ_CHECK(*msg && code != DRAPE_EC_INTERNAL);
            break;
        }
        FUZZ_CHECK(item.format >= 0 && item.format < DRAPE_FMT_COUNT && (item.lbs == 0 || item.lbs == 1));
        FUZZ_CHECK(item.identity || item.garment);
        if (item.garment) FUZZ_CHECK(drape_model_garment(&model, item.garment) >= 0);
        check_betas(item.betas, item.n_betas);
        for (int f = 0; f < model.cfg.n_hist; f++)
            for (int k = 0; k < DRAPE_FRAME_FLOATS; k++)
                FUZZ_CHECK(isfinite(item.pose[f][k]) &&
                           fabs(item.pose[f][k]) <= (k < DRAPE_MSG_POSE ? limits.max_angle : limits.max_trans));
    }
out:
    json_decref(o);
    return 0;
}
