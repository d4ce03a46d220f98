//! Skills in the Agent Skills format: folders holding a `SKILL.md` whose
//! YAML frontmatter gives a `name`, a `description` and optionally the
//! `allowed-tools`. The list (names and descriptions) goes into the system
//! prompt; a skill's body is read only when it is activated, by the model
//! through the `load_skill` tool or by the host.

mod activation;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::error::{Error, Result};

pub use activation::{activate, deactivate, load_skill_tool, LOAD_SKILL};

/// The largest `SKILL.md` read: skills are instructions, not documents.
const MAX_SKILL_BYTES: u64 = 1 << 20;
/// The Agent Skills limits on a name and a description.
const MAX_NAME_CHARS: usize = 64;
const MAX_DESCRIPTION_CHARS: usize = 1024;

/// One skill: what the model is shown before it is loaded.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Skill {
    /// Lowercase letters, digits and hyphens; the folder's name.
    pub name: String,
    /// What the skill is for and when to use it.
    pub description: String,
    /// The tools the skill may use; activating it hides the others.
    pub allowed_tools: Option<Vec<String>>,
    /// The `SKILL.md` file.
    pub path: PathBuf,
}

/// The frontmatter as written.
#[derive(Deserialize)]
#[serde(rename_all = "kebab-case")]
struct Frontmatter {
    name: String,
    description: String,
    #[serde(default)]
    allowed_tools: Option<AllowedTools>,
}

/// `allowed-tools`: a list, or the spec's space-separated string.
#[derive(Deserialize)]
#[serde(untagged)]
enum AllowedTools {
    List(Vec<String>),
    Words(String),
}

/// The skills found in some folders, by name.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Skills {
    by_name: BTreeMap<String, Skill>,
}

impl Skills {
    /// Reads every `<dir>/<skill>/SKILL.md` of each folder in order; a skill
    /// in a later folder replaces one of the same name in an earlier one.
    ///
    /// # Errors
    /// [`Error::InvalidConfig`] (key `skills`) naming the file for a folder
    /// that cannot be read or a `SKILL.md` that breaks the format.
    pub fn load(dirs: &[impl AsRef<Path>]) -> Result<Skills> {
        let mut by_name = BTreeMap::new();
        for dir in dirs {
            let dir = dir.as_ref();
            let entries = std::fs::read_dir(dir).map_err(|e| {
                Error::config("skills", format!("cannot read `{}`: {e}", dir.display()))
            })?;
            let mut folders: Vec<PathBuf> = entries
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.join("SKILL.md").is_file())
                .collect();
            folders.sort();
            for folder in folders {
                let skill = read_skill(&folder.join("SKILL.md"))?;
                by_name.insert(skill.name.clone(), skill);
            }
        }
        Ok(Skills { by_name })
    }

    /// Every skill, by name.
    pub fn list(&self) -> Vec<&Skill> {
        self.by_name.values().collect()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.by_name.is_empty()
    }

    /// The skill of that name.
    pub fn get(&self, name: &str) -> Option<&Skill> {
        self.by_name.get(name)
    }

    /// A skill's instructions: its `SKILL.md` after the frontmatter, read now.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for an unknown name; [`Error::Io`] when the
    /// file cannot be read any more.
    pub fn body(&self, name: &str) -> Result<String> {
        let skill = self.get(name).ok_or_else(|| {
            let names: Vec<&str> = self.by_name.keys().map(String::as_str).collect();
            Error::InvalidArgument(format!(
                "no skill `{name}`; the skills are {}",
                names.join(", ")
            ))
        })?;
        let text = read_bounded(&skill.path)
            .map_err(|e| Error::Io(format!("`{}`: {e}", skill.path.display())))?;
        Ok(split_frontmatter(&text)
            .map_or(text.as_str(), |(_, body)| body)
            .trim()
            .to_owned())
    }

    /// The block the system prompt gets: each skill's name and description,
    /// escaped so a description cannot close the block.
    pub fn prompt_block(&self) -> String {
        let mut block = String::from(
            "You have skills: instructions for particular tasks. When a task matches a \
             skill's description, call load_skill with its name first and follow what it says.\n\
             <available_skills>\n",
        );
        for skill in self.by_name.values() {
            block.push_str(&format!(
                "<skill><name>{}</name><description>{}</description></skill>\n",
                escape(&skill.name),
                escape(&skill.description)
            ));
        }
        block.push_str("</available_skills>");
        block
    }
}

fn read_bounded(path: &Path) -> std::io::Result<String> {
    let size = std::fs::metadata(path)?.len();
    if size > MAX_SKILL_BYTES {
        return Err(std::io::Error::other(format!(
            "{size} bytes; a SKILL.md may have at most {MAX_SKILL_BYTES}"
        )));
    }
    std::fs::read_to_string(path)
}

/// The frontmatter (between the opening `---` line and the next) and the body.
fn split_frontmatter(text: &str) -> Option<(&str, &str)> {
    let rest = text
        .strip_prefix("---\n")
        .or_else(|| text.strip_prefix("---\r\n"))?;
    let end = rest.find("\n---")?;
    let after = &rest[end + 4..];
    let body = after.split_once('\n').map_or("", |(_, body)| body);
    Some((&rest[..end], body))
}

fn read_skill(path: &Path) -> Result<Skill> {
    let bad = |reason: String| Error::config("skills", format!("`{}`: {reason}", path.display()));
    let text = read_bounded(path).map_err(|e| bad(e.to_string()))?;
    let (yaml, _) = split_frontmatter(&text)
        .ok_or_else(|| bad("no YAML frontmatter (a `---` line, the fields, `---`)".into()))?;
    let front: Frontmatter =
        serde_yaml_ng::from_str(yaml).map_err(|e| bad(format!("frontmatter: {e}")))?;
    let valid_name = !front.name.is_empty()
        && front.name.chars().count() <= MAX_NAME_CHARS
        && front
            .name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
    if !valid_name {
        return Err(bad(format!(
            "name {:?} must be 1 to {MAX_NAME_CHARS} lowercase letters, digits and hyphens",
            front.name
        )));
    }
    let description = front.description.trim().to_owned();
    if description.is_empty() || description.chars().count() > MAX_DESCRIPTION_CHARS {
        return Err(bad(format!(
            "the description must have 1 to {MAX_DESCRIPTION_CHARS} characters"
        )));
    }
    let allowed_tools = front.allowed_tools.map(|tools| match tools {
        AllowedTools::List(list) => list,
        AllowedTools::Words(words) => words.split_whitespace().map(str::to_owned).collect(),
    });
    Ok(Skill {
        name: front.name,
        description,
        allowed_tools,
        path: path.to_path_buf(),
    })
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}
