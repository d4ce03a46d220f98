/**
 * @file zoo.hpp
 * @brief A header-only C++17 wrapper over zoo.h (libzoo).
 *
 * - zoo::Model: a loaded GGUF, shared by agents (zoo_model)
 * - zoo::Agent: an agent with its own inference thread (zoo_agent)
 * - zoo::Chat: an asynchronous chat (zoo_chat)
 * - zoo::Error: what every failing call throws: code() is the zoo_status,
 *   what() the library's message
 *
 * All three handles are RAII and move-only; a moved-from handle is empty,
 * and calling into an empty handle throws zoo::Error(ZOO_INVALID_ARGUMENT).
 * Agent and Chat methods may be called from any thread, like the C API.
 *
 * Callbacks (token and event streams, tools, load progress) run on libzoo's
 * threads, as documented in zoo.h. No C++ exception ever crosses into the
 * library:
 * - a tool that throws reports a tool error (zoo_tool_result_set_error with
 *   what()), which the model sees and may correct; the chat goes on;
 * - a token or event callback that throws cancels its chat; the exception
 *   is rethrown by Agent::chat or Chat::wait;
 * - a load-progress callback that throws cancels the load; Model::load
 *   rethrows it;
 * - an on_complete callback must not throw (it runs after the result has
 *   been delivered, so nobody could catch it): it is noexcept, and an
 *   exception escaping it calls std::terminate.
 *
 * Strings go in and out as UTF-8 std::string; the chat result is the
 * response JSON of zoo.h (text, stop_reason, tool_calls, tool_errors,
 * usage, metrics), with zoo::response_text() to get the text.
 */
#ifndef ZOO_HPP
#define ZOO_HPP

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>

#include "zoo.h"

/** Zoo-Keeper's C++ API: RAII handles over zoo.h that throw zoo::Error. */
namespace zoo {

/* ---- errors ---- */

/** A failed libzoo call: the status and the library's message. */
class Error : public std::runtime_error {
public:
    /** An error of status `code` (never ZOO_OK) with the library's `message`.
     *  @param code The failed call's status.
     *  @param message What went wrong; what() returns it. */
    Error(zoo_status code, const std::string &message)
        : std::runtime_error(message), code_(code) {}

    /** The zoo_status of the failure.
     *  @return The status (never ZOO_OK). */
    zoo_status code() const noexcept { return code_; }

    /** A short description of code().
     *  @return A static string, e.g. "invalid config" (do not free it). */
    const char *status_name() const noexcept { return zoo_status_str(code_); }

private:
    zoo_status code_;
};

/** The library version.
 *  @return A static string, e.g. "0.1.0" (do not free it). */
inline const char *version() noexcept { return zoo_version(); }

/** Which tools a chat may call (zoo_tool_choice). */
enum class ToolChoice : int32_t {
    Default = ZOO_TOOL_CHOICE_DEFAULT,   ///< the agent's configured tool_choice
    Auto = ZOO_TOOL_CHOICE_AUTO,         ///< the model decides
    Required = ZOO_TOOL_CHOICE_REQUIRED, ///< the first reply must call a tool
    None = ZOO_TOOL_CHOICE_NONE,         ///< no tools
    Named = ZOO_TOOL_CHOICE_NAMED,       ///< the first reply must call ChatOptions::tool_name
};

/** Streamed reply text (whole UTF-8 characters; valid during the call). */
using TokenFn = std::function<void(std::string_view text)>;
/** A progress event as JSON with a "type" field (valid during the call). */
using EventFn = std::function<void(std::string_view event_json)>;
/** The end of an async chat: ZOO_OK and the response JSON, or the error
 *  status and message. Runs on the inference thread; must not throw. */
using CompleteFn = std::function<void(zoo_status status, std::string_view text)>;
/** A tool: receives the arguments as a JSON object (already validated
 *  against the tool's schema) and returns the result as JSON text. A return
 *  value that is not valid JSON is sent as a JSON string, so returning
 *  plain text such as "sunny" works too. Throwing reports a tool error. */
using ToolFn = std::function<std::string(const std::string &arguments_json)>;
/** Load progress from 0 to 1; return false to cancel the load. */
using ProgressFn = std::function<bool(float progress)>;

/** How a tool runs, beside its definition; default-constructed, the
 *  defaults (zoo_tool_options in zoo.h). */
struct ToolOptions {
    /** Runs alone: never beside another call of the same reply, even with
     *  tool_execution "parallel" (for writes and shell commands). */
    bool exclusive = false;
    /** Milliseconds a call may take; one still running after that is a tool
     *  error the model reads. 0 is no limit; a negative value throws
     *  ZOO_INVALID_ARGUMENT. */
    int64_t timeout_ms = 0;
};

/** Per-chat options; default-constructed, the agent's defaults. */
struct ChatOptions {
    ToolChoice tool_choice = ToolChoice::Default; ///< which tools the chat may call
    std::string tool_name;                  ///< for ToolChoice::Named
    uint32_t max_tokens = 0;                ///< 0 keeps the agent's limit
    std::optional<std::string> rag_context; ///< shown for this turn only
    TokenFn on_token;                       ///< streamed reply text
    EventFn on_event;                       ///< progress events (JSON)
    TokenFn on_thinking;                    ///< streamed reasoning (never in the text)
};

/* ---- JSON helpers ---- */


/** The string member `key` of a JSON object (e.g. "stop_reason" of a
 *  response), decoded by libzoo (zoo_json_string_member).
 *  @param json A JSON object.
 *  @param key The member's name.
 *  @return The member's string; nullopt if there is none, it is not a
 *          string, or the document is not a JSON object. */
inline std::optional<std::string> json_string_member(std::string_view json, std::string_view key) {
    std::string doc(json), name(key);
    char *member = nullptr;
    if (zoo_json_string_member(doc.c_str(), name.c_str(), &member, nullptr) != ZOO_OK || !member)
        return std::nullopt;
    std::string out(member);
    zoo_string_free(member);
    return out;
}

/** `text` quoted as a JSON string.
 *  @param text UTF-8 text.
 *  @return The JSON string ("a\"b" for a"b). */
inline std::string json_quote(std::string_view text) {
    std::string out;
    out.reserve(text.size() + 2);
    out.push_back('"');
    for (char ch : text) {
        unsigned char c = static_cast<unsigned char>(ch);
        switch (c) {
        case '"': out += "\\\""; break;
        case '\\': out += "\\\\"; break;
        case '\n': out += "\\n"; break;
        case '\r': out += "\\r"; break;
        case '\t': out += "\\t"; break;
        default:
            if (c < 0x20) {
                char buf[8];
                std::snprintf(buf, sizeof buf, "\\u%04x", c);
                out += buf;
            } else {
                out.push_back(ch);
            }
        }
    }
    out.push_back('"');
    return out;
}

/** The `text` of a response JSON.
 *  @param response_json A response, as Agent::chat returns it.
 *  @return The reply's text.
 *  @throws zoo::Error ZOO_INVALID_JSON if the JSON has no "text" string. */
inline std::string response_text(std::string_view response_json) {
    if (auto text = json_string_member(response_json, "text")) return *text;
    throw Error(ZOO_INVALID_JSON, "the response JSON has no \"text\" string");
}

namespace detail {

/* A string returned by libzoo, freed with zoo_string_free. */
class LibString {
public:
    LibString() = default;
    LibString(const LibString &) = delete;
    LibString &operator=(const LibString &) = delete;
    ~LibString() { zoo_string_free(p_); }
    char **out() noexcept { return &p_; }
    const char *get() const noexcept { return p_; }
    std::string str() const { return p_ ? std::string(p_) : std::string(); }

private:
    char *p_ = nullptr;
};

/* Throws zoo::Error for a failed status, taking ownership of the message. */
inline void check(zoo_status status, LibString &error) {
    if (status == ZOO_OK) return;
    std::string message = error.get() ? error.str() : std::string(zoo_status_str(status));
    throw Error(status, message);
}

inline const char *c_str_or_null(const std::string &s) { return s.empty() ? nullptr : s.c_str(); }

/* The state one chat's C callbacks share with the C++ caller. The C side
 * holds a heap std::shared_ptr to it (its user_data), deleted by
 * free_user_data exactly once. */
struct ChatState {
    TokenFn on_token;
    TokenFn on_thinking;
    EventFn on_event;
    CompleteFn on_complete;

    std::mutex mu;                     // guards error and handle
    std::exception_ptr error;          // the first exception a callback threw
    std::atomic<bool> has_error{false};
    const zoo_agent *agent = nullptr;  // blocking chat: stopped on an exception
    const zoo_chat *handle = nullptr;  // async chat: cancelled on an exception

    /* Records the exception in flight and cancels the chat (once). Later
     * token and event callbacks of the chat are skipped. */
    void fail() noexcept {
        std::lock_guard<std::mutex> lock(mu);
        if (error) return;
        error = std::current_exception();
        has_error.store(true, std::memory_order_release);
        if (handle) zoo_chat_cancel(handle);
        else if (agent) zoo_agent_stop(agent);
    }

    bool failed() const noexcept { return has_error.load(std::memory_order_acquire); }

    void rethrow_if_failed() {
        std::exception_ptr e;
        {
            std::lock_guard<std::mutex> lock(mu);
            e = error;
        }
        if (e) std::rethrow_exception(e);
    }

    static ChatState &of(void *user_data) noexcept {
        return **static_cast<std::shared_ptr<ChatState> *>(user_data);
    }

    static void token(void *user_data, const char *text, size_t len) noexcept {
        ChatState &s = of(user_data);
        if (!s.on_token || s.failed()) return;
        try {
            s.on_token(std::string_view(text, len));
        } catch (...) {
            s.fail();
        }
    }

    static void thinking(void *user_data, const char *text, size_t len) noexcept {
        ChatState &s = of(user_data);
        if (!s.on_thinking || s.failed()) return;
        try {
            s.on_thinking(std::string_view(text, len));
        } catch (...) {
            s.fail();
        }
    }

    static void event(void *user_data, const char *json, size_t len) noexcept {
        ChatState &s = of(user_data);
        if (!s.on_event || s.failed()) return;
        try {
            s.on_event(std::string_view(json, len));
        } catch (...) {
            s.fail();
        }
    }

    /* noexcept: an exception escaping on_complete calls std::terminate
     * rather than unwinding into Rust. */
    static void complete(void *user_data, zoo_status status, const char *text,
                         size_t len) noexcept {
        ChatState &s = of(user_data);
        if (s.on_complete) s.on_complete(status, std::string_view(text, len));
    }

    static void release(void *user_data) noexcept {
        delete static_cast<std::shared_ptr<ChatState> *>(user_data);
    }

    /* The C callbacks for `self`; user_data is a new reference to it. */
    static zoo_chat_callbacks callbacks(const std::shared_ptr<ChatState> &self) {
        zoo_chat_callbacks cb{};
        cb.on_token = self->on_token ? &ChatState::token : nullptr;
        cb.on_event = self->on_event ? &ChatState::event : nullptr;
        cb.on_complete = self->on_complete ? &ChatState::complete : nullptr;
        cb.user_data = new std::shared_ptr<ChatState>(self);
        cb.free_user_data = &ChatState::release;
        cb.on_thinking = self->on_thinking ? &ChatState::thinking : nullptr;
        return cb;
    }
};

/* The C options for `o` (pointing into it: keep `o` alive during the call). */
inline zoo_chat_options c_options(const ChatOptions &o) {
    zoo_chat_options c{};
    c.tool_choice = static_cast<int32_t>(o.tool_choice);
    c.tool_name = o.tool_choice == ToolChoice::Named ? o.tool_name.c_str() : nullptr;
    c.max_tokens = o.max_tokens;
    c.rag_context = o.rag_context ? o.rag_context->c_str() : nullptr;
    return c;
}

/* Sends a tool's JSON text as its result, or as a JSON string if it is not JSON. */
inline void set_tool_result(zoo_tool_result *result, const std::string &out) noexcept {
    if (zoo_tool_result_set_json(result, out.c_str(), nullptr) == ZOO_OK) return;
    if (zoo_tool_result_set_json(result, json_quote(out).c_str(), nullptr) == ZOO_OK) return;
    zoo_tool_result_set_error(result, "the tool returned text that is not UTF-8", nullptr);
}

/* Calls a tool; never lets an exception out. */
inline void call_tool(void *user_data, const char *args, size_t len,
                      zoo_tool_result *result) noexcept {
    try {
        const ToolFn &fn = *static_cast<const ToolFn *>(user_data);
        set_tool_result(result, fn(std::string(args, len)));
    } catch (const std::exception &e) {
        if (zoo_tool_result_set_error(result, e.what(), nullptr) != ZOO_OK)
            zoo_tool_result_set_error(result, "the tool threw an exception", nullptr);
    } catch (...) {
        zoo_tool_result_set_error(result, "the tool threw an exception", nullptr);
    }
}

inline void free_tool(void *user_data) noexcept { delete static_cast<ToolFn *>(user_data); }

struct ProgressState {
    ProgressFn fn;
    std::exception_ptr error;

    static bool call(void *user_data, float progress) noexcept {
        auto *s = static_cast<ProgressState *>(user_data);
        try {
            return s->fn(progress);
        } catch (...) {
            s->error = std::current_exception();
            return false;
        }
    }
};

} // namespace detail

/* ---- tool contexts ---- */

/** The context of one tool call (zoo_tool_context): a view valid only
 *  while the tool runs. Its cancel token is set when the chat is stopped or
 *  the tool's timeout_ms passes; from then on the result is discarded and
 *  reports are dropped. update() and progress() become the chat's
 *  tool_call_update and tool_call_progress events; each returns whether the
 *  report was taken (false once the call has finished). */
class ToolContext {
public:
    /** A view of the C context a handler receives.
     *  @param context The handler's zoo_tool_context (not owned). */
    explicit ToolContext(const zoo_tool_context *context) noexcept : c_(context) {}

    /** The call's id.
     *  @return The id ("call_1", ...). */
    std::string call_id() const {
        const char *id = nullptr;
        detail::LibString err;
        detail::check(zoo_tool_context_call_id(c_, &id, err.out()), err);
        return id;
    }

    /** Whether the call is cancelled (the chat's stop, the tool's timeout).
     *  @return true once it is. */
    bool cancelled() const {
        bool cancelled = false;
        detail::LibString err;
        detail::check(zoo_tool_context_is_cancelled(c_, &cancelled, err.out()), err);
        return cancelled;
    }

    /** Blocks until the call is cancelled or `timeout` passes.
     *  @param timeout How long to wait at most (0 looks without waiting).
     *  @return Whether the call is cancelled. */
    bool wait_cancelled(std::chrono::milliseconds timeout) const {
        bool cancelled = false;
        detail::LibString err;
        detail::check(zoo_tool_context_wait_cancelled(c_, static_cast<int64_t>(timeout.count()),
                                                      &cancelled, err.out()),
                      err);
        return cancelled;
    }

    /** Reports a partial result as a tool_call_update event.
     *  @param json The partial result, JSON text.
     *  @return Whether the report was taken (false once the call has finished).
     *  @throws zoo::Error ZOO_INVALID_JSON if `json` is not JSON. */
    bool update(const std::string &json) const {
        bool accepted = false;
        detail::LibString err;
        detail::check(zoo_tool_context_update_json(c_, json.c_str(), &accepted, err.out()), err);
        return accepted;
    }

    /** Reports progress in words as a tool_call_progress event.
     *  @param text The progress (UTF-8).
     *  @return Whether the report was taken (false once the call has finished). */
    bool progress(const std::string &text) const {
        bool accepted = false;
        detail::LibString err;
        detail::check(zoo_tool_context_progress(c_, text.c_str(), &accepted, err.out()), err);
        return accepted;
    }

private:
    const zoo_tool_context *c_;
};

/** A tool that also takes its call's context; otherwise as ToolFn. */
using ContextToolFn =
    std::function<std::string(const std::string &arguments_json, const ToolContext &context)>;

namespace detail {

/* Calls a tool with its context; never lets an exception out. */
inline void call_context_tool(void *user_data, const char *args, size_t len,
                              const zoo_tool_context *context, zoo_tool_result *result) noexcept {
    try {
        const ContextToolFn &fn = *static_cast<const ContextToolFn *>(user_data);
        set_tool_result(result, fn(std::string(args, len), ToolContext(context)));
    } catch (const std::exception &e) {
        if (zoo_tool_result_set_error(result, e.what(), nullptr) != ZOO_OK)
            zoo_tool_result_set_error(result, "the tool threw an exception", nullptr);
    } catch (...) {
        zoo_tool_result_set_error(result, "the tool threw an exception", nullptr);
    }
}

inline void free_context_tool(void *user_data) noexcept {
    delete static_cast<ContextToolFn *>(user_data);
}

} // namespace detail

/** Asked before write_file, edit_file and bash run, with the tool's name and
 *  the call's arguments (JSON text): true lets the call run, false refuses
 *  it; an exception refuses it too, and the model reads its what(). */
using ConfirmFn = std::function<bool(const std::string &tool, const std::string &arguments_json)>;

namespace detail {

/* Asks the host's confirmation; an exception refuses, with its message. */
inline bool call_confirm(void *user_data, const char *tool, const char *args, size_t len,
                         zoo_confirmation *confirmation) noexcept {
    try {
        const ConfirmFn &fn = *static_cast<const ConfirmFn *>(user_data);
        return fn(tool, std::string(args, len));
    } catch (const std::exception &e) {
        if (zoo_confirmation_set_error(confirmation, e.what(), nullptr) != ZOO_OK)
            zoo_confirmation_set_error(confirmation, "the confirmation threw an exception",
                                       nullptr);
    } catch (...) {
        zoo_confirmation_set_error(confirmation, "the confirmation threw an exception", nullptr);
    }
    return false;
}

inline void free_confirm(void *user_data) noexcept { delete static_cast<ConfirmFn *>(user_data); }

} // namespace detail

/* ---- backends ---- */

/** Where a backend puts one reply (zoo_backend_sink): a view valid only
 *  while its generate function runs, from any thread. Each emit returns
 *  whether it was taken (false once the reply has ended: a stop, the chat's
 *  time limit, a stop string). Throws zoo::Error for bad input (text that
 *  is not UTF-8, JSON of another shape). */
class BackendSink {
public:
    /** Wraps the sink a backend's generate function was given.
     *  @param sink The C sink; not owned. */
    explicit BackendSink(const zoo_backend_sink *sink) noexcept : s_(sink) {}

    /** A piece of the reply's text (whole UTF-8 characters).
     *  @param piece The text.
     *  @return Whether it was taken.
     *  @throws zoo::Error for text that is not UTF-8. */
    bool text(std::string_view piece) const {
        bool accepted = false;
        detail::LibString err;
        detail::check(zoo_backend_sink_emit_text(s_, piece.data(), piece.size(), &accepted, err.out()),
                      err);
        return accepted;
    }

    /** A piece of the model's thinking, kept out of the text.
     *  @param piece The thinking.
     *  @return Whether it was taken.
     *  @throws zoo::Error for text that is not UTF-8. */
    bool thinking(std::string_view piece) const {
        bool accepted = false;
        detail::LibString err;
        detail::check(
            zoo_backend_sink_emit_thinking(s_, piece.data(), piece.size(), &accepted, err.out()), err);
        return accepted;
    }

    /** A tool call returned as data, as the model wrote it.
     *  @param name The tool's name.
     *  @param arguments_json The call's arguments as JSON text.
     *  @return Whether it was taken.
     *  @throws zoo::Error for text that is not UTF-8. */
    bool tool_call(const std::string &name, const std::string &arguments_json) const {
        bool accepted = false;
        detail::LibString err;
        detail::check(zoo_backend_sink_emit_tool_call(s_, name.c_str(), arguments_json.c_str(),
                                                      &accepted, err.out()),
                      err);
        return accepted;
    }

    /** One item in the JSON shape every language shares (see zoo.h).
     *  @param item_json The item.
     *  @return Whether it was taken.
     *  @throws zoo::Error for JSON of another shape. */
    bool emit_json(const std::string &item_json) const {
        bool accepted = false;
        detail::LibString err;
        detail::check(zoo_backend_sink_emit_json(s_, item_json.c_str(), &accepted, err.out()), err);
        return accepted;
    }

    /** The reply's token counts.
     *  @param prompt_tokens The prompt's tokens, the cached ones included.
     *  @param cached_tokens The prompt tokens read from a cache.
     *  @param completion_tokens The generated tokens.
     *  @throws zoo::Error as zoo_backend_sink_set_usage fails. */
    void usage(uint32_t prompt_tokens, uint32_t cached_tokens, uint32_t completion_tokens) const {
        detail::LibString err;
        detail::check(zoo_backend_sink_set_usage(s_, prompt_tokens, cached_tokens,
                                                 completion_tokens, err.out()),
                      err);
    }

    /** Says the model's own token limit cut the reply.
     *  @throws zoo::Error as zoo_backend_sink_set_finish fails. */
    void finish_length() const {
        detail::LibString err;
        detail::check(zoo_backend_sink_set_finish(s_, ZOO_FINISH_LENGTH, err.out()), err);
    }

    /** Whether the reply is no longer wanted: return soon.
     *  @return True once a stop, a time limit or an error ended it.
     *  @throws zoo::Error as zoo_backend_sink_is_cancelled fails. */
    bool cancelled() const {
        bool cancelled = false;
        detail::LibString err;
        detail::check(zoo_backend_sink_is_cancelled(s_, &cancelled, err.out()), err);
        return cancelled;
    }

    /** Blocks until the reply is no longer wanted or `timeout` passes.
     *  @param timeout The longest wait.
     *  @return Whether the reply is no longer wanted.
     *  @throws zoo::Error as zoo_backend_sink_wait_cancelled fails. */
    bool wait_cancelled(std::chrono::milliseconds timeout) const {
        bool cancelled = false;
        detail::LibString err;
        detail::check(zoo_backend_sink_wait_cancelled(s_, static_cast<int64_t>(timeout.count()),
                                                      &cancelled, err.out()),
                      err);
        return cancelled;
    }

private:
    const zoo_backend_sink *s_;
};

/** A backend written in C++: generates one reply to `request_json` (see
 *  zoo.h's zoo_backend_generate_fn) into `sink`. It runs on the agent's
 *  host thread, one call at a time; a thrown exception fails the chat with
 *  ZOO_PROVIDER_FAILED and its what(). */
using BackendFn = std::function<void(const std::string &request_json, const BackendSink &sink)>;

namespace detail {

/* Calls a backend; never lets an exception out. */
inline void call_backend(void *user_data, const char *request, size_t len,
                         const zoo_backend_sink *sink) noexcept {
    try {
        const BackendFn &fn = *static_cast<const BackendFn *>(user_data);
        fn(std::string(request, len), BackendSink(sink));
    } catch (const std::exception &e) {
        if (zoo_backend_sink_set_error(sink, e.what(), nullptr) != ZOO_OK)
            zoo_backend_sink_set_error(sink, "the backend threw an exception", nullptr);
    } catch (...) {
        zoo_backend_sink_set_error(sink, "the backend threw an exception", nullptr);
    }
}

inline void free_backend(void *user_data) noexcept { delete static_cast<BackendFn *>(user_data); }

} // namespace detail

/* ---- Model ---- */

/** A loaded GGUF model. Agents created from it keep the weights alive, so
 *  the Model may be destroyed before them. */
class Model {
public:
    Model() noexcept = default;
    /** Takes ownership of a zoo_model from the C API.
     *  @param adopt The handle; this object frees it. */
    explicit Model(zoo_model *adopt) noexcept : m_(adopt) {}
    /** Takes the handle of `other`, which is left empty.
     *  @param other The handle to move from. */
    Model(Model &&other) noexcept : m_(std::exchange(other.m_, nullptr)) {}
    /** Frees this handle and takes the one of `other`, which is left empty.
     *  @param other The handle to move from.
     *  @return This handle. */
    Model &operator=(Model &&other) noexcept {
        if (this != &other) {
            reset();
            m_ = std::exchange(other.m_, nullptr);
        }
        return *this;
    }
    Model(const Model &) = delete;
    Model &operator=(const Model &) = delete;
    ~Model() { reset(); }

    /** Loads a GGUF.
     *  @param path The GGUF file.
     *  @param params_json Empty (the defaults) or a JSON object with
     *         `gpu_layers` and `use_mmap`.
     *  @return The model.
     *  @throws zoo::Error as zoo_model_load fails. */
    static Model load(const std::string &path, const std::string &params_json = {}) {
        detail::LibString err;
        zoo_model *m = nullptr;
        detail::check(
            zoo_model_load(path.c_str(), detail::c_str_or_null(params_json), &m, err.out()), err);
        return Model(m);
    }

    /** Like load, reporting progress (on this thread) to `progress`. If it
     *  returns false the load ends with zoo::Error(ZOO_CANCELLED); if it
     *  throws, the load is cancelled and the exception rethrown here.
     *  @param path The GGUF file.
     *  @param params_json Empty (the defaults) or a JSON object with
     *         `gpu_layers` and `use_mmap`.
     *  @param progress Called with the progress from 0 to 1.
     *  @return The model.
     *  @throws zoo::Error as zoo_model_load_with_progress fails. */
    static Model load(const std::string &path, const std::string &params_json,
                      ProgressFn progress) {
        detail::ProgressState state{std::move(progress), nullptr};
        detail::LibString err;
        zoo_model *m = nullptr;
        zoo_status s = zoo_model_load_with_progress(
            path.c_str(), detail::c_str_or_null(params_json),
            state.fn ? &detail::ProgressState::call : nullptr, &state, &m, err.out());
        if (state.error) {
            zoo_model_free(m);
            std::rethrow_exception(state.error);
        }
        detail::check(s, err);
        return Model(m);
    }

    /** The model's GGUF metadata.
     *  @return A JSON object: chat_template, architecture, name, special. */
    std::string metadata_json() const {
        detail::LibString out, err;
        detail::check(zoo_model_metadata_json(m_, out.out(), err.out()), err);
        return out.str();
    }

    /** The C handle, for calls into zoo.h (still owned by this object).
     *  @return The handle, or NULL when empty. */
    const zoo_model *get() const noexcept { return m_; }
    /** Whether this object holds a handle.
     *  @return false when empty (default-constructed, moved from, reset). */
    explicit operator bool() const noexcept { return m_ != nullptr; }
    /** Gives up ownership (the caller frees it with zoo_model_free).
     *  @return The handle, or NULL when empty; this object is left empty. */
    zoo_model *release() noexcept { return std::exchange(m_, nullptr); }
    /** Frees the handle now (agents made from it keep the weights). */
    void reset() noexcept { zoo_model_free(std::exchange(m_, nullptr)); }

private:
    zoo_model *m_ = nullptr;
};

/* ---- Chat ---- */

/** An asynchronous chat (Agent::chat_async). Destroying it frees the handle
 *  but does not cancel the chat: call cancel() first if it should stop. */
class Chat {
public:
    Chat() noexcept = default;
    /** Takes the handle of `other`, which is left empty.
     *  @param other The handle to move from. */
    Chat(Chat &&other) noexcept
        : c_(std::exchange(other.c_, nullptr)), state_(std::move(other.state_)) {}
    /** Frees this handle and takes the one of `other`, which is left empty.
     *  @param other The handle to move from.
     *  @return This handle. */
    Chat &operator=(Chat &&other) noexcept {
        if (this != &other) {
            reset();
            c_ = std::exchange(other.c_, nullptr);
            state_ = std::move(other.state_);
        }
        return *this;
    }
    Chat(const Chat &) = delete;
    Chat &operator=(const Chat &) = delete;
    ~Chat() { reset(); }

    /** Blocks until the chat ends. Do not call it from the agent's own
     *  callbacks.
     *  @return The response JSON.
     *  @throws zoo::Error if the chat failed; or what a token or event
     *          callback threw, rethrown. */
    std::string wait() const { return *wait_impl(-1); }

    /** Waits up to `timeout` for the chat to end.
     *  @param timeout How long to wait at most (negative: not at all).
     *  @return The response JSON, or nullopt if the chat is still running.
     *  @throws zoo::Error like wait(). */
    std::optional<std::string> wait_for(std::chrono::milliseconds timeout) const {
        return wait_impl(timeout.count() < 0 ? 0 : static_cast<int64_t>(timeout.count()));
    }

    /** Whether the chat has ended (never blocks).
     *  @return true once it has. */
    bool done() const {
        bool d = false;
        zoo_status s = zoo_chat_poll(c_, &d);
        if (s != ZOO_OK) throw Error(s, "zoo_chat_poll on an empty zoo::Chat");
        return d;
    }

    /** Cancels the chat: it ends with stop_reason "cancelled". */
    void cancel() const {
        zoo_status s = zoo_chat_cancel(c_);
        if (s != ZOO_OK) throw Error(s, "zoo_chat_cancel on an empty zoo::Chat");
    }

    /** The C handle, for calls into zoo.h (still owned by this object).
     *  @return The handle, or NULL when empty. */
    const zoo_chat *get() const noexcept { return c_; }
    /** Whether this object holds a handle.
     *  @return false when empty (default-constructed, moved from, reset). */
    explicit operator bool() const noexcept { return c_ != nullptr; }

    /** Frees the handle (the chat goes on). */
    void reset() noexcept {
        if (state_) {
            // The callbacks may cancel through the handle; take it from them
            // under their lock before it goes.
            std::lock_guard<std::mutex> lock(state_->mu);
            state_->handle = nullptr;
        }
        zoo_chat_free(std::exchange(c_, nullptr));
        state_.reset();
    }

private:
    friend class Agent;
    Chat(zoo_chat *c, std::shared_ptr<detail::ChatState> state) noexcept
        : c_(c), state_(std::move(state)) {}

    std::optional<std::string> wait_impl(int64_t timeout_ms) const {
        bool done = false;
        detail::LibString out, err;
        zoo_status s = zoo_chat_wait(c_, timeout_ms, &done, out.out(), err.out());
        if (state_) state_->rethrow_if_failed();
        detail::check(s, err);
        if (!done) return std::nullopt;
        return out.str();
    }

    zoo_chat *c_ = nullptr;
    std::shared_ptr<detail::ChatState> state_;
};

/* ---- Agent ---- */

/** An agent: its own inference thread, context, history and tools. */
class Agent {
public:
    Agent() noexcept = default;
    /** Takes ownership of a zoo_agent from the C API.
     *  @param adopt The handle; this object frees it. */
    explicit Agent(zoo_agent *adopt) noexcept : a_(adopt) {}
    /** Takes the handle of `other`, which is left empty.
     *  @param other The handle to move from. */
    Agent(Agent &&other) noexcept : a_(std::exchange(other.a_, nullptr)) {}
    /** Frees this handle and takes the one of `other`, which is left empty.
     *  @param other The handle to move from.
     *  @return This handle. */
    Agent &operator=(Agent &&other) noexcept {
        if (this != &other) {
            reset();
            a_ = std::exchange(other.a_, nullptr);
        }
        return *this;
    }
    Agent(const Agent &) = delete;
    Agent &operator=(const Agent &) = delete;
    /** Cancels the running chat, fails queued ones, joins the thread. */
    ~Agent() { reset(); }

    /** Creates an agent from a JSON config, loading its model.
     *  @param config_json The config (model_path or provider, temperature, ...).
     *  @return The agent.
     *  @throws zoo::Error as zoo_agent_create fails. */
    static Agent create(const std::string &config_json) {
        detail::LibString err;
        zoo_agent *a = nullptr;
        detail::check(zoo_agent_create(config_json.c_str(), &a, err.out()), err);
        return Agent(a);
    }

    /** Creates an agent on a loaded model; agents on one model share its
     *  weights.
     *  @param model The loaded model.
     *  @param config_json The config, or empty for the defaults.
     *  @return The agent.
     *  @throws zoo::Error as zoo_agent_create_with_model fails. */
    static Agent create(const Model &model, const std::string &config_json = {}) {
        detail::LibString err;
        zoo_agent *a = nullptr;
        detail::check(zoo_agent_create_with_model(model.get(), detail::c_str_or_null(config_json),
                                                  &a, err.out()),
                      err);
        return Agent(a);
    }

    /** An agent on a scripted mock model, for tests (zoo_agent_create_mock).
     *  @param replies_json A JSON array of replies (strings, or
     *         {"error": "..."}).
     *  @param piece_delay_ms Milliseconds waited before each streamed word.
     *  @param config_json The config, or empty for the defaults.
     *  @return The agent.
     *  @throws zoo::Error as zoo_agent_create_mock fails. */
    static Agent mock(const std::string &replies_json = "[]", uint32_t piece_delay_ms = 0,
                      const std::string &config_json = {}) {
        detail::LibString err;
        zoo_agent *a = nullptr;
        detail::check(zoo_agent_create_mock(detail::c_str_or_null(config_json),
                                            replies_json.c_str(), piece_delay_ms, &a, err.out()),
                      err);
        return Agent(a);
    }

    /** An agent on a backend written in C++: the engine calls `generate`
     *  on its inference thread for each model reply, and estimates token
     *  counts (zoo_backend.count_tokens in C counts them).
     *  @param generate Writes one reply to the BackendSink it is given; an
     *         exception fails the reply with its what().
     *  @param config_json The agent's config JSON (empty for the defaults);
     *         its provider unset or {"type": "host", ...}.
     *  @return The agent.
     *  @throws zoo::Error as zoo_agent_create_with_backend fails. */
    static Agent with_backend(BackendFn generate, const std::string &config_json = {}) {
        zoo_backend backend{};
        backend.generate = &detail::call_backend;
        // libzoo owns the heap copy from here on and frees it exactly once.
        backend.user_data = new BackendFn(std::move(generate));
        backend.free_user_data = &detail::free_backend;
        detail::LibString err;
        zoo_agent *a = nullptr;
        detail::check(zoo_agent_create_with_backend(detail::c_str_or_null(config_json), &backend, &a,
                                                    err.out()),
                      err);
        return Agent(a);
    }

    /** Sends `message` and blocks until the reply is complete.
     *  @param message The user's message (UTF-8).
     *  @param options The chat's options and callbacks.
     *  @return The response JSON.
     *  @throws zoo::Error as zoo_agent_chat fails; or what a callback
     *          threw, rethrown. */
    std::string chat(const std::string &message, const ChatOptions &options = {}) const {
        auto state = std::make_shared<detail::ChatState>();
        state->on_token = options.on_token;
        state->on_thinking = options.on_thinking;
        state->on_event = options.on_event;
        state->agent = a_;
        zoo_chat_options copts = detail::c_options(options);
        zoo_chat_callbacks cb = detail::ChatState::callbacks(state);
        detail::LibString out, err;
        zoo_status s = zoo_agent_chat(a_, message.c_str(), &copts, &cb, out.out(), err.out());
        state->rethrow_if_failed();
        detail::check(s, err);
        return out.str();
    }

    /** chat(), and only the response's text.
     *  @param message The user's message (UTF-8).
     *  @param options The chat's options and callbacks.
     *  @return The reply's text.
     *  @throws zoo::Error like chat(). */
    std::string chat_text(const std::string &message, const ChatOptions &options = {}) const {
        return response_text(chat(message, options));
    }

    /** Sends `message` and returns at once.
     *  @param message The user's message (UTF-8).
     *  @param options The chat's options and callbacks.
     *  @param on_complete Runs when the chat ends (may be empty), on the
     *         inference thread; it may destroy this Agent (e.g. reset an
     *         std::optional<Agent> holding it).
     *  @return The chat's handle.
     *  @throws zoo::Error as zoo_agent_chat_async fails. */
    Chat chat_async(const std::string &message, const ChatOptions &options = {},
                    CompleteFn on_complete = {}) const {
        auto state = std::make_shared<detail::ChatState>();
        state->on_token = options.on_token;
        state->on_thinking = options.on_thinking;
        state->on_event = options.on_event;
        state->on_complete = std::move(on_complete);
        zoo_chat_options copts = detail::c_options(options);
        zoo_chat_callbacks cb = detail::ChatState::callbacks(state);
        detail::LibString err;
        zoo_chat *c = nullptr;
        detail::check(zoo_agent_chat_async(a_, message.c_str(), &copts, &cb, &c, err.out()), err);
        {
            // A callback may already have thrown before the handle existed.
            std::lock_guard<std::mutex> lock(state->mu);
            state->handle = c;
            if (state->error) zoo_chat_cancel(c);
        }
        return Chat(c, std::move(state));
    }

    /** Cancels the chat in flight (queued chats still run). */
    void stop() const {
        zoo_status s = zoo_agent_stop(a_);
        if (s != ZOO_OK) throw Error(s, "zoo_agent_stop on an empty zoo::Agent");
    }

    /** Registers a tool (replacing one of the same name). With
     *  tool_execution "parallel" or {"batched": N}, `fn` may run on several
     *  tool threads at once (unless `options.exclusive`).
     *  @param name The tool's name (^[A-Za-z0-9_-]{1,64}$).
     *  @param description What the tool does, for the model.
     *  @param schema_json The JSON schema of the arguments object.
     *  @param fn Runs each call.
     *  @param options How the tool runs.
     *  @throws zoo::Error as zoo_agent_register_tool_with_options fails. */
    void register_tool(const std::string &name, const std::string &description,
                       const std::string &schema_json, ToolFn fn,
                       const ToolOptions &options = {}) const {
        detail::LibString err;
        zoo_tool_options copts{options.exclusive, options.timeout_ms};
        // libzoo owns the heap copy from here on: it frees it exactly once
        // (when the tool goes, or right away if registration fails).
        auto *data = new ToolFn(std::move(fn));
        detail::check(zoo_agent_register_tool_with_options(
                          a_, name.c_str(), description.c_str(), schema_json.c_str(), &copts,
                          &detail::call_tool, data, &detail::free_tool, err.out()),
                      err);
    }

    /** Registers a tool whose function also takes its call's ToolContext
     *  (the call id, its cancel token, progress reports); otherwise as
     *  register_tool.
     *  @param name The tool's name (^[A-Za-z0-9_-]{1,64}$).
     *  @param description What the tool does, for the model.
     *  @param schema_json The JSON schema of the arguments object.
     *  @param fn Runs each call, with its context.
     *  @param options How the tool runs.
     *  @throws zoo::Error as zoo_agent_register_tool_with_context fails. */
    void register_tool_with_context(const std::string &name, const std::string &description,
                                    const std::string &schema_json, ContextToolFn fn,
                                    const ToolOptions &options = {}) const {
        detail::LibString err;
        zoo_tool_options copts{options.exclusive, options.timeout_ms};
        auto *data = new ContextToolFn(std::move(fn));
        detail::check(zoo_agent_register_tool_with_context(
                          a_, name.c_str(), description.c_str(), schema_json.c_str(), &copts,
                          &detail::call_context_tool, data, &detail::free_context_tool, err.out()),
                      err);
    }

    /** Adds built-in tools (zoo_agent_add_builtin_tools).
     *  @param options_json {"tools": [...], "workspace": "...", "bash_deny":
     *         [...]}, as the config's builtin_tools.
     *  @param confirm Asked before write_file, edit_file and bash run (may
     *         be empty: ask nothing).
     *  @throws zoo::Error as zoo_agent_add_builtin_tools fails. */
    void add_builtin_tools(const std::string &options_json, ConfirmFn confirm = {}) const {
        detail::LibString err;
        if (!confirm) {
            detail::check(zoo_agent_add_builtin_tools(a_, options_json.c_str(), nullptr, nullptr,
                                                      nullptr, err.out()),
                          err);
            return;
        }
        // libzoo owns the heap copy from here on and frees it exactly once.
        auto *data = new ConfirmFn(std::move(confirm));
        detail::check(zoo_agent_add_builtin_tools(a_, options_json.c_str(), &detail::call_confirm,
                                                  data, &detail::free_confirm, err.out()),
                      err);
    }

    /** Removes a tool.
     *  @param name The tool's name.
     *  @return Whether it was registered. */
    bool unregister_tool(const std::string &name) const {
        detail::LibString err;
        bool removed = false;
        detail::check(zoo_agent_unregister_tool(a_, name.c_str(), &removed, err.out()), err);
        return removed;
    }

    /** The conversation.
     *  @return A JSON array of messages, system prompt first. */
    std::string history_json() const {
        detail::LibString out, err;
        detail::check(zoo_agent_history_json(a_, out.out(), err.out()), err);
        return out.str();
    }

    /** Replaces the conversation (e.g. with a saved history_json()).
     *  @param history_json A JSON array of messages.
     *  @throws zoo::Error ZOO_INVALID_JSON, ZOO_INVALID_MESSAGE_SEQUENCE. */
    void set_history_json(const std::string &history_json) const {
        detail::LibString err;
        detail::check(zoo_agent_set_history_json(a_, history_json.c_str(), err.out()), err);
    }

    /** Forgets the conversation, keeping the system prompt. */
    void clear_history() const {
        detail::LibString err;
        detail::check(zoo_agent_clear_history(a_, err.out()), err);
    }

    /** Sets the system prompt.
     *  @param prompt The new system prompt (UTF-8). */
    void set_system_prompt(const std::string &prompt) const {
        detail::LibString err;
        detail::check(zoo_agent_set_system_prompt(a_, prompt.c_str(), err.out()), err);
    }

    /** Removes the system prompt. */
    void remove_system_prompt() const {
        detail::LibString err;
        detail::check(zoo_agent_set_system_prompt(a_, nullptr, err.out()), err);
    }

    /** The C handle, for calls into zoo.h (still owned by this object).
     *  @return The handle, or NULL when empty. */
    const zoo_agent *get() const noexcept { return a_; }
    /** Whether this object holds a handle.
     *  @return false when empty (default-constructed, moved from, reset). */
    explicit operator bool() const noexcept { return a_ != nullptr; }
    /** Gives up ownership (the caller frees it with zoo_agent_free).
     *  @return The handle, or NULL when empty; this object is left empty. */
    zoo_agent *release() noexcept { return std::exchange(a_, nullptr); }
    /** Frees the agent now (see the destructor). */
    void reset() noexcept { zoo_agent_free(std::exchange(a_, nullptr)); }

private:
    zoo_agent *a_ = nullptr;
};

} // namespace zoo

#endif /* ZOO_HPP */
