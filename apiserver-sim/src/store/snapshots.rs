//! The watch cache's snapshots: which past revisions of a watch-cached resource can still be
//! read once etcd has compacted them.
//!
//! Mirrors kube-apiserver 1.36's `ListFromCacheSnapshot` (`storage/cacher`): the watch cache
//! of each resource keeps a snapshot of its store after every event, and an `Exact` list
//! (or `resourceVersion=N` with `limit`, or a continue token) at revision N is served from
//! the latest snapshot at or before N, whatever etcd compacted. The snapshots are dropped
//! (`WatchCacheStorage.Compact`) when kube-apiserver's own compactor compacts etcd: it runs
//! every 5 minutes (`--etcd-compaction-interval`) and compacts to the revision it read at
//! its previous run, so a snapshot is served for 5 to 10 minutes after the writes that
//! follow it (observed on kube-apiserver 1.36.2: a compaction from outside, 460 later
//! events and the watch cache's resizing left it served; the compactor's run dropped it).
//! The sim replays that compactor's schedule from its start (and [`crate::ApiServerSim::compact`]
//! is such a run; `compact_etcd` a compaction from outside); the objects come from the
//! store's history, which must still hold the revision (`history_size` events of all
//! resources together: the bound on memory, no copy of the objects is kept for snapshots).

use std::time::{Duration, Instant};

/// kube-apiserver's default `--etcd-compaction-interval`.
const INTERVAL: Duration = Duration::from_secs(300);

/// kube-apiserver's compactor, as far as its snapshots are concerned.
#[derive(Debug)]
pub struct Compactor {
    started: Instant,
    /// Runs done so far.
    runs: u64,
    /// The revision read at the last run (compacted to at the next one).
    read_at_last_run: u64,
    /// The revision compacted to at the last run: snapshots before it are gone.
    compacted: u64,
}

impl Compactor {
    /// A compactor started at `now`.
    pub fn new(now: Instant) -> Compactor {
        Compactor {
            started: now,
            runs: 0,
            read_at_last_run: 0,
            compacted: 0,
        }
    }

    /// Plays the runs due by `now`; `rev` is the store's revision (the writes since the last
    /// call come after every run it plays).
    pub fn advance(&mut self, now: Instant, rev: u64) {
        let due = now.saturating_duration_since(self.started).as_secs() / INTERVAL.as_secs();
        while self.runs < due {
            // The first run only reads the revision ("we don't compact on bootstrap").
            if self.runs > 0 {
                self.compacted = self.read_at_last_run;
            }
            self.read_at_last_run = rev;
            self.runs += 1;
        }
    }

    /// A compaction by kube-apiserver's compactor to `rev`, now: snapshots before it go.
    pub fn compact(&mut self, rev: u64) {
        self.compacted = self.compacted.max(rev);
    }

    /// Whether the snapshots still serve revision `at`.
    pub fn servable(&self, at: u64) -> bool {
        at >= self.compacted
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_snapshot_lasts_until_the_run_after_the_next() {
        let start = Instant::now();
        let mut c = Compactor::new(start);
        c.advance(start + Duration::from_secs(299), 10);
        assert!(c.servable(1));
        // First run: reads 20, compacts nothing.
        c.advance(start + Duration::from_secs(300), 20);
        assert!(c.servable(1));
        // Second run: compacts to 20.
        c.advance(start + Duration::from_secs(600), 30);
        assert!(!c.servable(19));
        assert!(c.servable(20));
        // Runs missed while idle are all played.
        c.advance(start + Duration::from_secs(1500), 40);
        assert!(!c.servable(39));
    }
}
