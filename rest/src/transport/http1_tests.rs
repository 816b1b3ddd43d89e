//! The HTTP/1.1 pool against a small HTTP/1.1 server that counts the connections it accepts
//! and sees closed.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt as _, Full};
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;

use super::*;

/// How long a test waits for the server to see something happen.
const BOUND: Duration = Duration::from_secs(10);

/// Connections the server accepted and saw closed.
#[derive(Default)]
struct Counts {
    accepted: AtomicUsize,
    closed: AtomicUsize,
}

/// An HTTP/1.1 server: `/big` answers 1 MiB, anything else `ok`; with `hold` set, it answers
/// only once that many requests have arrived.
async fn server(hold: Option<usize>) -> (SocketAddr, Arc<Counts>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let counts = Arc::new(Counts::default());
    let barrier = hold.map(|n| Arc::new(tokio::sync::Barrier::new(n)));
    let served = Arc::clone(&counts);
    tokio::spawn(async move {
        loop {
            let (tcp, _) = listener.accept().await.unwrap();
            served.accepted.fetch_add(1, Ordering::SeqCst);
            let (counts, barrier) = (Arc::clone(&served), barrier.clone());
            tokio::spawn(async move {
                let service = service_fn(move |request: http::Request<hyper::body::Incoming>| {
                    let barrier = barrier.clone();
                    async move {
                        if let Some(barrier) = barrier {
                            barrier.wait().await;
                        }
                        let body = if request.uri().path() == "/big" {
                            Bytes::from(vec![b'x'; 1 << 20])
                        } else {
                            Bytes::from_static(b"ok")
                        };
                        Ok::<_, Infallible>(http::Response::new(Full::new(body)))
                    }
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(tcp), service)
                    .await;
                counts.closed.fetch_add(1, Ordering::SeqCst);
            });
        }
    });
    (addr, counts)
}

fn request(addr: SocketAddr, path: &str) -> http::Request<Bytes> {
    http::Request::get(format!("http://{addr}{path}"))
        .body(Bytes::new())
        .unwrap()
}

async fn get(pool: &Http1, addr: SocketAddr, path: &str) -> Bytes {
    let response = pool.send(request(addr, path)).await.unwrap();
    assert_eq!(response.status(), http::StatusCode::OK);
    response.into_body().collect().await.unwrap().to_bytes()
}

/// Waits (at most [`BOUND`]) until `what` holds.
async fn until(what: impl Fn() -> bool) {
    tokio::time::timeout(BOUND, async {
        while !what() {
            tokio::task::yield_now().await;
        }
    })
    .await
    .expect("the condition holds within the bound");
}

fn idle(pool: &Http1) -> usize {
    pool.shared.idle.lock().conns.len()
}

#[tokio::test]
async fn requests_one_after_another_reuse_one_connection() {
    let (addr, counts) = server(None).await;
    let pool = Http1::new(Connector::new(None));
    for _ in 0..5 {
        assert_eq!(get(&pool, addr, "/").await, "ok");
    }
    assert_eq!(get(&pool, addr, "/big").await.len(), 1 << 20);
    assert_eq!(get(&pool, addr, "/").await, "ok");
    assert_eq!(counts.accepted.load(Ordering::SeqCst), 1);
    assert_eq!(idle(&pool), 1);
}

/// Sends a GET of `url(address)` to a server that reads one request and answers it with an
/// empty 200; the server's address, and the request's head as it arrived (lowercase).
async fn head_sent_for(url: impl FnOnce(SocketAddr) -> String) -> (SocketAddr, String) {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let reader = tokio::spawn(async move {
        let (mut tcp, _) = listener.accept().await.unwrap();
        let mut head = Vec::new();
        let mut buf = [0u8; 1024];
        while !head.windows(4).any(|w| w == b"\r\n\r\n") {
            let n = tcp.read(&mut buf).await.unwrap();
            assert!(n > 0, "the request's head arrives");
            head.extend_from_slice(&buf[..n]);
        }
        tcp.write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n")
            .await
            .unwrap();
        String::from_utf8(head).unwrap().to_ascii_lowercase()
    });
    let pool = Http1::new(Connector::new(None));
    let request = http::Request::get(url(addr)).body(Bytes::new()).unwrap();
    let response = pool.send(request).await.unwrap();
    assert_eq!(response.status(), http::StatusCode::OK);
    (addr, reader.await.unwrap())
}

#[tokio::test]
async fn the_host_header_never_carries_the_urls_user_info() {
    let (addr, head) = head_sent_for(|addr| format!("http://someone:secret@{addr}/api")).await;
    assert!(head.contains(&format!("\r\nhost: {addr}\r\n")), "{head}");
    assert!(!head.contains("secret"), "{head}");
}

#[tokio::test]
async fn the_request_line_is_in_origin_form_with_a_host_header() {
    let (addr, head) = head_sent_for(|addr| format!("http://{addr}/api/v1/pods?limit=1")).await;
    assert!(
        head.starts_with("get /api/v1/pods?limit=1 http/1.1\r\n"),
        "{head}"
    );
    assert!(head.contains(&format!("\r\nhost: {addr}\r\n")), "{head}");
}

#[tokio::test]
async fn concurrent_requests_take_a_connection_each_and_keep_at_most_max_idle() {
    let (addr, counts) = server(Some(4)).await;
    let pool = Arc::new(Http1::with_limits(Connector::new(None), 2, IDLE_TIMEOUT));
    let mut requests = tokio::task::JoinSet::new();
    for _ in 0..4 {
        let pool = Arc::clone(&pool);
        requests.spawn(async move { get(&pool, addr, "/").await });
    }
    while let Some(body) = requests.join_next().await {
        assert_eq!(body.unwrap(), "ok");
    }
    assert_eq!(counts.accepted.load(Ordering::SeqCst), 4);
    // Two went back to the idle list; the other two were closed.
    assert_eq!(idle(&pool), 2);
    until(|| counts.closed.load(Ordering::SeqCst) == 2).await;
}

#[tokio::test]
async fn a_body_dropped_before_its_end_closes_its_connection() {
    let (addr, counts) = server(None).await;
    let pool = Http1::new(Connector::new(None));
    let response = pool.send(request(addr, "/big")).await.unwrap();
    let mut body = response.into_body();
    let first = body.frame().await.unwrap().unwrap();
    assert!(first.is_data());
    drop(body);
    until(|| counts.closed.load(Ordering::SeqCst) == 1).await;
    assert_eq!(idle(&pool), 0);
    assert_eq!(get(&pool, addr, "/").await, "ok");
    assert_eq!(counts.accepted.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn a_connection_the_server_closed_while_idle_is_replaced() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let accepted = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&accepted);
    // Answers one request per connection, then closes it without saying so.
    tokio::spawn(async move {
        use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
        loop {
            let (mut tcp, _) = listener.accept().await.unwrap();
            counted.fetch_add(1, Ordering::SeqCst);
            let mut buf = [0u8; 1024];
            let _ = tcp.read(&mut buf).await;
            let _ = tcp
                .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok")
                .await;
        }
    });
    let pool = Http1::new(Connector::new(None));
    for round in 1..=3 {
        assert_eq!(get(&pool, addr, "/").await, "ok");
        assert_eq!(accepted.load(Ordering::SeqCst), round);
        // Once hyper has read the close, the idle connection is seen closed.
        until(|| {
            pool.shared
                .idle
                .lock()
                .conns
                .iter()
                .all(|c| c.send.is_closed())
        })
        .await;
    }
}

#[tokio::test(start_paused = true)]
async fn idle_connections_close_after_the_idle_timeout() {
    let (addr, counts) = server(None).await;
    let pool = Http1::new(Connector::new(None));
    assert_eq!(get(&pool, addr, "/").await, "ok");
    assert_eq!(idle(&pool), 1);
    assert!(pool.shared.idle.lock().reaping);
    tokio::time::advance(IDLE_TIMEOUT - Duration::from_secs(1)).await;
    assert_eq!(idle(&pool), 1, "not yet expired");
    tokio::time::advance(Duration::from_secs(2)).await;
    // The reaper closed it and stopped, having nothing left to watch.
    for _ in 0..100 {
        if idle(&pool) == 0 && !pool.shared.idle.lock().reaping {
            break;
        }
        tokio::task::yield_now().await;
    }
    assert_eq!(idle(&pool), 0);
    assert!(!pool.shared.idle.lock().reaping);
    assert_eq!(get(&pool, addr, "/").await, "ok");
    assert_eq!(counts.accepted.load(Ordering::SeqCst), 2);
    assert!(
        pool.shared.idle.lock().reaping,
        "a new reaper watches the new idle connection"
    );
}

#[tokio::test]
async fn a_dropped_pool_closes_its_idle_connections_and_does_not_take_back_busy_ones() {
    let (addr, counts) = server(None).await;
    let pool = Http1::new(Connector::new(None));
    let busy = pool.send(request(addr, "/big")).await.unwrap();
    // The first connection is busy until that body is read: this takes a second one.
    assert_eq!(get(&pool, addr, "/").await, "ok");
    assert_eq!(counts.accepted.load(Ordering::SeqCst), 2);
    assert_eq!(idle(&pool), 1);
    drop(pool);
    until(|| counts.closed.load(Ordering::SeqCst) == 1).await;
    // The response still reads to its end; its connection then closes, having no pool.
    let body = busy.into_body().collect().await.unwrap().to_bytes();
    assert_eq!(body.len(), 1 << 20);
    until(|| counts.closed.load(Ordering::SeqCst) == 2).await;
}

#[tokio::test]
async fn a_url_that_is_not_absolute_is_refused() {
    let pool = Http1::new(Connector::new(None));
    let request = http::Request::get("/api").body(Bytes::new()).unwrap();
    assert!(matches!(
        pool.send(request).await,
        Err(Http1Error::Connect(_))
    ));
}
