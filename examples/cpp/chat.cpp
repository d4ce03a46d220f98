// chat.cpp: an interactive agent in C++ on zoo.hpp, the header-only
// wrapper of libzoo. It loads the default model (SmolLM2-135M-Instruct)
// with a progress bar, gives the agent a calculator written as a lambda, and
// answers each line read from stdin, streaming the reply, until end of
// input. Ctrl-C stops the reply being generated (and quits when idle).
//
//   make -C tests/c examples
//   printf 'Multiply 17 by 23.\n' | tests/c/build/chat_cpp
//   tests/c/build/chat_cpp [model.gguf]       (else $ZOO_MODEL, else the default)
//
// The reply goes to stdout; progress, tool calls and prompts to stderr.

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <stdexcept>
#include <string>
#include <thread>

#include "zoo.hpp"

#ifndef ZOO_DEFAULT_MODEL
#define ZOO_DEFAULT_MODEL "models/SmolLM2-135M-Instruct.Q4_1.gguf"
#endif

namespace {

// The number after "key": in the tool's arguments. libzoo passes them
// validated against the schema (numbers a and b, one of four words for op,
// nothing else) and re-serialized compactly, e.g. {"a":17,"b":23,"op":"add"},
// so a search for "key": finds exactly the member.
double number(const std::string &args, const std::string &key) {
    auto at = args.find("\"" + key + "\":");
    if (at == std::string::npos) throw std::invalid_argument("missing \"" + key + "\"");
    return std::stod(args.substr(at + key.size() + 3));
}

std::string calculator(const std::string &args) {
    double a = number(args, "a"), b = number(args, "b");
    std::string op = zoo::json_string_member(args, "op").value_or("");
    double value;
    char sign;
    if (op == "add") value = a + b, sign = '+';
    else if (op == "subtract") value = a - b, sign = '-';
    else if (op == "multiply") value = a * b, sign = '*';
    else if (op == "divide" && b != 0) value = a / b, sign = '/';
    // Thrown exceptions become tool errors the model sees and may correct.
    else throw std::invalid_argument(b == 0 ? "division by zero" : "unknown operation " + op);
    char text[128];
    std::snprintf(text, sizeof text, "%g %c %g = %g", a, sign, b, value);
    // Not JSON, so zoo.hpp sends it as a JSON string: a sentence, because
    // small models answer better when the result reads like the answer.
    return text;
}

const char *CALCULATOR_SCHEMA = R"({
  "type": "object",
  "properties": {
    "a": {"type": "number", "description": "first operand"},
    "b": {"type": "number", "description": "second operand"},
    "op": {"type": "string", "enum": ["add", "subtract", "multiply", "divide"]}
  },
  "required": ["a", "b", "op"],
  "additionalProperties": false
})";

std::atomic<bool> generating{false};

} // namespace

int main(int argc, char **argv) {
    const char *env = std::getenv("ZOO_MODEL");
    std::string path = argc > 1 ? argv[1] : env && *env ? env : ZOO_DEFAULT_MODEL;

    // SIGINT goes to a thread that calls Agent::stop (see examples/c/chat.c:
    // never from a signal handler). Blocked before libzoo starts threads.
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    pthread_sigmask(SIG_BLOCK, &set, nullptr);

    try {
        std::cerr << "loading " << path << "\n";
        int shown = -1;
        zoo::Model model = zoo::Model::load(path, "", [&shown](float progress) {
            int filled = static_cast<int>(progress * 30);
            if (filled != shown) {
                shown = filled;
                std::cerr << "\r[" << std::string(filled, '#') << std::string(30 - filled, ' ')
                          << "] " << static_cast<int>(progress * 100) << "%"
                          << (filled == 30 ? "\n" : "") << std::flush;
            }
            return true;
        });
        zoo::Agent agent = zoo::Agent::create(
            model, R"({"seed": 42, "repeat_penalty": 1.1, "max_tokens": 256,
                       "system_prompt": "You are a helpful assistant."})");
        model.reset(); // the agent keeps the weights
        agent.register_tool("calculator", "Apply an arithmetic operation to two numbers",
                            CALCULATOR_SCHEMA, calculator);

        std::thread([&agent, set] {
            for (;;) {
                int sig = 0;
                if (sigwait(&set, &sig) != 0) continue;
                if (generating) {
                    agent.stop();
                } else {
                    std::cerr << "\n";
                    _exit(130);
                }
            }
        }).detach();

        zoo::ChatOptions options;
        options.on_token = [](std::string_view text) { std::cout << text << std::flush; };
        options.on_event = [](std::string_view event) {
            auto type = zoo::json_string_member(event, "type").value_or("");
            if (type == "tool_call_started" || type == "tool_call_finished")
                std::cerr << "\n  [tool] " << event << "\n";
        };

        bool interactive = isatty(STDIN_FILENO);
        int exit_code = 0;
        std::string line;
        for (;;) {
            if (interactive) std::cerr << "you> " << std::flush;
            if (!std::getline(std::cin, line)) break; // end of input
            while (!line.empty() && (line.back() == '\r' || line.back() == '\n')) line.pop_back();
            if (line.empty()) continue;
            try {
                generating = true;
                std::string response = agent.chat(line, options);
                generating = false;
                std::cout << std::endl;
                if (zoo::json_string_member(response, "stop_reason") == "cancelled")
                    std::cerr << "  [stopped]\n";
            } catch (const zoo::Error &e) {
                // A failed turn leaves the conversation as it was: go on.
                generating = false;
                std::cout << std::endl;
                std::cerr << "error (" << e.status_name() << "): " << e.what() << "\n";
                exit_code = 1;
            }
        }
        return exit_code;
    } catch (const zoo::Error &e) {
        std::cerr << "\nerror (" << e.status_name() << "): " << e.what()
                  << "\n(run scripts/fetch-models)\n";
        return 1;
    }
}
