/* The body of the two stream-message harnesses (fuzz_msg_json.c,
 * fuzz_msg_msgpack.c): the same bytes through the server's parser of client
 * messages and the client's parser of server messages (proto/msg.c). A
 * client message that parses is encoded again and must parse to the same
 * message; a failure must name its code and reason. */
#ifndef DRAPE_FUZZ_MSG_H
#define DRAPE_FUZZ_MSG_H

#include <math.h>
#include <string.h>

#include "../proto/msg.h"
#include "../proto/pack.h"
#include "fuzz.h"

static int same_avatar(const drape_avatar_key *a, const drape_avatar_key *b)
{
    return a->is_str == b->is_str && (a->is_str ? !strcmp(a->str, b->str) : a->num == b->num);
}

static void reencode(const drape_msg *m, int binary)
{
    drape_buf b = {0};
    int rc;
    if (m->op == DRAPE_OP_POSE) rc = drape_msg_encode_pose(&b, binary, &m->avatar, m->seq, m->pose, m->trans);
    else if (m->op == DRAPE_OP_CLOSE) rc = drape_msg_encode_close(&b, binary, &m->avatar);
    else if (!*m->identity != !*m->garment) /* the encoder sends one of them */
        rc = drape_msg_encode_open(&b, binary, &m->avatar, m->identity, m->garment, m->betas,
                                   *m->garment ? m->n_betas : -1, m->format, m->mode);
    else return;
    FUZZ_CHECK(rc == 0);
    drape_msg m2;
    const char *code;
    char why[256];
    FUZZ_CHECK(drape_msg_parse(&m2, b.p, b.len, binary, &code, why, sizeof why) == 0);
    FUZZ_CHECK(m2.op == m->op && same_avatar(&m2.avatar, &m->avatar));
    if (m->op == DRAPE_OP_POSE)
        FUZZ_CHECK(m2.seq == m->seq && !memcmp(m2.pose, m->pose, sizeof m->pose) &&
                   !memcmp(m2.trans, m->trans, sizeof m->trans));
    if (m->op == DRAPE_OP_OPEN)
        FUZZ_CHECK(!strcmp(m2.identity, m->identity) && !strcmp(m2.garment, m->garment) &&
                   m2.format == m->format && m2.mode == m->mode && m2.n_betas == m->n_betas &&
                   (m->n_betas <= 0 || !memcmp(m2.betas, m->betas, sizeof(float) * (size_t)m->n_betas)));
    drape_buf_free(&b);
}

static void fuzz_msg(const uint8_t *data, size_t len, int binary)
{
    drape_msg m;
    const char *code = NULL;
    char why[256];
    if (drape_msg_parse(&m, data, len, binary, &code, why, sizeof why)) {
        FUZZ_CHECK(code && *code && *why && strlen(why) < sizeof why);
    } else {
        FUZZ_CHECK(m.op >= DRAPE_OP_OPEN && m.op <= DRAPE_OP_CLOSE && m.has_avatar);
        FUZZ_CHECK(m.avatar.is_str ? strlen(m.avatar.str) >= 1 : m.avatar.num < (uint64_t)1 << 53);
        FUZZ_CHECK(m.format >= 0 && m.format < DRAPE_FMT_COUNT && m.mode >= 0 && m.mode <= DRAPE_MODE_PHYSICS);
        FUZZ_CHECK(m.n_betas >= -1 && m.n_betas <= DRAPE_MSG_BETAS_MAX);
        for (int i = 0; i < DRAPE_MSG_POSE; i++) FUZZ_CHECK(isfinite(m.pose[i]));
        for (int i = 0; i < 3; i++) FUZZ_CHECK(isfinite(m.trans[i]));
        reencode(&m, binary);
    }
    drape_server_msg sm;
    if (drape_server_msg_parse(&sm, data, len, binary)) FUZZ_CHECK(!*sm.op && !sm.data);
    else FUZZ_CHECK(*sm.op && (!sm.len || sm.data));
    drape_server_msg_clear(&sm);
}

#endif
