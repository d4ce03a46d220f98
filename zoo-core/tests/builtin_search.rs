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
