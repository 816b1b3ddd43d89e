//! The `tracing` layer that feeds the recorder.
//!
//! It only ever sees journey callsites: its per-layer filter accepts the targets that end in
//! `::journey` and nothing else, and answers once per callsite, so that every other event
//! and span of the program costs this layer nothing, and a journey callsite in a program
//! without a recorder stays disabled (a relaxed load of the callsite's interest). A journey
//! span's fields live in the span's extensions until it closes, then become one entry; an
//! event becomes an entry at once. Each entry names the innermost journey span it happened
//! in, which is how a queue add is tied to the handler (and so to the watch event) that made
//! it, and a request to the reconcile that sent it.

use std::fmt;
use std::sync::Arc;

use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::subscriber::Interest;
use tracing::{Event, Metadata, Subscriber};
use tracing_subscriber::layer::{Context, Filter, Layer};
use tracing_subscriber::registry::LookupSpan;

use crate::Shared;
use crate::record::{Entry, Fields, Value};

/// Whether a callsite belongs to the journey vocabulary.
pub(crate) fn is_journey(metadata: &Metadata<'_>) -> bool {
    metadata.target().ends_with("::journey")
}

/// The per-layer filter: journey callsites only, decided once per callsite.
#[derive(Debug, Clone, Copy)]
pub struct JourneyFilter;

impl<S> Filter<S> for JourneyFilter {
    fn enabled(&self, metadata: &Metadata<'_>, _: &Context<'_, S>) -> bool {
        is_journey(metadata)
    }

    fn callsite_enabled(&self, metadata: &'static Metadata<'static>) -> Interest {
        if is_journey(metadata) {
            Interest::always()
        } else {
            Interest::never()
        }
    }

    fn max_level_hint(&self) -> Option<tracing::level_filters::LevelFilter> {
        Some(tracing::level_filters::LevelFilter::TRACE)
    }
}

/// The layer itself; [`Recorder::layer`](crate::Recorder::layer) wraps it in its filter.
pub struct RecorderLayer {
    pub(crate) shared: Arc<Shared>,
}

impl fmt::Debug for RecorderLayer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RecorderLayer").finish_non_exhaustive()
    }
}

/// A journey span between its opening and its close.
struct Open {
    id: u64,
    parent: Option<u64>,
    stage: Box<str>,
    at: std::time::Duration,
    fields: Fields,
}

/// Copies fields out of `tracing`'s visitor; `stage` and `message` go aside.
#[derive(Default)]
struct Collect {
    stage: Option<Box<str>>,
    fields: Fields,
}

impl Collect {
    fn put(&mut self, field: &Field, value: Value) {
        match field.name() {
            "stage" => self.stage = Some(value.to_string().into()),
            "message" => {}
            name => self.fields.set(name, value),
        }
    }
}

impl Visit for Collect {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.put(field, Value::Str(value.into()));
    }
    fn record_u64(&mut self, field: &Field, value: u64) {
        self.put(field, Value::U64(value));
    }
    fn record_i64(&mut self, field: &Field, value: i64) {
        self.put(field, Value::I64(value));
    }
    fn record_f64(&mut self, field: &Field, value: f64) {
        self.put(field, Value::F64(value));
    }
    fn record_bool(&mut self, field: &Field, value: bool) {
        self.put(field, Value::Bool(value));
    }
    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        self.put(field, Value::Str(format!("{value:?}").into()));
    }
}

impl RecorderLayer {
    /// The id of the innermost open journey span in `scope`.
    fn enclosing<'a, S>(scope: Option<tracing_subscriber::registry::Scope<'a, S>>) -> Option<u64>
    where
        S: Subscriber + for<'l> LookupSpan<'l>,
    {
        scope?.find_map(|span| span.extensions().get::<Open>().map(|open| open.id))
    }
}

impl<S> Layer<S> for RecorderLayer
where
    S: Subscriber + for<'l> LookupSpan<'l>,
{
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(id) else { return };
        let mut collect = Collect::default();
        attrs.record(&mut collect);
        let parent = Self::enclosing(span.parent().map(|p| p.scope()));
        let open = Open {
            id: self.shared.next_id(),
            parent,
            stage: collect
                .stage
                .unwrap_or_else(|| attrs.metadata().name().into()),
            at: self.shared.now(),
            fields: collect.fields,
        };
        self.shared.span_opened(&open.stage, &open.fields, open.at);
        span.extensions_mut().insert(open);
    }

    fn on_record(&self, id: &Id, values: &Record<'_>, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(id) else { return };
        let mut extensions = span.extensions_mut();
        let Some(open) = extensions.get_mut::<Open>() else {
            return;
        };
        let mut collect = Collect {
            stage: None,
            fields: std::mem::take(&mut open.fields),
        };
        values.record(&mut collect);
        open.fields = collect.fields;
    }

    fn on_event(&self, event: &Event<'_>, ctx: Context<'_, S>) {
        let mut collect = Collect::default();
        event.record(&mut collect);
        let entry = Entry {
            id: self.shared.next_id(),
            parent: Self::enclosing(ctx.event_scope(event)),
            stage: collect
                .stage
                .unwrap_or_else(|| event.metadata().name().into()),
            at: self.shared.now(),
            duration: None,
            fields: collect.fields,
        };
        self.shared.record(entry);
    }

    fn on_close(&self, id: Id, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(&id) else { return };
        let Some(open) = span.extensions_mut().remove::<Open>() else {
            return;
        };
        let now = self.shared.now();
        self.shared.record(Entry {
            id: open.id,
            parent: open.parent,
            stage: open.stage,
            at: open.at,
            duration: Some(now.saturating_sub(open.at)),
            fields: open.fields,
        });
    }
}
