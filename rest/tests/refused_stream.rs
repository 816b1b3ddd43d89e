//! HTTP/2's `REFUSED_STREAM`: a server refuses streams past its limit of concurrent ones
//! before processing them (kube-apiserver does when a client opens many at once), so the
//! client sends such a request again whatever its method, as Go's HTTP/2 transport does, and
//! fails with a [`TransportErrorKind::StreamRefused`] once the request's retries are spent.

mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use bytes::Bytes;
use clientgo_rest::{Config, Error, RestClient, TransportErrorKind};
use support::Pki;
use tokio::net::TcpListener;

/// An HTTP/2 server over TLS that refuses the first `refuse` streams and answers the others
/// 201 with `{}`; returns its URL and the count of streams it was sent.
async fn refusing_server(pki: &Pki, refuse: usize) -> (String, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let tls = pki.server_config(&["127.0.0.1"], &[b"h2"], None);
    let acceptor = tokio_rustls::TlsAcceptor::from(tls);
    let streams = Arc::new(AtomicUsize::new(0));
    let seen = Arc::clone(&streams);
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            let (acceptor, seen) = (acceptor.clone(), Arc::clone(&seen));
            tokio::spawn(async move {
                let Ok(tls) = acceptor.accept(tcp).await else {
                    return;
                };
                let Ok(mut connection) = h2::server::handshake(tls).await else {
                    return;
                };
                while let Some(Ok((_request, mut respond))) = connection.accept().await {
                    if seen.fetch_add(1, Ordering::SeqCst) < refuse {
                        respond.send_reset(h2::Reason::REFUSED_STREAM);
                        continue;
                    }
                    let head = http::Response::builder()
                        .status(201)
                        .header("content-type", "application/json")
                        .body(())
                        .unwrap();
                    if let Ok(mut body) = respond.send_response(head, false) {
                        let _ = body.send_data(Bytes::from_static(b"{}"), true);
                    }
                }
            });
        }
    });
    (format!("https://{addr}"), streams)
}

async fn post(url: &str, pki: &Pki, retries: u32) -> Result<clientgo_rest::Response, Error> {
    let mut config = Config::new(url.parse().unwrap());
    config.tls.ca_pem = Some(pki.ca_pem.clone().into_bytes());
    RestClient::new(&config)?
        .post()
        .abs_path("/api/v1/namespaces/default/configmaps")
        .body(r#"{"metadata":{"name":"a"}}"#)
        .max_retries(retries)
        .send()
        .await
}

#[tokio::test]
async fn a_post_whose_stream_was_refused_is_sent_again() {
    let pki = Pki::new("refused-ca");
    let (url, streams) = refusing_server(&pki, 1).await;
    let response = post(&url, &pki, 10).await.expect("sent again and answered");
    assert_eq!(response.status.as_u16(), 201);
    assert_eq!(&response.body[..], b"{}");
    assert_eq!(
        streams.load(Ordering::SeqCst),
        2,
        "refused once, then sent again"
    );
}

#[tokio::test]
async fn a_stream_refused_every_time_fails_once_the_retries_are_spent() {
    let pki = Pki::new("refused-ca");
    let (url, streams) = refusing_server(&pki, usize::MAX).await;
    let error = post(&url, &pki, 1).await.expect_err("refused every time");
    let transport = error.transport_error().expect("a transport error");
    assert_eq!(
        transport.kind(),
        TransportErrorKind::StreamRefused,
        "{error}"
    );
    assert_eq!(
        streams.load(Ordering::SeqCst),
        2,
        "the first attempt and one retry"
    );
}
