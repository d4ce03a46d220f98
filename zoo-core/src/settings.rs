//! Reading JSON settings objects (the config, the model parameters, a
//! provider's keys) with typed errors that name the key and the rule it
//! broke, in the same words in every front door.

use serde::de::{IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer};
use serde_json::{Map, Value as Json};

use crate::cpu::CpuVariant;
use crate::error::{Error, Result};

/// `gpu_layers`, shared by the config and the model parameters.
pub(crate) const GPU_LAYERS: Rule = Rule::whole(-1, i32::MAX as i64, " (-1 offloads every layer)");

/// `cpu_variant`, shared by the config and the model parameters.
pub(crate) const CPU_VARIANT: Rule = Rule::Custom {
    expected: CPU_VARIANT_EXPECTED,
    check: check_cpu_variant,
};

const CPU_VARIANT_EXPECTED: &str = "null (the best this machine allows) or a CPU variant's name";

/// Checks `cpu_variant`: null or one of llama.cpp's variants.
fn check_cpu_variant(key: &str, value: &Json) -> Result<()> {
    match value {
        Json::Null => Ok(()),
        Json::String(name) if CpuVariant::from_name(name).is_some() => Ok(()),
        Json::String(name) => Err(crate::cpu::unknown_variant(key, name)),
        other => Err(Error::config(
            key,
            format!("expected {CPU_VARIANT_EXPECTED}, got {}", describe(other)),
        )),
    }
}

/// The keys of a JSON settings object (the config, the model parameters)
/// and the rule each value must follow.
pub(crate) struct Settings {
    /// What the object is, as errors about the whole object name it.
    pub(crate) name: &'static str,
    /// A small valid object, shown when the JSON is not an object.
    pub(crate) example: &'static str,
    /// Every key, in the order errors list them.
    pub(crate) keys: &'static [(&'static str, Rule)],
}

impl Settings {
    /// The rule of a key the settings' own type serializes (a key without
    /// one is a bug, which `rules_read_as_written` catches).
    pub(crate) fn rule(&self, key: &str) -> Result<&Rule> {
        self.find(key).ok_or_else(|| {
            Error::Internal(format!("`{key}` has no rule in the {} settings", self.name))
        })
    }

    fn find(&self, key: &str) -> Option<&Rule> {
        self.keys
            .iter()
            .find(|(k, _)| *k == key)
            .map(|(_, rule)| rule)
    }

    /// Checks the object at `path` (a key holding nested settings, such as
    /// `provider`): every key must be one of these and follow its rule;
    /// errors name the key by its whole path (`provider.piece_delay_ms`).
    pub(crate) fn check_nested(&self, path: &str, object: &Map<String, Json>) -> Result<()> {
        for (key, value) in object {
            let at = format!("{path}.{key}");
            let Some(rule) = self.find(key) else {
                return Err(self.unknown(&at));
            };
            rule.check(&at, Given::Json(value))?;
        }
        Ok(())
    }

    fn unknown(&self, key: &str) -> Error {
        // Backquoted, so that Node can show them in camelCase.
        let names: Vec<String> = self.keys.iter().map(|(k, _)| format!("`{k}`")).collect();
        Error::config(
            key,
            format!(
                "unknown key; the {} keys are {}",
                self.name,
                names.join(", ")
            ),
        )
    }

    fn not_an_object(&self, got: &str) -> Error {
        Error::config(
            self.name,
            format!("expected a JSON object such as {}, got {got}", self.example),
        )
    }
}

/// What a settings value must be.
#[derive(Clone, Copy)]
pub(crate) enum Rule {
    /// A whole number from `min` to `max`; `zero` also allows 0 (meaning
    /// that), `null` allows null (meaning that).
    Whole {
        min: i64,
        max: i64,
        zero: Option<&'static str>,
        null: Option<&'static str>,
        note: &'static str,
    },
    /// A number that fits an f32, above `min` (`min_open`) or from it, and
    /// at most `max`.
    Number {
        min: f64,
        min_open: bool,
        max: Option<f64>,
        note: &'static str,
    },
    /// `true` or `false`.
    Bool,
    /// A string, maybe null, maybe required to be non-empty.
    Text { null: bool, non_empty: bool },
    /// An array of non-empty strings.
    Texts,
    /// A string that `parse` accepts (its error names the key itself).
    Choice {
        expected: &'static str,
        parse: fn(&str) -> Result<()>,
    },
    /// Any JSON that `check` accepts, given the key's path and the value
    /// (its error names the key, or a key inside it, itself): nested
    /// settings such as `provider`.
    Custom {
        expected: &'static str,
        check: fn(&str, &Json) -> Result<()>,
    },
}

/// A value to check: JSON, or a number JSON cannot hold (`NaN`, `Infinity`).
#[derive(Clone, Copy)]
pub(crate) enum Given<'a> {
    Json(&'a Json),
    NonFinite(f64),
}

impl Rule {
    /// A whole number from `min` to `max`, with a note on special values.
    pub(crate) const fn whole(min: i64, max: i64, note: &'static str) -> Rule {
        Rule::Whole {
            min,
            max,
            zero: None,
            null: None,
            note,
        }
    }

    /// The rule in words, as it follows "expected".
    pub(crate) fn expected(&self) -> String {
        match *self {
            Rule::Whole {
                min,
                max,
                zero,
                null,
                note,
            } => {
                let mut text = String::new();
                if let Some(meaning) = null {
                    text.push_str(&format!("null ({meaning}) or "));
                }
                if let Some(meaning) = zero {
                    text.push_str(&format!("0 ({meaning}) or "));
                }
                text + &format!("a whole number from {min} to {max}{note}")
            }
            Rule::Number {
                min,
                min_open,
                max,
                note,
            } => match (max, min_open) {
                (None, false) => format!("a finite number >= {min}{note}"),
                (None, true) => format!("a finite number > {min}{note}"),
                (Some(max), false) => format!("a number from {min} to {max}{note}"),
                (Some(max), true) => format!("a number greater than {min} and at most {max}{note}"),
            },
            Rule::Bool => "true or false".into(),
            Rule::Text { null, non_empty } => {
                let text = if non_empty {
                    "a non-empty string"
                } else {
                    "a string"
                };
                if null {
                    format!("{text} or null")
                } else {
                    text.into()
                }
            }
            Rule::Texts => "an array of non-empty strings".into(),
            Rule::Choice { expected, .. } => format!("a string: {expected}"),
            Rule::Custom { expected, .. } => expected.into(),
        }
    }

    fn broken(&self, key: &str, got: &str) -> Error {
        Error::config(key, format!("expected {}, got {got}", self.expected()))
    }

    /// Checks an f32 setting as a Rust caller set it.
    pub(crate) fn check_f32(&self, key: &str, value: f32) -> Result<()> {
        if !value.is_finite() {
            return self.check(key, Given::NonFinite(f64::from(value)));
        }
        // The shortest decimal that reads back as this f32 (`0.7`, not
        // `0.699999988079071`), and a whole one as an integer (`0`, not
        // `0.0`), as a caller would write it.
        let shown: f64 = value.to_string().parse().unwrap_or(f64::from(value));
        let json = if shown.fract() == 0.0 && shown.abs() < 1e15 {
            Json::from(shown as i64)
        } else {
            serde_json::Number::from_f64(shown).map_or(Json::Null, Json::Number)
        };
        self.check(key, Given::Json(&json))
    }

    /// Checks `given`, the value of `key`; the error names `key` and the rule.
    pub(crate) fn check(&self, key: &str, given: Given<'_>) -> Result<()> {
        let json = match given {
            Given::NonFinite(value) => return Err(self.broken(key, &non_finite_name(value))),
            Given::Json(json) => json,
        };
        let ok = match (*self, json) {
            (Rule::Whole { null, .. }, Json::Null) => null.is_some(),
            (Rule::Whole { min, max, zero, .. }, Json::Number(n)) => {
                let whole = n.as_i64().map(i128::from).or(n.as_u64().map(i128::from));
                whole.is_some_and(|v| {
                    (zero.is_some() && v == 0) || (i128::from(min)..=i128::from(max)).contains(&v)
                })
            }
            (
                Rule::Number {
                    min, min_open, max, ..
                },
                Json::Number(n),
            ) => {
                n.as_f64().is_some_and(|v| {
                    // Values past f32's range would become infinite.
                    (v as f32).is_finite()
                        && if min_open { v > min } else { v >= min }
                        && !max.is_some_and(|max| v > max)
                })
            }
            (Rule::Bool, Json::Bool(_)) => true,
            (Rule::Text { null, .. }, Json::Null) => null,
            (Rule::Text { non_empty, .. }, Json::String(s)) => !(non_empty && s.is_empty()),
            (Rule::Texts, Json::Array(items)) => {
                for (i, item) in items.iter().enumerate() {
                    if !matches!(item, Json::String(s) if !s.is_empty()) {
                        return Err(Error::config(
                            format!("{key}[{i}]"),
                            format!("expected a non-empty string, got {}", describe(item)),
                        ));
                    }
                }
                true
            }
            (Rule::Choice { parse, .. }, Json::String(s)) => return parse(s),
            (Rule::Custom { check, .. }, json) => return check(key, json),
            _ => false,
        };
        if ok {
            Ok(())
        } else {
            Err(self.broken(key, &describe(json)))
        }
    }
}

/// How Python and JavaScript spell a number JSON cannot hold.
pub(crate) fn non_finite_name(value: f64) -> String {
    match value {
        v if v.is_nan() => "NaN".into(),
        v if v > 0.0 => "Infinity".into(),
        _ => "-Infinity".into(),
    }
}

/// A JSON value as an error message shows it: scalars as written (strings
/// quoted, long ones cut), containers by kind.
pub(crate) fn describe(value: &Json) -> String {
    const MAX_CHARS: usize = 40;
    match value {
        Json::Array(_) => "an array".into(),
        Json::Object(_) => "an object".into(),
        Json::String(s) if s.chars().count() > MAX_CHARS => {
            let head: String = s.chars().take(MAX_CHARS).collect();
            Json::String(head + "...").to_string()
        }
        other => other.to_string(),
    }
}

/// Reads `text` as a JSON object of `settings`: text that is not JSON is
/// [`Error::InvalidJson`]; a value that is not an object, an unknown or
/// repeated key, or a value against its key's rule is
/// [`Error::InvalidConfig`] naming the key. `NaN`, `Infinity` and
/// `-Infinity`, which Python's `json.dumps` writes for non-finite floats,
/// are reported against the key's rule too, not as a JSON syntax error.
pub(crate) fn read_settings(text: &str, settings: &Settings) -> Result<Map<String, Json>> {
    let mut de = serde_json::Deserializer::from_str(text);
    let top = match serde_path_to_error::deserialize::<_, TopLevel>(&mut de) {
        Ok(top) => top,
        Err(e) => {
            let Some(value) = non_finite_at(text, e.inner()) else {
                return Err(Error::InvalidJson(e.into_inner().to_string()));
            };
            let mut segments = e.path().iter();
            let Some(serde_path_to_error::Segment::Map { key }) = segments.next() else {
                return Err(settings.not_an_object(&non_finite_name(value)));
            };
            let Some(rule) = settings.find(key) else {
                return Err(settings.unknown(key));
            };
            return Err(match (segments.next(), rule) {
                (None, rule) => rule.check(key, Given::NonFinite(value)).err(),
                (Some(_), Rule::Texts | Rule::Custom { .. }) => Some(Error::config(
                    e.path().to_string(),
                    format!(
                        "expected {}, got {}",
                        if matches!(rule, Rule::Texts) {
                            "a non-empty string"
                        } else {
                            "a finite number"
                        },
                        non_finite_name(value)
                    ),
                )),
                (Some(_), rule) => Some(rule.broken(key, "a value holding a non-finite number")),
            }
            .unwrap_or_else(|| Error::Internal(format!("`{key}` accepted a non-finite number"))));
        }
    };
    de.end()?;
    let entries = match top {
        TopLevel::Object(entries) => entries,
        TopLevel::Other(kind) => return Err(settings.not_an_object(kind)),
    };
    let mut object = Map::new();
    for (key, value) in entries {
        let Some(rule) = settings.find(&key) else {
            return Err(settings.unknown(&key));
        };
        if object.contains_key(&key) {
            return Err(Error::config(key, "given twice"));
        }
        rule.check(&key, Given::Json(&value))?;
        object.insert(key, value);
    }
    Ok(object)
}

/// The non-finite number (`NaN`, `Infinity`, `-Infinity`) at which JSON
/// parsing failed, if that is why it failed.
pub(crate) fn non_finite_at(text: &str, error: &serde_json::Error) -> Option<f64> {
    if error.classify() != serde_json::error::Category::Syntax || error.line() == 0 {
        return None;
    }
    // serde_json counts lines from 1 and columns in bytes from 1, pointing
    // at the character it could not take (after the sign of `-Infinity`).
    let line_start: usize = text
        .split_inclusive('\n')
        .take(error.line() - 1)
        .map(str::len)
        .sum();
    let at = line_start + error.column().checked_sub(1)?;
    let rest = text.get(at..)?;
    if rest.starts_with("NaN") {
        Some(f64::NAN)
    } else if rest.starts_with("Infinity") {
        let negative = text.get(..at).is_some_and(|before| before.ends_with('-'));
        Some(if negative {
            f64::NEG_INFINITY
        } else {
            f64::INFINITY
        })
    } else {
        None
    }
}

/// The top level of a settings text: an object's entries in order
/// (repeats kept, so that they can be reported), or what it is instead.
enum TopLevel {
    Object(Vec<(String, Json)>),
    Other(&'static str),
}

impl<'de> Deserialize<'de> for TopLevel {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        d.deserialize_any(TopLevelVisitor)
    }
}

struct TopLevelVisitor;

impl<'de> Visitor<'de> for TopLevelVisitor {
    type Value = TopLevel;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> std::result::Result<TopLevel, A::Error> {
        let mut entries = Vec::new();
        while let Some(entry) = map.next_entry::<String, Json>()? {
            entries.push(entry);
        }
        Ok(TopLevel::Object(entries))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> std::result::Result<TopLevel, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(TopLevel::Other("an array"))
    }

    fn visit_bool<E>(self, _: bool) -> std::result::Result<TopLevel, E> {
        Ok(TopLevel::Other("a boolean"))
    }

    fn visit_i64<E>(self, _: i64) -> std::result::Result<TopLevel, E> {
        Ok(TopLevel::Other("a number"))
    }

    fn visit_u64<E>(self, _: u64) -> std::result::Result<TopLevel, E> {
        Ok(TopLevel::Other("a number"))
    }

    fn visit_f64<E>(self, _: f64) -> std::result::Result<TopLevel, E> {
        Ok(TopLevel::Other("a number"))
    }

    fn visit_str<E>(self, _: &str) -> std::result::Result<TopLevel, E> {
        Ok(TopLevel::Other("a string"))
    }

    fn visit_unit<E>(self) -> std::result::Result<TopLevel, E> {
        Ok(TopLevel::Other("null"))
    }
}
