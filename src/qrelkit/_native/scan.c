/*
 * qrelkit's native scanner for clean TREC run text: one pass over a block of whole lines that splits the
 * fields, parses ranks and scores, checks for duplicate documents, and keeps each query's top rows.
 *
 * It takes exactly the clean files of qrelkit/formats/trec/__init__.py, as the streaming reader
 * (qrelkit/formats/trec/streaming.py) takes them through Arrow, and gives the same rows and the same
 * values; anything else it refuses (status QK_REFUSE), and the caller falls back to that reader, which
 * falls back to the robust one. So it never changes a number and never explains an
 * error. Accepted text:
 *
 *   - lines of six fields (more in a run: the rest are ignored, as trec_eval and the robust reader ignore
 *     them, and the lines counted in `trailing`) separated by runs of ASCII whitespace (space, tab,
 *     vertical tab, form feed; the robust reader's split, Arrow's ascii_split_whitespace), with leading
 *     and trailing whitespace, ended by '\n' or "\r\n"; blank lines (only whitespace) are skipped but
 *     counted, so that row numbers stay line numbers. A carriage return anywhere else (Arrow's reader,
 *     under the robust one, ends a line there), another control character, DEL, or no id longer than 512
 *     bytes;
 *   - with QK_COMMENTS (runs) or `comments` (judgments, the small path's split), comment lines: a line
 *     whose first byte is '#' is skipped and counted as a blank line is, as trec_eval 10 and the robust
 *     reader under `comments` skip it (its bytes checked as a field's: a control character or a carriage
 *     return within it is refused);
 *   - valid UTF-8 without a character that qrelkit.naming.ID_PATTERN forbids (U+0080-U+00A0, U+1680,
 *     U+2000-U+200A, U+2028, U+2029, U+202F, U+205F, U+3000) anywhere in the text: the same test as
 *     qrelkit.formats.trec.common.forbidden_in_text, in the scanner's own pass;
 *   - ranks written -?[0-9]{1,18}; scores written -?[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?, finite and not
 *     negative zero (read exactly: Clinger's fast path, else the C library's strtod);
 *   - one tag within the block (the caller compares blocks);
 *   - grouped by query within the block (a query id that comes back after another is refused; the caller
 *     checks across blocks, which are cut at query boundaries) and no document twice in a query. With
 *     any_order set, a query may come back within the block: each stretch of lines of one query is checked
 *     and reduced on its own and comes out as a group of its own (a query may have several groups, which
 *     the caller merges); and pair[] then holds, for every line, a 64-bit hash of its (query id, document
 *     id), with which the caller finds a document twice in a query across stretches and blocks.
 *
 * A row is kept when fewer than keep_top rows of its query have a higher score (all rows when keep_top <=
 * 0; keep_top < 0 also keeps a document given twice in a query, for a caller that resolves it), compared
 * in double precision, or in single precision when rank_single is set: the tied block that straddles the
 * cutoff is kept whole. Kept rows come out in file order.
 *
 * Plain C99 with no Python API: loaded with ctypes, which releases the GIL during calls, so blocks are
 * scanned on several threads at once. Every function is reentrant.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>

#define QK_ABI 10

/* qk_scan_run's flags: a query may come back within the block; comment lines are skipped. */
#define QK_ANY_ORDER 1
#define QK_COMMENTS 2

#define QK_OK 0
#define QK_REFUSE 1
#define QK_NOMEM 2

/* The longest query or document id a clean file holds (qrelkit.formats.trec.MAX_ID_BYTES). */
#define QK_MAX_ID 512

int64_t qk_abi(void) { return QK_ABI; }

/* ------------------------------------------------------------------------------------------- numbers */

static const double POW10[23] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,  1e9,  1e10, 1e11,
                                 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

static int is_digit(uint8_t c) { return c >= '0' && c <= '9'; }

/* -?[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)? read into a correctly rounded double; 0 when refused. */
static int parse_score(const uint8_t *s, int64_t n, double *out) {
    const uint8_t *p = s, *e = s + n;
    int negative = 0;
    if (p < e && *p == '-') {
        negative = 1;
        p++;
    }
    uint64_t mantissa = 0;
    int significant = 0, fraction = 0;
    const uint8_t *digits = p;
    for (; p < e && is_digit(*p); p++) {
        if (mantissa || *p != '0') {
            if (++significant <= 19) mantissa = mantissa * 10 + (uint64_t)(*p - '0');
        }
    }
    if (p == digits) return 0;
    if (p < e && *p == '.') {
        p++;
        digits = p;
        for (; p < e && is_digit(*p); p++) {
            if (mantissa || *p != '0') {
                if (++significant <= 19) mantissa = mantissa * 10 + (uint64_t)(*p - '0');
            }
            fraction++;
        }
        if (p == digits) return 0;
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
    if (mantissa == 0) {
        value = 0.0;
    } else if (significant <= 15 && scale >= -22 && scale <= 22) {
        /* the mantissa (< 10^15 < 2^53) and the power of ten are exact: one rounding */
        value = scale < 0 ? (double)mantissa / POW10[-scale] : (double)mantissa * POW10[scale];
    } else {
        char text[80];
        if (n >= (int64_t)sizeof text) return 0;
        memcpy(text, s, (size_t)n);
        text[n] = 0;
        char *end;
        value = strtod(text, &end);
        if (end != text + n) return 0; /* a decimal point the locale does not read */
        if (value < 0) value = -value;
    }
    if (!isfinite(value) || (negative && value == 0.0)) return 0; /* -0.0: the Arrow reader decides */
    *out = negative ? -value : value;
    return 1;
}

/* -?[0-9]{1,18} */
static int parse_rank(const uint8_t *s, int64_t n, int64_t *out) {
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

/* Whether the id rule (qrelkit.naming.ID_PATTERN) forbids the code point c, above ASCII: Unicode's
 * White_Space and the C1 controls (tests/test_reader_errors.py compares this with the rule for every
 * character of the Basic Multilingual Plane; nothing above it is forbidden). */
static int forbidden_cp(uint32_t c) {
    return c <= 0xA0 || c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 ||
           c == 0x202F || c == 0x205F || c == 0x3000;
}

/* Valid UTF-8 holding no character (above ASCII) that the id rule forbids. */
static int utf8_valid(const uint8_t *s, int64_t n) {
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

/* What each byte is to the line splitter: part of a field, whitespace between fields, a carriage return
 * (whitespace only right before '\n'), the line end, or a byte no clean file holds (another control
 * character, DEL: the id rule forbids them anywhere). */
enum { B_FIELD = 0, B_SPACE, B_CR, B_LF, B_BAD };

static const uint8_t BYTE_CLASS[256] = {
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

/* ------------------------------------------------------------------------------------- query groups */

typedef struct {
    int64_t doc;   /* offset of the document id in the block */
    int64_t line;  /* line index in the block */
    int64_t rank;
    double score;
    double key;    /* the score as compared: rounded to single precision under rank_single */
    uint64_t hash; /* of the document id */
    int32_t doc_len;
} Row;

typedef struct {
    Row *rows;
    int64_t n, cap;
    int32_t *table; /* open addressing over row indices + 1 */
    int64_t table_cap;
    double *keys; /* scratch for selecting the k-th largest key */
    int64_t keys_cap;
} Group;

/* Room for `need` entries of `size` bytes in *p (capacity *cap): doubling from 1024 entries, or, with
 * `small` (the many per-query arrays of TopQuery), growing by half again from 16, so that each array
 * stays near its size. 0 when memory runs out (*p is then unchanged). */
static int grow_by(void **p, int64_t *cap, int64_t need, size_t size, int small) {
    if (need <= *cap) return 1;
    int64_t next = *cap ? *cap : (small ? 16 : 1024);
    while (next < need) next = small ? next + next / 2 + 1 : 2 * next;
    void *q = realloc(*p, (size_t)next * size);
    if (!q) return 0;
    *p = q;
    *cap = next;
    return 1;
}

static int grow(void **p, int64_t *cap, int64_t need, size_t size) { return grow_by(p, cap, need, size, 0); }

static uint64_t hash_bytes(const uint8_t *s, int64_t n) {
    uint64_t h = 0xCBF29CE484222325ULL; /* FNV-1a */
    for (int64_t i = 0; i < n; i++) h = (h ^ s[i]) * 0x100000001B3ULL;
    return h ^ (h >> 29);
}

/* Whether two rows of the group share a document id. */
static int has_duplicate(Group *g, const uint8_t *buf, int *nomem) {
    int64_t size = 16;
    while (size < 2 * g->n) size *= 2;
    if (size > g->table_cap) {
        free(g->table);
        g->table = malloc((size_t)size * sizeof(int32_t));
        g->table_cap = g->table ? size : 0;
        if (!g->table) {
            *nomem = 1;
            return 1;
        }
    }
    memset(g->table, 0, (size_t)size * sizeof(int32_t));
    uint64_t mask = (uint64_t)size - 1;
    for (int64_t i = 0; i < g->n; i++) {
        Row *r = &g->rows[i];
        uint64_t slot = r->hash & mask;
        while (g->table[slot]) {
            Row *o = &g->rows[g->table[slot] - 1];
            if (o->hash == r->hash && o->doc_len == r->doc_len &&
                memcmp(buf + o->doc, buf + r->doc, (size_t)r->doc_len) == 0)
                return 1;
            slot = (slot + 1) & mask;
        }
        g->table[slot] = (int32_t)(i + 1);
    }
    return 0;
}

/* The k-th largest of v[0..n) (k in 1..n), reordering v. */
static double kth_largest(double *v, int64_t n, int64_t k) {
    int64_t lo = 0, hi = n - 1, target = k - 1;
    while (lo < hi) {
        double a = v[lo], b = v[lo + (hi - lo) / 2], c = v[hi];
        double pivot = a < b ? (b < c ? b : (a < c ? c : a)) : (a < c ? a : (b < c ? c : b));
        int64_t i = lo, j = hi;
        while (i <= j) {
            while (v[i] > pivot) i++;
            while (v[j] < pivot) j--;
            if (i <= j) {
                double t = v[i];
                v[i] = v[j];
                v[j] = t;
                i++;
                j--;
            }
        }
        if (target <= j)
            hi = j;
        else if (target >= i)
            lo = i;
        else
            return v[target];
    }
    return v[target];
}

/* What split_line may take beyond `fields` fields: fields after the last (a run's, ignored and counted),
 * and comment lines (a line whose first byte is '#', skipped as a blank line, as trec_eval 10 skips it). */
#define SPLIT_TRAILING 1
#define SPLIT_COMMENTS 2

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
static inline int split_line(const uint8_t *buf, int64_t *at, int fields, int flags, int64_t *start,
                             int64_t *length, uint8_t *high) {
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

/* Whether the id at buf[start] begins with a UTF-8 byte-order mark, which Arrow's reader drops at the
 * start of a read (and so the robust reader before the first line only). */
static int has_bom(const uint8_t *buf, int64_t start, int64_t length) {
    return length >= 3 && buf[start] == 0xEF && buf[start + 1] == 0xBB && buf[start + 2] == 0xBF;
}

/* What one call returns: counts and the kept rows' columns, freed with qk_free. */
typedef struct {
    /* lines: every line of the block, blank ones included; rows: the lines that are not blank */
    int64_t status, kept, lines, groups, q_bytes, d_bytes, tag_start, tag_len, refused_line, rows;
    int64_t trailing; /* runs: lines with fields after the sixth (ignored, as the robust reader does) */
    int64_t *q_off, *d_off; /* Arrow large-string offsets: kept + 1 entries, the first 0 */
    double *score;
    int64_t *rank, *row; /* row: the line's index within the block (blank lines counted) */
    int64_t *group_first; /* the first kept row of each query */
    uint8_t *q_data, *d_data;
    uint64_t *pair; /* any_order: a hash of (query id, document id) for each row (not blank line) */
    int64_t rows_cap, groups_cap, q_cap, d_cap, pair_cap;
} Result;

/* Room for `rows` kept rows in all (the offsets need one more entry) and q_more, d_more more bytes of
 * query and document ids. */
static int reserve(Result *o, int64_t rows, int64_t q_more, int64_t d_more) {
    if (rows + 1 > o->rows_cap) {
        int64_t cap = o->rows_cap ? 2 * o->rows_cap : 4096;
        if (cap < rows + 1) cap = rows + 1;
        int64_t *q_off = realloc(o->q_off, (size_t)cap * sizeof(int64_t));
        if (q_off) o->q_off = q_off;
        int64_t *d_off = realloc(o->d_off, (size_t)cap * sizeof(int64_t));
        if (d_off) o->d_off = d_off;
        double *score = realloc(o->score, (size_t)cap * sizeof(double));
        if (score) o->score = score;
        int64_t *rank = realloc(o->rank, (size_t)cap * sizeof(int64_t));
        if (rank) o->rank = rank;
        int64_t *row = realloc(o->row, (size_t)cap * sizeof(int64_t));
        if (row) o->row = row;
        if (!q_off || !d_off || !score || !rank || !row) return 0;
        o->rows_cap = cap;
    }
    return grow((void **)&o->q_data, &o->q_cap, o->q_bytes + q_more, 1) &&
           grow((void **)&o->d_data, &o->d_cap, o->d_bytes + d_more, 1);
}

/* Append one kept row: its query id, document id, score, rank and line; 0 when memory runs out. */
static int append_row(Result *o, const uint8_t *q, int64_t q_len, const uint8_t *d, int64_t d_len, double score,
                      int64_t rank, int64_t line) {
    if (!reserve(o, o->kept + 1, q_len, d_len)) return 0;
    int64_t k = o->kept++;
    memcpy(o->q_data + o->q_bytes, q, (size_t)q_len);
    o->q_bytes += q_len;
    o->q_off[k + 1] = o->q_bytes;
    memcpy(o->d_data + o->d_bytes, d, (size_t)d_len);
    o->d_bytes += d_len;
    o->d_off[k + 1] = o->d_bytes;
    o->score[k] = score;
    o->rank[k] = rank;
    o->row[k] = line;
    return 1;
}

void qk_free(Result *o);
int64_t qk_count_lines(const uint8_t *buf, int64_t len);

/* An empty result with room for the first rows; NULL when memory runs out. */
static Result *new_result(void) {
    Result *o = calloc(1, sizeof(Result));
    if (!o) return NULL;
    o->refused_line = -1;
    o->tag_start = -1;
    if (!reserve(o, 0, 0, 0)) {
        qk_free(o);
        return NULL;
    }
    o->q_off[0] = 0;
    o->d_off[0] = 0;
    return o;
}

/* Check the finished group, select its top rows and append them to the output; QK_OK or a status. */
static int flush(Group *g, const uint8_t *buf, int64_t q_start, int64_t q_len, int64_t keep_top, Result *o) {
    if (g->n == 0) return QK_OK;
    int nomem = 0;
    if (keep_top >= 0 && has_duplicate(g, buf, &nomem)) return nomem ? QK_NOMEM : QK_REFUSE;
    double threshold = -INFINITY; /* keep rows whose key is at least this */
    if (keep_top > 0 && g->n > keep_top) {
        int sorted = 1;
        for (int64_t i = 1; i < g->n; i++) {
            if (g->rows[i].key > g->rows[i - 1].key) {
                sorted = 0;
                break;
            }
        }
        if (sorted) {
            threshold = g->rows[keep_top - 1].key;
        } else {
            if (!grow((void **)&g->keys, &g->keys_cap, g->n, sizeof(double))) return QK_NOMEM;
            for (int64_t i = 0; i < g->n; i++) g->keys[i] = g->rows[i].key;
            threshold = kth_largest(g->keys, g->n, keep_top);
        }
    }
    if (!grow((void **)&o->group_first, &o->groups_cap, o->groups + 1, sizeof(int64_t))) return QK_NOMEM;
    o->group_first[o->groups++] = o->kept;
    for (int64_t i = 0; i < g->n; i++) {
        Row *r = &g->rows[i];
        if (r->key < threshold) continue;
        if (!append_row(o, buf + q_start, q_len, buf + r->doc, r->doc_len, r->score, r->rank, r->line))
            return QK_NOMEM;
    }
    g->n = 0;
    return QK_OK;
}

/* Seen query ids of this block: open addressing over (offset, length) of each group's query id. */
typedef struct {
    int64_t *start;
    int32_t *len;
    uint64_t *hash;
    int64_t cap, n;
} Seen;

static int seen_add(Seen *s, const uint8_t *buf, int64_t start, int64_t len, int *nomem) {
    if (2 * (s->n + 1) > s->cap) {
        int64_t cap = s->cap ? 2 * s->cap : 1024;
        int64_t *st = malloc((size_t)cap * sizeof(int64_t));
        int32_t *ln = malloc((size_t)cap * sizeof(int32_t));
        uint64_t *hs = malloc((size_t)cap * sizeof(uint64_t));
        if (!st || !ln || !hs) {
            free(st);
            free(ln);
            free(hs);
            *nomem = 1;
            return 0;
        }
        for (int64_t i = 0; i < cap; i++) ln[i] = -1;
        for (int64_t i = 0; i < s->cap; i++) {
            if (s->len[i] < 0) continue;
            uint64_t slot = s->hash[i] & (uint64_t)(cap - 1);
            while (ln[slot] >= 0) slot = (slot + 1) & (uint64_t)(cap - 1);
            st[slot] = s->start[i];
            ln[slot] = s->len[i];
            hs[slot] = s->hash[i];
        }
        free(s->start);
        free(s->len);
        free(s->hash);
        s->start = st;
        s->len = ln;
        s->hash = hs;
        s->cap = cap;
    }
    uint64_t h = hash_bytes(buf + start, len);
    uint64_t mask = (uint64_t)s->cap - 1, slot = h & mask;
    while (s->len[slot] >= 0) {
        if (s->hash[slot] == h && s->len[slot] == len && memcmp(buf + s->start[slot], buf + start, (size_t)len) == 0)
            return 0; /* seen before: the block is not grouped by query */
        slot = (slot + 1) & mask;
    }
    s->start[slot] = start;
    s->len[slot] = (int32_t)len;
    s->hash[slot] = h;
    s->n++;
    return 1;
}

/* Query ids of an any_order block: open addressing from a hash to the id's index, and each index's id. */
typedef struct {
    int64_t start, len;
    uint64_t hash;
} QueryId;

typedef struct {
    int64_t *slot; /* -1 for an empty slot, else an index into ids */
    int64_t cap;   /* slots: a power of two, at least twice n */
    QueryId *ids;
    int64_t n, ids_cap;
} Queries;

/* The index of the query id buf[start..start+len) (hash h), added as the next index when new; -1 when
 * memory runs out. */
static int64_t query_index(Queries *t, const uint8_t *buf, int64_t start, int64_t len, uint64_t h) {
    if (t->cap) {
        uint64_t mask = (uint64_t)t->cap - 1;
        for (uint64_t s = h & mask; t->slot[s] >= 0; s = (s + 1) & mask) {
            QueryId *q = &t->ids[t->slot[s]];
            if (q->hash == h && q->len == len && memcmp(buf + q->start, buf + start, (size_t)len) == 0)
                return t->slot[s];
        }
    }
    if (2 * (t->n + 1) > t->cap) {
        int64_t cap = t->cap ? 2 * t->cap : 1024;
        int64_t *slot = malloc((size_t)cap * sizeof(int64_t));
        if (!slot) return -1;
        for (int64_t i = 0; i < cap; i++) slot[i] = -1;
        for (int64_t i = 0; i < t->n; i++) {
            uint64_t s = t->ids[i].hash & (uint64_t)(cap - 1);
            while (slot[s] >= 0) s = (s + 1) & (uint64_t)(cap - 1);
            slot[s] = i;
        }
        free(t->slot);
        t->slot = slot;
        t->cap = cap;
    }
    if (!grow((void **)&t->ids, &t->ids_cap, t->n + 1, sizeof(QueryId))) return -1;
    uint64_t mask = (uint64_t)t->cap - 1, s = h & mask;
    while (t->slot[s] >= 0) s = (s + 1) & mask;
    t->slot[s] = t->n;
    t->ids[t->n] = (QueryId){start, len, h};
    return t->n++;
}

/* A hash of a (query id, document id) pair from the two ids' hashes (splitmix64's finaliser). */
static uint64_t pair_hash(uint64_t q, uint64_t d) {
    uint64_t z = q * 0x9E3779B97F4A7C15ULL ^ (d + 0x632BE59BD9B4E019ULL + (q << 6) + (q >> 2));
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

/*
 * Scan buf[0..len) (whole lines, the last ending with '\n'). Returns the kept rows and counts (NULL only
 * when memory runs out before anything starts); free it with qk_free.
 */
Result *qk_scan_run(const uint8_t *buf, int64_t len, int64_t keep_top, int32_t rank_single, int32_t flags) {
    int any_order = flags & QK_ANY_ORDER;
    int split = SPLIT_TRAILING | ((flags & QK_COMMENTS) ? SPLIT_COMMENTS : 0);
    Result *o = new_result();
    if (!o) return NULL;
    Group g = {0};
    Seen seen = {0};
    int status = QK_OK;
    int nomem = 0;
    uint8_t high = 0;
    int64_t p = 0, line = 0, rows = 0;
    int64_t q_start = -1, q_len = 0, tag_start = -1, tag_len = 0;
    uint64_t q_hash = 0;
    if (len <= 0 || buf[len - 1] != '\n') {
        status = QK_REFUSE;
        goto done;
    }
    if (any_order) { /* room for every line at once: no copying as the arrays grow */
        int64_t lines = qk_count_lines(buf, len);
        if (!grow((void **)&o->pair, &o->pair_cap, lines, sizeof(uint64_t)) || !reserve(o, lines, len, len)) {
            status = QK_NOMEM;
            goto done;
        }
    }
    while (p < len) {
        int64_t start[6], flen[6];
        int kind = split_line(buf, &p, 6, split, start, flen, &high);
        if (!kind) {
            status = QK_REFUSE;
            goto done;
        }
        if (kind == 2) { /* a blank line */
            line++;
            continue;
        }
        if (kind == 3) o->trailing++;
        if (q_start < 0 || flen[0] != q_len || memcmp(buf + start[0], buf + q_start, (size_t)q_len) != 0) {
            if (q_start >= 0 && (status = flush(&g, buf, q_start, q_len, keep_top, o)) != QK_OK) goto done;
            q_start = start[0];
            q_len = flen[0];
            if (has_bom(buf, q_start, q_len)) {
                status = QK_REFUSE;
                goto done;
            }
            if (any_order) {
                q_hash = hash_bytes(buf + q_start, q_len);
            } else if (!seen_add(&seen, buf, q_start, q_len, &nomem)) {
                status = nomem ? QK_NOMEM : QK_REFUSE; /* a query id that came back: not grouped */
                goto done;
            }
        }
        if (tag_start < 0) {
            tag_start = start[5];
            tag_len = flen[5];
        } else if (flen[5] != tag_len || memcmp(buf + start[5], buf + tag_start, (size_t)tag_len) != 0) {
            status = QK_REFUSE; /* two tags */
            goto done;
        }
        if (!grow((void **)&g.rows, &g.cap, g.n + 1, sizeof(Row))) {
            status = QK_NOMEM;
            goto done;
        }
        Row *r = &g.rows[g.n++];
        if (!parse_rank(buf + start[3], flen[3], &r->rank) || !parse_score(buf + start[4], flen[4], &r->score) ||
            flen[2] > INT32_MAX) {
            status = QK_REFUSE;
            goto done;
        }
        r->key = rank_single ? (double)(float)r->score : r->score;
        r->doc = start[2];
        r->doc_len = (int32_t)flen[2];
        r->hash = hash_bytes(buf + start[2], flen[2]);
        if (any_order) {
            if (!grow((void **)&o->pair, &o->pair_cap, rows + 1, sizeof(uint64_t))) {
                status = QK_NOMEM;
                goto done;
            }
            o->pair[rows] = pair_hash(q_hash, r->hash);
        }
        r->line = line++;
        rows++;
    }
    if ((status = flush(&g, buf, q_start, q_len, keep_top, o)) != QK_OK) goto done;
    if ((high & 0x80) && !utf8_valid(buf, len)) status = QK_REFUSE;
done:
    if (status != QK_OK) o->refused_line = line;
    o->status = status;
    o->lines = line;
    o->rows = rows;
    o->tag_start = tag_start;
    o->tag_len = tag_len;
    free(g.rows);
    free(g.table);
    free(g.keys);
    free(seen.start);
    free(seen.len);
    free(seen.hash);
    return o;
}

void qk_free(Result *o) {
    if (!o) return;
    free(o->q_off);
    free(o->d_off);
    free(o->score);
    free(o->rank);
    free(o->row);
    free(o->group_first);
    free(o->q_data);
    free(o->d_data);
    free(o->pair);
    free(o);
}

/*
 * Scan clean TREC judgments in buf[0..len) (whole lines, the last ending with '\n'): four fields split as
 * split_line splits them (blank lines skipped), grades written -?[0-9]{1,18}, valid UTF-8, as the robust
 * reader takes them. Every row is kept, in file order (duplicates are left to the caller's policy):
 * q_off/q_data and d_off/d_data hold the query and document ids, rank the grades, row the line index.
 * Free the result with qk_free.
 */
Result *qk_scan_qrels(const uint8_t *buf, int64_t len, int32_t comments) {
    Result *o = new_result();
    if (!o) return NULL;
    int status = QK_OK;
    uint8_t high = 0;
    int64_t p = 0, line = 0;
    if (len <= 0 || buf[len - 1] != '\n') {
        status = QK_REFUSE;
        goto done;
    }
    while (p < len) {
        int64_t start[4], flen[4];
        int kind = split_line(buf, &p, 4, comments ? SPLIT_COMMENTS : 0, start, flen, &high);
        if (kind == 2) { /* a blank line */
            line++;
            continue;
        }
        if (!kind || has_bom(buf, start[0], flen[0])) {
            status = QK_REFUSE;
            goto done;
        }
        int64_t grade;
        if (!parse_rank(buf + start[3], flen[3], &grade)) {
            status = QK_REFUSE;
            goto done;
        }
        if (!append_row(o, buf + start[0], flen[0], buf + start[2], flen[2], 0.0, grade, line++)) {
            status = QK_NOMEM;
            goto done;
        }
    }
    if ((high & 0x80) && !utf8_valid(buf, len)) status = QK_REFUSE;
done:
    if (status != QK_OK) o->refused_line = line;
    o->status = status;
    o->lines = line;
    o->rows = o->kept;
    return o;
}

/* The number of '\n' bytes in buf[0..len). */
int64_t qk_count_lines(const uint8_t *buf, int64_t len) {
    int64_t n = 0;
    const uint8_t *p = buf, *e = buf + len;
    while (p < e && (p = memchr(p, '\n', (size_t)(e - p))) != NULL) {
        n++;
        p++;
    }
    return n;
}

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

/*
 * Each query's top rows across blocks, for runs in any order. Blocks are scanned (qk_scan_run, on any
 * thread) and added here in file order (qk_top_add): each query's rows accumulate, with copies of their
 * document ids, and are selected again (the rows fewer than keep_top others of the query beat) whenever
 * they number twice what the last selection kept. Every row the whole file would keep is kept by its
 * block and by every selection (a row beaten by fewer than keep_top rows of the file is beaten by fewer in
 * any subset), and a row the file would not keep is beaten by the file's top keep_top rows, which are all
 * here: so the final selection (qk_top_result) is the file's, exactly.
 */
typedef struct {
    double score;
    int64_t rank, line; /* line: in the file, from 0 */
    int32_t doc;        /* offset of the document id in the query's docs */
    int32_t doc_len;
} TopRow;

typedef struct {
    TopRow *rows;
    int64_t n, cap, selected; /* selected: rows the last selection kept */
    double floor; /* keep_top rows here have a key at least this: a row with a lower key is never kept */
    int has_floor;
    uint8_t *docs;
    int64_t docs_len, docs_cap;
} TopQuery;

typedef struct {
    int64_t keep_top;
    int32_t rank_single;
    int64_t came_back; /* a query seen in an earlier block */
    uint8_t *names;    /* query ids, one after another */
    int64_t names_len, names_cap;
    Queries index;     /* over names (QueryId.start is an offset into names) */
    TopQuery *queries;
    int64_t queries_cap;
    double *keys; /* scratch for selecting the k-th largest key */
    int64_t keys_cap;
} TopState;


TopState *qk_top_new(int64_t keep_top, int32_t rank_single) {
    TopState *s = calloc(1, sizeof(TopState));
    if (!s) return NULL;
    s->keep_top = keep_top;
    s->rank_single = rank_single;
    return s;
}

void qk_top_free(TopState *s) {
    if (!s) return;
    for (int64_t q = 0; q < s->index.n; q++) {
        free(s->queries[q].rows);
        free(s->queries[q].docs);
    }
    free(s->keys);
    free(s->queries);
    free(s->names);
    free(s->index.slot);
    free(s->index.ids);
    free(s);
}

static double top_key(const TopState *s, double score) { return s->rank_single ? (double)(float)score : score; }

/* Keep the rows of q whose key is at least its keep_top-th largest; 0 when memory runs out. */
static int top_select(TopState *s, TopQuery *q) {
    int64_t keep_top = s->keep_top;
    if (q->n > keep_top) {
        if (!grow((void **)&s->keys, &s->keys_cap, q->n, sizeof(double))) return 0;
        for (int64_t i = 0; i < q->n; i++) s->keys[i] = top_key(s, q->rows[i].score);
        double threshold = kth_largest(s->keys, q->n, keep_top);
        q->floor = threshold;
        q->has_floor = 1;
        int64_t m = 0, bytes = 0;
        for (int64_t i = 0; i < q->n; i++) {
            TopRow r = q->rows[i];
            if (top_key(s, r.score) < threshold) continue;
            memmove(q->docs + bytes, q->docs + r.doc, (size_t)r.doc_len);
            r.doc = (int32_t)bytes;
            bytes += r.doc_len;
            q->rows[m++] = r;
        }
        q->n = m;
        q->docs_len = bytes;
    }
    q->selected = q->n;
    return 1;
}

/* Add a scanned block's kept rows (o from qk_scan_run; its rows' lines counted from line_base). */
int64_t qk_top_add(TopState *s, const Result *o, int64_t line_base) {
    for (int64_t g = 0; g < o->groups; g++) {
        int64_t first = o->group_first[g], end = g + 1 < o->groups ? o->group_first[g + 1] : o->kept;
        if (first == end) continue;
        const uint8_t *name = o->q_data + o->q_off[first];
        int64_t len = o->q_off[first + 1] - o->q_off[first];
        /* look the query up by its bytes in names: the index compares against names */
        uint64_t h = hash_bytes(name, len);
        int64_t before = s->index.n;
        if (!grow((void **)&s->names, &s->names_cap, s->names_len + len, 1)) return QK_NOMEM;
        memcpy(s->names + s->names_len, name, (size_t)len);
        int64_t q = query_index(&s->index, s->names, s->names_len, len, h);
        if (q < 0) return QK_NOMEM;
        if (s->index.n > before) {
            s->names_len += len; /* a new query: keep its name */
            if (!grow((void **)&s->queries, &s->queries_cap, s->index.n, sizeof(TopQuery))) return QK_NOMEM;
            memset(&s->queries[q], 0, sizeof(TopQuery));
        } else {
            s->came_back = 1; /* a query seen before, in an earlier block or stretch */
        }
        TopQuery *t = &s->queries[q];
        int64_t bytes = o->d_off[end] - o->d_off[first];
        if (t->docs_len + bytes > INT32_MAX) return QK_NOMEM; /* ids of one query past 2 GB */
        if (!grow_by((void **)&t->rows, &t->cap, t->n + (end - first), sizeof(TopRow), 1) ||
            !grow_by((void **)&t->docs, &t->docs_cap, t->docs_len + bytes, 1, 1))
            return QK_NOMEM;
        for (int64_t i = first; i < end; i++) {
            if (t->has_floor && top_key(s, o->score[i]) < t->floor) continue; /* beaten by keep_top here */
            TopRow *r = &t->rows[t->n++];
            r->score = o->score[i];
            r->rank = o->rank[i];
            r->line = o->row[i] + line_base;
            r->doc_len = (int32_t)(o->d_off[i + 1] - o->d_off[i]);
            r->doc = (int32_t)t->docs_len;
            memcpy(t->docs + t->docs_len, o->d_data + o->d_off[i], (size_t)r->doc_len);
            t->docs_len += r->doc_len;
        }
        int64_t bound = 2 * (t->selected > s->keep_top ? t->selected : s->keep_top);
        if (t->n > bound && !top_select(s, t)) return QK_NOMEM;
    }
    return QK_OK;
}

/* Whether a query came back after another (the run is not grouped by query). */
int64_t qk_top_came_back(const TopState *s) { return s->came_back; }

/* Every query's final top rows, queries in the order they first appeared and each query's rows in file
 * order; row holds the line in the file (from 0). Free with qk_free; NULL when memory runs out. */
Result *qk_top_result(TopState *s) {
    Result *o = new_result();
    if (!o) return NULL;
    o->status = QK_OK;
    for (int64_t q = 0; q < s->index.n; q++) {
        TopQuery *t = &s->queries[q];
        if (!top_select(s, t)) {
            o->status = QK_NOMEM;
            return o;
        }
        /* rows arrive in file order block by block, and within a block in file order */
        int64_t q_start = s->index.ids[q].start, q_len = s->index.ids[q].len;
        if (!grow((void **)&o->group_first, &o->groups_cap, o->groups + 1, sizeof(int64_t))) {
            o->status = QK_NOMEM;
            return o;
        }
        o->group_first[o->groups++] = o->kept;
        for (int64_t i = 0; i < t->n; i++) {
            TopRow *r = &t->rows[i];
            if (!append_row(o, s->names + q_start, q_len, t->docs + r->doc, r->doc_len, r->score, r->rank,
                            r->line)) {
                o->status = QK_NOMEM;
                return o;
            }
        }
        free(t->rows);
        free(t->docs);
        memset(t, 0, sizeof(TopQuery));
    }
    o->lines = o->kept;
    return o;
}

/*
 * trec_eval's ranking, for the fast path of `qrelkit trec_eval` (qrelkit/trec_fast.py).
 *
 * The judgments come grouped by query: judgment order[first[q]] .. order[first[q + 1] - 1] are query q's,
 * each a document id d_data[d_off[j] .. d_off[j + 1]). qk_judged_dups returns 0, or 1 + the index of a
 * judgment whose document its query judged before (a duplicate: the caller lets the readers report it).
 *
 * qk_trec_rank takes one scanned block of a run grouped by query (rows of group g from group_first[g] to
 * the next group's first row) and each group's query code (-1: a query without judgments, skipped); for
 * every row of a judged query it writes its 0-based rank in trec_eval's order (form_res_rels.c's
 * comp_sim_docno: score descending, then document id descending by bytes, as strcmp; scores rounded to
 * single precision first under `single`) and its judgment index (-1: not judged), found in a small table
 * of that query's judgments (which stays in cache). Each query's rows are sorted only when they are not
 * already in that order, and then only within stretches of equal scores when the scores already descend.
 * Returns QK_OK or QK_NOMEM.
 */

typedef struct {
    int32_t *slot; /* local judgment index + 1, 0 empty */
    int64_t cap;
    uint64_t mask;
} SmallTable;

/* Fill t with query q's judgments; 1 + the index of a duplicate, 0, or -1 when memory runs out. */
static int64_t small_fill(SmallTable *t, int64_t q, const int64_t *first, const int64_t *order,
                          const int64_t *d_off, const uint8_t *d_data) {
    int64_t m = first[q + 1] - first[q], size = 16;
    while (size < 2 * m) size *= 2;
    if (size > t->cap) {
        free(t->slot);
        t->slot = malloc((size_t)size * sizeof(int32_t));
        t->cap = t->slot ? size : 0;
        if (!t->slot) return -1;
    }
    memset(t->slot, 0, (size_t)size * sizeof(int32_t));
    t->mask = (uint64_t)size - 1;
    for (int64_t i = 0; i < m; i++) {
        int64_t j = order[first[q] + i], len = d_off[j + 1] - d_off[j];
        uint64_t slot = hash_bytes(d_data + d_off[j], len) & t->mask;
        while (t->slot[slot]) {
            int64_t o = order[first[q] + t->slot[slot] - 1];
            if (d_off[o + 1] - d_off[o] == len && memcmp(d_data + d_off[o], d_data + d_off[j], (size_t)len) == 0)
                return 1 + j;
            slot = (slot + 1) & t->mask;
        }
        t->slot[slot] = (int32_t)(i + 1);
    }
    return 0;
}

static int64_t small_find(const SmallTable *t, int64_t q, const uint8_t *d, int64_t len, const int64_t *first,
                          const int64_t *order, const int64_t *d_off, const uint8_t *d_data) {
    uint64_t slot = hash_bytes(d, len) & t->mask;
    while (t->slot[slot]) {
        int64_t o = order[first[q] + t->slot[slot] - 1];
        if (d_off[o + 1] - d_off[o] == len && memcmp(d_data + d_off[o], d, (size_t)len) == 0) return o;
        slot = (slot + 1) & t->mask;
    }
    return -1;
}

int64_t qk_judged_dups(int64_t queries, const int64_t *first, const int64_t *order, const int64_t *d_off,
                       const uint8_t *d_data) {
    SmallTable t = {NULL, 0, 0};
    int64_t found = 0;
    for (int64_t q = 0; q < queries && !found; q++) found = small_fill(&t, q, first, order, d_off, d_data);
    free(t.slot);
    return found < 0 ? -1 : found;
}

typedef struct {
    const double *key;
    const int64_t *d_off;
    const uint8_t *d_data;
} RankKeys;

/* < 0 when row a comes before row b in trec_eval's order (rows of one query; document ids differ). */
static int rank_cmp(const RankKeys *k, int64_t a, int64_t b) {
    if (k->key[a] > k->key[b]) return -1;
    if (k->key[a] < k->key[b]) return 1;
    int64_t la = k->d_off[a + 1] - k->d_off[a], lb = k->d_off[b + 1] - k->d_off[b];
    int c = memcmp(k->d_data + k->d_off[a], k->d_data + k->d_off[b], (size_t)(la < lb ? la : lb));
    if (c) return c > 0 ? -1 : 1;
    if (la != lb) return la > lb ? -1 : 1;
    return a < b ? -1 : (a > b);
}

/* Sort idx[0..n) by rank_cmp (a stable merge sort with scratch tmp[0..n)). */
static void rank_sort(const RankKeys *k, int64_t *idx, int64_t *tmp, int64_t n) {
    if (n < 16) {
        for (int64_t i = 1; i < n; i++) {
            int64_t v = idx[i], j = i;
            while (j > 0 && rank_cmp(k, v, idx[j - 1]) < 0) {
                idx[j] = idx[j - 1];
                j--;
            }
            idx[j] = v;
        }
        return;
    }
    int64_t h = n / 2;
    rank_sort(k, idx, tmp, h);
    rank_sort(k, idx + h, tmp, n - h);
    if (rank_cmp(k, idx[h - 1], idx[h]) <= 0) return;
    memcpy(tmp, idx, (size_t)h * sizeof(int64_t));
    int64_t i = 0, j = h, o = 0;
    while (i < h && j < n) idx[o++] = rank_cmp(k, idx[j], tmp[i]) < 0 ? idx[j++] : tmp[i++];
    while (i < h) idx[o++] = tmp[i++];
}

int64_t qk_trec_rank(int64_t groups, const int64_t *group_first, const int64_t *group_qcode, int64_t rows,
                     const double *score, const int64_t *d_off, const uint8_t *d_data, int32_t single,
                     const int64_t *j_first, const int64_t *j_order, const int64_t *j_off, const uint8_t *j_data,
                     int64_t *pos_out, int64_t *judged_out) {
    double *key = (double *)score;
    int64_t *idx = NULL, *tmp = NULL, idx_cap = 0, tmp_cap = 0;
    if (single) {
        key = malloc((size_t)(rows ? rows : 1) * sizeof(double));
        if (!key) return QK_NOMEM;
        for (int64_t i = 0; i < rows; i++) key[i] = (double)(float)score[i];
    }
    RankKeys k = {key, d_off, d_data};
    SmallTable table = {NULL, 0, 0};
    int status = QK_OK;
    for (int64_t g = 0; g < groups && status == QK_OK; g++) {
        int64_t a = group_first[g], b = g + 1 < groups ? group_first[g + 1] : rows, n = b - a;
        if (group_qcode[g] < 0) {
            for (int64_t i = a; i < b; i++) pos_out[i] = judged_out[i] = -1;
            continue;
        }
        int64_t q = group_qcode[g];
        if (small_fill(&table, q, j_first, j_order, j_off, j_data) < 0) {
            status = QK_NOMEM;
            break;
        }
        for (int64_t i = a; i < b; i++)
            judged_out[i] = small_find(&table, q, d_data + d_off[i], d_off[i + 1] - d_off[i], j_first, j_order,
                                       j_off, j_data);
        int sorted = 1, descending = 1;
        for (int64_t i = a + 1; i < b && descending; i++) {
            if (key[i - 1] < key[i]) descending = 0;
            else if (sorted && key[i - 1] == key[i] && rank_cmp(&k, i - 1, i) > 0) sorted = 0;
        }
        if (sorted && descending) {
            for (int64_t i = a; i < b; i++) pos_out[i] = i - a;
            continue;
        }
        if (!grow((void **)&idx, &idx_cap, n, sizeof(int64_t)) || !grow((void **)&tmp, &tmp_cap, n, sizeof(int64_t))) {
            status = QK_NOMEM;
            break;
        }
        for (int64_t i = 0; i < n; i++) idx[i] = a + i;
        if (descending) { /* only stretches of equal scores are out of order */
            for (int64_t s = 0; s < n;) {
                int64_t e = s + 1;
                while (e < n && key[a + e] == key[a + s]) e++;
                if (e - s > 1) rank_sort(&k, idx + s, tmp, e - s);
                s = e;
            }
        } else {
            rank_sort(&k, idx, tmp, n);
        }
        for (int64_t i = 0; i < n; i++) pos_out[idx[i]] = i;
    }
    free(idx);
    free(tmp);
    free(table.slot);
    if (single) free(key);
    return status;
}
