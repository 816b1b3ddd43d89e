//! A plain hyper client for driving the simulator over real HTTP.

use std::time::Duration;

use bytes::Bytes;
use clientgo_apiserver_sim::{ApiServerSim, SimConfig};
use http::{HeaderMap, Method, Request, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper_util::client::legacy::Client as HyperClient;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use serde_json::{Value, json};

/// Bound on every wait in the tests.
pub const WAIT: Duration = Duration::from_secs(10);

pub struct Client {
    pub base: String,
    http: HyperClient<HttpConnector, Full<Bytes>>,
    token: Option<String>,
}

pub struct Resp {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: Value,
    pub raw: Bytes,
}

pub async fn start(config: SimConfig) -> (ApiServerSim, Client) {
    let sim = ApiServerSim::start(config).await.expect("start");
    let client = Client::new(sim.url(), sim.token().map(str::to_owned));
    (sim, client)
}

pub async fn sim() -> (ApiServerSim, Client) {
    start(SimConfig::default()).await
}

impl Client {
    pub fn new(base: &str, token: Option<String>) -> Client {
        Client {
            base: base.to_owned(),
            http: HyperClient::builder(TokioExecutor::new()).build_http(),
            token,
        }
    }

    pub fn http2(base: &str) -> Client {
        Client {
            base: base.to_owned(),
            http: HyperClient::builder(TokioExecutor::new())
                .http2_only(true)
                .build_http(),
            token: None,
        }
    }

    pub async fn send(
        &self,
        method: Method,
        path: &str,
        body: Option<Vec<u8>>,
        content_type: &str,
        accept: Option<&str>,
    ) -> Response {
        let mut b = Request::builder()
            .method(method)
            .uri(format!("{}{}", self.base, path));
        if body.is_some() {
            b = b.header("content-type", content_type);
        }
        if let Some(a) = accept {
            b = b.header("accept", a);
        }
        if let Some(t) = &self.token {
            b = b.header("authorization", format!("Bearer {t}"));
        }
        let req = b
            .body(Full::new(Bytes::from(body.unwrap_or_default())))
            .expect("request");
        let resp = tokio::time::timeout(WAIT, self.http.request(req))
            .await
            .expect("timely response")
            .expect("response");
        Response(resp)
    }

    pub async fn call(&self, method: Method, path: &str, body: Option<Value>) -> Resp {
        let bytes = body.map(|v| serde_json::to_vec(&v).expect("json"));
        self.send(method, path, bytes, "application/json", None)
            .await
            .read()
            .await
    }

    pub async fn get(&self, path: &str) -> Resp {
        self.call(Method::GET, path, None).await
    }

    pub async fn post(&self, path: &str, body: Value) -> Resp {
        self.call(Method::POST, path, Some(body)).await
    }

    pub async fn put(&self, path: &str, body: Value) -> Resp {
        self.call(Method::PUT, path, Some(body)).await
    }

    pub async fn delete(&self, path: &str) -> Resp {
        self.call(Method::DELETE, path, None).await
    }

    pub async fn patch(&self, path: &str, content_type: &str, body: Value) -> Resp {
        let bytes = serde_json::to_vec(&body).expect("json");
        self.send(Method::PATCH, path, Some(bytes), content_type, None)
            .await
            .read()
            .await
    }

    pub async fn watch(&self, path: &str) -> Watch {
        let resp = self.send(Method::GET, path, None, "", None).await;
        assert_eq!(resp.0.status(), StatusCode::OK, "watch {path}");
        Watch {
            body: resp.0.into_body(),
            buf: Vec::new(),
            raw: Vec::new(),
        }
    }

    /// Creates a ConfigMap `name` in `ns` and returns it.
    pub async fn configmap(&self, ns: &str, name: &str, labels: Value) -> Value {
        let r = self
            .post(
                &format!("/api/v1/namespaces/{ns}/configmaps"),
                serde_json::json!({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":name,"labels":labels},"data":{"k":"v"}}),
            )
            .await;
        assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
        r.body
    }
}

pub struct Response(pub hyper::Response<Incoming>);

impl Response {
    pub async fn read(self) -> Resp {
        let status = self.0.status();
        let headers = self.0.headers().clone();
        let raw = tokio::time::timeout(WAIT, self.0.into_body().collect())
            .await
            .expect("timely body")
            .expect("body")
            .to_bytes();
        let body = serde_json::from_slice(&raw).unwrap_or(Value::Null);
        Resp {
            status,
            headers,
            body,
            raw,
        }
    }
}

pub struct Watch {
    body: Incoming,
    buf: Vec<u8>,
    /// Every byte received.
    pub raw: Vec<u8>,
}

/// What reading a watch stream gave.
#[derive(Debug)]
pub enum Next {
    Frame(Value),
    /// A line that is not JSON.
    Garbage(#[allow(dead_code)] String),
    /// The server ended the body cleanly.
    End,
    /// The connection broke (body error).
    Broken,
}

impl From<Response> for Watch {
    fn from(r: Response) -> Watch {
        Watch {
            body: r.0.into_body(),
            buf: Vec::new(),
            raw: Vec::new(),
        }
    }
}

impl Watch {
    pub async fn next(&mut self) -> Next {
        self.next_within(WAIT).await.expect("watch frame in time")
    }

    /// The next frame, or `None` if nothing arrives within `d`.
    pub async fn next_within(&mut self, d: Duration) -> Option<Next> {
        let deadline = tokio::time::Instant::now() + d;
        loop {
            if let Some(pos) = self.buf.iter().position(|b| *b == b'\n') {
                let line: Vec<u8> = self.buf.drain(..=pos).collect();
                return Some(match serde_json::from_slice(&line) {
                    Ok(v) => Next::Frame(v),
                    Err(_) => Next::Garbage(String::from_utf8_lossy(&line).into_owned()),
                });
            }
            let frame = match tokio::time::timeout_at(deadline, self.body.frame()).await {
                Err(_) => return None,
                Ok(f) => f,
            };
            match frame {
                None => return Some(Next::End),
                Some(Err(_)) => return Some(Next::Broken),
                Some(Ok(f)) => {
                    if let Ok(data) = f.into_data() {
                        self.raw.extend_from_slice(&data);
                        self.buf.extend_from_slice(&data);
                    }
                }
            }
        }
    }

    /// The next frame, which must be a JSON event.
    pub async fn event(&mut self) -> (String, Value) {
        match self.next().await {
            Next::Frame(v) => (
                v["type"].as_str().unwrap_or("").to_owned(),
                v["object"].clone(),
            ),
            other => panic!("expected an event, got {other:?}"),
        }
    }

    /// The next non-BOOKMARK event.
    pub async fn change(&mut self) -> (String, Value) {
        loop {
            let (t, o) = self.event().await;
            if t != "BOOKMARK" {
                return (t, o);
            }
        }
    }
}

/// The object's name.
pub fn name(v: &Value) -> &str {
    v["metadata"]["name"].as_str().unwrap_or("")
}

/// The object's resourceVersion as a number.
pub fn rv(v: &Value) -> u64 {
    v["metadata"]["resourceVersion"]
        .as_str()
        .and_then(|s| s.parse().ok())
        .expect("resourceVersion")
}

/// Asserts a Status body.
pub fn assert_status(r: &Resp, code: u16, reason: &str) {
    assert_eq!(r.status.as_u16(), code, "{}", r.body);
    assert_eq!(r.body["kind"], "Status", "{}", r.body);
    assert_eq!(r.body["status"], "Failure", "{}", r.body);
    assert_eq!(r.body["reason"], reason, "{}", r.body);
    assert_eq!(r.body["code"], code, "{}", r.body);
    assert_eq!(
        r.headers
            .get("content-type")
            .map(|v| v.to_str().unwrap_or("")),
        Some("application/json")
    );
}

/// Polls `check` until it holds (bounded by [`WAIT`]).
pub async fn eventually<F, Fut>(what: &str, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = tokio::time::Instant::now() + WAIT;
    while !check().await {
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// A namespaced CRD `gadgets.example.com` (kind `Gadget`, version `v1`) with a schema that
/// accepts any object.
pub fn gadgets_crd() -> Value {
    json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "gadgets.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced",
            "names": {"plural": "gadgets", "kind": "Gadget"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object"}}}]}})
}
