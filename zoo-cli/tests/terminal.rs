//! `zoo chat` in a real terminal, driven the way a person uses it: tmux runs
//! a shell, the test types into it (`send-keys`) and reads the screen
//! (`capture-pane`). Every wait is for something to appear on the screen,
//! with a bound only a hang reaches.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// Longer than anything here takes on a busy machine; only a hang reaches it.
const BOUND: Duration = Duration::from_secs(120);
/// The shell's prompt, to know when it has the terminal again.
const SHELL_PROMPT: &str = "READY$ ";

/// A tmux server of the test's own (its own socket) with one pane.
struct Terminal {
    socket: String,
    home: PathBuf,
}

impl Terminal {
    /// A terminal whose shell runs in `home`; `name` keeps the tmux servers
    /// of tests running at once apart.
    fn start(home: &Path, name: &str) -> Terminal {
        let socket = format!("zoo-test-{}-{name}", std::process::id());
        let term = Terminal {
            socket,
            home: home.to_owned(),
        };
        let shell = "env -i PATH=/usr/bin:/bin TERM=xterm-256color bash --norc --noprofile";
        term.tmux(&["new-session", "-d", "-x", "150", "-y", "50", shell]);
        term.keys(&[
            &format!("export HOME={} PS1='{SHELL_PROMPT}'", home.display()),
            "Enter",
        ]);
        term.keys(&[&format!("cd {}", home.display()), "Enter"]);
        term.wait_for("the shell", |s| s.contains(SHELL_PROMPT));
        term
    }

    fn tmux(&self, args: &[&str]) -> String {
        let out = Command::new("tmux")
            .args(["-L", &self.socket])
            .args(args)
            .output()
            .expect("tmux is needed for this test (scripts/setup installs it)");
        assert!(
            out.status.success(),
            "tmux {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Types text literally, then the named keys (Enter, C-c, C-d).
    fn typed(&self, text: &str, then: &[&str]) {
        self.tmux(&["send-keys", "-l", text]);
        self.keys(then);
    }

    fn keys(&self, keys: &[&str]) {
        if !keys.is_empty() {
            self.tmux(&[&["send-keys", "-t", "0"][..], keys].concat());
        }
    }

    /// The screen and its scrollback, wrapped lines joined; with `-e`, the
    /// escape sequences (colors) too.
    fn screen(&self, escapes: bool) -> String {
        let mut args = vec!["capture-pane", "-p", "-J", "-S", "-"];
        if escapes {
            args.push("-e");
        }
        self.tmux(&args)
    }

    fn wait_for(&self, what: &str, seen: impl Fn(&str) -> bool) -> String {
        let start = Instant::now();
        loop {
            let screen = self.screen(false);
            if seen(&screen) {
                return screen;
            }
            assert!(
                start.elapsed() < BOUND,
                "waited {BOUND:?} for {what}; the screen:\n{screen}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn shell_pid(&self) -> u32 {
        self.tmux(&["display-message", "-p", "#{pane_pid}"])
            .trim()
            .parse()
            .unwrap()
    }
}

impl Drop for Terminal {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .args(["-L", &self.socket, "kill-server"])
            .status();
        let _ = std::fs::remove_dir_all(&self.home);
    }
}

/// The processes whose parent is `pid`.
fn children(pid: u32) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|e| std::fs::read_to_string(e.path().join("stat")).ok())
        .filter(|stat| {
            // pid (comm) state ppid ...: comm may hold spaces, so after ')'.
            let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
            rest.split_whitespace().nth(1) == Some(&pid.to_string())
        })
        .collect()
}

/// A fresh home folder for one test, with a workspace `ws` in it.
fn home(name: &str) -> PathBuf {
    let home = std::env::temp_dir().join(format!("zoo-terminal-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&home);
    std::fs::create_dir_all(home.join("ws")).unwrap();
    home
}

/// Words `w1 w2 ...`: a reply long enough that only Ctrl-C ends it.
fn long_reply(words: usize) -> String {
    (1..=words)
        .map(|n| format!("w{n}"))
        .collect::<Vec<_>>()
        .join(" ")
}

#[test]
fn a_person_chats_confirms_a_tool_stops_a_reply_and_leaves() {
    let home = home("chat");
    let config = format!(
        "[provider]\ntype = \"mock\"\npiece_delay_ms = 50\nreplies = [{}, \"Saved the note.\", \"{}\", \"Still here.\"]\n\n[builtin_tools]\ntools = [\"write_file\"]\nworkspace = \"{}\"\n",
        serde_json::to_string(
            r#"<tool_call>{"name": "write_file", "arguments": {"path": "note.txt", "content": "hi"}}</tool_call>"#
        )
        .unwrap(),
        long_reply(2000),
        home.join("ws").display()
    );
    std::fs::write(home.join("zoo.toml"), config).unwrap();
    let term = Terminal::start(&home, "chat");
    let zoo = env!("CARGO_BIN_EXE_zoo");
    term.typed(&format!("{zoo} chat --config zoo.toml"), &["Enter"]);
    term.wait_for("the banner", |s| s.contains("/help lists the commands"));

    // A slash command.
    term.typed("/tools", &["Enter"]);
    term.wait_for("the tool list", |s| s.contains("write_file  "));

    // A tool call asked about, allowed, shown with its result.
    term.typed("please save a note", &["Enter"]);
    term.wait_for("the question", |s| {
        s.contains("Allow write_file note.txt? [y]es [n]o [a]lways: ")
    });
    term.typed("y", &["Enter"]);
    let screen = term.wait_for("the answer", |s| s.contains("Saved the note."));
    assert!(
        screen.contains("[tool] write_file {\"path\":\"note.txt\",\"content\":\"hi\"}"),
        "{screen}"
    );
    assert!(screen.contains("[tool] write_file -> "), "{screen}");
    assert_eq!(
        std::fs::read_to_string(home.join("ws/note.txt")).unwrap(),
        "hi"
    );
    // Tool lines are dimmed on a terminal.
    assert!(
        term.screen(true).contains("\x1b[2m[tool] write_file"),
        "no colors on a terminal"
    );

    // A long reply streams; Ctrl-C stops it, not the program.
    term.typed("count to two thousand", &["Enter"]);
    term.wait_for("the reply streaming", |s| s.contains("w1 w2 w3 "));
    term.keys(&["C-c"]);
    let screen = term.wait_for("the stop", |s| s.contains("[stopped]"));
    assert!(
        !screen.contains("w2000"),
        "the reply ran to its end:\n{screen}"
    );

    // The agent goes on.
    term.typed("are you there?", &["Enter"]);
    term.wait_for("the next reply", |s| s.contains("Still here."));

    // Ctrl-D leaves, and nothing of zoo is left behind.
    let shell = term.shell_pid();
    assert!(
        !children(shell).is_empty(),
        "zoo is not running under the shell"
    );
    term.keys(&["C-d"]);
    term.wait_for("the shell's prompt", |s| {
        s.trim_end().ends_with(SHELL_PROMPT.trim_end())
    });
    let start = Instant::now();
    while !children(shell).is_empty() {
        assert!(
            start.elapsed() < BOUND,
            "left behind: {:?}",
            children(shell)
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A mock reply calling `write_file` on `path`.
fn writes(path: &str) -> String {
    let call = format!(
        r#"<tool_call>{{"name": "write_file", "arguments": {{"path": "{path}", "content": "hi"}}}}</tool_call>"#
    );
    serde_json::to_string(&call).unwrap()
}

#[test]
fn no_refuses_a_call_and_always_stops_asking_about_that_tool() {
    let home = home("answers");
    let config = format!(
        "[provider]\ntype = \"mock\"\nreplies = [{}, \"Not saved.\", {}, \"Saved b.\", {}, \"Saved c.\"]\n\n[builtin_tools]\ntools = [\"write_file\"]\nworkspace = \"{}\"\n",
        writes("a.txt"),
        writes("b.txt"),
        writes("c.txt"),
        home.join("ws").display()
    );
    std::fs::write(home.join("zoo.toml"), config).unwrap();
    let term = Terminal::start(&home, "answers");
    let zoo = env!("CARGO_BIN_EXE_zoo");
    term.typed(&format!("{zoo} chat --config zoo.toml"), &["Enter"]);
    term.wait_for("the banner", |s| s.contains("/help lists the commands"));

    // "n": the call is refused, the model reads why, nothing is written.
    term.typed("save a", &["Enter"]);
    term.wait_for("the first question", |s| {
        s.contains("Allow write_file a.txt? [y]es [n]o [a]lways: ")
    });
    term.typed("n", &["Enter"]);
    let screen = term.wait_for("the answer", |s| s.contains("Not saved."));
    assert!(
        screen.contains("[tool] write_file failed: ")
            && screen.contains("the user did not allow `write_file` to run"),
        "{screen}"
    );
    assert!(!home.join("ws/a.txt").exists());

    // "a": this call runs, and so does every later write_file, unasked.
    term.typed("save b", &["Enter"]);
    term.wait_for("the second question", |s| {
        s.contains("Allow write_file b.txt? [y]es [n]o [a]lways: ")
    });
    term.typed("a", &["Enter"]);
    term.wait_for("the answer", |s| s.contains("Saved b."));
    assert!(home.join("ws/b.txt").exists());
    term.typed("save c", &["Enter"]);
    let screen = term.wait_for("the answer", |s| s.contains("Saved c."));
    assert!(home.join("ws/c.txt").exists());
    assert!(!screen.contains("Allow write_file c.txt?"), "{screen}");
    assert_eq!(screen.matches("Allow write_file").count(), 2, "{screen}");

    term.typed("/quit", &["Enter"]);
    term.wait_for("the shell's prompt", |s| {
        s.trim_end().ends_with(SHELL_PROMPT.trim_end())
    });
}

#[test]
fn loading_a_real_model_shows_its_progress_then_what_was_loaded() {
    let model =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../models/SmolLM2-135M-Instruct.Q4_1.gguf");
    assert!(
        model.exists(),
        "{} is missing: run scripts/fetch-models",
        model.display()
    );
    let home = home("real_model_load");
    let term = Terminal::start(&home, "real_model_load");
    let zoo = env!("CARGO_BIN_EXE_zoo");
    term.typed(
        &format!("{zoo} chat --model {}", model.display()),
        &["Enter"],
    );
    // The bar (`loading PATH [...] N%`) gives way to a line that stays.
    let loaded = format!("loaded {} in ", model.display());
    let screen = term.wait_for("the loaded line", |s| s.contains(&loaded));
    let line = screen.lines().find(|l| l.contains(&loaded)).unwrap();
    assert!(line.trim_end().ends_with(" s"), "{line}");
    term.wait_for("the banner", |s| s.contains("/help lists the commands"));
    term.typed("/quit", &["Enter"]);
    term.wait_for("the shell's prompt", |s| {
        s.trim_end().ends_with(SHELL_PROMPT.trim_end())
    });
}
