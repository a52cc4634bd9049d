#ifndef CDSPKERNELS_H
#define CDSPKERNELS_H

#include <stdint.h>

/// The radix-2 decimation-in-time FFT's butterflies for VoiceDSP's `FFT` (which owns the tables and documents them).
/// In C so that it runs fast in debug builds too (Swift at -Onone is 3x slower with SIMD types) and so the compiler
/// vectorises the butterflies on any target without changing a bit of the result (no contraction into fused
/// multiply-adds, no reordering: the same products and sums per element as the scalar walk).
///
/// - re, im: `n` values each, transformed in place.
/// - cosines, sines: `n` twiddles per stage, contiguous: the stage whose butterflies span `half` reads its `half`
///   twiddles at `half ..< 2 * half` (index 0 unused).
/// - swaps: `swapCount` pairs (i, j), i < j: the bit-reversal permutation as a list of exchanges.
/// - scale: multiplies every output (1 / n for the inverse transform), or 0 for none.
void cdsp_fft_radix2(float *re, float *im, int32_t n, const float *cosines, const float *sines,
                     const int32_t *swaps, int32_t swapCount, float scale);

#endif
