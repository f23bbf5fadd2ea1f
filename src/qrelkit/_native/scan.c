/*
 * qrelkit's native scanner for clean TREC run text: one pass over a block of whole lines that splits the
 * fields, parses ranks and scores, checks for duplicate documents, and keeps each query's top rows
 * (qk_scan_run); and the same pass over judgments (qk_scan_qrels). The scanner's other files, and what
 * they share, are listed in qkscan.h.
 *
 * It takes exactly the clean files of qrelkit/formats/trec/__init__.py, as the streaming reader
 * (qrelkit/formats/trec/streaming.py) takes them through Arrow, and gives the same rows and the same
 * values; anything else it refuses (status QK_REFUSE), and the caller falls back to that reader, which
 * falls back to the robust one. So it never changes a number and never explains an error. Accepted text:
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
 */
#include <math.h>
#include <string.h>

#include "qkscan.h"

/* qk_scan_run's flags: a query may come back within the block; comment lines are skipped. */
#define QK_ANY_ORDER 1
#define QK_COMMENTS 2

int64_t qk_abi(void) { return QK_ABI; }

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
double kth_largest(double *v, int64_t n, int64_t k) {
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

/* Whether the id at buf[start] begins with a UTF-8 byte-order mark, which Arrow's reader drops at the
 * start of a read (and so the robust reader before the first line only). */
static int has_bom(const uint8_t *buf, int64_t start, int64_t length) {
    return length >= 3 && buf[start] == 0xEF && buf[start + 1] == 0xBB && buf[start + 2] == 0xBF;
}

int64_t qk_count_lines(const uint8_t *buf, int64_t len);

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

