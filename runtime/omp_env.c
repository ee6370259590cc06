#include "omp_env.h"

#include <stdlib.h>
#include <unistd.h>

/* OpenBLAS's (openblas-pthread's) own entry points: the first is in its
 * cblas.h, the second is what its fork handler calls. Weak: with another
 * BLAS underneath they are absent and there is no pool to stop. */
void openblas_set_num_threads(int n) __attribute__((weak));
int blas_thread_shutdown_(void) __attribute__((weak));

void drape_omp_env(char **argv)
{
    if (!getenv("OMP_WAIT_POLICY")) {
        setenv("OMP_WAIT_POLICY", "passive", 1);
        /* OpenMP owns the threads (the CPU backend runs OpenBLAS single-threaded
         * inside its row blocks); OpenBLAS's own pool would only idle-spin */
        if (!getenv("OPENBLAS_NUM_THREADS")) setenv("OPENBLAS_NUM_THREADS", "1", 1);
        execv("/proc/self/exe", argv); /* returns only on failure: run as we are */
    }
    drape_blas_threads_init();
}

void drape_blas_threads_init(void)
{
    if (!getenv("OPENBLAS_NUM_THREADS") && openblas_set_num_threads) openblas_set_num_threads(1);
}

void drape_blas_single(void)
{
    if (openblas_set_num_threads) openblas_set_num_threads(1);
    if (blas_thread_shutdown_) blas_thread_shutdown_();
}
