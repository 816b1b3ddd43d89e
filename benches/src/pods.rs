//! The pods of the decode workloads: the PodList of the benchmark plan's generator
//! (`../shared/bench/gen-podlist.py`), or the same shape generated here, and a recorded watch
//! stream of pod events built from them.
//!
//! [`podlist`] prefers the plan's own bytes, so D1 decodes exactly what the peers' harnesses
//! decode: a file named by `CLIENTGO_BENCH_PODLIST` (bench-report generates it once for all
//! its child processes), else the output of `python3 gen-podlist.py` found beside the
//! repository. Without Python it falls back to [`generate`], a Rust port of the generator's
//! shape (same fields, names, counts and nesting, about 2.9 KB per pod; seeded with
//! splitmix64 rather than Python's Mersenne Twister, so the bytes differ but not their size).

use std::path::PathBuf;
use std::process::Command;

use bytes::Bytes;
use serde_json::{Value, json};

use crate::SplitMix64;

/// The environment variable naming a pre-generated PodList file of 10,000 pods (D1).
pub const PODLIST_ENV: &str = "CLIENTGO_BENCH_PODLIST";
/// The environment variable naming a pre-generated PodList file of 100,000 pods (S1).
pub const PODLIST_100K_ENV: &str = "CLIENTGO_BENCH_PODLIST_100K";

/// The environment variable naming a pre-generated file of `pods` pods, if there is one.
pub fn podlist_env(pods: usize) -> Option<&'static str> {
    match pods {
        10_000 => Some(PODLIST_ENV),
        100_000 => Some(PODLIST_100K_ENV),
        _ => None,
    }
}
/// The environment variable saying how that file was made (`gen-podlist.py` or
/// `rust-generator`), for the report.
pub const PODLIST_SOURCE_ENV: &str = "CLIENTGO_BENCH_PODLIST_SOURCE";

const TIERS: [&str; 3] = ["frontend", "backend", "cache"];
const IMAGES: [(&str, &str); 4] = [
    ("registry.local/shop/web", "1.24.3"),
    ("registry.local/shop/api", "2.7.0"),
    ("registry.local/shop/worker", "0.9.12"),
    ("registry.local/infra/redis", "7.2.4"),
];
const SIDECAR: &str = "registry.local/infra/log-agent:3.1.1";
const ALNUM: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";

/// Where the PodList came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    /// The file named by [`PODLIST_ENV`], made by the generator [`PODLIST_SOURCE_ENV`] names.
    File,
    /// `gen-podlist.py`.
    Python,
    /// [`generate`].
    Rust,
}

impl Source {
    /// A short name for reports.
    pub fn as_str(self) -> String {
        match self {
            Source::File => std::env::var(PODLIST_SOURCE_ENV).unwrap_or_else(|_| "file".into()),
            Source::Python => "gen-podlist.py".into(),
            Source::Rust => "rust-generator".into(),
        }
    }
}

/// The generator script, if it is where the repository layout puts it.
pub fn generator_script() -> Option<PathBuf> {
    let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    [
        manifest.join("../../shared/bench/gen-podlist.py"),
        manifest.join("../shared/bench/gen-podlist.py"),
    ]
    .into_iter()
    .find(|p| p.is_file())
}

/// Runs `gen-podlist.py --pods n --seed 1`; `None` if it is missing or fails.
pub fn python_podlist(pods: usize) -> Option<Vec<u8>> {
    let script = generator_script()?;
    let output = Command::new("python3")
        .arg(script)
        .args(["--pods", &pods.to_string(), "--seed", "1"])
        .output()
        .ok()?;
    output.status.success().then_some(output.stdout)
}

/// A PodList of `pods` pods: see the module documentation for where it comes from.
pub fn podlist(pods: usize) -> (Vec<u8>, Source) {
    let file = podlist_env(pods).and_then(std::env::var_os);
    if let Some(bytes) = file.and_then(|p| std::fs::read(p).ok()) {
        return (bytes, Source::File);
    }
    generated(pods)
}

/// A PodList of `pods` pods from gen-podlist.py, or from [`generate`] without Python.
pub fn generated(pods: usize) -> (Vec<u8>, Source) {
    match python_podlist(pods) {
        Some(bytes) => (bytes, Source::Python),
        None => (generate(pods, 1), Source::Rust),
    }
}

fn suffix(rng: &mut SplitMix64, n: usize) -> String {
    (0..n)
        .map(|_| ALNUM[(rng.next_u64() % ALNUM.len() as u64) as usize] as char)
        .collect()
}

fn hex(rng: &mut SplitMix64, n: usize) -> String {
    (0..n)
        .map(|_| char::from(b"0123456789abcdef"[(rng.next_u64() % 16) as usize]))
        .collect()
}

fn uid(rng: &mut SplitMix64) -> String {
    let h = hex(rng, 32);
    format!(
        "{}-{}-4{}-a{}-{}",
        &h[0..8],
        &h[8..12],
        &h[13..16],
        &h[17..20],
        &h[20..32]
    )
}

fn below(rng: &mut SplitMix64, n: u64) -> u64 {
    rng.next_u64() % n
}

/// `2024-MM-DDThh:mm:ssZ`, `seconds` after 2024-01-01 (within the first quarter).
fn timestamp(seconds: u64) -> String {
    let (mut day, rem) = (seconds / 86_400, seconds % 86_400);
    let mut month = 0;
    for days in [31, 29, 31] {
        if month < 2 && day >= days {
            day -= days;
            month += 1;
        }
    }
    let (h, m, s) = (rem / 3600, rem % 3600 / 60, rem % 60);
    format!("2024-{:02}-{:02}T{h:02}:{m:02}:{s:02}Z", month + 1, day + 1)
}

/// Pod `i`, as gen-podlist.py shapes it, at resourceVersion `rv`.
pub fn pod(i: usize, rng: &mut SplitMix64, rv: u64) -> Value {
    let app = format!("a{}", i % 50);
    let tier = TIERS[i % TIERS.len()];
    let hash = hex(rng, 10);
    let name = format!("{app}-{hash}-{}-{i}", suffix(rng, 5));
    let created_s = below(rng, 80 * 86_400);
    let created = timestamp(created_s);
    let started = timestamp(created_s + 2 + below(rng, 28));
    let owner = uid(rng);
    let node = format!("node-{:03}", below(rng, 200));
    let ip = format!(
        "10.{}.{}.{}",
        below(rng, 256),
        below(rng, 256),
        2 + below(rng, 252)
    );
    let (image, tag) = IMAGES[i % IMAGES.len()];
    let cpu = [50, 100, 200, 250, 500][below(rng, 5) as usize];
    let mem = [64, 128, 256, 512][below(rng, 4) as usize];
    let port = [8080, 8443, 9090, 6379][below(rng, 4) as usize];
    let owner_key = format!("k:{{\"uid\":\"{owner}\"}}");
    let managed = json!([
        {"manager": "kube-controller-manager", "operation": "Update", "apiVersion": "v1",
         "time": created, "fieldsType": "FieldsV1", "fieldsV1": {
            "f:metadata": {"f:labels": {".": {}, "f:app": {}, "f:pod-template-hash": {}, "f:tier": {}},
                           "f:ownerReferences": {".": {}, owner_key: {}}},
            "f:spec": {"f:containers": {"k:{\"name\":\"main\"}": {".": {}, "f:image": {}}}}}},
        {"manager": "kubelet", "operation": "Update", "apiVersion": "v1", "time": created,
         "fieldsType": "FieldsV1", "fieldsV1": {"f:status": {
            "f:conditions": {"k:{\"type\":\"Ready\"}": {".": {}, "f:status": {}}},
            "f:phase": {}, "f:podIP": {}}}, "subresource": "status"}
    ]);
    let main_image = format!("{image}:{tag}");
    let statuses: Vec<Value> = [("log-agent", SIDECAR), ("main", main_image.as_str())]
        .iter()
        .map(|(cname, cimg)| {
            let repo = cimg.split(':').next().unwrap_or(cimg);
            let restarts = [0, 0, 0, 1, 2][below(rng, 5) as usize];
            json!({"name": cname, "state": {"running": {"startedAt": started}}, "ready": true,
                   "restartCount": restarts, "image": cimg,
                   "imageID": format!("{repo}@sha256:{}", hex(rng, 64)),
                   "containerID": format!("containerd://{}", hex(rng, 64))})
        })
        .collect();
    let conditions: Vec<Value> = ["Ready", "ContainersReady", "PodScheduled"]
        .iter()
        .map(|t| {
            let at = if *t == "PodScheduled" {
                &created
            } else {
                &started
            };
            json!({"type": t, "status": "True", "lastTransitionTime": at})
        })
        .collect();
    json!({
        "metadata": {
            "name": name, "namespace": format!("ns-{}", i % 100), "uid": uid(rng),
            "resourceVersion": rv.to_string(), "creationTimestamp": created,
            "labels": {"app": app, "pod-template-hash": hash, "tier": tier},
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet",
                "name": format!("{app}-{hash}"), "uid": owner, "controller": true,
                "blockOwnerDeletion": true}],
            "managedFields": managed,
        },
        "spec": {
            "containers": [
                {"name": "main", "image": main_image,
                 "ports": [{"name": "http", "containerPort": port, "protocol": "TCP"}],
                 "env": [{"name": "APP_NAME", "value": app},
                         {"name": "POD_NAME", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.name"}}}],
                 "resources": {"limits": {"cpu": format!("{}m", cpu * 2), "memory": format!("{}Mi", mem * 2)},
                               "requests": {"cpu": format!("{cpu}m"), "memory": format!("{mem}Mi")}},
                 "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File",
                 "imagePullPolicy": "IfNotPresent"},
                {"name": "log-agent", "image": SIDECAR,
                 "resources": {"requests": {"cpu": "10m", "memory": "32Mi"}}, "imagePullPolicy": "IfNotPresent"}
            ],
            "restartPolicy": "Always", "dnsPolicy": "ClusterFirst",
            "serviceAccountName": "default", "nodeName": node
        },
        "status": {
            "phase": "Running", "conditions": conditions, "podIP": ip, "startTime": created,
            "containerStatuses": statuses
        }
    })
}

/// A compact PodList JSON of `pods` pods, in gen-podlist.py's shape.
pub fn generate(pods: usize, seed: u64) -> Vec<u8> {
    let mut rng = SplitMix64::new(seed);
    let base_rv = 1000;
    let mut out = Vec::with_capacity(pods * 3000 + 128);
    out.extend_from_slice(
        format!(
            "{{\"apiVersion\":\"v1\",\"kind\":\"PodList\",\"metadata\":{{\"resourceVersion\":\"{}\"}},\"items\":[",
            base_rv + pods as u64
        )
        .as_bytes(),
    );
    for i in 0..pods {
        if i > 0 {
            out.push(b',');
        }
        let pod = pod(i, &mut rng, base_rv + i as u64);
        serde_json::to_writer(&mut out, &pod).expect("a JSON value serializes");
    }
    out.extend_from_slice(b"]}\n");
    out
}

/// A recorded watch stream of `events` pod events (ADDED for the first `pods`, then
/// MODIFIED), one JSON object per line as the API server writes them, cut into chunks of
/// `chunk` bytes as a transport hands them over (frames split anywhere).
pub fn watch_stream(events: usize, pods: usize, chunk: usize) -> (Vec<Bytes>, usize) {
    let mut rng = SplitMix64::new(7);
    let mut body = Vec::with_capacity(events * 3100);
    for i in 0..events {
        let kind = if i < pods { "ADDED" } else { "MODIFIED" };
        let mut object = pod(i % pods, &mut rng, 5000 + i as u64);
        object["apiVersion"] = json!("v1");
        object["kind"] = json!("Pod");
        // `type` first, as the API server writes it (a `json!` map would sort `object` first,
        // which makes the decoder buffer the object before it knows the event's type).
        body.extend_from_slice(format!("{{\"type\":\"{kind}\",\"object\":").as_bytes());
        serde_json::to_writer(&mut body, &object).expect("a JSON value serializes");
        body.extend_from_slice(b"}\n");
    }
    let total = body.len();
    let body = Bytes::from(body);
    let chunks = (0..total)
        .step_by(chunk.max(1))
        .map(|start| body.slice(start..(start + chunk).min(total)))
        .collect();
    (chunks, total)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_pods_have_the_plans_shape_and_size() {
        let list: Value = serde_json::from_slice(&generate(200, 1)).unwrap();
        let items = list["items"].as_array().unwrap();
        assert_eq!(items.len(), 200);
        assert_eq!(items[7]["metadata"]["namespace"], "ns-7");
        assert_eq!(items[7]["metadata"]["labels"]["app"], "a7");
        assert_eq!(
            items[0]["metadata"]["managedFields"]
                .as_array()
                .unwrap()
                .len(),
            2
        );
        let bytes = generate(1000, 1).len() / 1000;
        assert!((2700..3100).contains(&bytes), "{bytes} bytes per pod");
        assert_eq!(timestamp(31 * 86_400 + 3661), "2024-02-01T01:01:01Z");
    }

    #[test]
    fn the_watch_stream_is_split_into_chunks() {
        let (chunks, total) = watch_stream(10, 5, 1000);
        assert_eq!(chunks.iter().map(Bytes::len).sum::<usize>(), total);
        let joined: Vec<u8> = chunks.concat();
        let lines: Vec<&[u8]> = joined
            .split(|&b| b == b'\n')
            .filter(|l| !l.is_empty())
            .collect();
        assert_eq!(lines.len(), 10);
        let last: Value = serde_json::from_slice(lines[9]).unwrap();
        assert_eq!(last["type"], "MODIFIED");
        assert!(lines[0].starts_with(b"{\"type\":\"ADDED\",\"object\":{"));
    }
}
