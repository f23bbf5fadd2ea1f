/*
 * The scanner's lexing, which qk_scan_run, qk_scan_qrels and qk_split share: numbers (ranks, scores,
 * grades), the UTF-8 check with the id rule's characters, and the split of a line into fields.
 */
#include <float.h>
#include <math.h>
#include <string.h>

#include "qkscan.h"

/* The longest query or document id a clean file holds (qrelkit.formats.trec.MAX_ID_BYTES). */
#define QK_MAX_ID 512

/* ------------------------------------------------------------------------------------------- numbers */

static const double POW10[23] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,  1e9,  1e10, 1e11,
                                 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

static int is_digit(uint8_t c) { return c >= '0' && c <= '9'; }

#if (defined(__x86_64__) || defined(__i386__)) && LDBL_MANT_DIG == 64
#define QK_EXTENDED 1
/* 10^0..10^27 in x87's extended precision, each exact (5^27 < 2^64). */
static const long double POW10L[28] = {1e0L,  1e1L,  1e2L,  1e3L,  1e4L,  1e5L,  1e6L,  1e7L,  1e8L,  1e9L,
                                       1e10L, 1e11L, 1e12L, 1e13L, 1e14L, 1e15L, 1e16L, 1e17L, 1e18L, 1e19L,
                                       1e20L, 1e21L, 1e22L, 1e23L, 1e24L, 1e25L, 1e26L, 1e27L};

/* Whether long double arithmetic rounds to its full 64-bit significand here (x87's precision control can
 * be set to 53 bits, which would round twice without showing it in the check below). */
static int extended_precision(void) {
    volatile long double one = 1.0L, tiny = LDBL_EPSILON;
    return one + tiny != one;
}

/* mantissa (< 2^64, exact in 64 bits) times 10^scale (|scale| <= 27, exact) correctly rounded to a double,
 * or 0 when that cannot be told from one extended-precision operation: the operation rounds once to 64
 * bits (error at most half a unit of the 64th bit), and rounding that to 53 bits gives the correctly
 * rounded double unless the 11 bits dropped lie within one unit of the halfway pattern 10000000000,
 * where the exact value may sit on the other side of a double's midpoint (strtod decides those). */
static int extended_value(uint64_t mantissa, int64_t scale, double *out) {
    long double x = scale < 0 ? (long double)mantissa / POW10L[-scale] : (long double)mantissa * POW10L[scale];
    uint64_t significand;
    memcpy(&significand, &x, sizeof significand); /* x87's layout: the 64-bit significand comes first */
    if ((uint32_t)(significand & 0x7FF) - 0x3FFu <= 2u) return 0;
    *out = (double)x;
    return 1;
}
#endif

/* Past the digits at p (before e), each added to *mantissa and counted in *significant once a nonzero
 * digit has been seen (leading zeros are not significant). Past 19 significant digits *mantissa wraps, and
 * is not used: such numbers go to strtod. */
static inline const uint8_t *digit_run(const uint8_t *p, const uint8_t *e, uint64_t *mantissa,
                                       int64_t *significant) {
    if (*significant == 0)
        while (p < e && *p == '0') p++;
    const uint8_t *first = p;
    uint64_t m = *mantissa;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    for (uint64_t v; e - p >= 8; p += 8) { /* eight digits at a time (SWAR), the first in the low byte */
        memcpy(&v, p, 8);
        if (((v + 0x4646464646464646ULL) | (v - 0x3030303030303030ULL)) & 0x8080808080808080ULL) break;
        v -= 0x3030303030303030ULL;
        v = v * 10 + (v >> 8); /* pairs of digits */
        v = (((v & 0x000000FF000000FFULL) * (100 + (1000000ULL << 32))) +
             (((v >> 16) & 0x000000FF000000FFULL) * (1 + (10000ULL << 32)))) >> 32;
        m = m * 100000000ULL + (uint32_t)v;
    }
#endif
    for (; p < e && is_digit(*p); p++) m = m * 10 + (uint64_t)(*p - '0');
    *mantissa = m;
    *significant += p - first;
    return p;
}

/* -?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][-+]?[0-9]+)? read into a correctly rounded double (-0.0 kept as
 * -0.0), as the robust reader reads it; 0 when refused. `.5` and `5.` are taken, so a run written with
 * them takes the same path, and gives the same floats, whatever else is in the file. */
int parse_score(const uint8_t *s, int64_t n, double *out) {
    const uint8_t *p = s, *e = s + n;
    int negative = 0;
    if (p < e && *p == '-') {
        negative = 1;
        p++;
    }
    uint64_t mantissa = 0; /* the significant digits, exact while there are at most 19 of them */
    int64_t significant = 0, fraction = 0;
    const uint8_t *digits = p;
    p = digit_run(p, e, &mantissa, &significant);
    int integer_digits = p != digits;
    if (p < e && *p == '.') {
        p++;
        digits = p;
        p = digit_run(p, e, &mantissa, &significant);
        fraction = p - digits;
        if (p == digits && !integer_digits) return 0; /* "." alone */
    } else if (!integer_digits) {
        return 0;
    }
    int64_t exponent = 0;
    if (p < e && (*p == 'e' || *p == 'E')) {
        p++;
        int exp_negative = 0;
        if (p < e && (*p == '-' || *p == '+')) {
            exp_negative = *p == '-';
            p++;
        }
        digits = p;
        for (; p < e && is_digit(*p); p++) {
            if (exponent < 100000) exponent = exponent * 10 + (*p - '0');
        }
        if (p == digits) return 0;
        if (exp_negative) exponent = -exponent;
    }
    if (p != e) return 0;
    double value;
    int64_t scale = exponent - fraction;
    if (significant == 0) {
        value = 0.0;
    } else if (significant <= 15 && scale >= -22 && scale <= 22) {
        /* the mantissa (< 10^15 < 2^53) and the power of ten are exact: one rounding */
        value = scale < 0 ? (double)mantissa / POW10[-scale] : (double)mantissa * POW10[scale];
#ifdef QK_EXTENDED
    } else if (significant <= 19 && scale >= -27 && scale <= 27 && extended_precision() &&
               extended_value(mantissa, scale, &value)) {
        /* full-precision scores (17 significant digits, repr of a float64): one extended operation */
#endif
    } else {
        char text[80];
        if (n >= (int64_t)sizeof text) return 0;
        memcpy(text, s, (size_t)n);
        text[n] = 0;
        char *end;
        value = strtod(text, &end);
        if (end != text + n) return 0; /* a decimal point the locale does not read */
        value = fabs(value); /* the sign is applied below, -0.0 included */
    }
    if (!isfinite(value)) return 0;
    *out = negative ? -value : value;
    return 1;
}

/* -?[0-9]{1,18} */
int parse_rank(const uint8_t *s, int64_t n, int64_t *out) {
    int negative = s[0] == '-';
    int64_t digits = n - negative;
    if (digits < 1 || digits > 18) return 0;
    int64_t v = 0;
    for (int64_t i = negative; i < n; i++) {
        if (!is_digit(s[i])) return 0;
        v = v * 10 + (s[i] - '0');
    }
    *out = negative ? -v : v;
    return 1;
}

/* --------------------------------------------------------------------------------------------- UTF-8 */

/* Whether the id rule (qrelkit.naming.ID_PATTERN) forbids the code point c, above ASCII: Unicode's
 * White_Space and the C1 controls (tests/test_reader_errors.py compares this with the rule for every
 * character of the Basic Multilingual Plane; nothing above it is forbidden). */
static int forbidden_cp(uint32_t c) {
    return c <= 0xA0 || c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 ||
           c == 0x202F || c == 0x205F || c == 0x3000;
}

/* Valid UTF-8 holding no character (above ASCII) that the id rule forbids. */
int utf8_valid(const uint8_t *s, int64_t n) {
    int64_t i = 0;
    while (i < n) {
        uint8_t c = s[i];
        if (c < 0x80) {
            i++;
        } else if (c >= 0xC2 && c <= 0xDF) {
            if (i + 1 >= n || (s[i + 1] & 0xC0) != 0x80) return 0;
            if (c == 0xC2 && s[i + 1] <= 0xA0) return 0; /* U+0080-U+00A0: C1 controls, no-break space */
            i += 2;
        } else if (c >= 0xE0 && c <= 0xEF) {
            if (i + 2 >= n || (s[i + 1] & 0xC0) != 0x80 || (s[i + 2] & 0xC0) != 0x80) return 0;
            if (c == 0xE0 && s[i + 1] < 0xA0) return 0;  /* overlong */
            if (c == 0xED && s[i + 1] >= 0xA0) return 0; /* surrogate */
            if ((c == 0xE1 || c == 0xE2 || c == 0xE3) &&
                forbidden_cp(((uint32_t)(c & 0x0F) << 12) | ((uint32_t)(s[i + 1] & 0x3F) << 6) | (s[i + 2] & 0x3F)))
                return 0;
            i += 3;
        } else if (c >= 0xF0 && c <= 0xF4) {
            if (i + 3 >= n || (s[i + 1] & 0xC0) != 0x80 || (s[i + 2] & 0xC0) != 0x80 ||
                (s[i + 3] & 0xC0) != 0x80)
                return 0;
            if (c == 0xF0 && s[i + 1] < 0x90) return 0;  /* overlong */
            if (c == 0xF4 && s[i + 1] >= 0x90) return 0; /* above U+10FFFF */
            i += 4;
        } else {
            return 0;
        }
    }
    return 1;
}

/* --------------------------------------------------------------------------------------------- lines */

/* Each byte's class (qkscan.h): B_FIELD unless listed. */
const uint8_t BYTE_CLASS[256] = {
    B_BAD, B_BAD, B_BAD, B_BAD, B_BAD, B_BAD, B_BAD, B_BAD, B_BAD, B_SPACE, B_LF, B_SPACE, B_SPACE, B_CR,
    B_BAD, B_BAD, B_BAD, B_BAD, B_BAD, B_BAD, B_BAD, B_BAD, B_BAD, B_BAD, B_BAD, B_BAD, B_BAD, B_BAD, B_BAD,
    B_BAD, B_BAD, B_BAD, B_SPACE, [0x7F] = B_BAD};

/* Past whitespace at buf[p] (a carriage return counts only right before '\n'). */
static inline int64_t skip_space(const uint8_t *buf, int64_t p) {
    for (;;) {
        uint8_t k = BYTE_CLASS[buf[p]];
        if (k == B_SPACE || (k == B_CR && buf[p + 1] == '\n'))
            p++;
        else
            return p;
    }
}

/* Past the rest of a line at buf[*at] (to its '\n'), its bytes checked as any field's and ORed into *high:
 * 0 for a byte of class B_BAD or a carriage return not before '\n' (the robust reader ends a line there). */
static inline int skip_rest(const uint8_t *buf, int64_t *at, uint8_t *high) {
    int64_t p = *at;
    uint8_t h = *high;
    for (uint8_t c; (c = buf[p]) != '\n'; p++) {
        uint8_t k = BYTE_CLASS[c];
        if (k == B_BAD || (k == B_CR && buf[p + 1] != '\n')) return 0;
        h |= c;
    }
    *at = p;
    *high = h;
    return 1;
}

/* Split the line starting at buf[*at] into `fields` fields separated by runs of whitespace (leading and
 * trailing whitespace allowed) and ended by '\n' or "\r\n": their offsets into start[] and lengths into
 * length[], *at moved past the line, bytes ORed into *high. Returns 1 for a row, 2 for a blank line
 * (nothing but whitespace, or a comment line under SPLIT_COMMENTS), 3 for a row with more fields (under
 * SPLIT_TRAILING: the rest of the line is checked byte by byte as fields are, and skipped), 0 for another
 * number of fields, a byte of class B_BAD or a carriage return not before '\n', or an id (fields 0 and 2)
 * longer than QK_MAX_ID bytes, which the robust reader refuses. The caller guarantees that buf ends with
 * '\n'. */
int split_line(const uint8_t *buf, int64_t *at, int fields, int flags, int64_t *start, int64_t *length,
               uint8_t *high) {
    int64_t p = *at;
    uint8_t h = *high;
    if ((flags & SPLIT_COMMENTS) && buf[p] == '#') {
        if (!skip_rest(buf, &p, &h)) return 0;
        *at = p + 1;
        *high = h;
        return 2;
    }
    p = skip_space(buf, p);
    if (buf[p] == '\n') {
        *at = p + 1;
        return 2;
    }
    for (int f = 0; f < fields; f++) {
        int64_t s = p;
        uint8_t c;
        while (BYTE_CLASS[c = buf[p]] == B_FIELD) {
            h |= c;
            p++;
        }
        if (p == s) return 0;
        if ((f == 0 || f == 2) && p - s > QK_MAX_ID) return 0;
        start[f] = s;
        length[f] = p - s;
        if (c == ' ' && BYTE_CLASS[buf[p + 1]] == B_FIELD)
            p++; /* a single space and the next field: the clean layout */
        else
            p = skip_space(buf, p);
        if (f < fields - 1) {
            if (buf[p] == '\n') return 0; /* too few fields */
        } else if (buf[p] != '\n') {
            /* fields after the last, which the robust reader ignores in a run: their bytes are checked as
             * any field's, and the line is counted as one with trailing fields */
            if (!(flags & SPLIT_TRAILING) || !skip_rest(buf, &p, &h)) return 0;
            *at = p + 1;
            *high = h;
            return 3;
        }
    }
    *at = p + 1;
    *high = h;
    return 1;
}
