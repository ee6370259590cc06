/* OpenMP's idle threads spin by default (OMP_WAIT_POLICY=active). On the
 * shared, oversubscribed machines Drape runs on (a daemon's own connection
 * threads, other processes, CI runners) a spinning team steals the cores the
 * other team member needs: a 2-thread module A measured 13x slower than with
 * passive waiting. libgomp reads the variable when it is loaded, before
 * main(), so the programs re-execute themselves once with it set (and with
 * OPENBLAS_NUM_THREADS=1 unless given: OpenMP owns the threads, an idle
 * OpenBLAS pool only spins). What the user sets explicitly is kept. */
#ifndef DRAPE_OMP_ENV_H
#define DRAPE_OMP_ENV_H

void drape_omp_env(char **argv);

/* OpenBLAS to one thread unless OPENBLAS_NUM_THREADS says otherwise: the
 * CPU backend runs a GEMM per row block inside its OpenMP regions. It is
 * process-wide, so a program sets it once at start: drape_omp_env does, and
 * programs that do not re-execute (the tests, the benchmarks) call this. */
void drape_blas_threads_init(void);

/* For a command that runs neither OpenMP nor BLAS, instead of the re-exec:
 * OpenBLAS to one thread and its pool, started when it was loaded, stopped
 * (its threads spin for a while first, which slows a 2-core machine). */
void drape_blas_single(void);

#endif
