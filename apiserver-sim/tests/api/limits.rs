//! The limits that keep one client from exhausting the server: JSON patch size, a slow
//! request's headers, an overflowing `timeoutSeconds`; and the secrets it keeps out of
//! `Debug` and out of other users' reach.

use std::time::Duration;

use clientgo_apiserver_sim::{ApiServerSim, SimConfig};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::time::Instant;

use crate::support::*;

const CMS: &str = "/api/v1/namespaces/default/configmaps";
const JSON_PATCH: &str = "application/json-patch+json";

#[tokio::test]
async fn json_patch_operations_size_and_depth_are_limited() {
    let (_sim, c) = sim().await;
    c.configmap("default", "a", json!({})).await;
    let test_op = json!({"op": "test", "path": "/kind", "value": "ConfigMap"});
    let r = c
        .patch(
            &format!("{CMS}/a"),
            JSON_PATCH,
            Value::Array(vec![test_op; 10_001]),
        )
        .await;
    assert_status(&r, 413, "RequestEntityTooLarge");

    // Doubling the data 12 times from 1 KiB makes 4 MiB.
    let mut ops = vec![json!({"op": "add", "path": "/data/big", "value": ["x".repeat(1024)]})];
    ops.extend((0..12).map(|_| json!({"op": "copy", "from": "/data/big", "path": "/data/big/-"})));
    let r = c
        .patch(&format!("{CMS}/a"), JSON_PATCH, Value::Array(ops))
        .await;
    assert_status(&r, 413, "RequestEntityTooLarge");

    // Copying an object into itself nests it one level deeper each time.
    let mut ops = vec![json!({"op": "add", "path": "/metadata/annotations", "value": {}})];
    ops.extend((0..200).map(|_| {
        json!({"op": "copy", "from": "/metadata/annotations", "path": "/metadata/annotations/a"})
    }));
    let r = c
        .patch(&format!("{CMS}/a"), JSON_PATCH, Value::Array(ops))
        .await;
    assert_status(&r, 413, "RequestEntityTooLarge");

    let r = c.get(&format!("{CMS}/a")).await;
    assert_eq!(r.body["data"], json!({"k": "v"}), "nothing was applied");
}

/// A client that sends half a request line never gets its connection held forever.
#[tokio::test(start_paused = true)]
async fn a_request_whose_headers_never_finish_is_closed_after_the_header_read_timeout() {
    let sim = ApiServerSim::start(SimConfig::default()).await.unwrap();
    let mut stream = tokio::net::TcpStream::connect(sim.addr()).await.unwrap();
    stream
        .write_all(b"GET /api/v1/namespaces HTTP/1.1\r\nHost: sim\r\n")
        .await
        .unwrap();
    let start = Instant::now();
    let mut buf = [0u8; 1024];
    let read = tokio::time::timeout(Duration::from_secs(300), async {
        loop {
            match stream.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
        }
    })
    .await;
    assert!(read.is_ok(), "the server kept the connection open");
    assert!(start.elapsed() >= SimConfig::default().header_read_timeout);
}

#[tokio::test]
async fn an_overflowing_watch_timeout_seconds_does_not_panic() {
    let (sim, c) = sim().await;
    let mut w = c
        .watch(&format!(
            "{CMS}?watch=true&resourceVersion={}&timeoutSeconds={}",
            sim.resource_version(),
            i64::MAX
        ))
        .await;
    c.configmap("default", "after", json!({})).await;
    let (kind, object) = w.change().await;
    assert_eq!(kind, "ADDED");
    assert_eq!(name(&object), "after");
}

#[tokio::test]
async fn debug_of_the_server_shows_no_token_or_private_key() {
    let sim = ApiServerSim::start(SimConfig::default().with_tls().with_token("t0ken-in-debug"))
        .await
        .unwrap();
    let text = format!("{sim:?}");
    assert!(!text.contains("t0ken-in-debug"), "{text}");
    assert!(!text.contains("key_der: ["), "{text}");
    assert!(text.contains("<redacted>"), "{text}");
}

#[cfg(unix)]
#[tokio::test]
async fn the_written_kubeconfig_is_readable_by_its_owner_only() {
    use std::os::unix::fs::PermissionsExt as _;
    let sim = ApiServerSim::start(SimConfig::default().with_token("file-token"))
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let fresh = dir.path().join("fresh");
    sim.write_kubeconfig(&fresh).unwrap();
    let existing = dir.path().join("existing");
    std::fs::write(&existing, "old, longer content than nothing").unwrap();
    std::fs::set_permissions(&existing, std::fs::Permissions::from_mode(0o644)).unwrap();
    sim.write_kubeconfig(&existing).unwrap();
    for path in [fresh, existing] {
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "{}", path.display());
        assert_eq!(std::fs::read_to_string(&path).unwrap(), sim.kubeconfig());
    }
}

/// Watches past `max_watches` are refused as an overloaded kube-apiserver refuses requests
/// (429, `Retry-After: 1`), over HTTP/2 too, where they would share one connection; a watch
/// that ends gives its slot back.
#[tokio::test]
async fn watches_past_the_cap_are_refused_until_one_ends() {
    let config = SimConfig {
        max_watches: 2,
        ..SimConfig::default()
    };
    let (sim, _) = start(config).await;
    let c = Client::http2(sim.url());
    let path = format!("{CMS}?watch=true");
    let first = c.watch(&path).await;
    let _second = c.watch(&path).await;
    let refused = c.get(&path).await;
    assert_status(&refused, 429, "TooManyRequests");
    assert_eq!(refused.headers["retry-after"], "1");

    drop(first);
    eventually("a watch slot to come free", || async {
        c.get(&format!("{CMS}?watch=true&timeoutSeconds=1"))
            .await
            .status
            == 200
    })
    .await;
}

/// Connections past `max_connections` are closed as soon as they are accepted; one that
/// closes makes room for the next.
#[tokio::test]
async fn connections_past_the_cap_are_closed_until_one_closes() {
    let config = SimConfig {
        max_connections: 2,
        ..SimConfig::default()
    };
    let (sim, _) = start(config).await;
    let healthz = b"GET /healthz HTTP/1.1\r\nHost: sim\r\n\r\n";
    let mut held = Vec::new();
    for _ in 0..2 {
        let mut stream = tokio::net::TcpStream::connect(sim.addr()).await.unwrap();
        stream.write_all(healthz).await.unwrap();
        let mut buf = [0u8; 256];
        let n = stream.read(&mut buf).await.unwrap();
        assert!(
            buf[..n].starts_with(b"HTTP/1.1 200"),
            "served within the cap"
        );
        held.push(stream);
    }
    let mut third = tokio::net::TcpStream::connect(sim.addr()).await.unwrap();
    let _ = third.write_all(healthz).await;
    let mut buf = [0u8; 256];
    let read = tokio::time::timeout(WAIT, third.read(&mut buf)).await;
    assert!(
        matches!(read, Ok(Ok(0) | Err(_))),
        "the connection past the cap is closed unanswered: {read:?}"
    );

    drop(held.pop());
    eventually("a connection slot to come free", || async {
        let Ok(mut stream) = tokio::net::TcpStream::connect(sim.addr()).await else {
            return false;
        };
        if stream.write_all(healthz).await.is_err() {
            return false;
        }
        let mut buf = [0u8; 256];
        matches!(stream.read(&mut buf).await, Ok(n) if buf[..n].starts_with(b"HTTP/1.1 200"))
    })
    .await;
}
