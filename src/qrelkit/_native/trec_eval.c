/*
 * `qrelkit trec_eval` whole, for small clean files (qrelkit/evaluation/trec_native.py): the judgments and the
 * run scanned (qk_scan_qrels, qk_scan_run), ranked and joined as trec_eval does (qk_trec_rank), each query's
 * sparse list formed, every measure of trec_eval's nicknames computed (with its default parameters, or the
 * cutoffs given to a cutoff measure), and the text trec_eval 10 prints written, in one call.
 *
 * It is the lean path (qrelkit/evaluation/trec_lean.py, with the plain-Python kernels of
 * qrelkit/engine/trec/lean_kernels.py and the layout of qrelkit/report/trec_eval.py) in C, statement for
 * statement: every sum is formed in the same order from the same terms, so the doubles are the same and so
 * are the printed bytes (tests/property/test_trec_native.py compares the two paths' bytes). Where the lean
 * path steps aside (a division by zero the numpy engine carries as an infinity, a query missing from the run
 * without -c, a first query without judgments, a judgment given twice, a query that comes back in the run),
 * this returns QK_REFUSE and the caller goes on to the lean path, which says why.
 *
 * The measures are selected by a bit mask over TE_ORDER (trec_names.ORDER; qk_te_measure names them for the
 * test that holds the two equal).
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "qkscan.h"

#define MAX_LEVELS 1024 /* trec_fast.MAX_LEVELS */
#define MAX_VALUES ((int64_t)1 << 24) /* values held at once (128 MiB): lines x queries */

/* trec_eval's measures in its printing order (qrelkit.measures.trec_names.ORDER). */
static const char *const TE_ORDER[] = {
    "runid", "num_q", "num_ret", "num_rel", "num_rel_ret", "map", "gm_map", "Rprec", "bpref", "recip_rank",
    "iprec_at_recall", "P", "relstring", "recall", "infAP", "gm_bpref", "Rprec_mult", "utility", "11pt_avg",
    "binG", "G", "ndcg", "ndcg_rel", "Rndcg", "ndcg_cut", "map_cut", "relative_P", "success", "set_P",
    "set_relative_P", "set_recall", "set_map", "set_F", "num_nonrel_judged_ret", "rbp", "rbp_resid", "unj"};
#define TE_COUNT ((int64_t)(sizeof TE_ORDER / sizeof TE_ORDER[0]))

/* The name of measure i of TE_ORDER, or NULL past the last. */
const char *qk_te_measure(int64_t i) { return i >= 0 && i < TE_COUNT ? TE_ORDER[i] : NULL; }

/* ------------------------------------------------------------------------------------- the output text */

typedef struct {
    char *data;
    int64_t len, cap;
    int nomem;
} Text;

static void put(Text *t, const char *s, int64_t n) {
    if (t->nomem) return;
    if (!grow((void **)&t->data, &t->cap, t->len + n + 1, 1)) {
        t->nomem = 1;
        return;
    }
    memcpy(t->data + t->len, s, (size_t)n);
    t->len += n;
}

static void puts_(Text *t, const char *s) { put(t, s, (int64_t)strlen(s)); }

/* The room printf("%6.4f") needs for any double (one near 1e308 takes 315 characters). */
#define FORMAT_BYTES 400

/* printf("%6.4f", v) into b (FORMAT_BYTES); its length. Most values are written from |v| * 10^4 rounded to
 * the nearest integer: printf's digits (it rounds the exact value, ties to even) unless the exact product
 * may lie within the product's rounding error (at most 2^-53 of it) of a half; then, and past 2^49,
 * printf writes it. The property test of qk_te_format holds the two equal. */
static int format_6_4(char *b, double v) {
    double a = fabs(v), s = a * 10000.0;
    if (!(s < 562949953421312.0)) return snprintf(b, FORMAT_BYTES, "%6.4f", v); /* 2^49: NaN and infinities too */
    double f = floor(s), half = s - f - 0.5;
    if (fabs(half) <= s * 0x1p-51) return snprintf(b, FORMAT_BYTES, "%6.4f", v);
    int64_t r = (int64_t)f + (half > 0);
    int64_t whole = r / 10000, frac = r % 10000;
    char digits[24];
    int n = 0, w = 0;
    do {
        digits[n++] = (char)('0' + whole % 10);
        whole /= 10;
    } while (whole);
    if (signbit(v)) b[w++] = '-';
    while (n) b[w++] = digits[--n];
    b[w++] = '.';
    for (int64_t d = 1000; d; d /= 10) b[w++] = (char)('0' + frac / d % 10);
    b[w] = 0; /* at least six characters (0.0000): the width 6 adds no padding */
    return w;
}

/* The text put_double writes for v, into out (FORMAT_BYTES); its length (tests/property/test_trec_native.py
 * holds it to Python's format, which is printf's). */
int64_t qk_te_format(double v, char *out) {
    return v != v ? snprintf(out, FORMAT_BYTES, "  -nan") : format_6_4(out, v);
}

static void put_double(Text *t, double v) {
    char b[FORMAT_BYTES];
    if (v != v) {
        puts_(t, "  -nan");
        return;
    }
    put(t, b, format_6_4(b, v));
}

static void put_long(Text *t, double v) {
    char b[32];
    int n = snprintf(b, sizeof b, "%lld", (long long)v);
    put(t, b, n);
}

/* ---------------------------------------------------------------------------------------- the text out */

static void emit(Text *t, const Ctx *c, const Lists *L, const uint8_t *q_data, const int64_t *q_id_off,
                 const char *run_name, int64_t run_name_len, int per_query, int summary, int complete) {
    int64_t n = L->n;
    if (per_query) {
        for (int64_t q = 0; q < n; q++) {
            const char *qid = (const char *)q_data + q_id_off[q];
            int64_t qlen = q_id_off[q + 1] - q_id_off[q];
            for (int64_t i = 0; i < c->n_lines; i++) {
                const Line *l = &c->lines[i];
                if (l->kind == K_RUNID || l->kind == K_NUM_Q || l->kind == K_GM) continue;
                puts_(t, l->name);
                put(t, qid, qlen);
                put(t, "\t", 1);
                if (l->kind == K_LONG) put_long(t, l->values[q]);
                else if (l->kind == K_DOUBLE) put_double(t, l->values[q]);
                else {
                    put(t, "'", 1);
                    puts_(t, l->strings + q * (RELSTRING_LENGTH + 1));
                    put(t, "'", 1);
                }
                put(t, "\n", 1);
            }
        }
    }
    if (!summary) return;
    for (int64_t i = 0; i < c->n_lines; i++) {
        const Line *l = &c->lines[i];
        if (l->kind == K_STRING) continue;
        puts_(t, l->name);
        puts_(t, "all\t");
        if (l->kind == K_RUNID) {
            put(t, run_name, run_name_len);
        } else if (l->kind == K_NUM_Q) {
            put_long(t, (double)n);
        } else {
            double total = 0.0;
            for (int64_t q = 0; q < n; q++) total += l->values[q];
            if (l->kind == K_LONG) {
                if (complete && l->measure == M_NUM_REL) {
                    int64_t all = 0; /* m_num_rel.c under -c: every judgment graded above 0 */
                    for (int64_t q = 0; q < n; q++)
                        for (int64_t g = 1; g < L->top; g++) all += L->levels[q * L->top + g];
                    total = (double)all;
                }
                put_long(t, total);
            } else if (l->kind == K_GM) {
                put_double(t, exp(total / (double)n));
            } else {
                put_double(t, total / (double)n);
            }
        }
        put(t, "\n", 1);
    }
}

/* ------------------------------------------------------------------------------------ ids and sorting */

typedef struct {
    const int64_t *off;
    const uint8_t *data;
} Ids;

/* bytes order of ids a and b (Python's order of bytes: memcmp, then the shorter first) */
static int id_cmp(const Ids *ids, int64_t a, int64_t b) {
    int64_t la = ids->off[a + 1] - ids->off[a], lb = ids->off[b + 1] - ids->off[b];
    int c = memcmp(ids->data + ids->off[a], ids->data + ids->off[b], (size_t)(la < lb ? la : lb));
    if (c) return c;
    return (la > lb) - (la < lb);
}

QK_MERGE_SORT(id_sort, Ids, id_cmp)

/* The code of id bytes s[0..len) among the sorted vocabulary (vocab rows of ids), or -1. */
static int64_t find_code(const Ids *ids, const int64_t *vocab, int64_t n, const uint8_t *s, int64_t len) {
    int64_t lo = 0, hi = n;
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2, v = vocab[mid];
        int64_t lv = ids->off[v + 1] - ids->off[v];
        int c = memcmp(ids->data + ids->off[v], s, (size_t)(lv < len ? lv : len));
        if (!c) c = (lv > len) - (lv < len);
        if (c == 0) return mid;
        if (c < 0) lo = mid + 1;
        else hi = mid;
    }
    return -1;
}

/* 1 when buf holds a NUL byte or a line longer than max_line bytes (its line end not counted). */
static int unclean(const uint8_t *buf, int64_t len, int64_t max_line) {
    if (memchr(buf, 0, (size_t)len)) return 1;
    int64_t begin = 0;
    while (begin < len) {
        const uint8_t *e = memchr(buf + begin, '\n', (size_t)(len - begin));
        int64_t end = e ? (int64_t)(e - buf) : len;
        if (end - begin > max_line) return 1;
        begin = end + 1;
    }
    return 0;
}

/* ------------------------------------------------------------------------------------ the cutoffs */

static const int64_t CUTS[] = {5, 10, 15, 20, 30, 100, 200, 500, 1000};
static const int64_t SUCCESS_CUTS[] = {1, 5, 10};
static const int64_t UNJ_CUTS[] = {5, 10, 20};

/* Each cutoff measure's cutoffs from `given` (for each of C_P .. C_UNJ in turn: a count n, then n
 * cutoffs ascending; n = 0: the default cutoffs of trec_names._SPECS). */
static void te_cuts(Ctx *c, const int64_t *given) {
    for (int m = 0; m < C_COUNT; m++) {
        int64_t n = given[0];
        if (n > 0) {
            c->cut[m] = given + 1;
            c->n_cut[m] = n;
        } else {
            c->cut[m] = m == C_SUCCESS ? SUCCESS_CUTS : m == C_UNJ ? UNJ_CUTS : CUTS;
            c->n_cut[m] = m == C_SUCCESS || m == C_UNJ ? 3 : 9;
        }
        given += 1 + (n > 0 ? n : 0);
    }
}

/* How many lines the measures of `mask` print a query (a line per parameter value). */
static int64_t te_lines(const Ctx *c, uint64_t mask) {
    static const int CUT_OF[][2] = {{M_P, C_P}, {M_RECALL, C_RECALL}, {M_NDCG_CUT, C_NDCG_CUT}, {M_MAP_CUT, C_MAP_CUT},
                                    {M_RELATIVE_P, C_RELATIVE_P}, {M_SUCCESS, C_SUCCESS}, {M_UNJ, C_UNJ}};
    int64_t lines = 0;
    for (int i = M_RUNID; i <= M_UNJ; i++) {
        if (!(mask & ((uint64_t)1 << i))) continue;
        int64_t each = i == M_IPREC ? N_LEVELS : i == M_RPREC_MULT ? N_MULTS : 1;
        for (int j = 0; j < C_COUNT; j++)
            if (CUT_OF[j][0] == i) each = c->n_cut[CUT_OF[j][1]];
        lines += each;
    }
    return lines;
}

/* --------------------------------------------------------------------------------------------- entry */

/*
 * The text `qrelkit trec_eval` prints for the judgments qrels[0..qrels_len) and the run run[0..run_len)
 * (each whole lines ending with '\n', ASCII), the measures of `mask` (bit i: TE_ORDER[i]) with their
 * default parameters but the cutoffs `cuts` gives (te_cuts), and the options: flags 1 -q, 2 -c, 4 -J, 8 the
 * summary; rel_level -l; max_per_topic -M (< 0: none); num_docs -N; max_line: the longest line of TREC
 * text. On QK_OK *out holds the text (free
 * it with qk_te_free) and *out_len its length; QK_REFUSE: the lean path takes the files; QK_NOMEM.
 */
int64_t qk_trec_eval(const uint8_t *qrels, int64_t qrels_len, const uint8_t *run, int64_t run_len, uint64_t mask,
                     const int64_t *cuts, int32_t flags, int64_t rel_level, int64_t max_per_topic, int64_t num_docs,
                     int64_t max_line, uint8_t **out, int64_t *out_len) {
    int per_query = flags & 1, complete = flags & 2, judged_only = flags & 4, summary = flags & 8;
    int64_t status = QK_OK;
    Result *qr = NULL, *rr = NULL;
    int64_t *seg = NULL, *tmp = NULL, *vocab = NULL, *code = NULL, *first = NULL, *order = NULL;
    int64_t *gq = NULL, *pos = NULL, *judged = NULL, *q_id_off = NULL, *levels = NULL, *slot = NULL;
    uint8_t *q_ids = NULL, *stand_in = NULL;
    Lists L = {0};
    Ctx c = {0};
    Text t = {0};
    *out = NULL;
    *out_len = 0;
#define REFUSE() do { status = QK_REFUSE; goto done; } while (0)
#define NOMEM() do { status = QK_NOMEM; goto done; } while (0)
#define ALLOC(p, count) do { (p) = calloc((size_t)((count) > 0 ? (count) : 1), sizeof *(p)); if (!(p)) NOMEM(); } while (0)
    if (unclean(qrels, qrels_len, max_line) || unclean(run, run_len, max_line)) REFUSE();
    if (rel_level < 0) REFUSE();
    qr = qk_scan_qrels(qrels, qrels_len, 1);
    if (!qr) NOMEM();
    if (qr->status) REFUSE();
    int64_t rows = qr->kept;
    if (!rows) REFUSE();
    Ids qids = {qr->q_off, qr->q_data};
    /* the vocabulary: the first row of each stretch of one query, sorted, without repeats */
    ALLOC(seg, rows);
    ALLOC(tmp, rows + 1); /* (also a copy of first: n + 1 entries) */
    int64_t segs = 0;
    for (int64_t i = 0; i < rows; i++)
        if (i == 0 || id_cmp(&qids, i - 1, i) != 0) seg[segs++] = i;
    id_sort(&qids, seg, tmp, segs);
    ALLOC(vocab, segs);
    int64_t n = 0;
    for (int64_t s = 0; s < segs; s++)
        if (n == 0 || id_cmp(&qids, vocab[n - 1], seg[s]) != 0) vocab[n++] = seg[s];
    ALLOC(code, rows);
    int64_t top = 1;
    for (int64_t i = 0; i < rows; i++) {
        code[i] = (i > 0 && id_cmp(&qids, i - 1, i) == 0) ? code[i - 1]
                                                            : find_code(&qids, vocab, n, qr->q_data + qr->q_off[i],
                                                                        qr->q_off[i + 1] - qr->q_off[i]);
        if (qr->rank[i] >= 0 && qr->rank[i] + 1 > top) top = qr->rank[i] + 1;
    }
    if (top > MAX_LEVELS) REFUSE();
    ALLOC(first, n + 1);
    ALLOC(order, rows);
    for (int64_t i = 0; i < rows; i++) first[code[i] + 1]++;
    for (int64_t q = 0; q < n; q++) first[q + 1] += first[q];
    for (int64_t q = 0; q <= n; q++) tmp[q] = first[q];
    for (int64_t i = 0; i < rows; i++) order[tmp[code[i]]++] = i;
    int64_t dup = qk_judged_dups(n, first, order, qr->d_off, qr->d_data);
    if (dup < 0) NOMEM();
    if (dup) REFUSE();
    ALLOC(levels, n * top);
    for (int64_t i = 0; i < rows; i++)
        if (qr->rank[i] >= 0) levels[code[i] * top + qr->rank[i]]++;
    /* the query ids, in the vocabulary's order */
    ALLOC(q_id_off, n + 1);
    for (int64_t q = 0; q < n; q++) q_id_off[q + 1] = q_id_off[q] + qr->q_off[vocab[q] + 1] - qr->q_off[vocab[q]];
    ALLOC(q_ids, q_id_off[n]);
    for (int64_t q = 0; q < n; q++)
        memcpy(q_ids + q_id_off[q], qr->q_data + qr->q_off[vocab[q]], (size_t)(q_id_off[q + 1] - q_id_off[q]));

    rr = qk_scan_run(run, run_len, 0, 0, 2 /* comment lines skipped: _native.COMMENTS */);
    if (!rr) NOMEM();
    if (rr->status) REFUSE();
    int64_t groups = rr->groups, kept = rr->kept;
    if (!groups) REFUSE();
    /* a query that comes back in the run: the readers report it */
    Ids rids = {rr->q_off, rr->q_data};
    free(tmp);
    ALLOC(tmp, 2 * groups);
    int64_t *heads = tmp;
    for (int64_t g = 0; g < groups; g++) heads[g] = rr->group_first[g];
    id_sort(&rids, heads, heads + groups, groups);
    for (int64_t g = 1; g < groups; g++)
        if (id_cmp(&rids, heads[g - 1], heads[g]) == 0) REFUSE();
    ALLOC(gq, groups);
    for (int64_t g = 0; g < groups; g++) {
        int64_t f = rr->group_first[g];
        gq[g] = find_code(&qids, vocab, n, rr->q_data + rr->q_off[f], rr->q_off[f + 1] - rr->q_off[f]);
    }
    ALLOC(pos, kept);
    ALLOC(judged, kept);
    if (qk_trec_rank(groups, rr->group_first, gq, kept, rr->score, rr->d_off, rr->d_data, 0, first, order,
                     qr->d_off, qr->d_data, pos, judged) != QK_OK)
        NOMEM();

    /* each query's sparse list: the judged documents it returned, by rank (trec_lean._lists) */
    L.n = n;
    L.top = top;
    L.rel_level = rel_level;
    L.levels = levels;
    ALLOC(L.start, n);
    ALLOC(L.count, n);
    ALLOC(L.pos, kept);
    ALLOC(L.rel, kept);
    ALLOC(L.rsf, kept);
    ALLOC(L.nsf, kept);
    ALLOC(L.num_ret, n);
    ALLOC(L.num_rel, n);
    ALLOC(L.num_nonrel, n);
    ALLOC(L.num_rel_ret, n);
    ALLOC(stand_in, n);
    L.stand_in = stand_in;
    for (int64_t q = 0; q < n; q++) stand_in[q] = 1;
    int64_t longest_group = 0;
    for (int64_t g = 0; g < groups; g++) {
        int64_t b = g + 1 < groups ? rr->group_first[g + 1] : kept;
        if (b - rr->group_first[g] > longest_group) longest_group = b - rr->group_first[g];
    }
    ALLOC(slot, longest_group);
    int64_t used = 0;
    for (int64_t g = 0; g < groups; g++) {
        int64_t q = gq[g], a = rr->group_first[g], b = g + 1 < groups ? rr->group_first[g + 1] : kept;
        if (q < 0) continue;
        stand_in[q] = 0;
        int64_t shown = max_per_topic < 0 || b - a < max_per_topic ? b - a : max_per_topic;
        L.num_ret[q] = shown;
        memset(slot, 0, (size_t)(b - a) * sizeof *slot);
        for (int64_t i = a; i < b; i++) {
            if (judged[i] < 0 || (max_per_topic >= 0 && pos[i] >= max_per_topic)) continue;
            int64_t gr = qr->rank[judged[i]];
            slot[pos[i]] = (gr >= 0 ? gr : UNJ) + 3;
        }
        L.start[q] = used;
        for (int64_t p = 0; p < b - a; p++)
            if (slot[p]) {
                L.pos[used] = p;
                L.rel[used] = slot[p] - 3;
                used++;
            }
        L.count[q] = used - L.start[q];
    }
    if (judged_only) { /* only judged documents are ranked: ranks among them */
        for (int64_t q = 0; q < n; q++) {
            int64_t s = L.start[q], m = 0;
            for (int64_t i = 0; i < L.count[q]; i++)
                if (L.rel[s + i] >= 0) {
                    L.rel[s + m] = L.rel[s + i];
                    L.pos[s + m] = m;
                    m++;
                }
            L.count[q] = m;
            L.num_ret[q] = m;
        }
    }
    int any_stand_in = 0;
    for (int64_t q = 0; q < n; q++)
        if (stand_in[q]) {
            any_stand_in = 1;
            L.num_ret[q] = judged_only || max_per_topic == 0 ? 0 : 1;
            L.count[q] = 0;
        }
    if (any_stand_in && !complete) REFUSE(); /* trec_eval stops at the query: the usual path says so */
    int64_t level0 = 0;
    for (int64_t g = 0; g < top; g++) level0 += levels[g];
    if (!level0) REFUSE();
    int64_t cut = rel_level < top ? rel_level : top, longest = 0, widest = 0;
    for (int64_t q = 0; q < n; q++) {
        for (int64_t g = 0; g < top; g++) {
            if (g >= cut) L.num_rel[q] += levels[q * top + g];
            else L.num_nonrel[q] += levels[q * top + g];
        }
        int64_t s = L.start[q], r = 0, nr = 0;
        for (int64_t i = 0; i < L.count[q]; i++) {
            int64_t code_ = L.rel[s + i];
            r += code_ >= rel_level;
            nr += code_ >= 0 && code_ < rel_level;
            L.rsf[s + i] = r;
            L.nsf[s + i] = nr;
        }
        L.num_rel_ret[q] = r;
        if (L.num_ret[q] > longest) longest = L.num_ret[q];
        if (L.count[q] > widest) widest = L.count[q];
        int64_t ideal = te_ideal_length(&L, q);
        if (ideal > widest) widest = ideal;
    }
    L.longest = longest;

    /* the measures */
    te_cuts(&c, cuts);
    int64_t lines = te_lines(&c, mask);
    if (lines > MAX_VALUES / (n ? n : 1)) REFUSE(); /* thousands of cutoffs: the lean path's, as before */
    c.L = &L;
    ALLOC(c.lines, lines);
    ALLOC(c.pool, lines * (n ? n : 1));
    c.scratch_len = (widest > longest ? widest : longest) + 16; /* and room for every level of iprec */
    ALLOC(c.scratch, 5 * c.scratch_len);
    te_compute(&c, mask, num_docs);
    if (c.nomem) NOMEM();
    if (c.refuse) REFUSE();
    if (rr->tag_start < 0 || rr->tag_len == 0) REFUSE(); /* no tag: the lean path names the run after its file */
    const char *tag = (const char *)run + rr->tag_start;
    emit(&t, &c, &L, q_ids, q_id_off, tag, rr->tag_len, per_query, summary, complete);
    if (t.nomem) NOMEM();
    *out = (uint8_t *)t.data;
    *out_len = t.len;
    t.data = NULL;
done:
    for (int64_t i = 0; i < c.n_lines; i++) free(c.lines[i].strings);
    free(c.lines);
    free(c.pool);
    free(c.scratch);
    free(t.data);
    free(L.start), free(L.count), free(L.pos), free(L.rel), free(L.rsf), free(L.nsf);
    free(L.num_ret), free(L.num_rel), free(L.num_nonrel), free(L.num_rel_ret);
    free(seg), free(tmp), free(vocab), free(code), free(first), free(order), free(gq), free(pos), free(judged);
    free(q_id_off), free(levels), free(slot), free(q_ids), free(stand_in);
    qk_free(qr);
    qk_free(rr);
    return status;
#undef REFUSE
#undef NOMEM
#undef ALLOC
}

/* Free the text qk_trec_eval returned. */
void qk_te_free(uint8_t *p) { free(p); }
