//! Logging as runc does it: `--log FILE` receives one line per event, either text or (with
//! `--log-format json`) runc's `{"level":"error","msg":"...","time":"RFC3339"}` form that containerd's
//! shim and Podman parse; the file is created even when nothing goes wrong. Errors also go to stderr.

use std::fmt::Write as _;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::Path;
use std::sync::{Arc, Mutex};

use anyhow::{Context, Result};
use tracing::field::{Field, Visit};
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::filter::{LevelFilter, Targets};
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields, MakeWriter};
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::registry::LookupSpan;

/// The `--log-format` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    /// `time="..." level=info msg="..."`
    Text,
    /// `{"level":"info","msg":"...","time":"..."}`
    Json,
}

/// Collects an event's message and fields.
#[derive(Default)]
struct MessageVisitor {
    msg: String,
    fields: String,
}

impl Visit for MessageVisitor {
    fn record_str(&mut self, field: &Field, value: &str) {
        if field.name() == "message" {
            self.msg.push_str(value);
        } else {
            let _ = write!(self.fields, " {}={}", field.name(), value);
        }
    }
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        if field.name() == "message" {
            let _ = write!(self.msg, "{value:?}");
        } else {
            let _ = write!(self.fields, " {}={:?}", field.name(), value);
        }
    }
}

fn level_name(l: &Level) -> &'static str {
    match *l {
        Level::ERROR => "error",
        Level::WARN => "warning",
        Level::INFO => "info",
        Level::DEBUG => "debug",
        Level::TRACE => "trace",
    }
}

/// Formats one log line (without the newline) in the given format.
pub fn format_line(format: LogFormat, level: &str, msg: &str) -> String {
    let time = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Nanos, true);
    match format {
        LogFormat::Json => {
            serde_json::json!({"level": level, "msg": msg, "time": time}).to_string()
        }
        LogFormat::Text => format!("time={time:?} level={level} msg={msg:?}"),
    }
}

struct RuncFormat(LogFormat);

impl<S, N> FormatEvent<S, N> for RuncFormat
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        _ctx: &FmtContext<'_, S, N>,
        mut writer: Writer<'_>,
        event: &Event<'_>,
    ) -> std::fmt::Result {
        let mut v = MessageVisitor::default();
        event.record(&mut v);
        let msg = format!("{}{}", v.msg, v.fields);
        writeln!(
            writer,
            "{}",
            format_line(self.0, level_name(event.metadata().level()), &msg)
        )
    }
}

/// A log file shared between the tracing layer and [`Logger::error`].
#[derive(Clone)]
struct SharedFile(Arc<Mutex<File>>);

impl Write for SharedFile {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0
            .lock()
            .map_err(|_| std::io::Error::other("poisoned"))?
            .write(buf)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> MakeWriter<'a> for SharedFile {
    type Writer = SharedFile;
    fn make_writer(&'a self) -> Self::Writer {
        self.clone()
    }
}

/// Where error events are captured while libcontainer creates a container: its child processes report
/// only a one-line summary to the parent ("failed to prepare rootfs"), but log the cause as error
/// events first. The parent reads them back to tell the user why.
static CAPTURE: Mutex<Option<File>> = Mutex::new(None);

/// Starts capturing error events (from this process and the children it clones) into `path`.
pub fn capture_errors_to(path: &Path) {
    if let Ok(f) = OpenOptions::new().create(true).append(true).open(path) {
        if let Ok(mut g) = CAPTURE.lock() {
            *g = Some(f);
        }
    }
}

/// Stops capturing; returns the captured messages, oldest first.
pub fn take_captured_errors(path: &Path) -> Vec<String> {
    if let Ok(mut g) = CAPTURE.lock() {
        *g = None;
    }
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let _ = std::fs::remove_file(path);
    text.lines()
        .map(str::to_string)
        .filter(|l| !l.is_empty())
        .collect()
}

struct CaptureLayer;

impl<S: Subscriber> tracing_subscriber::Layer<S> for CaptureLayer {
    fn on_event(&self, event: &Event<'_>, _ctx: tracing_subscriber::layer::Context<'_, S>) {
        if *event.metadata().level() != Level::ERROR {
            return;
        }
        let Ok(mut g) = CAPTURE.lock() else { return };
        if let Some(f) = g.as_mut() {
            let mut v = MessageVisitor::default();
            event.record(&mut v);
            let _ = writeln!(f, "{}{}", v.msg, v.fields)
                .map(|_| ())
                .map_err(|_| ());
        }
    }
}

/// The logging set up for one invocation.
pub struct Logger {
    file: Option<SharedFile>,
    format: LogFormat,
}

impl Logger {
    /// Installs the global subscriber. With a log file, info and above from rloxsc (debug with `--debug`)
    /// go to it; libcontainer's own messages only from warn (all with `--debug`), without libcgroups'
    /// warnings about controllers this host lacks (see [`file_targets`]). Without one, rloxsc's
    /// warnings and errors go to stderr.
    pub fn init(path: Option<&Path>, format: LogFormat, debug: bool) -> Result<Logger> {
        let file = match path {
            Some(p) => Some(SharedFile(Arc::new(Mutex::new(
                crate::fsutil::open_append_nofollow(p, 0o644).with_context(|| {
                    if std::fs::symlink_metadata(p).is_ok_and(|m| m.file_type().is_symlink()) {
                        format!("refusing the log file {}: it is a symlink", p.display())
                    } else {
                        format!("cannot open log file {}", p.display())
                    }
                })?,
            )))),
            None => None,
        };
        let targets = file_targets(debug);
        let result = match &file {
            Some(f) => {
                let layer = tracing_subscriber::fmt::layer()
                    .event_format(RuncFormat(format))
                    .with_writer(f.clone());
                tracing::subscriber::set_global_default(
                    tracing_subscriber::registry()
                        .with(layer.with_filter_targets(targets))
                        .with(CaptureLayer),
                )
            }
            None => {
                let stderr_targets = Targets::new()
                    .with_target(
                        "rloxsc",
                        if debug {
                            LevelFilter::DEBUG
                        } else {
                            LevelFilter::WARN
                        },
                    )
                    // without a log file, stderr carries only rloxsc's warnings and the one final
                    // error line (`Logger::error`), which already includes libcontainer's detail
                    .with_default(if debug {
                        LevelFilter::DEBUG
                    } else {
                        LevelFilter::OFF
                    });
                let layer = tracing_subscriber::fmt::layer()
                    .event_format(RuncFormat(LogFormat::Text))
                    .with_writer(std::io::stderr);
                tracing::subscriber::set_global_default(
                    tracing_subscriber::registry()
                        .with(layer.with_filter_targets(stderr_targets))
                        .with(CaptureLayer),
                )
            }
        };
        result.context("cannot install the logger")?;
        Ok(Logger { file, format })
    }

    /// Reports the command's final error: one line in the log file (the last error line, which clients
    /// show) and one on stderr.
    pub fn error(&self, msg: &str) {
        // one line, always: clients read the last line; libcontainer's wrapper phrases dropped
        let msg = &crate::errors::tidy(&msg.trim().replace('\n', "; "));
        if let Some(f) = &self.file {
            let mut f = f.clone();
            let _ = writeln!(f, "{}", format_line(self.format, "error", msg));
        }
        let _ = writeln!(
            std::io::stderr(),
            "{}",
            stderr_line(msg, std::env::var_os(CONMON_SYNC_PIPE).is_some())
        );
    }
}

/// Set by Podman (and CRI-O) in conmon's environment, which the runtime inherits: conmon sends the
/// runtime's stderr back as the error, and Podman prefixes it with the runtime's name (or path).
const CONMON_SYNC_PIPE: &str = "_OCI_SYNCPIPE";

/// The final error line on stderr. `rloxsc: error: MSG`: the word "error", as runc's stderr has it,
/// because some callers look for it. Under conmon, only MSG: Podman shows the runtime's stderr as
/// `<runtime>: <stderr>` whenever its `--log` file is not one JSON object (any info or warning line
/// besides the error), which made `rloxsc: rloxsc: error: ...`; bare, it reads `rloxsc: MSG`, the
/// same as when Podman takes MSG from the log file.
fn stderr_line(msg: &str, under_conmon: bool) -> String {
    if under_conmon {
        msg.to_string()
    } else {
        format!("rloxsc: error: {msg}")
    }
}

/// What goes to the log file: info and above from rloxsc (debug with `--debug`), libcontainer's and
/// libcgroups' own messages from warn (all with `--debug`), except the warnings of every call.
fn file_targets(debug: bool) -> Targets {
    let own = if debug {
        LevelFilter::DEBUG
    } else {
        LevelFilter::INFO
    };
    let lib = if debug {
        LevelFilter::DEBUG
    } else {
        LevelFilter::WARN
    };
    let mut targets = Targets::new()
        .with_target("rloxsc", own)
        .with_target("libcontainer", lib)
        .with_target("libcgroups", lib)
        .with_default(lib);
    if !debug {
        for t in EVERY_CALL_WARNINGS {
            targets = targets.with_target(*t, LevelFilter::ERROR);
        }
    }
    targets
}

/// Targets whose warnings come on every call and say nothing about this container: libcgroups
/// warns for each cgroup v1 controller the host has not mounted ("cgroup hugetlb not supported on
/// this system", v1::manager) and each v2 controller it does not implement ("Controller rdma is not
/// yet implemented.", v2::util). `rloxsc doctor` lists those controllers once.
const EVERY_CALL_WARNINGS: &[&str] = &["libcgroups::v1::manager", "libcgroups::v2::util"];

trait WithTargets<S> {
    fn with_filter_targets(
        self,
        t: Targets,
    ) -> tracing_subscriber::filter::Filtered<Self, Targets, S>
    where
        Self: Sized;
}

impl<S, L> WithTargets<S> for L
where
    L: tracing_subscriber::Layer<S>,
    S: Subscriber,
{
    fn with_filter_targets(
        self,
        t: Targets,
    ) -> tracing_subscriber::filter::Filtered<Self, Targets, S> {
        tracing_subscriber::Layer::with_filter(self, t)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_line_has_runc_fields() {
        let l = format_line(LogFormat::Json, "error", "container \"x\" does not exist");
        let v: serde_json::Value = serde_json::from_str(&l).unwrap();
        assert_eq!(v["level"], "error");
        assert_eq!(v["msg"], "container \"x\" does not exist");
        assert!(chrono::DateTime::parse_from_rfc3339(v["time"].as_str().unwrap()).is_ok());
    }

    #[test]
    fn stderr_line_is_prefixed_once() {
        assert_eq!(
            stderr_line("container \"x\" does not exist", false),
            "rloxsc: error: container \"x\" does not exist"
        );
        // Podman adds "rloxsc: " itself
        assert_eq!(
            stderr_line("container \"x\" does not exist", true),
            "container \"x\" does not exist"
        );
    }

    #[test]
    fn every_call_warnings_are_dropped_unless_debug() {
        let t = file_targets(false);
        assert!(!t.would_enable("libcgroups::v1::manager", &Level::WARN));
        assert!(!t.would_enable("libcgroups::v2::util", &Level::WARN));
        assert!(t.would_enable("libcgroups::v1::manager", &Level::ERROR));
        assert!(t.would_enable("libcgroups::v1::memory", &Level::WARN));
        assert!(t.would_enable("libcontainer::process", &Level::WARN));
        assert!(t.would_enable("rloxsc::launch", &Level::INFO));
        assert!(!t.would_enable("libcontainer::process", &Level::INFO));
        let d = file_targets(true);
        assert!(d.would_enable("libcgroups::v1::manager", &Level::WARN));
        assert!(d.would_enable("libcgroups::v2::util", &Level::DEBUG));
    }

    #[test]
    fn text_line() {
        let l = format_line(LogFormat::Text, "info", "hello");
        assert!(l.contains("level=info") && l.contains("msg=\"hello\""));
    }
}
