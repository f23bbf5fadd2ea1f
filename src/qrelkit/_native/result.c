/*
 * What a scan returns (Result, in qkscan.h): a new one, room for more rows, a row appended, and qk_free.
 * qk_scan_run, qk_scan_qrels and qk_top_result build their results with these.
 */
#include <string.h>

#include "qkscan.h"

/* Room for `rows` kept rows in all (the offsets need one more entry) and q_more, d_more more bytes of
 * query and document ids. */
int reserve(Result *o, int64_t rows, int64_t q_more, int64_t d_more) {
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
int append_row(Result *o, const uint8_t *q, int64_t q_len, const uint8_t *d, int64_t d_len, double score,
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

/* Free a result of qk_scan_run, qk_scan_qrels or qk_top_result (NULL is ignored). */
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

/* An empty result with room for the first rows; NULL when memory runs out. */
Result *new_result(void) {
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
