/* A queue served round-robin by owner (the physics pool's: an owner is a
 * stream connection). Each pop takes the oldest item of the owner whose turn
 * it is, then the turn passes on; an owner with nothing queued has no turn,
 * and a new one joins at the end of the round. So one connection with many
 * queued frames delays another's by one frame per connection, not by all of
 * its own. Intrusive (no allocation), not thread-safe (the pool's lock
 * guards it); push and pop cost one step per owner with items queued. */
#ifndef DRAPED_FAIRQ_H
#define DRAPED_FAIRQ_H

typedef struct draped_fairq_item {
    const void *owner;
    struct draped_fairq_item *next; /* the owner's next item */
    struct draped_fairq_item *ring; /* an owner's first item: the next owner's first */
    struct draped_fairq_item *last; /* an owner's first item: the owner's last */
} draped_fairq_item;

typedef struct {
    draped_fairq_item *turn, *before; /* the first item of the owner whose turn it is; the round's last */
    int n;
} draped_fairq;

void draped_fairq_push(draped_fairq *q, draped_fairq_item *it, const void *owner);
/* NULL when empty */
draped_fairq_item *draped_fairq_pop(draped_fairq *q);

#endif
