/*
 * test_scenarios.c: the C runner of the shared scenario suite. Every JSON
 * file in tests/scenarios/ (format in its README) runs here against libzoo
 * on the mock, as it runs in the Rust, Python and Node runners, and again
 * on a backend written in C that replays the mock's script (README: On a
 * host backend). Each failure is noted with the scenario's name, the step
 * and the path of the first difference.
 */
#define _POSIX_C_SOURCE 200809L
#define _XOPEN_SOURCE 700 /* realpath */

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "json_mini.h"

#ifndef ZOO_REPO_ROOT
#error "ZOO_REPO_ROOT must name the repository (tests/c/Makefile defines it)"
#endif
#define SCENARIO_DIR ZOO_REPO_ROOT "/tests/scenarios"

/* A JSON value: its text at [p, end). */
typedef struct {
    const char *p, *end;
} jv;

static bool jv_ok(jv v) { return v.p != NULL; }

static jv jv_of(const char *text) {
    jv v = {NULL, NULL};
    if (!text) return v;
    const char *end = text + strlen(text);
    const char *p = jm_ws(text, end);
    const char *e = jm_skip(p, end, 0);
    if (e && jm_ws(e, end) == end) {
        v.p = p;
        v.end = e;
    }
    return v;
}

static jv jv_get(jv object, const char *key) {
    jv v = {NULL, NULL};
    if (!jv_ok(object)) return v;
    v.p = jm_member(object.p, object.end, key, strlen(key), &v.end);
    if (!v.p) v.end = NULL;
    return v;
}

static jv jv_at(jv array, size_t i) {
    jv v = {NULL, NULL};
    if (!jv_ok(array)) return v;
    v.p = jm_element(array.p, array.end, i, &v.end);
    if (!v.p) v.end = NULL;
    return v;
}

static long jv_len(jv array) {
    if (!jv_ok(array) || *array.p != '[') return -1;
    long n = 0;
    while (jv_ok(jv_at(array, (size_t)n))) n++;
    return n;
}

static char jv_kind(jv v) { return jv_ok(v) ? *v.p : 0; }

/* The value's text, NUL-terminated and malloc'd. */
static char *jv_text(jv v) {
    size_t n = (size_t)(v.end - v.p);
    char *out = malloc(n + 1);
    memcpy(out, v.p, n);
    out[n] = '\0';
    return out;
}

/* A string value decoded (malloc'd), or NULL if v is not a string. */
static char *jv_str(jv v) { return jv_kind(v) == '"' ? jm_decode(v.p, (size_t)(v.end - v.p)) : NULL; }

static double jv_num(jv v) {
    char *text = jv_text(v);
    double d = strtod(text, NULL);
    free(text);
    return d;
}

static bool jv_is_number(jv v) { return jv_kind(v) == '-' || (jv_kind(v) >= '0' && jv_kind(v) <= '9'); }

/* Calls fn for each member of an object; stops at the first false. */
static bool jv_each(jv object, bool (*fn)(void *ctx, const char *key, jv value), void *ctx) {
    const char *p = jm_ws(object.p + 1, object.end);
    while (p < object.end && *p == '"') {
        const char *key_end = jm_scan_string(p, object.end, NULL, NULL);
        char *key = jm_decode(p, (size_t)(key_end - p));
        p = jm_ws(key_end, object.end);
        p = jm_ws(p + 1, object.end); /* ':' */
        jv value = {p, jm_skip(p, object.end, 1)};
        bool go = fn(ctx, key, value);
        free(key);
        if (!go) return false;
        p = jm_ws(value.end, object.end);
        if (p < object.end && *p == ',') p = jm_ws(p + 1, object.end);
    }
    return true;
}

/* ---- subset matching (README: Matching) ---- */

static bool matches(jv want, jv got, const char *path);

typedef struct {
    jv got;
    const char *path;
} member_ctx;

static bool match_member(void *ctx, const char *key, jv want) {
    member_ctx *m = ctx;
    char path[512];
    snprintf(path, sizeof path, "%s.%s", m->path, key);
    jv got = jv_get(m->got, key);
    if (!jv_ok(got)) {
        char *text = jv_text(m->got);
        th_note("%s: missing (got %s)", path, text);
        free(text);
        return false;
    }
    return matches(want, got, path);
}

static bool type_matches(const char *kind, jv got) {
    char c = jv_kind(got);
    if (strcmp(kind, "number") == 0) return jv_is_number(got);
    if (strcmp(kind, "string") == 0) return c == '"';
    if (strcmp(kind, "boolean") == 0) return c == 't' || c == 'f';
    if (strcmp(kind, "object") == 0) return c == '{';
    if (strcmp(kind, "array") == 0) return c == '[';
    return strcmp(kind, "any") == 0;
}

static bool matches(jv want, jv got, const char *path) {
    bool same;
    char kind = jv_kind(want);
    jv type = kind == '{' ? jv_get(want, "$type") : (jv){NULL, NULL};
    if (jv_ok(type)) {
        char *name = jv_str(type);
        same = name && type_matches(name, got);
        if (!same) {
            char *text = jv_text(got);
            th_note("%s: want a %s, got %s", path, name ? name : "?", text);
            free(text);
        }
        free(name);
        return same;
    }
    if (kind == '{' && jv_kind(got) == '{') {
        member_ctx ctx = {got, path};
        return jv_each(want, match_member, &ctx);
    }
    if (kind == '[' && jv_kind(got) == '[') {
        long n = jv_len(want), m = jv_len(got);
        if (n != m) {
            char *text = jv_text(got);
            th_note("%s: want %ld items, got %ld: %s", path, n, m, text);
            free(text);
            return false;
        }
        for (long i = 0; i < n; i++) {
            char sub[512];
            snprintf(sub, sizeof sub, "%s.%ld", path, i);
            if (!matches(jv_at(want, (size_t)i), jv_at(got, (size_t)i), sub)) return false;
        }
        return true;
    }
    if (kind == '"' && jv_kind(got) == '"') {
        char *a = jv_str(want), *b = jv_str(got);
        same = a && b && strcmp(a, b) == 0;
        free(a);
        free(b);
    } else if (jv_is_number(want) && jv_is_number(got)) {
        same = jv_num(want) == jv_num(got);
    } else {
        same = kind != '{' && kind != '[' && (want.end - want.p) == (got.end - got.p) &&
               memcmp(want.p, got.p, (size_t)(want.end - want.p)) == 0;
    }
    if (!same) {
        char *w = jv_text(want), *g = jv_text(got);
        th_note("%s: want %s, got %s", path, w, g);
        free(w);
        free(g);
    }
    return same;
}

/* Matches with the expectation given as text. */
static bool matches_text(jv want, const char *got, const char *path) {
    jv g = jv_of(got);
    if (!jv_ok(g)) {
        th_note("%s: not JSON: %s", path, got);
        return false;
    }
    return matches(want, g, path);
}

/* ---- errors ---- */

static const char *const CODE_NAMES[] = {
    "ok", "invalid_argument", "invalid_config", "invalid_json", "model_load_failed",
    "invalid_message_sequence", "context_overflow", "inference_failed", "cancelled",
    "tool_not_found", "tool_validation_failed", "tool_retries_exhausted",
    "tool_handler_failed", "agent_not_running", "mcp", "io", "internal",
    "provider_failed", "authentication_failed",
};

/* Whether a call that returned `status` with message `error` meets the
 * expectation `want` (absent: the call had to succeed). */
static bool check_outcome(jv want, zoo_status status, const char *error, const char *at) {
    int n = (int)(sizeof CODE_NAMES / sizeof CODE_NAMES[0]);
    const char *got = (int)status >= 0 && (int)status < n ? CODE_NAMES[status] : "unknown";
    if (!jv_ok(want)) {
        if (status == ZOO_OK) return true;
        th_note("%s: unexpected error %s (%s): %s", at, got, zoo_status_str((int32_t)status),
                error ? error : "");
        return false;
    }
    if (status == ZOO_OK) {
        th_note("%s: want an error, got none", at);
        return false;
    }
    char *code = jv_str(jv_get(want, "code"));
    bool ok = code && strcmp(code, got) == 0;
    if (!ok) th_note("%s.error.code: want %s, got %s: %s", at, code ? code : "?", got, error ? error : "");
    free(code);
    jv message = jv_get(want, "message");
    if (ok && jv_ok(message)) {
        char *text = jv_str(message);
        ok = text && error && strcmp(text, error) == 0;
        if (!ok) th_note("%s.error.message: want \"%s\", got \"%s\"", at, text ? text : "?", error ? error : "");
        free(text);
    }
    return ok;
}

/* ---- tools ---- */

/* How long `wait_cancelled` and `cancel_seen` wait at most (ms). */
#define SCENARIO_WAIT_MS 60000

/* The tools that saw their call's cancel token set (`cancel_seen`). */
static struct {
    pthread_mutex_t lock;
    pthread_cond_t changed;
    char names[16][65];
    int count;
} seen = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, {{0}}, 0};

static bool seen_has(const char *name) {
    for (int i = 0; i < seen.count; i++)
        if (strcmp(seen.names[i], name) == 0) return true;
    return false;
}

static void saw_cancel(const char *name) {
    pthread_mutex_lock(&seen.lock);
    if (!seen_has(name) && seen.count < 16) snprintf(seen.names[seen.count++], 65, "%s", name);
    pthread_cond_broadcast(&seen.changed);
    pthread_mutex_unlock(&seen.lock);
}

/* Whether `name` saw its token set, waiting for it a while. */
static bool cancel_seen(const char *name) {
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += SCENARIO_WAIT_MS / 1000;
    pthread_mutex_lock(&seen.lock);
    int rc = 0;
    while (!seen_has(name) && rc != ETIMEDOUT) rc = pthread_cond_timedwait(&seen.changed, &seen.lock, &until);
    bool found = seen_has(name);
    pthread_mutex_unlock(&seen.lock);
    return found;
}

typedef struct {
    const zoo_agent *agent; /* for `stop`, `steer` and `follow_up` */
    char *name;
    bool stop;
    char *steer;     /* sent with zoo_agent_steer, or NULL */
    char *follow_up; /* queued with zoo_agent_follow_up, or NULL */
    char *report;    /* the `report` list's JSON text, or NULL */
    long sleep_ms;
    bool wait_cancelled;
    char *cancel_seen; /* the tool asked about, or NULL */
    bool echo;
    char *fail;   /* decoded message, or NULL */
    char *result; /* JSON text to return */
} behavior;

static void free_behavior(void *user_data) {
    behavior *b = user_data;
    free(b->name);
    free(b->fail);
    free(b->result);
    free(b->steer);
    free(b->follow_up);
    free(b->report);
    free(b->cancel_seen);
    free(b);
}

/* Makes the `report` list's reports through the call's context, in order. */
static void report(const char *list, const zoo_tool_context *context) {
    jv reports = jv_of(list);
    for (long i = 0; i < jv_len(reports); i++) {
        jv item = jv_at(reports, (size_t)i);
        char *text = jv_str(jv_get(item, "progress"));
        if (text) zoo_tool_context_progress(context, text, NULL, NULL);
        free(text);
        jv update = jv_get(item, "update");
        if (jv_ok(update)) {
            char *json = jv_text(update);
            zoo_tool_context_update_json(context, json, NULL, NULL);
            free(json);
        }
    }
}

static void run_tool(void *user_data, const char *args, size_t len, const zoo_tool_context *context,
                     zoo_tool_result *result) {
    (void)len;
    behavior *b = user_data;
    if (b->stop) zoo_agent_stop(b->agent);
    if (b->steer) zoo_agent_steer(b->agent, b->steer, NULL);
    if (b->follow_up) zoo_agent_follow_up(b->agent, b->follow_up, NULL);
    if (b->report) report(b->report, context);
    if (b->sleep_ms > 0) {
        struct timespec ts = {b->sleep_ms / 1000, (b->sleep_ms % 1000) * 1000000L};
        nanosleep(&ts, NULL);
    }
    if (b->wait_cancelled) {
        bool cancelled = false;
        zoo_tool_context_wait_cancelled(context, SCENARIO_WAIT_MS, &cancelled, NULL);
        if (!cancelled) {
            zoo_tool_result_set_error(result, "the cancel token was never set", NULL);
            return;
        }
        saw_cancel(b->name);
        zoo_tool_context_progress(context, "cancelled", NULL, NULL);
        zoo_tool_result_set_json(result, "{\"cancelled\": true}", NULL);
        return;
    }
    if (b->cancel_seen) zoo_tool_result_set_json(result, cancel_seen(b->cancel_seen) ? "true" : "false", NULL);
    else if (b->fail) zoo_tool_result_set_error(result, b->fail, NULL);
    else if (b->echo) zoo_tool_result_set_json(result, args, NULL);
    else zoo_tool_result_set_json(result, b->result ? b->result : "null", NULL);
}

static bool register_tool(zoo_agent *agent, jv tool) {
    jv how = jv_get(tool, "behavior");
    behavior *b = calloc(1, sizeof *b);
    jv sleep = jv_get(how, "sleep_ms");
    if (jv_ok(sleep)) b->sleep_ms = (long)jv_num(sleep);
    b->echo = jv_kind(jv_get(how, "echo")) == 't';
    b->stop = jv_kind(jv_get(how, "stop")) == 't';
    b->agent = agent;
    b->fail = jv_str(jv_get(how, "fail"));
    b->steer = jv_str(jv_get(how, "steer"));
    b->follow_up = jv_str(jv_get(how, "follow_up"));
    jv reports = jv_get(how, "report");
    if (jv_ok(reports)) b->report = jv_text(reports);
    b->wait_cancelled = jv_kind(jv_get(how, "wait_cancelled")) == 't';
    b->cancel_seen = jv_str(jv_get(how, "cancel_seen"));
    b->name = jv_str(jv_get(tool, "name"));
    jv ret = jv_get(how, "return");
    if (jv_ok(ret)) b->result = jv_text(ret);
    char *name = jv_str(jv_get(tool, "name"));
    char *description = jv_str(jv_get(tool, "description"));
    jv params = jv_get(tool, "parameters");
    char *schema = jv_ok(params) ? jv_text(params) : NULL;
    /* The tool's own keys: "exclusive" and "timeout_ms" (0 when absent). */
    zoo_tool_options options = {0};
    options.exclusive = jv_kind(jv_get(tool, "exclusive")) == 't';
    jv timeout = jv_get(tool, "timeout_ms");
    if (jv_ok(timeout)) options.timeout_ms = (int64_t)jv_num(timeout);
    char *err = NULL;
    zoo_status status = zoo_agent_register_tool_with_context(
        agent, name, description ? description : "", schema ? schema : "{\"type\":\"object\"}",
        &options, run_tool, b, free_behavior, &err);
    char at[128];
    snprintf(at, sizeof at, "tool %s", name ? name : "?");
    bool ok = check_outcome(jv_get(tool, "register_error"), status, err, at);
    th_free_string(&err);
    free(name);
    free(description);
    free(schema);
    return ok;
}

/* ---- workspaces, built-in tools, sub-agents ---- */

/* Creates every folder on the way to `file`. */
static void make_parents(const char *file) {
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s", file);
    for (char *slash = strchr(path + 1, '/'); slash; slash = strchr(slash + 1, '/')) {
        *slash = '\0';
        mkdir(path, 0700);
        *slash = '/';
    }
}

static bool write_workspace_file(void *ctx, const char *name, jv content) {
    const char *root = ctx;
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/%s", root, name);
    make_parents(path);
    FILE *f = fopen(path, "wb");
    if (!f) return false;
    char *text = jv_str(content);
    if (text) {
        fputs(text, f);
    } else {
        jv bytes = jv_get(content, "bytes");
        for (long i = 0; i < jv_len(bytes); i++) fputc((int)jv_num(jv_at(bytes, (size_t)i)), f);
    }
    free(text);
    fclose(f);
    return true;
}

static bool make_workspace_link(void *ctx, const char *name, jv target) {
    const char *root = ctx;
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/%s", root, name);
    char *to = jv_str(target);
    bool ok = to && symlink(to, path) == 0;
    free(to);
    return ok;
}

/* A fresh folder with the scenario's `files` (text, or {"bytes": [...]})
 * and `symlinks`; its real path goes to `root`. */
static bool make_workspace(jv spec, char *root, size_t size) {
    char made[] = "/tmp/zoo-c-scenario-XXXXXX";
    if (!mkdtemp(made) || !realpath(made, root) || strlen(root) >= size) return false;
    jv files = jv_get(spec, "files"), links = jv_get(spec, "symlinks");
    return (!jv_ok(files) || jv_each(files, write_workspace_file, root)) &&
           (!jv_ok(links) || jv_each(links, make_workspace_link, root));
}

static void remove_workspace(const char *root) {
    char command[PATH_MAX + 16];
    snprintf(command, sizeof command, "rm -rf '%s'", root);
    if (system(command) != 0) th_note("could not remove %s", root);
}

/* `text` with every `$WORKSPACE` replaced by `root` (malloc'd). */
static char *with_workspace(const char *text, const char *root) {
    const char *mark = "$WORKSPACE";
    size_t count = 0;
    for (const char *p = strstr(text, mark); p; p = strstr(p + 1, mark)) count++;
    size_t size = strlen(text) + count * strlen(root) + 1;
    char *out = malloc(size), *o = out;
    for (const char *p = text;;) {
        const char *hit = strstr(p, mark);
        size_t n = hit ? (size_t)(hit - p) : strlen(p);
        memcpy(o, p, n);
        o += n;
        if (!hit) break;
        o += sprintf(o, "%s", root);
        p = hit + strlen(mark);
    }
    *o = '\0';
    return out;
}

/* `confirm` of `builtin_tools`: per tool "allow", "refuse" or {"fail":
 * message}; user_data is the script's JSON text. */
static bool scripted_confirm(void *user_data, const char *tool, const char *args, size_t len,
                             zoo_confirmation *confirmation) {
    (void)args;
    (void)len;
    jv answer = jv_get(jv_of(user_data), tool);
    if (!jv_ok(answer)) return true;
    char *word = jv_str(answer);
    if (word) {
        bool allow = strcmp(word, "allow") == 0;
        free(word);
        return allow;
    }
    char *message = jv_str(jv_get(answer, "fail"));
    zoo_confirmation_set_error(confirmation, message ? message : "", NULL);
    free(message);
    return false;
}

static void free_text(void *user_data) { free(user_data); }

/* Registers the scenario's built-in tools on its workspace through
 * zoo_agent_add_builtin_tools. */
static bool add_builtin_tools(zoo_agent *agent, jv builtin, const char *root) {
    jv tools = jv_get(builtin, "tools"), deny = jv_get(builtin, "bash_deny");
    jv confirm = jv_get(builtin, "confirm");
    char *tools_text = jv_text(tools);
    char *deny_text = jv_ok(deny) ? jv_text(deny) : strdup("[]");
    size_t size = strlen(tools_text) + strlen(deny_text) + strlen(root) + 64;
    char *options = malloc(size);
    snprintf(options, size, "{\"tools\": %s, \"workspace\": \"%s\", \"bash_deny\": %s}", tools_text,
             root, deny_text);
    char *err = NULL;
    zoo_status status = jv_ok(confirm)
        ? zoo_agent_add_builtin_tools(agent, options, scripted_confirm, jv_text(confirm), free_text, &err)
        : zoo_agent_add_builtin_tools(agent, options, NULL, NULL, NULL, &err);
    bool ok = check_outcome((jv){NULL, NULL}, status, err, "builtin_tools");
    zoo_string_free(err);
    free(options);
    free(tools_text);
    free(deny_text);
    return ok;
}

static bool add_subagent(zoo_agent *agent, jv spec, const char *at) {
    char *text = jv_text(spec), *err = NULL;
    zoo_status status = zoo_agent_add_subagent(agent, text, &err);
    bool ok = check_outcome((jv){NULL, NULL}, status, err, at);
    zoo_string_free(err);
    free(text);
    return ok;
}

/* `text`, or JSON null when it is NULL, as a JSON string (malloc'd). */
static char *json_string_or_null(const char *text) {
    if (!text) return strdup("null");
    size_t n = strlen(text), o = 0;
    char *out = malloc(n * 6 + 3);
    out[o++] = '"';
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)text[i];
        if (c == '"' || c == '\\') {
            out[o++] = '\\';
            out[o++] = (char)c;
        } else if (c < 0x20) {
            o += (size_t)sprintf(out + o, "\\u%04x", c);
        } else {
            out[o++] = (char)c;
        }
    }
    out[o++] = '"';
    out[o] = '\0';
    return out;
}

typedef struct {
    const char *root, *at;
} files_ctx;

/* One file of `expect_files`: its text, or null when it must not exist. */
static bool expect_file(void *ctx, const char *name, jv want) {
    files_ctx *f = ctx;
    char path[PATH_MAX], at[512];
    snprintf(path, sizeof path, "%s/%s", f->root, name);
    snprintf(at, sizeof at, "%s.files.%s", f->at, name);
    char *text = NULL;
    FILE *file = fopen(path, "rb");
    if (file) {
        fseek(file, 0, SEEK_END);
        long size = ftell(file);
        fseek(file, 0, SEEK_SET);
        text = calloc(1, (size_t)size + 1);
        if (fread(text, 1, (size_t)size, file) != (size_t)size) th_note("%s: short read", at);
        fclose(file);
    }
    char *got = json_string_or_null(text);
    bool ok = matches_text(want, got, at);
    free(got);
    free(text);
    return ok;
}

/* The names of the tools the model is shown, as a JSON array (malloc'd). */
static char *tool_names(zoo_agent *agent) {
    char *tools = NULL, *err = NULL;
    if (zoo_agent_tools_json(agent, &tools, &err) != ZOO_OK) {
        zoo_string_free(err);
        return strdup("null");
    }
    jv list = jv_of(tools);
    size_t size = strlen(tools) + 3, n = 0;
    char *out = malloc(size);
    out[n++] = '[';
    for (long i = 0; i < jv_len(list); i++) {
        jv name = jv_get(jv_at(list, (size_t)i), "name");
        n += (size_t)snprintf(out + n, size - n, "%s%.*s", i ? "," : "", (int)(name.end - name.p), name.p);
    }
    snprintf(out + n, size - n, "]");
    zoo_string_free(tools);
    return out;
}

/* ---- steps ---- */

/* The events of one chat, collected as a JSON array. */
typedef struct {
    char *json;
    size_t len, cap;
} event_log;

static void on_event(void *user_data, const char *event, size_t len) {
    event_log *log = user_data;
    if (log->len + len + 3 > log->cap) {
        log->cap = (log->len + len + 3) * 2;
        log->json = realloc(log->json, log->cap);
    }
    log->json[log->len] = log->len == 0 ? '[' : ',';
    log->len++;
    memcpy(log->json + log->len, event, len);
    log->len += len;
    log->json[log->len] = '\0';
}

/* The log as a JSON array (malloc'd): what on_event collected, closed. */
static char *log_array(const event_log *log) {
    if (!log->json) return strdup("[]");
    char *out = malloc(log->len + 2);
    memcpy(out, log->json, log->len);
    out[log->len] = ']';
    out[log->len + 1] = '\0';
    return out;
}

/* ---- scripted hooks (README: Hooks) ---- */

/* One set of scripted hooks: its rules (the JSON text of the `hooks`
 * object) and where on_error writes what it receives, as JSON strings. */
typedef struct {
    char *rules;
    event_log *errors;
} scripted;

static void free_scripted(void *user_data) {
    scripted *h = user_data;
    free(h->rules);
    free(h);
}

/* `text` as a JSON string (malloc'd). */
static char *json_string(const char *text, size_t len) {
    char *out = malloc(len * 6 + 3), *p = out;
    *p++ = '"';
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)text[i];
        if (c == '"' || c == '\\') {
            *p++ = '\\';
            *p++ = (char)c;
        } else if (c < 0x20) {
            p += sprintf(p, "\\u%04x", c);
        } else {
            *p++ = (char)c;
        }
    }
    *p++ = '"';
    *p = '\0';
    return out;
}

/* The first rule of `point` that `match` accepts (for `key`, a string or
 * number of the hook's input), or an empty jv. */
typedef bool (*rule_match)(jv rule, jv input);

static jv first_rule(const scripted *h, const char *point, rule_match match, jv input) {
    jv rules = jv_get(jv_of(h->rules), point);
    for (long i = 0; i < jv_len(rules); i++) {
        jv rule = jv_at(rules, (size_t)i);
        if (match(rule, input)) return rule;
    }
    return (jv){NULL, NULL};
}

/* Applies a rule's `throw`; true when it threw. */
static bool thrown(jv rule, zoo_hook_result *result) {
    char *message = jv_str(jv_get(rule, "throw"));
    if (!message) return false;
    zoo_hook_result_set_error(result, message, NULL);
    free(message);
    return true;
}

/* Writes `{"action": action, key: <value's JSON>}` (no key when NULL). */
static void decide(zoo_hook_result *result, const char *action, const char *key, jv value) {
    char *text = key ? jv_text(value) : strdup("");
    size_t size = strlen(text) + strlen(action) + (key ? strlen(key) : 0) + 32;
    char *json = malloc(size);
    if (key) snprintf(json, size, "{\"action\":\"%s\",\"%s\":%s}", action, key, text);
    else snprintf(json, size, "{\"action\":\"%s\"}", action);
    zoo_hook_result_set_json(result, json, NULL);
    free(json);
    free(text);
}

static bool str_member_is(jv rule, const char *key, jv value, bool contains) {
    jv want = jv_get(rule, key);
    if (!jv_ok(want)) return true;
    char *a = jv_str(want), *b = jv_str(value);
    bool ok = a && b && (contains ? strstr(b, a) != NULL : strcmp(a, b) == 0);
    free(a);
    free(b);
    return ok;
}

static bool match_contains(jv rule, jv input) { return str_member_is(rule, "contains", jv_get(input, "message"), true); }
static bool match_tool(jv rule, jv input) {
    jv call = jv_ok(jv_get(input, "call")) ? jv_get(input, "call") : input;
    return str_member_is(rule, "tool", jv_get(call, "name"), false);
}
static bool match_turn(jv rule, jv input) {
    jv want = jv_get(rule, "turn");
    return !jv_ok(want) || jv_num(want) == jv_num(jv_get(input, "turn"));
}
static bool match_any(jv rule, jv input) {
    (void)rule;
    (void)input;
    return true;
}

static void hook_input_filter(void *user_data, const char *json, size_t len, zoo_hook_result *result) {
    (void)len;
    jv rule = first_rule(user_data, "input_filter", match_contains, jv_of(json));
    if (!jv_ok(rule) || thrown(rule, result)) return;
    if (jv_ok(jv_get(rule, "reject"))) decide(result, "reject", "reason", jv_get(rule, "reject"));
    else decide(result, "warn", "warning", jv_get(rule, "warn"));
}

static void hook_before_turn(void *user_data, const char *json, size_t len, zoo_hook_result *result) {
    (void)len;
    jv rule = first_rule(user_data, "before_turn", match_turn, jv_of(json));
    if (jv_ok(rule) && !thrown(rule, result)) decide(result, "end", NULL, rule);
}

static void hook_after_turn(void *user_data, const char *json, size_t len, zoo_hook_result *result) {
    (void)len;
    jv rule = first_rule(user_data, "after_turn", match_turn, jv_of(json));
    if (jv_ok(rule)) thrown(rule, result);
}

static void hook_before_tool_call(void *user_data, const char *json, size_t len, zoo_hook_result *result) {
    (void)len;
    jv rule = first_rule(user_data, "before_tool_call", match_tool, jv_of(json));
    if (!jv_ok(rule) || thrown(rule, result)) return;
    if (jv_ok(jv_get(rule, "rewrite"))) decide(result, "rewrite", "arguments", jv_get(rule, "rewrite"));
    else decide(result, "deny", "reason", jv_get(rule, "deny"));
}

static void hook_after_tool_call(void *user_data, const char *json, size_t len, zoo_hook_result *result) {
    (void)len;
    jv rule = first_rule(user_data, "after_tool_call", match_tool, jv_of(json));
    if (!jv_ok(rule) || thrown(rule, result)) return;
    char *replacement = jv_text(jv_get(rule, "replace"));
    zoo_hook_result_set_json(result, replacement, NULL);
    free(replacement);
}

static void hook_transform_context(void *user_data, const char *json, size_t len, zoo_hook_result *result) {
    (void)len;
    jv input = jv_of(json), messages = jv_get(input, "messages");
    jv rule = first_rule(user_data, "transform_context", match_any, input);
    if (!jv_ok(rule) || thrown(rule, result)) return;
    event_log kept = {NULL, 0, 0};
    for (long i = 0; i < jv_len(messages); i++) {
        jv message = jv_at(messages, (size_t)i);
        if (!str_member_is(rule, "drop_containing", jv_get(message, "content"), true))
            on_event(&kept, message.p, (size_t)(message.end - message.p));
    }
    char *array = log_array(&kept);
    zoo_hook_result_set_json(result, array, NULL);
    free(array);
    free(kept.json);
}

static void hook_context_strategy(void *user_data, const char *json, size_t len, zoo_hook_result *result) {
    (void)len;
    jv input = jv_of(json), messages = jv_get(input, "messages");
    jv rule = first_rule(user_data, "context_strategy", match_any, input);
    if (!jv_ok(rule) || thrown(rule, result)) return;
    if (jv_kind(jv_get(rule, "decline")) == 't') return;
    long start = 0;
    if (jv_kind(jv_get(rule, "keep_all")) != 't') {
        jv last = jv_get(rule, "keep_last");
        start = (long)jv_num(jv_get(input, "current_turn")) - (jv_ok(last) ? (long)jv_num(last) : 0);
        if (start < 0) start = 0;
    }
    event_log kept = {NULL, 0, 0};
    char *summary = jv_str(jv_get(rule, "summary"));
    if (summary) {
        char *content = json_string(summary, strlen(summary));
        size_t size = strlen(content) + 40;
        char *message = malloc(size);
        snprintf(message, size, "{\"role\":\"assistant\",\"content\":%s}", content);
        on_event(&kept, message, strlen(message));
        free(message);
        free(content);
        free(summary);
    }
    for (long i = start; i < jv_len(messages); i++) {
        jv message = jv_at(messages, (size_t)i);
        on_event(&kept, message.p, (size_t)(message.end - message.p));
    }
    char *array = log_array(&kept);
    zoo_hook_result_set_json(result, array, NULL);
    free(array);
    free(kept.json);
}

static void hook_on_error(void *user_data, zoo_status code, const char *message, size_t len) {
    (void)code;
    scripted *h = user_data;
    char *text = json_string(message, len);
    on_event(h->errors, text, strlen(text));
    free(text);
}

/* The hooks `rules` (a `hooks` object) script, recording on_error in
 * `errors`; the caller passes them on, which frees them through
 * free_user_data. */
static zoo_hooks scripted_hooks(jv rules, event_log *errors) {
    scripted *h = calloc(1, sizeof *h);
    h->rules = jv_text(rules);
    h->errors = errors;
    zoo_hooks hooks = {0};
    if (jv_ok(jv_get(rules, "input_filter"))) hooks.filter_input = hook_input_filter;
    if (jv_ok(jv_get(rules, "before_turn"))) hooks.before_turn = hook_before_turn;
    if (jv_ok(jv_get(rules, "after_turn"))) hooks.after_turn = hook_after_turn;
    if (jv_ok(jv_get(rules, "before_tool_call"))) hooks.before_tool_call = hook_before_tool_call;
    if (jv_ok(jv_get(rules, "after_tool_call"))) hooks.after_tool_call = hook_after_tool_call;
    if (jv_ok(jv_get(rules, "transform_context"))) hooks.transform_context = hook_transform_context;
    if (jv_ok(jv_get(rules, "context_strategy"))) hooks.context_strategy = hook_context_strategy;
    if (jv_kind(jv_get(rules, "on_error")) == 't') hooks.on_error = hook_on_error;
    hooks.user_data = h;
    hooks.free_user_data = free_scripted;
    return hooks;
}

/* What on_error received in the chat in flight (the scenario's agent's
 * hooks and each chat's own write here). */
static event_log hook_errors;

/* The expected events with bare strings widened to {"type": string}. */
static char *event_patterns(jv want) {
    size_t cap = (size_t)(want.end - want.p) * 4 + 64, n = 0;
    char *out = malloc(cap);
    n += (size_t)snprintf(out + n, cap - n, "[");
    for (long i = 0; i < jv_len(want); i++) {
        jv item = jv_at(want, (size_t)i);
        int len = (int)(item.end - item.p);
        n += (size_t)snprintf(out + n, cap - n, jv_kind(item) == '"' ? "%s{\"type\":%.*s}" : "%s%.*s",
                              i ? "," : "", len, item.p);
    }
    snprintf(out + n, cap - n, "]");
    return out;
}

static bool run_chat(zoo_agent *agent, jv step, const char *at) {
    char *message = jv_str(jv_get(step, "chat"));
    jv opts = jv_get(step, "options"), expect = jv_get(step, "expect");
    zoo_chat_options options = {0};
    free(hook_errors.json);
    hook_errors = (event_log){NULL, 0, 0};
    zoo_hooks chat_hooks;
    if (jv_ok(jv_get(opts, "hooks"))) {
        chat_hooks = scripted_hooks(jv_get(opts, "hooks"), &hook_errors);
        options.hooks = &chat_hooks;
    }
    char *tool_name = NULL;
    char *choice = jv_str(jv_get(opts, "tool_choice"));
    if (choice) {
        if (strcmp(choice, "auto") == 0) options.tool_choice = ZOO_TOOL_CHOICE_AUTO;
        else if (strcmp(choice, "required") == 0) options.tool_choice = ZOO_TOOL_CHOICE_REQUIRED;
        else if (strcmp(choice, "none") == 0) options.tool_choice = ZOO_TOOL_CHOICE_NONE;
        else {
            options.tool_choice = ZOO_TOOL_CHOICE_NAMED;
            options.tool_name = tool_name = choice;
            choice = NULL;
        }
    }
    jv max = jv_get(opts, "max_tokens");
    if (jv_ok(max)) options.max_tokens = (uint32_t)jv_num(max);
    jv turns = jv_get(opts, "max_turns");
    if (jv_ok(turns)) options.max_turns = (uint32_t)jv_num(turns);
    jv tokens = jv_get(opts, "max_total_tokens");
    if (jv_ok(tokens)) options.max_total_tokens = (uint64_t)jv_num(tokens);
    jv duration = jv_get(opts, "max_duration_ms");
    if (jv_ok(duration)) options.max_duration_ms = (uint64_t)jv_num(duration);
    event_log log = {NULL, 0, 0};
    zoo_chat_callbacks callbacks = {.on_event = on_event, .user_data = &log};
    char *out = NULL, *err = NULL;
    zoo_status status;
    if (message) status = zoo_agent_chat(agent, message, &options, &callbacks, &out, &err);
    else if (jv_ok(jv_get(step, "regenerate"))) status = zoo_agent_regenerate(agent, &options, &callbacks, &out, &err);
    else status = zoo_agent_continue(agent, &options, &callbacks, &out, &err);
    char path[512];
    snprintf(path, sizeof path, "%s", at);
    bool ok = check_outcome(jv_get(expect, "error"), status, err, at);
    jv want = jv_get(expect, "response");
    if (ok && status == ZOO_OK && jv_ok(want)) {
        snprintf(path, sizeof path, "%s.response", at);
        ok = matches_text(want, out, path);
    }
    jv events = jv_get(expect, "events");
    if (log.json) {
        /* on_event left room for the closing bracket. */
        log.json[log.len++] = ']';
        log.json[log.len] = '\0';
    }
    if (ok && jv_ok(events)) {
        char *patterns = event_patterns(events);
        snprintf(path, sizeof path, "%s.events", at);
        ok = matches_text(jv_of(patterns), log.json ? log.json : "[]", path);
        free(patterns);
    }
    jv want_errors = jv_get(expect, "hook_errors");
    if (ok && jv_ok(want_errors)) {
        char *got = log_array(&hook_errors);
        snprintf(path, sizeof path, "%s.hook_errors", at);
        ok = matches_text(want_errors, got, path);
        free(got);
    }
    free(log.json);
    zoo_string_free(out);
    zoo_string_free(err);
    free(message);
    free(choice);
    free(tool_name);
    return ok;
}

static bool run_step(zoo_agent *agent, jv step, const char *at, const char *root) {
    char *err = NULL;
    bool ok;
    if (jv_ok(jv_get(step, "chat")) || jv_ok(jv_get(step, "continue_chat")) || jv_ok(jv_get(step, "regenerate")))
        return run_chat(agent, step, at);
    if (jv_ok(jv_get(step, "set_history"))) {
        char *history = jv_text(jv_get(step, "set_history"));
        zoo_status status = zoo_agent_set_history_json(agent, history, &err);
        ok = check_outcome(jv_get(jv_get(step, "expect"), "error"), status, err, at);
        free(history);
    } else if (jv_ok(jv_get(step, "unregister_tool"))) {
        char *name = jv_str(jv_get(step, "unregister_tool"));
        bool removed = false;
        zoo_status status = zoo_agent_unregister_tool(agent, name, &removed, &err);
        ok = check_outcome((jv){NULL, NULL}, status, err, at);
        jv want = jv_get(jv_get(step, "expect"), "removed");
        if (ok && jv_ok(want)) {
            char path[512];
            snprintf(path, sizeof path, "%s.removed", at);
            ok = matches_text(want, removed ? "true" : "false", path);
        }
        free(name);
    } else if (jv_ok(jv_get(step, "set_system_prompt"))) {
        char *prompt = jv_str(jv_get(step, "set_system_prompt")); /* NULL for null: removes it */
        zoo_status status = zoo_agent_set_system_prompt(agent, prompt, &err);
        ok = check_outcome((jv){NULL, NULL}, status, err, at);
        free(prompt);
    } else if (jv_ok(jv_get(step, "steer")) || jv_ok(jv_get(step, "follow_up"))) {
        bool steer = jv_ok(jv_get(step, "steer"));
        char *text = jv_str(jv_get(step, steer ? "steer" : "follow_up"));
        zoo_status status = steer ? zoo_agent_steer(agent, text, &err) : zoo_agent_follow_up(agent, text, &err);
        ok = check_outcome((jv){NULL, NULL}, status, err, at);
        free(text);
    } else if (jv_ok(jv_get(step, "clear_queues"))) {
        ok = check_outcome((jv){NULL, NULL}, zoo_agent_clear_queues(agent), NULL, at);
    } else if (jv_ok(jv_get(step, "clear_history"))) {
        zoo_status status = zoo_agent_clear_history(agent, &err);
        ok = check_outcome((jv){NULL, NULL}, status, err, at);
    } else if (jv_ok(jv_get(step, "activate_skill"))) {
        char *name = jv_str(jv_get(step, "activate_skill")), *body = NULL;
        jv expect = jv_get(step, "expect");
        zoo_status status = zoo_agent_activate_skill(agent, name, &body, &err);
        ok = check_outcome(jv_get(expect, "error"), status, err, at);
        jv want = jv_get(expect, "result");
        if (ok && status == ZOO_OK && jv_ok(want)) {
            char path[512];
            snprintf(path, sizeof path, "%s.result", at);
            char *got = json_string_or_null(body);
            ok = matches_text(want, got, path);
            free(got);
        }
        zoo_string_free(body);
        free(name);
    } else if (jv_ok(jv_get(step, "deactivate_skill"))) {
        ok = check_outcome((jv){NULL, NULL}, zoo_agent_deactivate_skill(agent, &err), err, at);
    } else if (jv_ok(jv_get(step, "expect_tools"))) {
        char *names = tool_names(agent), path[512];
        snprintf(path, sizeof path, "%s.tools", at);
        ok = matches_text(jv_get(step, "expect_tools"), names, path);
        free(names);
    } else if (jv_ok(jv_get(step, "expect_files"))) {
        files_ctx ctx = {root, at};
        ok = root != NULL && jv_each(jv_get(step, "expect_files"), expect_file, &ctx);
        if (!root) th_note("%s: expect_files needs a workspace", at);
    } else if (jv_ok(jv_get(step, "expect_history"))) {
        char *history = NULL;
        zoo_status status = zoo_agent_history_json(agent, &history, &err);
        char path[512];
        snprintf(path, sizeof path, "%s.history", at);
        ok = check_outcome((jv){NULL, NULL}, status, err, at) &&
             matches_text(jv_get(step, "expect_history"), history, path);
        zoo_string_free(history);
    } else {
        th_note("%s: unknown step", at);
        ok = false;
    }
    zoo_string_free(err);
    return ok;
}

/* ---- on a host backend (README: On a host backend) ---- */

/* The mock's script replayed by a backend written in C, as a user's test
 * double would: each reply streamed word by word (after piece_delay_ms),
 * cut at max_tokens, then "echo: <message>"; usage and token counts by the
 * mock's rule, so that the scenarios' figures hold. */
typedef struct {
    jv replies;
    long next;
    int delay_ms;
} replay;

/* Whitespace-separated words in [p, end). */
static uint32_t count_words(const char *p, const char *end) {
    uint32_t words = 0;
    bool in_word = false;
    for (; p < end; p++) {
        bool space = *p == ' ' || *p == '\t' || *p == '\n' || *p == '\r' || *p == '\f' || *p == '\v';
        if (!space && !in_word) words++;
        in_word = !space;
    }
    return words;
}

/* The mock's rule: a token per word (an image is the 12 words of its
 * placeholder), 2 per call plus the words of its arguments' JSON, and 4
 * for the message's markup. */
static uint32_t mock_tokens(jv message) {
    char *content = jv_str(jv_get(message, "content"));
    uint32_t tokens = 4 + (content ? count_words(content, content + strlen(content)) : 0);
    free(content);
    long images = jv_len(jv_get(message, "images"));
    if (images > 0) tokens += 12 * (uint32_t)images;
    jv calls = jv_get(message, "tool_calls");
    for (long i = 0; i < jv_len(calls); i++) {
        /* The request's JSON is compact, as the engine writes arguments. */
        jv arguments = jv_get(jv_at(calls, (size_t)i), "arguments");
        tokens += 2 + (jv_ok(arguments) ? count_words(arguments.p, arguments.end) : 0);
    }
    return tokens;
}

static bool replay_count(void *user_data, const char *message, size_t len, uint32_t *out_tokens) {
    (void)user_data;
    (void)len;
    jv m = jv_of(message);
    if (!jv_ok(m)) return false;
    *out_tokens = mock_tokens(m);
    return true;
}

/* The text to stream: the next reply, else "echo: " and the last user message. */
static char *replay_text(replay *r, jv messages) {
    if (r->next < jv_len(r->replies)) return jv_str(jv_at(r->replies, (size_t)r->next++));
    char *last = NULL;
    for (long i = 0; i < jv_len(messages); i++) {
        jv message = jv_at(messages, (size_t)i);
        char *role = jv_str(jv_get(message, "role"));
        if (role && strcmp(role, "user") == 0) {
            free(last);
            last = jv_str(jv_get(message, "content"));
        }
        free(role);
    }
    size_t size = strlen("echo: ") + (last ? strlen(last) : 0) + 1;
    char *text = malloc(size);
    snprintf(text, size, "echo: %s", last ? last : "");
    free(last);
    return text;
}

/* Ends of the pieces of text (words with the whitespace before each, as
 * the mock streams them) into ends; returns how many. */
static size_t replay_pieces(const char *text, size_t *ends, size_t max) {
    size_t n = 0, len = strlen(text);
    bool in_word = false;
    for (size_t i = 0; i < len && n < max; i++) {
        bool space = text[i] == ' ' || text[i] == '\t' || text[i] == '\n' || text[i] == '\r';
        if (space && in_word) ends[n++] = i;
        in_word = !space;
    }
    if (n < max && (n == 0 ? len > 0 : ends[n - 1] < len)) ends[n++] = len;
    return n;
}

/* Where the first stop string begins in text[0, len), or len. */
static size_t replay_stop(jv stops, const char *text, size_t len) {
    size_t at = len;
    for (long i = 0; i < jv_len(stops); i++) {
        char *stop = jv_str(jv_at(stops, (size_t)i));
        for (size_t j = 0; stop && *stop && j + strlen(stop) <= len; j++) {
            if (j < at && strncmp(text + j, stop, strlen(stop)) == 0) {
                at = j;
                break;
            }
        }
        free(stop);
    }
    return at;
}

static void replay_generate(void *user_data, const char *request_json, size_t len,
                            const zoo_backend_sink *sink) {
    (void)len;
    replay *r = user_data;
    jv request = jv_of(request_json);
    jv messages = jv_get(request, "messages");
    char *text = replay_text(r, messages);
    /* A reasoning model behind a host gives its reasoning apart. */
    char *end = strncmp(text, "<think>", 7) == 0 ? strstr(text, "</think>") : NULL;
    if (end) {
        zoo_backend_sink_emit_thinking(sink, text + 7, (size_t)(end - text - 7), NULL, NULL);
        const char *answer = end + strlen("</think>");
        while (*answer == ' ' || *answer == '\n' || *answer == '\t' || *answer == '\r') answer++;
        memmove(text, answer, strlen(answer) + 1);
    }
    size_t ends[4096];
    size_t pieces = replay_pieces(text, ends, sizeof ends / sizeof *ends);
    jv max_tokens = jv_get(request, "max_tokens");
    size_t max = jv_is_number(max_tokens) ? (size_t)jv_num(max_tokens) : pieces;
    size_t sent = max < pieces ? max : pieces;
    size_t sent_len = sent ? ends[sent - 1] : 0;
    size_t kept_len = replay_stop(jv_get(request, "stop"), text, sent_len);
    size_t kept_ends[4096];
    char saved = text[kept_len];
    text[kept_len] = '\0';
    uint32_t completion = (uint32_t)replay_pieces(text, kept_ends, sizeof kept_ends / sizeof *kept_ends);
    text[kept_len] = saved;
    uint32_t prompt = 0, cached = 0;
    long stable = (long)jv_num(jv_get(request, "stable_prefix"));
    for (long i = 0; i < jv_len(messages); i++) {
        uint32_t tokens = mock_tokens(jv_at(messages, (size_t)i));
        prompt += tokens;
        if (i < stable) cached += tokens;
    }
    /* Before the text: a stop string ends the reply where it is seen. */
    zoo_backend_sink_set_usage(sink, prompt, cached, completion, NULL);
    size_t start = 0;
    for (size_t i = 0; i < sent; i++) {
        bool cancelled = false, accepted = false;
        zoo_backend_sink_wait_cancelled(sink, r->delay_ms, &cancelled, NULL);
        if (cancelled) break;
        zoo_backend_sink_emit_text(sink, text + start, ends[i] - start, &accepted, NULL);
        if (!accepted) break;
        start = ends[i];
    }
    if (pieces > max) zoo_backend_sink_set_finish(sink, ZOO_FINISH_LENGTH, NULL);
    free(text);
}

static void replay_free(void *user_data) { free(user_data); }

/* Why a scenario cannot run on a host backend, or NULL when it can. */
static const char *host_blocker(jv scenario) {
    if (jv_ok(jv_get(jv_get(scenario, "config"), "provider"))) return "it checks the provider config itself";
    jv replies = jv_get(jv_get(scenario, "mock"), "replies");
    for (long i = 0; i < jv_len(replies); i++)
        if (jv_kind(jv_at(replies, (size_t)i)) == '{')
            return "a scripted failure is inference_failed; a host's is provider_failed";
    return NULL;
}

/* Creates the scenario's agent on the replaying backend. */
static zoo_status create_on_host(jv scenario, const char *config_json, zoo_agent **agent, char **err) {
    jv mock = jv_get(scenario, "mock");
    replay *r = calloc(1, sizeof *r);
    r->replies = jv_get(mock, "replies");
    jv delay = jv_get(mock, "piece_delay_ms");
    r->delay_ms = jv_ok(delay) ? (int)jv_num(delay) : 0;
    zoo_backend backend = {0};
    backend.generate = replay_generate;
    backend.count_tokens = replay_count;
    backend.user_data = r;
    backend.free_user_data = replay_free;
    return zoo_agent_create_with_backend(config_json, &backend, agent, err);
}

/* The scenario's config as zoo_agent_create takes it (malloc'd): unless
 * it names a provider, the scenario's mock is added to it as
 * "provider": {"type": "mock", "replies": [...], "piece_delay_ms": N}
 * (on a host backend, the config is the scenario's own). */
static char *scenario_config(jv scenario, bool host) {
    jv config = jv_get(scenario, "config"), mock = jv_get(scenario, "mock");
    char *text = jv_ok(config) ? jv_text(config) : strdup("{}");
    if (host) return text;
    if (jv_kind(config) == '{' && jv_ok(jv_get(config, "provider"))) return text;
    if (text[0] != '{') return text; /* not an object: the engine refuses it */
    jv replies = jv_get(mock, "replies"), delay = jv_get(mock, "piece_delay_ms");
    char *replies_text = jv_ok(replies) ? jv_text(replies) : strdup("[]");
    char *delay_text = jv_ok(delay) ? jv_text(delay) : strdup("0");
    /* The object's members without its braces (jv_text trims the ends). */
    size_t len = strlen(text);
    text[len - 1] = '\0';
    const char *members = jm_ws(text + 1, text + len - 1);
    const char *format = *members ? "{%s, \"provider\": {\"type\": \"mock\", \"replies\": %s, "
                                    "\"piece_delay_ms\": %s}}"
                                  : "{%s\"provider\": {\"type\": \"mock\", \"replies\": %s, "
                                    "\"piece_delay_ms\": %s}}";
    size_t size = strlen(members) + strlen(replies_text) + strlen(delay_text) + strlen(format) + 1;
    char *out = malloc(size);
    snprintf(out, size, format, members, replies_text, delay_text);
    free(text);
    free(replies_text);
    free(delay_text);
    return out;
}

static bool run_scenario(jv scenario, const char *root, bool host) {
    pthread_mutex_lock(&seen.lock);
    seen.count = 0;
    pthread_mutex_unlock(&seen.lock);
    char *config_json = scenario_config(scenario, host);
    zoo_agent *agent = NULL;
    char *err = NULL;
    zoo_status status = host ? create_on_host(scenario, config_json, &agent, &err)
                             : zoo_agent_create(config_json, &agent, &err);
    free(config_json);
    jv create_error = jv_get(scenario, "create_error");
    bool ok = check_outcome(create_error, status, err, "create");
    zoo_string_free(err);
    if (status != ZOO_OK) return ok;
    if (!ok) {
        zoo_agent_free(agent);
        return false;
    }
    jv tools = jv_get(scenario, "tools");
    for (long i = 0; ok && i < jv_len(tools); i++) ok = register_tool(agent, jv_at(tools, (size_t)i));
    jv rules = jv_get(scenario, "hooks");
    if (ok && jv_ok(rules)) {
        zoo_hooks hooks = scripted_hooks(rules, &hook_errors);
        ok = check_outcome((jv){NULL, NULL}, zoo_agent_set_hooks(agent, &hooks, NULL), NULL, "hooks");
    }
    jv builtin = jv_get(scenario, "builtin_tools");
    if (ok && jv_ok(builtin)) ok = root != NULL && add_builtin_tools(agent, builtin, root);
    jv subagents = jv_get(scenario, "subagents");
    for (long i = 0; ok && i < jv_len(subagents); i++) {
        char at[32];
        snprintf(at, sizeof at, "subagents.%ld", i);
        ok = add_subagent(agent, jv_at(subagents, (size_t)i), at);
    }
    jv steps = jv_get(scenario, "steps");
    for (long i = 0; ok && i < jv_len(steps); i++) {
        char at[32];
        snprintf(at, sizeof at, "steps.%ld", i);
        ok = run_step(agent, jv_at(steps, (size_t)i), at, root);
    }
    zoo_agent_free(agent);
    free(hook_errors.json);
    hook_errors = (event_log){NULL, 0, 0};
    return ok;
}

static char *read_file(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *text = malloc((size_t)size + 1);
    size_t got = fread(text, 1, (size_t)size, f);
    fclose(f);
    text[got] = '\0';
    return text;
}

static int by_name(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Runs every scenario file, on the mock or (host) on the replaying
 * backend, which skips those that cannot run there. */
static void run_every_scenario(bool host) {
    DIR *dir = opendir(SCENARIO_DIR);
    REQUIRE(dir != NULL);
    char **names = NULL;
    size_t count = 0;
    struct dirent *entry;
    while ((entry = readdir(dir)) != NULL) {
        size_t n = strlen(entry->d_name);
        if (n > 5 && strcmp(entry->d_name + n - 5, ".json") == 0) {
            names = realloc(names, (count + 1) * sizeof *names);
            names[count++] = strdup(entry->d_name);
        }
    }
    closedir(dir);
    qsort(names, count, sizeof *names, by_name);
    CHECKF(count >= 25, "only %zu scenarios in %s", count, SCENARIO_DIR);
    size_t failed = 0;
    for (size_t i = 0; i < count; i++) {
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", SCENARIO_DIR, names[i]);
        char *text = read_file(path);
        jv scenario = jv_of(text);
        char *name = jv_str(jv_get(scenario, "name"));
        size_t stem = strlen(names[i]) - 5;
        bool ok = CHECKF(jv_ok(scenario) && name && strlen(name) == stem && strncmp(name, names[i], stem) == 0,
                         "%s: not JSON, or its name is not the file's", names[i]);
        const char *blocker = ok && host ? host_blocker(scenario) : NULL;
        if (blocker) {
            th_note("scenario %s: not on a host backend: %s", name, blocker);
            free(name);
            free(text);
            free(names[i]);
            continue;
        }
        jv spec = jv_get(scenario, "workspace");
        char root[PATH_MAX];
        bool has_workspace = ok && jv_ok(spec);
        if (has_workspace && !make_workspace(spec, root, sizeof root)) {
            th_note("scenario %s: could not make its workspace", name);
            ok = false;
        }
        if (ok && has_workspace) {
            /* A scenario with a workspace reads with `$WORKSPACE` as its path. */
            char *resolved = with_workspace(text, root);
            ok = run_scenario(jv_of(resolved), root, host);
            free(resolved);
        } else if (ok) {
            ok = run_scenario(scenario, NULL, host);
        }
        if (has_workspace) remove_workspace(root);
        if (!ok) th_note("scenario %s: FAILED", name);
        CHECKF(ok, "scenario %s", names[i]);
        failed += !ok;
        free(name);
        free(text);
        free(names[i]);
    }
    free(names);
    th_note("%zu scenarios, %zu failed", count, failed);
}

void test_scenarios(void) { run_every_scenario(false); }

void test_scenarios_on_a_host_backend(void) { run_every_scenario(true); }
