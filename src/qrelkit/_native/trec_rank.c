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
#include <string.h>

#include "qkscan.h"

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
QK_MERGE_SORT(rank_sort, RankKeys, rank_cmp)

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
