//! Config and model-parameter errors: every one is `InvalidConfig` naming
//! the key and the rule it breaks, in the same words whether the JSON came
//! from C, Python or Node or the config was built in Rust. The same cases
//! run through each front door (tests/c/test_errors.c,
//! tests/python/test_config_errors.py, tests/node/config.test.mjs).

use zoo_core::{Agent, Config, Error, ErrorCode, MockBackend};

/// `(config JSON, the exact message)` for the cases every front door checks.
const CASES: &[(&str, &str)] = &[
    (
        r#"{"temperature": "hot"}"#,
        r#"invalid config `temperature`: expected a finite number >= 0 (0 is greedy), got "hot""#,
    ),
    (
        r#"{"context_size": -1}"#,
        "invalid config `context_size`: expected 0 (the model's trained context) or a whole \
         number from 64 to 4294967295, got -1",
    ),
    (
        r#"{"context_size": 4294967296}"#,
        "invalid config `context_size`: expected 0 (the model's trained context) or a whole \
         number from 64 to 4294967295, got 4294967296",
    ),
    (
        r#"{"threads": 2.5}"#,
        "invalid config `threads`: expected a whole number from 0 to 1024 (0 follows the free cores), \
         got 2.5",
    ),
    (
        r#"{"gpu_layers": -2}"#,
        "invalid config `gpu_layers`: expected a whole number from -1 to 2147483647 (-1 offloads \
         every layer), got -2",
    ),
    (
        r#"{"top_p": 0}"#,
        "invalid config `top_p`: expected a number greater than 0 and at most 1, got 0",
    ),
    (
        r#"{"temperature": NaN}"#,
        "invalid config `temperature`: expected a finite number >= 0 (0 is greedy), got NaN",
    ),
    (
        r#"{"repeat_penalty": Infinity}"#,
        "invalid config `repeat_penalty`: expected a finite number > 0 (1 disables it), got \
         Infinity",
    ),
    (
        r#"{"max_tokens": 0}"#,
        "invalid config `max_tokens`: expected null (no limit) or a whole number from 1 to \
         4294967295, got 0",
    ),
    (
        r#"{"stop": ["ok", ""]}"#,
        r#"invalid config `stop[1]`: expected a non-empty string, got """#,
    ),
    (
        r#"{"model_path": 5}"#,
        "invalid config `model_path`: expected a non-empty string or null, got 5",
    ),
    (
        "[1]",
        r#"invalid config `config`: expected a JSON object such as {"model_path": "model.gguf"}, got an array"#,
    ),
    (
        r#"{"session": "kitchen"}"#,
        "invalid config `session`: needs a `session_store`, the file the session is kept in",
    ),
    (
        "null",
        r#"invalid config `config`: expected a JSON object such as {"model_path": "model.gguf"}, got null"#,
    ),
];

/// The start of the message for an unknown key (the list of keys follows).
const UNKNOWN_KEY: &str =
    "invalid config `temprature`: unknown key; the config keys are `model_path`, `context_size`, ";

#[test]
fn every_config_error_names_the_key_and_the_rule() {
    for (json, message) in CASES {
        let err = Config::from_json(json).unwrap_err();
        assert_eq!(err.code(), ErrorCode::InvalidConfig, "{json}: {err}");
        assert_eq!(err.to_string(), *message, "{json}");
    }
    let err = Config::from_json(r#"{"temprature": 0.5}"#).unwrap_err();
    assert!(err.to_string().starts_with(UNKNOWN_KEY), "{err}");
    assert!(err.to_string().ends_with("`builtin_tools`"), "{err}");
}

#[test]
fn more_config_errors_name_the_key() {
    for (json, key) in [
        (r#"{"seed": "x"}"#, "seed"),
        (r#"{"seed": -1}"#, "seed"),
        (r#"{"top_k": true}"#, "top_k"),
        (r#"{"temperature": 1e39}"#, "temperature"),
        (r#"{"min_p": -Infinity}"#, "min_p"),
        (r#"{"stop": "END"}"#, "stop"),
        (r#"{"stop": ["a", NaN]}"#, "stop[1]"),
        (r#"{"system_prompt": ["a"]}"#, "system_prompt"),
        (r#"{"template": 3}"#, "template"),
        (r#"{"template": "chatm"}"#, "template"),
        (r#"{"tool_choice": {}}"#, "tool_choice"),
        (r#"{"tool_choice": "no such tool!"}"#, "tool_choice"),
        (r#"{"max_tool_retries": 101}"#, "max_tool_retries"),
        (r#"{"max_tool_iterations": 0}"#, "max_tool_iterations"),
        (r#"{"batch_size": 0}"#, "batch_size"),
        (r#"{"temperature": 0.5, "temperature": 0.6}"#, "temperature"),
        (r#"{"nope": NaN}"#, "nope"),
        ("42", "config"),
        (r#""text""#, "config"),
        ("NaN", "config"),
    ] {
        let err = Config::from_json(json).unwrap_err();
        assert!(
            matches!(&err, Error::InvalidConfig { key: k, .. } if k == key),
            "{json}: {err}"
        );
        // The message never nests a second "invalid config".
        assert_eq!(
            err.to_string().matches("invalid config").count(),
            1,
            "{err}"
        );
    }
    // Text that is not JSON at all is a JSON error.
    for json in ["", "{", r#"{"temperature": 0.5"#, "{} []"] {
        let err = Config::from_json(json).unwrap_err();
        assert_eq!(err.code(), ErrorCode::InvalidJson, "{json}: {err}");
    }
    // Good values in every form still parse.
    let config = Config::from_json(
        r#"{"seed": null, "max_tokens": null, "context_size": 0, "gpu_layers": -1,
            "top_p": 1, "temperature": 0, "stop": [], "model_path": null}"#,
    )
    .unwrap();
    assert_eq!(config.gpu_layers, -1);
    assert_eq!(config.context_size, 0);
}

/// A config built in Rust is checked in the same words as its JSON form.
#[test]
fn rust_configs_are_checked_in_the_same_words() {
    let cases = [
        (Config::default().temperature(f32::NAN), CASES[6].1),
        (Config::default().gpu_layers(-2), CASES[4].1),
        (Config::default().top_p(0.0), CASES[5].1),
        (Config::default().repeat_penalty(f32::INFINITY), CASES[7].1),
        (
            Config::default().stop(vec!["ok".into(), String::new()]),
            CASES[9].1,
        ),
    ];
    for (config, message) in cases {
        let err = config.validate().unwrap_err();
        assert_eq!(err.to_string(), message);
        let err = Agent::with_backend(MockBackend::new(), config).unwrap_err();
        assert_eq!(err.to_string(), message);
    }
    // f32 values are shown as written, not widened.
    let err = Config::default().temperature(-0.7).validate().unwrap_err();
    assert_eq!(
        err.to_string(),
        "invalid config `temperature`: expected a finite number >= 0 (0 is greedy), got -0.7"
    );
}

/// The model parameters (`zoo_model_load`, `Model(...)` in Python,
/// `Model.load` in Node) are read by the same rules.
#[cfg(feature = "llama")]
#[test]
fn model_params_errors_name_the_key() {
    use zoo_core::ModelParams;

    let err = ModelParams::from_json("[0, true]").unwrap_err();
    assert_eq!(
        err.to_string(),
        r#"invalid config `model_params`: expected a JSON object such as {"gpu_layers": 0, "use_mmap": true}, got an array"#
    );
    let err = ModelParams::from_json(r#"{"gpu_layers": -2}"#).unwrap_err();
    assert_eq!(err.to_string(), CASES[4].1);
    let err = ModelParams::from_json(r#"{"use_mmap": 1}"#).unwrap_err();
    assert_eq!(
        err.to_string(),
        "invalid config `use_mmap`: expected true or false, got 1"
    );
    let err = ModelParams::from_json(r#"{"gpu_layer": 1}"#).unwrap_err();
    assert_eq!(
        err.to_string(),
        "invalid config `gpu_layer`: unknown key; the model_params keys are `gpu_layers`, \
         `use_mmap`, `cpu_variant`"
    );
    let err = ModelParams::from_json(r#"{"gpu_layers": NaN}"#).unwrap_err();
    assert!(
        matches!(&err, Error::InvalidConfig { key, .. } if key == "gpu_layers"),
        "{err}"
    );
    let err = ModelParams::from_json("{").unwrap_err();
    assert_eq!(err.code(), ErrorCode::InvalidJson);

    let params = ModelParams::from_json(r#"{"gpu_layers": -1, "use_mmap": false}"#).unwrap();
    assert_eq!((params.gpu_layers, params.use_mmap), (-1, false));
    assert_eq!(
        ModelParams::from_json("{}").unwrap(),
        ModelParams::default()
    );

    // Built in Rust: the same check, before the file is opened.
    let bad = ModelParams {
        gpu_layers: -5,
        ..ModelParams::default()
    };
    let err = bad.validate().unwrap_err();
    assert!(
        matches!(&err, Error::InvalidConfig { key, .. } if key == "gpu_layers"),
        "{err}"
    );
    let err = zoo_core::Model::load("/nonexistent/model.gguf", bad).unwrap_err();
    assert!(
        matches!(&err, Error::InvalidConfig { key, .. } if key == "gpu_layers"),
        "{err}"
    );
}
