//! Paths nothing serves: kube-apiserver 1.36.2 answers an unknown group, or a custom resource
//! whose CRD does not exist (yet, or any more), with Go's `http.NotFound` (404, `text/plain`,
//! `404 page not found`), not a Status; apiserver-sim answers the same. The client makes it
//! the NotFound error client-go makes of it.

use clientgo_apimachinery::StatusReason;
use clientgo_rest::api_error::CAUSE_UNEXPECTED_SERVER_RESPONSE;
use clientgo_rest::{DynamicClient, GetParams, ListParams};

use crate::common;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_page_not_found_is_a_not_found_error() {
    let s = common::secure().await;
    // The premise: the answer is not a Status.
    let raw = s
        .client
        .get()
        .abs_path("/apis/nope.example.com/v1/namespaces/default/things")
        .max_retries(0)
        .send()
        .await
        .unwrap_err();
    let api = raw.api_error().expect("an API error");
    assert_eq!(api.http_code, 404);
    let cause = &api.status.details.as_ref().unwrap().causes[0];
    assert_eq!(
        (cause.reason.as_str(), cause.message.as_str()),
        (CAUSE_UNEXPECTED_SERVER_RESPONSE, "404 page not found")
    );

    for (group, kind, plural) in [
        ("nope.example.com", "Thing", "things"),
        // A custom resource whose CRD was never created.
        ("example.com", "Widget", "widgets"),
    ] {
        let api = DynamicClient::from_api_resource(
            &s.client,
            &common::namespaced_v1(group, kind, plural),
            Some("default"),
        );
        let err = api.get("t", &GetParams::default()).await.unwrap_err();
        assert!(err.is_not_found(), "{err}");
        let status = err.status().unwrap();
        assert_eq!(status.reason, StatusReason::NotFound);
        assert_eq!(
            status.message,
            format!("the server could not find the requested resource (get {plural}.{group} t)")
        );
        let err = api.list(&ListParams::default()).await.unwrap_err();
        assert!(err.is_not_found(), "{err}");
    }
}
