//! A broken, stalled or hostile server cannot hang or exhaust the client: raw TCP servers on
//! 127.0.0.1 that answer with bodies past the caps, or send the headers and then nothing.
//!
//! Paused clock: every wait here is tokio's, and the servers are tasks of the test's own
//! runtime on loopback, whose writes are readable as soon as they are made; tokio moves the
//! clock on only once nothing is ready, which is when the server has stopped answering.

mod support;

use support::config_maps;

use std::time::Duration;

use clientgo_apimachinery::Object as _;
use clientgo_rest::config::Secret;
use clientgo_rest::{Auth, Config, Error, ListParams, RestClient, TransportErrorKind};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpListener;
use tokio::time::Instant;

/// A server that reads one request per connection and writes `response`, then keeps the
/// connection open and says nothing more.
async fn answering_then_silent(response: Vec<u8>) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((mut stream, _)) = listener.accept().await {
            let mut request = Vec::new();
            let mut buf = [0u8; 4096];
            while !request.windows(4).any(|w| w == b"\r\n\r\n") {
                match stream.read(&mut buf).await {
                    Ok(0) | Err(_) => break,
                    Ok(n) => request.extend_from_slice(&buf[..n]),
                }
            }
            let _ = stream.write_all(&response).await;
            held.push(stream);
        }
    });
    url
}

fn client(url: &str, configure: impl FnOnce(&mut Config)) -> RestClient {
    let mut config = Config::new(url.parse().unwrap());
    config.qps = -1.0;
    configure(&mut config);
    RestClient::new(&config).unwrap()
}

fn kind(error: &Error) -> Option<TransportErrorKind> {
    error.transport_error().map(|e| e.kind())
}

#[tokio::test(start_paused = true)]
async fn a_response_body_past_the_cap_is_a_too_large_error() {
    let body = format!(r#"{{"items":[{}]}}"#, vec!["{}"; 600].join(","));
    let response = format!(
        "HTTP/1.1 200 OK\r\nconnection: close\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    );
    let url = answering_then_silent(response.into_bytes()).await;
    let client = client(&url, |c| c.max_response_bytes = 1000);
    let error = client.get().abs_path("/api").send().await.unwrap_err();
    assert_eq!(kind(&error), Some(TransportErrorKind::TooLarge), "{error}");
    assert!(error.to_string().contains("1000 bytes"), "{error}");
    let error = config_maps(&client)
        .list(&ListParams::default())
        .await
        .unwrap_err();
    assert_eq!(kind(&error), Some(TransportErrorKind::TooLarge), "{error}");
    // Under the cap, the same body is fine.
    let client = self::client(&url, |c| c.max_response_bytes = 2000);
    let list = config_maps(&client).list(&ListParams::default()).await;
    assert_eq!(list.unwrap().items.len(), 600);
}

#[tokio::test(start_paused = true)]
async fn a_list_item_past_the_cap_is_left_out_and_reported() {
    let big = "x".repeat(5000);
    let body = format!(
        r#"{{"items":[{{"metadata":{{"name":"a"}}}},{{"metadata":{{"name":"{big}"}}}},{{"metadata":{{"name":"b"}}}}]}}"#
    );
    let response = format!(
        "HTTP/1.1 200 OK\r\nconnection: close\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    );
    let url = answering_then_silent(response.into_bytes()).await;
    let client = client(&url, |c| c.max_list_item_bytes = 1000);
    let partial = config_maps(&client)
        .list_partial(&ListParams::default())
        .await
        .unwrap();
    let names: Vec<&str> = partial.list.items.iter().map(|o| o.name()).collect();
    assert_eq!(names, ["a", "b"]);
    assert_eq!(
        partial.undecodable[0].list,
        Some(clientgo_rest::ListFailure::ItemTooLarge {
            index: 1,
            limit: 1000
        })
    );
}

/// HTTP/1.1 has no pings: a server that sends the headers and then nothing fails the
/// request after the read idle timeout instead of hanging it.
#[tokio::test(start_paused = true)]
async fn http1_a_server_that_sends_headers_then_nothing_times_out_after_the_read_idle_timeout() {
    let response = b"HTTP/1.1 200 OK\r\nconnection: close\r\ncontent-type: application/json\r\ncontent-length: 100\r\n\r\n{\"items\":[".to_vec();
    let url = answering_then_silent(response).await;
    let client = client(&url, |c| {
        c.read_idle_timeout = Some(Duration::from_secs(20))
    });
    let start = Instant::now();
    let bounded = Duration::from_secs(3600);
    let error = tokio::time::timeout(bounded, client.get().abs_path("/api").send())
        .await
        .expect("no hang")
        .unwrap_err();
    assert_eq!(kind(&error), Some(TransportErrorKind::Timeout), "{error}");
    assert!(start.elapsed() >= Duration::from_secs(20));
    let error = tokio::time::timeout(bounded, config_maps(&client).list(&ListParams::default()))
        .await
        .expect("no hang")
        .unwrap_err();
    assert_eq!(kind(&error), Some(TransportErrorKind::Timeout), "{error}");
}

#[tokio::test(start_paused = true)]
async fn http1_a_server_that_never_answers_times_out_after_the_read_idle_timeout() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let _server = tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((stream, _)) = listener.accept().await {
            held.push(stream);
        }
    });
    let client = client(&url, |c| {
        c.read_idle_timeout = Some(Duration::from_secs(20))
    });
    let error = tokio::time::timeout(
        Duration::from_secs(3600),
        client.get().abs_path("/api").send(),
    )
    .await
    .expect("no hang")
    .unwrap_err();
    assert_eq!(kind(&error), Some(TransportErrorKind::Timeout), "{error}");
    assert!(error.to_string().contains("no response headers"), "{error}");
}

#[test]
fn a_hand_built_http_config_with_credentials_is_refused_unless_allowed() {
    let mut config = Config::new("http://127.0.0.1:8080".parse().unwrap());
    RestClient::new(&config).expect("no credentials: fine");
    config.auth = Auth::Bearer(Secret::from("plain-text-token"));
    let error = RestClient::new(&config).unwrap_err();
    assert!(
        matches!(error, Error::InvalidConfig { field: "auth", .. }),
        "{error}"
    );
    assert!(!error.to_string().contains("plain-text-token"), "{error}");
    RestClient::new(&config.clone().allowing_insecure_credentials()).expect("allowed");
    let mut https = config;
    https.cluster_url = "https://127.0.0.1:8443".parse().unwrap();
    RestClient::new(&https).expect("https: fine");
}
