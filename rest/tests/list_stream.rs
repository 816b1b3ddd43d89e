//! `ResourceClient::list` and `delete_collection` decode their bodies as they arrive: against
//! a scripted `HttpClient` whose bodies come in small chunks, fail part way, end early or
//! stall, and answers that are a `Status`, an error or a transport failure first; a list
//! (and a get's or a delete's object) in protobuf decodes as the same in JSON.

use std::collections::VecDeque;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use clientgo_apimachinery::{ApiResource, DynamicObject};
use clientgo_rest::{
    Body, BoxError, BoxFuture, Config, DeleteParams, Deleted, DynamicClient, Error, HttpClient,
    ListFailure, ListParams, ResourceClient, RestClient, RestClientBuilder, TransportError,
    TransportErrorKind,
};
use http_body::Frame;
use http_body_util::BodyExt as _;
use prometheus_client::registry::Registry;

/// One answer: a status and a body in chunks (an `Err` chunk fails the body there; `stall`
/// leaves it pending after the chunks), or a transport failure.
#[derive(Clone)]
enum Answer {
    Body {
        status: u16,
        chunks: Vec<Result<&'static [u8], &'static str>>,
        stall: bool,
    },
    Fail(TransportErrorKind),
    /// A 200 in Kubernetes protobuf, in chunks of this many bytes.
    Protobuf(&'static [u8], usize),
}

fn ok(body: &'static str, chunk: usize) -> Answer {
    Answer::Body {
        status: 200,
        chunks: body.as_bytes().chunks(chunk).map(Ok).collect(),
        stall: false,
    }
}

#[derive(Clone, Default)]
struct Scripted {
    answers: Arc<Mutex<VecDeque<Answer>>>,
    sent: Arc<Mutex<Vec<String>>>,
}

impl Scripted {
    fn new(answers: Vec<Answer>) -> Scripted {
        Scripted {
            answers: Arc::new(Mutex::new(answers.into())),
            sent: Arc::default(),
        }
    }

    fn sent(&self) -> Vec<String> {
        self.sent.lock().unwrap().clone()
    }
}

/// A body that hands over its chunks one frame at a time.
struct Chunks {
    chunks: VecDeque<Result<Bytes, BoxError>>,
    stall: bool,
}

impl http_body::Body for Chunks {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        _: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        match self.chunks.pop_front() {
            Some(chunk) => Poll::Ready(Some(chunk.map(Frame::data))),
            None if self.stall => Poll::Pending,
            None => Poll::Ready(None),
        }
    }
}

impl HttpClient for Scripted {
    fn send(
        &self,
        request: http::Request<Bytes>,
    ) -> BoxFuture<'_, Result<http::Response<Body>, Error>> {
        let line = format!("{} {}", request.method(), request.uri());
        self.sent.lock().unwrap().push(line);
        let answer = self.answers.lock().unwrap().pop_front().expect("an answer");
        Box::pin(async move {
            match answer {
                Answer::Body {
                    status,
                    chunks,
                    stall,
                } => {
                    let chunks = chunks
                        .into_iter()
                        .map(|c| c.map(Bytes::from_static).map_err(BoxError::from))
                        .collect();
                    let body: Body = Chunks { chunks, stall }.boxed();
                    let mut response = http::Response::new(body);
                    *response.status_mut() = http::StatusCode::from_u16(status).unwrap();
                    Ok(response)
                }
                Answer::Protobuf(body, chunk) => {
                    let chunks = body
                        .chunks(chunk)
                        .map(|c| Ok(Bytes::from_static(c)))
                        .collect();
                    let body: Body = Chunks {
                        chunks,
                        stall: false,
                    }
                    .boxed();
                    let mut response = http::Response::new(body);
                    response.headers_mut().insert(
                        http::header::CONTENT_TYPE,
                        http::HeaderValue::from_static("application/vnd.kubernetes.protobuf"),
                    );
                    Ok(response)
                }
                Answer::Fail(kind) => Err(TransportError::new(
                    kind,
                    request.method().clone(),
                    request.uri().to_string(),
                    None,
                )
                .into()),
            }
        })
    }
}

/// An unthrottled client of `script`, with a request timeout of 30 s.
fn builder(script: &Scripted) -> RestClientBuilder {
    let mut config = Config::new("http://apiserver.test:6443".parse().unwrap());
    config.qps = -1.0;
    config.timeout = Some(Duration::from_secs(30));
    RestClient::builder(config).http_client(script.clone())
}

fn client(script: &Scripted) -> RestClient {
    builder(script).build().unwrap()
}

fn config_maps(script: &Scripted, registry: Option<&mut Registry>) -> DynamicClient {
    let builder = builder(script);
    let builder = match registry {
        Some(registry) => builder.metrics(registry),
        None => builder,
    };
    let resource = ApiResource {
        group: String::new(),
        version: "v1".into(),
        kind: "ConfigMap".into(),
        plural: "configmaps".into(),
        namespaced: true,
    };
    DynamicClient::from_api_resource(&builder.build().unwrap(), &resource, Some("default"))
}

const LIST: &str = r#"{"kind":"ConfigMapList","apiVersion":"v1","metadata":{"resourceVersion":"17","continue":"next"},"items":[{"metadata":{"name":"a","namespace":"default"},"data":{"k":"{[\"]}"}},{"metadata":{"name":"b","namespace":"default"}},{"metadata":{"name":"c","namespace":"default"}}]}"#;

fn names(items: &[DynamicObject]) -> Vec<&str> {
    items.iter().map(|o| o.metadata.name.as_str()).collect()
}

#[tokio::test]
async fn a_list_in_small_chunks_decodes_as_the_whole_body_does() {
    let mut whole: clientgo_apimachinery::ObjectList<DynamicObject> =
        serde_json::from_str(LIST).unwrap();
    // The client gives dynamic items without a type the list's, as client-go's unstructured
    // lists do.
    for item in &mut whole.items {
        item.types = Some(clientgo_apimachinery::TypeMeta::new("v1", "ConfigMap"));
    }
    for chunk in [1, 2, 7, 64, LIST.len()] {
        let script = Scripted::new(vec![ok(LIST, chunk)]);
        let list = config_maps(&script, None)
            .list(&ListParams::default())
            .await
            .unwrap();
        assert_eq!(list, whole, "chunks of {chunk} bytes");
        assert_eq!(names(&list.items), ["a", "b", "c"]);
        assert_eq!(list.continue_token(), Some("next"));
        assert_eq!(
            script.sent(),
            ["GET http://apiserver.test:6443/api/v1/namespaces/default/configmaps?timeout=30s"]
        );
    }
}

/// kube-apiserver 1.36.2's list of two ConfigMaps, in protobuf and in JSON.
const PROTOBUF_LIST: &[u8] = include_bytes!("../../codec/tests/fixtures/protobuf/list.pb");
const PROTOBUF_LIST_JSON: &[u8] = include_bytes!("../../codec/tests/fixtures/protobuf/list.json");

#[tokio::test]
async fn a_protobuf_list_decodes_as_the_same_list_in_json() {
    let mut json: clientgo_apimachinery::ObjectList<DynamicObject> =
        serde_json::from_slice(PROTOBUF_LIST_JSON).unwrap();
    for item in &mut json.items {
        item.types = Some(clientgo_apimachinery::TypeMeta::new("v1", "ConfigMap"));
    }
    for chunk in [1, 7, PROTOBUF_LIST.len()] {
        let script = Scripted::new(vec![Answer::Protobuf(PROTOBUF_LIST, chunk)]);
        let list = config_maps(&script, None)
            .list(&ListParams::default())
            .await
            .unwrap();
        assert_eq!(list, json, "chunks of {chunk} bytes");
        assert_eq!(names(&list.items), ["owner", "rich"]);
    }
}

/// A ConfigMap that must say whether it is immutable: of the fixture's two, only `rich` does.
#[derive(Debug, serde::Deserialize)]
struct Immutable {
    metadata: clientgo_apimachinery::ObjectMeta,
    immutable: bool,
}

impl clientgo_apimachinery::Resource for Immutable {
    const GROUP: &'static str = "";
    const VERSION: &'static str = "v1";
    const KIND: &'static str = "ConfigMap";
    const PLURAL: &'static str = "configmaps";
    const NAMESPACED: bool = true;
}

#[tokio::test]
async fn a_protobuf_item_that_is_not_the_type_is_left_out_as_in_json() {
    for chunk in [1, 7, PROTOBUF_LIST.len()] {
        let script = Scripted::new(vec![Answer::Protobuf(PROTOBUF_LIST, chunk)]);
        let partial = ResourceClient::<Immutable>::namespaced(&client(&script), "default")
            .list_partial(&ListParams::default())
            .await
            .unwrap();
        let [rich] = &partial.list.items[..] else {
            panic!("{:?}", partial.list.items)
        };
        assert_eq!(
            (rich.metadata.name.as_str(), rich.immutable),
            ("rich", true)
        );
        let [error] = &partial.undecodable[..] else {
            panic!("{:?}", partial.undecodable)
        };
        assert_eq!(error.list, Some(ListFailure::Item { index: 0 }), "{error}");
        assert!(
            error.to_string().contains("missing field `immutable`"),
            "{error}"
        );
    }
}

#[tokio::test]
async fn a_damaged_protobuf_list_is_a_decode_error() {
    let damaged = &PROTOBUF_LIST[..PROTOBUF_LIST.len() - 40];
    let script = Scripted::new(vec![Answer::Protobuf(damaged, 64)]);
    let error = config_maps(&script, None)
        .list(&ListParams::default())
        .await
        .unwrap_err();
    let Error::Decode(decode) = &error else {
        panic!("{error:?}")
    };
    assert_eq!(decode.list, Some(ListFailure::Protobuf), "{error}");
    assert_eq!(decode.body_len, damaged.len());
    assert_eq!(
        script.sent().len(),
        1,
        "a list read whole is not sent again"
    );
}

#[tokio::test]
async fn a_protobuf_object_from_a_get_or_a_delete_decodes_as_its_json() {
    const RICH: &[u8] = include_bytes!("../../codec/tests/fixtures/protobuf/rich.pb");
    const RICH_JSON: &[u8] = include_bytes!("../../codec/tests/fixtures/protobuf/rich.json");
    let json: DynamicObject = serde_json::from_slice(RICH_JSON).unwrap();
    let script = Scripted::new(vec![
        Answer::Protobuf(RICH, RICH.len()),
        Answer::Protobuf(RICH, 100),
    ]);
    let client = config_maps(&script, None);
    let got = client.get("rich", &Default::default()).await.unwrap();
    assert_eq!(got, json);
    let Deleted::Object(deleted) = client
        .delete("rich", &DeleteParams::default())
        .await
        .unwrap()
    else {
        panic!("the object, still there with its finalizers")
    };
    assert_eq!(deleted, json);
}

#[tokio::test]
async fn a_protobuf_object_decodes_into_a_typed_object_as_its_json() {
    use k8s_openapi::api::core::v1::ConfigMap;
    const RICH: &[u8] = include_bytes!("../../codec/tests/fixtures/protobuf/rich.pb");
    const RICH_JSON: &[u8] = include_bytes!("../../codec/tests/fixtures/protobuf/rich.json");
    let json: ConfigMap = serde_json::from_slice(RICH_JSON).unwrap();
    let script = Scripted::new(vec![Answer::Protobuf(RICH, RICH.len())]);
    let got = ResourceClient::<ConfigMap>::namespaced(&client(&script), "proto-fx")
        .get("rich", &Default::default())
        .await
        .unwrap();
    assert_eq!(got, json);
    assert!(got.metadata.managed_fields.is_some_and(|f| f.len() == 2));
}

#[tokio::test(start_paused = true)]
async fn a_transport_failure_before_the_body_is_retried_with_metrics() {
    let script = Scripted::new(vec![
        Answer::Fail(TransportErrorKind::ConnectionReset),
        ok(LIST, 16),
    ]);
    let mut registry = Registry::default();
    let list = config_maps(&script, Some(&mut registry))
        .list(&ListParams::default())
        .await
        .unwrap();
    assert_eq!(list.items.len(), 3);
    assert_eq!(script.sent().len(), 2);
    let mut text = String::new();
    prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
    for expected in [
        r#"rest_client_requests_total{code="<error>",method="GET",host="apiserver.test:6443"} 1"#,
        r#"rest_client_requests_total{code="200",method="GET",host="apiserver.test:6443"} 1"#,
        r#"rest_client_request_duration_seconds_count{verb="GET",host="apiserver.test:6443"} 1"#,
    ] {
        assert!(text.contains(expected), "{expected} missing from\n{text}");
    }
}

#[tokio::test]
async fn a_body_failing_after_some_items_is_a_transport_error_and_not_sent_again() {
    let (start, _) = LIST.split_at(LIST.find(r#"{"metadata":{"name":"c""#).unwrap());
    let script = Scripted::new(vec![Answer::Body {
        status: 200,
        chunks: vec![Ok(start.as_bytes()), Err("connection reset mid-body")],
        stall: false,
    }]);
    let error = config_maps(&script, None)
        .list(&ListParams::default())
        .await
        .unwrap_err();
    let transport = error.transport_error().expect("a transport error");
    assert_eq!(transport.kind(), TransportErrorKind::Body);
    assert!(
        error.to_string().contains("connection reset mid-body"),
        "{error}"
    );
    assert_eq!(script.sent().len(), 1);
}

#[tokio::test]
async fn a_body_ending_early_is_a_truncated_decode_error() {
    let script = Scripted::new(vec![ok(&LIST[..LIST.len() - 3], 10)]);
    let error = config_maps(&script, None)
        .list(&ListParams::default())
        .await
        .unwrap_err();
    let Error::Decode(decode) = &error else {
        panic!("not a decode error: {error}");
    };
    assert_eq!(decode.list, Some(ListFailure::Truncated));
    assert_eq!(decode.body_len, LIST.len() - 3);
}

#[tokio::test]
async fn an_item_that_does_not_decode_is_left_out_and_reported_with_its_index() {
    let body = r#"{"items":[{"metadata":{"name":"a"}},7,{"metadata":{"name":"b"}}]}"#;
    let script = Scripted::new(vec![ok(body, 5), ok(body, 5)]);
    let client = config_maps(&script, None);
    let list = client.list(&ListParams::default()).await.unwrap();
    assert_eq!(list.items.len(), 2, "the other items are kept");
    let partial = client.list_partial(&ListParams::default()).await.unwrap();
    assert_eq!(partial.list.items.len(), 2);
    assert_eq!(partial.undecodable.len(), 1);
    let error = &partial.undecodable[0];
    assert_eq!(error.list, Some(ListFailure::Item { index: 1 }));
    assert!(error.to_string().contains("item 1 of the list"), "{error}");
}

#[tokio::test]
async fn an_item_that_is_not_json_fails_the_list() {
    let script = Scripted::new(vec![ok(r#"{"items":[{"metadata":{"name":"a"}},07]}"#, 5)]);
    let error = config_maps(&script, None)
        .list(&ListParams::default())
        .await
        .unwrap_err();
    let Error::Decode(decode) = &error else {
        panic!("not a decode error: {error}");
    };
    assert_eq!(decode.list, Some(ListFailure::Item { index: 1 }));
}

const FORBIDDEN: &str = r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"configmaps is forbidden","reason":"Forbidden","code":403}"#;
const SUCCESS: &str = r#"{"kind":"Status","apiVersion":"v1","metadata":{"resourceVersion":"5"},"status":"Success","details":{"kind":"configmaps"}}"#;

#[tokio::test]
async fn a_status_in_a_2xx_body_is_an_error_when_it_says_failure() {
    let script = Scripted::new(vec![ok(FORBIDDEN, 9), ok(SUCCESS, 9)]);
    let client = config_maps(&script, None);
    let error = client.list(&ListParams::default()).await.unwrap_err();
    assert!(error.is_forbidden(), "{error}");
    assert_eq!(error.api_error().unwrap().http_code, 200);
    let list = client.list(&ListParams::default()).await.unwrap();
    assert!(list.items.is_empty());
    assert_eq!(
        (list.kind.as_str(), list.resource_version()),
        ("Status", "5")
    );
}

#[tokio::test]
async fn an_error_status_is_an_api_error() {
    let script = Scripted::new(vec![Answer::Body {
        status: 404,
        chunks: vec![
            Ok(br#"{"kind":"Status","apiVersion":"v1","status":"Failure","#),
            Ok(br#""reason":"NotFound","code":404}"#),
        ],
        stall: false,
    }]);
    let error = config_maps(&script, None)
        .list(&ListParams::default())
        .await
        .unwrap_err();
    assert!(error.is_not_found(), "{error}");
}

#[tokio::test]
async fn delete_collection_answers_the_list_or_the_status() {
    let script = Scripted::new(vec![ok(LIST, 11), ok(SUCCESS, 11), ok(FORBIDDEN, 11)]);
    let client = config_maps(&script, None);
    let (delete, all) = (DeleteParams::default(), ListParams::default());
    let Deleted::Object(list) = client.delete_collection(&delete, &all).await.unwrap() else {
        panic!("not the list");
    };
    assert_eq!(names(&list.items), ["a", "b", "c"]);
    let Deleted::Status(status) = client.delete_collection(&delete, &all).await.unwrap() else {
        panic!("not the Status");
    };
    assert_eq!(status.status, "Success");
    let error = client.delete_collection(&delete, &all).await.unwrap_err();
    assert!(error.is_forbidden(), "{error}");
    assert!(script.sent().iter().all(|s| s.starts_with("DELETE ")));
}

#[tokio::test(start_paused = true)]
async fn a_stalled_body_fails_at_the_time_limit() {
    let script = Scripted::new(vec![Answer::Body {
        status: 200,
        chunks: vec![Ok(br#"{"items":[{"metadata":{"name":"a"}},"#)],
        stall: true,
    }]);
    let start = tokio::time::Instant::now();
    let error = config_maps(&script, None)
        .list(&ListParams::default())
        .await
        .unwrap_err();
    assert_eq!(start.elapsed(), Duration::from_secs(30));
    assert_eq!(
        error.transport_error().map(TransportError::kind),
        Some(TransportErrorKind::Timeout)
    );
}
