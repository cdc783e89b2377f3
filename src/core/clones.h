/* Loops built once per x86-64 vector level and picked by the loader for the CPU (GCC
 * target_clones): the library is compiled for baseline x86-64 (SSE2, no FMA).  Two kinds:
 *  - DPO_CLONES_EXACT: an AVX2 build beside the baseline, neither with FMA, so no product is
 *    contracted into a fused multiply-add and every build gives the baseline's doubles, bit
 *    for bit (the PLD transforms, the loader's row checks: values a test or a journal pins);
 *  - DPO_CLONES_LEVELS: one build per x86-64 level (v4, v3 with FMA, baseline): results may
 *    differ in the last bits across machines, as the gradient kernels' builds do, and are the
 *    same for every rank of a run on one machine (HAMSI's loops, sums of additions only).
 * Empty where GCC's target_clones is not available. */
#ifndef DPO_CORE_CLONES_H
#define DPO_CORE_CLONES_H

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define DPO_CLONES_EXACT __attribute__((target_clones("avx2", "default")))
#define DPO_CLONES_LEVELS \
  __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define DPO_CLONES_EXACT
#define DPO_CLONES_LEVELS
#endif

#endif
