//! TLS: verification against the configuration's CA, SNI override, insecure mode, client
//! certificates, HTTP/2 by ALPN with HTTP/1.1 fallback (or HTTP/1.1 alone on request), and clear errors when it fails.

mod support;

use clientgo_rest::config::Secret;
use clientgo_rest::{Config, Error, RestClient, TransportErrorKind};
use http::Version;
use support::{Pki, Reply, TestServer};

const BOTH: &[&[u8]] = &[b"h2", b"http/1.1"];
const H1: &[&[u8]] = &[b"http/1.1"];

async fn tls_server(
    pki: &Pki,
    sans: &[&str],
    alpn: &[&[u8]],
    client_ca: Option<&Pki>,
) -> TestServer {
    let config = pki.server_config(sans, alpn, client_ca);
    TestServer::start(Some(config), |_, _| {
        Reply::json(200, r#"{"major":"1","minor":"33"}"#)
    })
    .await
}

fn config(server: &TestServer, ca: Option<&Pki>) -> Config {
    let mut config = Config::new(server.url("https").parse().unwrap());
    config.tls.ca_pem = ca.map(|ca| ca.ca_pem.clone().into_bytes());
    config
}

async fn version(config: &Config) -> Result<clientgo_rest::Response, Error> {
    RestClient::new(config)?
        .get()
        .abs_path("/version")
        .send()
        .await
}

fn transport_kind(err: &Error) -> TransportErrorKind {
    err.transport_error()
        .unwrap_or_else(|| panic!("not a transport error: {err}"))
        .kind()
}

#[tokio::test]
async fn the_configured_ca_is_trusted_and_http2_is_negotiated() {
    let pki = Pki::new("cluster-ca");
    let server = tls_server(&pki, &["127.0.0.1"], BOTH, None).await;
    let response = version(&config(&server, Some(&pki))).await.unwrap();
    assert_eq!(response.body, r#"{"major":"1","minor":"33"}"#);
    let seen = server.last();
    assert_eq!(seen.version, Version::HTTP_2, "h2 chosen by ALPN");
    assert_eq!(seen.sni, None, "no SNI for an IP address");
    assert!(!seen.client_cert);
}

#[tokio::test]
async fn http11_when_the_server_offers_only_http11() {
    let pki = Pki::new("cluster-ca");
    let server = tls_server(&pki, &["127.0.0.1"], H1, None).await;
    version(&config(&server, Some(&pki))).await.unwrap();
    assert_eq!(server.last().version, Version::HTTP_11);
}

#[tokio::test]
async fn http11_when_http2_is_disabled_though_the_server_offers_both() {
    let pki = Pki::new("cluster-ca");
    let server = tls_server(&pki, &["127.0.0.1"], BOTH, None).await;
    let mut config = config(&server, Some(&pki));
    config.disable_http2 = true;
    version(&config).await.unwrap();
    assert_eq!(server.last().version, Version::HTTP_11);
}

#[tokio::test]
async fn an_unknown_ca_fails_with_a_clear_error() {
    let pki = Pki::new("cluster-ca");
    let other = Pki::new("someone-else");
    let server = tls_server(&pki, &["127.0.0.1"], BOTH, None).await;
    let err = version(&config(&server, Some(&other))).await.unwrap_err();
    assert_eq!(transport_kind(&err), TransportErrorKind::Tls);
    let text = err.to_string();
    assert!(
        text.starts_with(&format!(
            "GET https://{}/version: TLS handshake failed",
            server.addr
        )),
        "{text}"
    );
    assert!(
        text.contains("authority this client does not trust"),
        "{text}"
    );
    assert!(text.contains("UnknownIssuer"), "{text}");
    assert_eq!(server.count(), 0);
}

#[tokio::test]
async fn a_name_mismatch_fails_and_tls_server_name_fixes_it() {
    let pki = Pki::new("cluster-ca");
    let server = tls_server(&pki, &["kubernetes.default.svc"], BOTH, None).await;
    let mut config = config(&server, Some(&pki));
    let err = version(&config).await.unwrap_err();
    assert_eq!(transport_kind(&err), TransportErrorKind::Tls);
    assert!(err.to_string().contains("not valid for the name"), "{err}");

    config.tls.server_name = Some("kubernetes.default.svc".into());
    version(&config).await.unwrap();
    assert_eq!(server.last().sni.as_deref(), Some("kubernetes.default.svc"));
}

#[tokio::test]
async fn insecure_mode_accepts_any_certificate() {
    let pki = Pki::new("self-signed-somewhere");
    let server = tls_server(&pki, &["not-this-host.example"], BOTH, None).await;
    let mut config = config(&server, None);
    config.tls.insecure_skip_tls_verify = true;
    version(&config).await.unwrap();
    assert_eq!(server.last().version, Version::HTTP_2);

    // A CA together with insecure mode is refused, as client-go refuses it.
    config.tls.ca_pem = Some(pki.ca_pem.clone().into_bytes());
    let err = RestClient::new(&config).unwrap_err();
    assert!(matches!(err, Error::InvalidConfig { .. }), "{err}");
}

#[tokio::test]
async fn client_certificates_are_presented() {
    let server_pki = Pki::new("serving-ca");
    let client_pki = Pki::new("client-ca");
    let server = tls_server(&server_pki, &["127.0.0.1"], BOTH, Some(&client_pki)).await;
    let mut config = config(&server, Some(&server_pki));

    let err = version(&config).await.unwrap_err();
    assert_eq!(transport_kind(&err), TransportErrorKind::Tls, "{err}");
    assert!(
        err.to_string().contains("refused the client certificate"),
        "{err}"
    );

    let (cert, key) = client_pki.client("alice");
    config.tls.client_cert_pem = Some(cert.into_bytes());
    config.tls.client_key_pem = Some(Secret::new(key.into_bytes()));
    version(&config).await.unwrap();
    assert!(server.last().client_cert);
}

#[tokio::test]
async fn connections_are_reused() {
    let pki = Pki::new("cluster-ca");
    let server = tls_server(&pki, &["127.0.0.1"], H1, None).await;
    let client = RestClient::new(&config(&server, Some(&pki))).unwrap();
    for _ in 0..5 {
        client.get().abs_path("/version").send().await.unwrap();
    }
    assert_eq!(server.count(), 5);
    assert_eq!(
        server.connections(),
        1,
        "one pooled TLS connection carried them all"
    );
}

#[tokio::test]
async fn refused_connections_are_typed() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener);
    let mut config = Config::new(format!("http://{addr}").parse().unwrap());
    config.qps = -1.0;
    let client = RestClient::new(&config).unwrap();
    let err = client
        .post()
        .abs_path("/api/v1/namespaces")
        .body("{}")
        .send()
        .await
        .unwrap_err();
    assert_eq!(
        transport_kind(&err),
        TransportErrorKind::ConnectionRefused,
        "{err}"
    );
    assert!(
        err.to_string().starts_with(&format!(
            "POST http://{addr}/api/v1/namespaces: connection refused"
        )),
        "{err}"
    );
}

#[tokio::test]
async fn http2_requests_share_one_connection_and_carry_their_bodies_whole() {
    let pki = Pki::new("cluster-ca");
    let serving = pki.server_config(&["127.0.0.1"], BOTH, None);
    // Answers with the size and last byte of the body it received.
    let server = TestServer::start(Some(serving), |request, _| {
        let last = request.body.last().copied().unwrap_or(0);
        Reply::json(
            200,
            format!(r#"{{"len":{},"last":{last}}}"#, request.body.len()),
        )
    })
    .await;
    let client = RestClient::new(&config(&server, Some(&pki))).unwrap();
    // Bodies from empty to past the stream's initial flow-control window (64 KiB until the
    // server's settings say otherwise), sent concurrently.
    let sizes = [0usize, 1, 1_000, 70_000, 300_000, 16_384, 5, 200_000];
    let sends: Vec<_> = sizes
        .iter()
        .enumerate()
        .map(|(i, &size)| {
            let client = client.clone();
            tokio::spawn(async move {
                let mut body = vec![b'a'; size];
                if let Some(last) = body.last_mut() {
                    *last = b'0' + i as u8;
                }
                let response = client
                    .post()
                    .abs_path("/echo")
                    .body(body)
                    .send()
                    .await
                    .unwrap();
                let seen: serde_json::Value = response.json().unwrap();
                (size, i, seen)
            })
        })
        .collect();
    for send in sends {
        let (size, i, seen) = send.await.unwrap();
        assert_eq!(seen["len"], size, "body {i} arrived whole");
        if size > 0 {
            assert_eq!(
                seen["last"],
                u64::from(b'0' + i as u8),
                "body {i}'s last byte"
            );
        }
    }
    let requests = server.requests();
    assert_eq!(requests.len(), sizes.len());
    assert!(requests.iter().all(|r| r.version == Version::HTTP_2));
    assert_eq!(
        server.connections(),
        1,
        "one HTTP/2 connection carried them all"
    );
}
