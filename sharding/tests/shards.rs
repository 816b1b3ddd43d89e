//! Three (then four) replicas of a sharded ConfigMap controller on apiserver-sim, on tokio's
//! paused clock, through every change of membership a sharded controller meets, with API
//! faults injected all along; for several seeds (`SHARDING_SEED` picks one, `SHARDING_SEEDS`
//! sets how many).
//!
//! Checked: every object converges; each replica's cache holds only its share; a join moves
//! about a quarter of the objects, all to the newcomer, each drained first; a killed
//! replica's objects move once its Lease runs out; a restart and a sharder failover in the
//! middle of a rebalance lose nothing; every injected fault fired; and the log of reconcile
//! starts and ends shows no two reconciles of one key ever overlapping. Printed: the
//! assignment latency of new objects and the handover time of drained ones (simulated time).

mod support;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use clientgo_apimachinery::DynamicObject;
use clientgo_apiserver_sim::faults::{InjectedError, RequestMatch, WatchFault};
use clientgo_apiserver_sim::{ApiServerSim, SimConfig};
use clientgo_leaderelection::Lease;
use clientgo_rest::{GetParams, PatchParams, PatchType, ResourceClient, RestClient};
use clientgo_sharding::{ShardingMetrics, drain_label, shard_label};
use serde_json::json;
use support::*;
use tokio::time::Instant;

const OBJECTS: usize = 1000;

struct SplitMix64(u64);

impl SplitMix64 {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

fn seeds() -> Vec<u64> {
    if let Some(seed) = std::env::var("SHARDING_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
    {
        return vec![seed];
    }
    let count = std::env::var("SHARDING_SEEDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(3);
    (0..count).map(|i| 0x5EED_0000 + i).collect()
}

/// The test's view of the cluster.
struct World {
    sim: ApiServerSim,
    url: String,
    observer: RestClient,
    log: Arc<support::Log>,
    replicas: BTreeMap<String, Replica>,
    rng: SplitMix64,
    work: Duration,
    /// Per fault kind: (requests of that kind seen when injected, how many injected).
    faults: Vec<(&'static str, &'static str, usize, usize)>,
    watch_closes: usize,
}

impl World {
    fn start(&mut self, id: &str) {
        let replica = start_replica(&self.url, id, &self.log, self.work);
        self.replicas.insert(id.to_owned(), replica);
    }

    fn members(&self) -> BTreeSet<String> {
        self.replicas.keys().cloned().collect()
    }

    /// Injects a random mix of API faults.
    fn inject(&mut self) {
        let kinds: [(&str, &str); 5] = [
            ("patch", "configmaps"),
            ("update", "configmaps"),
            ("list", "configmaps"),
            ("update", "leases"),
            ("get", "leases"),
        ];
        for (verb, resource) in kinds {
            let count = 1 + self.rng.below(3) as usize;
            let error = match self.rng.below(3) {
                0 => InjectedError::InternalError,
                1 => InjectedError::ServiceUnavailable { retry_after: 1 },
                _ => InjectedError::TooManyRequests { retry_after: 1 },
            };
            let seen = self.sim.requests().count(verb, resource);
            self.sim
                .faults()
                .fail_next(count, RequestMatch::new(verb, resource), error);
            self.faults.push((verb, resource, seen, count));
        }
        let fault = if self.rng.below(2) == 0 {
            WatchFault::Close
        } else {
            WatchFault::CutMidFrame
        };
        self.watch_closes += self.sim.faults().watches(fault);
    }

    /// Bumps every object's spec, so reconciles run through what comes next.
    async fn bump(&self, spec: &str) {
        let writes = objects(&self.observer);
        for i in 0..OBJECTS {
            let patch = json!({"data": {"spec": spec}});
            // A fault may hit these too: try again.
            for _ in 0..5 {
                let name = format!("cm-{i}");
                let params = PatchParams::default();
                let sent = writes.patch(&name, PatchType::Merge, &patch, &params);
                if sent.await.is_ok() {
                    break;
                }
            }
        }
    }

    /// Waits (bounded, on the paused clock) until every object is reconciled, assigned to a
    /// member, and not draining; returns the assignment.
    async fn converged(&self, what: &str) -> BTreeMap<String, String> {
        let members = self.members();
        let (shard, drain) = (shard_label(CONTROLLER), drain_label(CONTROLLER));
        let deadline = Instant::now() + Duration::from_secs(600);
        let mut last = String::new();
        loop {
            if let Some(state) = server_state(&self.observer).await {
                let mut assigned = BTreeMap::new();
                let mut waiting = 0;
                for (name, object) in &state {
                    let data = object.data.get("data");
                    let done =
                        data.and_then(|d| d.get("spec")) == data.and_then(|d| d.get("status"));
                    let owner = label_of(object, &shard);
                    let ok = done
                        && label_of(object, &drain).is_none()
                        && owner.is_some_and(|o| members.contains(o));
                    if ok {
                        assigned.insert(name.clone(), owner.unwrap_or_default().to_owned());
                    } else {
                        waiting += 1;
                    }
                }
                let unfair = self.unfair(&assigned);
                if waiting == 0 && !state.is_empty() && unfair.is_none() {
                    return assigned;
                }
                last = match unfair {
                    Some(unfair) if waiting == 0 => unfair,
                    _ => format!("{waiting} of {} objects not converged", state.len()),
                };
            }
            assert!(
                Instant::now() < deadline,
                "{what}: no convergence in 600 s: {last}"
            );
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    }

    /// Which member is off its fair share, if any: a membership change settles only once the
    /// sharder has moved objects to (or from) it, which may come after every object has
    /// converged where it was.
    fn unfair(&self, assigned: &BTreeMap<String, String>) -> Option<String> {
        let fair = assigned.len() / self.replicas.len();
        self.replicas.values().find_map(|replica| {
            let owned = assigned.values().filter(|o| **o == replica.id).count();
            (owned.abs_diff(fair) * 4 >= fair)
                .then(|| format!("{} owns {owned}, fair share {fair}", replica.id))
        })
    }

    fn check_shares(&self, assigned: &BTreeMap<String, String>, what: &str) {
        let n = self.replicas.len();
        for replica in self.replicas.values() {
            let owned = assigned.values().filter(|o| **o == replica.id).count();
            let cached = replica.cached();
            let fair = assigned.len() / n;
            assert!(
                owned.abs_diff(fair) * 4 < fair,
                "{what}: {} owns {owned}, fair share {fair}",
                replica.id
            );
            // The cache holds the shard's objects and nothing else (it may lag a moment).
            assert!(
                cached <= owned + owned / 10 && cached * 10 >= owned * 9,
                "{what}: {} caches {cached} objects, owns {owned}",
                replica.id
            );
        }
    }

    fn sharders(&self) -> Vec<ShardingMetrics> {
        self.replicas.values().map(|r| r.sharder.clone()).collect()
    }

    async fn sharder_leader(&self) -> Option<String> {
        let leases = ResourceClient::<Lease>::namespaced(&self.observer, LEASES);
        let lease = leases
            .get(&format!("{CONTROLLER}-sharder"), &GetParams::default())
            .await
            .ok()?;
        Some(lease.spec.holder_identity).filter(|h| !h.is_empty())
    }
}

fn moved(
    before: &BTreeMap<String, String>,
    after: &BTreeMap<String, String>,
) -> Vec<(String, String)> {
    before
        .iter()
        .filter(|(name, old)| after.get(*name) != Some(*old))
        .map(|(name, old)| (old.clone(), after.get(name).cloned().unwrap_or_default()))
        .collect()
}

/// Mean of a histogram of the sharders' metrics (sum over count), in seconds.
fn mean(
    metrics: &[ShardingMetrics],
    pick: fn(&ShardingMetrics) -> &prometheus_client::metrics::histogram::Histogram,
) -> Option<f64> {
    let (mut sum, mut count) = (0.0, 0u64);
    for m in metrics {
        let mut registry = prometheus_client::registry::Registry::default();
        registry.register("h", "h", pick(m).clone());
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
        for line in text.lines() {
            if let Some(v) = line.strip_prefix("h_sum ") {
                sum += v.parse::<f64>().unwrap_or(0.0);
            } else if let Some(v) = line.strip_prefix("h_count ") {
                count += v.parse::<u64>().unwrap_or(0);
            }
        }
    }
    (count > 0).then(|| sum / count as f64)
}

async fn scenario(seed: u64) {
    let sim = ApiServerSim::start(SimConfig::default()).await.unwrap();
    let url = sim.url().to_string();
    let observer = client(&url);
    let mut rng = SplitMix64(seed);
    let work = Duration::from_millis(5 + rng.below(50));
    let mut world = World {
        sim,
        url,
        observer,
        log: Arc::default(),
        replicas: BTreeMap::new(),
        rng,
        work,
        faults: Vec::new(),
        watch_closes: 0,
    };
    create(&world.observer, 0, OBJECTS, "1").await;

    // Three replicas: every object assigned and reconciled, a third in each cache.
    for id in ["r0", "r1", "r2"] {
        world.start(id);
    }
    world.inject();
    let three = world.converged("three replicas").await;
    world.check_shares(&three, "three replicas");

    // New objects are assigned quickly.
    let created = Instant::now();
    create(&world.observer, OBJECTS, 20, "1").await;
    let writes = objects(&world.observer);
    let deadline = Instant::now() + Duration::from_secs(60);
    for i in OBJECTS..OBJECTS + 20 {
        loop {
            let object: DynamicObject = writes
                .get(&format!("cm-{i}"), &GetParams::default())
                .await
                .unwrap();
            if label_of(&object, &shard_label(CONTROLLER)).is_some() {
                break;
            }
            assert!(Instant::now() < deadline, "cm-{i} not assigned in 60 s");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
    let new_assigned = created.elapsed();
    // Before any replica goes: a killed or restarted sharder takes its histogram with it.
    let latency = mean(&world.sharders(), |m| &m.assignment_latency);
    for i in OBJECTS..OBJECTS + 20 {
        writes
            .delete(&format!("cm-{i}"), &Default::default())
            .await
            .unwrap();
    }

    // A fourth replica: about a quarter moves, all to it, each drained first.
    let acked_before: u64 = world.replicas.values().map(|r| r.gate.acknowledged()).sum();
    world.start("r3");
    world.inject();
    world.bump("2").await;
    let four = world.converged("r3 added").await;
    world.check_shares(&four, "r3 added");
    let moves = moved(&three, &four);
    assert!(
        moves.iter().all(|(_, to)| to == "r3"),
        "a join moved objects between old members"
    );
    assert!(
        moves.len().abs_diff(OBJECTS / 4) * 3 < OBJECTS / 4,
        "{} of {OBJECTS} moved on a join",
        moves.len()
    );
    let acked: u64 = world
        .replicas
        .values()
        .map(|r| r.gate.acknowledged())
        .sum::<u64>()
        - acked_before;
    assert!(
        acked >= moves.len() as u64,
        "{} moved, {acked} drains acknowledged",
        moves.len()
    );

    // A replica killed: its objects move once its Lease runs out.
    let victim = format!("r{}", world.rng.below(4));
    world.replicas.remove(&victim).unwrap().kill();
    world.inject();
    world.bump("3").await;
    let after_kill = world.converged("a replica killed").await;
    assert!(after_kill.values().all(|o| *o != victim));
    let dead: u64 = world.sharders().iter().map(|m| m.moves_for("dead")).sum();
    assert!(
        dead > 0,
        "no object moved off the dead shard by the dead-shard path"
    );
    let fenced: u64 = world
        .sharders()
        .iter()
        .map(|m| m.members_fenced.get())
        .sum();
    assert!(fenced > 0, "the dead shard's Lease was never taken over");
    // Its objects all moved: the sharder gives its hold up by deleting the Lease.
    let leases = ResourceClient::<Lease>::namespaced(&world.observer, LEASES);
    let lease = clientgo_sharding::member_lease_name(CONTROLLER, &victim);
    let deadline = Instant::now() + Duration::from_secs(60);
    while leases.get(&lease, &GetParams::default()).await.is_ok() {
        assert!(Instant::now() < deadline, "{lease} still there after 60 s");
        tokio::time::sleep(Duration::from_millis(250)).await;
    }

    // A replica restarted (clean stop, same identity).
    let again = world.replicas.keys().next().cloned().unwrap();
    world.replicas.remove(&again).unwrap().stop().await;
    world.start(&again);
    world.inject();
    world.bump("4").await;
    let restarted = world.converged("a replica restarted").await;
    world.check_shares(&restarted, "a replica restarted");

    // The sharder's leader killed in the middle of a rebalance.
    let drains_before: u64 = world.sharders().iter().map(|m| m.drains.get()).sum();
    world.start("r4");
    world.inject();
    let deadline = Instant::now() + Duration::from_secs(120);
    while world.sharders().iter().map(|m| m.drains.get()).sum::<u64>() == drains_before {
        assert!(Instant::now() < deadline, "the rebalance never started");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let leader = world.sharder_leader().await.expect("a sharder leads");
    let survivors_metrics = world.sharders();
    world.replicas.remove(&leader).unwrap().kill();
    world.bump("5").await;
    let last = world
        .converged("the sharder's leader killed mid-rebalance")
        .await;
    world.check_shares(&last, "the sharder's leader killed mid-rebalance");

    // Every injected fault fired.
    for (verb, resource, seen, count) in &world.faults {
        let now = world.sim.requests().count(verb, resource);
        assert!(
            now >= seen + count,
            "{count} faults on {verb} {resource}: only {} requests since",
            now - seen
        );
    }
    assert!(world.watch_closes > 0, "no watch was cut");

    world.log.assert_no_overlap();
    let handover = mean(&survivors_metrics, |m| &m.drain_duration);
    println!(
        "seed {seed}: {} reconciles, no overlap; {} moved on a join; 20 new objects assigned within {new_assigned:?}; \
         mean assignment latency {:?} s, mean handover (drain) {:?} s (simulated time)",
        world.log.len(),
        moves.len(),
        latency,
        handover,
    );
    for replica in world.replicas.values() {
        replica.stop().await;
    }
}

#[test]
fn sharded_replicas_never_overlap_and_always_converge() {
    for seed in seeds() {
        println!("seed {seed} (rerun alone with SHARDING_SEED={seed})");
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .start_paused(true)
            .build()
            .unwrap()
            .block_on(scenario(seed));
    }
}
