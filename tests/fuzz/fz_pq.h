/* fz_pq.h -- the in-memory libpq of the frame target (fz_pq.c). */
#ifndef FZ_PQ_H
#define FZ_PQ_H

/* Forget the fake database's state (an open COPY, samples counted):
 * each input starts from the same database. */
void fz_pq_reset(void);

#endif
