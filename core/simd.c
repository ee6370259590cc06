#include "simd.h"

/* what the loader's resolvers see, tested once before main: the conv asks
 * for every run of texels */
static int level;

__attribute__((constructor)) static void simd_probe(void)
{
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f")) level = 2;
#ifdef __clang__ /* clang 14 tests no ISA level (the fuzzing build): the v3 features it can test */
    else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("bmi") &&
             __builtin_cpu_supports("bmi2"))
        level = 1;
#else
    else if (__builtin_cpu_supports("x86-64-v3"))
        level = 1;
#endif
}

int drape_simd_level(void) { return level; }

const char *drape_simd_build(void)
{
    static const char *name[3] = {"x86-64", "x86-64-v3", "avx512f"};
    return name[level];
}
