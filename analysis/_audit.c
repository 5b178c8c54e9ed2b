/* The per-session audit of a batch of council sessions, in C (analysis/session_audit.py).

   audit_sessions(batch, config, noise_for, tails) computes, for each SessionScores of the batch,
   the numbers analysis/session_audit.py's numpy path computes (tests/analysis/test_audit_engines.py
   checks both agree to 1e-9 on 400 random sessions; the oracle tests run on both):

   - the two-way fit score = reviewer + response on the peer scores, the responses absorbed: a
     reviewer Laplacian per connected part of the council, its first member grounded and the rest
     inverted by Gauss-Jordan (positive pivots: a grounded connected Laplacian is positive
     definite); its residual sum of squares and df are the session's noise contribution;
   - length (Pearson and Spearman of words against the mean peer score), position (within-model
     residuals by display position, the F test), reviewer means, spreads, offsets against the
     median of the other reviewers' effects, agreement;
   - the harsh / generous leave-one-out tests and self-preference at the session's noise scale.

   Two things stay in Python, called once per batch: noise_for(contributions) rolls each tenant's
   noise history forward (analysis.session_noise.pooled_noise) and tails(...) evaluates scipy's
   distribution tails on all of the batch's test statistics at once (the p-values are scipy's
   own, not a copy of its special functions). Each session's result is (the audit's values as a
   dict in SessionAudit's field order, its position residuals, its noise contribution).

   A session is measured in steps over its Council (its cells and its two-way fit): fit_two_way,
   leave_one_out, self_preference, reviewer_summaries, length_measures, position_measures.

   score_cells(reviews, labels, column) is analysis.observations.session_scores' loop over a
   validated event's reviews. */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define CELL_WIDTH 5
#define REFERENCE_SPAN 9.0
#define ROUNDING 1e-9 /* analysis.reviewer_offset.ROUNDING */
#define TIE 1e-9      /* analysis.session_noise.TIE */
#define PIVOT 1e-12   /* below: the grounded system is singular, the council is in parts */

enum {
    F_LENGTH_R, F_LENGTH_P, F_SPEARMAN, F_LENGTH_N, F_LENGTH_DETECTED, F_IDENTIFIABLE, F_POSITION_VARIANCE,
    F_POSITION_EFFECTS, F_POSITION_P, F_POSITION_DETECTED, F_MEANS, F_STDS, F_OFFSETS, F_OFFSET_P, F_LOO,
    F_HARSH, F_GENEROUS, F_SELF, F_SELF_P, F_PREFERRING, F_AGREEMENT, F_THRESHOLD, F_RISK, F_NOISE_SD,
    F_NOISE_DF, F_NOISE_SESSIONS, F_NOISE_SOURCE, FIELD_COUNT
};

static const char *FIELD_NAMES[FIELD_COUNT] = {
    "length_score_correlation", "length_score_p_value", "length_score_spearman", "length_score_sample_size",
    "length_bias_detected", "position_identifiable", "position_score_variance", "position_effects",
    "position_p_value", "position_bias_detected", "reviewer_mean_scores", "reviewer_score_std", "reviewer_offsets",
    "reviewer_offset_p_values", "reviewer_loo_offsets", "harsh_reviewers", "generous_reviewers", "self_preference",
    "self_preference_p_values", "self_preferring_reviewers", "reviewer_agreement", "calibration_threshold",
    "overall_bias_risk", "noise_sd", "noise_df", "noise_sessions", "noise_source",
};

static PyObject *field_keys[FIELD_COUNT];
static PyObject *s_cells, *s_reviewers, *s_models, *s_candidates, *s_scale_low, *s_scale_high;
static PyObject *s_sd, *s_df, *s_sessions, *s_source, *s_low, *s_medium, *s_high;
static PyObject *s_abstained, *s_scores, *s_label_to_model, *s_reviewer, *s_model, *s_display_index;
static PyObject *minus_one, *one, *zero; /* the cells' constants */

typedef struct {
    int r, m, p, own;
    double s;
} Cell;

/* Growable arrays of doubles: the batch's requests for each kind of tail. */
typedef struct {
    double *v;
    Py_ssize_t n, cap;
} Doubles;

static int push(Doubles *d, double x) {
    if (d->n == d->cap) {
        Py_ssize_t cap = d->cap ? d->cap * 2 : 256;
        double *v = realloc(d->v, cap * sizeof(double));
        if (v == NULL) return -1;
        d->v = v;
        d->cap = cap;
    }
    d->v[d->n++] = x;
    return 0;
}

/* The position F test's p: fdtrc's; 0 (no spread within the positions, some between); none. */
enum { POSITION_NO_P, POSITION_F_TEST, POSITION_P_ZERO };

/* What a session keeps between the batch's phases (fit -> noise -> tails -> the dict). */
typedef struct {
    PyObject *reviewers; /* new reference: the session's reviewer names, by index */
    int R;
    double span;
    double rss;
    long df;
    /* length */
    int length_n, length_defined, spearman_defined;
    double length_r, spearman, length_t, length_df;
    /* position */
    int identifiable, position_testable; /* identifiable, df_between >= 1, df_within >= 1 */
    int position_state;
    double f_a, f_b, f_x;
    PyObject *position_effects, *position_variance, *residuals; /* new references */
    /* reviewers */
    PyObject *means, *stds, *offsets, *agreement; /* new references */
    /* the tests, per reviewer index (R of each) */
    double *loo, *loo_root, *loo_count; /* difference mean, sqrt(SE factor sum), candidates */
    double *self_pref, *self_scale;
    double *offset_p, *self_p; /* from the tails */
    int *loo_order, *self_order; /* first appearance */
    int *loo_flag, *self_flag; /* per reviewer index: tested */
    int n_loo, n_self;
    /* where this session's tails are */
    Py_ssize_t length_at, position_at, tests_at;
    int tests_normal;
    double sd_points; /* the noise SD in points of a 1-10 scale */
    PyObject *noise; /* new reference */
} Session;

static void session_clear(Session *x) {
    Py_CLEAR(x->reviewers);
    Py_CLEAR(x->position_effects);
    Py_CLEAR(x->position_variance);
    Py_CLEAR(x->residuals);
    Py_CLEAR(x->means);
    Py_CLEAR(x->stds);
    Py_CLEAR(x->offsets);
    Py_CLEAR(x->agreement);
    Py_CLEAR(x->noise);
    free(x->loo);
    free(x->loo_order);
    x->loo = NULL;
    x->loo_order = NULL;
}

/* pearson_r of analysis.stats: 0 when n < 2 or either side has no variance. */
static int pearson(const double *x, const double *y, int n, double *r) {
    if (n < 2) return 0;
    double mx = 0.0, my = 0.0;
    for (int i = 0; i < n; i++) mx += x[i];
    for (int i = 0; i < n; i++) my += y[i];
    mx /= n;
    my /= n;
    double sxy = 0.0, sxx = 0.0, syy = 0.0;
    for (int i = 0; i < n; i++) {
        double dx = x[i] - mx, dy = y[i] - my;
        sxy += dx * dy;
        sxx += dx * dx;
        syy += dy * dy;
    }
    if (sxx <= 1e-300 || syy <= 1e-300) return 0;
    double v = sxy / sqrt(sxx * syy);
    *r = v > 1.0 ? 1.0 : v < -1.0 ? -1.0 : v;
    return 1;
}

/* scipy.stats.rankdata 'average': #smaller + (#equal + 1) / 2. */
static void average_ranks(const double *x, int n, double *out) {
    for (int i = 0; i < n; i++) {
        int below = 0, equal = 0;
        for (int j = 0; j < n; j++) {
            below += x[j] < x[i];
            equal += x[j] == x[i];
        }
        out[i] = below + (equal + 1) / 2.0;
    }
}

static int compare_doubles(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The inverse of the members' Laplacian with the first member grounded, in place of `out`
   ((k-1) x (k-1)); 0 when the members are not one connected part (a pivot below PIVOT). */
static int grounded_inverse(const double *laplacian, int R, const int *members, int k, double *out) {
    int size = k - 1;
    for (int a = 0; a < size; a++)
        for (int b = 0; b < size; b++) out[a * size + b] = laplacian[members[a + 1] * R + members[b + 1]];
    for (int p = 0; p < size; p++) {
        double *head = out + p * size;
        if (head[p] < PIVOT) return 0;
        double scale = 1.0 / head[p];
        head[p] = 1.0; /* column p of the identity takes the place of column p */
        for (int j = 0; j < size; j++) head[j] *= scale;
        for (int i = 0; i < size; i++) {
            double *row = out + i * size;
            double factor = row[p];
            if (i != p && factor != 0.0) {
                row[p] = 0.0;
                for (int j = 0; j < size; j++) row[j] -= factor * head[j];
            }
        }
    }
    return 1;
}

static int find_root(int *parent, int r) {
    while (parent[r] != r) {
        parent[r] = parent[parent[r]];
        r = parent[r];
    }
    return r;
}

/* str(position), the position effects' keys: cached for the usual display indexes. */
#define CACHED_KEYS 64
static PyObject *position_keys[CACHED_KEYS];

static PyObject *position_key(int position) {
    if (position < 0 || position >= CACHED_KEYS) return PyUnicode_FromFormat("%d", position);
    if (position_keys[position] == NULL && (position_keys[position] = PyUnicode_FromFormat("%d", position)) == NULL)
        return NULL;
    return Py_NewRef(position_keys[position]);
}

static PyObject *float_or_none(int defined, double v) {
    if (defined) return PyFloat_FromDouble(v);
    Py_RETURN_NONE;
}

/* {name: value} over the reviewers whose flag is set, in the session's reviewer order. */
static PyObject *by_name(PyObject *names, const int *flag, const double *values, int R) {
    PyObject *out = PyDict_New();
    if (out == NULL) return NULL;
    for (int r = 0; r < R; r++) {
        if (!flag[r]) continue;
        PyObject *v = PyFloat_FromDouble(values[r]);
        if (v == NULL || PyDict_SetItem(out, PyTuple_GET_ITEM(names, r), v) < 0) {
            Py_XDECREF(v);
            Py_DECREF(out);
            return NULL;
        }
        Py_DECREF(v);
    }
    return out;
}

/* The session's cells (CELL_WIDTH floats each) -> Cell; -1 with an exception when malformed. */
static int read_cells(PyObject *scores, int R, int M, Cell **cells_out, int *n_out) {
    PyObject *flat = PyObject_GetAttr(scores, s_cells);
    if (flat == NULL) return -1;
    PyObject *seq = PySequence_Fast(flat, "cells must be a list of floats");
    Py_DECREF(flat);
    if (seq == NULL) return -1;
    Py_ssize_t size = PySequence_Fast_GET_SIZE(seq);
    if (size % CELL_WIDTH) {
        Py_DECREF(seq);
        PyErr_SetString(PyExc_ValueError, "cells must hold 5 numbers per score");
        return -1;
    }
    int n = (int)(size / CELL_WIDTH);
    Cell *cells = malloc((n ? n : 1) * sizeof(Cell));
    if (cells == NULL) {
        Py_DECREF(seq);
        PyErr_NoMemory();
        return -1;
    }
    PyObject **items = PySequence_Fast_ITEMS(seq);
    for (int i = 0; i < n; i++) {
        double v[CELL_WIDTH];
        for (int j = 0; j < CELL_WIDTH; j++) {
            v[j] = PyFloat_AsDouble(items[i * CELL_WIDTH + j]);
            if (v[j] == -1.0 && PyErr_Occurred()) {
                free(cells);
                Py_DECREF(seq);
                return -1;
            }
        }
        cells[i].r = (int)v[0];
        cells[i].m = (int)v[1];
        cells[i].s = v[2];
        cells[i].p = (int)v[3];
        cells[i].own = v[4] == 1.0;
        if (cells[i].r < 0 || cells[i].r >= R || cells[i].m < 0 || cells[i].m >= M) {
            free(cells);
            Py_DECREF(seq);
            PyErr_SetString(PyExc_ValueError, "a cell names a reviewer or model the session does not have");
            return -1;
        }
    }
    Py_DECREF(seq);
    *cells_out = cells;
    *n_out = n;
    return 0;
}

/* A session's cells and its two-way fit: what every measure below reads. Scratch arrays are
   taken from one zeroed arena per session (take / take_ints). */
typedef struct {
    int R, M, n, Rs;
    Cell *cells;
    double *arena;
    size_t used, size;
    /* the peer scores per response: resp_n of them, their sum, the cells' indexes in review order */
    int *resp_n, *scorer_start, *scorers;
    double *resp_total;
    int n_peer, n_responses;
    /* the fit: reviewers linked by shared responses form parts; each part's first member is
       grounded (row -1) and the others are rows of the part's grounded inverse */
    int *part_of, *row_of, *part_size, *inverse_at, *members, *part_start;
    int n_parts, n_active;
    double *inverses, *row_sums, *part_total, *effect, *response_level;
} Council;

static double *take(Council *c, size_t count) {
    double *out = c->arena + c->used;
    c->used += count;
    return out;
}

/* ints share the arena (a double's room each: simpler than a second arena, and a council is small) */
static int *take_ints(Council *c, size_t count) {
    return (int *)take(c, count);
}

static int council_init(Council *c, Cell *cells, int n, int R, int M) {
    memset(c, 0, sizeof(*c));
    c->cells = cells;
    c->n = n;
    c->R = R;
    c->M = M;
    int Rs = c->Rs = R ? R : 1, Ms = M ? M : 1, ns = n ? n : 1;
    /* room for every step's scratch (they take 2 R^2 + 21 R + 15 M + 10 n), with a margin */
    c->size = (size_t)Rs * Rs * 3 + (size_t)Rs * 32 + (size_t)Ms * 16 + (size_t)ns * 12;
    c->arena = calloc(c->size, sizeof(double));
    if (c->arena == NULL) return -1;
    c->resp_n = take_ints(c, Ms);
    c->scorer_start = take_ints(c, Ms);
    c->scorers = take_ints(c, ns);
    c->resp_total = take(c, Ms);
    c->part_of = take_ints(c, Rs);
    c->row_of = take_ints(c, Rs);
    c->part_size = take_ints(c, Rs);
    c->inverse_at = take_ints(c, Rs);
    c->members = take_ints(c, Rs);
    c->part_start = take_ints(c, Rs);
    c->inverses = take(c, (size_t)Rs * Rs); /* the parts' grounded inverses, one after another */
    c->row_sums = take(c, Rs);
    c->part_total = take(c, Rs);
    c->effect = take(c, Rs);
    c->response_level = take(c, Ms);
    return 0;
}

/* The cell index of the a-th peer score response m received. */
#define SCORER(c, m, a) ((c)->cells[(c)->scorers[(c)->scorer_start[(m)] + (a)]])

/* The two-way fit score = reviewer + response on the peer scores, the responses absorbed: the
   effects solve L a = b, L = diag(cells per reviewer) - W diag(1 / cells per response) W' (a
   Laplacian over reviewers who scored a response in common), b = the reviewers' score sums less
   their share of the responses' sums; solved per connected part with its first member grounded,
   each part's effects centred. Returns the residual sum of squares and df in *rss, *df. */
static int fit_two_way(Council *c, double *rss_out, long *df_out) {
    int R = c->R, M = c->M, Rs = c->Rs;
    const Cell *cells = c->cells;
    int *fill = take_ints(c, M ? M : 1), *active = take_ints(c, Rs), *parent = take_ints(c, Rs);
    double *laplacian = take(c, (size_t)Rs * Rs), *rhs = take(c, Rs), *values = take(c, Rs);
    for (int i = 0; i < c->n; i++) {
        if (cells[i].own) continue;
        c->n_peer++;
        c->resp_n[cells[i].m]++;
        c->resp_total[cells[i].m] += cells[i].s;
    }
    for (int m = 0, at = 0; m < M; m++) {
        c->scorer_start[m] = at;
        at += c->resp_n[m];
    }
    for (int i = 0; i < c->n; i++)
        if (!cells[i].own) c->scorers[c->scorer_start[cells[i].m] + fill[cells[i].m]++] = i;
    for (int m = 0; m < M; m++) {
        int k = c->resp_n[m];
        if (!k) continue;
        c->n_responses++;
        double share = 1.0 / k, mean = c->resp_total[m] * share;
        for (int a = 0; a < k; a++) {
            const Cell *cell = &SCORER(c, m, a);
            laplacian[cell->r * Rs + cell->r] += 1.0;
            for (int b = 0; b < k; b++) laplacian[cell->r * Rs + SCORER(c, m, b).r] -= share;
            rhs[cell->r] += cell->s - mean;
        }
    }
    for (int r = 0; r < R; r++) c->part_of[r] = -1;
    for (int i = 0; i < c->n; i++)
        if (!cells[i].own) c->part_of[cells[i].r] = 0;
    for (int r = 0; r < R; r++)
        if (c->part_of[r] == 0) active[c->n_active++] = r;

    /* Parts: the whole council if its grounded Laplacian inverts, else its connected parts. */
    if (c->n_active) {
        memcpy(c->members, active, c->n_active * sizeof(int));
        if (grounded_inverse(laplacian, Rs, c->members, c->n_active, c->inverses)) {
            c->n_parts = 1;
            c->part_size[0] = c->n_active;
        } else {
            for (int a = 0; a < c->n_active; a++) parent[active[a]] = active[a];
            for (int m = 0; m < M; m++) {
                if (!c->resp_n[m]) continue;
                int first = find_root(parent, SCORER(c, m, 0).r);
                for (int a = 1; a < c->resp_n[m]; a++) parent[find_root(parent, SCORER(c, m, a).r)] = first;
            }
            /* members grouped by root, in order of each part's first (smallest) member */
            int filled = 0, at = 0;
            for (int a = 0; a < c->n_active; a++) {
                int root = find_root(parent, active[a]), known = 0;
                for (int p = 0; p < c->n_parts; p++) known |= find_root(parent, c->members[c->part_start[p]]) == root;
                if (known) continue;
                int p = c->n_parts++;
                c->part_start[p] = filled;
                for (int b = a; b < c->n_active; b++)
                    if (find_root(parent, active[b]) == root) c->members[filled++] = active[b];
                c->part_size[p] = filled - c->part_start[p];
                c->inverse_at[p] = at;
                if (!grounded_inverse(laplacian, Rs, c->members + c->part_start[p], c->part_size[p], c->inverses + at)) {
                    PyErr_SetString(PyExc_ArithmeticError, "a connected part's Laplacian did not invert");
                    return -1;
                }
                at += (c->part_size[p] - 1) * (c->part_size[p] - 1);
            }
        }
    }
    /* Effects: each part's grounded solution, centred; the inverse's row sums for the SEs. */
    for (int p = 0; p < c->n_parts; p++) {
        int k = c->part_size[p], size = k - 1;
        const int *mem = c->members + c->part_start[p];
        const double *inv = c->inverses + c->inverse_at[p];
        values[0] = 0.0;
        for (int a = 0; a < size; a++) {
            double v = 0.0;
            for (int b = 0; b < size; b++) v += inv[a * size + b] * rhs[mem[b + 1]];
            values[a + 1] = v;
        }
        double mean = 0.0, total = 0.0;
        for (int a = 0; a < k; a++) mean += values[a];
        mean /= k;
        for (int a = 0; a < k; a++) {
            c->effect[mem[a]] = values[a] - mean;
            c->part_of[mem[a]] = p;
            c->row_of[mem[a]] = a - 1;
        }
        for (int a = 0; a < size; a++) {
            double sum = 0.0;
            for (int b = 0; b < size; b++) sum += inv[a * size + b];
            c->row_sums[mem[a + 1]] = sum;
            total += sum;
        }
        c->part_total[p] = total;
    }
    /* Each response's level (the mean of score - reviewer effect) and the residuals. */
    double rss = 0.0;
    for (int m = 0; m < M; m++) {
        int k = c->resp_n[m];
        if (!k) continue;
        double sum = 0.0;
        for (int a = 0; a < k; a++) sum += SCORER(c, m, a).s - c->effect[SCORER(c, m, a).r];
        double level = c->response_level[m] = sum / k;
        for (int a = 0; a < k; a++) {
            double d = SCORER(c, m, a).s - c->effect[SCORER(c, m, a).r] - level;
            rss += d * d;
        }
    }
    *rss_out = rss;
    /* rank: reviewers + responses - connected parts (a response links its scorers' parts) */
    *df_out = c->n_peer - (c->n_active + c->n_responses - c->n_parts);
    return 0;
}

/* Harsh / generous: each reviewer's mean difference from the rest's mean of each candidate that
   another reviewer scored too, and what its SE needs (sqrt of the summed 1 + 1/(n_c - 1), k). */
static void leave_one_out(const Council *c, Session *x) {
    for (int i = 0; i < c->n; i++) {
        const Cell *cell = &c->cells[i];
        int k = c->resp_n[cell->m];
        if (cell->own || k < 2) continue;
        if (!x->loo_flag[cell->r]) {
            x->loo_order[x->n_loo++] = cell->r;
            x->loo_flag[cell->r] = 1;
        }
        x->loo[cell->r] += cell->s - (c->resp_total[cell->m] - cell->s) / (k - 1);
        x->loo_root[cell->r] += 1.0 + 1.0 / (k - 1);
        x->loo_count[cell->r] += 1.0;
    }
    for (int a = 0; a < x->n_loo; a++) {
        int r = x->loo_order[a];
        x->loo[r] /= x->loo_count[r];
        x->loo_root[r] = sqrt(x->loo_root[r]);
    }
}

/* Self-preference: the own score less the fit's prediction for that cell, and its SE factor
   sqrt(1 + Var(a_r + b_m) / sd^2), Var / sd^2 = 1 / n_m + g' Q g with g = e_r - the mean of the
   scorers' e (a contrast: any generalized inverse Q of the Laplacian gives it; Q = the grounded
   inverse, zero for the grounded reviewer). Only cells the peer scores predict: the reviewer in
   the fit, linked to every scorer of its answer. */
static void self_preference(Council *c, Session *x) {
    double *g = take(c, c->Rs);
    for (int i = 0; i < c->n; i++) {
        const Cell *cell = &c->cells[i];
        int p = c->part_of[cell->r], k = c->resp_n[cell->m];
        if (!cell->own || p < 0 || !k) continue;
        int linked = 1;
        for (int a = 0; a < k && c->n_parts > 1; a++) linked &= c->part_of[SCORER(c, cell->m, a).r] == p;
        if (!linked) continue;
        int size = c->part_size[p] - 1, row = c->row_of[cell->r];
        const double *inv = c->inverses + c->inverse_at[p];
        double quadratic;
        if (k == size) { /* every other member scored it: g = (1 + 1/n) e_r - 1/n */
            double a = 1.0 + 1.0 / k;
            quadratic = (row >= 0 ? a * a * inv[row * size + row] - 2.0 * a * c->row_sums[cell->r] / k : 0.0)
                        + c->part_total[p] / ((double)k * k);
        } else {
            for (int a = 0; a < size; a++) g[a] = 0.0;
            for (int a = 0; a < k; a++) {
                int q = c->row_of[SCORER(c, cell->m, a).r];
                if (q >= 0) g[q] -= 1.0 / k;
            }
            if (row >= 0) g[row] += 1.0;
            quadratic = 0.0;
            for (int a = 0; a < size; a++)
                for (int b = 0; b < size; b++) quadratic += g[a] * g[b] * inv[a * size + b];
        }
        double v = 1.0 / k + quadratic;
        x->self_pref[cell->r] = cell->s - c->effect[cell->r] - c->response_level[cell->m];
        x->self_scale[cell->r] = sqrt(1.0 + (v > 0.0 ? v : 0.0));
        if (!x->self_flag[cell->r]) x->self_order[x->n_self++] = cell->r;
        x->self_flag[cell->r] = 1;
    }
}

/* The reviewers' means and spreads of the peer scores they gave, their offsets (effect less the
   median of the other reviewers' effects, among reviewers with a shared response) and the
   council's agreement (each reviewer's scores against the rest's means, >= 3 candidates). */
static int reviewer_summaries(Council *c, Session *x) {
    int R = c->R, Rs = c->Rs;
    const Cell *cells = c->cells;
    int *given_n = take_ints(c, Rs), *has_given = take_ints(c, Rs), *shared = take_ints(c, Rs);
    double *mean = take(c, Rs), *spread = take(c, Rs), *offset = take(c, Rs), *ordered = take(c, Rs);
    double *xs = take(c, c->n ? c->n : 1), *ys = take(c, c->n ? c->n : 1);
    for (int i = 0; i < c->n; i++) {
        if (cells[i].own) continue;
        mean[cells[i].r] += cells[i].s;
        given_n[cells[i].r]++;
        has_given[cells[i].r] = 1;
        shared[cells[i].r] |= c->resp_n[cells[i].m] > 1;
    }
    for (int r = 0; r < R; r++)
        if (has_given[r]) mean[r] /= given_n[r];
    for (int i = 0; i < c->n; i++) {
        if (cells[i].own) continue;
        double d = cells[i].s - mean[cells[i].r];
        spread[cells[i].r] += d * d;
    }
    for (int r = 0; r < R; r++) spread[r] = given_n[r] >= 2 ? sqrt(spread[r] / (given_n[r] - 1)) : 0.0;
    x->means = by_name(x->reviewers, has_given, mean, R);
    x->stds = by_name(x->reviewers, has_given, spread, R);
    if (x->means == NULL || x->stds == NULL) return -1;

    int n_shared = 0;
    for (int r = 0; r < R; r++)
        if (shared[r]) ordered[n_shared++] = c->effect[r];
    qsort(ordered, n_shared, sizeof(double), compare_doubles);
    int others = n_shared - 1, half = others / 2;
    for (int r = 0; r < R; r++) {
        if (!shared[r]) continue;
        int skipped = 0; /* bisect_left: one copy of r's effect leaves the sorted list */
        while (skipped < n_shared && ordered[skipped] < c->effect[r]) skipped++;
#define OTHER(k) ((k) < skipped ? ordered[(k)] : ordered[(k) + 1])
        double o = others == 0 ? 0.0
                   : others % 2 ? c->effect[r] - OTHER(half)
                                : c->effect[r] - (OTHER(half - 1) + OTHER(half)) / 2;
#undef OTHER
        offset[r] = fabs(o) < ROUNDING ? 0.0 : o;
    }
    x->offsets = by_name(x->reviewers, shared, offset, R);
    if (x->offsets == NULL) return -1;

    double agreement_sum = 0.0;
    int agreements = 0;
    for (int r = 0; r < R; r++) {
        if (!shared[r]) continue;
        int k = 0;
        for (int i = 0; i < c->n; i++) {
            const Cell *cell = &cells[i];
            int scorers = c->resp_n[cell->m];
            if (cell->own || cell->r != r || scorers <= 1) continue;
            xs[k] = cell->s;
            ys[k++] = (c->resp_total[cell->m] - cell->s) / (scorers - 1.0);
        }
        double v;
        if (k >= 3 && pearson(xs, ys, k, &v)) {
            agreement_sum += v;
            agreements++;
        }
    }
    x->agreement = float_or_none(agreements > 0, agreements ? agreement_sum / agreements : 0.0);
    return x->agreement == NULL ? -1 : 0;
}

/* Length: each scored candidate's words (the candidates' second item) against its mean peer
   score: Pearson with its t statistic, Spearman, from 3 candidates. */
static int length_measures(Council *c, Session *x, PyObject *candidates) {
    int M = c->M, Ms = M ? M : 1;
    double *words = take(c, Ms), *xs = take(c, Ms), *ys = take(c, Ms), *rank_x = take(c, Ms), *rank_y = take(c, Ms);
    Py_ssize_t pos = 0;
    PyObject *key, *candidate;
    for (int m = 0; m < M && PyDict_Next(candidates, &pos, &key, &candidate); m++) {
        PyObject *w = PySequence_GetItem(candidate, 1);
        if (w == NULL) return -1;
        words[m] = PyFloat_AsDouble(w);
        Py_DECREF(w);
        if (PyErr_Occurred()) return -1;
    }
    int n = 0;
    for (int m = 0; m < M; m++) {
        if (!c->resp_n[m]) continue;
        xs[n] = words[m];
        ys[n++] = c->resp_total[m] / c->resp_n[m];
    }
    x->length_n = n;
    x->length_df = n - 2.0;
    if (n >= 3 && pearson(xs, ys, n, &x->length_r)) {
        x->length_defined = 1;
        double r = x->length_r;
        x->length_t = fabs(r) >= 1.0 ? copysign(INFINITY, r)
                                     : r * sqrt(x->length_df > 0.0 ? x->length_df : 0.0) / sqrt(1.0 - r * r);
    }
    if (n >= 3) {
        average_ranks(xs, n, rank_x);
        average_ranks(ys, n, rank_y);
        x->spearman_defined = pearson(rank_x, rank_y, n, &x->spearman);
    }
    return 0;
}

/* Position: the placed peer scores' within-model residuals grouped by display position, only
   identifiable where some model was shown at two positions; the F test has the model means' df
   removed from the within-group df. Also each session's (position, residual) pairs. */
static int position_measures(Council *c, Session *x) {
    int M = c->M, Ms = M ? M : 1, ns = c->n ? c->n : 1;
    const Cell *cells = c->cells;
    int *placed_n = take_ints(c, Ms), *first_at = take_ints(c, Ms), *last_at = take_ints(c, Ms);
    int *placed = take_ints(c, ns), *group_of = take_ints(c, ns), *group_pos = take_ints(c, ns);
    int *group_n = take_ints(c, ns);
    double *placed_total = take(c, Ms), *residual = take(c, ns), *group_total = take(c, ns), *group_mean = take(c, ns);
    int n_placed = 0;
    for (int m = 0; m < M; m++) {
        first_at[m] = M;
        last_at[m] = -1;
    }
    for (int i = 0; i < c->n; i++) {
        const Cell *cell = &cells[i];
        if (cell->own || cell->p < 0) continue;
        placed[n_placed++] = i;
        placed_total[cell->m] += cell->s;
        placed_n[cell->m]++;
        if (cell->p < first_at[cell->m]) first_at[cell->m] = cell->p;
        if (cell->p > last_at[cell->m]) last_at[cell->m] = cell->p;
    }
    int identifiable = 0, models_placed = 0;
    for (int m = 0; m < M; m++) {
        identifiable |= last_at[m] > first_at[m];
        models_placed += placed_n[m] > 0;
    }
    x->identifiable = identifiable;
    /* the numpy path's (reviewer, model) order: insertion sort, a council is small */
    for (int a = 1; a < n_placed; a++) {
        int v = placed[a], b = a - 1;
        while (b >= 0 && (cells[placed[b]].r > cells[v].r ||
                          (cells[placed[b]].r == cells[v].r && cells[placed[b]].m > cells[v].m))) {
            placed[b + 1] = placed[b];
            b--;
        }
        placed[b + 1] = v;
    }
    int k_groups = 0; /* groups in order of first appearance */
    for (int a = 0; a < n_placed; a++) {
        const Cell *cell = &cells[placed[a]];
        residual[a] = cell->s - placed_total[cell->m] / placed_n[cell->m];
        int group = -1;
        for (int q = 0; q < k_groups; q++)
            if (group_pos[q] == cell->p) group = q;
        if (group < 0) {
            group = k_groups++;
            group_pos[group] = cell->p;
        }
        group_of[a] = group;
        group_total[group] += residual[a];
        group_n[group]++;
    }
    for (int q = 0; q < k_groups; q++) group_mean[q] = group_total[q] / group_n[q];
    double within = 0.0, grand = 0.0, between = 0.0;
    for (int a = 0; a < n_placed; a++) {
        double d = residual[a] - group_mean[group_of[a]];
        within += d * d;
    }
    for (int q = 0; q < k_groups; q++) grand += group_mean[q] * group_n[q];
    grand /= n_placed > 0 ? n_placed : 1;
    for (int q = 0; q < k_groups; q++) {
        double d = group_mean[q] - grand;
        between += group_n[q] * (d * d);
    }
    int df_between = k_groups - 1;
    int df_within = n_placed - k_groups - (models_placed - 1 > 0 ? models_placed - 1 : 0);
    x->position_testable = identifiable && df_between >= 1 && df_within >= 1;
    if (within > 0.0) {
        x->position_state = POSITION_F_TEST;
        x->f_a = df_between > 1 ? df_between : 1;
        x->f_b = df_within > 1 ? df_within : 1;
        x->f_x = (between / x->f_a) / (within / x->f_b);
    } else {
        x->position_state = between > 0.0 ? POSITION_P_ZERO : POSITION_NO_P;
    }
    if (identifiable && k_groups >= 2) {
        double mean = 0.0, ss = 0.0;
        for (int q = 0; q < k_groups; q++) mean += group_mean[q];
        mean /= k_groups;
        for (int q = 0; q < k_groups; q++) {
            double d = group_mean[q] - mean;
            ss += d * d;
        }
        x->position_variance = PyFloat_FromDouble(ss / (k_groups - 1 > 1 ? k_groups - 1 : 1));
    } else {
        x->position_variance = Py_NewRef(Py_None);
    }
    x->position_effects = PyDict_New();
    x->residuals = PyList_New(identifiable ? n_placed : 0);
    if (x->position_variance == NULL || x->position_effects == NULL || x->residuals == NULL) return -1;
    if (!identifiable) return 0;
    for (int a = 0; a < n_placed; a++) {
        PyObject *pair = PyTuple_New(2), *position = PyLong_FromLong(cells[placed[a]].p);
        PyObject *value = PyFloat_FromDouble(residual[a]);
        if (pair == NULL || position == NULL || value == NULL) {
            Py_XDECREF(pair);
            Py_XDECREF(position);
            Py_XDECREF(value);
            return -1;
        }
        PyTuple_SET_ITEM(pair, 0, position);
        PyTuple_SET_ITEM(pair, 1, value);
        PyList_SET_ITEM(x->residuals, a, pair);
    }
    /* {str(position): mean} in ascending position */
    for (int written = 0, last = -1; written < k_groups; written++) {
        int next = -1;
        for (int q = 0; q < k_groups; q++)
            if (group_pos[q] > last && (next < 0 || group_pos[q] < group_pos[next])) next = q;
        last = group_pos[next];
        PyObject *key = position_key(last), *v = PyFloat_FromDouble(group_mean[next]);
        int failed = key == NULL || v == NULL || PyDict_SetItem(x->position_effects, key, v) < 0;
        Py_XDECREF(key);
        Py_XDECREF(v);
        if (failed) return -1;
    }
    return 0;
}

/* Phase 1: everything of one session that does not depend on the noise scale or on a tail. */
static int measure(PyObject *scores, Session *x) {
    int status = -1;
    Cell *cells = NULL;
    Council council = {0};
    PyObject *models = NULL, *candidates = NULL, *low = NULL, *high = NULL;

    x->reviewers = PyObject_GetAttr(scores, s_reviewers);
    if (x->reviewers == NULL) return -1;
    models = PyObject_GetAttr(scores, s_models);
    candidates = PyObject_GetAttr(scores, s_candidates);
    low = PyObject_GetAttr(scores, s_scale_low);
    high = PyObject_GetAttr(scores, s_scale_high);
    if (models == NULL || candidates == NULL || low == NULL || high == NULL) goto done;
    if (!PyTuple_Check(x->reviewers) || !PyTuple_Check(models) || !PyDict_Check(candidates)) {
        PyErr_SetString(PyExc_TypeError, "reviewers and models must be tuples, candidates a dict");
        goto done;
    }
    int R = x->R = (int)PyTuple_GET_SIZE(x->reviewers), M = (int)PyTuple_GET_SIZE(models), n;
    x->span = PyFloat_AsDouble(high) - PyFloat_AsDouble(low);
    if (PyErr_Occurred() || read_cells(scores, R, M, &cells, &n) < 0) goto done;
    int Rs = R ? R : 1;
    x->loo = calloc((size_t)Rs * 7, sizeof(double));
    x->loo_order = calloc((size_t)Rs * 4, sizeof(int));
    if (council_init(&council, cells, n, R, M) < 0 || x->loo == NULL || x->loo_order == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    x->loo_root = x->loo + Rs;
    x->loo_count = x->loo + 2 * Rs;
    x->self_pref = x->loo + 3 * Rs;
    x->self_scale = x->loo + 4 * Rs;
    x->offset_p = x->loo + 5 * Rs;
    x->self_p = x->loo + 6 * Rs;
    x->self_order = x->loo_order + Rs;
    x->loo_flag = x->loo_order + 2 * Rs;
    x->self_flag = x->loo_order + 3 * Rs;
    if (fit_two_way(&council, &x->rss, &x->df) < 0) goto done;
    leave_one_out(&council, x);
    self_preference(&council, x);
    if (reviewer_summaries(&council, x) < 0 || length_measures(&council, x, candidates) < 0 ||
        position_measures(&council, x) < 0)
        goto done;
    status = 0;
done:
    free(cells);
    free(council.arena);
    Py_XDECREF(models);
    Py_XDECREF(candidates);
    Py_XDECREF(low);
    Py_XDECREF(high);
    return status;
}

static PyObject *bytes_of(const Doubles *d) {
    return PyBytes_FromStringAndSize((const char *)d->v, d->n * (Py_ssize_t)sizeof(double));
}

/* The tails tails() returned: three bytes objects of doubles, as many as were asked. */
static const double *read_tails(PyObject *result, Py_ssize_t index, Py_ssize_t expected) {
    PyObject *item = PyTuple_GET_ITEM(result, index);
    if (!PyBytes_Check(item) || PyBytes_GET_SIZE(item) != expected * (Py_ssize_t)sizeof(double)) {
        PyErr_SetString(PyExc_ValueError, "tails() must return three bytes objects of as many doubles as asked");
        return NULL;
    }
    return (const double *)PyBytes_AS_STRING(item);
}

/* Phase 2: the session's tests at its noise scale, as requests for tails. */
static int ask_tails(Session *x, PyObject *noise, Doubles *t_df, Doubles *t_x, Doubles *n_x, Doubles *f_a,
                     Doubles *f_b, Doubles *f_x) {
    x->noise = Py_NewRef(noise);
    PyObject *sd_attr = PyObject_GetAttr(noise, s_sd);
    if (sd_attr == NULL) return -1;
    double points = x->sd_points = PyFloat_AsDouble(sd_attr);
    Py_DECREF(sd_attr);
    PyObject *df = PyObject_GetAttr(noise, s_df);
    if (df == NULL) return -1;
    double df_noise = df == Py_None ? 0.0 : PyFloat_AsDouble(df); /* 0: a normal test */
    Py_DECREF(df);
    if (PyErr_Occurred()) return -1;
    double sd = points * (x->span / REFERENCE_SPAN); /* in the session's units */
    if (x->length_defined) {
        x->length_at = t_df->n;
        if (push(t_df, x->length_df) < 0 || push(t_x, -fabs(x->length_t)) < 0) return -1;
    }
    if (x->position_testable && x->position_state == POSITION_F_TEST) {
        x->position_at = f_a->n;
        if (push(f_a, x->f_a) < 0 || push(f_b, x->f_b) < 0 || push(f_x, x->f_x) < 0) return -1;
    }
    x->tests_normal = !(df_noise > 0.0);
    Doubles *z_out = x->tests_normal ? n_x : t_x;
    x->tests_at = z_out->n;
    for (int a = 0; a < x->n_loo; a++) {
        int r = x->loo_order[a];
        double z = fabs(x->loo[r]) / (sd * x->loo_root[r] / x->loo_count[r]);
        if (push(z_out, -z) < 0 || (!x->tests_normal && push(t_df, df_noise) < 0)) return -1;
    }
    for (int a = 0; a < x->n_self; a++) {
        int r = x->self_order[a];
        double z = x->self_pref[r] / (sd * x->self_scale[r]);
        if (push(z_out, -z) < 0 || (!x->tests_normal && push(t_df, df_noise) < 0)) return -1;
    }
    return 0;
}

/* The sorted names of the reviewers in `order` (n of them) whose `keep` is set. */
static PyObject *sorted_names(PyObject *names, const int *order, int n, const int *keep) {
    PyObject *out = PyList_New(0);
    if (out == NULL) return NULL;
    for (int a = 0; a < n; a++)
        if (keep[a] && PyList_Append(out, PyTuple_GET_ITEM(names, order[a])) < 0) {
            Py_DECREF(out);
            return NULL;
        }
    if (PyList_Sort(out) < 0) {
        Py_DECREF(out);
        return NULL;
    }
    return out;
}

/* Phase 3: the flags from the p-values, and the audit's values in SessionAudit's field order. */
static PyObject *finish(Session *x, const double *t_p, const double *n_p, const double *f_p, double length_threshold,
                        double calibration_points, double self_points, double alpha) {
    PyObject *values[FIELD_COUNT] = {NULL};
    PyObject *out = NULL;
    int R = x->R;
    double unit = x->span / REFERENCE_SPAN;
    const double *tests = (x->tests_normal ? n_p : t_p) + x->tests_at;
    int *keep = malloc(sizeof(int) * (R ? R : 1) * 3);
    if (keep == NULL) return PyErr_NoMemory();
    int *harsh = keep, *generous = keep + R, *preferring = keep + 2 * R;

    double length_p = x->length_defined ? 2.0 * t_p[x->length_at] : 0.0;
    int length_detected = x->length_defined && fabs(x->length_r) > length_threshold && length_p < alpha;
    int position_tested = x->position_testable && x->position_state != POSITION_NO_P;
    double position_p = x->position_state == POSITION_F_TEST && position_tested ? f_p[x->position_at] : 0.0;
    int position_detected = position_tested && position_p < alpha;

    double largest = 0.0;
    for (int a = 0; a < x->n_loo; a++) {
        int r = x->loo_order[a];
        x->offset_p[r] = tests[a];
        if (fabs(x->loo[r]) > largest) largest = fabs(x->loo[r]);
    }
    double offset_threshold = calibration_points * unit, self_threshold = self_points * unit;
    int any_harsh = 0, any_generous = 0, any_preferring = 0;
    for (int a = 0; a < x->n_loo; a++) {
        int r = x->loo_order[a];
        int flagged = x->offset_p[r] < alpha / x->n_loo && fabs(x->loo[r]) >= largest - TIE;
        any_harsh |= harsh[a] = flagged && x->loo[r] <= -offset_threshold;
        any_generous |= generous[a] = flagged && x->loo[r] >= offset_threshold;
    }
    for (int a = 0; a < x->n_self; a++) {
        int r = x->self_order[a];
        x->self_p[r] = tests[x->n_loo + a];
        any_preferring |= preferring[a] =
            x->self_p[r] < alpha / x->n_self && x->self_pref[r] >= self_threshold;
    }
    int risk = length_detected + position_detected + any_harsh + any_generous + any_preferring;

    values[F_LENGTH_R] = float_or_none(x->length_defined, x->length_r);
    values[F_LENGTH_P] = float_or_none(x->length_defined, length_p);
    values[F_SPEARMAN] = float_or_none(x->spearman_defined, x->spearman);
    values[F_LENGTH_N] = PyLong_FromLong(x->length_n);
    values[F_LENGTH_DETECTED] = PyBool_FromLong(length_detected);
    values[F_IDENTIFIABLE] = PyBool_FromLong(x->identifiable);
    values[F_POSITION_VARIANCE] = Py_NewRef(x->position_variance);
    values[F_POSITION_EFFECTS] = Py_NewRef(x->position_effects);
    values[F_POSITION_P] = float_or_none(position_tested, position_p);
    values[F_POSITION_DETECTED] = PyBool_FromLong(position_detected);
    values[F_MEANS] = Py_NewRef(x->means);
    values[F_STDS] = Py_NewRef(x->stds);
    values[F_OFFSETS] = Py_NewRef(x->offsets);
    values[F_OFFSET_P] = by_name(x->reviewers, x->loo_flag, x->offset_p, R);
    values[F_LOO] = by_name(x->reviewers, x->loo_flag, x->loo, R);
    values[F_HARSH] = sorted_names(x->reviewers, x->loo_order, x->n_loo, harsh);
    values[F_GENEROUS] = sorted_names(x->reviewers, x->loo_order, x->n_loo, generous);
    values[F_SELF] = by_name(x->reviewers, x->self_flag, x->self_pref, R);
    values[F_SELF_P] = by_name(x->reviewers, x->self_flag, x->self_p, R);
    values[F_PREFERRING] = sorted_names(x->reviewers, x->self_order, x->n_self, preferring);
    values[F_AGREEMENT] = Py_NewRef(x->agreement);
    values[F_THRESHOLD] = PyFloat_FromDouble(calibration_points * x->span / REFERENCE_SPAN);
    values[F_RISK] = Py_NewRef(risk == 0 ? s_low : risk <= 2 ? s_medium : s_high);
    values[F_NOISE_SD] = PyFloat_FromDouble(x->sd_points * x->span / REFERENCE_SPAN);
    values[F_NOISE_DF] = PyObject_GetAttr(x->noise, s_df);
    values[F_NOISE_SESSIONS] = PyObject_GetAttr(x->noise, s_sessions);
    values[F_NOISE_SOURCE] = PyObject_GetAttr(x->noise, s_source);
    for (int f = 0; f < FIELD_COUNT; f++)
        if (values[f] == NULL) goto done;
    out = PyDict_New();
    if (out == NULL) goto done;
    for (int f = 0; f < FIELD_COUNT; f++)
        if (PyDict_SetItem(out, field_keys[f], values[f]) < 0) {
            Py_CLEAR(out);
            goto done;
        }
done:
    for (int f = 0; f < FIELD_COUNT; f++) Py_XDECREF(values[f]);
    free(keep);
    return out;
}

static PyObject *audit_sessions(PyObject *Py_UNUSED(module), PyObject *args) {
    PyObject *batch, *noise_for, *tails;
    double length_threshold, calibration_points, self_points, alpha;
    if (!PyArg_ParseTuple(args, "O(dddd)OO:audit_sessions", &batch, &length_threshold, &calibration_points,
                          &self_points, &alpha, &noise_for, &tails))
        return NULL;
    PyObject *seq = PySequence_Fast(batch, "batch must be a sequence of SessionScores");
    if (seq == NULL) return NULL;
    Py_ssize_t B = PySequence_Fast_GET_SIZE(seq);
    PyObject **items = PySequence_Fast_ITEMS(seq);
    Session *sessions = calloc(B ? B : 1, sizeof(Session));
    Doubles t_df = {0}, t_x = {0}, n_x = {0}, f_a = {0}, f_b = {0}, f_x = {0};
    PyObject *contributions = PyList_New(B), *noise = NULL, *noise_seq = NULL, *asked = NULL, *answer = NULL;
    PyObject *out = NULL;
    if (sessions == NULL || contributions == NULL) {
        if (sessions == NULL) PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t b = 0; b < B; b++) {
        Session *x = &sessions[b];
        if (measure(items[b], x) < 0) goto done;
        double scale = REFERENCE_SPAN / x->span;
        PyObject *pair = Py_BuildValue("(dl)", x->rss * (scale * scale), x->df);
        if (pair == NULL) goto done;
        PyList_SET_ITEM(contributions, b, pair);
    }
    noise = PyObject_CallOneArg(noise_for, contributions);
    if (noise == NULL) goto done;
    noise_seq = PySequence_Fast(noise, "noise_for must return a sequence");
    if (noise_seq == NULL) goto done;
    if (PySequence_Fast_GET_SIZE(noise_seq) != B) {
        PyErr_SetString(PyExc_ValueError, "noise_for must return one noise scale per session");
        goto done;
    }
    for (Py_ssize_t b = 0; b < B; b++)
        if (ask_tails(&sessions[b], PySequence_Fast_GET_ITEM(noise_seq, b), &t_df, &t_x, &n_x, &f_a, &f_b, &f_x) < 0)
            goto done;
    asked = PyTuple_New(6);
    if (asked == NULL) goto done;
    const Doubles *kinds[6] = {&t_df, &t_x, &n_x, &f_a, &f_b, &f_x};
    for (int k = 0; k < 6; k++) {
        PyObject *b = bytes_of(kinds[k]);
        if (b == NULL) goto done;
        PyTuple_SET_ITEM(asked, k, b);
    }
    answer = PyObject_Call(tails, asked, NULL);
    if (answer == NULL) goto done;
    if (!PyTuple_Check(answer) || PyTuple_GET_SIZE(answer) != 3) {
        PyErr_SetString(PyExc_ValueError, "tails() must return a tuple of three bytes objects");
        goto done;
    }
    const double *t_p = read_tails(answer, 0, t_x.n), *n_p, *f_p;
    if (t_p == NULL || (n_p = read_tails(answer, 1, n_x.n)) == NULL || (f_p = read_tails(answer, 2, f_x.n)) == NULL)
        goto done;
    out = PyList_New(B);
    if (out == NULL) goto done;
    for (Py_ssize_t b = 0; b < B; b++) {
        Session *x = &sessions[b];
        PyObject *audit = finish(x, t_p, n_p, f_p, length_threshold, calibration_points, self_points, alpha);
        if (audit == NULL) {
            Py_CLEAR(out);
            goto done;
        }
        PyObject *row = PyTuple_Pack(3, audit, x->residuals, PyList_GET_ITEM(contributions, b));
        Py_DECREF(audit);
        if (row == NULL) {
            Py_CLEAR(out);
            goto done;
        }
        PyList_SET_ITEM(out, b, row);
    }
done:
    if (sessions != NULL)
        for (Py_ssize_t b = 0; b < B; b++) session_clear(&sessions[b]);
    free(sessions);
    free(t_df.v);
    free(t_x.v);
    free(n_x.v);
    free(f_a.v);
    free(f_b.v);
    free(f_x.v);
    Py_XDECREF(contributions);
    Py_XDECREF(noise);
    Py_XDECREF(noise_seq);
    Py_XDECREF(asked);
    Py_XDECREF(answer);
    Py_DECREF(seq);
    return out;
}

/* analysis.observations.session_scores' loop over the reviews: the reviewers in order of first
   appearance and CELL_WIDTH objects per score (the same objects the Python loop appends). */
static PyObject *score_cells(PyObject *Py_UNUSED(module), PyObject *args) {
    PyObject *reviews, *default_labels, *column;
    if (!PyArg_ParseTuple(args, "OOO!:score_cells", &reviews, &default_labels, &PyDict_Type, &column)) return NULL;
    PyObject *seq = PySequence_Fast(reviews, "reviews must be a sequence");
    if (seq == NULL) return NULL;
    PyObject *rows = PyDict_New(), *cells = PyList_New(0), *out = NULL;
    PyObject *review_scores = NULL, *labels = NULL, *reviewer = NULL, *abstained = NULL, *assignment = NULL;
    if (rows == NULL || cells == NULL) goto done;
    for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(seq); i++) {
        PyObject *review = PySequence_Fast_GET_ITEM(seq, i);
        abstained = PyObject_GetAttr(review, s_abstained);
        if (abstained == NULL) goto done;
        int skip = PyObject_IsTrue(abstained);
        Py_CLEAR(abstained);
        if (skip < 0) goto done;
        if (skip) continue;
        review_scores = PyObject_GetAttr(review, s_scores);
        if (review_scores == NULL) goto done;
        if (review_scores == Py_None || !PyDict_Check(review_scores) || PyDict_GET_SIZE(review_scores) == 0) {
            if (review_scores != Py_None && !PyDict_Check(review_scores)) {
                PyErr_SetString(PyExc_TypeError, "a review's scores must be a dict");
                goto done;
            }
            Py_CLEAR(review_scores);
            continue; /* ranking-only: no cells */
        }
        labels = PyObject_GetAttr(review, s_label_to_model);
        if (labels == NULL) goto done;
        if (labels == Py_None) Py_SETREF(labels, Py_NewRef(default_labels));
        reviewer = PyObject_GetAttr(review, s_reviewer);
        if (reviewer == NULL) goto done;
        PyObject *row = PyDict_GetItemWithError(rows, reviewer); /* borrowed */
        if (row == NULL) {
            if (PyErr_Occurred()) goto done;
            row = PyFloat_FromDouble((double)PyDict_GET_SIZE(rows));
            if (row == NULL) goto done;
            int failed = PyDict_SetItem(rows, reviewer, row) < 0;
            Py_DECREF(row); /* the dict holds it */
            if (failed) goto done;
        }
        Py_ssize_t pos = 0;
        PyObject *label, *score;
        while (PyDict_Next(review_scores, &pos, &label, &score)) {
            assignment = PyObject_GetItem(labels, label);
            if (assignment == NULL) goto done;
            PyObject *model = PyObject_GetItem(assignment, s_model);
            if (model == NULL) goto done;
            PyObject *shown = PyDict_Check(assignment) ? PyDict_GetItemWithError(assignment, s_display_index) : NULL;
            if (shown == NULL && PyErr_Occurred()) {
                Py_DECREF(model);
                goto done;
            }
            PyObject *col = PyDict_GetItemWithError(column, model);
            int own = col != NULL ? PyObject_RichCompareBool(reviewer, model, Py_EQ) : 0;
            Py_DECREF(model);
            if (col == NULL) {
                if (!PyErr_Occurred()) PyErr_SetString(PyExc_KeyError, "a label maps to a model with no response");
                goto done;
            }
            if (own < 0) goto done;
            PyObject *cell[CELL_WIDTH] = {row, col, score, shown == NULL || shown == Py_None ? minus_one : shown,
                                         own ? one : zero};
            for (int j = 0; j < CELL_WIDTH; j++)
                if (PyList_Append(cells, cell[j]) < 0) goto done;
            Py_CLEAR(assignment);
        }
        Py_CLEAR(review_scores);
        Py_CLEAR(labels);
        Py_CLEAR(reviewer);
    }
    PyObject *names = PyDict_Keys(rows);
    if (names == NULL) goto done;
    PyObject *tuple = PyList_AsTuple(names);
    Py_DECREF(names);
    if (tuple == NULL) goto done;
    out = PyTuple_Pack(2, tuple, cells);
    Py_DECREF(tuple);
done:
    Py_DECREF(seq);
    Py_XDECREF(rows);
    Py_XDECREF(cells);
    Py_XDECREF(review_scores);
    Py_XDECREF(labels);
    Py_XDECREF(reviewer);
    Py_XDECREF(abstained);
    Py_XDECREF(assignment);
    return out;
}

static PyMethodDef methods[] = {
    {"score_cells", score_cells, METH_VARARGS,
     "score_cells(reviews, default_labels, column: {model: float index}) -> (reviewers, cells):\n"
     "analysis.observations.session_scores' loop over the reviews (the same objects it appends)."},
    {"audit_sessions", audit_sessions, METH_VARARGS,
     "audit_sessions(batch, (length_threshold, calibration_points, self_points, alpha), noise_for, tails)\n"
     "-> [(the audit's values in FIELDS order, position residuals, (rss in points^2, df))] per session.\n"
     "noise_for(contributions) -> a noise scale (.sd, .df, .sessions, .source) per session;\n"
     "tails(t_df, t_x, n_x, f_a, f_b, f_x) -> (stdtr(t_df, t_x), ndtr(n_x), fdtrc(f_a, f_b, f_x)), all bytes of doubles."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_audit", "The per-session audit of a batch of council sessions in C (analysis/session_audit.py).",
    -1, methods,
};

PyMODINIT_FUNC PyInit__audit(void) {
    PyObject *m = PyModule_Create(&module);
    if (m == NULL) return NULL;
    PyObject *fields = PyTuple_New(FIELD_COUNT);
    if (fields == NULL) return NULL;
    for (int f = 0; f < FIELD_COUNT; f++) {
        field_keys[f] = PyUnicode_InternFromString(FIELD_NAMES[f]);
        if (field_keys[f] == NULL) return NULL;
        PyTuple_SET_ITEM(fields, f, Py_NewRef(field_keys[f]));
    }
    if (PyModule_AddObject(m, "FIELDS", fields) < 0) return NULL;
    const char *names[] = {"cells", "reviewers", "models", "candidates", "scale_low", "scale_high", "sd", "df",
                           "sessions", "source", "low", "medium", "high", "abstained", "scores", "label_to_model",
                           "reviewer", "model", "display_index"};
    PyObject **slots[] = {&s_cells, &s_reviewers, &s_models, &s_candidates, &s_scale_low, &s_scale_high, &s_sd, &s_df,
                          &s_sessions, &s_source, &s_low, &s_medium, &s_high, &s_abstained, &s_scores,
                          &s_label_to_model, &s_reviewer, &s_model, &s_display_index};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        if ((*slots[i] = PyUnicode_InternFromString(names[i])) == NULL) return NULL;
    if ((minus_one = PyFloat_FromDouble(-1.0)) == NULL || (one = PyFloat_FromDouble(1.0)) == NULL ||
        (zero = PyFloat_FromDouble(0.0)) == NULL)
        return NULL;
    return m;
}
