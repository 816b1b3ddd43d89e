//! Generated CRDs against a real kube-apiserver 1.36 (clientgo-envtest): the CRD is accepted
//! and Established with a structural schema; a valid object is stored with its defaults
//! applied and its unknown fields pruned; each kind of validation the derive writes
//! refuses a bad object with the server's own message; two merged versions serve one kind.
//!
//! One control plane serves the tests of this binary. Without its binaries the tests are
//! skipped with one line saying what to set (they fail instead when
//! `CLIENTGO_ENVTEST_REQUIRED=1`). Every wait is bounded.

use std::collections::BTreeMap;
use std::time::Duration;

use clientgo_apimachinery::{ApiResource, DynamicObject, Resource};
use clientgo_derive::{CrdSchema, CustomResource, merge_crds};
use clientgo_envtest::ControlPlane;
use clientgo_rest::{
    Config, DynamicClient, GetParams, ListParams, PostParams, ResourceClient, RestClient,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// A widget: every validation kind the derive writes.
#[derive(CustomResource, CrdSchema, Serialize, Deserialize, Clone, Debug)]
#[resource(
    group = "derive.clientgo.dev", version = "v1", kind = "Widget", namespaced,
    status = "WidgetStatus", shortnames = ["wdg"], categories = ["clientgo"],
    printcolumn(name = "Replicas", type = "integer", json_path = ".spec.replicas"),
    scale(spec_replicas_path = ".spec.replicas", status_replicas_path = ".status.replicas"),
    selectable_field = ".spec.color",
    validation(rule = "self.metadata.name.size() <= 20", message = "widget names are at most 20 characters"),
)]
#[schema(validation(
    rule = "self.minReplicas <= self.replicas",
    message = "minReplicas must not exceed replicas"
))]
#[serde(rename_all = "camelCase")]
pub struct WidgetSpec {
    /// How many.
    #[schema(minimum = 0, maximum = 10)]
    pub replicas: i32,
    /// At least this many (defaulted by the server).
    #[serde(default)]
    #[schema(minimum = 0, default = 1)]
    pub min_replicas: i32,
    /// A host name.
    #[schema(pattern = "^[a-z][a-z0-9-]*$", min_length = 2, max_length = 12)]
    pub host: String,
    /// The color.
    pub color: Color,
    /// Tags, unique.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schema(max_items = 2, list_type = "set")]
    pub tags: Vec<String>,
    /// A size (int-or-string with the Quantity pattern), defaulted by the server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(default = "1Gi")]
    pub size: Option<Quantity>,
    /// A mode; one value is forbidden by a CEL rule.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(validation(rule = "self != 'forbidden'", message = "that mode is forbidden"))]
    pub mode: Option<String>,
    /// A note, written as `null` when absent (nullable).
    #[serde(default)]
    pub note: Option<String>,
    /// At most two labels.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    #[schema(max_properties = 2)]
    pub labels: BTreeMap<String, String>,
    /// Where the content comes from (externally tagged: exactly one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<Source>,
    /// The backend (internally tagged).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backend: Option<Backend>,
    /// Anything (preserved as written).
    #[serde(default, skip_serializing_if = "Value::is_null")]
    pub extra: Value,
    /// A whole object with apiVersion, kind and metadata.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(embedded_resource)]
    pub template: Option<Value>,
    /// Ports, keyed by name.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schema(list_type = "map", list_map_keys = ["name"])]
    pub ports: Vec<Port>,
}

/// Colors.
#[derive(CrdSchema, Serialize, Deserialize, Clone, Copy, Debug, PartialEq)]
#[serde(rename_all = "lowercase")]
pub enum Color {
    /// Red.
    Red,
    /// Green.
    Green,
}

/// Content sources.
#[derive(CrdSchema, Serialize, Deserialize, Clone, Debug)]
#[serde(rename_all = "camelCase")]
pub enum Source {
    /// A config map's name.
    ConfigMap(String),
    /// A URL.
    Url(String),
}

/// Backends.
#[derive(CrdSchema, Serialize, Deserialize, Clone, Debug)]
#[serde(tag = "kind")]
pub enum Backend {
    /// In memory.
    Memory,
    /// On disk.
    Disk {
        /// Where.
        path: String,
    },
}

/// A port.
#[derive(CrdSchema, Serialize, Deserialize, Clone, Debug)]
pub struct Port {
    /// Its name (the list's key).
    pub name: String,
    /// Its number.
    #[schema(minimum = 1, maximum = 65535)]
    pub port: i32,
}

/// What the controller reports.
#[derive(CrdSchema, Serialize, Deserialize, Clone, Debug, Default)]
pub struct WidgetStatus {
    /// Replicas running.
    pub replicas: i32,
}

/// The longest any wait may take.
const BOUND: Duration = Duration::from_secs(30);

fn client(cp: &ControlPlane) -> RestClient {
    let mut config = Config::from_kubeconfig_file(cp.kubeconfig_path()).expect("kubeconfig");
    config.qps = -1.0;
    RestClient::new(&config).expect("a client")
}

fn crds(client: &RestClient) -> DynamicClient {
    let resource = ApiResource {
        group: "apiextensions.k8s.io".into(),
        version: "v1".into(),
        kind: "CustomResourceDefinition".into(),
        plural: "customresourcedefinitions".into(),
        namespaced: false,
    };
    DynamicClient::from_api_resource(client, &resource, None)
}

/// Creates `crd` and waits until it is Established; returns its conditions.
async fn install(client: &RestClient, crd: Value) -> Vec<Value> {
    let name = crd["metadata"]["name"].as_str().unwrap().to_owned();
    let crds = crds(client);
    let object: DynamicObject = serde_json::from_value(crd).unwrap();
    crds.create(&object, &PostParams::default())
        .await
        .unwrap_or_else(|e| panic!("the API server refuses the CRD {name}: {e}"));
    let deadline = tokio::time::Instant::now() + BOUND;
    loop {
        let crd = crds.get(&name, &GetParams::default()).await.unwrap();
        let conditions = crd.data["status"]["conditions"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let established = conditions
            .iter()
            .any(|c| c["type"] == "Established" && c["status"] == "True");
        if established {
            return conditions;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{name} not Established: {conditions:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn valid_spec() -> Value {
    json!({"replicas": 3, "host": "web", "color": "red"})
}

fn widget(name: &str, spec: Value) -> DynamicObject {
    serde_json::from_value(json!({
        "apiVersion": "derive.clientgo.dev/v1", "kind": "Widget",
        "metadata": {"name": name}, "spec": spec,
    }))
    .unwrap()
}

/// `spec` with `changes` merged in at the top level.
fn spec_with(changes: Value) -> Value {
    let mut spec = valid_spec();
    for (k, v) in changes.as_object().unwrap() {
        spec[k] = v.clone();
    }
    spec
}

#[tokio::test]
async fn a_generated_crd_validates_defaults_and_prunes_on_a_real_api_server() {
    let Some(cp) = ControlPlane::shared() else {
        return;
    };
    let client = client(cp);
    let conditions = install(&client, Widget::crd()).await;
    assert!(
        !conditions
            .iter()
            .any(|c| c["type"] == "NonStructuralSchema"),
        "{conditions:?}"
    );
    assert!(
        conditions
            .iter()
            .any(|c| c["type"] == "NamesAccepted" && c["status"] == "True"),
        "{conditions:?}"
    );
    let namespace = cp.create_namespace("derive").unwrap();
    let widgets: ResourceClient<Widget> = ResourceClient::namespaced(&client, &namespace);
    let dynamic = DynamicClient::from_api_resource(
        &client,
        &ApiResource {
            group: Widget::GROUP.into(),
            version: Widget::VERSION.into(),
            kind: Widget::KIND.into(),
            plural: Widget::PLURAL.into(),
            namespaced: true,
        },
        Some(&namespace),
    );

    // A valid typed object: stored, with the server's defaults (minReplicas 1, size 1Gi) and
    // the nullable `note: null` accepted.
    let spec = WidgetSpec {
        replicas: 2,
        min_replicas: 0,
        host: "web".into(),
        color: Color::Green,
        tags: vec!["a".into(), "b".into()],
        size: None,
        mode: Some("fast".into()),
        note: None,
        labels: BTreeMap::from([("k".into(), "v".into())]),
        source: Some(Source::Url("https://example.com".into())),
        backend: Some(Backend::Disk {
            path: "/data".into(),
        }),
        extra: json!({"anything": [1, {"goes": true}]}),
        template: Some(
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "t"}, "data": {"a": "b"}}),
        ),
        ports: vec![Port {
            name: "http".into(),
            port: 80,
        }],
    };
    let created = tokio::time::timeout(
        BOUND,
        widgets.create(&Widget::new("first", spec), &PostParams::default()),
    )
    .await
    .unwrap()
    .unwrap();
    assert_eq!(
        created.spec.size,
        Some(Quantity("1Gi".into())),
        "defaulted by the server"
    );
    assert_eq!(created.spec.min_replicas, 0, "written, so not defaulted");
    assert_eq!(created.spec.color, Color::Green);
    assert_eq!(created.spec.extra, json!({"anything": [1, {"goes": true}]}));
    assert_eq!(
        created.spec.template.as_ref().unwrap()["data"],
        json!({"a": "b"})
    );
    assert!(matches!(created.spec.backend, Some(Backend::Disk { ref path }) if path == "/data"));

    // Defaults for absent fields, and unknown fields pruned (at the top, in spec, in a
    // nested object), while preserve-unknown-fields keeps them.
    let mut pruned = widget(
        "second",
        spec_with(json!({
            "unknownField": 1,
            "source": {"configMap": "cm", "alsoUnknown": true},
            "extra": {"kept": {"deep": 1}},
        })),
    );
    pruned.data.insert("topLevelUnknown".into(), json!("x"));
    let stored = dynamic
        .create(&pruned, &PostParams::default())
        .await
        .unwrap();
    let spec = &stored.data["spec"];
    assert_eq!(spec["minReplicas"], 1, "defaulted: {spec}");
    assert_eq!(spec["size"], "1Gi");
    assert!(spec.get("unknownField").is_none(), "pruned: {spec}");
    assert_eq!(spec["source"], json!({"configMap": "cm"}), "pruned inside");
    assert_eq!(spec["extra"], json!({"kept": {"deep": 1}}), "preserved");
    assert!(
        !stored.data.contains_key("topLevelUnknown"),
        "pruned at the root"
    );

    // `null`: kept where the schema says nullable (an `Option` serde writes as null), dropped
    // before validation where it does not.
    let nulls = widget("nulls", spec_with(json!({"note": null, "mode": null})));
    let stored = dynamic
        .create(&nulls, &PostParams::default())
        .await
        .unwrap();
    assert_eq!(
        stored.data["spec"].get("note"),
        Some(&Value::Null),
        "{}",
        stored.data["spec"]
    );
    assert!(
        stored.data["spec"].get("mode").is_none(),
        "{}",
        stored.data["spec"]
    );

    // The selectable field: a field selector on `spec.color` (only "first" is green).
    let green = widgets
        .list(&ListParams {
            field_selector: Some("spec.color=green".into()),
            ..ListParams::default()
        })
        .await
        .unwrap();
    let names: Vec<&str> = green
        .items
        .iter()
        .map(|w| w.metadata.name.as_str())
        .collect();
    assert_eq!(names, ["first"]);

    // The scale subresource reads `.spec.replicas` (autoscaling/v1 Scale).
    let scale: Value = dynamic
        .request(http::Method::GET)
        .name("first")
        .subresource("scale")
        .send()
        .await
        .unwrap()
        .json()
        .unwrap();
    assert_eq!(
        (&scale["kind"], &scale["spec"]["replicas"]),
        (&json!("Scale"), &json!(2))
    );

    // Each validation refuses with the server's message.
    let cases: Vec<(&str, &str, Value, &[&str])> = vec![
        (
            "maximum",
            "max",
            spec_with(json!({"replicas": 11})),
            &[
                "spec.replicas: Invalid value: 11: spec.replicas in body should be less than or equal to 10",
            ],
        ),
        (
            "minimum",
            "min",
            spec_with(json!({"replicas": -1})),
            &[
                "spec.replicas: Invalid value: -1: spec.replicas in body should be greater than or equal to 0",
            ],
        ),
        (
            "type",
            "type",
            spec_with(json!({"replicas": "ten"})),
            &[
                "spec.replicas: Invalid value: \"string\": spec.replicas in body must be of type integer: \"string\"",
            ],
        ),
        (
            "required",
            "required",
            json!({"replicas": 1, "color": "red"}),
            &["spec.host: Required value"],
        ),
        (
            "pattern",
            "pattern",
            spec_with(json!({"host": "Web!"})),
            &["spec.host in body should match '^[a-z][a-z0-9-]*$'"],
        ),
        (
            "maxLength",
            "maxlength",
            spec_with(json!({"host": "a-very-long-host"})),
            &["spec.host: Too long: may not be more than 12 bytes"],
        ),
        (
            "minLength",
            "minlength",
            spec_with(json!({"host": "a"})),
            &["spec.host in body should be at least 2 chars long"],
        ),
        (
            "enum",
            "enum",
            spec_with(json!({"color": "purple"})),
            &["spec.color: Unsupported value: \"purple\": supported values: \"red\", \"green\""],
        ),
        (
            "maxItems",
            "maxitems",
            spec_with(json!({"tags": ["a", "b", "c"]})),
            &["spec.tags: Too many: 3: must have at most 2 items"],
        ),
        (
            "list set",
            "set",
            spec_with(json!({"tags": ["a", "a"]})),
            &["spec.tags[1]: Duplicate value: \"a\""],
        ),
        (
            "list map",
            "listmap",
            spec_with(
                json!({"ports": [{"name": "http", "port": 80}, {"name": "http", "port": 81}]}),
            ),
            &["spec.ports[1]: Duplicate value: {\"name\":\"http\"}"],
        ),
        (
            "maxProperties",
            "maxprops",
            spec_with(json!({"labels": {"a": "1", "b": "2", "c": "3"}})),
            &["spec.labels: Too many: 3: must have at most 2 items"],
        ),
        (
            "int-or-string pattern",
            "quantity",
            spec_with(json!({"size": "lots"})),
            &["spec.size in body should match"],
        ),
        (
            "CEL on the spec",
            "cel",
            spec_with(json!({"replicas": 1, "minReplicas": 2})),
            &["spec: Invalid value: minReplicas must not exceed replicas"],
        ),
        (
            "CEL on a field",
            "celfield",
            spec_with(json!({"mode": "forbidden"})),
            &["spec.mode: Invalid value: \"forbidden\": that mode is forbidden"],
        ),
        (
            "CEL on the root",
            "a-name-longer-than-twenty",
            valid_spec(),
            &["widget names are at most 20 characters"],
        ),
        (
            "oneOf of an externally tagged enum",
            "oneof",
            spec_with(json!({"source": {"configMap": "a", "url": "b"}})),
            &["must validate one and only one schema (oneOf)"],
        ),
        (
            "oneOf none set",
            "oneofnone",
            spec_with(json!({"source": {}})),
            &["must validate one and only one schema (oneOf)"],
        ),
        (
            "internally tagged: unknown tag",
            "tag",
            spec_with(json!({"backend": {"kind": "Cloud"}})),
            &["spec.backend.kind: Unsupported value: \"Cloud\""],
        ),
        (
            "internally tagged: variant's required field",
            "tagreq",
            spec_with(json!({"backend": {"kind": "Disk"}})),
            &["must validate one and only one schema (oneOf)"],
        ),
        (
            "embedded resource without kind",
            "embedded",
            spec_with(json!({"template": {"apiVersion": "v1", "metadata": {"name": "x"}}})),
            &["spec.template.kind: Required value"],
        ),
        (
            "nested minimum",
            "nested",
            spec_with(json!({"ports": [{"name": "http", "port": 0}]})),
            &["spec.ports[0].port in body should be greater than or equal to 1"],
        ),
    ];
    let mut wrong = Vec::new();
    for (what, name, spec, expected) in cases {
        match dynamic
            .create(&widget(name, spec), &PostParams::default())
            .await
        {
            Ok(_) => wrong.push(format!("{what}: accepted")),
            Err(error) => {
                let message = error
                    .api_error()
                    .map(|e| e.status.message.clone())
                    .unwrap_or_else(|| error.to_string());
                if !error.is_invalid() || !expected.iter().all(|e| message.contains(e)) {
                    wrong.push(format!("{what}: {message}"));
                }
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "refused otherwise than expected:\n{}",
        wrong.join("\n")
    );
}

/// Two versions of one kind, merged.
mod gadget {
    pub mod v1 {
        use super::super::*;
        /// A gadget, v1 (stored).
        #[derive(CustomResource, CrdSchema, Serialize, Deserialize, Clone, Debug)]
        #[resource(group = "derive.clientgo.dev", version = "v1", kind = "Gadget")]
        pub struct GadgetSpec {
            /// Its size.
            pub size: i32,
        }
    }
    pub mod v2 {
        use super::super::*;
        /// A gadget, v2 (served, not stored).
        #[derive(CustomResource, CrdSchema, Serialize, Deserialize, Clone, Debug)]
        #[resource(
            group = "derive.clientgo.dev",
            version = "v2",
            kind = "Gadget",
            storage = false
        )]
        pub struct GadgetSpec {
            /// Its size.
            pub size: i32,
            /// Its color, new in v2.
            #[serde(default, skip_serializing_if = "Option::is_none")]
            pub color: Option<String>,
        }
    }
}

#[tokio::test]
async fn merged_versions_serve_one_kind_on_a_real_api_server() {
    use gadget::{v1, v2};
    let Some(cp) = ControlPlane::shared() else {
        return;
    };
    let client = client(cp);
    let crd = merge_crds([v1::Gadget::crd(), v2::Gadget::crd()]).unwrap();
    install(&client, crd).await;
    let namespace = cp.create_namespace("gadgets").unwrap();
    let v1s: ResourceClient<v1::Gadget> = ResourceClient::namespaced(&client, &namespace);
    let v2s: ResourceClient<v2::Gadget> = ResourceClient::namespaced(&client, &namespace);
    let mut created = None;
    for _ in 0..50 {
        // The new version may take a moment to be served.
        match v1s
            .create(
                &v1::Gadget::new("g", v1::GadgetSpec { size: 4 }),
                &PostParams::default(),
            )
            .await
        {
            Ok(g) => {
                created = Some(g);
                break;
            }
            Err(e) if e.is_not_found() => tokio::time::sleep(Duration::from_millis(200)).await,
            Err(e) => panic!("{e}"),
        }
    }
    assert_eq!(created.expect("served within 10 s").spec.size, 4);
    let as_v2 = v2s.get("g", &GetParams::default()).await.unwrap();
    assert_eq!(
        (
            as_v2.api_version.as_str(),
            as_v2.spec.size,
            as_v2.spec.color
        ),
        ("derive.clientgo.dev/v2", 4, None)
    );

    let crd = crds(&client)
        .get(&v1::Gadget::crd_name(), &GetParams::default())
        .await
        .unwrap();
    assert_eq!(crd.data["status"]["storedVersions"], json!(["v1"]));
}

/// Every other shape the derive writes, to check the API server finds them all structural.
mod sink {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, LabelSelector};
    use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

    /// Everything else.
    #[derive(CustomResource, CrdSchema, Serialize, Deserialize, Clone, Debug)]
    #[resource(
        group = "derive.clientgo.dev",
        version = "v1alpha1",
        kind = "Sink",
        cluster,
        status = "SinkStatus"
    )]
    #[serde(rename_all = "camelCase")]
    pub struct SinkSpec {
        /// Unsigned, so minimum 0.
        pub count: u32,
        /// A fixed-size array.
        pub pair: [u16; 2],
        /// A set of strings.
        pub set: std::collections::BTreeSet<String>,
        /// Floats.
        pub ratio: f64,
        /// Untagged: integer or string.
        pub port: PortRef,
        /// Untagged objects.
        pub target: Target,
        /// int-or-string.
        pub budget: IntOrString,
        /// A selector.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub selector: Option<LabelSelector>,
        /// Nested metadata (kept, not pruned).
        #[serde(default)]
        pub meta: clientgo_apimachinery::ObjectMeta,
        /// Flattened.
        #[serde(flatten)]
        pub common: Common,
        /// A map of lists.
        #[serde(default)]
        pub groups: BTreeMap<String, Vec<String>>,
        /// Atomic map.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[schema(map_type = "atomic")]
        pub atomic: Option<Common>,
    }

    /// Flattened fields.
    #[derive(CrdSchema, Serialize, Deserialize, Clone, Debug)]
    pub struct Common {
        /// A shared field.
        pub owner: String,
    }

    /// A port by number or name.
    #[derive(CrdSchema, Serialize, Deserialize, Clone, Debug)]
    #[serde(untagged)]
    pub enum PortRef {
        /// By number.
        Number(i32),
        /// By name.
        Name(String),
    }

    /// A target by name or by id.
    #[derive(CrdSchema, Serialize, Deserialize, Clone, Debug)]
    #[serde(untagged)]
    pub enum Target {
        /// By name.
        ByName {
            /// The name.
            name: String,
        },
        /// By id.
        ById {
            /// The id.
            id: i64,
        },
    }

    /// Status with conditions.
    #[derive(CrdSchema, Serialize, Deserialize, Clone, Debug, Default)]
    pub struct SinkStatus {
        /// metav1 conditions.
        #[serde(default)]
        #[schema(list_type = "map", list_map_keys = ["type"])]
        pub conditions: Vec<Condition>,
    }
}

#[tokio::test]
async fn every_other_shape_is_structural_on_a_real_api_server() {
    use sink::Sink;
    let Some(cp) = ControlPlane::shared() else {
        return;
    };
    let client = client(cp);
    let conditions = install(&client, Sink::crd()).await;
    assert!(
        !conditions
            .iter()
            .any(|c| c["type"] == "NonStructuralSchema"),
        "{conditions:?}"
    );
    let sinks = DynamicClient::from_api_resource(
        &client,
        &ApiResource {
            group: Sink::GROUP.into(),
            version: Sink::VERSION.into(),
            kind: Sink::KIND.into(),
            plural: Sink::PLURAL.into(),
            namespaced: false,
        },
        None,
    );
    let spec = json!({
        "count": 3, "pair": [1, 2], "set": ["a", "b"], "ratio": 0.5, "port": "http",
        "target": {"id": 7}, "budget": "10%", "owner": "me",
        "meta": {"name": "m", "labels": {"a": "b"}},
        "groups": {"g": ["x"]},
    });
    let object: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "derive.clientgo.dev/v1alpha1", "kind": "Sink",
        "metadata": {"name": "sink"}, "spec": spec,
    }))
    .unwrap();
    let stored = sinks.create(&object, &PostParams::default()).await.unwrap();
    assert_eq!(
        stored.data["spec"], spec,
        "stored as written, nothing pruned"
    );
    let typed: Sink = serde_json::from_value(serde_json::to_value(&stored).unwrap()).unwrap();
    assert!(matches!(typed.spec.target, sink::Target::ById { id: 7 }));

    let mut bad = object.clone();
    bad.metadata.name = "bad".into();
    bad.data.insert("spec".into(), json!({"count": -1, "pair": [1], "set": [], "ratio": 1, "port": true, "target": {}, "budget": 1, "owner": "me"}));
    let error = sinks
        .create(&bad, &PostParams::default())
        .await
        .unwrap_err();
    let message = error.api_error().unwrap().status.message.clone();
    for expected in [
        "spec.count in body should be greater than or equal to 0",
        "spec.pair in body should have at least 2 items",
        "spec.port: Invalid value: \"boolean\": spec.port in body must be of type integer,string: \"boolean\"",
        "\"spec.target\" must validate at least one schema (anyOf)",
    ] {
        assert!(message.contains(expected), "{expected} not in {message}");
    }
}
