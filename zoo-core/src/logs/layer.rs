//! The `tracing` layer that turns events into [`LogRecord`]s: the event's
//! fields as JSON, under the fields of the spans it was emitted in (so a
//! record inside a chat carries the chat's `agent_id` and `chat_id`).

use serde_json::{Map, Number, Value};
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::subscriber::Interest;
use tracing::{Event, Metadata, Subscriber};
use tracing_subscriber::filter::LevelFilter;
use tracing_subscriber::layer::{Context, Layer};
use tracing_subscriber::registry::LookupSpan;

use super::{current_level, queue, LogLevel, LogRecord};

/// Hands every enabled event to the log queue.
pub(super) struct HostLayer;

/// A span's fields, kept in its extensions for the events inside it.
struct SpanFields(Map<String, Value>);

impl<S> Layer<S> for HostLayer
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    fn register_callsite(&self, _: &'static Metadata<'static>) -> Interest {
        // The level changes at run time: ask `enabled` each time (after the
        // global level check, which `max_level_hint` keeps in step).
        Interest::sometimes()
    }

    fn enabled(&self, metadata: &Metadata<'_>, _: Context<'_, S>) -> bool {
        LogLevel::of(metadata.level()) <= current_level()
    }

    fn max_level_hint(&self) -> Option<LevelFilter> {
        Some(current_level().filter())
    }

    fn on_new_span(&self, attributes: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        let mut fields = JsonFields::default();
        attributes.record(&mut fields);
        if let Some(span) = ctx.span(id) {
            span.extensions_mut().insert(SpanFields(fields.fields));
        }
    }

    fn on_record(&self, id: &Id, values: &Record<'_>, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(id) else {
            return;
        };
        let mut extensions = span.extensions_mut();
        if let Some(SpanFields(stored)) = extensions.get_mut::<SpanFields>() {
            let mut fields = JsonFields {
                fields: std::mem::take(stored),
                message: None,
            };
            values.record(&mut fields);
            *stored = fields.fields;
        }
    }

    fn on_event(&self, event: &Event<'_>, ctx: Context<'_, S>) {
        let mut fields = JsonFields::default();
        if let Some(scope) = ctx.event_scope(event) {
            for span in scope.from_root() {
                if let Some(SpanFields(own)) = span.extensions().get::<SpanFields>() {
                    fields
                        .fields
                        .extend(own.iter().map(|(k, v)| (k.clone(), v.clone())));
                }
            }
        }
        event.record(&mut fields);
        let metadata = event.metadata();
        queue::push(LogRecord {
            level: LogLevel::of(metadata.level()),
            target: metadata.target().to_string(),
            message: fields.message.unwrap_or_default(),
            fields: fields.fields,
        });
    }
}

/// Collects fields as JSON values; the `message` field apart.
#[derive(Default)]
struct JsonFields {
    fields: Map<String, Value>,
    message: Option<String>,
}

impl JsonFields {
    fn put(&mut self, field: &Field, value: Value) {
        self.fields.insert(field.name().to_string(), value);
    }
}

impl Visit for JsonFields {
    fn record_f64(&mut self, field: &Field, value: f64) {
        let value = Number::from_f64(value).map_or(Value::Null, Value::Number);
        self.put(field, value);
    }

    fn record_i64(&mut self, field: &Field, value: i64) {
        self.put(field, Value::from(value));
    }

    fn record_u64(&mut self, field: &Field, value: u64) {
        self.put(field, Value::from(value));
    }

    fn record_bool(&mut self, field: &Field, value: bool) {
        self.put(field, Value::from(value));
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        if field.name() == "message" {
            self.message = Some(value.to_string());
        } else {
            self.put(field, Value::from(value));
        }
    }

    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        // `%value` (Display) arrives here too, written with its Display.
        let text = format!("{value:?}");
        if field.name() == "message" {
            self.message = Some(text);
        } else {
            self.put(field, Value::String(text));
        }
    }
}
