//! The process's log output: `RUST_LOG` filters (default `info`), lines go to stdout.
//!
//! Two formats, chosen by `--log-format` or else `BOOKIE_LOG_FORMAT` (`text`, the default, or
//! `json`):
//! * `text`: tracing-subscriber's human format; ANSI colours only when stdout is a terminal
//!   and `NO_COLOR` is unset, so a log redirected to a file or a pipe holds no escape bytes;
//! * `json`: one JSON object per line, for log shippers:
//!   `{"timestamp":"2026-12-01T16:20:00.123456Z","level":"INFO","target":"bookie::node",
//!   "message":"starting bookie","bookie_id":"10.0.0.5:3181",...,"spans":["name",...]}` —
//!   the event's fields at top level (a field named like one of the fixed keys is prefixed
//!   `field.`), values as JSON numbers and booleans where they are, strings otherwise.

use std::fmt;
use std::io::IsTerminal;

use serde_json::{Map, Value};
use tracing::field::{Field, Visit};
use tracing::{Event, Subscriber};
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::time::{FormatTime, SystemTime};
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields};
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::EnvFilter;

/// The log line format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogFormat {
    Text,
    Json,
}

impl LogFormat {
    /// `--log-format` if given, else `BOOKIE_LOG_FORMAT`, else text. An unknown name is an
    /// error naming where it came from.
    pub fn choose(flag: Option<&str>, env: Option<&str>) -> Result<LogFormat, String> {
        let (value, origin) = match (flag, env) {
            (Some(f), _) => (f, "--log-format"),
            (None, Some(e)) if !e.trim().is_empty() => (e, "BOOKIE_LOG_FORMAT"),
            _ => return Ok(LogFormat::Text),
        };
        match value.trim().to_ascii_lowercase().as_str() {
            "text" => Ok(LogFormat::Text),
            "json" => Ok(LogFormat::Json),
            other => Err(format!("{origin}={other}: expected text or json")),
        }
    }
}

/// Whether text logs on stdout get colours: only on a terminal, and never with `NO_COLOR`.
pub fn ansi_on_stdout() -> bool {
    std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}

/// Installs the global subscriber. Call once, first thing.
pub fn init(format: LogFormat) {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt().with_env_filter(filter);
    match format {
        LogFormat::Text => builder.with_ansi(ansi_on_stdout()).init(),
        LogFormat::Json => builder.with_ansi(false).event_format(JsonLines).init(),
    }
}

/// The `json` format (module doc).
pub struct JsonLines;

const FIXED_KEYS: [&str; 5] = ["timestamp", "level", "target", "message", "spans"];

impl<S, N> FormatEvent<S, N> for JsonLines
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        ctx: &FmtContext<'_, S, N>,
        mut writer: Writer<'_>,
        event: &Event<'_>,
    ) -> fmt::Result {
        let mut timestamp = String::new();
        SystemTime.format_time(&mut Writer::new(&mut timestamp))?;
        let meta = event.metadata();
        let mut fields = Fields::default();
        event.record(&mut fields);
        let mut obj = Map::new();
        obj.insert("timestamp".into(), Value::String(timestamp));
        obj.insert("level".into(), Value::String(meta.level().to_string()));
        obj.insert("target".into(), Value::String(meta.target().to_string()));
        obj.insert(
            "message".into(),
            Value::String(fields.message.unwrap_or_default()),
        );
        for (k, v) in fields.other {
            let key = if FIXED_KEYS.contains(&k.as_str()) {
                format!("field.{k}")
            } else {
                k
            };
            obj.insert(key, v);
        }
        if let Some(scope) = ctx.event_scope() {
            let spans: Vec<Value> = scope
                .from_root()
                .map(|s| Value::String(s.name().to_string()))
                .collect();
            if !spans.is_empty() {
                obj.insert("spans".into(), Value::Array(spans));
            }
        }
        let line = serde_json::to_string(&Value::Object(obj)).map_err(|_| fmt::Error)?;
        writeln!(writer, "{line}")
    }
}

/// An event's fields as JSON values; `message` apart.
#[derive(Default)]
struct Fields {
    message: Option<String>,
    other: Vec<(String, Value)>,
}

impl Fields {
    fn put(&mut self, field: &Field, value: Value) {
        if field.name() == "message" {
            self.message = Some(match value {
                Value::String(s) => s,
                v => v.to_string(),
            });
        } else {
            self.other.push((field.name().to_string(), value));
        }
    }
}

impl Visit for Fields {
    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        self.put(field, Value::String(format!("{value:?}")));
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        self.put(field, Value::String(value.to_string()));
    }
    fn record_i64(&mut self, field: &Field, value: i64) {
        self.put(field, Value::from(value));
    }
    fn record_u64(&mut self, field: &Field, value: u64) {
        self.put(field, Value::from(value));
    }
    fn record_f64(&mut self, field: &Field, value: f64) {
        self.put(field, Value::from(value));
    }
    fn record_bool(&mut self, field: &Field, value: bool) {
        self.put(field, Value::from(value));
    }
    fn record_error(&mut self, field: &Field, value: &(dyn std::error::Error + 'static)) {
        self.put(field, Value::String(value.to_string()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    #[test]
    fn flag_beats_env_and_bad_names_say_where() {
        assert_eq!(LogFormat::choose(None, None), Ok(LogFormat::Text));
        assert_eq!(LogFormat::choose(None, Some("JSON")), Ok(LogFormat::Json));
        assert_eq!(
            LogFormat::choose(Some("text"), Some("json")),
            Ok(LogFormat::Text)
        );
        let e = LogFormat::choose(None, Some("xml")).unwrap_err();
        assert!(e.contains("BOOKIE_LOG_FORMAT"), "{e}");
        let e = LogFormat::choose(Some("yaml"), None).unwrap_err();
        assert!(e.contains("--log-format"), "{e}");
    }

    #[derive(Clone, Default)]
    struct Buf(Arc<Mutex<Vec<u8>>>);
    impl std::io::Write for Buf {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn json_lines_parse_with_typed_fields() {
        let buf = Buf::default();
        let out = buf.clone();
        let sub = tracing_subscriber::fmt()
            .with_ansi(false)
            .event_format(JsonLines)
            .with_writer(move || out.clone())
            .finish();
        tracing::subscriber::with_default(sub, || {
            let span = tracing::info_span!("replay", dir = "j0");
            let _g = span.enter();
            tracing::info!(
                bookie_id = "10.0.0.5:3181",
                port = 3181u64,
                ok = true,
                level = "x",
                "starting \"bookie\""
            );
            tracing::warn!(error = %std::io::Error::other("boom"), "second");
        });
        let text = String::from_utf8(buf.0.lock().unwrap().clone()).unwrap();
        let lines: Vec<Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{l}: {e}")))
            .collect();
        assert_eq!(lines.len(), 2, "{text}");
        let first = &lines[0];
        assert_eq!(first["message"], "starting \"bookie\"");
        assert_eq!(first["level"], "INFO");
        assert_eq!(first["bookie_id"], "10.0.0.5:3181");
        assert_eq!(first["port"], 3181);
        assert_eq!(first["ok"], true);
        assert_eq!(first["field.level"], "x", "a field never hides a fixed key");
        assert_eq!(first["spans"], serde_json::json!(["replay"]));
        assert!(first["timestamp"].as_str().unwrap().ends_with('Z'));
        assert_eq!(lines[1]["level"], "WARN");
        assert_eq!(lines[1]["error"], "boom");
    }
}
