// hello.cpp: the C++ wrapper against an installed libzoo (built by
// test_install.sh with CMake). Exits 0 on success.
#include <cstdio>
#include <string>

#include <zoo.hpp>

int main() {
    try {
        auto agent = zoo::Agent::mock(
            R"(["<tool_call>{\"name\":\"add\",\"arguments\":{\"a\":2,\"b\":3}}</tool_call>", "2 + 3 = 5"])");
        agent.register_tool("add", "Adds two integers",
                            R"({"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"integer"}}})",
                            [](const std::string &args) {
                                return args == R"({"a":2,"b":3})" ? "5" : "null";
                            });
        std::string text = agent.chat_text("What is 2 + 3?");
        std::printf("zoo.hpp on libzoo %s: %s\n", zoo::version(), text.c_str());
        return text == "2 + 3 = 5" ? 0 : 1;
    } catch (const zoo::Error &e) {
        std::fprintf(stderr, "zoo::Error %d: %s\n", e.code(), e.what());
        return 1;
    }
}
