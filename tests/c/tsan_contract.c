/*
 * tsan_contract.c: linked into the ThreadSanitizer builds only (make
 * test-tsan), between the tests and libzoo, through the linker's --wrap.
 *
 * libzoo is Rust, built without TSan: its memory accesses are invisible to
 * TSan, and so is its synchronization (Rust's mutexes and channels use
 * futexes and atomics directly, not the pthread calls TSan intercepts). On
 * its own TSan would therefore see no ordering between, say, a test filling
 * a struct and then starting a chat, and the chat's callbacks reading that
 * struct on the inference thread: every callback would be a "data race".
 *
 * This file tells TSan what zoo.h promises, and nothing more, by a
 * release/acquire pair on one address standing for libzoo:
 *   - what a thread did before starting work on the inference thread
 *     (zoo_agent_chat, zoo_agent_chat_async, zoo_agent_register_tool[_with_options],
 *     zoo_agent_add_builtin_tools, zoo_agent_create_with_backend, zoo_agent_free,
 *     zoo_chat_free, zoo_chat_cancel, zoo_agent_stop) happens before the
 *     callbacks, tool handlers, confirmation callbacks and backend callbacks
 *     that work runs;
 *   - what a backend did before emitting a piece or a call
 *     (zoo_backend_sink_emit_text, zoo_backend_sink_emit_tool_call, from
 *     any thread) happens before the callbacks that report it, and a stop
 *     happens before zoo_backend_sink_is_cancelled and
 *     zoo_backend_sink_wait_cancelled report it;
 *   - what the callbacks and tool handlers did happens before a call that
 *     reports them finished returns: zoo_agent_chat (every callback of the
 *     chat has run, free_user_data included), zoo_chat_wait and
 *     zoo_chat_poll when they report the chat done (on_token and on_event
 *     have run; on_complete runs after, so it gets no such edge), and
 *     zoo_agent_free (the inference thread has been joined).
 * Every user callback (a built-in tool's confirmation too) is called through a trampoline that acquires on entry
 * and releases on exit. The one address makes the model coarser than the
 * promise (two agents' callbacks look ordered through it), so it can hide a
 * race but never invent one. What TSan then checks is the C and C++ side:
 * the tests' own threads and callbacks, and the C++ wrapper include/zoo.hpp
 * (its ChatState is shared by the inference thread and the caller), against
 * libzoo's documented guarantees. It cannot check libzoo itself.
 */
#define _POSIX_C_SOURCE 200809L

#include <sanitizer/tsan_interface.h>
#include <stdlib.h>

#include "zoo.h"

/* The address that stands for libzoo's internal synchronization. */
static char libzoo_sync;

static void handing_over(void) { __tsan_release(&libzoo_sync); }
static void taking_back(void) { __tsan_acquire(&libzoo_sync); }

/* ---- chat callbacks ---- */

typedef struct {
    zoo_chat_callbacks user;
} chat_trampoline;

static void t_token(void *data, const char *text, size_t len) {
    chat_trampoline *t = data;
    taking_back();
    t->user.on_token(t->user.user_data, text, len);
    handing_over();
}

static void t_event(void *data, const char *json, size_t len) {
    chat_trampoline *t = data;
    taking_back();
    t->user.on_event(t->user.user_data, json, len);
    handing_over();
}

static void t_complete(void *data, zoo_status status, const char *text, size_t len) {
    chat_trampoline *t = data;
    taking_back();
    t->user.on_complete(t->user.user_data, status, text, len);
    handing_over();
}

static void t_free_chat(void *data) {
    chat_trampoline *t = data;
    taking_back();
    if (t->user.free_user_data) t->user.free_user_data(t->user.user_data);
    handing_over();
    free(t);
}

/* The callbacks to hand libzoo instead of `user` (NULL stays NULL). */
static const zoo_chat_callbacks *wrap_callbacks(const zoo_chat_callbacks *user,
                                                zoo_chat_callbacks *out) {
    if (!user) return NULL;
    chat_trampoline *t = malloc(sizeof *t);
    if (!t) abort();
    t->user = *user;
    out->on_token = user->on_token ? t_token : NULL;
    out->on_event = user->on_event ? t_event : NULL;
    out->on_complete = user->on_complete ? t_complete : NULL;
    out->user_data = t;
    out->free_user_data = t_free_chat;
    return out;
}

/* ---- tools ---- */

typedef struct {
    zoo_tool_fn handler;
    void *user_data;
    zoo_free_fn free_user_data;
} tool_trampoline;

static void t_tool(void *data, const char *args, size_t len, zoo_tool_result *result) {
    tool_trampoline *t = data;
    taking_back();
    t->handler(t->user_data, args, len, result);
    handing_over();
}

static void t_free_tool(void *data) {
    tool_trampoline *t = data;
    taking_back();
    if (t->free_user_data) t->free_user_data(t->user_data);
    handing_over();
    free(t);
}

/* ---- the built-in tools' confirmation ---- */

typedef struct {
    zoo_confirm_fn confirm;
    void *user_data;
    zoo_free_fn free_user_data;
} confirm_trampoline;

static bool t_confirm(void *data, const char *tool_name, const char *args, size_t len,
                      zoo_confirmation *confirmation) {
    confirm_trampoline *t = data;
    taking_back();
    bool allowed = t->confirm(t->user_data, tool_name, args, len, confirmation);
    handing_over();
    return allowed;
}

static void t_free_confirm(void *data) {
    confirm_trampoline *t = data;
    taking_back();
    if (t->free_user_data) t->free_user_data(t->user_data);
    handing_over();
    free(t);
}

/* ---- backends ---- */

typedef struct {
    zoo_backend user;
} backend_trampoline;

static void t_generate(void *data, const char *request, size_t len, const zoo_backend_sink *sink) {
    backend_trampoline *t = data;
    taking_back();
    t->user.generate(t->user.user_data, request, len, sink);
    handing_over();
}

static bool t_count(void *data, const char *message, size_t len, uint32_t *out_tokens) {
    backend_trampoline *t = data;
    taking_back();
    bool counted = t->user.count_tokens(t->user.user_data, message, len, out_tokens);
    handing_over();
    return counted;
}

static void t_free_backend(void *data) {
    backend_trampoline *t = data;
    taking_back();
    if (t->user.free_user_data) t->user.free_user_data(t->user.user_data);
    handing_over();
    free(t);
}

/* ---- the wrapped entry points (the linker sends the tests' calls here) ---- */

zoo_status __real_zoo_agent_chat(const zoo_agent *, const char *, const zoo_chat_options *,
                                 const zoo_chat_callbacks *, char **, char **);
zoo_status __real_zoo_agent_chat_async(const zoo_agent *, const char *,
                                       const zoo_chat_options *, const zoo_chat_callbacks *,
                                       zoo_chat **, char **);
zoo_status __real_zoo_chat_wait(const zoo_chat *, int64_t, bool *, char **, char **);
zoo_status __real_zoo_chat_poll(const zoo_chat *, bool *);
zoo_status __real_zoo_chat_cancel(const zoo_chat *);
void __real_zoo_chat_free(zoo_chat *);
zoo_status __real_zoo_agent_stop(const zoo_agent *);
void __real_zoo_agent_free(zoo_agent *);
zoo_status __real_zoo_agent_register_tool(const zoo_agent *, const char *, const char *,
                                          const char *, zoo_tool_fn, void *, zoo_free_fn,
                                          char **);
zoo_status __real_zoo_agent_register_tool_with_options(const zoo_agent *, const char *,
                                                       const char *, const char *,
                                                       const zoo_tool_options *, zoo_tool_fn,
                                                       void *, zoo_free_fn, char **);

zoo_status __real_zoo_agent_add_builtin_tools(const zoo_agent *, const char *, zoo_confirm_fn,
                                              void *, zoo_free_fn, char **);

zoo_status __wrap_zoo_agent_chat(const zoo_agent *agent, const char *message,
                                 const zoo_chat_options *options,
                                 const zoo_chat_callbacks *callbacks, char **out_response_json,
                                 char **out_error) {
    zoo_chat_callbacks wrapped;
    const zoo_chat_callbacks *cb = wrap_callbacks(callbacks, &wrapped);
    handing_over();
    zoo_status s = __real_zoo_agent_chat(agent, message, options, cb, out_response_json, out_error);
    taking_back();
    return s;
}

zoo_status __wrap_zoo_agent_chat_async(const zoo_agent *agent, const char *message,
                                       const zoo_chat_options *options,
                                       const zoo_chat_callbacks *callbacks, zoo_chat **out_chat,
                                       char **out_error) {
    zoo_chat_callbacks wrapped;
    const zoo_chat_callbacks *cb = wrap_callbacks(callbacks, &wrapped);
    handing_over();
    return __real_zoo_agent_chat_async(agent, message, options, cb, out_chat, out_error);
}

zoo_status __wrap_zoo_chat_wait(const zoo_chat *chat, int64_t timeout_ms, bool *out_done,
                                char **out_response_json, char **out_error) {
    zoo_status s = __real_zoo_chat_wait(chat, timeout_ms, out_done, out_response_json, out_error);
    /* A failed chat is finished too (its status is the chat's error). */
    if ((s == ZOO_OK && out_done && *out_done) || (s != ZOO_OK && s != ZOO_INVALID_ARGUMENT))
        taking_back();
    return s;
}

zoo_status __wrap_zoo_chat_poll(const zoo_chat *chat, bool *out_done) {
    zoo_status s = __real_zoo_chat_poll(chat, out_done);
    if (s == ZOO_OK && out_done && *out_done) taking_back();
    return s;
}

zoo_status __wrap_zoo_chat_cancel(const zoo_chat *chat) {
    handing_over();
    return __real_zoo_chat_cancel(chat);
}

void __wrap_zoo_chat_free(zoo_chat *chat) {
    handing_over();
    __real_zoo_chat_free(chat);
}

zoo_status __wrap_zoo_agent_stop(const zoo_agent *agent) {
    handing_over();
    return __real_zoo_agent_stop(agent);
}

void __wrap_zoo_agent_free(zoo_agent *agent) {
    handing_over();
    __real_zoo_agent_free(agent);
    taking_back();
}

zoo_status __wrap_zoo_agent_register_tool(const zoo_agent *agent, const char *name,
                                          const char *description, const char *schema_json,
                                          zoo_tool_fn handler, void *user_data,
                                          zoo_free_fn free_user_data, char **out_error) {
    if (!handler) {
        return __real_zoo_agent_register_tool(agent, name, description, schema_json, handler,
                                              user_data, free_user_data, out_error);
    }
    tool_trampoline *t = malloc(sizeof *t);
    if (!t) abort();
    t->handler = handler;
    t->user_data = user_data;
    t->free_user_data = free_user_data;
    handing_over();
    return __real_zoo_agent_register_tool(agent, name, description, schema_json, t_tool, t,
                                          t_free_tool, out_error);
}

/* zoo.hpp registers its tools here (with their options). */
zoo_status __wrap_zoo_agent_register_tool_with_options(const zoo_agent *agent, const char *name,
                                                       const char *description,
                                                       const char *schema_json,
                                                       const zoo_tool_options *options,
                                                       zoo_tool_fn handler, void *user_data,
                                                       zoo_free_fn free_user_data,
                                                       char **out_error) {
    if (!handler) {
        return __real_zoo_agent_register_tool_with_options(agent, name, description, schema_json,
                                                           options, handler, user_data,
                                                           free_user_data, out_error);
    }
    tool_trampoline *t = malloc(sizeof *t);
    if (!t) abort();
    t->handler = handler;
    t->user_data = user_data;
    t->free_user_data = free_user_data;
    handing_over();
    return __real_zoo_agent_register_tool_with_options(agent, name, description, schema_json,
                                                       options, t_tool, t, t_free_tool, out_error);
}

/* The built-in tools ask `confirm` on a tool thread. */
zoo_status __wrap_zoo_agent_add_builtin_tools(const zoo_agent *agent, const char *options_json,
                                              zoo_confirm_fn confirm, void *user_data,
                                              zoo_free_fn free_user_data, char **out_error) {
    if (!confirm) {
        return __real_zoo_agent_add_builtin_tools(agent, options_json, confirm, user_data,
                                                  free_user_data, out_error);
    }
    confirm_trampoline *t = malloc(sizeof *t);
    if (!t) abort();
    t->confirm = confirm;
    t->user_data = user_data;
    t->free_user_data = free_user_data;
    handing_over();
    return __real_zoo_agent_add_builtin_tools(agent, options_json, t_confirm, t, t_free_confirm,
                                              out_error);
}

zoo_status __real_zoo_agent_create_with_backend(const char *, const zoo_backend *, zoo_agent **,
                                                char **);
zoo_status __real_zoo_backend_sink_emit_text(const zoo_backend_sink *, const char *, size_t, bool *,
                                             char **);
zoo_status __real_zoo_backend_sink_emit_tool_call(const zoo_backend_sink *, const char *,
                                                  const char *, bool *, char **);
zoo_status __real_zoo_backend_sink_is_cancelled(const zoo_backend_sink *, bool *, char **);
zoo_status __real_zoo_backend_sink_wait_cancelled(const zoo_backend_sink *, int64_t, bool *,
                                                  char **);

zoo_status __wrap_zoo_agent_create_with_backend(const char *config_json, const zoo_backend *backend,
                                                zoo_agent **out_agent, char **out_error) {
    if (!backend || !backend->generate) {
        return __real_zoo_agent_create_with_backend(config_json, backend, out_agent, out_error);
    }
    backend_trampoline *t = malloc(sizeof *t);
    if (!t) abort();
    t->user = *backend;
    zoo_backend wrapped = {0};
    wrapped.generate = t_generate;
    wrapped.count_tokens = backend->count_tokens ? t_count : NULL;
    wrapped.user_data = t;
    wrapped.free_user_data = t_free_backend;
    handing_over();
    return __real_zoo_agent_create_with_backend(config_json, &wrapped, out_agent, out_error);
}

zoo_status __wrap_zoo_backend_sink_emit_text(const zoo_backend_sink *sink, const char *text,
                                             size_t len, bool *out_accepted, char **out_error) {
    handing_over();
    return __real_zoo_backend_sink_emit_text(sink, text, len, out_accepted, out_error);
}

zoo_status __wrap_zoo_backend_sink_emit_tool_call(const zoo_backend_sink *sink, const char *name,
                                                  const char *arguments_json, bool *out_accepted,
                                                  char **out_error) {
    handing_over();
    return __real_zoo_backend_sink_emit_tool_call(sink, name, arguments_json, out_accepted,
                                                  out_error);
}

zoo_status __wrap_zoo_backend_sink_is_cancelled(const zoo_backend_sink *sink, bool *out_cancelled,
                                                char **out_error) {
    zoo_status s = __real_zoo_backend_sink_is_cancelled(sink, out_cancelled, out_error);
    if (s == ZOO_OK && *out_cancelled) taking_back();
    return s;
}

zoo_status __wrap_zoo_backend_sink_wait_cancelled(const zoo_backend_sink *sink, int64_t timeout_ms,
                                                  bool *out_cancelled, char **out_error) {
    zoo_status s = __real_zoo_backend_sink_wait_cancelled(sink, timeout_ms, out_cancelled, out_error);
    if (s == ZOO_OK && *out_cancelled) taking_back();
    return s;
}
