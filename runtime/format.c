/* NumPy 1.24's str() of arrays and scalars.
 *
 * Floats are printed with the Dragon4 digit generator as NumPy runs it (Steele & White /
 * Burger & Dybvig over exact big integers): "unique" digits stop as soon as they identify the
 * value among its neighbours of the same dtype (boundaries included for even mantissas), a
 * cutoff may round earlier, and a minimum may force more. array2string's layout rules
 * (column widths, scientific switch, wrapping at 75 columns, "..." summaries) are rebuilt on
 * top, in the same order as numpy/core/arrayprint.py so that the outputs agree byte for byte. */
#include "format.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------------------------------- */
/* Growable strings                                                                          */

void ax_strbuf_init(ax_strbuf *s) {
    s->data = NULL;
    s->len = s->cap = 0;
    s->failed = false;
}

void ax_strbuf_free(ax_strbuf *s) {
    free(s->data);
    ax_strbuf_init(s);
}

/* Makes room for `extra` more characters plus the terminator. On allocation failure the
 * buffer keeps what it had, marked failed, and later appends are dropped. */
static bool strbuf_reserve(ax_strbuf *s, size_t extra) {
    if (s->failed) return false;
    if (s->len + extra + 1 <= s->cap) return true;
    size_t cap = s->cap ? s->cap : 64;
    while (cap < s->len + extra + 1) cap *= 2;
    char *p = realloc(s->data, cap);
    if (!p) {
        s->failed = true;
        return false;
    }
    s->data = p;
    s->cap = cap;
    return true;
}

static void strbuf_append_n(ax_strbuf *s, const char *text, size_t n) {
    if (!strbuf_reserve(s, n)) return;
    memcpy(s->data + s->len, text, n);
    s->len += n;
    s->data[s->len] = '\0';
}

void ax_strbuf_append(ax_strbuf *s, const char *text) {
    strbuf_append_n(s, text, strlen(text));
}

void ax_strbuf_appendf(ax_strbuf *s, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0 || !strbuf_reserve(s, (size_t)n)) return;
    va_start(ap, fmt);
    vsnprintf(s->data + s->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    s->len += (size_t)n;
}

static void strbuf_spaces(ax_strbuf *s, size_t n) {
    if (!strbuf_reserve(s, n)) return;
    memset(s->data + s->len, ' ', n);
    s->len += n;
    s->data[s->len] = '\0';
}

/* ---------------------------------------------------------------------------------------- */
/* Unsigned big integers, just what digit generation needs                                  */

/* f64 extremes need about 1090 bits (2^1076 scales, 10^324 multipliers); keep headroom. */
#define BIG_BLOCKS 48

typedef struct {
    int len; /* blocks in use; no leading zero blocks; 0 means zero */
    uint32_t b[BIG_BLOCKS];
} big;

static void big_trim(big *x) {
    while (x->len > 0 && x->b[x->len - 1] == 0) x->len--;
}

static void big_set_u64(big *x, uint64_t v) {
    x->b[0] = (uint32_t)v;
    x->b[1] = (uint32_t)(v >> 32);
    x->len = 2;
    big_trim(x);
}

static void big_pow2(big *x, int e) {
    int blocks = e / 32 + 1;
    memset(x->b, 0, (size_t)blocks * sizeof x->b[0]);
    x->b[e / 32] = 1u << (e % 32);
    x->len = blocks;
}

static void big_shl(big *x, int bits) {
    if (x->len == 0 || bits == 0) return;
    int words = bits / 32, shift = bits % 32;
    int n = x->len + words + 1;
    for (int i = n - 1; i >= 0; i--) {
        int src = i - words;
        uint64_t hi = src >= 0 && src < x->len ? x->b[src] : 0;
        uint64_t lo = src - 1 >= 0 && src - 1 < x->len ? x->b[src - 1] : 0;
        x->b[i] = shift ? (uint32_t)((hi << shift) | (lo >> (32 - shift))) : (uint32_t)hi;
    }
    x->len = n;
    big_trim(x);
}

static void big_mul_small(big *x, uint32_t m) {
    uint64_t carry = 0;
    for (int i = 0; i < x->len; i++) {
        uint64_t p = (uint64_t)x->b[i] * m + carry;
        x->b[i] = (uint32_t)p;
        carry = p >> 32;
    }
    if (carry) x->b[x->len++] = (uint32_t)carry;
}

static void big_mul_pow10(big *x, int e) {
    for (; e >= 9; e -= 9) big_mul_small(x, 1000000000u);
    static const uint32_t small[9] = {1,      10,      100,      1000,     10000,
                                      100000, 1000000, 10000000, 100000000};
    if (e > 0) big_mul_small(x, small[e]);
}

static int big_cmp(const big *x, const big *y) {
    if (x->len != y->len) return x->len < y->len ? -1 : 1;
    for (int i = x->len - 1; i >= 0; i--)
        if (x->b[i] != y->b[i]) return x->b[i] < y->b[i] ? -1 : 1;
    return 0;
}

static void big_add(big *r, const big *x, const big *y) {
    int n = x->len > y->len ? x->len : y->len;
    uint64_t carry = 0;
    for (int i = 0; i < n; i++) {
        uint64_t s = carry + (i < x->len ? x->b[i] : 0) + (i < y->len ? y->b[i] : 0);
        r->b[i] = (uint32_t)s;
        carry = s >> 32;
    }
    r->len = n;
    if (carry) r->b[r->len++] = (uint32_t)carry;
}

/* x -= y, with x >= y. */
static void big_sub(big *x, const big *y) {
    int64_t borrow = 0;
    for (int i = 0; i < x->len; i++) {
        int64_t d = (int64_t)x->b[i] - (i < y->len ? y->b[i] : 0) - borrow;
        borrow = d < 0;
        x->b[i] = (uint32_t)(d + (borrow << 32));
    }
    big_trim(x);
}

/* The next decimal digit: x = x mod scale, returning x div scale (known to be below 10). */
static int big_divmod_digit(big *x, const big *scale) {
    int q = 0;
    while (big_cmp(x, scale) >= 0) {
        big_sub(x, scale);
        q++;
    }
    return q;
}

/* ---------------------------------------------------------------------------------------- */
/* Dragon4 digit generation                                                                 */

/* A finite non-negative float as mantissa * 2^exponent. */
typedef struct {
    uint64_t mantissa;
    int exponent;
    int mantissa_bit;     /* index of the highest set bit of the mantissa */
    bool unequal_margins; /* the gap below is half the gap above (a power of two) */
} float_parts;

typedef enum { CUTOFF_TOTAL, CUTOFF_FRACTION } cutoff_mode;

static int highest_bit(uint64_t v) {
    return 63 - __builtin_clzll(v);
}

static float_parts float_decompose(double v, ax_dtype dtype) {
    float_parts p = {0};
    if (dtype == AX_F32) {
        float f = (float)v;
        uint32_t bits;
        memcpy(&bits, &f, sizeof bits);
        uint32_t frac = bits & 0x7fffff, e = (bits >> 23) & 0xff;
        if (e) {
            p.mantissa = (1u << 23) | frac;
            p.exponent = (int)e - 150;
            p.mantissa_bit = 23;
            p.unequal_margins = e != 1 && frac == 0;
        } else {
            p.mantissa = frac;
            p.exponent = -149;
            p.mantissa_bit = frac ? highest_bit(frac) : 0;
        }
        return p;
    }
    uint64_t bits;
    memcpy(&bits, &v, sizeof bits);
    uint64_t frac = bits & 0xfffffffffffffull, e = (bits >> 52) & 0x7ff;
    if (e) {
        p.mantissa = (1ull << 52) | frac;
        p.exponent = (int)e - 1075;
        p.mantissa_bit = 52;
        p.unequal_margins = e != 1 && frac == 0;
    } else {
        p.mantissa = frac;
        p.exponent = -1074;
        p.mantissa_bit = frac ? highest_bit(frac) : 0;
    }
    return p;
}

typedef struct {
    cutoff_mode mode;
    int cutoff_max; /* round after this many digits (total, or past the point); -1: none */
    int cutoff_min; /* print at least this many, even past uniqueness; -1: none */
} digit_opts;

/* Writes the digits of |value| (no point, no sign) and the decimal exponent of the first
 * digit. Scales so that value = scaled / scale and the margins are half the gaps to the
 * neighbouring floats, then peels digits off until the digits so far (rounded down or up)
 * already identify the value, or a cutoff is reached. */
static int dragon4(const float_parts *fp, const digit_opts *o, char *digits, int cap, int *exp10) {
    if (fp->mantissa == 0) {
        digits[0] = '0';
        *exp10 = 0;
        return 1;
    }
    big scale, value, mlow, mhigh, high_end;
    bool even = (fp->mantissa & 1) == 0;
    int e = fp->exponent, shift = fp->unequal_margins ? 2 : 1;
    big_set_u64(&value, fp->mantissa);
    if (e > 0) {
        big_shl(&value, e + shift);
        big_set_u64(&scale, 1u << shift);
        big_pow2(&mlow, e);
    } else {
        big_shl(&value, shift);
        big_pow2(&scale, -e + shift);
        big_set_u64(&mlow, 1);
    }
    mhigh = mlow;
    if (fp->unequal_margins) big_shl(&mhigh, 1);

    /* k estimates floor(log10(value)) + 1, correct or one too low. A fractional cutoff may
     * raise it: digits before then would all be zero anyway. */
    int k = (int)ceil((double)(fp->mantissa_bit + e) * 0.30102999566398119521 - 0.69);
    if (o->cutoff_max >= 0 && o->mode == CUTOFF_FRACTION && k <= -o->cutoff_max)
        k = -o->cutoff_max + 1;
    if (k > 0) {
        big_mul_pow10(&scale, k);
    } else if (k < 0) {
        big_mul_pow10(&value, -k);
        big_mul_pow10(&mlow, -k);
        big_mul_pow10(&mhigh, -k);
    }
    if (big_cmp(&value, &scale) >= 0) {
        k++;
    } else {
        big_mul_small(&value, 10);
        big_mul_small(&mlow, 10);
        big_mul_small(&mhigh, 10);
    }

    int last_exp = k - cap; /* exponent of the last digit the buffer can take */
    if (o->cutoff_max >= 0) {
        int want = o->mode == CUTOFF_TOTAL ? k - o->cutoff_max : -o->cutoff_max;
        if (want > last_exp) last_exp = want;
    }
    int min_exp = k;
    if (o->cutoff_min >= 0) {
        int want = o->mode == CUTOFF_TOTAL ? k - o->cutoff_min : -o->cutoff_min;
        if (want < min_exp) min_exp = want;
    }
    *exp10 = k - 1;

    int n = 0, digit, digit_exp = k;
    bool low, high;
    for (;;) {
        digit_exp--;
        digit = big_divmod_digit(&value, &scale);
        big_add(&high_end, &value, &mhigh);
        int cl = big_cmp(&value, &mlow), ch = big_cmp(&high_end, &scale);
        low = even ? cl <= 0 : cl < 0;
        high = even ? ch >= 0 : ch > 0;
        if (((low || high) && digit_exp <= min_exp) || digit_exp == last_exp) break;
        digits[n++] = (char)('0' + digit);
        big_mul_small(&value, 10);
        big_mul_small(&mlow, 10);
        big_mul_small(&mhigh, 10);
    }

    /* Round the last digit: down if only that stays within the margin, else to nearest
     * (ties to an even digit). */
    bool round_down = low;
    if (low == high) {
        big_shl(&value, 1);
        int c = big_cmp(&value, &scale);
        round_down = c < 0 || (c == 0 && (digit & 1) == 0);
    }
    if (round_down || digit < 9) {
        digits[n++] = (char)('0' + digit + !round_down);
        return n;
    }
    /* Carry a 9 upwards; all nines become a 1 one decade higher. */
    while (n > 0 && digits[n - 1] == '9') n--;
    if (n == 0) {
        digits[n++] = '1';
        *exp10 += 1;
    } else {
        digits[n - 1]++;
    }
    return n;
}

/* ---------------------------------------------------------------------------------------- */
/* NumPy's format_float_positional / format_float_scientific                               */

typedef enum {
    TRIM_KEEP,     /* 'k': keep trailing zeros and the point */
    TRIM_DOT,      /* '.': drop trailing zeros, keep the point */
    TRIM_ONE_ZERO, /* '0': drop trailing zeros but keep one after the point */
    TRIM_ALL,      /* '-': drop trailing zeros and the point */
} trim_mode;

typedef struct {
    int precision;  /* cutoff (fraction digits, or digits after the first in scientific) */
    int min_digits; /* -1: none */
    trim_mode trim;
    int pad_left;   /* characters left of the point (scientific: incl. sign); -1: none */
    int pad_right;  /* positional only; -1: none */
    int exp_digits; /* scientific only; -1: at least 2 */
} float_opts;

#define FLOAT_CAP 512

/* Removes trailing zeros of the fraction as the trim mode asks; returns the new length. */
static int trim_fraction(char *buf, int pos, int *nfrac, trim_mode trim, bool scientific) {
    if (trim == TRIM_KEEP || *nfrac == 0) return pos;
    while (buf[pos - 1] == '0') {
        pos--;
        (*nfrac)--;
    }
    if (buf[pos - 1] == '.') {
        if (trim == TRIM_ONE_ZERO) {
            buf[pos++] = '0';
            (*nfrac)++;
        } else if (trim == TRIM_ALL && !scientific) {
            pos--;
        }
    }
    return pos;
}

static bool sign_of(double v) {
    return signbit(v) != 0;
}

static int format_nonfinite(char *buf, double v) {
    if (isnan(v)) return sprintf(buf, "nan");
    return sprintf(buf, v < 0 ? "-inf" : "inf");
}

static int format_positional(char *buf, double v, ax_dtype dtype, const float_opts *o) {
    if (!isfinite(v)) return format_nonfinite(buf, v);
    float_parts fp = float_decompose(v, dtype);
    digit_opts d = {CUTOFF_FRACTION, o->precision, o->min_digits};
    char digits[FLOAT_CAP];
    int exp10, pos = 0, nfrac = 0, nwhole;
    int n = dragon4(&fp, &d, digits, 400, &exp10);
    bool neg = sign_of(v);
    if (neg) buf[pos++] = '-';
    if (exp10 >= 0) {
        nwhole = exp10 + 1;
        for (int i = 0; i < nwhole; i++) buf[pos++] = i < n ? digits[i] : '0';
        if (n > nwhole) {
            buf[pos++] = '.';
            for (int i = nwhole; i < n; i++) buf[pos++] = digits[i];
            nfrac = n - nwhole;
        }
    } else {
        nwhole = 1;
        buf[pos++] = '0';
        buf[pos++] = '.';
        for (int i = 0; i < -(exp10 + 1); i++) buf[pos++] = '0';
        memcpy(buf + pos, digits, (size_t)n);
        pos += n;
        nfrac = n - (exp10 + 1);
    }
    if (o->trim != TRIM_ALL && nfrac == 0) buf[pos++] = '.';
    int want_frac = o->min_digits < 0 ? 0 : o->min_digits;
    if (o->trim == TRIM_ONE_ZERO && nfrac == 0) {
        buf[pos++] = '0';
        nfrac++;
    } else if (o->trim == TRIM_KEEP) {
        for (; nfrac < want_frac; nfrac++) buf[pos++] = '0';
    }
    pos = trim_fraction(buf, pos, &nfrac, o->trim, false);
    if (o->pad_right >= nfrac) {
        if (o->trim == TRIM_ALL && nfrac == 0) buf[pos++] = ' ';
        for (int i = nfrac; i < o->pad_right; i++) buf[pos++] = ' ';
    }
    int left = nwhole + neg;
    if (o->pad_left > left) {
        int shift = o->pad_left - left;
        memmove(buf + shift, buf, (size_t)pos);
        memset(buf, ' ', (size_t)shift);
        pos += shift;
    }
    buf[pos] = '\0';
    return pos;
}

static int format_scientific(char *buf, double v, ax_dtype dtype, const float_opts *o) {
    if (!isfinite(v)) return format_nonfinite(buf, v);
    float_parts fp = float_decompose(v, dtype);
    digit_opts d = {CUTOFF_TOTAL, o->precision < 0 ? -1 : o->precision + 1,
                    o->min_digits < 0 ? -1 : o->min_digits + 1};
    char digits[FLOAT_CAP];
    int exp10, pos = 0;
    int n = dragon4(&fp, &d, digits, 400, &exp10);
    bool neg = sign_of(v);
    for (int i = 1 + neg; i < o->pad_left; i++) buf[pos++] = ' ';
    if (neg) buf[pos++] = '-';
    buf[pos++] = digits[0];
    int nfrac = n - 1;
    if (nfrac > 0) {
        buf[pos++] = '.';
        memcpy(buf + pos, digits + 1, (size_t)nfrac);
        pos += nfrac;
    }
    if (o->trim != TRIM_ALL && nfrac == 0) buf[pos++] = '.';
    int want_frac = o->min_digits < 0 ? 0 : o->min_digits;
    if (o->trim == TRIM_ONE_ZERO && nfrac == 0) {
        buf[pos++] = '0';
        nfrac++;
    } else if (o->trim == TRIM_KEEP) {
        for (; nfrac < want_frac; nfrac++) buf[pos++] = '0';
    }
    pos = trim_fraction(buf, pos, &nfrac, o->trim, true);
    int exp_digits = o->exp_digits < 0 ? 2 : o->exp_digits > 5 ? 5 : o->exp_digits;
    pos += sprintf(buf + pos, "e%c%0*d", exp10 < 0 ? '-' : '+', exp_digits, abs(exp10));
    return pos;
}

/* str(np.float32(v)) / str(np.float64(v)): positional for 1e-4 <= |v| < 1e16 (and 0, nan),
 * else scientific, each with the fewest digits that identify the value. */
static int format_float_scalar(char *buf, double v, ax_dtype dtype) {
    double a = fabs(dtype == AX_F32 ? (double)(float)v : v);
    bool positional = isnan(v) || a == 0 || (a < 1e16 && a >= 1e-4);
    float_opts o = {-1, -1, positional ? TRIM_ONE_ZERO : TRIM_ALL, -1, -1, -1};
    return positional ? format_positional(buf, v, dtype, &o) : format_scientific(buf, v, dtype, &o);
}

void ax_format_float_shortest(ax_strbuf *out, double v, ax_dtype dtype) {
    char buf[FLOAT_CAP];
    format_float_scalar(buf, v, dtype == AX_F32 ? AX_F32 : AX_F64);
    ax_strbuf_append(out, buf);
}

/* ---------------------------------------------------------------------------------------- */
/* Element formats: one per array, fitted to the elements that will be shown                */

typedef struct {
    ax_dtype dtype;
    const char *data;
    size_t esize;
    /* floats (FloatingFormat) */
    bool exp_format;
    float_opts fo;
    /* ints (IntegerFormat) */
    int int_width;
} elem_format;

/* NumPy's print options: edgeitems, threshold, linewidth. */
#define EDGE_ITEMS 3
#define THRESHOLD  1000
#define LINE_WIDTH 75

/* Positions a summary keeps along an axis: all of them, or the first and last 3. */
static int64_t shown_count(int64_t n, bool summarize) {
    return summarize && n > 2 * EDGE_ITEMS ? 2 * EDGE_ITEMS : n;
}

static int64_t shown_index(int64_t n, bool summarize, int64_t j) {
    return summarize && n > 2 * EDGE_ITEMS && j >= EDGE_ITEMS ? n - 2 * EDGE_ITEMS + j : j;
}

/* Element offsets (in elements from the data pointer) of every shown element. */
static int64_t *shown_offsets(const ax_array *x, bool summarize, int64_t *count) {
    int64_t total = 1;
    for (int d = 0; d < x->ndim; d++) total *= shown_count(x->shape[d], summarize);
    int64_t *offs = malloc((size_t)(total ? total : 1) * sizeof *offs);
    if (!offs) return NULL;
    int64_t idx[AX_MAX_RANK] = {0};
    for (int64_t i = 0; i < total; i++) {
        int64_t off = 0;
        for (int d = 0; d < x->ndim; d++)
            off += shown_index(x->shape[d], summarize, idx[d]) * x->strides[d];
        offs[i] = off;
        for (int d = x->ndim - 1; d >= 0; d--) {
            if (++idx[d] < shown_count(x->shape[d], summarize)) break;
            idx[d] = 0;
        }
    }
    *count = total;
    return offs;
}

static double elem_f64(const elem_format *f, int64_t off) {
    const char *p = f->data + off * (int64_t)f->esize;
    if (f->dtype == AX_F32) return *(const float *)p;
    if (f->dtype == AX_F64) return *(const double *)p;
    int64_t i;
    ax_convert_element(AX_I64, &i, f->dtype, p);
    return (double)i;
}

static int64_t elem_i64(const elem_format *f, int64_t off) {
    int64_t i;
    ax_convert_element(AX_I64, &i, f->dtype, f->data + off * (int64_t)f->esize);
    return i;
}

/* Whether NumPy switches to scientific notation, with its comparisons done in the array's
 * dtype where NumPy does them there (the max/min ratio of float32 arrays). */
static bool wants_exp_format(double max_abs, double min_abs, ax_dtype dtype) {
    if (max_abs >= 1e8 || min_abs < 1e-4) return true;
    double ratio = dtype == AX_F32 ? (double)((float)max_abs / (float)min_abs) : max_abs / min_abs;
    return ratio > 1000.0;
}

/* Widths of the integer part and the fraction (and exponent) over the shown finite values,
 * as FloatingFormat.fillFormat measures them. */
static void fit_float_format(elem_format *f, const int64_t *offs, int64_t n) {
    double max_abs = 0, min_abs = INFINITY;
    bool any_finite = false, any_nonfinite = false, neg_inf = false;
    for (int64_t i = 0; i < n; i++) {
        double v = elem_f64(f, offs[i]);
        if (!isfinite(v)) {
            any_nonfinite = true;
            neg_inf |= isinf(v) && v < 0;
            continue;
        }
        any_finite = true;
        double a = fabs(v);
        if (a == 0) continue;
        if (a > max_abs) max_abs = a;
        if (a < min_abs) min_abs = a;
    }
    f->exp_format = max_abs > 0 && wants_exp_format(max_abs, min_abs, f->dtype);
    f->fo = (float_opts){8, -1, TRIM_DOT, 0, 0, -1};
    if (any_finite) {
        int pad_left = 0, frac = 0, exp_size = 0;
        char buf[FLOAT_CAP];
        for (int64_t i = 0; i < n; i++) {
            double v = elem_f64(f, offs[i]);
            if (!isfinite(v)) continue;
            float_opts first = {8, -1, TRIM_DOT, -1, -1, -1};
            int len = f->exp_format ? format_scientific(buf, v, f->dtype, &first)
                                    : format_positional(buf, v, f->dtype, &first);
            char *e = f->exp_format ? strchr(buf, 'e') : buf + len;
            char *dot = strchr(buf, '.');
            if ((int)(dot - buf) > pad_left) pad_left = (int)(dot - buf);
            if ((int)(e - dot - 1) > frac) frac = (int)(e - dot - 1);
            if (f->exp_format && (int)strlen(e + 2) > exp_size) exp_size = (int)strlen(e + 2);
        }
        if (f->exp_format) {
            f->fo = (float_opts){frac, frac, TRIM_KEEP, pad_left, exp_size + 2 + frac, exp_size};
        } else {
            f->fo = (float_opts){8, 0, TRIM_DOT, pad_left, frac, -1};
        }
    }
    if (any_nonfinite) {
        int offset = f->fo.pad_right + 1;
        int need = 3 + neg_inf - offset;
        if (need > f->fo.pad_left) f->fo.pad_left = need;
    }
}

static void fit_int_format(elem_format *f, const int64_t *offs, int64_t n) {
    int64_t lo = 0, hi = 0;
    for (int64_t i = 0; i < n; i++) {
        int64_t v = elem_i64(f, offs[i]);
        if (i == 0 || v < lo) lo = v;
        if (i == 0 || v > hi) hi = v;
    }
    char a[32], b[32];
    int la = snprintf(a, sizeof a, "%lld", (long long)lo);
    int lb = snprintf(b, sizeof b, "%lld", (long long)hi);
    f->int_width = la > lb ? la : lb;
}

static bool elem_format_init(elem_format *f, const ax_array *x, bool summarize) {
    f->dtype = x->dtype;
    f->data = ax_array_data(x);
    f->esize = ax_dtype_size(x->dtype);
    if (x->dtype == AX_BOOL) return true;
    int64_t n;
    int64_t *offs = shown_offsets(x, summarize, &n);
    if (!offs) return false;
    if (ax_dtype_is_float(x->dtype))
        fit_float_format(f, offs, n);
    else
        fit_int_format(f, offs, n);
    free(offs);
    return true;
}

/* One element in its column format (the `format_function(a[index])` of arrayprint). */
static int format_element(const elem_format *f, int64_t off, char *buf) {
    if (f->dtype == AX_BOOL) return sprintf(buf, "%s", elem_i64(f, off) ? " True" : "False");
    if (!ax_dtype_is_float(f->dtype))
        return sprintf(buf, "%*lld", f->int_width, (long long)elem_i64(f, off));
    double v = elem_f64(f, off);
    if (!isfinite(v)) {
        char tmp[8];
        format_nonfinite(tmp, v);
        return sprintf(buf, "%*s", f->fo.pad_left + f->fo.pad_right + 1, tmp);
    }
    return f->exp_format ? format_scientific(buf, v, f->dtype, &f->fo)
                         : format_positional(buf, v, f->dtype, &f->fo);
}

/* ---------------------------------------------------------------------------------------- */
/* Layout: arrayprint._formatArray                                                          */

typedef struct {
    const ax_array *x;
    const elem_format *f;
    bool summarize;
} layout;

/* _extendLine: starts a new line (indented by `indent`) when the word would pass `width`,
 * unless the line holds nothing but its indent. */
static void extend_line(ax_strbuf *s, ax_strbuf *line, const char *word, size_t wlen, int width,
                        int indent) {
    if (line->len + wlen > (size_t)width && line->len > (size_t)indent) {
        size_t keep = line->len;
        while (keep > 0 && line->data[keep - 1] == ' ') keep--;
        strbuf_append_n(s, line->data, keep);
        strbuf_append_n(s, "\n", 1);
        line->len = 0;
        strbuf_spaces(line, (size_t)indent);
    }
    strbuf_append_n(line, word, wlen);
}

static void format_rec(const layout *L, int axis, int64_t offset, int indent, int width,
                       ax_strbuf *out);

/* Index i of the axis, counting from the end when negative (as the recurser does). */
static int64_t axis_offset(const layout *L, int axis, int64_t offset, int64_t i) {
    int64_t n = L->x->shape[axis];
    return offset + (i < 0 ? n + i : i) * L->x->strides[axis];
}

static void format_row(const layout *L, int axis, int64_t offset, int indent, int width,
                       bool summary, ax_strbuf *s) {
    int64_t n = L->x->shape[axis];
    int64_t leading = summary ? EDGE_ITEMS : 0, trailing = summary ? EDGE_ITEMS : n;
    int elem_width = width - 1; /* room for the ']' */
    ax_strbuf line, word;
    ax_strbuf_init(&line);
    ax_strbuf_init(&word);
    strbuf_spaces(&line, (size_t)indent);
    for (int64_t k = 0; k < leading + trailing; k++) {
        int64_t i = k < leading ? k : -(trailing - (k - leading));
        if (summary && k == leading) {
            extend_line(s, &line, "...", 3, elem_width, indent);
            strbuf_append_n(&line, " ", 1);
        }
        word.len = 0;
        format_rec(L, axis + 1, axis_offset(L, axis, offset, i), indent + 1, width - 1, &word);
        extend_line(s, &line, word.data ? word.data : "", word.len, elem_width, indent);
        if (k + 1 < leading + trailing) strbuf_append_n(&line, " ", 1);
    }
    strbuf_append_n(s, line.data ? line.data : "", line.len);
    s->failed |= line.failed || word.failed;
    ax_strbuf_free(&line);
    ax_strbuf_free(&word);
}

static void format_block(const layout *L, int axis, int64_t offset, int indent, int width,
                         bool summary, ax_strbuf *s) {
    int64_t n = L->x->shape[axis];
    int64_t leading = summary ? EDGE_ITEMS : 0, trailing = summary ? EDGE_ITEMS : n;
    int newlines = L->x->ndim - axis - 1;
    for (int64_t k = 0; k < leading + trailing; k++) {
        int64_t i = k < leading ? k : -(trailing - (k - leading));
        if (summary && k == leading) {
            strbuf_spaces(s, (size_t)indent);
            strbuf_append_n(s, "...", 3);
            for (int j = 0; j < newlines; j++) strbuf_append_n(s, "\n", 1);
        }
        strbuf_spaces(s, (size_t)indent);
        format_rec(L, axis + 1, axis_offset(L, axis, offset, i), indent + 1, width - 1, s);
        if (k + 1 < leading + trailing)
            for (int j = 0; j < newlines; j++) strbuf_append_n(s, "\n", 1);
    }
}

/* Appends the text of the sub-array at `axis` (starting at element `offset`) to out. The
 * sub-array text starts after `indent` columns on its first line too; that indent is
 * replaced by the opening bracket. */
static void format_rec(const layout *L, int axis, int64_t offset, int indent, int width,
                       ax_strbuf *out) {
    if (axis == L->x->ndim) {
        char buf[FLOAT_CAP];
        int n = format_element(L->f, offset, buf);
        strbuf_append_n(out, buf, (size_t)n);
        return;
    }
    bool summary = L->summarize && L->x->shape[axis] > 2 * EDGE_ITEMS;
    ax_strbuf s;
    ax_strbuf_init(&s);
    if (axis == L->x->ndim - 1)
        format_row(L, axis, offset, indent, width, summary, &s);
    else
        format_block(L, axis, offset, indent, width, summary, &s);
    strbuf_append_n(out, "[", 1);
    if (s.len > (size_t)indent) strbuf_append_n(out, s.data + indent, s.len - (size_t)indent);
    strbuf_append_n(out, "]", 1);
    out->failed |= s.failed;
    ax_strbuf_free(&s);
}

static void format_rank0(ax_strbuf *out, const ax_array *x) {
    if (ax_dtype_is_float(x->dtype)) {
        ax_format_float_shortest(out, ax_array_get_f64(x, 0), x->dtype);
    } else if (x->dtype == AX_BOOL) {
        ax_strbuf_append(out, ax_array_get_i64(x, 0) ? "True" : "False");
    } else {
        ax_strbuf_appendf(out, "%lld", (long long)ax_array_get_i64(x, 0));
    }
}

void ax_format_array(ax_strbuf *out, const ax_array *x) {
    if (!x->buf) { /* an abstract tracer: only its type is known, as JAX prints it */
        char t[160];
        ax_type_format(t, sizeof t, x->dtype, x->ndim, x->shape);
        ax_strbuf_appendf(out, "Traced<ShapedArray(%s%s)>", ax_dtype_name(x->dtype),
                          strchr(t, '['));
        return;
    }
    if (x->ndim == 0) {
        format_rank0(out, x);
        return;
    }
    if (x->size == 0) {
        ax_strbuf_append(out, "[]");
        return;
    }
    bool summarize = x->size > THRESHOLD;
    elem_format f;
    if (!elem_format_init(&f, x, summarize)) {
        out->failed = true;
        return;
    }
    layout L = {x, &f, summarize};
    format_rec(&L, 0, 0, 1, LINE_WIDTH, out);
}

void ax_format_scalar(ax_strbuf *out, const ax_array *x) {
    /* NumPy 1.24 prints a scalar's repr inside containers, which is its str ("2.0"). */
    ax_format_array(out, x);
}
