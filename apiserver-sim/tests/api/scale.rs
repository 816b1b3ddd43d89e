//! Scale: many objects (memory close to their JSON size, paginated lists) and many watches.

use clientgo_apiserver_sim::SimConfig;
use serde_json::json;

use crate::support::*;

/// Defaults keep the debug-build suite fast; `SIM_SCALE_OBJECTS=100000 SIM_SCALE_WATCHES=1000`
/// runs the full-size check.
fn knob(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_objects_and_many_watches() {
    let objects = knob("SIM_SCALE_OBJECTS", 20_000);
    let watches_n = knob("SIM_SCALE_WATCHES", 300);
    let (sim, c) = start(SimConfig::default()).await;
    let mut json_bytes = 0;
    let started = std::time::Instant::now();
    for i in 0..objects {
        let obj = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": format!("cm-{i:06}"), "labels": {"app": "scale", "shard": (i % 10).to_string()}},
            "data": {"payload": "x".repeat(800)}});
        let created = sim
            .create("", "v1", "configmaps", "default", obj)
            .expect("create");
        json_bytes += serde_json::to_vec(&created).expect("json").len();
    }
    let creates = started.elapsed();
    let (count, heap) = sim.store_stats();
    assert_eq!(count, objects + 4, "objects plus the 4 namespaces");
    let ratio = heap as f64 / json_bytes as f64;
    eprintln!(
        "{objects} objects: {heap} bytes stored for {json_bytes} bytes of JSON ({ratio:.3}x), created in {:.2} s",
        creates.as_secs_f64()
    );
    assert!(ratio < 1.3, "memory per object {ratio:.2}x its JSON size");

    // A full paginated list over HTTP.
    let mut seen = 0;
    let mut token = String::new();
    loop {
        let path = if token.is_empty() {
            "/api/v1/namespaces/default/configmaps?limit=500".to_owned()
        } else {
            format!("/api/v1/namespaces/default/configmaps?limit=500&continue={token}")
        };
        let r = c.get(&path).await;
        assert_eq!(r.status, 200);
        seen += r.body["items"].as_array().expect("items").len();
        match r.body["metadata"]["continue"].as_str() {
            Some(t) => token = t.to_owned(),
            None => break,
        }
    }
    assert_eq!(seen, objects);

    let now = sim.resource_version();
    let mut watches = Vec::with_capacity(watches_n);
    for i in 0..watches_n {
        let shard = i % 10;
        watches.push(c.watch(&format!("/api/v1/namespaces/default/configmaps?watch=1&resourceVersion={now}&labelSelector=shard%3D{shard}")).await);
    }
    for shard in 0..10 {
        c.configmap(
            "default",
            &format!("new-{shard}"),
            json!({"shard": shard.to_string()}),
        )
        .await;
    }
    for (i, w) in watches.iter_mut().enumerate() {
        let (t, o) = w.event().await;
        assert_eq!(t, "ADDED");
        assert_eq!(name(&o), format!("new-{}", i % 10));
    }
}
