//! The built-in list_files and search: ignored folders and .gitignore, the
//! caps and their notes, glob and include filters, regex errors, case, and
//! paths or links that lead out of the workspace.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::{json, Value};
use zoo_core::tools::builtin::{builtin_tools, BuiltinOptions};

struct TempDir(PathBuf);

impl TempDir {
    fn new() -> Self {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, Ordering::SeqCst);
        let dir = std::env::temp_dir().join(format!("zoo-bs-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir.canonicalize().unwrap())
    }

    fn write(&self, path: &str, text: &str) {
        let file = self.0.join(path);
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(file, text).unwrap();
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn run(dir: &Path, name: &str, args: Value) -> Result<Value, String> {
    let options = BuiltinOptions {
        workspace: dir.to_path_buf(),
        confirm: None,
        bash_deny: Vec::new(),
    };
    let tool = builtin_tools(&[name], &options).unwrap().remove(0);
    tool.call(args)
}

fn project() -> TempDir {
    let dir = TempDir::new();
    dir.write("src/main.rs", "fn main() {\n    println!(\"Hello\");\n}\n");
    dir.write(
        "src/lib.rs",
        "pub fn hello() -> &'static str { \"hello\" }\n",
    );
    dir.write("README.md", "# Hello project\n");
    dir.write("target/debug/build.rs", "fn hello() {}\n");
    dir.write("node_modules/x/index.js", "hello\n");
    dir.write(".git/config", "hello\n");
    dir.write("secret.log", "hello from a log\n");
    dir.write(".gitignore", "*.log\n");
    dir.write("data.bin", "hello\0binary");
    dir
}

#[test]
fn list_files_skips_ignored_folders_and_gitignored_files() {
    let dir = project();
    let out = run(&dir.0, "list_files", json!({})).unwrap();
    let text = out["text"].as_str().unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines,
        [
            ".gitignore",
            "README.md",
            "data.bin",
            "src/",
            "src/lib.rs",
            "src/main.rs"
        ]
    );
    let rs = run(&dir.0, "list_files", json!({"pattern": "*.rs"})).unwrap();
    assert_eq!(rs["text"], "src/lib.rs\nsrc/main.rs");
    let shallow = run(&dir.0, "list_files", json!({"path": "src", "depth": 1})).unwrap();
    assert_eq!(shallow["details"]["count"], 2);
}

#[test]
fn list_files_caps_at_200_with_a_note() {
    let dir = TempDir::new();
    for n in 0..250 {
        dir.write(&format!("f{n:03}.txt"), "x");
    }
    let out = run(&dir.0, "list_files", json!({})).unwrap();
    assert_eq!(out["details"]["count"], 200);
    assert_eq!(out["details"]["more"], 50);
    assert!(out["text"]
        .as_str()
        .unwrap()
        .ends_with("[50 more not shown; narrow the path or pattern]"));
}

#[test]
fn search_finds_lines_with_ripgreps_rules() {
    let dir = project();
    let out = run(&dir.0, "search", json!({"pattern": "hello"})).unwrap();
    assert_eq!(
        out["text"],
        "src/lib.rs:1: pub fn hello() -> &'static str { \"hello\" }"
    );
    let any_case = run(
        &dir.0,
        "search",
        json!({"pattern": "hello", "case_sensitive": false}),
    )
    .unwrap();
    // One line each in README.md, src/lib.rs and src/main.rs; the log is
    // ignored and the binary file skipped.
    assert_eq!(any_case["details"]["matches"], 3, "{}", any_case["text"]);
    let md = run(
        &dir.0,
        "search",
        json!({"pattern": "(?i)hello", "include": "*.md"}),
    )
    .unwrap();
    assert_eq!(md["text"], "README.md:1: # Hello project");
    let err = run(&dir.0, "search", json!({"pattern": "fn (("})).unwrap_err();
    assert!(err.starts_with("invalid regular expression"), "{err}");
}

#[test]
fn search_caps_matches_with_a_note() {
    let dir = TempDir::new();
    dir.write("big.txt", &"needle\n".repeat(150));
    let out = run(&dir.0, "search", json!({"pattern": "needle"})).unwrap();
    assert_eq!(out["details"]["matches"], 150);
    let text = out["text"].as_str().unwrap();
    assert_eq!(text.lines().count(), 101);
    assert!(text.ends_with("[50 more matches not shown; narrow the pattern, path or include]"));
}

#[test]
fn paths_and_links_out_of_the_workspace_are_refused() {
    let dir = project();
    let outside = TempDir::new();
    outside.write("private.txt", "hello secret\n");
    std::os::unix::fs::symlink(&outside.0, dir.0.join("link")).unwrap();
    let err = run(&dir.0, "list_files", json!({"path": "../"})).unwrap_err();
    assert!(err.contains("outside"), "{err}");
    let err = run(&dir.0, "search", json!({"pattern": "x", "path": "/etc"})).unwrap_err();
    assert!(err.contains("outside"), "{err}");
    let err = run(&dir.0, "list_files", json!({"path": "link"})).unwrap_err();
    assert!(err.contains("outside"), "{err}");
    // The link is listed but not followed: its target's files never show.
    let out = run(&dir.0, "search", json!({"pattern": "secret"})).unwrap();
    assert_eq!(out["text"], "No matches.");
    let listed = run(&dir.0, "list_files", json!({})).unwrap();
    assert!(!listed["text"].as_str().unwrap().contains("private.txt"));
}

#[test]
fn config_builtin_tools_registers_them_on_the_workspace() {
    use zoo_core::{Agent, ChatOptions, Config, MockBackend, MockReply};
    let dir = project();
    let config = Config::from_json(&format!(
        r#"{{"builtin_tools": {{"tools": ["list_files", "search"], "workspace": "{}"}}}}"#,
        dir.0.display()
    ))
    .unwrap();
    let backend = MockBackend::with_script([
        MockReply::tool_call("search", json!({"pattern": "Hello"})),
        MockReply::text("Found it."),
    ]);
    let agent = Agent::with_backend(backend, config).unwrap();
    let names: Vec<String> = agent.tools().into_iter().map(|t| t.name).collect();
    assert_eq!(names, ["list_files", "search"]);
    let response = agent
        .chat("where is Hello?", ChatOptions::new())
        .wait()
        .unwrap();
    let result = response.tool_calls[0].result.clone().unwrap();
    assert!(
        result["text"].as_str().unwrap().starts_with("README.md:1:"),
        "{result}"
    );
    let err = Config::from_json(r#"{"builtin_tools": {"tools": ["read_file"]}}"#).unwrap_err();
    assert_eq!(
        err.to_string(),
        "invalid config `builtin_tools.workspace`: is required"
    );
    let config = Config::from_json(
        r#"{"builtin_tools": {"tools": ["read_file"], "workspace": "/nonexistent/ws"}}"#,
    )
    .unwrap();
    let err = Agent::with_backend(MockBackend::new(), config).unwrap_err();
    assert!(
        err.to_string()
            .starts_with("invalid config `builtin_tools.workspace`"),
        "{err}"
    );
}

/// A tree of `folders` folders of `files` small files each, every file
/// holding a match for `needle`.
fn big_tree(folders: usize, files: usize) -> TempDir {
    let dir = TempDir::new();
    for d in 0..folders {
        let folder = dir.0.join(format!("d{d:03}"));
        std::fs::create_dir(&folder).unwrap();
        for f in 0..files {
            std::fs::write(folder.join(format!("f{f:03}.txt")), "needle\n").unwrap();
        }
    }
    dir
}

#[test]
fn a_walk_ends_at_the_entry_after_its_call_is_cancelled() {
    use zoo_core::tools::builtin::walk::{walk, Cut};
    use zoo_core::CancelToken;
    let dir = big_tree(40, 50);
    let token = CancelToken::new();
    let mut seen = 0usize;
    // The stop comes from inside the walk (as the chat's stop would, from
    // another thread, between two entries): the next entry ends it.
    let cut = walk(&dir.0, &dir.0, None, &token, |_, _| {
        seen += 1;
        if seen == 100 {
            token.cancel();
        }
        true
    });
    assert_eq!(cut, Some(Cut::Stopped));
    assert_eq!(seen, 100, "the walk went on after the stop");
    // Uncancelled, the same walk sees all 40 folders and 2000 files.
    let mut all = 0usize;
    let cut = walk(&dir.0, &dir.0, None, &CancelToken::new(), |_, _| {
        all += 1;
        true
    });
    assert_eq!((cut, all), (None, 2040));
}

#[test]
fn a_walk_ends_once_its_time_bound_has_passed() {
    use std::time::{Duration, Instant};
    use zoo_core::tools::builtin::walk::{walk_within, Cut};
    use zoo_core::CancelToken;
    let dir = big_tree(40, 50);
    let limit = Duration::from_millis(200);
    let mut seen = 0usize;
    let cut = walk_within(&dir.0, &dir.0, None, &CancelToken::new(), limit, |_, _| {
        seen += 1;
        if seen == 100 {
            // The walk started before this entry, so once `limit` has
            // passed from here it has passed for the walk too.
            let now = Instant::now();
            while now.elapsed() <= limit {
                std::thread::sleep(limit);
            }
        }
        true
    });
    assert_eq!(cut, Some(Cut::Time));
    // A busy machine may reach the bound earlier, never later.
    assert!(seen <= 100, "the walk went on past its time bound: {seen}");
}

#[test]
fn list_files_and_search_stop_with_their_calls_cancel_token() {
    use zoo_core::{CancelToken, ToolContext};
    let dir = big_tree(40, 50);
    let options = BuiltinOptions {
        workspace: dir.0.clone(),
        confirm: None,
        bash_deny: Vec::new(),
    };
    let tools = builtin_tools(&["list_files", "search"], &options).unwrap();
    let cases = [
        (&tools[0], json!({"depth": 5})),
        (&tools[1], json!({"pattern": "needle"})),
    ];
    for (tool, args) in cases {
        // Not stopped: everything is found (the caps say how much more).
        let live = ToolContext::detached("call_1", tool.name(), CancelToken::new());
        let full = tool.call_with(args.clone(), &live).unwrap();
        let text = full["text"].as_str().unwrap();
        assert!(!text.contains("[stopped"), "{text}");
        // The chat was stopped: the walk ends at once, says so, and what
        // it found is counted as nothing.
        let token = CancelToken::new();
        token.cancel();
        let stopped = ToolContext::detached("call_2", tool.name(), token);
        let out = tool.call_with(args, &stopped).unwrap();
        let text = out["text"].as_str().unwrap();
        assert!(
            text.ends_with("[stopped: the call was cancelled]"),
            "{}: {text}",
            tool.name()
        );
        assert!(!text.contains("d000/f000.txt"), "{text}");
    }
    assert_eq!(
        tools[1]
            .call_with(
                json!({"pattern": "needle"}),
                &ToolContext::detached("call_3", "search", CancelToken::new())
            )
            .unwrap()["details"]["matches"],
        2000
    );
}
