/*
 * The small path's split of clean TREC text into fields (qk_split, qk_gather, qk_words), and where a block
 * of a file grouped by query may be cut (qk_group_start, for qrelkit/formats/trec/blocks.py).
 */
#include <string.h>

#include "qkscan.h"

/*
 * Split clean TREC text into its fields for the small-input path (qrelkit/engine/small.py): buf[0..len)
 * holds at most `lines` lines of `fields` fields, split as split_line splits them (blank lines skipped),
 * valid UTF-8 without a character the id rule forbids. starts[] and ends[] receive each field's offsets,
 * row by row. Field `number_field` is read into number_f (a score, number_is_float) or number_i (an
 * integer); field `integer_field`, if >= 0, must be an integer; field `same_field`, if >= 0, must hold the
 * same bytes on every line. With `trailing` set (a run), fields after the last are allowed and ignored,
 * and *trailing counts the lines that hold them; with `comments`, a line whose first byte is '#' is
 * skipped. Returns the number of rows, or -1 when anything differs (the caller then leaves the input to
 * the columnar path).
 */
int64_t qk_split(const uint8_t *buf, int64_t len, int32_t fields, int64_t lines, int64_t *starts, int64_t *ends,
                 int32_t number_field, int32_t number_is_float, double *number_f, int64_t *number_i,
                 int32_t integer_field, int32_t same_field, int64_t *trailing, int32_t comments) {
    if (len <= 0 || buf[len - 1] != '\n' || fields < 1) return -1;
    uint8_t high = 0;
    int64_t p = 0, line = 0, same_start = -1, same_len = 0;
    while (p < len) {
        if (line >= lines) return -1;
        int64_t *st = starts + line * fields, *en = ends + line * fields;
        int split = (trailing != NULL ? SPLIT_TRAILING : 0) | (comments ? SPLIT_COMMENTS : 0);
        int kind = split_line(buf, &p, fields, split, st, en, &high);
        if (kind == 2) continue; /* a blank line */
        if (!kind) return -1;
        if (kind == 3) ++*trailing;
        for (int f = 0; f < fields; f++) en[f] += st[f]; /* lengths to ends */
        int64_t n = en[number_field] - st[number_field];
        if (number_is_float) {
            if (!parse_score(buf + st[number_field], n, &number_f[line])) return -1;
        } else if (!parse_rank(buf + st[number_field], n, &number_i[line])) {
            return -1;
        }
        if (integer_field >= 0) {
            int64_t unused;
            if (!parse_rank(buf + st[integer_field], en[integer_field] - st[integer_field], &unused)) return -1;
        }
        if (same_field >= 0) {
            int64_t s = st[same_field], m = en[same_field] - s;
            if (same_start < 0) {
                same_start = s;
                same_len = m;
            } else if (m != same_len || memcmp(buf + s, buf + same_start, (size_t)m) != 0) {
                return -1;
            }
        }
        line++;
    }
    if ((high & 0x80) && !utf8_valid(buf, len)) return -1;
    return line;
}

/* Copy token i, buf[starts[i]..ends[i]), into row i of out: n rows of width bytes, zeroed by the caller,
 * so shorter tokens are padded with zeros (the small path's fixed-width ids). */
void qk_gather(const uint8_t *buf, const int64_t *starts, const int64_t *ends, int64_t n, int64_t width,
               uint8_t *out) {
    for (int64_t i = 0; i < n; i++) {
        int64_t length = ends[i] - starts[i];
        if (length > width) length = width;
        if (length > 0) memcpy(out + i * width, buf + starts[i], (size_t)length);
    }
}

/* Token i, buf[starts[i]..ends[i]), as big-endian 64-bit words in row i of out (n rows of `width` words,
 * zeroed by the caller: shorter tokens are padded with zero words and zero bytes), and hash[i] the 64-bit
 * FNV-style hash of its own words (not the padding's) that the small path's numpy fallback computes
 * (qrelkit/formats/trec/small.py, _words): h = 0xCBF29CE484222325, then per word h = ((h ^ w) * FNV prime)
 * with h ^= h >> 29. */
void qk_words(const uint8_t *buf, const int64_t *starts, const int64_t *ends, int64_t n, int64_t width,
              uint64_t *out, uint64_t *hash) {
    for (int64_t i = 0; i < n; i++) {
        const uint8_t *s = buf + starts[i];
        int64_t length = ends[i] - starts[i];
        if (length > width * 8) length = width * 8;
        int64_t words = length > 0 ? (length + 7) / 8 : 1;
        uint64_t h = 0xCBF29CE484222325ULL, *row = out + i * width;
        for (int64_t j = 0; j < words; j++) {
            uint64_t w = 0;
            int64_t k0 = j * 8;
            if (k0 + 8 <= length) {
#if defined(__GNUC__) && defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
                memcpy(&w, s + k0, 8); /* a whole word: one load, swapped */
                w = __builtin_bswap64(w);
#else
                for (int k = 0; k < 8; k++) w = (w << 8) | s[k0 + k];
#endif
            } else {
                for (int k = 0; k < 8; k++) w = (w << 8) | (k0 + k < length ? s[k0 + k] : 0);
            }
            row[j] = w;
            h = (h ^ w) * 0x100000001B3ULL;
            h ^= h >> 29;
        }
        hash[i] = h;
    }
}

/* The first field of the line buf[s..e) (e: its '\n'), past leading whitespace: 0 for a blank line. */
static int first_field(const uint8_t *buf, int64_t s, int64_t e, int64_t *start, int64_t *length) {
    while (s < e && (BYTE_CLASS[buf[s]] == B_SPACE || BYTE_CLASS[buf[s]] == B_CR)) s++;
    int64_t f = s;
    while (f < e && BYTE_CLASS[buf[f]] == B_FIELD) f++;
    *start = s;
    *length = f - s;
    return f > s;
}

/*
 * Where the trailing stretch of lines sharing the last line's query id begins in buf[0..len) (which ends
 * with '\n'; blank lines belong to the stretch they lie in): the offset of its first line, or 0 when no
 * line before it in buf has another query id (or when buf[0] is not a line start, first_is_line = 0, and
 * the stretch reaches back to the first line end). Blocks cut there hold whole queries of a grouped file.
 */
int64_t qk_group_start(const uint8_t *buf, int64_t len, int32_t first_is_line) {
    if (len <= 0 || buf[len - 1] != '\n') return 0;
    int64_t e = len - 1, key = -1, key_len = 0, cut = 0; /* cut: the first line of the stretch so far */
    for (;;) {
        int64_t s = e;
        while (s > 0 && buf[s - 1] != '\n') s--; /* the line's start */
        if (s == 0 && !first_is_line) return 0;
        int64_t f, n;
        if (first_field(buf, s, e, &f, &n)) {
            if (key < 0) {
                key = f;
                key_len = n;
            } else if (n != key_len || memcmp(buf + f, buf + key, (size_t)n) != 0) {
                return cut; /* this line has another query id */
            }
        }
        if (s == 0) return 0;
        cut = s;
        e = s - 1;
    }
}
