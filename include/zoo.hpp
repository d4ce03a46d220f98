/*
 * zoo.hpp: a header-only C++17 wrapper over zoo.h (libzoo).
 *
 *   zoo::Model   a loaded GGUF, shared by agents          (zoo_model)
 *   zoo::Agent   an agent with its own inference thread   (zoo_agent)
 *   zoo::Chat    an asynchronous chat                     (zoo_chat)
 *   zoo::Error   what every failing call throws: code() is the zoo_status,
 *                what() the library's message
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

namespace zoo {

/* ---- errors ---- */

/** A failed libzoo call: the status and the library's message. */
class Error : public std::runtime_error {
public:
    Error(zoo_status code, const std::string &message)
        : std::runtime_error(message), code_(code) {}

    /** The zoo_status of the failure (never ZOO_OK). */
    zoo_status code() const noexcept { return code_; }

    /** A short static description of code(), e.g. "invalid config". */
    const char *status_name() const noexcept { return zoo_status_str(code_); }

private:
    zoo_status code_;
};

/** The library version, e.g. "0.1.0". */
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
    ToolChoice tool_choice = ToolChoice::Default;
    std::string tool_name;                  ///< for ToolChoice::Named
    uint32_t max_tokens = 0;                ///< 0 keeps the agent's limit
    std::optional<std::string> rag_context; ///< shown for this turn only
    TokenFn on_token;                       ///< streamed reply text
    EventFn on_event;                       ///< progress events (JSON)
    TokenFn on_thinking;                    ///< streamed reasoning (never in the text)
};

/* ---- JSON helpers ---- */

namespace detail {

/* A small strict JSON reader: enough to find a top-level string member of
 * the response JSON and to quote a string. */
class JsonReader {
public:
    explicit JsonReader(std::string_view s) : s_(s) {}

    /* The decoded string value of top-level member `key`, if the document
     * is an object that has one. */
    std::optional<std::string> string_member(std::string_view key) {
        i_ = 0;
        ws();
        if (!eat('{')) return std::nullopt;
        ws();
        if (eat('}')) return std::nullopt;
        for (;;) {
            std::string name;
            if (!string(&name)) return std::nullopt;
            ws();
            if (!eat(':')) return std::nullopt;
            ws();
            if (name == key && peek() == '"') {
                std::string value;
                if (!string(&value)) return std::nullopt;
                return value;
            }
            if (!skip_value(0)) return std::nullopt;
            ws();
            if (eat(',')) {
                ws();
                continue;
            }
            return std::nullopt;
        }
    }

private:
    std::string_view s_;
    size_t i_ = 0;

    char peek() const { return i_ < s_.size() ? s_[i_] : '\0'; }
    bool eat(char c) {
        if (peek() != c || i_ >= s_.size()) return false;
        ++i_;
        return true;
    }
    void ws() {
        while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\t' || s_[i_] == '\n' ||
                                  s_[i_] == '\r'))
            ++i_;
    }
    bool hex4(unsigned long *out) {
        if (s_.size() - i_ < 4) return false;
        unsigned long v = 0;
        for (int k = 0; k < 4; ++k) {
            char c = s_[i_++];
            int h = c >= '0' && c <= '9'   ? c - '0'
                    : c >= 'a' && c <= 'f' ? c - 'a' + 10
                    : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                           : -1;
            if (h < 0) return false;
            v = v * 16 + static_cast<unsigned long>(h);
        }
        *out = v;
        return true;
    }
    static void utf8(std::string *out, unsigned long cp) {
        if (cp < 0x80) {
            out->push_back(static_cast<char>(cp));
        } else if (cp < 0x800) {
            out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
            out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
        } else if (cp < 0x10000) {
            out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
            out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
            out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
        } else {
            out->push_back(static_cast<char>(0xF0 | (cp >> 18)));
            out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
            out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
            out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
        }
    }
    /* Reads a string; decodes it into *out when out is not null. */
    bool string(std::string *out) {
        if (!eat('"')) return false;
        while (i_ < s_.size()) {
            unsigned char c = static_cast<unsigned char>(s_[i_++]);
            if (c == '"') return true;
            if (c < 0x20) return false;
            if (c != '\\') {
                if (out) out->push_back(static_cast<char>(c));
                continue;
            }
            if (i_ >= s_.size()) return false;
            char e = s_[i_++];
            char simple = e == '"' ? '"' : e == '\\' ? '\\' : e == '/' ? '/' : e == 'b' ? '\b'
                        : e == 'f' ? '\f' : e == 'n' ? '\n' : e == 'r' ? '\r' : e == 't' ? '\t'
                                                                                  : '\0';
            if (simple) {
                if (out) out->push_back(simple);
                continue;
            }
            if (e != 'u') return false;
            unsigned long cp = 0;
            if (!hex4(&cp)) return false;
            if (cp >= 0xD800 && cp <= 0xDBFF) {
                unsigned long lo = 0;
                if (!eat('\\') || !eat('u') || !hex4(&lo) || lo < 0xDC00 || lo > 0xDFFF)
                    return false;
                cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
                return false;
            }
            if (out) utf8(out, cp);
        }
        return false;
    }
    bool literal(std::string_view word) {
        if (s_.substr(i_, word.size()) != word) return false;
        i_ += word.size();
        return true;
    }
    bool digits() {
        size_t start = i_;
        while (i_ < s_.size() && s_[i_] >= '0' && s_[i_] <= '9') ++i_;
        return i_ > start;
    }
    bool number() {
        eat('-');
        if (!eat('0') && !digits()) return false;
        if (eat('.') && !digits()) return false;
        if (peek() == 'e' || peek() == 'E') {
            ++i_;
            if (peek() == '+' || peek() == '-') ++i_;
            if (!digits()) return false;
        }
        return true;
    }
    bool skip_value(int depth) {
        if (depth > 128) return false;
        switch (peek()) {
        case '"':
            return string(nullptr);
        case 't':
            return literal("true");
        case 'f':
            return literal("false");
        case 'n':
            return literal("null");
        case '{':
        case '[': {
            bool object = peek() == '{';
            char close = object ? '}' : ']';
            ++i_;
            ws();
            if (eat(close)) return true;
            for (;;) {
                if (object) {
                    if (!string(nullptr)) return false;
                    ws();
                    if (!eat(':')) return false;
                    ws();
                }
                if (!skip_value(depth + 1)) return false;
                ws();
                if (eat(',')) {
                    ws();
                    continue;
                }
                return eat(close);
            }
        }
        default:
            return number();
        }
    }
};

} // namespace detail

/** The string member `key` of a JSON object (e.g. "stop_reason" of a
 *  response), decoded; nullopt if there is none or it is not a string. */
inline std::optional<std::string> json_string_member(std::string_view json, std::string_view key) {
    return detail::JsonReader(json).string_member(key);
}

/** `text` quoted as a JSON string ("a\"b" for a"b). */
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

/** The `text` of a response JSON; throws zoo::Error(ZOO_INVALID_JSON) if
 *  the JSON has none. */
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
    explicit ToolContext(const zoo_tool_context *context) noexcept : c_(context) {}

    /** The call's id ("call_1", ...). */
    std::string call_id() const {
        const char *id = nullptr;
        detail::LibString err;
        detail::check(zoo_tool_context_call_id(c_, &id, err.out()), err);
        return id;
    }

    /** Whether the call is cancelled (the chat's stop, the tool's timeout). */
    bool cancelled() const {
        bool cancelled = false;
        detail::LibString err;
        detail::check(zoo_tool_context_is_cancelled(c_, &cancelled, err.out()), err);
        return cancelled;
    }

    /** Blocks until the call is cancelled or `timeout` passes; whether it is. */
    bool wait_cancelled(std::chrono::milliseconds timeout) const {
        bool cancelled = false;
        detail::LibString err;
        detail::check(zoo_tool_context_wait_cancelled(c_, static_cast<int64_t>(timeout.count()),
                                                      &cancelled, err.out()),
                      err);
        return cancelled;
    }

    /** Reports a partial result (JSON text); throws zoo::Error if it is not JSON. */
    bool update(const std::string &json) const {
        bool accepted = false;
        detail::LibString err;
        detail::check(zoo_tool_context_update_json(c_, json.c_str(), &accepted, err.out()), err);
        return accepted;
    }

    /** Reports progress in words. */
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

/* ---- Model ---- */

/** A loaded GGUF model. Agents created from it keep the weights alive, so
 *  the Model may be destroyed before them. */
class Model {
public:
    Model() noexcept = default;
    /** Takes ownership of a zoo_model from the C API. */
    explicit Model(zoo_model *adopt) noexcept : m_(adopt) {}
    Model(Model &&other) noexcept : m_(std::exchange(other.m_, nullptr)) {}
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

    /** Loads a GGUF. `params_json` is empty (defaults) or a JSON object with
     *  `gpu_layers` and `use_mmap`. Throws zoo::Error. */
    static Model load(const std::string &path, const std::string &params_json = {}) {
        detail::LibString err;
        zoo_model *m = nullptr;
        detail::check(
            zoo_model_load(path.c_str(), detail::c_str_or_null(params_json), &m, err.out()), err);
        return Model(m);
    }

    /** Like load, reporting progress (on this thread) to `progress`. If it
     *  returns false the load ends with zoo::Error(ZOO_CANCELLED); if it
     *  throws, the load is cancelled and the exception rethrown here. */
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

    /** The GGUF metadata as JSON (chat_template, architecture, name, special). */
    std::string metadata_json() const {
        detail::LibString out, err;
        detail::check(zoo_model_metadata_json(m_, out.out(), err.out()), err);
        return out.str();
    }

    const zoo_model *get() const noexcept { return m_; }
    explicit operator bool() const noexcept { return m_ != nullptr; }
    /** Gives up ownership (the caller frees it with zoo_model_free). */
    zoo_model *release() noexcept { return std::exchange(m_, nullptr); }
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
    Chat(Chat &&other) noexcept
        : c_(std::exchange(other.c_, nullptr)), state_(std::move(other.state_)) {}
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

    /** Blocks until the chat ends; returns the response JSON. Throws
     *  zoo::Error if the chat failed, or rethrows what a token or event
     *  callback threw. Do not call it from the agent's own callbacks. */
    std::string wait() const { return *wait_impl(-1); }

    /** Waits up to `timeout`: the response JSON, or nullopt if the chat is
     *  still running. Throws like wait(). */
    std::optional<std::string> wait_for(std::chrono::milliseconds timeout) const {
        return wait_impl(timeout.count() < 0 ? 0 : static_cast<int64_t>(timeout.count()));
    }

    /** Whether the chat has ended (never blocks). */
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

    const zoo_chat *get() const noexcept { return c_; }
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
    /** Takes ownership of a zoo_agent from the C API. */
    explicit Agent(zoo_agent *adopt) noexcept : a_(adopt) {}
    Agent(Agent &&other) noexcept : a_(std::exchange(other.a_, nullptr)) {}
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

    /** Creates an agent from a JSON config (model_path, temperature, ...),
     *  loading its model. Throws zoo::Error. */
    static Agent create(const std::string &config_json) {
        detail::LibString err;
        zoo_agent *a = nullptr;
        detail::check(zoo_agent_create(config_json.c_str(), &a, err.out()), err);
        return Agent(a);
    }

    /** Creates an agent on a loaded model (config may be empty for the
     *  defaults); agents on one model share its weights. */
    static Agent create(const Model &model, const std::string &config_json = {}) {
        detail::LibString err;
        zoo_agent *a = nullptr;
        detail::check(zoo_agent_create_with_model(model.get(), detail::c_str_or_null(config_json),
                                                  &a, err.out()),
                      err);
        return Agent(a);
    }

    /** An agent on a scripted mock model, for tests: `replies_json` is a
     *  JSON array of replies (strings, or {"error": "..."}), see zoo.h. */
    static Agent mock(const std::string &replies_json = "[]", uint32_t piece_delay_ms = 0,
                      const std::string &config_json = {}) {
        detail::LibString err;
        zoo_agent *a = nullptr;
        detail::check(zoo_agent_create_mock(detail::c_str_or_null(config_json),
                                            replies_json.c_str(), piece_delay_ms, &a, err.out()),
                      err);
        return Agent(a);
    }

    /** Sends `message` and blocks until the reply is complete; returns the
     *  response JSON. Throws zoo::Error, or what a callback threw. */
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

    /** chat() and return only the response's text. */
    std::string chat_text(const std::string &message, const ChatOptions &options = {}) const {
        return response_text(chat(message, options));
    }

    /** Sends `message` and returns at once. `on_complete` (optional) runs
     *  when the chat ends, on the inference thread, and may destroy this
     *  Agent (e.g. reset an std::optional<Agent> holding it). */
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

    /** Registers a tool (replacing one of the same name). `schema_json` is
     *  the JSON schema of the arguments object. With tool_execution
     *  "parallel" or {"batched": N}, `fn` may run on several tool threads at
     *  once (unless `options.exclusive`). Throws zoo::Error. */
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
     *  register_tool. Throws zoo::Error. */
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

    /** Adds built-in tools: `options_json` is {"tools": [...], "workspace":
     *  "...", "bash_deny": [...]} (as the config's builtin_tools); `confirm`
     *  (may be empty) is asked before write_file, edit_file and bash run.
     *  Throws zoo::Error. */
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

    /** Removes a tool; returns whether it was registered. */
    bool unregister_tool(const std::string &name) const {
        detail::LibString err;
        bool removed = false;
        detail::check(zoo_agent_unregister_tool(a_, name.c_str(), &removed, err.out()), err);
        return removed;
    }

    /** The conversation as a JSON array of messages, system prompt first. */
    std::string history_json() const {
        detail::LibString out, err;
        detail::check(zoo_agent_history_json(a_, out.out(), err.out()), err);
        return out.str();
    }

    /** Replaces the conversation (e.g. with a saved history_json()). */
    void set_history_json(const std::string &history_json) const {
        detail::LibString err;
        detail::check(zoo_agent_set_history_json(a_, history_json.c_str(), err.out()), err);
    }

    /** Forgets the conversation, keeping the system prompt. */
    void clear_history() const {
        detail::LibString err;
        detail::check(zoo_agent_clear_history(a_, err.out()), err);
    }

    /** Sets the system prompt. */
    void set_system_prompt(const std::string &prompt) const {
        detail::LibString err;
        detail::check(zoo_agent_set_system_prompt(a_, prompt.c_str(), err.out()), err);
    }

    /** Removes the system prompt. */
    void remove_system_prompt() const {
        detail::LibString err;
        detail::check(zoo_agent_set_system_prompt(a_, nullptr, err.out()), err);
    }

    const zoo_agent *get() const noexcept { return a_; }
    explicit operator bool() const noexcept { return a_ != nullptr; }
    /** Gives up ownership (the caller frees it with zoo_agent_free). */
    zoo_agent *release() noexcept { return std::exchange(a_, nullptr); }
    /** Frees the agent now (see the destructor). */
    void reset() noexcept { zoo_agent_free(std::exchange(a_, nullptr)); }

private:
    zoo_agent *a_ = nullptr;
};

} // namespace zoo

#endif /* ZOO_HPP */
