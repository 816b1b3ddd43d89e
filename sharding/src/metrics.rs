//! The sharder's metrics, for prometheus-client.
//!
//! Mirrors what the reference design exports from its sharder (timebertt's
//! kubernetes-controller-sharding: `controller_sharding_assignments_total`,
//! `controller_sharding_movements_total`, `controller_sharding_drains_total`, and the objects
//! per shard); here with the two latencies a user of sharding asks about first: how long a
//! new object waits for a shard, and how long a handover takes.
//!
//! | metric | type | what |
//! |---|---|---|
//! | `objects{shard}` | gauge | objects of the primary resources per shard (`""`: unassigned) |
//! | `assignments` | counter | new (unassigned) objects given a shard |
//! | `moves{reason}` | counter | objects moved: `drained` (from a live shard, after its acknowledgement) or `dead` (from an expired shard, at once) |
//! | `drains` | counter | drain labels set |
//! | `drain_duration_seconds` | histogram | from the drain label's write to the acknowledgement seen |
//! | `assignment_latency_seconds` | histogram | from the sharder seeing an object without a shard to its label written |
//!
//! Clones share their values: the sharder keeps one, the program registers another.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

/// The `shard` label of `objects`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
pub struct ShardLabel {
    /// The shard (replica identity); empty for unassigned objects.
    pub shard: String,
}

/// The `reason` label of `moves`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
pub struct MoveLabel {
    /// `drained` or `dead`.
    pub reason: String,
}

/// The sharder's metrics; see the module docs.
#[derive(Debug, Clone)]
pub struct ShardingMetrics {
    /// Objects per shard.
    pub objects: Family<ShardLabel, Gauge>,
    /// New objects given a shard.
    pub assignments: Counter,
    /// Objects moved, by reason.
    pub moves: Family<MoveLabel, Counter>,
    /// Drain labels set.
    pub drains: Counter,
    /// Drain label written → acknowledgement seen, in seconds.
    pub drain_duration: Histogram,
    /// Object seen without a shard → its shard label written, in seconds.
    pub assignment_latency: Histogram,
    /// Member Leases the sharder took over (compare-and-swap) before moving a dead or
    /// departed member's objects.
    pub members_fenced: Counter,
}

impl Default for ShardingMetrics {
    fn default() -> Self {
        ShardingMetrics {
            objects: Family::default(),
            assignments: Counter::default(),
            moves: Family::default(),
            drains: Counter::default(),
            // 1 ms .. ~65 s.
            drain_duration: Histogram::new(exponential_buckets(0.001, 2.0, 17)),
            assignment_latency: Histogram::new(exponential_buckets(0.001, 2.0, 17)),
            members_fenced: Counter::default(),
        }
    }
}

impl ShardingMetrics {
    /// Registers every metric; give a registry with the controller's prefix
    /// (`Registry::sub_registry_with_prefix("sharding")`).
    pub fn register(&self, registry: &mut Registry) {
        registry.register("objects", "Objects per shard", self.objects.clone());
        registry.register(
            "assignments",
            "New objects given a shard",
            self.assignments.clone(),
        );
        registry.register(
            "moves",
            "Objects moved between shards, by reason",
            self.moves.clone(),
        );
        registry.register("drains", "Drain labels set", self.drains.clone());
        registry.register(
            "drain_duration_seconds",
            "From a drain label written to its acknowledgement seen",
            self.drain_duration.clone(),
        );
        registry.register(
            "assignment_latency_seconds",
            "From an object seen without a shard to its shard label written",
            self.assignment_latency.clone(),
        );
        registry.register(
            "members_fenced",
            "Member Leases the sharder took over before moving a dead or departed member's objects",
            self.members_fenced.clone(),
        );
    }

    /// Counts a move for `reason` (`drained` or `dead`).
    pub fn moved(&self, reason: &str) {
        self.moves
            .get_or_create(&MoveLabel {
                reason: reason.to_owned(),
            })
            .inc();
    }

    /// Objects moved for `reason` so far.
    pub fn moves_for(&self, reason: &str) -> u64 {
        self.moves
            .get_or_create(&MoveLabel {
                reason: reason.to_owned(),
            })
            .get()
    }

    /// Sets the objects per shard (shards absent from `counts` drop to zero).
    pub fn set_objects(&self, counts: &std::collections::HashMap<String, i64>) {
        self.objects.clear();
        for (shard, count) in counts {
            self.objects
                .get_or_create(&ShardLabel {
                    shard: shard.clone(),
                })
                .set(*count);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use prometheus_client::encoding::text::encode;

    #[test]
    fn everything_is_exported_with_its_labels() {
        let metrics = ShardingMetrics::default();
        metrics.moved("dead");
        metrics.set_objects(&[("a".to_owned(), 3)].into_iter().collect());
        metrics.drain_duration.observe(0.25);
        let mut registry = Registry::with_prefix("sharding");
        metrics.register(&mut registry);
        let mut text = String::new();
        encode(&mut text, &registry).unwrap();
        assert!(text.contains("sharding_objects{shard=\"a\"} 3"), "{text}");
        assert!(
            text.contains("sharding_moves_total{reason=\"dead\"} 1"),
            "{text}"
        );
        assert!(
            text.contains("sharding_drain_duration_seconds_count 1"),
            "{text}"
        );
        assert_eq!(metrics.moves_for("dead"), 1);
    }
}
