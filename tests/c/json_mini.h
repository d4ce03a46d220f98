/*
 * json_mini.h: just enough JSON for the tests to read what libzoo returns.
 *
 * A strict RFC 8259 scanner (no allocation except for decoded strings) that
 * can validate a document, walk a path such as "tool_calls.0.name" through
 * objects and arrays, and decode a string value (escapes and \u surrogate
 * pairs included) into a NUL-terminated UTF-8 copy. Header-only, and valid
 * as both C11 and C++17 so that the C and the C++ tests share it.
 */
#ifndef ZOO_TEST_JSON_MINI_H
#define ZOO_TEST_JSON_MINI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

/* Nesting deeper than this is rejected rather than recursed into. */
#define JM_MAX_DEPTH 64

static inline const char *jm_ws(const char *p, const char *end) {
    while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')) p++;
    return p;
}

static inline int jm_hex(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* Reads the 4 hex digits after "\u"; -1 if they are not hex. */
static inline long jm_u16(const char *p, const char *end) {
    long v = 0;
    if (end - p < 4) return -1;
    for (int i = 0; i < 4; i++) {
        int h = jm_hex(p[i]);
        if (h < 0) return -1;
        v = v * 16 + h;
    }
    return v;
}

/*
 * Scans the string starting at the opening quote at p. When out is not
 * NULL, writes the decoded UTF-8 there (it needs at most end - p bytes:
 * decoding never lengthens a string). Returns the position after the
 * closing quote, or NULL for an invalid string.
 */
static inline const char *jm_scan_string(const char *p, const char *end, char *out, size_t *out_len) {
    size_t n = 0;
    if (p >= end || *p != '"') return NULL;
    p++;
    while (p < end) {
        unsigned char c = (unsigned char)*p;
        if (c == '"') {
            if (out_len) *out_len = n;
            return p + 1;
        }
        if (c < 0x20) return NULL; /* raw control characters are not allowed */
        if (c != '\\') {
            if (out) out[n] = (char)c;
            n++;
            p++;
            continue;
        }
        if (++p >= end) return NULL;
        char e = *p++;
        const char *simple = strchr("\"\\/bfnrt", e);
        if (e != '\0' && simple) {
            static const char decoded[] = "\"\\/\b\f\n\r\t";
            if (out) out[n] = decoded[simple - "\"\\/bfnrt"];
            n++;
            continue;
        }
        if (e != 'u') return NULL;
        long cp = jm_u16(p, end);
        if (cp < 0) return NULL;
        p += 4;
        if (cp >= 0xD800 && cp <= 0xDBFF) {
            /* A high surrogate must be followed by an escaped low one. */
            if (end - p < 6 || p[0] != '\\' || p[1] != 'u') return NULL;
            long lo = jm_u16(p + 2, end);
            if (lo < 0xDC00 || lo > 0xDFFF) return NULL;
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            p += 6;
        } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
            return NULL;
        }
        char buf[4];
        size_t k;
        if (cp < 0x80) {
            buf[0] = (char)cp;
            k = 1;
        } else if (cp < 0x800) {
            buf[0] = (char)(0xC0 | (cp >> 6));
            buf[1] = (char)(0x80 | (cp & 0x3F));
            k = 2;
        } else if (cp < 0x10000) {
            buf[0] = (char)(0xE0 | (cp >> 12));
            buf[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
            buf[2] = (char)(0x80 | (cp & 0x3F));
            k = 3;
        } else {
            buf[0] = (char)(0xF0 | (cp >> 18));
            buf[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
            buf[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
            buf[3] = (char)(0x80 | (cp & 0x3F));
            k = 4;
        }
        if (out) memcpy(out + n, buf, k);
        n += k;
    }
    return NULL;
}

static inline const char *jm_scan_number(const char *p, const char *end) {
    if (p < end && *p == '-') p++;
    if (p >= end) return NULL;
    if (*p == '0') {
        p++;
    } else if (*p >= '1' && *p <= '9') {
        while (p < end && *p >= '0' && *p <= '9') p++;
    } else {
        return NULL;
    }
    if (p < end && *p == '.') {
        p++;
        if (p >= end || !(*p >= '0' && *p <= '9')) return NULL;
        while (p < end && *p >= '0' && *p <= '9') p++;
    }
    if (p < end && (*p == 'e' || *p == 'E')) {
        p++;
        if (p < end && (*p == '+' || *p == '-')) p++;
        if (p >= end || !(*p >= '0' && *p <= '9')) return NULL;
        while (p < end && *p >= '0' && *p <= '9') p++;
    }
    return p;
}

static inline const char *jm_literal(const char *p, const char *end, const char *word) {
    size_t n = strlen(word);
    if ((size_t)(end - p) < n || memcmp(p, word, n) != 0) return NULL;
    return p + n;
}

/* Skips one value starting at p (no leading whitespace); NULL if invalid. */
static inline const char *jm_skip(const char *p, const char *end, int depth) {
    if (p >= end || depth > JM_MAX_DEPTH) return NULL;
    switch (*p) {
    case '"':
        return jm_scan_string(p, end, NULL, NULL);
    case 't':
        return jm_literal(p, end, "true");
    case 'f':
        return jm_literal(p, end, "false");
    case 'n':
        return jm_literal(p, end, "null");
    case '[':
    case '{': {
        bool object = *p == '{';
        char close = object ? '}' : ']';
        p = jm_ws(p + 1, end);
        if (p < end && *p == close) return p + 1;
        for (;;) {
            if (object) {
                p = jm_scan_string(p, end, NULL, NULL);
                if (!p) return NULL;
                p = jm_ws(p, end);
                if (p >= end || *p != ':') return NULL;
                p = jm_ws(p + 1, end);
            }
            p = jm_skip(p, end, depth + 1);
            if (!p) return NULL;
            p = jm_ws(p, end);
            if (p < end && *p == ',') {
                p = jm_ws(p + 1, end);
                continue;
            }
            if (p < end && *p == close) return p + 1;
            return NULL;
        }
    }
    default:
        return jm_scan_number(p, end);
    }
}

/* Whether text[0..len) is exactly one JSON value (surrounding blanks allowed). */
static inline bool jm_valid(const char *text, size_t len) {
    if (!text) return false;
    const char *end = text + len;
    const char *p = jm_skip(jm_ws(text, end), end, 0);
    return p && jm_ws(p, end) == end;
}

/* Decodes the JSON string at value into a malloc'd NUL-terminated copy. */
static inline char *jm_decode(const char *value, size_t len) {
    if (!value || len == 0 || *value != '"') return NULL;
    char *out = (char *)malloc(len + 1);
    size_t n = 0;
    if (!out) return NULL;
    if (!jm_scan_string(value, value + len, out, &n)) {
        free(out);
        return NULL;
    }
    out[n] = '\0';
    return out;
}

/* Finds member `key` (of length key_len) of the object at [p, end). */
static inline const char *jm_member(const char *p, const char *end, const char *key, size_t key_len,
                             const char **value_end) {
    if (p >= end || *p != '{') return NULL;
    p = jm_ws(p + 1, end);
    while (p < end && *p == '"') {
        const char *key_end = jm_scan_string(p, end, NULL, NULL);
        if (!key_end) return NULL;
        char *name = jm_decode(p, (size_t)(key_end - p));
        bool match = name && strlen(name) == key_len && memcmp(name, key, key_len) == 0;
        free(name);
        p = jm_ws(key_end, end);
        if (p >= end || *p != ':') return NULL;
        p = jm_ws(p + 1, end);
        const char *v_end = jm_skip(p, end, 1);
        if (!v_end) return NULL;
        if (match) {
            *value_end = v_end;
            return p;
        }
        p = jm_ws(v_end, end);
        if (p < end && *p == ',') p = jm_ws(p + 1, end);
    }
    return NULL;
}

/* Finds element `index` of the array at [p, end). */
static inline const char *jm_element(const char *p, const char *end, size_t index, const char **value_end) {
    if (p >= end || *p != '[') return NULL;
    p = jm_ws(p + 1, end);
    for (size_t i = 0; p < end && *p != ']'; i++) {
        const char *v_end = jm_skip(p, end, 1);
        if (!v_end) return NULL;
        if (i == index) {
            *value_end = v_end;
            return p;
        }
        p = jm_ws(v_end, end);
        if (p < end && *p == ',') p = jm_ws(p + 1, end);
    }
    return NULL;
}

/*
 * The value at `path` in the NUL-terminated document `json`: components are
 * separated by '.', a component made of digits indexes an array, any other
 * names an object member ("" is the whole document). Returns a pointer to
 * the value's text and its length in *len, or NULL if the document is not
 * valid JSON or the path does not exist.
 */
static inline const char *jm_at(const char *json, const char *path, size_t *len) {
    if (!json || !jm_valid(json, strlen(json))) return NULL;
    const char *end = json + strlen(json);
    const char *p = jm_ws(json, end);
    const char *v_end = jm_skip(p, end, 0);
    while (path && *path) {
        const char *dot = strchr(path, '.');
        size_t n = dot ? (size_t)(dot - path) : strlen(path);
        bool numeric = n > 0;
        size_t index = 0;
        for (size_t i = 0; i < n; i++) {
            if (path[i] < '0' || path[i] > '9') numeric = false;
            else index = index * 10 + (size_t)(path[i] - '0');
        }
        if (*p == '[' && numeric) p = jm_element(p, v_end, index, &v_end);
        else p = jm_member(p, v_end, path, n, &v_end);
        if (!p) return NULL;
        path = dot ? dot + 1 : path + n;
    }
    if (len) *len = (size_t)(v_end - p);
    return p;
}

/* The string at `path`, decoded and malloc'd (free it), or NULL. */
static inline char *jm_string(const char *json, const char *path) {
    size_t len = 0;
    const char *v = jm_at(json, path, &len);
    return v ? jm_decode(v, len) : NULL;
}

/* The number at `path` in *out; false if absent or not a number. */
static inline bool jm_number(const char *json, const char *path, double *out) {
    size_t len = 0;
    const char *v = jm_at(json, path, &len);
    if (!v || !(*v == '-' || (*v >= '0' && *v <= '9'))) return false;
    char buf[64];
    if (len >= sizeof buf) return false;
    memcpy(buf, v, len);
    buf[len] = '\0';
    *out = strtod(buf, NULL);
    return true;
}

/* The number of elements of the array at `path`, or -1 if it is not one. */
static inline long jm_count(const char *json, const char *path) {
    size_t len = 0;
    const char *p = jm_at(json, path, &len);
    if (!p || *p != '[') return -1;
    const char *end = p + len, *v_end = NULL;
    long n = 0;
    while (jm_element(p, end, (size_t)n, &v_end)) n++;
    return n;
}

/* Whether the value at `path` is exactly the literal `word` (true/false/null). */
static inline bool jm_is(const char *json, const char *path, const char *word) {
    size_t len = 0;
    const char *v = jm_at(json, path, &len);
    return v && len == strlen(word) && memcmp(v, word, len) == 0;
}

#endif /* ZOO_TEST_JSON_MINI_H */
