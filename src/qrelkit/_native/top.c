/*
 * Each query's top rows across blocks, for runs in any order. Blocks are scanned (qk_scan_run, on any
 * thread) and added here in file order (qk_top_add): each query's rows accumulate, with copies of their
 * document ids, and are selected again (the rows fewer than keep_top others of the query beat) whenever
 * they number twice what the last selection kept. Every row the whole file would keep is kept by its
 * block and by every selection (a row beaten by fewer than keep_top rows of the file is beaten by fewer in
 * any subset), and a row the file would not keep is beaten by the file's top keep_top rows, which are all
 * here: so the final selection (qk_top_result) is the file's, exactly.
 */
#include <string.h>

#include "qkscan.h"

/* The query ids seen so far (TopState's index): open addressing from a hash to the id's index, and each
 * index's id. */
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
