//! The sharder's fence, on apiserver-sim and tokio's paused clock. First, against its own
//! lagging view: with the watch of the member Leases stalled (the sharder sees no renewal, while
//! every replica goes on renewing and working), each member in turn looks dead to the
//! sharder's clock. Before moving a member's objects the sharder must hold its Lease, which
//! it takes only after a consistent read shows no renewal for a whole lease duration; so it
//! finds each member alive, and moves nothing. Without the fence, the member that looked dead
//! first had its objects moved to the others while it still reconciled them. Then, a member
//! whose renewals stall at the server: it fences itself at its renew deadline, and its
//! objects move only once the sharder holds its Lease.

mod support;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use clientgo_apiserver_sim::faults::{RequestMatch, WatchFault};
use clientgo_apiserver_sim::{ApiServerSim, SimConfig};
use clientgo_leaderelection::Lease;
use clientgo_rest::{GetParams, PatchParams, PatchType, ResourceClient};
use serde_json::json;
use support::*;
use tokio::time::Instant;

const OBJECTS: usize = 300;

/// Sets the spec of the first `count` objects to `spec`.
async fn bump(client: &clientgo_rest::RestClient, count: usize, spec: &str) {
    let writes = objects(client);
    for i in 0..count {
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

/// A sim with the test's objects at spec "1", and replicas r0, r1 and r2 of their controller,
/// started 700 ms apart as pods are: each renews every 2 s from its own start, so the
/// renewals the sharder sees, and the moments their Leases would look expired, are staggered.
async fn three_replicas() -> (
    ApiServerSim,
    clientgo_rest::RestClient,
    Arc<Log>,
    Vec<Replica>,
) {
    let sim = ApiServerSim::start(SimConfig::default()).await.unwrap();
    let url = sim.url().to_string();
    let observer = client(&url);
    let log: Arc<Log> = Arc::default();
    create(&observer, 0, OBJECTS, "1").await;
    let mut replicas = Vec::new();
    for id in ["r0", "r1", "r2"] {
        replicas.push(start_replica(&url, id, &log, Duration::from_millis(20)));
        tokio::time::sleep(Duration::from_millis(700)).await;
    }
    (sim, observer, log, replicas)
}

#[tokio::test(start_paused = true)]
async fn a_sharder_that_sees_no_renewals_moves_no_live_members_objects() {
    let (sim, observer, log, replicas) = three_replicas().await;
    let members: BTreeSet<String> = ["r0", "r1", "r2"].map(String::from).into();
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
    bump(&observer, OBJECTS, "2").await;
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
    bump(&observer, OBJECTS, "3").await;
    let after = settled(&observer, &members, "3", "after the stall").await;
    assert_eq!(before, after, "no object changed shard");
    log.assert_no_overlap();
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

/// One member's renewals stall at the server (each held there past its timeout, as behind a
/// hung connection) while the others renew as usual. The member fences itself at its renew
/// deadline; the sharder, which has seen no renewal for a lease duration, takes its Lease and
/// only then moves its objects to the two others, and deletes the Lease once all have moved.
/// No reconcile overlaps.
#[tokio::test(start_paused = true)]
async fn a_member_whose_renewals_stall_is_fenced_before_its_objects_move() {
    let (sim, observer, log, replicas) = three_replicas().await;
    let all: BTreeSet<String> = ["r0", "r1", "r2"].map(String::from).into();
    let before = settled(&observer, &all, "1", "three replicas").await;
    let owned = before.values().filter(|o| *o == "r1").count();
    assert!(owned > 0, "r1 owns nothing");

    let lease = clientgo_sharding::member_lease_name(CONTROLLER, "r1");
    sim.faults().delay_next(
        2,
        RequestMatch::new("update", "leases").named(&lease),
        Duration::from_secs(30),
    );
    bump(&observer, OBJECTS, "2").await;
    let stalled_at = Instant::now();
    // r1 finds its renewals failing for the renew deadline: its membership ends (Lost).
    let r1 = replicas[1].task.lock().take().unwrap();
    let lost = tokio::time::timeout(Duration::from_secs(60), r1).await;
    assert!(lost.is_ok(), "r1 was not fenced within 60 s");
    assert!(
        stalled_at.elapsed() < Duration::from_secs(15),
        "r1 stopped {:?} after its renewals stalled: not before its lease ran out",
        stalled_at.elapsed()
    );
    assert!(sim.faults().delayed() >= 1, "no renewal of r1 was held");

    let others: BTreeSet<String> = ["r0", "r2"].map(String::from).into();
    let after = settled(&observer, &others, "2", "r1's objects moved").await;
    for (name, owner) in &before {
        if owner != "r1" {
            assert_eq!(after.get(name), Some(owner), "{name} left a live member");
        }
    }
    let metrics: Vec<_> = replicas.iter().map(|r| r.sharder.clone()).collect();
    let fenced: u64 = metrics.iter().map(|m| m.members_fenced.get()).sum();
    let dead: u64 = metrics.iter().map(|m| m.moves_for("dead")).sum();
    assert!(fenced >= 1, "r1's Lease was never taken over");
    assert_eq!(dead, owned as u64, "r1's objects, each moved once");
    let leases = ResourceClient::<Lease>::namespaced(&observer, LEASES);
    let deadline = Instant::now() + Duration::from_secs(60);
    while leases.get(&lease, &GetParams::default()).await.is_ok() {
        assert!(Instant::now() < deadline, "{lease} still there after 60 s");
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    log.assert_no_overlap();
    for replica in replicas.iter().filter(|r| r.id != "r1") {
        replica.stop().await;
    }
}

/// Throttled as client-go throttles by default (the controller's and the sharder's requests
/// at 5 per second, burst 10; the Leases through a client of their own, as
/// `ShardedReplica::new` takes them): the initial assignment of the objects and a rebalance
/// when a fourth replica joins go through the throttle, label write by label write. The
/// sharder keeps its role throughout (its Lease never changes hands), the join drains objects
/// to the newcomer, and no reconcile overlaps. (On the sim this also passes with the sharder's
/// election on the throttled client: its workers and the bounded acknowledgements keep the
/// throttle's queue short; the client of its own is the margin for a longer queue.)
#[tokio::test(start_paused = true)]
async fn a_rebalance_behind_a_throttle_keeps_the_sharder_elected() {
    let sim = ApiServerSim::start(SimConfig::default()).await.unwrap();
    let url = sim.url().to_string();
    let observer = client(&url);
    let log: Arc<Log> = Arc::default();
    create(&observer, 0, OBJECTS, "1").await;
    let start = |id: &str| {
        let (controller, elections) = (throttled_client(&url, 5.0), client(&url));
        start_replica_with(&controller, &elections, id, &log, Duration::from_millis(20))
    };
    let mut replicas = vec![start("r0")];
    let leases = ResourceClient::<Lease>::namespaced(&observer, LEASES);
    let sharder = format!("{CONTROLLER}-sharder");
    let first = eventually_held(&leases, &sharder).await;
    for id in ["r1", "r2"] {
        tokio::time::sleep(Duration::from_millis(700)).await;
        replicas.push(start(id));
    }
    let three: BTreeSet<String> = ["r0", "r1", "r2"].map(String::from).into();
    settled(&observer, &three, "1", "three throttled replicas").await;
    replicas.push(start("r3"));
    let four: BTreeSet<String> = ["r0", "r1", "r2", "r3"].map(String::from).into();
    bump(&observer, OBJECTS, "2").await;
    settled(&observer, &four, "2", "a fourth throttled replica").await;
    let drains: u64 = replicas.iter().map(|r| r.sharder.drains.get()).sum();
    assert!(
        drains > 0,
        "the join moved nothing: no rebalance was tested"
    );
    let last = leases.get(&sharder, &GetParams::default()).await.unwrap();
    assert_eq!(
        (
            last.spec.holder_identity.as_str(),
            last.spec.leader_transitions
        ),
        (
            first.spec.holder_identity.as_str(),
            first.spec.leader_transitions
        ),
        "the sharder's Lease changed hands during the assignment or the rebalance"
    );
    log.assert_no_overlap();
    for replica in &replicas {
        replica.stop().await;
    }
}

/// The Lease `name` once someone holds it (bounded, on the paused clock).
async fn eventually_held(leases: &ResourceClient<Lease>, name: &str) -> Lease {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Ok(lease) = leases.get(name, &GetParams::default()).await
            && !lease.spec.holder_identity.is_empty()
        {
            return lease;
        }
        assert!(Instant::now() < deadline, "nobody holds {name} after 60 s");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
