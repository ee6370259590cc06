/* The physics pool's round-robin queue (server/fairq.c): owners take turns,
 * each owner's items come out in order, an owner that empties leaves the
 * round and one that comes back joins at its end; against a plain model of
 * the same rule on random pushes and pops. */
#include <criterion/criterion.h>
#include <string.h>

#include "../server/fairq.h"
#include "util.h"

typedef struct {
    draped_fairq_item q;
    int owner, k; /* the owner's k-th item */
} item;

static const void *owner_of(int o) { return (const void *)(size_t)(o + 1); }

static item *pop(draped_fairq *q) { return (item *)draped_fairq_pop(q); }

Test(fairq, owners_take_turns_and_keep_their_order)
{
    draped_fairq q = {0};
    item it[7];
    /* A's four, then B's two, then C's one: A, B, C, A, B, A, A */
    int owners[7] = {0, 0, 0, 0, 1, 1, 2}, k[3] = {0};
    for (int i = 0; i < 7; i++) {
        it[i] = (item){.owner = owners[i], .k = k[owners[i]]++};
        draped_fairq_push(&q, &it[i].q, owner_of(owners[i]));
    }
    cr_assert_eq(q.n, 7);
    const int want_owner[7] = {0, 1, 2, 0, 1, 0, 0}, want_k[7] = {0, 0, 0, 1, 1, 2, 3};
    for (int i = 0; i < 7; i++) {
        item *x = pop(&q);
        cr_assert_not_null(x, "pop %d", i);
        cr_assert(x->owner == want_owner[i] && x->k == want_k[i], "pop %d: owner %d item %d, want %d item %d", i,
                  x->owner, x->k, want_owner[i], want_k[i]);
    }
    cr_assert_null(pop(&q));
    cr_assert_eq(q.n, 0);
    /* empty, then used again */
    draped_fairq_push(&q, &it[0].q, owner_of(5));
    cr_assert_eq(pop(&q), &it[0]);
    cr_assert_null(pop(&q));
}

Test(fairq, an_owner_that_returns_waits_for_the_round)
{
    draped_fairq q = {0};
    item a0 = {.owner = 0}, b0 = {.owner = 1}, b1 = {.owner = 1, .k = 1}, c0 = {.owner = 2}, a1 = {.owner = 0, .k = 1};
    draped_fairq_push(&q, &a0.q, owner_of(0));
    draped_fairq_push(&q, &b0.q, owner_of(1));
    draped_fairq_push(&q, &b1.q, owner_of(1));
    cr_assert_eq(pop(&q), &a0); /* A leaves the round: B's turn */
    draped_fairq_push(&q, &c0.q, owner_of(2));
    draped_fairq_push(&q, &a1.q, owner_of(0)); /* A again: after C */
    cr_assert_eq(pop(&q), &b0);
    cr_assert_eq(pop(&q), &c0);
    cr_assert_eq(pop(&q), &a1);
    cr_assert_eq(pop(&q), &b1);
    cr_assert_null(pop(&q));
}

/* The rule as a plain model: a list of owners in turn order, each with a FIFO. */
enum { OWNERS = 5, ITEMS = 4000 };
typedef struct {
    int order[OWNERS], n_order;  /* owners with items, the one whose turn it is first */
    int fifo[OWNERS][ITEMS], head[OWNERS], tail[OWNERS];
} model;

static void model_push(model *m, int o, int id)
{
    if (m->head[o] == m->tail[o]) m->order[m->n_order++] = o;
    m->fifo[o][m->tail[o]++] = id;
}

static int model_pop(model *m)
{
    if (!m->n_order) return -1;
    int o = m->order[0], id = m->fifo[o][m->head[o]++];
    memmove(m->order, m->order + 1, sizeof(int) * (size_t)(m->n_order - 1));
    m->n_order--;
    if (m->head[o] != m->tail[o]) m->order[m->n_order++] = o;
    return id;
}

Test(fairq, agrees_with_a_plain_model_on_random_traffic)
{
    static item it[ITEMS];
    static model m;
    memset(&m, 0, sizeof m);
    draped_fairq q = {0};
    uint64_t st = 11;
    int pushed = 0, popped = 0;
    while (popped < ITEMS) {
        int push = pushed < ITEMS && (pushed == popped || tu_rand(&st) > -0.2);
        if (push) {
            int o = (int)((tu_rand(&st) + 1) * 0.5 * OWNERS) % OWNERS;
            it[pushed] = (item){.owner = o, .k = pushed};
            draped_fairq_push(&q, &it[pushed].q, owner_of(o));
            model_push(&m, o, pushed++);
        } else {
            item *x = pop(&q);
            int want = model_pop(&m);
            cr_assert_not_null(x);
            cr_assert_eq(x->k, want, "pop %d: item %d, the model's %d", popped, x->k, want);
            popped++;
        }
        cr_assert_eq(q.n, pushed - popped);
    }
    cr_assert_null(pop(&q));
}
