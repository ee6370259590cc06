#include "simd.h"

int drape_simd_level(void)
{
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f")) return 2;
#ifdef __clang__ /* clang 14 tests no ISA level (the fuzzing build): the v3 features it can test */
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("bmi") &&
        __builtin_cpu_supports("bmi2"))
        return 1;
#else
    if (__builtin_cpu_supports("x86-64-v3")) return 1;
#endif
    return 0;
}

const char *drape_simd_build(void)
{
    static const char *name[3] = {"x86-64", "x86-64-v3", "avx512f"};
    return name[drape_simd_level()];
}
