//! The layers of zoo-core have no import circles: the top-level modules
//! (`config`, `provider`, `backend`, `engine`, `agent`, ...) form a graph
//! without cycles, so each one can be read with only what is below it.
//! The graph is read from the sources: every `crate::<module>` a module's
//! non-test code names (in `use` lines and paths alike, doc comments left
//! out, as a link in prose is not a dependency).

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::Path;

/// The top-level module a source file belongs to (`backend/llama/mod.rs`
/// is `backend`, `config.rs` is `config`).
fn module_of(relative: &Path) -> String {
    let first = relative.components().next().unwrap();
    let name = first.as_os_str().to_string_lossy();
    name.trim_end_matches(".rs").to_string()
}

/// The code of a source file without comments and without the items
/// under `#[cfg(test)]` (a `mod tests;` declaration, or a block whose
/// braces are counted to its end), wherever they stand in the file.
fn code_of(text: &str) -> String {
    let mut kept = Vec::new();
    let mut lines = text
        .lines()
        .filter(|line| !line.trim_start().starts_with("//"));
    while let Some(line) = lines.next() {
        if line.trim() != "#[cfg(test)]" {
            kept.push(line);
            continue;
        }
        // The item under the attribute: up to its `;` or its closing brace.
        let mut depth = 0i32;
        for item in lines.by_ref() {
            depth += item.matches('{').count() as i32 - item.matches('}').count() as i32;
            let trimmed = item.trim_end();
            if depth == 0 && (trimmed.ends_with(';') || trimmed.ends_with('}')) {
                break;
            }
        }
    }
    kept.join("\n")
}

/// The modules `code` names as `crate::<name>`, or in `use crate::{...}`.
fn named_modules(code: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    let ident = |s: &str| -> String {
        s.chars()
            .take_while(|c| c.is_ascii_lowercase() || *c == '_' || c.is_ascii_digit())
            .collect()
    };
    for (at, _) in code.match_indices("crate::") {
        let rest = &code[at + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            // `use crate::{a::X, b, c::{..}}`: the names at depth 0.
            let mut depth = 0;
            let mut start = 0;
            for (i, c) in group.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => {
                        names.insert(ident(group[start..i].trim()));
                        break;
                    }
                    '}' => depth -= 1,
                    ',' if depth == 0 => {
                        names.insert(ident(group[start..i].trim()));
                        start = i + 1;
                    }
                    _ => {}
                }
            }
        } else {
            names.insert(ident(rest));
        }
    }
    names.retain(|n| !n.is_empty());
    names
}

fn read_graph(dir: &Path, root: &Path, graph: &mut BTreeMap<String, BTreeSet<String>>) {
    for entry in fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            read_graph(&path, root, graph);
            continue;
        }
        let name = path.file_name().unwrap().to_string_lossy();
        // Test-only files (`tests.rs`, `family_tests.rs`) may use anything.
        if !name.ends_with(".rs") || name.ends_with("tests.rs") {
            continue;
        }
        let module = module_of(path.strip_prefix(root).unwrap());
        let code = code_of(&fs::read_to_string(&path).unwrap());
        let entry = graph.entry(module.clone()).or_default();
        entry.extend(named_modules(&code).into_iter().filter(|m| *m != module));
    }
}

/// A cycle through `from`, if there is one, as the modules in order.
fn cycle_from(graph: &BTreeMap<String, BTreeSet<String>>, from: &str) -> Option<Vec<String>> {
    fn walk(
        graph: &BTreeMap<String, BTreeSet<String>>,
        at: &str,
        target: &str,
        path: &mut Vec<String>,
        seen: &mut BTreeSet<String>,
    ) -> bool {
        for next in graph.get(at).into_iter().flatten() {
            if next == target {
                return true;
            }
            if seen.insert(next.clone()) {
                path.push(next.clone());
                if walk(graph, next, target, path, seen) {
                    return true;
                }
                path.pop();
            }
        }
        false
    }
    let mut path = vec![from.to_string()];
    let mut seen = BTreeSet::new();
    walk(graph, from, from, &mut path, &mut seen).then_some(path)
}

#[test]
fn the_top_level_modules_have_no_import_circles() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut graph = BTreeMap::new();
    read_graph(&root, &root, &mut graph);
    for layer in ["config", "provider", "backend", "engine", "agent", "tools"] {
        assert!(graph.contains_key(layer), "no module `{layer}` was read");
    }
    let cycles: Vec<String> = graph
        .keys()
        .filter_map(|module| cycle_from(&graph, module))
        .map(|cycle| format!("{} -> {}", cycle.join(" -> "), cycle[0]))
        .collect();
    assert!(cycles.is_empty(), "import circles:\n{}", cycles.join("\n"));
}

#[test]
fn the_reader_finds_names_in_paths_and_groups() {
    let code = "use crate::a::X;\nuse crate::{b, c::{D, E}, d::F};\nfn f() { crate::e::g() }";
    let names: Vec<_> = named_modules(code).into_iter().collect();
    assert_eq!(names, ["a", "b", "c", "d", "e"]);
    let code =
        code_of("use crate::a;\n/// [`crate::z`]\n#[cfg(test)]\nmod tests { use crate::y; }");
    assert_eq!(named_modules(&code).into_iter().collect::<Vec<_>>(), ["a"]);
    // A test module declared at the top hides nothing after it.
    let code = code_of(
        "#[cfg(test)]\nmod tests;\nuse crate::b;\n#[cfg(test)]\nmod more {\n    fn f() {\n        crate::y::g();\n    }\n}\nuse crate::c;",
    );
    assert_eq!(
        named_modules(&code).into_iter().collect::<Vec<_>>(),
        ["b", "c"]
    );
}
