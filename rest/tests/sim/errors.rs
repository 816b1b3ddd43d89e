//! Each error predicate against the Status the sim really answers with.
//!
//! Not covered against the sim: `is_server_timeout` (reason `ServerTimeout`) and `is_gone`
//! (reason `Gone`), which it never produces: its timeouts are 504 `Timeout` and its 410s are
//! `Expired`, as a current kube-apiserver's are in the same cases.

use std::time::Duration;

use clientgo_apimachinery::{ApiResource, DynamicObject, StatusReason};
use clientgo_apiserver_sim::SimConfig;
use clientgo_apiserver_sim::faults::{InjectedError, RequestMatch};
use clientgo_rest::{
    Config, DeleteParams, DynamicClient, GetParams, ListParams, PostParams, RestClient,
};
use serde_json::json;

use crate::common::{self, config_maps, eventually};

fn cm(name: &str) -> DynamicObject {
    serde_json::from_value(
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}}),
    )
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn not_found_already_exists_conflict_invalid_bad_request() {
    let s = common::secure().await;
    let api = config_maps(&s.client, "default");
    let post = PostParams::default();

    let err = api.get("missing", &GetParams::default()).await.unwrap_err();
    assert!(err.is_not_found() && !err.is_conflict(), "{err}");
    let status = err.status().unwrap();
    assert_eq!(
        (status.code, &status.reason),
        (404, &StatusReason::NotFound)
    );
    assert_eq!(status.message, r#"configmaps "missing" not found"#);
    let details = status.details.as_ref().unwrap();
    assert_eq!(
        (details.name.as_str(), details.kind.as_str()),
        ("missing", "configmaps")
    );

    let first = api.create(&cm("dup"), &post).await.unwrap();
    let err = api.create(&cm("dup"), &post).await.unwrap_err();
    assert!(err.is_already_exists() && !err.is_conflict(), "{err}");
    assert_eq!(err.status().unwrap().code, 409);

    let mut changed = first.clone();
    changed.data.insert("data".into(), json!({"a": "1"}));
    api.update("dup", &changed, &post).await.unwrap();
    let mut stale = first.clone();
    stale.data.insert("data".into(), json!({"a": "2"}));
    let err = api.update("dup", &stale, &post).await.unwrap_err();
    assert!(err.is_conflict() && !err.is_already_exists(), "{err}");
    assert!(
        err.to_string().contains("the object has been modified"),
        "{err}"
    );

    let err = api.create(&cm("Not_A_Name"), &post).await.unwrap_err();
    assert!(err.is_invalid(), "{err}");
    let status = err.status().unwrap();
    assert_eq!(status.code, 422);
    let causes = &status.details.as_ref().unwrap().causes;
    assert!(
        causes.iter().any(|c| c.field == "metadata.name"),
        "{causes:?}"
    );

    let both = ListParams {
        continue_token: Some("abc".into()),
        resource_version: Some("1".into()),
        ..ListParams::default()
    };
    let err = api.list(&both).await.unwrap_err();
    assert!(err.is_bad_request(), "{err}");

    let err = api
        .delete(
            "dup",
            &DeleteParams {
                preconditions: Some(clientgo_rest::Preconditions {
                    uid: Some("not-its-uid".into()),
                    resource_version: None,
                }),
                ..DeleteParams::default()
            },
        )
        .await
        .unwrap_err();
    assert!(
        err.is_conflict(),
        "a failed precondition is a conflict: {err}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gone_and_expired_after_compaction() {
    let s = common::secure().await;
    let api = config_maps(&s.client, "default");
    api.create(&cm("one"), &PostParams::default())
        .await
        .unwrap();
    api.create(&cm("two"), &PostParams::default())
        .await
        .unwrap();
    let old = api
        .list(&ListParams::default())
        .await
        .unwrap()
        .resource_version()
        .to_owned();
    let page = api
        .list(&ListParams {
            limit: Some(1),
            ..ListParams::default()
        })
        .await
        .unwrap();
    assert!(page.continue_token().is_some());
    api.create(&cm("three"), &PostParams::default())
        .await
        .unwrap();
    s.sim.compact();

    let exact = ListParams {
        resource_version: Some(old),
        resource_version_match: Some("Exact".into()),
        ..ListParams::default()
    };
    let err = api.list(&exact).await.unwrap_err();
    // 410 with reason Expired, as the real server answers: `is_gone` is for reason `Gone`
    // (or a 410 with an unknown reason), which neither the sim nor a current server sends.
    assert!(err.is_resource_expired() && !err.is_gone(), "{err}");
    assert_eq!(err.status().unwrap().code, 410);

    // A continue token from before the compaction has expired too.
    let next = ListParams {
        limit: Some(1),
        continue_token: page.continue_token().map(str::to_owned),
        ..ListParams::default()
    };
    let err = api.list(&next).await.unwrap_err();
    assert!(err.is_resource_expired(), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn injected_429_503_504_and_500() {
    let s = common::secure().await;
    // No retries: the first answer is the result.
    let client = RestClient::builder(s.config.clone())
        .max_retries(0)
        .build()
        .unwrap();
    let api = config_maps(&client, "default");
    let faults = s.sim.faults();
    let all = ListParams::default();
    let list = || api.list(&all);

    faults.fail_next(
        1,
        RequestMatch::new("list", "configmaps"),
        InjectedError::TooManyRequests { retry_after: 3 },
    );
    let err = list().await.unwrap_err();
    assert!(err.is_too_many_requests(), "{err}");
    assert_eq!(err.api_error().unwrap().suggests_client_delay(), Some(3));

    faults.fail_next(
        1,
        RequestMatch::new("list", "configmaps"),
        InjectedError::ServiceUnavailable { retry_after: 2 },
    );
    let err = list().await.unwrap_err();
    assert!(err.is_service_unavailable(), "{err}");

    faults.fail_next(
        1,
        RequestMatch::new("list", "configmaps"),
        InjectedError::GatewayTimeout { retry_after: 1 },
    );
    let err = list().await.unwrap_err();
    assert!(err.is_timeout() && !err.is_server_timeout(), "{err}");
    assert_eq!(err.status().unwrap().code, 504);

    faults.fail_next(1, RequestMatch::any(), InjectedError::InternalError);
    let err = list().await.unwrap_err();
    assert!(err.is_internal_error(), "{err}");
    list().await.expect("the faults are used up");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_future_resource_version_times_out() {
    let sim_config = SimConfig {
        too_large_rv_wait: Duration::from_millis(100),
        ..SimConfig::default()
    };
    let s = common::secure_with(sim_config).await;
    // The 504 carries `Retry-After: 1`, which the client would honour ten times over.
    let client = RestClient::builder(s.config.clone())
        .max_retries(0)
        .build()
        .unwrap();
    let api = config_maps(&client, "default");
    let future = (s.sim.resource_version() + 1000).to_string();
    let err = api
        .list(&ListParams {
            resource_version: Some(future),
            resource_version_match: Some("NotOlderThan".into()),
            ..ListParams::default()
        })
        .await
        .unwrap_err();
    assert!(err.is_timeout(), "{err}");
    assert!(
        err.api_error()
            .unwrap()
            .has_cause("ResourceVersionTooLarge"),
        "{err}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unauthorized_with_a_wrong_token_or_none() {
    let s = common::secure().await;
    let mut wrong = s.config.clone();
    wrong.auth = clientgo_rest::Auth::Bearer("not-the-token".to_owned().into());
    let api = config_maps(&RestClient::new(&wrong).unwrap(), "default");
    let err = api.get("x", &GetParams::default()).await.unwrap_err();
    assert!(err.is_unauthorized() && !err.is_forbidden(), "{err}");
    assert_eq!(err.status().unwrap().code, 401);

    let mut none: Config = s.config.clone();
    none.auth = clientgo_rest::Auth::None;
    let api = config_maps(&RestClient::new(&none).unwrap(), "default");
    assert!(
        api.list(&ListParams::default())
            .await
            .unwrap_err()
            .is_unauthorized()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forbidden_in_a_terminating_namespace() {
    let s = common::secure().await;
    common::namespace(&s.sim, "closing");
    let api = config_maps(&s.client, "closing");
    // A finalizer nobody removes keeps the namespace terminating.
    let mut held = cm("held");
    held.metadata.finalizers = vec!["example.com/hold".into()];
    api.create(&held, &PostParams::default()).await.unwrap();
    let namespaces = DynamicClient::from_api_resource(
        &s.client,
        &ApiResource {
            group: String::new(),
            version: "v1".into(),
            kind: "Namespace".into(),
            plural: "namespaces".into(),
            namespaced: false,
        },
        None,
    );
    namespaces
        .delete("closing", &DeleteParams::default())
        .await
        .unwrap();
    eventually(
        Duration::from_secs(10),
        "the namespace to be terminating",
        || async {
            let ns = namespaces
                .get("closing", &GetParams::default())
                .await
                .unwrap();
            ns.data["status"]["phase"] == "Terminating"
        },
    )
    .await;
    let err = api
        .create(&cm("late"), &PostParams::default())
        .await
        .unwrap_err();
    assert!(err.is_forbidden() && !err.is_unauthorized(), "{err}");
    assert_eq!(err.status().unwrap().code, 403);
}
