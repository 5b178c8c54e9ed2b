/* The worker's loops over answer text, in C.

   count_words(text) is len(text.split()) without a string per word (analysis/observations.py);
   normalized_ascii(text) the fingerprint's normalized text (analysis/response_traits.py).

   cosine_matrix(texts) takes each text as its words separated by spaces (bytes, from word_bytes)
   and returns the n x n cosines as lists of floats: NaN where a text has no words. The same
   arithmetic as the numpy path there: integer counts, integer dot products (exact), then
   dot / sqrt(norm_i * norm_j) in doubles, so the two give identical floats. Words get ids from
   an open-addressing table over the texts' own bytes (no object per word); a word pair is the
   key first * vocabulary + second in a second table. */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    uint64_t *keys;  /* pair key + 1; 0 marks an empty slot */
    Py_ssize_t *terms;  /* the pair's term index */
    size_t mask;
} PairTable;

static int pair_table_init(PairTable *table, Py_ssize_t pairs) {
    size_t capacity = 16;
    while (capacity < (size_t)pairs * 2) capacity <<= 1;  /* load factor <= 1/2 */
    table->keys = calloc(capacity, sizeof(uint64_t));
    table->terms = malloc(capacity * sizeof(Py_ssize_t));
    table->mask = capacity - 1;
    return table->keys != NULL && table->terms != NULL;
}

static void pair_table_free(PairTable *table) {
    free(table->keys);
    free(table->terms);
}

/* The term index of `key`, a new one (*next) when first seen. */
static Py_ssize_t pair_term(PairTable *table, uint64_t key, Py_ssize_t *next) {
    uint64_t stored = key + 1;
    size_t slot = (size_t)((stored * 0x9E3779B97F4A7C15ULL) >> 17) & table->mask;
    while (table->keys[slot] != 0) {
        if (table->keys[slot] == stored) return table->terms[slot];
        slot = (slot + 1) & table->mask;
    }
    table->keys[slot] = stored;
    table->terms[slot] = (*next)++;
    return table->terms[slot];
}

/* gram[i * n + j] += counts[t * n + i] * counts[t * n + j] over every term t, i <= j. */
static void accumulate(const int32_t *counts, Py_ssize_t terms, Py_ssize_t n, int64_t *gram) {
    for (Py_ssize_t t = 0; t < terms; t++) {
        const int32_t *row = counts + t * n;
        for (Py_ssize_t i = 0; i < n; i++) {
            if (row[i] == 0) continue;
            for (Py_ssize_t j = i; j < n; j++) gram[i * n + j] += (int64_t)row[i] * row[j];
        }
    }
}

typedef struct {
    const char *start;
    Py_ssize_t length;
} Word;

static uint64_t word_hash(Word word) {  /* FNV-1a */
    uint64_t hash = 0xcbf29ce484222325ULL;
    for (Py_ssize_t k = 0; k < word.length; k++) hash = (hash ^ (unsigned char)word.start[k]) * 0x100000001b3ULL;
    return hash;
}

typedef struct {
    int32_t *slots;  /* a distinct word's id + 1; 0 marks an empty slot */
    size_t mask;
    Word *distinct;  /* by id: the word's first occurrence */
    uint64_t *hashes;  /* by id */
} WordTable;

/* The dense id of a word (in order of first appearance), a new one (*next) when first seen. */
static Py_ssize_t word_id(WordTable *table, Word word, Py_ssize_t *next) {
    uint64_t hash = word_hash(word);
    size_t slot = (size_t)(hash ^ (hash >> 29)) & table->mask;
    while (table->slots[slot] != 0) {
        Py_ssize_t id = table->slots[slot] - 1;
        Word seen = table->distinct[id];
        if (table->hashes[id] == hash && seen.length == word.length &&
            memcmp(seen.start, word.start, (size_t)word.length) == 0)
            return id;
        slot = (slot + 1) & table->mask;
    }
    table->distinct[*next] = word;
    table->hashes[*next] = hash;
    table->slots[slot] = (int32_t)(*next + 1);
    return (*next)++;
}

static PyObject *cosine_matrix(PyObject *module, PyObject *arg) {
    PyObject *texts = PySequence_Fast(arg, "cosine_matrix() takes a sequence of bytes");
    if (texts == NULL) return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(texts);
    PyObject **items = PySequence_Fast_ITEMS(texts);
    PyObject *result = NULL;
    Py_ssize_t *starts = calloc((size_t)n + 1, sizeof(Py_ssize_t));  /* each text's first word in ids */
    Py_ssize_t *ids = NULL;
    Word *occurrences = NULL;
    WordTable words_table = {NULL, 0, NULL, NULL};
    int32_t *unigrams = NULL, *bigrams = NULL;
    int64_t *gram = calloc((size_t)(n > 0 ? n * n : 1), sizeof(int64_t));
    PairTable table = {NULL, NULL, 0};
    if (starts == NULL || gram == NULL) goto nomemory;

    Py_ssize_t bytes = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (!PyBytes_Check(items[i])) {
            PyErr_SetString(PyExc_TypeError, "cosine_matrix() takes bytes: words separated by spaces");
            goto fail;
        }
        bytes += PyBytes_GET_SIZE(items[i]);
    }
    Py_ssize_t most = bytes / 2 + n + 1;  /* a word and its separator take two bytes at least */
    occurrences = malloc((size_t)most * sizeof(Word));
    if (occurrences == NULL) goto nomemory;
    Py_ssize_t total = 0;
    for (Py_ssize_t i = 0; i < n; i++) {  /* split on spaces, as bytes.split() on these texts */
        const char *text = PyBytes_AS_STRING(items[i]);
        Py_ssize_t size = PyBytes_GET_SIZE(items[i]), k = 0;
        while (k < size) {
            while (k < size && text[k] == ' ') k++;
            Py_ssize_t first = k;
            while (k < size && text[k] != ' ') k++;
            if (k > first) occurrences[total++] = (Word){text + first, k - first};
        }
        starts[i + 1] = total;
    }
    if (total >= INT32_MAX) {
        PyErr_SetString(PyExc_OverflowError, "cosine_matrix(): too many words");
        goto fail;
    }
    size_t capacity = 16;
    while (capacity < (size_t)total * 2) capacity <<= 1;  /* load factor <= 1/2 */
    words_table.mask = capacity - 1;
    words_table.slots = calloc(capacity, sizeof(int32_t));
    words_table.distinct = malloc((size_t)(total > 0 ? total : 1) * sizeof(Word));
    words_table.hashes = malloc((size_t)(total > 0 ? total : 1) * sizeof(uint64_t));
    ids = malloc((size_t)(total > 0 ? total : 1) * sizeof(Py_ssize_t));
    if (words_table.slots == NULL || words_table.distinct == NULL || words_table.hashes == NULL || ids == NULL)
        goto nomemory;
    Py_ssize_t words = 0;
    for (Py_ssize_t k = 0; k < total; k++) ids[k] = word_id(&words_table, occurrences[k], &words);
    unigrams = calloc((size_t)(words > 0 ? words * n : 1), sizeof(int32_t));
    Py_ssize_t pairs = 0;  /* a text of w words has w - 1 word pairs */
    for (Py_ssize_t i = 0; i < n; i++) pairs += starts[i + 1] > starts[i] ? starts[i + 1] - starts[i] - 1 : 0;
    bigrams = calloc((size_t)(pairs > 0 ? pairs * n : 1), sizeof(int32_t));
    if (unigrams == NULL || bigrams == NULL || !pair_table_init(&table, pairs)) goto nomemory;
    Py_ssize_t pair_terms = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        for (Py_ssize_t k = starts[i]; k < starts[i + 1]; k++) {
            unigrams[ids[k] * n + i]++;
            if (k + 1 < starts[i + 1]) {
                uint64_t key = (uint64_t)ids[k] * (uint64_t)words + (uint64_t)ids[k + 1];
                bigrams[pair_term(&table, key, &pair_terms) * n + i]++;
            }
        }
    }
    accumulate(unigrams, words, n, gram);
    accumulate(bigrams, pair_terms, n, gram);

    result = PyList_New(n);
    if (result == NULL) goto fail;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *row = PyList_New(n);
        if (row == NULL) goto fail;
        PyList_SET_ITEM(result, i, row);
        for (Py_ssize_t j = 0; j < n; j++) {
            int64_t dot = i <= j ? gram[i * n + j] : gram[j * n + i];
            double norms = (double)gram[i * n + i] * (double)gram[j * n + j];
            PyObject *value = PyFloat_FromDouble((double)dot / sqrt(norms));  /* 0/0: NaN */
            if (value == NULL) goto fail;
            PyList_SET_ITEM(row, j, value);
        }
    }
    goto done;

nomemory:
    PyErr_NoMemory();
fail:
    Py_CLEAR(result);
done:
    pair_table_free(&table);
    free(bigrams);
    free(unigrams);
    free(gram);
    free(words_table.slots);
    free(words_table.distinct);
    free(words_table.hashes);
    free(occurrences);
    free(ids);
    free(starts);
    Py_DECREF(texts);
    return result;
}

/* Words are the runs between whitespace, as str.split() finds them: Py_UNICODE_ISSPACE is the
   test str.split() itself applies, for every kind of string (U+00A0, U+3000 and the ASCII
   separators \x1c-\x1f included). */
static unsigned char latin1_space[256];  /* Py_UNICODE_ISSPACE of each one-byte character */

/* str.split()'s whitespace within ASCII: \t-\r, \x1c-\x1f and the space. */
#define ASCII_SPACE(c) (((c) == 32) | ((unsigned char)((c) - 9) < 5) | ((unsigned char)((c) - 28) < 4))

static PyObject *count_words(PyObject *module, PyObject *text) {
    if (!PyUnicode_Check(text)) {
        PyErr_Format(PyExc_TypeError, "count_words() takes a str, not %.100s", Py_TYPE(text)->tp_name);
        return NULL;
    }
    Py_ssize_t length = PyUnicode_GET_LENGTH(text), words = 0;
    int kind = PyUnicode_KIND(text), in_space = 1;
    const void *data = PyUnicode_DATA(text);
    if (PyUnicode_IS_ASCII(text)) {  /* the usual case: branch-free, so the compiler vectorizes it */
        const Py_UCS1 *chars = data;
        if (length > 0) words = !ASCII_SPACE(chars[0]);
        for (Py_ssize_t i = 1; i < length; i++) words += ASCII_SPACE(chars[i - 1]) & !ASCII_SPACE(chars[i]);
    } else if (kind == PyUnicode_1BYTE_KIND) {  /* a word starts where a space ends */
        const Py_UCS1 *chars = data;
        if (length > 0) words = !latin1_space[chars[0]];
        for (Py_ssize_t i = 1; i < length; i++) words += latin1_space[chars[i - 1]] & !latin1_space[chars[i]];
    } else {
        for (Py_ssize_t i = 0; i < length; i++) {
            int space = Py_UNICODE_ISSPACE(PyUnicode_READ(kind, data, i)) != 0;
            words += in_space & !space;
            in_space = space;
        }
    }
    return PyLong_FromSsize_t(words);
}

/* " ".join(text.lower().split()).encode() for an ASCII text, without a string per word (the
   fingerprint's normalization, analysis/response_traits.py); None for any other text, whose
   lower() and split() follow Unicode's rules and stay in Python. */
static PyObject *normalized_ascii(PyObject *module, PyObject *text) {
    if (!PyUnicode_Check(text)) {
        PyErr_Format(PyExc_TypeError, "normalized_ascii() takes a str, not %.100s", Py_TYPE(text)->tp_name);
        return NULL;
    }
    if (!PyUnicode_IS_ASCII(text)) Py_RETURN_NONE;
    Py_ssize_t length = PyUnicode_GET_LENGTH(text), size = 0;
    const Py_UCS1 *chars = PyUnicode_1BYTE_DATA(text);
    PyObject *out = PyBytes_FromStringAndSize(NULL, length);  /* never longer than the text */
    if (out == NULL) return NULL;
    char *write = PyBytes_AS_STRING(out);
    int pending_space = 0;  /* a run of whitespace between two words: one space, once the next word starts */
    for (Py_ssize_t i = 0; i < length; i++) {
        Py_UCS1 c = chars[i];
        if (latin1_space[c]) {
            pending_space = size > 0;
            continue;
        }
        if (pending_space) {
            write[size++] = ' ';
            pending_space = 0;
        }
        write[size++] = (c >= 'A' && c <= 'Z') ? (char)(c + 32) : (char)c;
    }
    if (_PyBytes_Resize(&out, size) < 0) return NULL;
    return out;
}

static PyMethodDef methods[] = {
    {"count_words", count_words, METH_O, "count_words(text: str) -> len(text.split()), without the words"},
    {"normalized_ascii", normalized_ascii, METH_O,
     "normalized_ascii(text: str) -> ' '.join(text.lower().split()).encode() for ASCII text, else None"},
    {"cosine_matrix", cosine_matrix, METH_O,
     "cosine_matrix(texts: sequence of bytes, words separated by spaces) -> n x n cosines of word 1-2-gram counts (NaN: no words)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_text", "Word counts, normalized text and word 1-2-gram cosines in C (analysis/observations.py, response_traits.py).", -1, methods,
};

PyMODINIT_FUNC PyInit__text(void) {
    for (int c = 0; c < 256; c++) latin1_space[c] = Py_UNICODE_ISSPACE(c) != 0;
    return PyModule_Create(&module);
}
