/* drape_bench's rows under contention (bench_contention.c). */
#ifndef DRAPE_BENCH_CONTENTION_H
#define DRAPE_BENCH_CONTENTION_H

/* The table of module A at batch 1, C against PyTorch, per neighbour; 0 when
 * every row was measured (the goal line says whether it was met). */
int bench_contention(const char *bundle, const char *model, const char *draped, const char *drape);

/* The OpenMP neighbour's loop (never returns). */
int bench_neighbour_omp(void);

#endif
