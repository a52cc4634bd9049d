#include "CDSPKernels.h"

// Same arithmetic as written, on every target: no fused multiply-add (aarch64 would otherwise contract
// `a * b - c * d`), so the transform stays bit for bit the scalar radix-2 walk it replaced.
#pragma STDC FP_CONTRACT OFF

/// One radix-2 butterfly: (x, y) ← (x + w·y, x − w·y), the operations in the scalar walk's order.
#define BUTTERFLY(xr, xi, yr, yi, wr, wi)                 \
    do {                                                  \
        float tr_ = (wr) * (yr) - (wi) * (yi);            \
        float ti_ = (wr) * (yi) + (wi) * (yr);            \
        (yr) = (xr) - tr_;                                \
        (yi) = (xi) - ti_;                                \
        (xr) = (xr) + tr_;                                \
        (xi) = (xi) + ti_;                                \
    } while (0)

/// Stages `half` and `2 * half` in one pass over memory: each group of `4 * half` is loaded once, its two
/// stage-`half` butterflies and then its two stage-`2 * half` butterflies computed in registers. Every butterfly has
/// the operands and operations of the stage-by-stage walk, so the result is the same to the bit; the memory traffic
/// is halved. The inner loop runs over contiguous elements and twiddles, which the compiler vectorises.
static inline void twoStages(float *restrict re, float *restrict im, int32_t n, int32_t half,
                             const float *restrict cosines, const float *restrict sines) {
    const float *w1r = cosines + half, *w1i = sines + half;
    const float *w2r = cosines + 2 * half, *w2i = sines + 2 * half;
    for (int32_t start = 0; start < n; start += 4 * half) {
        float *ra = re + start, *ia = im + start;
        float *rb = ra + half, *ib = ia + half;
        float *rc = rb + half, *ic = ib + half;
        float *rd = rc + half, *id = ic + half;
        for (int32_t k = 0; k < half; k++) {
            float ar = ra[k], ai = ia[k], br = rb[k], bi = ib[k];
            float cr = rc[k], ci = ic[k], dr = rd[k], di = id[k];
            BUTTERFLY(ar, ai, br, bi, w1r[k], w1i[k]);
            BUTTERFLY(cr, ci, dr, di, w1r[k], w1i[k]);
            BUTTERFLY(ar, ai, cr, ci, w2r[k], w2i[k]);
            BUTTERFLY(br, bi, dr, di, w2r[k + half], w2i[k + half]);
            ra[k] = ar, ia[k] = ai, rb[k] = br, ib[k] = bi;
            rc[k] = cr, ic[k] = ci, rd[k] = dr, id[k] = di;
        }
    }
}

/// One stage alone (the last, when the stages are odd in number).
static inline void oneStage(float *restrict re, float *restrict im, int32_t n, int32_t half,
                            const float *restrict wr, const float *restrict wi) {
    for (int32_t start = 0; start < n; start += 2 * half) {
        float *rj = re + start, *ij = im + start;
        float *rl = rj + half, *il = ij + half;
        for (int32_t k = 0; k < half; k++) {
            float xr = rj[k], xi = ij[k], yr = rl[k], yi = il[k];
            BUTTERFLY(xr, xi, yr, yi, wr[k], wi[k]);
            rj[k] = xr, ij[k] = xi, rl[k] = yr, il[k] = yi;
        }
    }
}

/// The first two stages (half 1 and 2), too short for `twoStages`' inner loop, across the four-element groups.
static inline void firstTwoStages(float *restrict re, float *restrict im, int32_t n, const float *restrict c,
                                  const float *restrict s) {
    const float w1r = c[1], w1i = s[1], w2r = c[2], w2i = s[2], w3r = c[3], w3i = s[3];
    for (int32_t g = 0; g < n; g += 4) {
        float ar = re[g], ai = im[g], br = re[g + 1], bi = im[g + 1];
        float cr = re[g + 2], ci = im[g + 2], dr = re[g + 3], di = im[g + 3];
        BUTTERFLY(ar, ai, br, bi, w1r, w1i);
        BUTTERFLY(cr, ci, dr, di, w1r, w1i);
        BUTTERFLY(ar, ai, cr, ci, w2r, w2i);
        BUTTERFLY(br, bi, dr, di, w3r, w3i);
        re[g] = ar, im[g] = ai, re[g + 1] = br, im[g + 1] = bi;
        re[g + 2] = cr, im[g + 2] = ci, re[g + 3] = dr, im[g + 3] = di;
    }
}

void cdsp_fft_radix2(float *re, float *im, int32_t n, const float *cosines, const float *sines,
                     const int32_t *swaps, int32_t swapCount, float scale) {
    for (int32_t p = 0; p < swapCount; p++) {
        int32_t i = swaps[2 * p], j = swaps[2 * p + 1];
        float t = re[i];
        re[i] = re[j];
        re[j] = t;
        t = im[i];
        im[i] = im[j];
        im[j] = t;
    }
    int32_t half;
    if (n == 2) {
        oneStage(re, im, n, 1, cosines + 1, sines + 1);
        half = 2;
    } else {
        firstTwoStages(re, im, n, cosines, sines);
        half = 4;
    }
    for (; 4 * half <= n; half *= 4) twoStages(re, im, n, half, cosines, sines);
    if (half < n) oneStage(re, im, n, half, cosines + half, sines + half);
    if (scale != 0) {
        for (int32_t i = 0; i < n; i++) {
            re[i] *= scale;
            im[i] *= scale;
        }
    }
}
