//! Skills: SKILL.md folders loaded with later folders overriding, the list
//! in the system prompt (escaped), bodies read only on activation, and a
//! skill's allowed tools restricting what the model sees until deactivated.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::json;
use zoo_core::skills::Skills;
use zoo_core::{Agent, ChatOptions, Config, ErrorCode, MockBackend, MockReply, Role, Tool};

struct TempDir(PathBuf);

impl TempDir {
    fn new() -> Self {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, Ordering::SeqCst);
        let dir = std::env::temp_dir().join(format!("zoo-skills-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn skill(root: &Path, folder: &str, text: &str) {
    std::fs::create_dir_all(root.join(folder)).unwrap();
    std::fs::write(root.join(folder).join("SKILL.md"), text).unwrap();
}

fn two_folders() -> (TempDir, TempDir) {
    let (a, b) = (TempDir::new(), TempDir::new());
    skill(
        &a.0,
        "pdf",
        "---\nname: pdf\ndescription: Old PDF skill\n---\nOld body.\n",
    );
    skill(
        &a.0,
        "notes",
        "---\nname: notes\ndescription: Takes notes <fast> & well\nallowed-tools: echo\n---\n# Notes\nWrite short notes.\n",
    );
    skill(
        &b.0,
        "pdf",
        "---\nname: pdf\ndescription: Fills PDF forms\nallowed-tools: [read_file, echo]\n---\nUse the form fields.\n",
    );
    (a, b)
}

fn tool(name: &str) -> Tool {
    Tool::new(name, "test tool", json!({"type": "object"}), |_| {
        Ok(json!("ok"))
    })
    .unwrap()
}

#[test]
fn later_folders_override_and_bodies_load_on_demand() {
    let (a, b) = two_folders();
    let skills = Skills::load(&[&a.0, &b.0]).unwrap();
    let names: Vec<&str> = skills.list().iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["notes", "pdf"]);
    let pdf = skills.get("pdf").unwrap();
    assert_eq!(pdf.description, "Fills PDF forms");
    assert_eq!(
        pdf.allowed_tools.as_deref(),
        Some(&["read_file".to_owned(), "echo".to_owned()][..])
    );
    assert_eq!(
        skills.get("notes").unwrap().allowed_tools.as_deref(),
        Some(&["echo".to_owned()][..])
    );
    assert_eq!(skills.body("notes").unwrap(), "# Notes\nWrite short notes.");
    // The body is read when asked: a change on disk shows.
    skill(
        &b.0,
        "pdf",
        "---\nname: pdf\ndescription: Fills PDF forms\n---\nNew body.\n",
    );
    assert_eq!(skills.body("pdf").unwrap(), "New body.");
    let block = skills.prompt_block();
    assert!(
        block.contains("<description>Takes notes &lt;fast&gt; &amp; well</description>"),
        "{block}"
    );
    let err = skills.body("nope").unwrap_err();
    assert_eq!(err.code(), ErrorCode::InvalidArgument);
    assert!(
        err.to_string().contains("the skills are notes, pdf"),
        "{err}"
    );
}

#[test]
fn broken_skill_files_name_the_file() {
    for (text, wanted) in [
        ("no frontmatter here", "no YAML frontmatter"),
        ("---\nname: x\n---\n", "frontmatter"),
        (
            "---\nname: Bad Name\ndescription: d\n---\n",
            "lowercase letters",
        ),
        ("---\nname: ok\ndescription: \"\"\n---\n", "description"),
    ] {
        let dir = TempDir::new();
        skill(&dir.0, "s", text);
        let err = Skills::load(&[&dir.0]).unwrap_err();
        assert_eq!(err.code(), ErrorCode::InvalidConfig, "{text}");
        let message = err.to_string();
        assert!(
            message.contains("SKILL.md") && message.contains(wanted),
            "{message}"
        );
    }
    let err = Skills::load(&["/nonexistent/skills"]).unwrap_err();
    assert!(
        err.to_string()
            .starts_with("invalid config `skills`: cannot read `/nonexistent/skills`"),
        "{err}"
    );
}

#[test]
fn the_model_loads_a_skill_and_sees_only_its_tools_until_deactivated() {
    let (a, b) = two_folders();
    let config = Config::default()
        .system_prompt("Be brief.")
        .skills(vec![a.0.display().to_string(), b.0.display().to_string()]);
    let backend = MockBackend::with_script([
        MockReply::tool_call("load_skill", json!({"name": "notes"})),
        MockReply::text("Loaded."),
    ]);
    let agent = Agent::with_backend(backend, config).unwrap();
    agent.register_tool(tool("echo"));
    agent.register_tool(tool("read_file"));
    let system = &agent.history()[0];
    assert_eq!(system.role, Role::System);
    assert!(
        system.content.starts_with("Be brief.\n\n"),
        "{}",
        system.content
    );
    assert!(system.content.contains("<name>pdf</name>"));
    let names =
        |agent: &Agent| -> Vec<String> { agent.tools().into_iter().map(|t| t.name).collect() };
    assert_eq!(names(&agent), ["load_skill", "echo", "read_file"]);

    let response = agent
        .chat("take a note", ChatOptions::new())
        .wait()
        .unwrap();
    assert_eq!(response.text, "Loaded.");
    let result = response.tool_calls[0].result.clone().unwrap();
    assert_eq!(result["text"], "# Notes\nWrite short notes.");
    assert_eq!(result["details"]["skill"], "notes");
    assert_eq!(names(&agent), ["load_skill", "echo"]);
    agent.deactivate_skill();
    assert_eq!(names(&agent), ["load_skill", "echo", "read_file"]);
    assert_eq!(agent.activate_skill("pdf").unwrap(), "Use the form fields.");
    assert_eq!(names(&agent), ["load_skill", "echo", "read_file"]);
    assert_eq!(agent.skills().len(), 2);
}

#[test]
fn a_bad_skills_folder_fails_the_agent_with_invalid_config() {
    let config = Config::default().skills(vec!["/nonexistent/skills".into()]);
    let err = Agent::with_backend(MockBackend::new(), config).unwrap_err();
    assert_eq!(err.code(), ErrorCode::InvalidConfig);
}
