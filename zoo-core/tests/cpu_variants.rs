//! llama.cpp's CPU variants on SmolLM2-135M: the portable variant and every
//! variant this machine runs give the same greedy reply to a fixed prompt;
//! forcing one it cannot run (by `ZOO_CPU_VARIANT` or by the config key) is
//! an `invalid_config` error that names what is missing, and the process
//! then loads the best variant and chats as usual.
//!
//! A process runs one variant, so each variant runs in a child process: this
//! test program again, running only `child`, with `ZOO_CPU_VARIANT` set.

#![cfg(feature = "dynamic-backends")]

use std::path::PathBuf;
use std::process::Command;

use zoo_core::{
    backend_info, Agent, BackendInfo, ChatOptions, ChosenBy, Config, CpuVariant, ErrorCode, Model,
    ModelParams,
};

/// Set in a child: what it is to do.
const CHILD_TASK: &str = "ZOO_TEST_CPU_CHILD";
/// The prompt every variant answers.
const PROMPT: &str = "List the first five planets of the solar system.";
/// Greedy tokens compared between variants.
const TOKENS: u32 = 24;

fn smollm2_path() -> PathBuf {
    let dir = std::env::var_os("ZOO_MODELS_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../models"));
    let path = dir.join("SmolLM2-135M-Instruct.Q4_1.gguf");
    assert!(
        path.exists(),
        "{} is missing: run `scripts/fetch-models` first",
        path.display()
    );
    path
}

fn greedy_reply(model: Model) -> String {
    let config = Config::default()
        .temperature(0.0)
        .context_size(512)
        // One thread: the replies are compared token for token, and the
        // sums llama.cpp splits by thread differ with the thread count.
        .threads(1)
        .seed(7)
        .max_tokens(TOKENS);
    let agent = Agent::with_model(model, config).unwrap();
    agent.chat(PROMPT, ChatOptions::new()).wait().unwrap().text
}

/// What marks a child's answer lines (the test harness may print on the
/// same line before them).
const MARK: &str = "@@child@@ ";

/// Runs `task` in a child process with `ZOO_CPU_VARIANT=variant` and
/// `env`; returns the text after each `MARK` in its output.
fn in_child(task: &str, variant: Option<&str>, env: &[(&str, &str)]) -> Vec<String> {
    let mut command = Command::new(std::env::current_exe().unwrap());
    command
        .args(["--exact", "child", "--nocapture", "--test-threads=1"])
        .env(CHILD_TASK, task)
        .env_remove("ZOO_CPU_VARIANT")
        .envs(env.iter().copied());
    if let Some(variant) = variant {
        command.env("ZOO_CPU_VARIANT", variant);
    }
    let out = command.output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "child `{task}` ({variant:?}) failed: {}\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
        .lines()
        .filter_map(|l| l.split_once(MARK).map(|(_, answer)| answer.to_owned()))
        .collect()
}

/// What a child does (nothing when run as an ordinary test).
#[test]
fn child() {
    let Ok(task) = std::env::var(CHILD_TASK) else {
        return;
    };
    match task.as_str() {
        "reply" => {
            let model = Model::load(smollm2_path(), ModelParams::default()).unwrap();
            let info = backend_info().unwrap();
            println!("{MARK}{}", serde_json::to_string(&info).unwrap());
            println!(
                "{MARK}{}",
                serde_json::to_string(&greedy_reply(model)).unwrap()
            );
        }
        "load" => match Model::load(smollm2_path(), ModelParams::default()) {
            Ok(_) => println!("{MARK}loaded"),
            Err(e) => println!("{MARK}{} {}", e.code(), e),
        },
        "config_then_best" => {
            // Forcing through the config key what this machine cannot run
            // fails cleanly; the same process then loads the best variant.
            let lacking = std::env::var("ZOO_TEST_LACKING").unwrap();
            let params = ModelParams {
                cpu_variant: CpuVariant::from_name(&lacking),
                ..ModelParams::default()
            };
            let err = Model::load(smollm2_path(), params).unwrap_err();
            println!("{MARK}{} {}", err.code(), err);
            let model = Model::load(smollm2_path(), ModelParams::default()).unwrap();
            println!("{MARK}{}", backend_info().unwrap().cpu_variant);
            println!("{MARK}{}", !greedy_reply(model).is_empty());
        }
        other => panic!("unknown child task {other}"),
    }
}

fn reply_with(variant: &str) -> (BackendInfo, String) {
    let lines = in_child("reply", Some(variant), &[]);
    assert_eq!(lines.len(), 2, "{lines:?}");
    let info: BackendInfo = serde_json::from_str(&lines[0]).unwrap();
    let text: String = serde_json::from_str(&lines[1]).unwrap();
    (info, text)
}

/// The variant this process runs: the best (the tests run without
/// `ZOO_CPU_VARIANT`; the children get it).
fn best() -> BackendInfo {
    let info = backend_info().unwrap();
    if std::env::var_os("ZOO_CPU_VARIANT").is_none() {
        assert_eq!(info.chosen_by, ChosenBy::Best, "{info:?}");
    }
    info
}

#[test]
fn every_variant_this_machine_runs_gives_the_portable_reply() {
    let best = best();
    assert_eq!(best.usable[0], best.cpu_variant, "{best:?}");
    assert!(best.usable.contains(&"x64".to_string()), "{best:?}");
    let dir = best.directory.clone().unwrap();
    assert!(dir.ends_with("zoo-backends"), "{dir}");

    let (portable, expected) = reply_with("x64");
    assert_eq!(portable.cpu_variant, "x64");
    assert_eq!(portable.chosen_by, ChosenBy::Environment);
    assert!(!expected.is_empty());
    for variant in &best.usable {
        let (info, text) = reply_with(variant);
        assert_eq!(&info.cpu_variant, variant);
        assert_eq!(info.usable, best.usable);
        eprintln!("{variant:>12}: {:?} ({})", text, info.features.join(" "));
        assert_eq!(
            text, expected,
            "the `{variant}` variant's greedy reply differs from the portable variant's"
        );
    }
}

#[test]
fn forcing_a_variant_this_machine_cannot_run_is_a_config_error() {
    let best = best();
    let lines = in_child("load", Some("pentium"), &[]);
    assert!(lines[0].starts_with("invalid_config "), "{lines:?}");
    assert!(
        lines[0].contains("unknown CPU variant `pentium`"),
        "{lines:?}"
    );

    // The machines this runs on lack some variant's instructions (this AMD
    // EPYC with AVX-512 lacks alderlake's AVX-VNNI and sapphirerapids' AMX;
    // an AVX2 machine lacks every AVX-512 one). On a CPU and OS that grant
    // all of them, only the unit tests of cpu cover the refusal.
    let Some(refused) = best.refused.first() else {
        eprintln!("every CPU variant runs here; nothing to refuse: {best:?}");
        return;
    };
    let lines = in_child("load", Some(&refused.variant), &[]);
    assert_eq!(lines.len(), 1, "{lines:?}");
    let line = &lines[0];
    assert!(line.starts_with("invalid_config "), "{line}");
    assert!(line.contains("`ZOO_CPU_VARIANT`"), "{line}");
    assert!(
        line.contains(&format!(
            "`{}` cannot run here: {}",
            refused.variant, refused.reason
        )),
        "{line}"
    );

    let lines = in_child(
        "config_then_best",
        None,
        &[("ZOO_TEST_LACKING", &refused.variant)],
    );
    assert!(lines[0].starts_with("invalid_config "), "{lines:?}");
    assert!(lines[0].contains("`cpu_variant`"), "{lines:?}");
    assert_eq!(lines[1], best.cpu_variant);
    assert_eq!(lines[2], "true");
}

#[test]
fn a_process_runs_one_variant() {
    let best = best();
    let model = Model::load(smollm2_path(), ModelParams::default()).unwrap();
    drop(model);
    let other = best
        .usable
        .iter()
        .find(|v| **v != best.cpu_variant)
        .and_then(|v| CpuVariant::from_name(v))
        .unwrap();
    let params = ModelParams {
        cpu_variant: Some(other),
        ..ModelParams::default()
    };
    let err = Model::load(smollm2_path(), params).unwrap_err();
    assert_eq!(err.code(), ErrorCode::InvalidConfig);
    assert!(
        err.to_string().contains(&format!(
            "already runs llama.cpp's `{}` CPU variant",
            best.cpu_variant
        )),
        "{err}"
    );
    // Asking for the one it runs is fine.
    let same = ModelParams {
        cpu_variant: CpuVariant::from_name(&best.cpu_variant),
        ..ModelParams::default()
    };
    Model::load(smollm2_path(), same).unwrap();
}

#[test]
fn carried_variants_are_known() {
    // Every libggml-cpu-*.so in the folder is a variant zoo-core knows (a
    // llama.cpp update that adds one fails here, not silently).
    let info = backend_info().unwrap();
    let dir = PathBuf::from(info.directory.unwrap());
    let mut carried = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let name = entry.unwrap().file_name().to_string_lossy().into_owned();
        if let Some(variant) = name
            .strip_prefix("libggml-cpu-")
            .and_then(|n| n.strip_suffix(".so"))
        {
            assert!(CpuVariant::from_name(variant).is_some(), "{name}");
            carried += 1;
        }
    }
    // The build leaves sapphirerapids out when the C++ compiler drops the
    // stores of its AMX tile configuration (zoo-core/build.rs).
    let left_out = env!("ZOO_LEFT_OUT_CPU_VARIANTS");
    let left_out: Vec<&str> = left_out.split(',').filter(|n| !n.is_empty()).collect();
    assert!(
        left_out.iter().all(|n| *n == "sapphirerapids"),
        "{left_out:?}"
    );
    for name in &left_out {
        assert!(
            !dir.join(format!("libggml-cpu-{name}.so")).exists(),
            "{name}"
        );
    }
    assert_eq!(carried + left_out.len(), CpuVariant::ALL.len());
    assert_eq!(info.usable.len() + info.refused.len(), carried);
}
