//! The sharder's fence against its own lagging view, on apiserver-sim and tokio's paused
//! clock: with the watch of the member Leases stalled (the sharder sees no renewal, while
//! every replica goes on renewing and working), each member in turn looks dead to the
//! sharder's clock. Before moving a member's objects the sharder must hold its Lease, which
//! it takes only after a consistent read shows no renewal for a whole lease duration; so it
//! finds each member alive, and moves nothing. Without the fence, the member that looked dead
//! first had its objects moved to the others while it still reconciled them.

mod support;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use clientgo_apiserver_sim::faults::WatchFault;
use clientgo_apiserver_sim::{ApiServerSim, SimConfig};
use clientgo_rest::{PatchParams, PatchType};
use serde_json::json;
use support::*;
use tokio::time::Instant;

const OBJECTS: usize = 300;

/// Sets every object's spec to `spec`.
async fn bump(client: &clientgo_rest::RestClient, spec: &str) {
    let writes = objects(client);
    for i in 0..OBJECTS {
        let patch = json!({"data": {"spec": spec}});
        writes
            .patch(
                &format!("cm-{i}"),
                PatchType::Merge,
                &patch,
                &PatchParams::default(),
            )
            .await
            .unwrap();
    }
}

#[tokio::test(start_paused = true)]
async fn a_sharder_that_sees_no_renewals_moves_no_live_members_objects() {
    let sim = ApiServerSim::start(SimConfig::default()).await.unwrap();
    let url = sim.url().to_string();
    let observer = client(&url);
    let log: Arc<Log> = Arc::default();
    create(&observer, 0, OBJECTS, "1").await;
    // Started 700 ms apart, as pods are: each renews every 2 s from its own start, so the
    // renewals the sharder sees, and the moments their Leases look expired, are staggered.
    let ids = ["r0", "r1", "r2"];
    let mut replicas = Vec::new();
    for id in ids {
        replicas.push(start_replica(&url, id, &log, Duration::from_millis(20)));
        tokio::time::sleep(Duration::from_millis(700)).await;
    }
    let members: BTreeSet<String> = ids.iter().map(|id| id.to_string()).collect();
    let before = settled(&observer, &members, "1", "three replicas").await;

    let metrics = || {
        replicas
            .iter()
            .map(|r| r.sharder.clone())
            .collect::<Vec<_>>()
    };
    let dead_moves = || metrics().iter().map(|m| m.moves_for("dead")).sum::<u64>();
    let fenced = || {
        metrics()
            .iter()
            .map(|m| m.members_fenced.get())
            .sum::<u64>()
    };
    let reads = sim.requests().count("get", "leases");

    // A few renewals first: right after its initial list the sharder counts every Lease as
    // renewed at that moment, which would make them all look expired at once.
    tokio::time::sleep(Duration::from_secs(7)).await;
    // The sharder's Lease watch goes silent; the replicas' own watches do not.
    let stalled = sim.faults().watches_of("leases", WatchFault::Stall);
    assert!(stalled > 0, "no watch was open to stall");
    bump(&observer, "2").await;
    // Three lease durations: every member's Lease looks expired to the sharder, one after
    // the other, several times over.
    tokio::time::sleep(Duration::from_secs(45)).await;
    assert_eq!(dead_moves(), 0, "objects moved off a live member");
    assert_eq!(fenced(), 0, "a live member's Lease was taken over");
    assert!(
        sim.requests().count("get", "leases") > reads,
        "the sharder never read a member Lease: the fault did not reach it"
    );

    // The watch comes back; everything converges where it was.
    sim.faults().watches_of("leases", WatchFault::Close);
    bump(&observer, "3").await;
    let after = settled(&observer, &members, "3", "after the stall").await;
    assert_eq!(before, after, "no object changed shard");
    let overlaps = log.overlaps();
    assert!(
        overlaps.is_empty(),
        "reconciles overlapped:\n{}",
        overlaps.join("\n")
    );
    for replica in &replicas {
        replica.stop().await;
    }
}

/// Waits (bounded, on the paused clock) until every object is reconciled at `spec`, assigned
/// to one of `members` and not draining; returns the assignment.
async fn settled(
    client: &clientgo_rest::RestClient,
    members: &BTreeSet<String>,
    spec: &str,
    what: &str,
) -> BTreeMap<String, String> {
    let deadline = Instant::now() + Duration::from_secs(300);
    loop {
        if let Some(assigned) = assignment(client, members, spec).await {
            return assigned;
        }
        assert!(Instant::now() < deadline, "{what}: no convergence in 300 s");
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}
