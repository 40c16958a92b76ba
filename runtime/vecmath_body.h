/* The f32 transcendental functions, written once for two back ends (no include guard: it is
 * included once by each).
 *
 * Each function is straight-line code on one lane: no branches, no table lookups, no libm, so
 * that a compiler vectorises a loop of it. runtime/vecmath.c compiles it as C (the eager
 * kernels: GCC vectorises their loops), compiler/vecmath_jit.c as libgccjit calls that put
 * it inside jit's lane loops. Both evaluate the same IEEE operations in the same order (FMA
 * only where written, no reassociation), so eager and jit give the same bits.
 *
 * The includer defines the lane operations used below:
 *   VM_F VM_I VM_U              the types of f32, int32 and uint32 lanes
 *   VM_FN(name, params...)      defines vm_<name>; CALL(name, args...) calls it
 *   LET(v, e)                   names a value; RETURN(e)
 *   F(c) D(c) I(c) U(c)         constants of each lane type
 *   ADD SUB MUL DIV NEG         float arithmetic (ADD/SUB also on int32 and uint32 lanes)
 *   FMA(a, b, c)                a * b + c on f32: one rounding where the build has FMA instructions
 *                               (FUSED, known when the code is made and the same in both back
 *                               ends), two elsewhere
 *   LT GT GE EQ                 comparisons, giving masks
 *   SEL(m, a, b)                a where m, else b
 *   BAND BOR SHL SHR            bit operations (SHR: arithmetic on int32, logical on uint32)
 *   BITS(f) FROMBITS(u)         an f32's bits as uint32, and back
 *   TOI(u) TOU(i)               uint32 <-> int32, the same bits
 *   I2F(i) F2D(f) D2F(d)        conversions
 *   HORNER(z, coefs)            coefs[0] + z * (coefs[1] + z * (...)), from the innermost out,
 *                               each step an FMA
 *
 * Accuracy (max error against the correctly rounded result, every f32 input: see
 * docs/vecmath.md for how it is measured): each function within 2 ulp. */

/* ---- constants ---- */

/* ln 2 = LN2_HI + LN2_LO, LN2_HI with 16 significant bits: n * LN2_HI is exact for |n| < 2^8 */
#define VM_LN2_HI  0x1.62e4p-1f
#define VM_LN2_LO  0x1.7f7d1cp-20f
#define VM_INV_LN2 0x1.715476p+0f
/* ln 2 / 2 rounded to f32 (1e-9 high: tanh's reduction takes it in one product) */
#define VM_HALF_LN2 0x1.62e43p-2f
/* adding 1.5 * 2^23 rounds an f32 of magnitude < 2^22 to an integer, which the low bits of the
 * sum hold */
#define VM_ROUNDER         0x1.8p23f
#define VM_ROUNDER_BITS    0x4b400000u
#define VM_SQRT_HALF_BITS  0x3f3504f3u
#define VM_TANH_CLAMP_BITS 0x4111999au /* 9.1f */

/* Minimax fits (runtime/vecmath_fit.py) for e^r, (e^r - 1 - r) / r^2, (tanh(a) / a - 1) / a^2,
 * erf and erfc, and the series of log(1 + f) in s = f / (2 + f). */
static const float vm_exp_c[] = {0x1p+0f,        0x1p+0f,        0x1.fffffap-2f, 0x1.55540ap-3f,
                                 0x1.55589cp-5f, 0x1.126d66p-7f, 0x1.6ab90cp-10f};
/* vm_exp_c times 2^-65 and 2^63 (exactly): exp_nonpos's and exp_nonneg's */
static const float vm_exp_c_m65[] = {0x1p-65f,        0x1p-65f,        0x1.fffffap-67f,
                                     0x1.55540ap-68f, 0x1.55589cp-70f, 0x1.126d66p-72f,
                                     0x1.6ab90cp-75f};
static const float vm_exp_c_p63[] = {0x1p+63f,        0x1p+63f,        0x1.fffffap+61f,
                                     0x1.55540ap+60f, 0x1.55589cp+58f, 0x1.126d66p+56f,
                                     0x1.6ab90cp+53f};
/* e^(-2s) = vm_exp_c's polynomial in r = -2s: its k-th coefficient times (-2)^k (exactly) */
static const float vm_exp_m2[] = {0x1p+0f,        -0x1p+1f,        0x1.fffffap+0f, -0x1.55540ap+0f,
                                  0x1.55589cp-1f, -0x1.126d66p-2f, 0x1.6ab90cp-4f};
static const float vm_tanh_p[] = {-0x1.555452p-2f, 0x1.10cef6p-3f, -0x1.af7cdp-5f, 0x1.0d503cp-6f};
static const float vm_expm1_q[] = {0x1p-1f,        0x1.555554p-3f,  0x1.5554bp-5f,
                                   0x1.11118ap-7f, 0x1.6d7246p-10f, 0x1.a0336cp-13f};
static const float vm_log_w[] = {0x1.555556p-1f, 0x1.99999ap-2f, 0x1.24924ap-2f, 0x1.c71c72p-3f,
                                 0x1.745d18p-3f};
static const float vm_erf_q[] = {0x1.06eba8p-3f, -0x1.81273ep-2f,  0x1.ce2cf8p-4f, -0x1.b7f916p-6f,
                                 0x1.5405fp-8f,  -0x1.a3f88cp-11f, 0x1.496df6p-14f};
static const float vm_erfc_g[] = {0x1.1611f6p-2f,  0x1.f48606p-1f,  0x1.edee8ep-2f,
                                  -0x1.a50b5ap-2f, -0x1.c57f54p-3f, 0x1.22503p-1f,
                                  -0x1.c60086p-3f, -0x1.3427bap-1f, 0x1.06004cp+0f};

/* ---- helpers ---- */

VM_FN(abs, VM_F x) {
    RETURN(FROMBITS(BAND(BITS(x), U(0x7fffffffu))));
}

/* y with the sign of x */
VM_FN(copysign, VM_F y, VM_F x) {
    RETURN(FROMBITS(BOR(BITS(y), BAND(BITS(x), U(0x80000000u)))));
}

/* x, with values beyond [lo, hi] clamped (NaN passes) */
VM_FN(clamp, VM_F x, VM_F lo, VM_F hi) {
    RETURN(SEL(GT(x, hi), hi, SEL(LT(x, lo), lo, x)));
}

/* 2^e for e in [-126, 127] */
VM_FN(pow2, VM_I e) {
    RETURN(FROMBITS(SHL(TOU(ADD(e, I(127))), 23)));
}

/* ---- exp, expm1 ---- */

/* x = n ln 2 + r with |r| <= ln2/2 + a little: n as a float (*n), as an int (*ni), and r */
#define VM_REDUCE_LN2(xc, n, ni, r)                                                                \
    LET(n##_t, FMA(xc, F(VM_INV_LN2), F(VM_ROUNDER)));                                             \
    LET(n, SUB(n##_t, F(VM_ROUNDER)));                                                             \
    LET(ni, TOI(SUB(BITS(n##_t), U(VM_ROUNDER_BITS))));                                            \
    LET(r, FMA(n, F(-VM_LN2_LO), FMA(n, F(-VM_LN2_HI), xc)))

/* e^x for x in [-87.3, 88.7] (normal results) in one step */
VM_FN(exp_core, VM_F x) {
    VM_REDUCE_LN2(x, n, ni, r);
    RETURN(MUL(HORNER(r, vm_exp_c), CALL(pow2, ni)));
}

/* x = n ln 2 + r for an exp: n_t = the rounder + n (the rounder carries 127 + k, below: k is
 * odd, so 127 + k even, and n_t's rounding picks the same n as the plain rounder's where
 * x / ln2 rounds a tie, which it can without FMA), r */
#define VM_EXP_REDUCE(xc, rounder, n_t, r)                                                         \
    LET(n_t, FMA(xc, F(VM_INV_LN2), rounder));                                                     \
    LET(n_t##_n, SUB(n_t, rounder));                                                               \
    LET(r, FMA(n_t##_n, F(-VM_LN2_LO), FMA(n_t##_n, F(-VM_LN2_HI), xc)))
/* 2^(n+k): n_t's low bits shifted into the exponent field (the rounder's others drop out) */
#define VM_EXP_POW2(n_t)   FROMBITS(SHL(BITS(n_t), 23))
#define VM_EXP_ROUNDER_NEG F(VM_ROUNDER + 192.0f) /* 127 + k, k = 65 */
#define VM_EXP_ROUNDER_POS F(VM_ROUNDER + 64.0f)  /* 127 + k, k = -63 */

/* e^x = 2^n e^r for x clamped to [-104, 104] (e^-103.98 rounds to 0 and e^88.73 to inf:
 * beyond, the clamp changes nothing), so n is in [-150, 150]. 2^n goes on in two steps, so
 * that results past the normal range are rounded once: p 2^(n+k), exact, then times 2^-k,
 * with k = 65 for x < 0 and -63 for x >= 0 (2^(n+k) stays normal; either k serves n = 0).
 * The rounder gives both powers' bits; one select on x's sign chooses it (two selects on one
 * condition would be worse: GCC duplicates the code between them). */
VM_FN(exp, VM_F x) {
    LET(xc, SEL(GT(CALL(abs, x), F(104.0f)), CALL(copysign, F(104.0f), x), x));
    LET(rounder, SEL(LT(x, F(0.0f)), VM_EXP_ROUNDER_NEG, VM_EXP_ROUNDER_POS));
    VM_EXP_REDUCE(xc, rounder, n_t, r);
    LET(pow2_mk, FROMBITS(SHL(SUB(U(VM_ROUNDER_BITS + 254u), BITS(rounder)), 23)));
    RETURN(MUL(MUL(HORNER(r, vm_exp_c), VM_EXP_POW2(n_t)), pow2_mk));
}

/* exp for x <= 0 or NaN, and for x >= 0 or NaN: the same bits in fewer operations, where the
 * caller knows the sign (jit, from how x is computed; logistic below). k is a constant, and
 * 2^-k goes into the polynomial's coefficients: every step of Horner's scheme is then the
 * same rounding scaled, so p 2^-k is exact and p 2^-k 2^(n+k) rounds once, as exp's. */
VM_FN(exp_nonpos, VM_F x) {
    LET(xc, SEL(LT(x, F(-104.0f)), F(-104.0f), x));
    VM_EXP_REDUCE(xc, VM_EXP_ROUNDER_NEG, n_t, r);
    RETURN(MUL(HORNER(r, vm_exp_c_m65), VM_EXP_POW2(n_t)));
}

VM_FN(exp_nonneg, VM_F x) {
    LET(xc, SEL(GT(x, F(104.0f)), F(104.0f), x));
    VM_EXP_REDUCE(xc, VM_EXP_ROUNDER_POS, n_t, r);
    RETURN(MUL(HORNER(r, vm_exp_c_p63), VM_EXP_POW2(n_t)));
}

/* e^x - 1 = 2^n (e^r - 1) + 2^n - 1, computed as 2 (s (e^r - 1) + (s - 1/2)) with s =
 * 2^(n-1) so that n = 128 (results just below FLT_MAX, and overflow) needs no special case */
VM_FN(expm1, VM_F x) {
    LET(xc, CALL(clamp, x, F(-30.0f), F(89.0f)));
    VM_REDUCE_LN2(xc, n, ni, r);
    LET(p, FMA(MUL(r, r), HORNER(r, vm_expm1_q), r));
    LET(s, CALL(pow2, SUB(ni, I(1))));
    LET(y, MUL(F(2.0f), FMA(s, p, SUB(s, F(0.5f)))));
    /* below 2^-25, x is the rounded result (and s p would lose bits of denormals; keeps -0) */
    RETURN(SEL(LT(CALL(abs, x), F(0x1p-25f)), x, y));
}

/* ---- tanh, logistic ---- */

/* With a = |x|: a + a z P(z) below 0.55 (z = a^2); above, 1 - 2u / (1 + u) with u = e^(-2a),
 * where an error of u reaches the result damped (by 2u / (1 + u)^2 <= 0.38) and the result,
 * >= 0.5005, has the ulp of [0.5, 1). a is clamped to 9.1 (tanh rounds to 1 from 9.0109): u is
 * normal, 2^n e^(-2s) with n = round(-2a / ln2) and s = a + n ln2/2 in one product (ln2/2's
 * rounding costs u a relative 2e-9 |n|, nothing where u matters), e^(-2s) by exp's polynomial
 * and 2^n added to its exponent bits (n_t's bits shifted by 23: the rounder's drop out).
 * One division; both branches are computed (straight-line lane code), selected at the end. */
VM_FN(tanh, VM_F x) {
    LET(a, CALL(abs, x));
    LET(z, MUL(a, a));
    LET(near0, FMA(MUL(a, z), HORNER(z, vm_tanh_p), a));
    /* an unsigned minimum of the bits (one instruction where the float one takes two): the
     * order of non-negative floats; NaN becomes 9.1 here, but takes near0 below */
    LET(ac, FROMBITS(SEL(GT(BITS(a), U(VM_TANH_CLAMP_BITS)), U(VM_TANH_CLAMP_BITS), BITS(a))));
    LET(n_t, FMA(ac, F(-2.0f * VM_INV_LN2), F(VM_ROUNDER)));
    LET(s, FMA(SUB(n_t, F(VM_ROUNDER)), F(VM_HALF_LN2), ac));
    LET(u, FROMBITS(ADD(BITS(HORNER(s, vm_exp_m2)), SHL(BITS(n_t), 23))));
    LET(far, FMA(F(-2.0f), DIV(u, ADD(F(1.0f), u)), F(1.0f)));
    /* NaN takes near0 (far's exponent sum would turn some NaNs into numbers) */
    RETURN(CALL(copysign, SEL(GE(a, F(0.55f)), far, near0), x));
}

/* 1/u within 1.5%, for corrections a few ulps small: the bits of 1/u estimated by one
 * subtraction, then a Newton step */
VM_FN(rough_recip, VM_F u) {
    LET(r, FROMBITS(SUB(U(0x7ef311c7u), BITS(u))));
    RETURN(MUL(r, FMA(NEG(u), r, F(2.0f))));
}

/* 1 / (1 + e^-x) = 1 / (1 + e) for x >= 0 and e / (1 + e) below, with e = e^-|x|: nothing
 * overflows and tiny results keep their precision. The only rounding after exp's should be
 * the last (a bare f32 quotient reaches 2.2 ulp): with FMA, the quotient y = num / q is
 * corrected for the roundings of q = 1 + e and of the division, by (num - y q - y q_lo) / q;
 * without, it is taken in f64. */
VM_FN(logistic, VM_F x) {
    LET(e, CALL(exp_nonpos, NEG(CALL(abs, x))));
    LET(num, SEL(GE(x, F(0.0f)), F(1.0f), e));
    if (!FUSED) RETURN(D2F(DIV(F2D(num), ADD(D(1.0), F2D(e)))));
    LET(q, ADD(F(1.0f), e));
    LET(q_lo, ADD(SUB(F(1.0f), q), e)); /* 1 + e = q + q_lo exactly (e <= 1) */
    LET(y, DIV(num, q));
    LET(r, FMA(NEG(y), q, num)); /* num - y q, exactly */
    RETURN(FMA(FMA(NEG(y), q_lo, r), CALL(rough_recip, q), y));
}

/* ---- log ---- */

/* log(2^k (1 + f)) for f in [sqrt(1/2) - 1, sqrt(2) - 1]: with s = f / (2 + f),
 * log(1 + f) = 2 atanh(s) = f - s (f - s^2 W(s^2)) */
VM_FN(log_core, VM_F f, VM_I k) {
    LET(s, DIV(f, ADD(F(2.0f), f)));
    LET(z, MUL(s, s));
    LET(t, MUL(s, FMA(NEG(z), HORNER(z, vm_log_w), f)));
    LET(dk, I2F(k));
    RETURN(FMA(dk, F(VM_LN2_HI), ADD(SUB(MUL(dk, F(VM_LN2_LO)), t), f)));
}

/* The bits of u minus those of sqrt(1/2): the exponent k of u's reduction to
 * [sqrt(1/2), sqrt(2)) in the high bits, the mantissa below */
#define VM_SPLIT_LOG(u, k, m)                                                                      \
    LET(k##_bits, SUB(BITS(u), U(VM_SQRT_HALF_BITS)));                                             \
    LET(k, SHR(TOI(k##_bits), 23));                                                                \
    LET(m, FROMBITS(ADD(BAND(k##_bits, U(0x7fffffu)), U(VM_SQRT_HALF_BITS))))

VM_FN(log, VM_F x) {
    LET(tiny, LT(x, F(0x1p-126f))); /* denormals (and zeros, negatives) scaled by 2^23 */
    LET(xs, SEL(tiny, MUL(x, F(0x1p23f)), x));
    VM_SPLIT_LOG(xs, k0, m);
    LET(k, SUB(k0, SEL(tiny, I(23), I(0))));
    LET(y, CALL(log_core, SUB(m, F(1.0f)), k));
    RETURN(SEL(GT(x, F(0.0f)), SEL(EQ(x, F(INFINITY)), x, y),
               SEL(EQ(x, F(0.0f)), F(-INFINITY), F(NAN))));
}

/* ---- erf ---- */

/* x + x Q(x^2) below 1; 1 - e^(-x^2) G(1 / (1 + x)) from 1 to 4, where erf rounds to 1 */
VM_FN(erf, VM_F x) {
    LET(a, CALL(abs, x));
    LET(near0, FMA(a, HORNER(MUL(a, a), vm_erf_q), a));
    LET(ac, SEL(GT(a, F(4.0f)), F(4.0f), a));
    LET(t, SUB(DIV(F(1.0f), ADD(F(1.0f), ac)), F(0.35f)));
    LET(erfc, MUL(CALL(exp_core, NEG(MUL(ac, ac))), HORNER(t, vm_erfc_g)));
    RETURN(CALL(copysign, SEL(LT(a, F(1.0f)), near0, SUB(F(1.0f), erfc)), x));
}
