// test_zoo.cpp: tests of include/zoo.hpp, the header-only C++17 wrapper,
// on the mock backend and on the real default model (ZOO_MODEL, else the
// repository's SmolLM2 file; a missing model is a failure). Same output as
// the C tests: one line per test, then "N passed, M failed".
//
// Built by tests/c/Makefile (make -C tests/c test-cpp).

#include "zoo.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "json_mini.h"

#ifndef ZOO_DEFAULT_MODEL
#define ZOO_DEFAULT_MODEL "../../models/SmolLM2-135M-Instruct.Q4_1.gguf"
#endif

using namespace std::chrono_literals;

// ---- a minimal runner ----

namespace {

struct TestCase {
    const char *name;
    void (*fn)();
    int seconds;
};

std::vector<TestCase> &registry() {
    static std::vector<TestCase> tests;
    return tests;
}

struct Register {
    Register(const char *name, void (*fn)(), int seconds) {
        registry().push_back({name, fn, seconds});
    }
};

std::atomic<int> failures{0};

bool check(bool ok, const char *what, const char *file, int line) {
    if (!ok) {
        failures++;
        std::printf("    %s:%d: check failed: %s\n", file, line, what);
    }
    return ok;
}

bool check_eq(const std::string &got, const std::string &want, const char *what,
              const char *file, int line) {
    if (got != want) {
        failures++;
        std::printf("    %s:%d: %s\n      is   \"%s\"\n      want \"%s\"\n", file, line, what,
                    got.c_str(), want.c_str());
        return false;
    }
    return true;
}

#define TEST(name, seconds)                                                               \
    void test_##name();                                                                   \
    const Register register_##name(#name, test_##name, seconds);                          \
    void test_##name()
#define CHECK(cond) check((cond), #cond, __FILE__, __LINE__)
#define CHECK_EQ(got, want) check_eq((got), (want), #got, __FILE__, __LINE__)
#define REQUIRE(cond)                                                                     \
    do {                                                                                  \
        if (!CHECK(cond)) return;                                                         \
    } while (0)

// Runs `body` and checks that it throws zoo::Error with `code`.
template <class F>
bool throws_code(F &&body, zoo_status code, const char *what, const char *file, int line,
                 const char *must_mention = nullptr) {
    try {
        body();
    } catch (const zoo::Error &e) {
        if (e.code() == code && (!must_mention || std::string(e.what()).find(must_mention) !=
                                                      std::string::npos) &&
            e.what()[0] != '\0')
            return true;
        failures++;
        std::printf("    %s:%d: %s threw code %d (%s): %s\n", file, line, what, (int)e.code(),
                    e.status_name(), e.what());
        return false;
    } catch (const std::exception &e) {
        failures++;
        std::printf("    %s:%d: %s threw a non-zoo exception: %s\n", file, line, what, e.what());
        return false;
    }
    failures++;
    std::printf("    %s:%d: %s did not throw\n", file, line, what);
    return false;
}
#define CHECK_THROWS(body, code) throws_code([&] { body; }, code, #body, __FILE__, __LINE__)
#define CHECK_THROWS_MENTIONING(body, code, text)                                           \
    throws_code([&] { body; }, code, #body, __FILE__, __LINE__, text)

int timeout_scale() {
    const char *env = std::getenv("ZOO_TEST_TIMEOUT_SCALE");
    int s = env ? std::atoi(env) : 1;
    return s > 0 ? s : 1;
}

std::string model_path() {
    const char *env = std::getenv("ZOO_MODEL");
    return env && *env ? env : ZOO_DEFAULT_MODEL;
}

bool require_model() {
    struct stat st;
    if (stat(model_path().c_str(), &st) == 0 && S_ISREG(st.st_mode)) return true;
    failures++;
    std::printf("    model file not found: %s (run scripts/fetch-models, or set ZOO_MODEL)\n",
                model_path().c_str());
    return false;
}

std::string greedy_config(bool with_path, int max_tokens) {
    std::string c = "{";
    if (with_path) c += "\"model_path\": " + zoo::json_quote(model_path()) + ", ";
    c += "\"temperature\": 0, \"seed\": 7, \"context_size\": 1024, \"threads\": 1, "
         "\"max_tokens\": " +
         std::to_string(max_tokens) + "}";
    return c;
}

// The string at a json_mini path ("" if absent).
std::string at(const std::string &json, const char *path) {
    char *s = jm_string(json.c_str(), path);
    std::string out = s ? s : "";
    std::free(s);
    return out;
}

// Waits until pred() or the timeout.
template <class P> bool eventually(P pred, std::chrono::milliseconds timeout = 5s) {
    auto deadline = std::chrono::steady_clock::now() + timeout * timeout_scale();
    while (!pred()) {
        if (std::chrono::steady_clock::now() > deadline) return pred();
        std::this_thread::sleep_for(1ms);
    }
    return true;
}

const char *WEATHER_SCHEMA =
    R"({"type":"object","properties":{"city":{"type":"string"}},"required":["city"]})";
const char *CALL_PARIS =
    R"(<tool_call>{\"name\":\"get_weather\",\"arguments\":{\"city\":\"Paris\"}}</tool_call>)";

std::string replies(std::initializer_list<std::string> items) {
    std::string out = "[";
    for (const auto &item : items) {
        if (out.size() > 1) out += ",";
        out += "\"" + item + "\"";
    }
    return out + "]";
}

std::string words(int n) {
    std::string s;
    for (int i = 0; i < n; i++) s += (i ? " w" : "w") + std::to_string(i);
    return s;
}

// A gate that callbacks on the inference thread wait at until the test
// opens it: a reply held there cannot finish before the test has looked.
class Gate {
  public:
    void open() {
        std::lock_guard<std::mutex> lock(mu_);
        open_ = true;
        cv_.notify_all();
    }
    // Waits until open; gives up after 30 s (times the scale), so that a
    // broken test fails on its own checks instead of hanging.
    void pass() {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait_for(lock, 30s * timeout_scale(), [this] { return open_; });
    }

  private:
    std::mutex mu_;
    std::condition_variable cv_;
    bool open_ = false;
};

} // namespace

// ---- tests ----

TEST(handles_are_move_only_raii, 5) {
    static_assert(!std::is_copy_constructible_v<zoo::Agent>);
    static_assert(!std::is_copy_assignable_v<zoo::Agent>);
    static_assert(std::is_nothrow_move_constructible_v<zoo::Agent>);
    static_assert(!std::is_copy_constructible_v<zoo::Model>);
    static_assert(std::is_nothrow_move_assignable_v<zoo::Model>);
    static_assert(!std::is_copy_constructible_v<zoo::Chat>);
    static_assert(std::is_nothrow_move_constructible_v<zoo::Chat>);
    static_assert(std::is_base_of_v<std::runtime_error, zoo::Error>);

    zoo::Agent a = zoo::Agent::mock();
    REQUIRE(static_cast<bool>(a));
    zoo::Agent b = std::move(a);
    CHECK(!a && b);
    CHECK_EQ(b.chat_text("hi"), "echo: hi");
    // A moved-from handle is empty: calls throw instead of crashing.
    CHECK_THROWS(a.chat("hi"), ZOO_INVALID_ARGUMENT);
    CHECK_THROWS(a.history_json(), ZOO_INVALID_ARGUMENT);
    CHECK_THROWS(a.stop(), ZOO_INVALID_ARGUMENT);
    a = std::move(b);
    CHECK_EQ(a.chat_text("again"), "echo: again");
    zoo_agent *raw = a.release();
    CHECK(!a && raw);
    zoo::Agent adopted(raw);
    CHECK(adopted.get() == raw);
    adopted.reset();
    CHECK(!adopted);
    zoo::Chat empty;
    CHECK_THROWS(empty.wait(), ZOO_INVALID_ARGUMENT);
    CHECK_THROWS(empty.done(), ZOO_INVALID_ARGUMENT);
    CHECK_THROWS(empty.cancel(), ZOO_INVALID_ARGUMENT);
    zoo::Model none;
    CHECK_THROWS(none.metadata_json(), ZOO_INVALID_ARGUMENT);
    CHECK_THROWS(zoo::Agent::create(none), ZOO_INVALID_ARGUMENT);
}

TEST(errors_carry_code_and_message, 5) {
    CHECK(std::string(zoo::version()) == zoo_version());
    CHECK_THROWS_MENTIONING(zoo::Agent::mock("[]", 0, R"({"temperature": -1})"),
                            ZOO_INVALID_CONFIG, "temperature");
    CHECK_THROWS(zoo::Agent::mock("[]", 0, "{"), ZOO_INVALID_JSON);
    CHECK_THROWS(zoo::Agent::mock("not json"), ZOO_INVALID_JSON);
    CHECK_THROWS(zoo::Agent::create("{}"), ZOO_INVALID_CONFIG);
    CHECK_THROWS_MENTIONING(zoo::Agent::create(R"({"model_path": "/nonexistent/m.gguf"})"),
                            ZOO_MODEL_LOAD_FAILED, "/nonexistent/m.gguf");
    CHECK_THROWS(zoo::Model::load("/nonexistent/m.gguf"), ZOO_MODEL_LOAD_FAILED);
    CHECK_THROWS(zoo::Model::load("/nonexistent/m.gguf", "{"), ZOO_INVALID_JSON);
    try {
        zoo::Agent::mock(R"([{"error": "injected"}])").chat("hi");
        CHECK(!"no exception");
    } catch (const zoo::Error &e) {
        CHECK(e.code() == ZOO_INFERENCE_FAILED);
        CHECK(std::string(e.status_name()) == "inference failed");
        CHECK(std::string(e.what()).find("injected") != std::string::npos);
    }
    zoo::Agent agent = zoo::Agent::mock();
    CHECK_THROWS(agent.chat("\xff"), ZOO_INVALID_ARGUMENT);
    zoo::ChatOptions bad;
    bad.tool_choice = static_cast<zoo::ToolChoice>(99);
    CHECK_THROWS(agent.chat("hi", bad), ZOO_INVALID_ARGUMENT);
    zoo::ChatOptions named;
    named.tool_choice = zoo::ToolChoice::Named;
    named.tool_name = "missing_tool";
    CHECK_THROWS(agent.chat("hi", named), ZOO_TOOL_NOT_FOUND);
    CHECK_THROWS(agent.chat_async("hi", named).wait(), ZOO_TOOL_NOT_FOUND);
    CHECK_THROWS(agent.set_history_json(R"([{"role":"user","content":"a"},)"
                                        R"({"role":"user","content":"b"}])"),
                 ZOO_INVALID_MESSAGE_SEQUENCE);
    CHECK_THROWS(agent.register_tool("bad name", "d", "{}", [](auto &) { return "1"; }),
                 ZOO_INVALID_ARGUMENT);
    CHECK_THROWS(agent.register_tool("t", "d", "{", [](auto &) { return "1"; }),
                 ZOO_INVALID_JSON);
    CHECK_THROWS(agent.register_tool("t", "d", R"({"type":"string"})", [](auto &) { return "1"; }),
                 ZOO_TOOL_VALIDATION_FAILED);
    zoo::ToolOptions negative;
    negative.timeout_ms = -5;
    CHECK_THROWS_MENTIONING(agent.register_tool("t", "d", "{}", [](auto &) { return "1"; }, negative),
                            ZOO_INVALID_ARGUMENT, "the timeout of tool `t`");
}

TEST(json_helpers, 5) {
    CHECK_EQ(zoo::json_quote("a\"b\\c\nd\x01 \xc3\xa9"), "\"a\\\"b\\\\c\\nd\\u0001 \xc3\xa9\"");
    std::string doc = R"({"n": [1, {"text": "no"}], "text": "caf\u00e9 \ud83e\udd93 \"q\"", "x": 1})";
    auto text = zoo::json_string_member(doc, "text");
    REQUIRE(text.has_value());
    CHECK_EQ(*text, "caf\xc3\xa9 \xf0\x9f\xa6\x93 \"q\"");
    CHECK(!zoo::json_string_member(doc, "x"));
    CHECK(!zoo::json_string_member(doc, "missing"));
    CHECK(!zoo::json_string_member("[1]", "text"));
    CHECK(!zoo::json_string_member(R"({"text": "unterminated)", "text"));
    CHECK_EQ(zoo::response_text(R"({"stop_reason":"stop","text":"ok"})"), "ok");
    CHECK_THROWS(zoo::response_text("{}"), ZOO_INVALID_JSON);
}

TEST(chat_and_streaming, 10) {
    zoo::Agent agent = zoo::Agent::mock(replies({"Hello from the  mock, \xc3\xa9t\xc3\xa9."}));
    std::string streamed;
    int tokens = 0;
    std::vector<std::string> events;
    zoo::ChatOptions opts;
    opts.on_token = [&](std::string_view t) {
        streamed.append(t);
        tokens++;
    };
    opts.on_event = [&](std::string_view e) { events.push_back(at(std::string(e), "type")); };
    std::string response = agent.chat("hi", opts);
    CHECK(jm_valid(response.c_str(), response.size()));
    CHECK_EQ(zoo::response_text(response), "Hello from the  mock, \xc3\xa9t\xc3\xa9.");
    CHECK_EQ(streamed, zoo::response_text(response));
    CHECK(tokens == 5);
    CHECK(events.size() == 4 && events[0] == "chat_started" && events[1] == "turn_started" &&
          events[3] == "chat_finished");
    CHECK_EQ(*zoo::json_string_member(response, "stop_reason"), "stop");
    // max_tokens and rag_context reach the engine.
    zoo::ChatOptions limited;
    limited.max_tokens = 1;
    limited.rag_context = "ctx";
    std::string r = agent.chat("one two three", limited);
    CHECK_EQ(*zoo::json_string_member(r, "stop_reason"), "length");
    CHECK_EQ(zoo::response_text(r), "echo:");
}

TEST(tools_as_std_function, 10) {
    zoo::Agent agent = zoo::Agent::mock(
        replies({CALL_PARIS, "JSON result.", CALL_PARIS, "Text result.", CALL_PARIS, "Threw.",
                 CALL_PARIS, "Threw an int."}));
    std::vector<std::string> seen;
    int mode = 0;
    agent.register_tool("get_weather", "Current weather", WEATHER_SCHEMA,
                        [&](const std::string &args) -> std::string {
                            seen.push_back(args);
                            switch (mode++) {
                            case 0: return R"({"sky": "cloudy", "temperature_celsius": 17})";
                            case 1: return "sunny, with \"quotes\"\n"; // not JSON: a string
                            case 2: throw std::runtime_error("weather service down");
                            default: throw 42;
                            }
                        });
    std::string r = agent.chat("weather?");
    CHECK_EQ(zoo::response_text(r), "JSON result.");
    CHECK_EQ(at(r, "tool_calls.0.result.sky"), "cloudy");
    REQUIRE(seen.size() == 1);
    CHECK(jm_valid(seen[0].c_str(), seen[0].size()));
    CHECK_EQ(at(seen[0], "city"), "Paris");

    r = agent.chat("weather?");
    CHECK_EQ(at(r, "tool_calls.0.result"), "sunny, with \"quotes\"\n");
    CHECK(jm_count(r.c_str(), "tool_errors") == 0);

    r = agent.chat("weather?");
    CHECK_EQ(zoo::response_text(r), "Threw.");
    CHECK_EQ(at(r, "tool_errors.0.kind"), "tool_handler_failed");
    CHECK(at(r, "tool_errors.0.message").find("weather service down") != std::string::npos);

    r = agent.chat("weather?");
    CHECK_EQ(zoo::response_text(r), "Threw an int.");
    CHECK_EQ(at(r, "tool_errors.0.kind"), "tool_handler_failed");
    CHECK(seen.size() == 4);
}

TEST(backend_as_std_function, 10) {
    int turn = 0;
    std::string first_request;
    zoo::Agent agent = zoo::Agent::with_backend(
        [&](const std::string &request, const zoo::BackendSink &sink) {
            switch (turn++) {
            case 0:
                first_request = request;
                CHECK(sink.text("Hello"));
                CHECK(sink.text(", world"));
                sink.usage(7, 2, 3);
                return;
            case 1:
                sink.text("partial");
                throw std::runtime_error("gateway down");
            case 2: CHECK_THROWS(sink.emit_json("{\"type\": \"txt\"}"), ZOO_INVALID_JSON); throw 42;
            default: sink.text("Fine.");
            }
        },
        R"({"temperature": 0})");
    std::string streamed;
    zoo::ChatOptions opts;
    opts.on_token = [&](std::string_view t) { streamed.append(t); };
    std::string r = agent.chat("hi", opts);
    CHECK_EQ(zoo::response_text(r), "Hello, world");
    CHECK_EQ(streamed, "Hello, world");
    double completion = 0;
    CHECK(jm_number(r.c_str(), "usage.completion_tokens", &completion) && completion == 3);
    CHECK_EQ(at(first_request, "messages.0.content"), "hi");
    CHECK_THROWS(agent.chat("again"), ZOO_PROVIDER_FAILED);
    try {
        agent.chat("again");
    } catch (const zoo::Error &e) {
        CHECK_EQ(std::string(e.what()), "provider host failed: the backend threw an exception");
    }
    CHECK_EQ(zoo::response_text(agent.chat("last")), "Fine.");
    CHECK(jm_count(agent.history_json().c_str(), "") == 4);
}

TEST(builtin_tools_with_confirmation, 10) {
    char dir[] = "/tmp/zoo-cpp-builtin-XXXXXX";
    REQUIRE(mkdtemp(dir) != nullptr);
    const std::string write_call =
        R"(<tool_call>{\"name\": \"write_file\", \"arguments\": {\"path\": \"a.txt\", \"content\": \"hi\"}}</tool_call>)";
    zoo::Agent agent =
        zoo::Agent::mock(replies({write_call, "Refused.", write_call, "Threw.", write_call, "Ok."}));
    int asked = 0;
    agent.add_builtin_tools(std::string(R"({"tools": ["write_file", "read_file"], "workspace": ")") +
                                dir + "\"}",
                            [&](const std::string &tool, const std::string &args) -> bool {
                                CHECK_EQ(tool, "write_file");
                                CHECK_EQ(at(args, "path"), "a.txt");
                                switch (asked++) {
                                case 0: return false;
                                case 1: throw std::runtime_error("no terminal");
                                default: return true;
                                }
                            });
    std::string r = agent.chat("write");
    CHECK_EQ(at(r, "tool_calls.0.error"),
             "tool `write_file` failed: the user refused this write_file call");
    r = agent.chat("write");
    CHECK_EQ(at(r, "tool_calls.0.error"),
             "tool `write_file` failed: the write_file call was refused: the confirmation "
             "callback failed: no terminal");
    r = agent.chat("write");
    CHECK_EQ(at(r, "tool_calls.0.result.text"), "wrote 2 bytes to a.txt");
    CHECK(asked == 3);
    try {
        agent.add_builtin_tools(R"({"tools": ["rm_rf"], "workspace": "/tmp"})");
        CHECK(false);
    } catch (const zoo::Error &e) {
        CHECK(e.code() == ZOO_INVALID_ARGUMENT);
    }
    std::remove((std::string(dir) + "/a.txt").c_str());
    rmdir(dir);
}

TEST(tool_options_time_limit, 20) {
    zoo::Agent agent = zoo::Agent::mock(replies({CALL_PARIS, "Gave up."}));
    // The handler blocks until the chat is over: only the time limit can
    // answer the call, whatever the machine's load.
    struct Gate {
        std::mutex mu;
        std::condition_variable cv;
        bool open = false;
    };
    auto gate = std::make_shared<Gate>();
    zoo::ToolOptions options;
    options.timeout_ms = 50;
    agent.register_tool("get_weather", "Current weather", WEATHER_SCHEMA,
                        [gate](const std::string &) -> std::string {
                            std::unique_lock<std::mutex> lock(gate->mu);
                            gate->cv.wait(lock, [&] { return gate->open; });
                            return "late";
                        },
                        options);
    std::string r = agent.chat("weather?");
    {
        std::lock_guard<std::mutex> lock(gate->mu);
        gate->open = true;
    }
    gate->cv.notify_all();
    CHECK_EQ(zoo::response_text(r), "Gave up.");
    CHECK_EQ(at(r, "tool_calls.0.error"),
             "tool `get_weather` failed: it did not finish within 50 ms");
    CHECK_EQ(at(r, "tool_errors.0.kind"), "tool_handler_failed");
}

TEST(tool_context_reports_and_timeout, 20) {
    zoo::Agent agent = zoo::Agent::mock(replies({CALL_PARIS, "Gave up."}));
    struct Seen {
        std::atomic<bool> done{false}, cancelled{false}, late_taken{true};
        std::string call_id;
    };
    auto seen = std::make_shared<Seen>();
    zoo::ToolOptions options;
    options.timeout_ms = 1000;
    agent.register_tool_with_context(
        "get_weather", "Current weather", WEATHER_SCHEMA,
        [seen](const std::string &, const zoo::ToolContext &ctx) -> std::string {
            seen->call_id = ctx.call_id();
            ctx.progress("asking the weather service");
            ctx.update(R"({"sky": "unknown"})");
            bool cancelled = ctx.wait_cancelled(std::chrono::seconds(30));
            seen->late_taken = ctx.progress("too late");
            seen->cancelled = cancelled;
            seen->done = true;
            return "ignored";
        },
        options);
    std::vector<std::string> events;
    zoo::ChatOptions opts;
    opts.on_event = [&](std::string_view e) { events.push_back(at(std::string(e), "type")); };
    std::string r = agent.chat("weather?", opts);
    CHECK_EQ(at(r, "tool_calls.0.error"),
             "tool `get_weather` failed: it did not finish within 1000 ms");
    std::vector<std::string> want = {"chat_started",       "turn_started",       "turn_finished",
                                     "tool_call_started",  "tool_call_progress", "tool_call_update",
                                     "tool_call_finished", "tool_error",         "turn_started",
                                     "turn_finished",      "chat_finished"};
    CHECK(events == want);
    for (int i = 0; i < 3000 && !seen->done; i++) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    CHECK(seen->done);
    CHECK(seen->cancelled);
    CHECK(!seen->late_taken);
    CHECK_EQ(seen->call_id, "call_1");
}

TEST(tool_function_destroyed_exactly_once, 10) {
    auto token = std::make_shared<int>(0);
    {
        zoo::Agent agent = zoo::Agent::mock();
        agent.register_tool("a", "d", "{}", [token](auto &) { return "1"; });
        agent.register_tool("b", "d", "{}", [token](auto &) { return "2"; });
        CHECK(token.use_count() == 3);
        // Replacing drops the old function.
        agent.register_tool("a", "d", "{}", [token](auto &) { return "3"; });
        CHECK(token.use_count() == 3);
        CHECK(agent.unregister_tool("b"));
        CHECK(!agent.unregister_tool("b"));
        CHECK(token.use_count() == 2);
        // A failed registration does not keep (or leak) the function.
        CHECK_THROWS(agent.register_tool("bad name", "d", "{}", [token](auto &) { return "4"; }),
                     ZOO_INVALID_ARGUMENT);
        CHECK(token.use_count() == 2);
    }
    // The agent's destruction released the last one.
    CHECK(token.use_count() == 1);
}

TEST(callback_exceptions_cancel_and_rethrow, 10) {
    // One scripted reply: later chats get the mock's echo whether or not a
    // cancel kept them from reaching the model (an event callback now
    // throws at chat_started, before any reply is taken from the script).
    zoo::Agent agent = zoo::Agent::mock(replies({words(200)}), 2);
    int tokens = 0;
    zoo::ChatOptions opts;
    opts.on_token = [&](std::string_view) {
        if (++tokens == 3) throw std::runtime_error("disk full");
    };
    try {
        agent.chat("go", opts);
        CHECK(!"chat() did not rethrow");
    } catch (const std::runtime_error &e) {
        CHECK_EQ(e.what(), std::string("disk full"));
    }
    // The chat was cancelled at once, not run to its end.
    CHECK(tokens < 20);
    std::string h = agent.history_json();
    CHECK(h.find("w150") == std::string::npos);

    // Asynchronously, wait() rethrows it.
    tokens = 0;
    zoo::ChatOptions events;
    events.on_event = [](std::string_view) { throw std::logic_error("bad event"); };
    zoo::Chat chat = agent.chat_async("go", events);
    try {
        chat.wait();
        CHECK(!"wait() did not rethrow");
    } catch (const std::logic_error &e) {
        CHECK_EQ(e.what(), std::string("bad event"));
    }
    // The agent is fine afterwards.
    CHECK_EQ(agent.chat_text("next"), "echo: next");
}

TEST(async_wait_poll_cancel_stop, 20) {
    // The first reply waits at its first token until the checks of a
    // running chat are done; the others take 25 s unless cancelled.
    zoo::Agent agent = zoo::Agent::mock(replies({words(40), words(5000), words(5000)}), 5);
    std::atomic<int> completes{0};
    zoo_status status = ZOO_INTERNAL;
    std::string completed_text;
    Gate held;
    zoo::ChatOptions hold;
    hold.on_token = [&held](std::string_view) { held.pass(); };
    zoo::Chat chat = agent.chat_async("a", hold, [&](zoo_status s, std::string_view text) {
        status = s;
        completed_text = std::string(text);
        completes++;
    });
    CHECK(!chat.done());
    CHECK(!chat.wait_for(10ms).has_value());
    held.open();
    std::string r = chat.wait();
    CHECK(chat.done());
    CHECK_EQ(*zoo::json_string_member(r, "stop_reason"), "stop");
    CHECK(eventually([&] { return completes.load() == 1; }));
    CHECK(status == ZOO_OK);
    CHECK_EQ(completed_text, r);
    auto again = chat.wait_for(0ms);
    CHECK(again.has_value() && *again == r);

    // cancel()
    std::atomic<int> tokens{0};
    zoo::ChatOptions count;
    count.on_token = [&](std::string_view) { tokens++; };
    zoo::Chat long_chat = agent.chat_async("b", count);
    CHECK(eventually([&] { return tokens.load() >= 2; }));
    long_chat.cancel();
    CHECK_EQ(*zoo::json_string_member(long_chat.wait(), "stop_reason"), "cancelled");

    // stop() from another thread
    tokens = 0;
    zoo::Chat third = agent.chat_async("c", count);
    std::thread stopper([&] {
        eventually([&] { return tokens.load() >= 2; });
        agent.stop();
    });
    std::string stopped = third.wait();
    stopper.join();
    CHECK_EQ(*zoo::json_string_member(stopped, "stop_reason"), "cancelled");
    CHECK(tokens.load() < 400);
}

TEST(destroying_chat_or_agent_early, 20) {
    // A Chat destroyed early: the chat goes on, on_complete still runs.
    std::atomic<int> completes{0};
    {
        zoo::Agent agent = zoo::Agent::mock(replies({words(10)}), 2);
        { zoo::Chat c = agent.chat_async("x", {}, [&](zoo_status, std::string_view) { completes++; }); }
        CHECK(eventually([&] { return completes.load() == 1; }));
    }
    // The Agent destroyed while chats run: the running one (25 s of reply)
    // ends cancelled, the queued one fails with ZOO_AGENT_NOT_RUNNING.
    zoo::Chat running, queued;
    {
        zoo::Agent agent = zoo::Agent::mock(replies({words(5000)}), 5);
        std::atomic<int> tokens{0};
        zoo::ChatOptions count;
        count.on_token = [&tokens](std::string_view) { tokens++; };
        running = agent.chat_async("long", count);
        queued = agent.chat_async("queued");
        CHECK(eventually([&] { return tokens.load() >= 1; }));
    }
    CHECK_EQ(*zoo::json_string_member(running.wait(), "stop_reason"), "cancelled");
    CHECK_THROWS(queued.wait(), ZOO_AGENT_NOT_RUNNING);

    // The Agent destroyed from inside on_complete.
    std::optional<zoo::Agent> holder = zoo::Agent::mock(replies({words(5)}), 1);
    std::atomic<bool> freed{false};
    zoo::Chat last = holder->chat_async("bye", {}, [&](zoo_status, std::string_view) {
        holder.reset();
        freed = true;
    });
    CHECK_EQ(*zoo::json_string_member(last.wait(), "stop_reason"), "stop");
    CHECK(eventually([&] { return freed.load(); }));
    CHECK(!holder.has_value());
}

TEST(history_and_system_prompt, 10) {
    zoo::Agent agent = zoo::Agent::mock(replies({"Hi."}), 0, R"({"system_prompt": "Be terse."})");
    CHECK_EQ(at(agent.history_json(), "0.content"), "Be terse.");
    agent.chat("Hello");
    std::string saved = agent.history_json();
    CHECK(jm_count(saved.c_str(), "") == 3);
    agent.clear_history();
    CHECK(jm_count(agent.history_json().c_str(), "") == 1);
    agent.set_system_prompt("Be kind.");
    CHECK(eventually([&] { return at(agent.history_json(), "0.content") == "Be kind."; }));
    agent.remove_system_prompt();
    CHECK(eventually([&] { return agent.history_json() == "[]"; }));
    agent.set_history_json(saved);
    CHECK(eventually([&] { return agent.history_json() == saved; }));
}

// ---- the real model ----

TEST(real_model_agents_and_streaming, 180) {
    if (!require_model()) return;
    std::vector<float> progress;
    zoo::Model model = zoo::Model::load(model_path(), "", [&](float p) {
        progress.push_back(p);
        return true;
    });
    CHECK(!progress.empty() && progress.back() == 1.0f);
    std::string meta = model.metadata_json();
    CHECK_EQ(at(meta, "architecture"), "llama");

    // A progress callback that throws cancels the load; the exception
    // comes back out of load().
    try {
        zoo::Model::load(model_path(), "", [](float) -> bool { throw std::runtime_error("stop"); });
        CHECK(!"no exception");
    } catch (const std::runtime_error &e) {
        CHECK_EQ(e.what(), std::string("stop"));
    }
    CHECK_THROWS(zoo::Model::load(model_path(), "", [](float) { return false; }), ZOO_CANCELLED);

    zoo::Agent a = zoo::Agent::create(model, greedy_config(false, 16));
    zoo::Agent b = zoo::Agent::create(model, greedy_config(false, 16));
    model.reset(); // the agents keep the weights
    std::string streamed;
    zoo::ChatOptions opts;
    opts.on_token = [&](std::string_view t) { streamed.append(t); };
    std::string text = a.chat_text("Name three colors.", opts);
    std::printf("    reply: %s\n", text.c_str());
    CHECK(!text.empty());
    CHECK_EQ(streamed, text);
    zoo::Chat other = b.chat_async("Say hello.");
    CHECK(!zoo::response_text(other.wait()).empty());
    CHECK(at(b.history_json(), "0.content") == "Say hello.");
}

TEST(real_model_required_tool, 180) {
    if (!require_model()) return;
    zoo::Agent agent = zoo::Agent::create(greedy_config(true, 64));
    std::vector<std::string> calls;
    agent.register_tool("get_weather", "Get the current weather for a city", WEATHER_SCHEMA,
                        [&](const std::string &args) {
                            calls.push_back(args);
                            return std::string(R"({"temperature_celsius": 17, "sky": "cloudy"})");
                        });
    zoo::ChatOptions opts;
    opts.tool_choice = zoo::ToolChoice::Required;
    std::string r = agent.chat("What is the weather like in Paris today?", opts);
    REQUIRE(!calls.empty());
    std::printf("    arguments: %s\n", calls[0].c_str());
    CHECK(jm_valid(calls[0].c_str(), calls[0].size()));
    CHECK(!at(calls[0], "city").empty());
    CHECK_EQ(at(r, "tool_calls.0.name"), "get_weather");
}

// ---- main ----

namespace {

// Never destroyed: the watchdog thread still waits on them when main
// returns, and destroying a condition variable with a waiter blocks in
// glibc (pthread_cond_destroy), which would hang the exit.
std::mutex &watch_mu = *new std::mutex;
std::condition_variable &watch_cv = *new std::condition_variable;
const char *watch_name = nullptr;
std::chrono::steady_clock::time_point watch_deadline;
int passed = 0, failed = 0, remaining = 0;

void watchdog() {
    std::unique_lock<std::mutex> lock(watch_mu);
    for (;;) {
        if (!watch_name) {
            watch_cv.wait(lock);
            continue;
        }
        if (watch_cv.wait_until(lock, watch_deadline) == std::cv_status::timeout && watch_name &&
            std::chrono::steady_clock::now() >= watch_deadline) {
            std::printf("    timed out (a hang or a deadlock)\n[ FAIL ] %s\n", watch_name);
            std::printf("%d passed, %d failed\n", passed, failed + 1 + remaining);
            std::fflush(stdout);
            std::_Exit(1);
        }
    }
}

} // namespace

int main() {
    std::setvbuf(stdout, nullptr, _IOLBF, 0);
    std::thread(watchdog).detach();
    const char *filter = std::getenv("ZOO_TEST_FILTER");
    std::vector<TestCase> run;
    for (const auto &t : registry()) {
        std::string name = t.name;
        if (filter && *filter && std::string(filter).find(name) == std::string::npos) continue;
        run.push_back(t);
    }
    std::printf("zoo.hpp on libzoo %s: running %zu test(s)\n", zoo::version(), run.size());
    remaining = static_cast<int>(run.size());
    for (const auto &t : run) {
        std::printf("[ RUN  ] %s\n", t.name);
        failures = 0;
        auto start = std::chrono::steady_clock::now();
        {
            std::lock_guard<std::mutex> lock(watch_mu);
            remaining--;
            watch_name = t.name;
            watch_deadline = start + std::chrono::seconds(t.seconds * timeout_scale());
            watch_cv.notify_all();
        }
        try {
            t.fn();
        } catch (const std::exception &e) {
            failures++;
            std::printf("    uncaught exception: %s\n", e.what());
        }
        {
            std::lock_guard<std::mutex> lock(watch_mu);
            watch_name = nullptr;
            watch_cv.notify_all();
        }
        long long ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                           std::chrono::steady_clock::now() - start)
                           .count();
        if (failures == 0) {
            passed++;
            std::printf("[  OK  ] %s (%lld ms)\n", t.name, ms);
        } else {
            failed++;
            std::printf("[ FAIL ] %s (%lld ms)\n", t.name, ms);
        }
    }
    std::printf("%d passed, %d failed\n", passed, failed);
    return failed == 0 ? 0 : 1;
}
