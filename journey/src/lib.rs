//! The journey vocabulary: the words a controller's machinery uses to report what happens to
//! each key, from the watch event that brought a change to the reconcile that acted on it and
//! its requests. The reflector, the informer, the work queue, the worker pool, the REST client
//! and the leader elector emit them as `tracing` events and spans at `TRACE` level (targets
//! in [`target`]); the flight recorder (`clientgo-flightrecorder`) reads them back into
//! timelines. Both sides use the types here, so a word cannot drift between them: a stage the
//! recorder does not handle is a compile error in its `match`, not a silently empty view.
//!
//! No client-go counterpart: client-go reports metrics and logs, not a key's path through the
//! loop. The fields follow OpenTelemetry's names where it has them (the `http` span).
//!
//! # The vocabulary
//!
//! Every journey event and span has a `stage` field ([`Stage`]); the others depend on it.
//! Keys are `namespace/name` (or a queue item's text), `rv` a resourceVersion; durations are
//! in microseconds (`_us`).
//!
//! | stage | emitted by | fields |
//! |---|---|---|
//! | `watch` | the reflector, per watch event received | `resource`, `type` (`ADDED`, `MODIFIED`, `DELETED`), `key`, `rv` |
//! | `listed` | the reflector, per object of a list (LIST pages or a streaming list's initial events) as it replaces the cache: a key's journey at startup or after a relist | `resource`, `via` (`LIST`, `watch-list`), `key`, `rv` |
//! | `applied` | the informer, per change applied to its cache and handed to the handlers | `resource`, `type`, `key`, `rv` |
//! | `handler` (span) | the informer, around each handler call | `resource`, `handler`, `type`, `key`, `rv` |
//! | `add` | the work queue, per add and per delayed add come due | `queue`, `key`, `outcome` ([`AddOutcome`]), `depth` |
//! | `add_after` | the delaying queue | `queue`, `key`, `delay_us` |
//! | `backoff` | the rate-limited queue, on a retry or `add_rate_limited` | `queue`, `key`, `delay_us`, `failures` |
//! | `get` | the work queue | `queue`, `key`, `depth` |
//! | `done` | the work queue, when a hold ends | `queue`, `key`, `outcome` ([`DoneOutcome`]) |
//! | `reconcile` (span) | the worker pool | `queue`, `key`, `worker`, then `outcome` ([`ReconcileOutcome`]) |
//! | `http` (span) | the REST client, per request | OpenTelemetry's `http.request.method`, `url.path`, `server.address`, `server.port`, `http.response.status_code`, `error.type`; and `k8s.verb`, `k8s.resource`, `k8s.namespace`, `k8s.name`, `retries`, `throttle_wait_us` |
//! | `leader` | the leader elector | `lock`, `transition` ([`LeaderTransition`]), `identity` (this candidate's, or for `observed` the new holder's) |
//!
//! Nothing in the vocabulary carries an object's content, a token or a query string: keys,
//! resourceVersions, paths and status codes only.

#![deny(missing_docs)]

use std::fmt;

/// The `tracing` targets of the journey events, one per emitting crate: a subscriber keeps
/// them with a `Targets` filter at `TRACE` (every one ends in `::journey`).
pub mod target {
    /// The work queue and the worker pool: `add`, `add_after`, `backoff`, `get`, `done`,
    /// `reconcile`.
    pub const WORKQUEUE: &str = "clientgo_workqueue::journey";
    /// The reflector and the informer: `watch`, `listed`, `applied`, `handler`.
    pub const INFORMER: &str = "clientgo_informer::journey";
    /// The REST client: `http`.
    pub const REST: &str = "clientgo_rest::journey";
    /// The leader elector: `leader`.
    pub const LEADERELECTION: &str = "clientgo_leaderelection::journey";
    /// All of them.
    pub const ALL: [&str; 4] = [WORKQUEUE, INFORMER, REST, LEADERELECTION];
}

/// An enum of words: each variant's text as written in events, every variant in order, and
/// the variant a text names.
macro_rules! words {
    (
        $(#[$meta:meta])*
        pub enum $name:ident {
            $($(#[$variant_meta:meta])* $variant:ident = $text:literal,)*
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum $name {
            $($(#[$variant_meta])* $variant,)*
        }

        impl $name {
            /// Every word, in the vocabulary's order.
            pub const ALL: &'static [$name] = &[$($name::$variant,)*];

            /// The word as events carry it.
            pub const fn name(self) -> &'static str {
                match self {
                    $($name::$variant => $text,)*
                }
            }

            /// The word written `name`, if it is one of these.
            pub fn from_name(name: &str) -> Option<$name> {
                match name {
                    $($text => Some($name::$variant),)*
                    _ => None,
                }
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.name())
            }
        }
    };
}

words! {
    /// The `stage` field: which step of a key's journey an event or span is. See the table in
    /// the crate documentation for who emits each and with which fields.
    pub enum Stage {
        /// A watch event received by a reflector.
        Watch = "watch",
        /// An object of a list, as it replaces a reflector's cache.
        Listed = "listed",
        /// A change applied to an informer's cache and handed to its handlers.
        Applied = "applied",
        /// A span around one handler call.
        Handler = "handler",
        /// A key added to a work queue.
        Add = "add",
        /// A key scheduled to be added after a delay.
        AddAfter = "add_after",
        /// A key scheduled to be added after its backoff.
        Backoff = "backoff",
        /// A key handed to a worker.
        Get = "get",
        /// A hold on a key ended.
        Done = "done",
        /// A span around one reconcile.
        Reconcile = "reconcile",
        /// A span around one HTTP request.
        Http = "http",
        /// A leader election transition.
        Leader = "leader",
    }
}

words! {
    /// The `outcome` of an `add`.
    pub enum AddOutcome {
        /// The key was not waiting: it joins the line.
        New = "new",
        /// The key was already waiting: the adds coalesce.
        Coalesced = "coalesced",
        /// The key is being processed: it is handed out again when that ends.
        Deferred = "deferred",
        /// A delayed add came due and the key joins the line.
        Delayed = "delayed",
    }
}

words! {
    /// The `outcome` of a `done`: how a hold on a key ended.
    pub enum DoneOutcome {
        /// Processed; failures kept.
        Done = "done",
        /// Processed successfully; failures forgotten.
        Forget = "forget",
        /// Failed: back after its backoff.
        Retry = "retry",
        /// Processed successfully, to be looked at again after a delay.
        RequeueAfter = "requeue_after",
        /// Dropped without an outcome (a panic, an aborted task): retried.
        Abandoned = "abandoned",
    }
}

words! {
    /// The `outcome` of a `reconcile`.
    pub enum ReconcileOutcome {
        /// Succeeded.
        Ok = "ok",
        /// Succeeded, and asked to be requeued after a delay.
        Requeue = "requeue",
        /// Returned an error: retried after a backoff.
        Error = "error",
        /// Panicked: retried after a backoff.
        Panic = "panic",
        /// Dropped when its worker pool ended (shut down or fenced).
        Fenced = "fenced",
        /// Dropped because the lease it ran under ran out.
        Expired = "expired",
    }
}

words! {
    /// The `transition` of a `leader` event.
    pub enum LeaderTransition {
        /// This candidate became the leader.
        Acquired = "acquired",
        /// This candidate stopped leading without giving the lease up (its renewals failed).
        Lost = "lost",
        /// This candidate stopped leading: its elector was stopped.
        Stopped = "stopped",
        /// This candidate gave the lease up.
        Released = "released",
        /// A new holder was seen (`identity` is the holder).
        Observed = "observed",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_word_reads_back_as_itself_and_no_two_share_a_text() {
        fn check<T: Copy + PartialEq + fmt::Debug>(
            all: &[T],
            name: fn(T) -> &'static str,
            from: fn(&str) -> Option<T>,
        ) {
            for &word in all {
                assert_eq!(from(name(word)), Some(word));
            }
            let mut texts: Vec<&str> = all.iter().map(|&w| name(w)).collect();
            texts.sort_unstable();
            texts.dedup();
            assert_eq!(texts.len(), all.len());
            assert_eq!(from("no-such-word"), None);
        }
        check(Stage::ALL, Stage::name, Stage::from_name);
        check(AddOutcome::ALL, AddOutcome::name, AddOutcome::from_name);
        check(DoneOutcome::ALL, DoneOutcome::name, DoneOutcome::from_name);
        check(
            ReconcileOutcome::ALL,
            ReconcileOutcome::name,
            ReconcileOutcome::from_name,
        );
        check(
            LeaderTransition::ALL,
            LeaderTransition::name,
            LeaderTransition::from_name,
        );
        assert!(target::ALL.iter().all(|t| t.ends_with("::journey")));
    }

    /// The crate documentation's table has one row per stage, in the enum's order.
    #[test]
    fn the_table_lists_every_stage_in_order() {
        let docs = include_str!("lib.rs");
        let rows: Vec<&str> = docs
            .lines()
            .filter_map(|line| line.strip_prefix("//! | `"))
            .filter_map(|row| row.split('`').next())
            .collect();
        let stages: Vec<&str> = Stage::ALL.iter().map(|s| s.name()).collect();
        assert_eq!(rows, stages);
    }
}
