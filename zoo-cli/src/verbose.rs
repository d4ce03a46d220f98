//! `--verbose` and `/debug`: the prompt exactly as the engine rendered it
//! and the model's raw output before parsing, on stderr. The engine logs
//! both at debug level (through `tracing`, under the targets below); this
//! subscriber shows them while verbose is on and nothing else.

use std::fmt::Write as _;
use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, Ordering};

use tracing::field::{Field, Visit};
use tracing::{Event, Subscriber};
use tracing_subscriber::layer::{Context, SubscriberExt};
use tracing_subscriber::Layer;

/// The targets shown: the rendered prompt and the raw output.
const TARGETS: [&str; 2] = ["zoo::prompt", "zoo::raw_output"];

static ON: AtomicBool = AtomicBool::new(false);

/// Installs the subscriber (once; later calls only set the switch).
pub fn install(on: bool) {
    set(on);
    let subscriber = tracing_subscriber::registry().with(Shown);
    // Already installed (a second command in one process): keep it.
    let _ = tracing::subscriber::set_global_default(subscriber);
}

/// Turns the output on or off.
pub fn set(on: bool) {
    ON.store(on, Ordering::SeqCst);
}

/// Whether it is on.
pub fn is_on() -> bool {
    ON.load(Ordering::SeqCst)
}

/// Prints the events of [`TARGETS`] to stderr while verbose is on.
struct Shown;

impl<S: Subscriber> Layer<S> for Shown {
    fn enabled(&self, metadata: &tracing::Metadata<'_>, _: Context<'_, S>) -> bool {
        TARGETS.contains(&metadata.target())
    }

    fn on_event(&self, event: &Event<'_>, _: Context<'_, S>) {
        if !is_on() || !TARGETS.contains(&event.metadata().target()) {
            return;
        }
        let mut text = Text::default();
        event.record(&mut text);
        // Dimmed on a terminal, plain when stderr goes to a file or pipe.
        let (dim, plain) = if std::io::stderr().is_terminal() {
            ("\x1b[2m", "\x1b[0m")
        } else {
            ("", "")
        };
        eprintln!(
            "{dim}--- {} ---\n{}\n---{plain}",
            event.metadata().target(),
            text.0
        );
    }
}

/// An event's fields as text: the message first, then `name = value`.
#[derive(Default)]
struct Text(String);

impl Visit for Text {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.push(field, value);
    }

    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.push(field, &format!("{value:?}"));
    }
}

impl Text {
    fn push(&mut self, field: &Field, value: &str) {
        if !self.0.is_empty() {
            self.0.push('\n');
        }
        if field.name() == "message" {
            self.0.push_str(value);
        } else {
            let _ = write!(self.0, "{} = {value}", field.name());
        }
    }
}
