/* Which vector build of the hot CPU loops a machine runs (the cloth solver's
 * iteration, the UV conv's tiles): each is compiled for AVX-512, for AVX2+FMA
 * and for plain x86-64, and the loader (GCC's target_clones) or the caller
 * (drape_simd_level) picks one.
 *
 * The middle build is named by ISA level (x86-64-v3: AVX2, FMA, BMI2, ...),
 * not by a CPU: GCC resolves "arch=haswell" by the CPU's model, so an AMD
 * Zen with every Haswell feature ran the plain x86-64 build, half the speed
 * of the AVX2 one (docs/conventions.md, "Vector builds"). */
#ifndef DRAPE_SIMD_H
#define DRAPE_SIMD_H

#define DRAPE_CLONES __attribute__((target_clones("avx512f", "arch=x86-64-v3", "default")))

/* The build this machine runs, by the loader's rule: 2 AVX-512, 1 x86-64-v3
 * (AVX2, FMA, ...), 0 plain x86-64. */
int drape_simd_level(void);
/* the same as a name: "avx512f", "x86-64-v3" or "x86-64" */
const char *drape_simd_build(void);

#endif
