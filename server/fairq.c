/* The round-robin queue of fairq.h. The round is a circular list of each
 * owner's first item (ring); behind each first item, its owner's items in
 * order (next), the last one remembered in the first (last). */
#include "fairq.h"

#include <stddef.h>

void draped_fairq_push(draped_fairq *q, draped_fairq_item *it, const void *owner)
{
    it->owner = owner;
    it->next = NULL;
    q->n++;
    draped_fairq_item *h = q->turn;
    if (h) {
        do {
            if (h->owner == owner) { /* the owner is in the round: at the end of its items */
                h->last->next = it;
                h->last = it;
                return;
            }
            h = h->ring;
        } while (h != q->turn);
    }
    it->last = it; /* a new owner: its turn comes last in the round */
    if (!q->turn) {
        q->turn = q->before = it->ring = it;
        return;
    }
    q->before->ring = it;
    it->ring = q->turn;
    q->before = it;
}

draped_fairq_item *draped_fairq_pop(draped_fairq *q)
{
    draped_fairq_item *h = q->turn;
    if (!h) return NULL;
    q->n--;
    draped_fairq_item *n = h->next;
    if (n) { /* the owner keeps its place in the round, its next item first; the turn passes on */
        n->last = h->last;
        n->ring = h->ring == h ? n : h->ring;
        q->before->ring = n;
        q->before = n;
        q->turn = n->ring;
    } else if (h->ring == h) { /* the last owner with items */
        q->turn = q->before = NULL;
    } else { /* the owner leaves the round */
        q->before->ring = h->ring;
        q->turn = h->ring;
    }
    return h;
}
