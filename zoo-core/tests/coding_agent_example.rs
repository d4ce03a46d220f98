//! The coding-agent example (examples/coding-agent/coding_agent.rs),
//! compiled here as a module and driven on the mock: a scripted model runs
//! the failing test, reads the code, fixes it and runs the test again, with
//! each write and command confirmed on the example's "terminal" (a scripted
//! input); the example then runs the test itself and reports that it
//! passes. A second run, where nobody answers, changes nothing.

#[allow(dead_code)]
#[path = "../../examples/coding-agent/coding_agent.rs"]
mod coding_agent;

use std::io::{Cursor, Write};
use std::sync::{Arc, Mutex};

use serde_json::json;

/// What the example printed, shared with the test.
#[derive(Clone, Default)]
struct Printed(Arc<Mutex<Vec<u8>>>);

impl Write for Printed {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Printed {
    fn text(&self) -> String {
        String::from_utf8(self.0.lock().unwrap().clone()).unwrap()
    }
}

fn call(name: &str, arguments: serde_json::Value) -> String {
    format!(
        "<tool_call>{}</tool_call>",
        json!({"name": name, "arguments": arguments})
    )
}

/// The scripted model's fix: test, read, edit, test, answer.
fn script() -> serde_json::Value {
    let test = json!({"command": "python3 test_calc.py"});
    json!({"type": "mock", "replies": [
        call("bash", test.clone()),
        call("read_file", json!({"path": "calc.py"})),
        call("edit_file", json!({"path": "calc.py", "old_text": "return a - b", "new_text": "return a + b"})),
        call("bash", test),
        "Fixed: add subtracted instead of adding.",
    ]})
}

#[test]
fn the_example_fixes_the_project_on_the_mock_and_refuses_without_answers() {
    // The example reads its provider from the environment, as a user runs it.
    std::env::set_var("ZOO_PROVIDER", script().to_string());
    let printed = Printed::default();
    let config = coding_agent::config_from_env().unwrap();
    let fixed = coding_agent::run(config, Cursor::new("y\ny\ny\n"), printed.clone()).unwrap();
    let text = printed.text();
    assert!(fixed, "{text}");
    for part in [
        "> bash {\"command\":\"python3 test_calc.py\"}\n  allow bash {\"command\":\"python3 test_calc.py\"}? [y/N] y\n",
        "< exit code: 1\n  stderr:\n",
        "AssertionError: add(2, 3) returned -1, expected 5",
        "< edited calc.py at line 2\n",
        "< exit code: 0\n  stdout:\n  all tests passed\n",
        "The model said: Fixed: add subtracted instead of adding.\n[Stop] 4 tool calls",
        "calc.py is now:\ndef add(a, b):\n    return a + b\n",
        "python3 test_calc.py after the agent's work: passes\nall tests passed\n",
    ] {
        assert!(text.contains(part), "missing {part:?} in:\n{text}");
    }

    // Nobody at the terminal: every write and command is refused.
    let printed = Printed::default();
    let config = coding_agent::config_from_env().unwrap();
    let fixed = coding_agent::run(config, Cursor::new(""), printed.clone()).unwrap();
    let text = printed.text();
    assert!(!fixed, "{text}");
    assert!(
        text.contains(
            "(no answer: refused)\n< error: tool `bash` failed: the user refused this bash call"
        ),
        "{text}"
    );
    assert!(
        text.contains("after the agent's work: still fails"),
        "{text}"
    );
}
