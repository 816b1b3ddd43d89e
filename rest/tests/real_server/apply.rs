//! Server-side apply on the real server: a second field manager changing a field the first
//! one owns is refused with a 409 whose causes name the conflict, until it forces the apply;
//! managedFields then record both managers and who owns which field.

use std::collections::BTreeMap;

use clientgo_apimachinery::StatusReason;
use clientgo_rest::{GetParams, PatchParams, ResourceClient};
use k8s_openapi::api::core::v1::ConfigMap;
use serde_json::json;

use crate::{client, control_plane, within};

/// Each manager's name, operation and owned `data` keys, from the object's managedFields.
fn owners(cm: &ConfigMap) -> BTreeMap<String, (String, Vec<String>)> {
    cm.metadata
        .managed_fields
        .as_deref()
        .unwrap_or_default()
        .iter()
        .map(|entry| {
            let fields = entry.fields_v1.as_ref().map(|f| &f.0);
            let data_keys = fields
                .and_then(|f| f["f:data"].as_object())
                .map(|data| {
                    data.keys()
                        .map(|k| k.trim_start_matches("f:").to_owned())
                        .collect()
                })
                .unwrap_or_default();
            (
                entry.manager.clone().unwrap_or_default(),
                (entry.operation.clone().unwrap_or_default(), data_keys),
            )
        })
        .collect()
}

#[tokio::test]
async fn an_apply_conflicting_with_another_manager_is_refused_until_forced() {
    let Some(cp) = control_plane() else { return };
    let namespace = cp.create_namespace("apply").unwrap();
    let api = ResourceClient::<ConfigMap>::namespaced(&client(cp), &namespace);
    let apply = |manager: &'static str, data: serde_json::Value, force: bool| {
        let api = api.clone();
        let manifest = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "shared"}, "data": data});
        let params = match force {
            true => PatchParams::apply(manager).force(),
            false => PatchParams::apply(manager),
        };
        async move { within("an apply", api.apply("shared", &manifest, &params)).await }
    };
    let a_data = || json!({"shared": "from-a", "only-a": "a"});
    let b_data = || json!({"shared": "from-b"});

    let a = apply("manager-a", a_data(), false).await.unwrap();
    assert_eq!(
        owners(&a),
        BTreeMap::from([(
            "manager-a".to_owned(),
            (
                "Apply".to_owned(),
                vec!["only-a".to_owned(), "shared".to_owned()]
            )
        )])
    );

    let error = apply("manager-b", b_data(), false).await.unwrap_err();
    assert!(error.is_conflict() && !error.is_already_exists(), "{error}");
    let e = error.api_error().expect("an API error");
    assert_eq!(
        (e.code(), e.status.reason.clone()),
        (409, StatusReason::Conflict)
    );
    assert_eq!(
        e.status.message,
        r#"Apply failed with 1 conflict: conflict with "manager-a": .data.shared"#
    );
    let causes: Vec<(&str, &str, &str)> = e
        .status
        .details
        .as_ref()
        .expect("details")
        .causes
        .iter()
        .map(|c| (c.reason.as_str(), c.message.as_str(), c.field.as_str()))
        .collect();
    assert_eq!(
        causes,
        [(
            "FieldManagerConflict",
            r#"conflict with "manager-a""#,
            ".data.shared"
        )]
    );
    assert!(e.has_cause("FieldManagerConflict"));
    let unchanged = api.get("shared", &GetParams::default()).await.unwrap();
    assert_eq!(unchanged.data.as_ref().unwrap()["shared"], "from-a");

    let b = apply("manager-b", b_data(), true).await.unwrap();
    assert_eq!(
        b.data.as_ref().unwrap(),
        &BTreeMap::from([
            ("only-a".to_owned(), "a".to_owned()),
            ("shared".to_owned(), "from-b".to_owned())
        ])
    );
    assert_eq!(
        owners(&b),
        BTreeMap::from([
            (
                "manager-a".to_owned(),
                ("Apply".to_owned(), vec!["only-a".to_owned()])
            ),
            (
                "manager-b".to_owned(),
                ("Apply".to_owned(), vec!["shared".to_owned()])
            ),
        ]),
        "B took the field A owned; A keeps the other"
    );

    // Now A is the one in conflict, for the same field.
    let error = apply("manager-a", a_data(), false).await.unwrap_err();
    assert!(error.is_conflict(), "{error}");
    assert_eq!(
        error.status().unwrap().message,
        r#"Apply failed with 1 conflict: conflict with "manager-b": .data.shared"#
    );
}
