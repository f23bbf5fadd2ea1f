/*
 * The internal interface of qrelkit's native scanner: its .c files in src/qrelkit/_native are compiled
 * together into one library (hatch_build.py), which _native/__init__.py loads with ctypes (naming every
 * exported qk_* function there):
 *
 *   lex.c        numbers, UTF-8 and the id rule, the split of a line into fields
 *   result.c     what a scan returns (Result, below): its rows appended, and qk_free
 *   scan.c       the scans of a block of a run and of judgments (qk_scan_run, qk_scan_qrels; the text
 *                they take is described there), qk_count_lines, qk_abi
 *   split.c      the small path's split, gather and id words (qk_split, qk_gather, qk_words), and where
 *                a block of a file grouped by query may be cut (qk_group_start)
 *   top.c        each query's top rows across the blocks of a run in any order (qk_top_*)
 *   trec_rank.c  trec_eval's ranking and join, for its fast path (qk_judged_dups, qk_trec_rank)
 *   trec_eval.c  `qrelkit trec_eval` whole on small files: the lists, the measures and the text
 *                (qk_trec_eval, qk_te_free, qk_te_measure)
 *
 * A helper that one file uses is static in it. The helpers that several files use are declared here
 * (and described where they are defined), hidden from the library's exports; the small ones that run for
 * every row are defined here, static inline.
 *
 * Plain C99 with no Python API: loaded with ctypes, which releases the GIL during calls, so blocks are
 * scanned on several threads at once. Every function is reentrant.
 */
#ifndef QKSCAN_H
#define QKSCAN_H

#include <stdint.h>
#include <stdlib.h>

/* What qk_abi returns: _native/__init__.py's ABI, bumped with every change to the exported functions or
 * their structures, so that a library built from other sources is not used. */
#define QK_ABI 12

#define QK_OK 0
#define QK_REFUSE 1
#define QK_NOMEM 2

/* The helpers the files share are kept out of the library's exported symbols where the compiler can do so
 * (GCC and Clang outside Windows): the exports stay the qk_* functions. */
#if defined(__GNUC__) && !defined(_WIN32) && !defined(__CYGWIN__)
#define QK_INTERNAL __attribute__((visibility("hidden")))
#else
#define QK_INTERNAL
#endif

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

/* Room for `need` entries of `size` bytes in *p (capacity *cap): doubling from 1024 entries, or, with
 * `small` (the many per-query arrays of TopQuery), growing by half again from 16, so that each array
 * stays near its size. 0 when memory runs out (*p is then unchanged). */
static inline int grow_by(void **p, int64_t *cap, int64_t need, size_t size, int small) {
    if (need <= *cap) return 1;
    int64_t next = *cap ? *cap : (small ? 16 : 1024);
    while (next < need) next = small ? next + next / 2 + 1 : 2 * next;
    void *q = realloc(*p, (size_t)next * size);
    if (!q) return 0;
    *p = q;
    *cap = next;
    return 1;
}

static inline int grow(void **p, int64_t *cap, int64_t need, size_t size) {
    return grow_by(p, cap, need, size, 0);
}

static inline uint64_t hash_bytes(const uint8_t *s, int64_t n) {
    uint64_t h = 0xCBF29CE484222325ULL; /* FNV-1a */
    for (int64_t i = 0; i < n; i++) h = (h ^ s[i]) * 0x100000001B3ULL;
    return h ^ (h >> 29);
}

/* --------------------------------------------------------------------------------------------- lex.c */

QK_INTERNAL int parse_score(const uint8_t *s, int64_t n, double *out);
QK_INTERNAL int parse_rank(const uint8_t *s, int64_t n, int64_t *out);
QK_INTERNAL int utf8_valid(const uint8_t *s, int64_t n);

/* What each byte is to the line splitter: part of a field, whitespace between fields, a carriage return
 * (whitespace only right before '\n'), the line end, or a byte no clean file holds (another control
 * character, DEL: the id rule forbids them anywhere). */
enum { B_FIELD = 0, B_SPACE, B_CR, B_LF, B_BAD };

QK_INTERNAL extern const uint8_t BYTE_CLASS[256];

/* What split_line may take beyond `fields` fields: fields after the last (a run's, ignored and counted),
 * and comment lines (a line whose first byte is '#', skipped as a blank line, as trec_eval 10 skips it). */
#define SPLIT_TRAILING 1
#define SPLIT_COMMENTS 2

QK_INTERNAL int split_line(const uint8_t *buf, int64_t *at, int fields, int flags, int64_t *start,
                           int64_t *length, uint8_t *high);

/* The exported functions one file calls in another (trec_eval.c runs the scans and the ranking). */
Result *qk_scan_run(const uint8_t *buf, int64_t len, int64_t keep_top, int32_t rank_single, int32_t flags);
Result *qk_scan_qrels(const uint8_t *buf, int64_t len, int32_t comments);
void qk_free(Result *o);
int64_t qk_judged_dups(int64_t queries, const int64_t *first, const int64_t *order, const int64_t *d_off,
                       const uint8_t *d_data);
int64_t qk_trec_rank(int64_t groups, const int64_t *group_first, const int64_t *group_qcode, int64_t rows,
                     const double *score, const int64_t *d_off, const uint8_t *d_data, int32_t single,
                     const int64_t *j_first, const int64_t *j_order, const int64_t *j_off, const uint8_t *j_data,
                     int64_t *pos_out, int64_t *judged_out);

/* Defines `static void NAME(const KEYS *k, int64_t *idx, int64_t *tmp, int64_t n)`: a stable merge sort of
 * the indices idx[0..n) by CMP(k, a, b) (< 0: a first), with scratch tmp[0..n); insertion sort below 16.
 * The ranking of trec_rank.c and the query ids of trec_eval.c sort with it. */
#define QK_MERGE_SORT(NAME, KEYS, CMP)                                                        \
    static void NAME(const KEYS *k, int64_t *idx, int64_t *tmp, int64_t n) {                \
        if (n < 16) {                                                                        \
            for (int64_t i = 1; i < n; i++) {                                                \
                int64_t v = idx[i], j = i;                                                   \
                while (j > 0 && CMP(k, v, idx[j - 1]) < 0) {                                 \
                    idx[j] = idx[j - 1];                                                     \
                    j--;                                                                     \
                }                                                                            \
                idx[j] = v;                                                                  \
            }                                                                                \
            return;                                                                          \
        }                                                                                    \
        int64_t h = n / 2;                                                                   \
        NAME(k, idx, tmp, h);                                                                \
        NAME(k, idx + h, tmp, n - h);                                                        \
        if (CMP(k, idx[h - 1], idx[h]) <= 0) return;                                         \
        memcpy(tmp, idx, (size_t)h * sizeof(int64_t));                                       \
        int64_t i = 0, j = h, o = 0;                                                         \
        while (i < h && j < n) idx[o++] = CMP(k, idx[j], tmp[i]) < 0 ? idx[j++] : tmp[i++];  \
        while (i < h) idx[o++] = tmp[i++];                                                   \
    }

/* ------------------------------------------------------------------------------------------ result.c */

QK_INTERNAL Result *new_result(void);
QK_INTERNAL int reserve(Result *o, int64_t rows, int64_t q_more, int64_t d_more);
QK_INTERNAL int append_row(Result *o, const uint8_t *q, int64_t q_len, const uint8_t *d, int64_t d_len,
                           double score, int64_t rank, int64_t line);

/* -------------------------------------------------------------------------------------------- scan.c */

QK_INTERNAL double kth_largest(double *v, int64_t n, int64_t k);

/* ------------------------------------------------------------------- trec_eval.c, trec_measures.c */

#define UNJ (-2) /* lean_kernels.UNJUDGED: a document judged with a negative grade */
#define RELSTRING_LENGTH 10
#define N_LEVELS 11 /* iprec_at_recall's and 11pt_avg's recall levels */
#define N_MULTS 10  /* Rprec_mult's multiples */

/* Each query's sparse list (lean_kernels.Lists): the judged documents it returned, by rank. */
typedef struct {
    int64_t n, top, rel_level;
    int64_t *start, *count;      /* each query's rows in the arrays below */
    int64_t *pos, *rel;          /* 0-based ranks (ascending) and codes of the returned judged documents */
    int64_t *rsf, *nsf;          /* relevant and judged non-relevant rows so far (running counts) */
    int64_t *num_ret, *num_rel, *num_nonrel, *num_rel_ret;
    int64_t *levels;             /* [n][top]: judgments per grade */
    uint8_t *stand_in;
    int64_t longest;             /* the largest num_ret */
    const double *lg;            /* lg[p] = log2(p + 2.0), p below every list's and ideal's length + 2 */
} Lists;

/* trec_eval's measures, in TE_ORDER's order (trec_eval.c): the bits of qk_trec_eval's mask. */
enum {
    M_RUNID, M_NUM_Q, M_NUM_RET, M_NUM_REL, M_NUM_REL_RET, M_MAP, M_GM_MAP, M_RPREC, M_BPREF, M_RECIP_RANK,
    M_IPREC, M_P, M_RELSTRING, M_RECALL, M_INFAP, M_GM_BPREF, M_RPREC_MULT, M_UTILITY, M_11PT, M_BING, M_G,
    M_NDCG, M_NDCG_REL, M_RNDCG, M_NDCG_CUT, M_MAP_CUT, M_RELATIVE_P, M_SUCCESS, M_SET_P, M_SET_RELATIVE_P,
    M_SET_RECALL, M_SET_MAP, M_SET_F, M_NUM_NONREL_JUDGED_RET, M_RBP, M_RBP_RESID, M_UNJ
};

/* One measure's printed line kinds (report/trec_eval.py). */
enum { K_DOUBLE, K_LONG, K_STRING, K_GM, K_RUNID, K_NUM_Q };

/* One printed line: a measure with one parameter's value (P_10) and its values per query. */
typedef struct {
    char name[48];  /* padded to 22 columns and a tab */
    int kind, measure;
    double *values; /* per query (K_DOUBLE, K_LONG, K_GM: logs) */
    char *strings;  /* K_STRING: per query, RELSTRING_LENGTH + 1 bytes each */
    double summary;
} Line;

/* The measures that take whole-number cutoffs, in the order of qk_trec_eval's `cuts`. */
enum { C_P, C_RECALL, C_NDCG_CUT, C_MAP_CUT, C_RELATIVE_P, C_SUCCESS, C_UNJ, C_COUNT };

/* The measures' work: the lists, the cutoffs, the lines computed so far and scratch space (trec_measures.c). */
typedef struct {
    const int64_t *cut[C_COUNT]; /* each cutoff measure's cutoffs, ascending */
    int64_t n_cut[C_COUNT];
    Lists *L;
    Line *lines;
    int64_t n_lines;
    double *pool; /* every line's values, n doubles each */
    int refuse, nomem;
    double *scratch; /* work space: 5 x scratch_len doubles */
    int64_t scratch_len;
} Ctx;

/* Every line of the measures of `mask` for every query (lean_trec_eval.lean_output's order); sets
 * c->refuse where the lean path steps aside, c->nomem. */
QK_INTERNAL void te_compute(Ctx *c, uint64_t mask, int64_t num_docs);
/* The number of positive-gain judgments of query q: its ideal ranking's length. */
QK_INTERNAL int64_t te_ideal_length(const Lists *L, int64_t q);

#endif
