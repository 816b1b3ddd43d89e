//! A server that stops answering cannot hang the client. HTTP/2: the transport's pings keep
//! a quiet but live watch open (the sim's stall fault answers pings) and close a dead
//! connection (a TCP proxy that stops forwarding) within the ping timeout. HTTP/1.1: a
//! request read whole gives up after the read idle timeout (the sim's latency fault), and a
//! stalled watch (the sim's stall fault) ends at the watch decoder's idle timeout.
//!
//! Paused clock: the sim, the proxy and the client are tasks of the test's runtime on
//! loopback, whose writes are readable at once; tokio moves the clock on only when nothing is
//! ready, so the pings and their answers go through in no time and only an unanswered ping
//! waits out its timeout.

use std::net::SocketAddr;
use std::time::Duration;

use clientgo_apimachinery::{DynamicObject, Object as _, WatchEvent};
use clientgo_apiserver_sim::SimConfig;
use clientgo_apiserver_sim::faults::WatchFault;
use clientgo_codec::{Watch, WatchError};
use clientgo_rest::{RestClient, TransportErrorKind, WatchParams};
use serde_json::json;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

use crate::common::{self, within};

/// Forwards TCP connections to `target` until frozen; frozen, it forwards nothing more in
/// either direction and keeps every connection open: a peer that is gone, as a network
/// partition or a frozen host makes it.
async fn freezable_proxy(target: SocketAddr) -> (SocketAddr, watch::Sender<bool>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (freeze, frozen) = watch::channel(false);
    tokio::spawn(async move {
        while let Ok((client, _)) = listener.accept().await {
            let Ok(server) = TcpStream::connect(target).await else {
                continue;
            };
            let (client_read, client_write) = client.into_split();
            let (server_read, server_write) = server.into_split();
            tokio::spawn(pump(client_read, server_write, frozen.clone()));
            tokio::spawn(pump(server_read, client_write, frozen.clone()));
        }
    });
    (addr, freeze)
}

async fn pump(
    mut from: tokio::net::tcp::OwnedReadHalf,
    mut to: tokio::net::tcp::OwnedWriteHalf,
    mut frozen: watch::Receiver<bool>,
) {
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        let read = tokio::select! {
            read = from.read(&mut buf) => read,
            _ = frozen.wait_for(|frozen| *frozen) => break,
        };
        match read {
            Ok(0) | Err(_) => return,
            Ok(n) => {
                if *frozen.borrow() || to.write_all(&buf[..n]).await.is_err() {
                    break;
                }
            }
        }
    }
    // Frozen: hold both halves open, say nothing.
    std::future::pending::<()>().await;
    drop((from, to));
}

#[tokio::test(start_paused = true)]
async fn http2_pings_keep_a_quiet_watch_and_close_a_dead_connection_within_the_ping_timeout() {
    let s = common::secure().await;
    let (proxy, freeze) = freezable_proxy(s.sim.addr()).await;
    let mut config = s.config.clone();
    config.cluster_url = format!("https://{proxy}").parse().unwrap();
    config.http2_read_idle_timeout = Duration::from_secs(3);
    config.http2_ping_timeout = Duration::from_secs(2);
    let client = RestClient::new(&config).unwrap();
    let api = common::config_maps(&client, "default");
    let params = WatchParams {
        resource_version: Some(s.sim.resource_version().to_string()),
        ..WatchParams::default()
    };
    let mut watch: Watch<DynamicObject> = within(
        Duration::from_secs(30),
        "the watch opens",
        api.watch(&params),
    )
    .await
    .unwrap();
    s.sim
        .create(
            "",
            "v1",
            "configmaps",
            "default",
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "first"}}),
        )
        .unwrap();
    let first = within(Duration::from_secs(30), "the first event", watch.next()).await;
    let Some(Ok(WatchEvent::Added(first))) = first else {
        panic!("an ADDED event: {first:?}")
    };
    assert_eq!(first.name(), "first");

    // The server stalls the watch but is alive: it answers the pings, so ten ping
    // intervals go by with the watch still open.
    assert!(
        s.sim.faults().watches(WatchFault::Stall) >= 1,
        "the stall fired"
    );
    let quiet = tokio::time::timeout(Duration::from_secs(30), watch.next()).await;
    assert!(
        quiet.is_err(),
        "a quiet watch on a live connection stays open: {quiet:?}"
    );

    // The connection dies: the next ping goes unanswered and the connection is closed.
    freeze.send_replace(true);
    let start = tokio::time::Instant::now();
    let end = within(
        Duration::from_secs(3600),
        "the dead connection is noticed",
        watch.next(),
    )
    .await;
    assert!(
        matches!(end, Some(Err(WatchError::Transport(_)))),
        "the watch fails: {end:?}"
    );
    assert!(
        start.elapsed() <= Duration::from_secs(3 + 2 + 1),
        "{:?}",
        start.elapsed()
    );
}

#[tokio::test(start_paused = true)]
async fn http1_a_request_to_a_stalled_server_times_out_after_the_read_idle_timeout() {
    let s = common::plain_with(SimConfig::default(), |config| {
        config.read_idle_timeout = Some(Duration::from_secs(20));
    })
    .await;
    s.sim.faults().set_latency(Duration::from_secs(24 * 3600));
    let error = within(
        Duration::from_secs(3600),
        "the stalled request ends",
        common::config_maps(&s.client, "default").list(&Default::default()),
    )
    .await
    .unwrap_err();
    assert_eq!(
        error.transport_error().map(|e| e.kind()),
        Some(TransportErrorKind::Timeout),
        "{error}"
    );
}

/// A watch is quiet by design, so the read idle timeout does not apply to it: over HTTP/1.1,
/// which has no pings, a stalled watch is ended by the watch decoder's idle timeout.
#[tokio::test(start_paused = true)]
async fn http1_a_stalled_watch_ends_at_the_watch_idle_timeout() {
    let s = common::plain_with(SimConfig::default(), |config| {
        config.read_idle_timeout = Some(Duration::from_secs(5));
    })
    .await;
    let params = WatchParams {
        resource_version: Some(s.sim.resource_version().to_string()),
        ..WatchParams::default()
    };
    let api = common::config_maps(&s.client, "default");
    let watch: Watch<DynamicObject> = within(
        Duration::from_secs(30),
        "the watch opens",
        api.watch(&params),
    )
    .await
    .unwrap();
    let mut watch = watch.with_idle_timeout(Duration::from_secs(120));
    assert!(
        s.sim.faults().watches(WatchFault::Stall) >= 1,
        "the stall fired"
    );
    let start = tokio::time::Instant::now();
    let end = within(
        Duration::from_secs(3600),
        "the stall is noticed",
        watch.next(),
    )
    .await;
    assert!(
        matches!(end, Some(Err(WatchError::Stalled { .. }))),
        "the watch ends as stalled: {end:?}"
    );
    assert!(
        start.elapsed() >= Duration::from_secs(120),
        "not by the read idle timeout"
    );
}
