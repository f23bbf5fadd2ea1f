/*
 * trec_eval's measures over the sparse lists, for qk_trec_eval (trec_eval.c): each the kernel of the same
 * name in qrelkit/engine/trec/lean_kernels.py, statement for statement (every sum formed in the same order
 * from the same terms), with the default parameters of qrelkit.measures.trec_names._SPECS.
 */
#if defined(__clang__) /* no a * b + c fused: GCC does not fuse under -std=c99, Clang does unless told */
#pragma STDC FP_CONTRACT OFF
#endif
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "qkscan.h"

#define MIN_GEO_MEAN 0.00001
#define INFAP_EPSILON 0.00001

/* The default parameters (trec_names._SPECS). */
static const double LEVELS[] = {0, .1, .2, .3, .4, .5, .6, .7, .8, .9, 1};
static const double MULTS[] = {0.2, 0.4, 0.6, 0.8, 1.0, 1.2, 1.4, 1.6, 1.8, 2.0};
#define RELSTRING_LENGTH 10
#define RBP_P 0.9

static int64_t rows_before(const Lists *L, int64_t q, int64_t k) {
    if (k < 0) k = 0;
    if (k > L->num_ret[q]) k = L->num_ret[q];
    const int64_t *p = L->pos + L->start[q];
    int64_t lo = 0, hi = L->count[q];
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        if (p[mid] < k) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

static int64_t hits(const Lists *L, int64_t q, int64_t k) {
    int64_t j = rows_before(L, q, k);
    return j > 0 ? L->rsf[L->start[q] + j - 1] : 0;
}

static double div0(double num, double den) { return den != 0 ? num / den : 0.0; }

/* "_k" in `buf` (32 bytes): a cutoff's part of a printed name (P_10). */
static const char *cut_name(char *buf, int64_t k) {
    snprintf(buf, 32, "_%lld", (long long)k);
    return buf;
}

static Line *line_of(Ctx *c, int measure, const char *name, const char *suffix, int kind) {
    Line *l = &c->lines[c->n_lines];
    l->values = c->pool + c->n_lines * (c->L->n ? c->L->n : 1);
    c->n_lines++;
    char full[40];
    snprintf(full, sizeof full, "%s%s", name, suffix ? suffix : "");
    snprintf(l->name, sizeof l->name, "%-22s\t", full);
    l->kind = kind;
    l->measure = measure;
    l->strings = NULL;
    return l;
}

/* m_map.c (every relevant row's term in rank order) / m_map_cut.c (the running sum within k): k < 0 is
 * without a cutoff. */
static double ap(const Lists *L, int64_t q, int64_t k) {
    const int64_t *pos = L->pos + L->start[q], *rsf = L->rsf + L->start[q], *rel = L->rel + L->start[q];
    int64_t m = L->count[q];
    if (k < 0) {
        double total = 0.0;
        for (int64_t i = 0; i < m; i++)
            if (rel[i] >= L->rel_level) total += (double)rsf[i] / ((double)pos[i] + 1.0);
        return div0(total, (double)L->num_rel[q]);
    }
    int64_t j = rows_before(L, q, k);
    double s = 0.0;
    for (int64_t i = 0; i < j; i++) {
        double term = rel[i] >= L->rel_level ? (double)rsf[i] / ((double)pos[i] + 1.0) : 0.0;
        s = i ? s + term : term;
    }
    return div0(j > 0 ? s : 0.0, (double)L->num_rel[q]);
}

static double bpref(const Lists *L, int64_t q) {
    const int64_t *rel = L->rel + L->start[q], *nsf = L->nsf + L->start[q];
    double R = (double)L->num_rel[q], N = (double)L->num_nonrel[q];
    double total = 0.0;
    for (int64_t i = 0; i < L->count[q]; i++) {
        if (rel[i] < L->rel_level) continue;
        double above = (double)nsf[i];
        total += nsf[i] > 0 ? 1.0 - (above < R ? above : R) / (N < R ? N : R) : 1.0;
    }
    return div0(total, R);
}

static int64_t lround_(double x) {
    if (x >= 0) {
        double f = floor(x);
        return (int64_t)f + (x - f >= 0.5);
    }
    double f = floor(-x);
    return -(int64_t)f - (-x - f >= 0.5);
}

/* iprec_at_recall at each level of `levels` for query q (lean_kernels.iprec_at_recall), without NaN. */
static void iprec(const Lists *L, int64_t q, const double *levels, int64_t n_levels, double *interp, double *out) {
    const int64_t *pos = L->pos + L->start[q], *rsf = L->rsf + L->start[q], *rel = L->rel + L->start[q];
    int64_t m = 0;
    for (int64_t i = 0; i < L->count[q]; i++)
        if (rel[i] >= L->rel_level) interp[m++] = (double)rsf[i] / ((double)pos[i] + 1.0);
    double best = -1.0;
    for (int64_t i = m - 1; i >= 0; i--) {
        best = interp[i] > best ? interp[i] : best;
        interp[i] = best;
    }
    int64_t nrr = L->num_rel_ret[q];
    for (int64_t l = 0; l < n_levels; l++) {
        int64_t t = lround_(levels[l] * (double)L->num_rel[q]);
        out[l] = t <= nrr && nrr > 0 ? interp[(t > 1 ? t : 1) - 1] : 0.0;
    }
}

static int empty_at(const Lists *L, int64_t q, const double *levels, int64_t n_levels) {
    if (L->num_ret[q] != 0) return 0;
    double R = (double)L->num_rel[q];
    for (int64_t l = 0; l < n_levels; l++)
        if (levels[l] * R < 0.5) return 1;
    return 0;
}

/* The ideal gains of query q with the grades as gains (lean_kernels._ideal_gains): each positive grade,
 * highest first, once per judgment; their number. */
static int64_t ideal_gains(const Lists *L, int64_t q, double *out) {
    int64_t m = 0;
    for (int64_t g = L->top - 1; g >= 1; g--)
        for (int64_t c = 0; c < L->levels[q * L->top + g]; c++) out[m++] = (double)g;
    return m;
}

int64_t te_ideal_length(const Lists *L, int64_t q) {
    int64_t m = 0;
    for (int64_t g = 1; g < L->top; g++) m += L->levels[q * L->top + g];
    return m;
}

static double gain_of(int64_t r) { return r >= 0 ? (double)r : 0.0; }

/* running sums in place, the first term itself (lean_kernels._prefix) */
static void running(double *v, int64_t n) {
    for (int64_t i = 1; i < n; i++) v[i] = v[i - 1] + v[i];
}

static double at(const double *prefix, int64_t j) { return j > 0 ? prefix[j - 1] : 0.0; }

static double ndcg(const Lists *L, int64_t q, double *ideal) {
    const int64_t *pos = L->pos + L->start[q], *rel = L->rel + L->start[q];
    double num = 0.0, den = 0.0;
    for (int64_t i = 0; i < L->count[q]; i++) {
        double g = gain_of(rel[i]);
        num += g != 0 ? g / L->lg[pos[i]] : 0.0;
    }
    int64_t m = ideal_gains(L, q, ideal);
    for (int64_t p = 0; p < m; p++) den += ideal[p] / L->lg[p];
    return div0(num, den);
}

/* m_G.c (lean_kernels.g_measure); sets *refuse where the numpy engine's logarithm is of 0 or below. */
static double g_measure(const Lists *L, int64_t q, double *ideal, int *refuse) {
    const int64_t *pos = L->pos + L->start[q], *rel = L->rel + L->start[q];
    int64_t length = ideal_gains(L, q, ideal);
    double whole = 0.0;
    for (int64_t i = 0; i < length; i++) whole += ideal[i];
    for (int64_t i = 0; i < length; i++) ideal[i] = ideal[i] > 1.0 ? ideal[i] : 1.0;
    running(ideal, length);
    double total = 0.0, have = 0.0;
    for (int64_t i = 0; i < L->count[q]; i++) {
        double g = gain_of(rel[i]);
        have = i ? have + g : g;
        if (g == 0) continue;
        int64_t p = pos[i];
        double cost = length > 0 ? ideal[p < length - 1 ? p : length - 1] : 0.0;
        cost = cost + (double)(p - length + 1 > 0 ? p - length + 1 : 0);
        double x = 2.0 + cost - have;
        if (!(x > 1.0)) {
            *refuse = 1;
            return 0.0;
        }
        total += g / log2(x);
    }
    return div0(total, whole);
}

/* dcg (running, per row) and idcg (running, per ideal rank) of query q; the ideal's length. */
static int64_t dcg_rows(const Lists *L, int64_t q, double *dcg, double *idcg) {
    const int64_t *pos = L->pos + L->start[q], *rel = L->rel + L->start[q];
    for (int64_t i = 0; i < L->count[q]; i++) {
        double g = gain_of(rel[i]);
        dcg[i] = g != 0 ? g / L->lg[pos[i]] : 0.0;
    }
    running(dcg, L->count[q]);
    int64_t m = ideal_gains(L, q, idcg);
    for (int64_t p = 0; p < m; p++) idcg[p] = idcg[p] / L->lg[p];
    running(idcg, m);
    return m;
}

static double ndcg_rel(const Lists *L, int64_t q, double *dcg, double *idcg, int *refuse) {
    const int64_t *pos = L->pos + L->start[q], *rel = L->rel + L->start[q];
    int64_t length = dcg_rows(L, q, dcg, idcg), found = 0, m = L->count[q];
    double total = 0.0;
    for (int64_t i = 0; i < m; i++) {
        if (!(gain_of(rel[i]) > 0)) continue;
        found++;
        int64_t j = pos[i] + 1 < length ? pos[i] + 1 : length;
        double den = at(idcg, j);
        if (den == 0) goto refused;
        total += dcg[i] / den;
    }
    double missed = (double)(length - found) * at(dcg, m);
    if (length == 0 && missed == 0) return 0.0;
    double den = at(idcg, length);
    if (den == 0) goto refused;
    total = total + missed / den;
    return total > 0 ? total / (double)(length > 0 ? length : 1) : 0.0;
refused:
    *refuse = 1;
    return 0.0;
}

static double rndcg(const Lists *L, int64_t q, double *dcg, double *idcg, double *ideal, int *refuse) {
    if (L->num_rel[q] == 0) return 0.0;
    int64_t length = dcg_rows(L, q, dcg, idcg), m = L->count[q], count = 0;
    ideal_gains(L, q, ideal);
    double total = 0.0;
    for (int64_t i = 0; i < length; i++) {
        if (i == length - 1 || ideal[i + 1] != ideal[i]) {
            double den = at(idcg, i + 1);
            if (den == 0) goto refused;
            total += at(dcg, rows_before(L, q, i + 1)) / den;
            count++;
        }
    }
    if (L->num_ret[q] > length + 1) {
        double den = at(idcg, length);
        if (den == 0) goto refused;
        total += at(dcg, m) / den;
        count++;
    }
    if (count == 0) goto refused;
    return total / (double)count;
refused:
    *refuse = 1;
    return 0.0;
}

/* ndcg_cut at k from query q's dcg_rows (the ideal of that length). */
static double ndcg_cut(const Lists *L, int64_t q, int64_t k, int64_t length, const double *dcg, const double *idcg) {
    double num = at(dcg, rows_before(L, q, k));
    double den = at(idcg, k < length ? k : length);
    return den > 0 ? num / den : num;
}

/* m_rbp.c's gains scaled to 0..1 on query q (lean_kernels.rbp, default gains); *refuse on a zero range. */
static double rbp(const Lists *L, int64_t q, const double *powers, int *refuse) {
    const int64_t *pos = L->pos + L->start[q], *rel = L->rel + L->start[q];
    int64_t highest = -1;
    for (int64_t g = 0; g < L->top; g++)
        if (L->levels[q * L->top + g] > 0) highest = g;
    double lo = INFINITY, hi = -INFINITY;
    for (int64_t g = 0; g < L->top; g++)
        if (highest >= g) {
            lo = (double)g < lo ? (double)g : lo;
            hi = (double)g > hi ? (double)g : hi;
        }
    int scale = lo < 0 || hi > 1;
    double total = 0.0;
    for (int64_t i = 0; i < L->count[q]; i++) {
        double g = gain_of(rel[i]);
        if (scale && rel[i] >= 0) {
            if (hi - lo == 0) {
                *refuse = 1;
                return 0.0;
            }
            g = (g - lo) / (hi - lo);
        }
        if (g != 0) total += g * powers[pos[i]];
    }
    return (1.0 - RBP_P) * total;
}

static double rbp_resid(const Lists *L, int64_t q, const double *powers) {
    const int64_t *pos = L->pos + L->start[q], *rel = L->rel + L->start[q];
    int64_t n = L->num_ret[q], judged = 0;
    for (int64_t i = 0; i < L->count[q]; i++)
        if (rel[i] >= 0 && pos[i] < n) judged++;
    if (judged >= n) return 0.0;
    double s = 0.0;
    int started = 0;
    int64_t from = 0;
    for (int64_t i = 0; i <= L->count[q]; i++) {
        int64_t stop;
        if (i < L->count[q]) {
            if (!(rel[i] >= 0 && pos[i] < n)) continue;
            stop = pos[i];
        } else {
            stop = n;
        }
        for (int64_t r = from; r < stop; r++) {
            s = started ? s + powers[r] : powers[r];
            started = 1;
        }
        from = stop + 1;
    }
    return powers[n] + (1 - RBP_P) * s;
}

static double infap(const Lists *L, int64_t q) {
    const int64_t *pos = L->pos + L->start[q], *rel = L->rel + L->start[q];
    const int64_t *rsf = L->rsf + L->start[q], *nsf = L->nsf + L->start[q];
    double total = 0.0;
    int64_t unj = 0;
    for (int64_t i = 0; i < L->count[q]; i++) {
        if (rel[i] == UNJ) unj++;
        if (rel[i] < L->rel_level) continue;
        if (pos[i] == 0) {
            total += 1.0;
            continue;
        }
        double fj = (double)pos[i];
        int64_t rr = rsf[i] - 1, nonrel = nsf[i];
        total += 1.0 / (fj + 1.0) + (fj / (fj + 1.0)) * ((double)(rr + nonrel + unj) / fj) *
                                        (((double)rr + INFAP_EPSILON) / ((double)(rr + nonrel) + 2 * INFAP_EPSILON));
    }
    return div0(total, (double)L->num_rel[q]);
}

static double bin_g(const Lists *L, int64_t q) {
    const int64_t *pos = L->pos + L->start[q], *rel = L->rel + L->start[q], *rsf = L->rsf + L->start[q];
    double total = 0.0;
    for (int64_t i = 0; i < L->count[q]; i++)
        if (rel[i] >= L->rel_level) total += 1.0 / L->lg[1 + pos[i] - rsf[i]]; /* log2(3 + pos - rsf) */
    return div0(total, L->num_rel_ret[q] > 0 ? (double)L->num_rel[q] : 0.0);
}

static void relstring(const Lists *L, int64_t q, char *out) {
    int64_t width = L->num_ret[q] < RELSTRING_LENGTH ? L->num_ret[q] : RELSTRING_LENGTH;
    memset(out, '-', (size_t)width);
    out[width] = 0;
    const int64_t *pos = L->pos + L->start[q], *rel = L->rel + L->start[q];
    for (int64_t i = 0; i < L->count[q]; i++) {
        if (pos[i] >= width) continue;
        int64_t r = rel[i];
        out[pos[i]] = r > 9 ? '>' : r >= 0 ? (char)('0' + r) : r == UNJ ? '.' : '<';
    }
}

/* Each measure of `mask` for every query, as lines (lean_trec_eval.lean_output's order). */
void te_compute(Ctx *c, uint64_t mask, int64_t num_docs) {
    Lists *L = c->L;
    int64_t n = L->n;
    double *a = c->scratch, *b = c->scratch + c->scratch_len, *d = c->scratch + 2 * c->scratch_len;
    double *powers = c->scratch + 3 * c->scratch_len, *lg = c->scratch + 4 * c->scratch_len;
    for (int64_t p = 0; p < c->scratch_len; p++) lg[p] = log2((double)p + 2.0); /* each rank's log2(rank + 1) */
    L->lg = lg;
    powers[0] = 1.0;
    for (int64_t i = 1; i <= L->longest; i++) powers[i] = powers[i - 1] * RBP_P;
#define ON(m) (mask & ((uint64_t)1 << (m))) && (measure = (m), 1)
#define line(c, ...) line_of(c, measure, __VA_ARGS__)
    int measure = 0;
#define EACH for (int64_t q = 0; q < n; q++)
#define ONE(m, name, kind, value) \
    if (ON(m)) {                  \
        l = line(c, name, NULL, kind); \
        EACH l->values[q] = (value);   \
    }
    Line *l;
    char suffix[32];
    if (ON(M_RUNID)) line(c, "runid", NULL, K_RUNID);
    if (ON(M_NUM_Q)) line(c, "num_q", NULL, K_NUM_Q);
    ONE(M_NUM_RET, "num_ret", K_LONG, L->stand_in[q] ? 0.0 : (double)L->num_ret[q]);
    ONE(M_NUM_REL, "num_rel", K_LONG, (double)L->num_rel[q]);
    ONE(M_NUM_REL_RET, "num_rel_ret", K_LONG, (double)L->num_rel_ret[q]);
    ONE(M_MAP, "map", K_DOUBLE, ap(L, q, -1));
    if (ON(M_GM_MAP)) {
        l = line(c, "gm_map", NULL, K_GM);
        EACH {
            double v = ap(L, q, -1);
            l->values[q] = log(v > MIN_GEO_MEAN ? v : MIN_GEO_MEAN);
        }
    }
    if (ON(M_RPREC)) {
        l = line(c, "Rprec", NULL, K_DOUBLE);
        EACH {
            int64_t look = L->num_ret[q] < L->num_rel[q] ? L->num_ret[q] : L->num_rel[q];
            l->values[q] = div0((double)hits(L, q, look), look == 0 ? 0.0 : (double)L->num_rel[q]);
        }
    }
    ONE(M_BPREF, "bpref", K_DOUBLE, bpref(L, q));
    if (ON(M_RECIP_RANK)) {
        l = line(c, "recip_rank", NULL, K_DOUBLE);
        EACH {
            double v = 0.0;
            for (int64_t i = 0; i < L->count[q]; i++)
                if (L->rel[L->start[q] + i] >= L->rel_level) {
                    v = 1.0 / ((double)L->pos[L->start[q] + i] + 1.0);
                    break;
                }
            l->values[q] = v;
        }
    }
    if (ON(M_IPREC)) {
        Line *first = NULL;
        for (int64_t i = 0; i < N_LEVELS; i++) {
            snprintf(suffix, sizeof suffix, "_%3.2f", LEVELS[i]);
            Line *x = line(c, "iprec_at_recall", suffix, K_DOUBLE);
            if (!first) first = x;
        }
        EACH {
            iprec(L, q, LEVELS, N_LEVELS, a, b);
            for (int64_t i = 0; i < N_LEVELS; i++)
                first[i].values[q] = empty_at(L, q, LEVELS + i, 1) ? NAN : b[i];
        }
    }
    if (ON(M_P)) {
        for (int64_t i = 0; i < c->n_cut[C_P]; i++) {
            int64_t k = c->cut[C_P][i];
            l = line(c, "P", cut_name(suffix, k), K_DOUBLE);
            EACH l->values[q] = (double)hits(L, q, k) / (double)k;
        }
    }
    if (ON(M_RELSTRING)) {
        l = line(c, "relstring", NULL, K_STRING);
        l->strings = malloc((size_t)(n ? n : 1) * (RELSTRING_LENGTH + 1));
        if (!l->strings) {
            c->nomem = 1;
            return;
        }
        EACH {
            char *s = l->strings + q * (RELSTRING_LENGTH + 1);
            if (L->stand_in[q]) s[0] = 0;
            else relstring(L, q, s);
        }
    }
    if (ON(M_RECALL)) {
        for (int64_t i = 0; i < c->n_cut[C_RECALL]; i++) {
            int64_t k = c->cut[C_RECALL][i];
            l = line(c, "recall", cut_name(suffix, k), K_DOUBLE);
            EACH l->values[q] = div0((double)hits(L, q, k), (double)L->num_rel[q]);
        }
    }
    ONE(M_INFAP, "infAP", K_DOUBLE, infap(L, q));
    if (ON(M_GM_BPREF)) {
        l = line(c, "gm_bpref", NULL, K_GM);
        EACH {
            double v = bpref(L, q);
            l->values[q] = log(v > MIN_GEO_MEAN ? v : MIN_GEO_MEAN);
        }
    }
    if (ON(M_RPREC_MULT)) {
        for (int64_t i = 0; i < N_MULTS; i++) {
            snprintf(suffix, sizeof suffix, "_%3.2f", MULTS[i]);
            l = line(c, "Rprec_mult", suffix, K_DOUBLE);
            EACH {
                int64_t cut = (int64_t)floor(MULTS[i] * (double)L->num_rel[q] + 0.9);
                l->values[q] = div0((double)hits(L, q, cut), (double)cut);
            }
        }
    }
    if (ON(M_UTILITY)) {
        l = line(c, "utility", NULL, K_DOUBLE);
        EACH {
            int64_t nrr = L->num_rel_ret[q], nret = L->num_ret[q], R = L->num_rel[q];
            double v = 1.0 * (double)nrr + -1.0 * (double)(nret - nrr) + 0.0 * (double)(R - nrr) +
                       0.0 * (double)(num_docs + nrr - nret - R);
            l->values[q] = L->stand_in[q] ? 0.0 : v;
        }
    }
    if (ON(M_11PT)) {
        l = line(c, "11pt_avg", NULL, K_DOUBLE);
        EACH {
            iprec(L, q, LEVELS, N_LEVELS, a, b);
            double total = 0.0;
            for (int64_t i = N_LEVELS - 1; i >= 0; i--) total = total + b[i];
            l->values[q] = empty_at(L, q, LEVELS, N_LEVELS) ? NAN : total / (double)N_LEVELS;
        }
    }
    ONE(M_BING, "binG", K_DOUBLE, bin_g(L, q));
    ONE(M_G, "G", K_DOUBLE, g_measure(L, q, a, &c->refuse));
    ONE(M_NDCG, "ndcg", K_DOUBLE, ndcg(L, q, a));
    ONE(M_NDCG_REL, "ndcg_rel", K_DOUBLE, ndcg_rel(L, q, a, b, &c->refuse));
    ONE(M_RNDCG, "Rndcg", K_DOUBLE, rndcg(L, q, a, b, d, &c->refuse));
    if (ON(M_NDCG_CUT)) {
        Line *first = NULL;
        for (int64_t i = 0; i < c->n_cut[C_NDCG_CUT]; i++) {
            Line *x = line(c, "ndcg_cut", cut_name(suffix, c->cut[C_NDCG_CUT][i]), K_DOUBLE);
            if (!first) first = x;
        }
        EACH {
            int64_t length = dcg_rows(L, q, a, b);
            for (int64_t i = 0; i < c->n_cut[C_NDCG_CUT]; i++)
                first[i].values[q] = ndcg_cut(L, q, c->cut[C_NDCG_CUT][i], length, a, b);
        }
    }
    if (ON(M_MAP_CUT)) {
        for (int64_t i = 0; i < c->n_cut[C_MAP_CUT]; i++) {
            int64_t k = c->cut[C_MAP_CUT][i];
            l = line(c, "map_cut", cut_name(suffix, k), K_DOUBLE);
            EACH l->values[q] = ap(L, q, k);
        }
    }
    if (ON(M_RELATIVE_P)) {
        for (int64_t i = 0; i < c->n_cut[C_RELATIVE_P]; i++) {
            int64_t k = c->cut[C_RELATIVE_P][i];
            l = line(c, "relative_P", cut_name(suffix, k), K_DOUBLE);
            EACH {
                int64_t R = L->num_rel[q] < k ? L->num_rel[q] : k;
                l->values[q] = div0((double)hits(L, q, k), (double)R);
            }
        }
    }
    if (ON(M_SUCCESS)) {
        for (int64_t i = 0; i < c->n_cut[C_SUCCESS]; i++) {
            int64_t k = c->cut[C_SUCCESS][i];
            l = line(c, "success", cut_name(suffix, k), K_DOUBLE);
            EACH l->values[q] = hits(L, q, k) > 0 ? 1.0 : 0.0;
        }
    }
    ONE(M_SET_P, "set_P", K_DOUBLE, div0((double)L->num_rel_ret[q], (double)L->num_ret[q]));
    if (ON(M_SET_RELATIVE_P)) {
        l = line(c, "set_relative_P", NULL, K_DOUBLE);
        EACH {
            int64_t ret = L->num_ret[q], rel = L->num_rel[q];
            int64_t den = ret > 0 && rel > 0 ? (ret < rel ? ret : rel) : 0;
            l->values[q] = div0((double)L->num_rel_ret[q], (double)den);
        }
    }
    ONE(M_SET_RECALL, "set_recall", K_DOUBLE, div0((double)L->num_rel_ret[q], (double)L->num_rel[q]));
    if (ON(M_SET_MAP)) {
        l = line(c, "set_map", NULL, K_DOUBLE);
        EACH {
            double nrr = (double)L->num_rel_ret[q];
            l->values[q] = div0(nrr * nrr, (double)L->num_ret[q] * (double)L->num_rel[q]);
        }
    }
    if (ON(M_SET_F)) {
        l = line(c, "set_F", NULL, K_DOUBLE);
        EACH {
            int64_t nrr = L->num_rel_ret[q];
            double v = 0.0;
            if (nrr > 0) {
                double P = (double)nrr / (double)L->num_ret[q], R = (double)nrr / (double)L->num_rel[q];
                v = (1.0 + 1.0) * P * R / (1.0 * P + R);
            }
            l->values[q] = v;
        }
    }
    if (ON(M_NUM_NONREL_JUDGED_RET)) {
        l = line(c, "num_nonrel_judged_ret", NULL, K_LONG);
        EACH {
            int64_t j = rows_before(L, q, L->num_ret[q]);
            l->values[q] = j > 0 ? (double)L->nsf[L->start[q] + j - 1] : 0.0;
        }
    }
    ONE(M_RBP, "rbp", K_DOUBLE, rbp(L, q, powers, &c->refuse));
    ONE(M_RBP_RESID, "rbp_resid", K_DOUBLE, L->stand_in[q] ? 0.0 : rbp_resid(L, q, powers));
    if (ON(M_UNJ)) {
        for (int64_t i = 0; i < c->n_cut[C_UNJ]; i++) {
            int64_t k = c->cut[C_UNJ][i];
            l = line(c, "unj", cut_name(suffix, k), K_DOUBLE);
            EACH {
                int64_t shown = k < L->num_ret[q] ? k : L->num_ret[q], judged = 0;
                for (int64_t r = 0; r < L->count[q]; r++)
                    if (L->rel[L->start[q] + r] >= 0 && L->pos[L->start[q] + r] < k) judged++;
                l->values[q] = L->stand_in[q] ? 0.0 : (double)(shown - judged) / (double)k;
            }
        }
    }
#undef ON
#undef EACH
#undef ONE
#undef line
}
