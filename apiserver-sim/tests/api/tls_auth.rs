//! TLS with the generated CA, HTTP/2 over ALPN, and bearer-token authentication.

use std::sync::Arc;

use bytes::Bytes;
use clientgo_apiserver_sim::{ApiServerSim, SimConfig};
use http_body_util::{BodyExt, Empty};
use hyper_util::rt::{TokioExecutor, TokioIo};
use rustls::pki_types::{CertificateDer, ServerName};
use serde_json::Value;

async fn tls_get(
    sim: &ApiServerSim,
    path: &str,
    token: Option<&str>,
) -> (u16, Value, Option<Vec<u8>>) {
    let mut roots = rustls::RootCertStore::empty();
    roots
        .add(CertificateDer::from(sim.ca_der().expect("ca").to_vec()))
        .expect("ca");
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut cfg = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("versions")
        .with_root_certificates(roots)
        .with_no_client_auth();
    cfg.alpn_protocols = vec![b"h2".to_vec()];
    let connector = tokio_rustls::TlsConnector::from(Arc::new(cfg));
    let tcp = tokio::net::TcpStream::connect(sim.addr())
        .await
        .expect("connect");
    let tls = connector
        .connect(ServerName::try_from("localhost").expect("name"), tcp)
        .await
        .expect("handshake");
    let alpn = tls.get_ref().1.alpn_protocol().map(<[u8]>::to_vec);
    let (mut send, conn) =
        hyper::client::conn::http2::handshake(TokioExecutor::new(), TokioIo::new(tls))
            .await
            .expect("h2");
    tokio::spawn(conn);
    let mut req = http::Request::get(format!("https://localhost{path}"));
    if let Some(t) = token {
        req = req.header("authorization", format!("Bearer {t}"));
    }
    let resp = send
        .send_request(req.body(Empty::<Bytes>::new()).expect("req"))
        .await
        .expect("resp");
    let status = resp.status().as_u16();
    let body = resp.into_body().collect().await.expect("body").to_bytes();
    (
        status,
        serde_json::from_slice(&body).unwrap_or(Value::Null),
        alpn,
    )
}

#[tokio::test]
async fn tls_with_generated_ca_and_token_auth() {
    let sim = ApiServerSim::start(SimConfig::default().with_tls().with_token("s3cret"))
        .await
        .expect("start");
    assert!(sim.url().starts_with("https://127.0.0.1:"));
    assert!(sim.ca_pem().expect("ca").contains("BEGIN CERTIFICATE"));
    let (code, body, alpn) = tls_get(&sim, "/api/v1/namespaces", Some("s3cret")).await;
    assert_eq!(code, 200);
    assert_eq!(body["kind"], "NamespaceList");
    assert_eq!(alpn.as_deref(), Some(&b"h2"[..]));

    for token in [None, Some("wrong")] {
        let (code, body, _) = tls_get(&sim, "/api/v1/namespaces", token).await;
        assert_eq!(code, 401);
        assert_eq!(body["reason"], "Unauthorized");
        assert_eq!(body["message"], "Unauthorized");
        assert_eq!(body["code"], 401);
    }
    let (code, _, _) = tls_get(&sim, "/healthz", None).await;
    assert_eq!(code, 200, "health checks need no token");
    let kubeconfig = sim.kubeconfig();
    assert!(
        kubeconfig.contains("certificate-authority-data:") && kubeconfig.contains("token: s3cret")
    );
}

#[tokio::test]
async fn plain_clients_are_refused_by_a_tls_server() {
    let sim = ApiServerSim::start(SimConfig::default().with_tls())
        .await
        .expect("start");
    let c = crate::support::Client::new(&format!("http://{}", sim.addr()), None);
    let req = http::Request::get(format!("{}/api", c.base))
        .body(http_body_util::Full::new(Bytes::new()))
        .expect("req");
    let client = hyper_util::client::legacy::Client::builder(TokioExecutor::new())
        .build_http::<http_body_util::Full<Bytes>>();
    let result = tokio::time::timeout(crate::support::WAIT, client.request(req))
        .await
        .expect("no hang");
    assert!(result.is_err() || result.is_ok_and(|r| r.status() != 200));
}
