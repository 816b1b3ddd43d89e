//! Output negotiation: Table answers (`as=Table;g=meta.k8s.io`) of built-in resources with
//! their printers' columns (ConfigMaps, Secrets, Pods, Namespaces, Deployments, ReplicaSets,
//! Leases, CRDs) and of custom resources (a CRD's `additionalPrinterColumns`, or the default
//! `Age` column), `includeObject`, Tables of writes, Table watches (their bookmarks too);
//! then `Accept` headers the servers refuse or answer otherwise (406 in go-restful's words
//! and in the negotiator's, a list-only conversion asked of one object and the reverse, a
//! watch asking for `PartialObjectMetadataList`, YAML). They run last, in `{ns}`, with CRDs
//! of their own group `tables.{group}`.

use http::Method;
use serde_json::{Value, json};

use super::client::Until;
use super::script::{CM, MERGE, delete, get, patch, post};
use super::step::{Pick, Step};

const TABLE: &str = "application/json;as=Table;v=v1;g=meta.k8s.io";
const TABLE_BETA: &str = "application/json;as=Table;v=v1beta1;g=meta.k8s.io";
const METADATA: &str = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1";
const METADATA_LIST: &str = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1";
const YAML: &str = "application/yaml";
const CRDS: &str = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
const GIZMOS: &str = "/apis/tables.{group}/v1/namespaces/{ns}/gizmos";
const DOODADS: &str = "/apis/tables.{group}/v1/doodads";
const PODS: &str = "/api/v1/namespaces/{ns}/pods";
const DEPLOYMENTS: &str = "/apis/apps/v1/namespaces/{ns}/deployments";
const REPLICASETS: &str = "/apis/apps/v1/namespaces/{ns}/replicasets";
const LABELLED: &str = "labelSelector=tables%3Dyes";

fn table(name: &'static str, behaviour: &'static str, path: &str) -> Step {
    get(name, behaviour, path).accept(TABLE)
}

fn crd(plural: &str, kind: &str, scope: &str, columns: Option<Value>) -> Value {
    let mut version = json!({"name": "v1", "served": true, "storage": true,
        "schema": {"openAPIV3Schema": {"type": "object",
            "x-kubernetes-preserve-unknown-fields": true}}});
    if let Some(columns) = columns {
        version["additionalPrinterColumns"] = columns;
    }
    json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("{plural}.tables.{{group}}")},
        "spec": {"group": "tables.{group}", "scope": scope,
            "names": {"plural": plural, "kind": kind}, "versions": [version]}})
}

/// The objects the Tables show.
fn setup() -> Vec<Step> {
    let labels = json!({"tables": "yes"});
    let cm_a = json!({"metadata": {"name": "tables-a", "labels": labels},
        "data": {"a": "1", "b": "2"}, "binaryData": {"c": "AAAA"}});
    let cm_b = json!({"metadata": {"name": "tables-b", "labels": labels}});
    let pod = json!({"metadata": {"name": "tables-pod", "labels": labels},
        "spec": {"containers": [{"name": "app", "image": "nginx:1"},
                {"name": "side", "image": "busybox"}],
            "readinessGates": [{"conditionType": "example.com/ready"}]}});
    let template = json!({"metadata": {"labels": {"app": "tables", "tier": "a"}},
        "spec": {"containers": [{"name": "app", "image": "nginx:1"},
            {"name": "side", "image": "busybox"}]}});
    let selector = json!({"matchLabels": {"app": "tables"},
        "matchExpressions": [{"key": "tier", "operator": "In", "values": ["b", "a"]}]});
    let deployment = json!({"metadata": {"name": "tables-deploy", "labels": labels},
        "spec": {"replicas": 3, "selector": selector, "template": template}});
    let replicaset = json!({"metadata": {"name": "tables-rs", "labels": labels},
        "spec": {"replicas": 2, "selector": selector, "template": template}});
    let secret = json!({"metadata": {"name": "tables-secret"}, "type": "example.com/kind",
        "data": {"a": "AAAA"}});
    let lease = json!({"metadata": {"name": "tables-lease"}, "spec": {"holderIdentity": "me"}});
    let columns = json!([
        {"name": "Size", "type": "integer", "jsonPath": ".spec.size", "description": "the size"},
        {"name": "Color", "type": "string", "jsonPath": ".spec.color", "priority": 1},
        {"name": "Ready", "type": "boolean", "jsonPath": ".status.ready"},
        {"name": "Ratio", "type": "number", "format": "float", "jsonPath": ".spec.ratio"},
        {"name": "Born", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
        {"name": "Tags", "type": "string", "jsonPath": ".spec.tags"},
        {"name": "First", "type": "string", "jsonPath": ".spec.tags[0]"},
        {"name": "Shape", "type": "string", "jsonPath": ".spec.shape"},
        {"name": "Count", "type": "string", "jsonPath": ".spec.size"},
        {"name": "Seen", "type": "date", "jsonPath": ".spec.seen"}]);
    let gizmo = |name: &str, spec: Value| {
        json!({"apiVersion": "tables.{group}/v1", "kind": "Gizmo",
            "metadata": {"name": name}, "spec": spec, "status": {"ready": true}})
    };
    let create = "create";
    vec![
        post("tables/create-cm-a", create, CM, cm_a).picks(&[Pick::At("/metadata/name")]),
        post("tables/create-cm-b", create, CM, cm_b).picks(&[Pick::At("/metadata/name")]),
        post("tables/create-pod", create, PODS, pod).picks(&[Pick::At("/metadata/name")]),
        post("tables/create-deployment", create, DEPLOYMENTS, deployment)
            .picks(&[Pick::At("/metadata/name")]),
        post("tables/create-replicaset", create, REPLICASETS, replicaset)
            .picks(&[Pick::At("/metadata/name")]),
        post(
            "tables/create-secret",
            create,
            "/api/v1/namespaces/{ns}/secrets",
            secret,
        )
        .picks(&[Pick::At("/metadata/name")]),
        post(
            "tables/create-lease",
            create,
            "/apis/coordination.k8s.io/v1/namespaces/{ns}/leases",
            lease,
        )
        .picks(&[Pick::At("/metadata/name")]),
        post(
            "tables/create-crd-columns",
            "create: a CRD (the fields written)",
            CRDS,
            crd("gizmos", "Gizmo", "Namespaced", Some(columns)),
        )
        .picks(&[Pick::At("/metadata/name")]),
        post(
            "tables/create-crd-plain",
            "create: a CRD (the fields written)",
            CRDS,
            crd("doodads", "Doodad", "Cluster", None),
        )
        .picks(&[Pick::At("/metadata/name")]),
        Step::wait_established(
            "tables/gizmos-established",
            "CRD: Established",
            &format!("{CRDS}/gizmos.tables.{{group}}"),
        ),
        Step::wait_established(
            "tables/doodads-established",
            "CRD: Established",
            &format!("{CRDS}/doodads.tables.{{group}}"),
        ),
        post(
            "tables/create-gizmo-full",
            create,
            GIZMOS,
            gizmo(
                "full",
                json!({"size": 3, "color": "red", "ratio": 0.5, "tags": ["a", "b"],
                    "shape": {"sides": 4}, "seen": "2020-01-01T00:00:00Z"}),
            ),
        )
        .picks(&[Pick::At("/metadata/name")]),
        post(
            "tables/create-gizmo-odd",
            create,
            GIZMOS,
            gizmo(
                "odd",
                json!({"size": "big", "ratio": 2, "color": 7, "tags": [], "seen": "soon"}),
            ),
        )
        .picks(&[Pick::At("/metadata/name")]),
        post(
            "tables/create-doodad",
            create,
            DOODADS,
            json!({"apiVersion": "tables.{group}/v1", "kind": "Doodad",
                "metadata": {"name": "tables-doodad"}}),
        )
        .picks(&[Pick::At("/metadata/name")]),
    ]
}

/// Tables of gets and lists, built-in and custom.
fn tables() -> Vec<Step> {
    let printers = "Table: the type's printer columns and cells";
    let crd_columns = "Table: a CRD's additionalPrinterColumns";
    let include = "Table: includeObject";
    vec![
        table("tables/cm-get", printers, &format!("{CM}/tables-a")),
        table("tables/cm-list", printers, &format!("{CM}?{LABELLED}")),
        table(
            "tables/cm-list-page",
            "Table: a list page's continue",
            &format!("{CM}?{LABELLED}&limit=1"),
        ),
        get("tables/cm-get-v1beta1", printers, &format!("{CM}/tables-a")).accept(TABLE_BETA),
        table(
            "tables/include-none",
            include,
            &format!("{CM}/tables-a?includeObject=None"),
        ),
        table(
            "tables/include-object",
            include,
            &format!("{CM}?{LABELLED}&includeObject=Object"),
        ),
        table(
            "tables/include-metadata",
            include,
            &format!("{CM}/tables-a?includeObject=Metadata"),
        ),
        table(
            "tables/include-bogus",
            "Table: an unknown includeObject 400",
            &format!("{CM}/tables-a?includeObject=Bogus"),
        ),
        get(
            "tables/include-bogus-without-table",
            "get: includeObject ignored without a Table",
            &format!("{CM}/tables-a?includeObject=Bogus"),
        )
        .picks(&[Pick::At("/metadata/name")]),
        table("tables/pod-list", printers, &format!("{PODS}?{LABELLED}")),
        table(
            "tables/deployment-get",
            printers,
            &format!("{DEPLOYMENTS}/tables-deploy"),
        ),
        table(
            "tables/replicaset-get",
            printers,
            &format!("{REPLICASETS}/tables-rs"),
        ),
        table(
            "tables/secret-get",
            printers,
            "/api/v1/namespaces/{ns}/secrets/tables-secret",
        ),
        table(
            "tables/lease-get",
            printers,
            "/apis/coordination.k8s.io/v1/namespaces/{ns}/leases/tables-lease",
        ),
        table("tables/namespace-get", printers, "/api/v1/namespaces/{ns}"),
        table(
            "tables/crd-get",
            "Table: the default Name and Created At columns",
            &format!("{CRDS}/gizmos.tables.{{group}}"),
        ),
        table("tables/cr-list-columns", crd_columns, GIZMOS),
        table(
            "tables/cr-get-columns",
            crd_columns,
            &format!("{GIZMOS}/full"),
        ),
        table(
            "tables/cr-list-page",
            "Table: a list page's continue (custom resource)",
            &format!("{GIZMOS}?limit=1"),
        ),
        table(
            "tables/cr-list-default",
            "Table: a CRD without columns gets Age",
            DOODADS,
        ),
        table(
            "tables/cr-get-include-none",
            include,
            &format!("{DOODADS}/tables-doodad?includeObject=None"),
        ),
        table(
            "tables/cr-list-include-object",
            include,
            &format!("{DOODADS}?includeObject=Object"),
        ),
        table(
            "tables/cr-list-empty",
            "Table: an empty list",
            "/apis/tables.{group}/v1/namespaces/default/gizmos",
        ),
        post(
            "tables/create-as-table",
            "Table: the answer to a create",
            CM,
            json!({"metadata": {"name": "tables-written"}, "data": {"a": "1"}}),
        )
        .accept(TABLE),
        patch(
            "tables/patch-as-table",
            "Table: the answer to a patch",
            &format!("{CM}/tables-written"),
            MERGE,
            json!({"data": {"b": "2"}}),
        )
        .accept(TABLE),
        delete(
            "tables/delete-as-table",
            "Table: a delete's Status stays a Status",
            &format!("{CM}/tables-written"),
        )
        .accept(TABLE),
    ]
}

/// Table watches read to their end, bookmarks included.
fn watches() -> Vec<Step> {
    let query = "watch=true&allowWatchBookmarks=true&timeoutSeconds=4";
    let cm = json!({"metadata": {"name": "tables-watched", "labels": {"watched": "yes"}},
        "data": {"a": "1"}});
    vec![
        Step::watch(
            "tables/watch-cm-open",
            "watch",
            "table-cm",
            &format!("{CM}?labelSelector=watched%3Dyes&{query}"),
        )
        .accept(TABLE),
        Step::watch(
            "tables/watch-gizmos-open",
            "watch",
            "table-gizmos",
            &format!("{GIZMOS}?{query}"),
        )
        .accept(TABLE),
        Step::watch(
            "tables/watch-pods-open",
            "watch",
            "table-pods",
            &format!("{PODS}?labelSelector=tables%3Dyes&{query}"),
        )
        .accept(TABLE),
        post("tables/watch-cm-create", "create", CM, cm).picks(&[Pick::At("/metadata/name")]),
        patch(
            "tables/watch-cm-patch",
            "patch: merge",
            &format!("{CM}/tables-watched"),
            MERGE,
            json!({"data": {"b": "2"}}),
        )
        .picks(&[Pick::At("/metadata/name")]),
        delete(
            "tables/watch-cm-delete",
            "delete: Success Status",
            &format!("{CM}/tables-watched"),
        ),
        patch(
            "tables/watch-gizmo-patch",
            "patch: merge",
            &format!("{GIZMOS}/odd"),
            MERGE,
            json!({"spec": {"size": 5}}),
        )
        .picks(&[Pick::At("/metadata/name")]),
        Step::collect(
            "tables/watch-cm-events",
            "watch: Table events, columns on the first, bookmarks as Tables",
            "table-cm",
            Until::End,
        )
        .whole_events()
        .bookmarks_last(),
        Step::collect(
            "tables/watch-gizmos-events",
            "watch: Table events of a custom resource",
            "table-gizmos",
            Until::End,
        )
        .whole_events()
        .bookmarks_last(),
        Step::collect(
            "tables/watch-pods-events",
            "watch: Table events of Pods",
            "table-pods",
            Until::End,
        )
        .whole_events()
        .bookmarks_last(),
    ]
}

/// `Accept` headers answered with 406, 500 or otherwise than plain JSON.
fn accepts() -> Vec<Step> {
    let restful = "Accept: a media type no route produces 406 (go-restful's words)";
    let negotiated = "Accept: a conversion nothing serves 406";
    let cm = &format!("{CM}/tables-a");
    let gizmo = &format!("{GIZMOS}/full");
    vec![
        get("accept/text-plain", restful, cm).accept("text/plain"),
        get("accept/cbor-list", restful, &format!("{CM}?{LABELLED}")).accept("application/cbor"),
        get("accept/wildcard-subtype", restful, cm).accept("application/*"),
        get(
            "accept/other-first",
            "Accept: a clause after one not served",
            cm,
        )
        .accept("text/html, application/json")
        .picks(&[Pick::At("/metadata/name")]),
        Step::watch(
            "accept/watch-text-plain",
            restful,
            "text-plain",
            &format!("{CM}?watch=true&timeoutSeconds=1"),
        )
        .accept("text/plain"),
        Step::call(
            "accept/create-text-plain",
            restful,
            Method::POST,
            CM,
            Some(json!({"metadata": {"name": "tables-refused"}})),
        )
        .accept("text/plain"),
        get(
            "accept/create-text-plain-not-stored",
            "get: 404",
            &format!("{CM}/tables-refused"),
        ),
        get("accept/cr-text-plain", negotiated, gizmo).accept("text/plain"),
        get(
            "accept/cr-wildcard-subtype",
            "Accept: application/* for a custom resource",
            gizmo,
        )
        .accept("application/*")
        .picks(&[Pick::At("/metadata/name")]),
        get("accept/table-v2", negotiated, cm)
            .accept("application/json;as=Table;g=meta.k8s.io;v=v2"),
        get("accept/table-no-group", negotiated, cm).accept("application/json;as=Table"),
        get("accept/table-protobuf", negotiated, cm)
            .accept("application/vnd.kubernetes.protobuf;as=Table;g=meta.k8s.io;v=v1"),
        get(
            "accept/metadata-list-of-object",
            "Accept: PartialObjectMetadataList of one object 406",
            cm,
        )
        .accept(METADATA_LIST),
        get(
            "accept/metadata-list-of-deployment",
            "Accept: PartialObjectMetadataList of one object 406",
            &format!("{DEPLOYMENTS}/tables-deploy"),
        )
        .accept(METADATA_LIST),
        get(
            "accept/metadata-of-list",
            "Accept: PartialObjectMetadata of a list 406",
            &format!("{CM}?{LABELLED}"),
        )
        .accept(METADATA),
        get(
            "accept/metadata-of-namespaces",
            "Accept: PartialObjectMetadata of a list 406",
            "/api/v1/namespaces",
        )
        .accept(METADATA),
        get(
            "accept/cr-metadata-list-of-object",
            "Accept: PartialObjectMetadataList of a custom resource 500",
            gizmo,
        )
        .accept(METADATA_LIST),
        get(
            "accept/cr-metadata-of-list",
            "Accept: PartialObjectMetadata of a list 406 (custom resource)",
            GIZMOS,
        )
        .accept(METADATA),
        Step::watch(
            "accept/watch-metadata-list-open",
            "watch: PartialObjectMetadataList 200, then the end at the first event",
            "metadata-list",
            &format!("{CM}?watch=true&{LABELLED}&timeoutSeconds=5"),
        )
        .accept(METADATA_LIST),
        Step::collect(
            "accept/watch-metadata-list-ends",
            "watch: PartialObjectMetadataList 200, then the end at the first event",
            "metadata-list",
            Until::End,
        )
        .whole_events(),
        get("accept/yaml-get", "Accept: YAML", cm).accept(YAML),
        post("accept/yaml-strings-create", "create", CM, yaml_strings())
            .picks(&[Pick::At("/metadata/name")]),
        get(
            "accept/yaml-strings",
            "Accept: YAML, strings quoted and folded as go-yaml v2 writes them",
            &format!("{CM}/tables-yaml"),
        )
        .accept(YAML),
        get(
            "accept/yaml-deployment",
            "Accept: YAML",
            &format!("{DEPLOYMENTS}/tables-deploy"),
        )
        .accept(YAML),
        get(
            "accept/yaml-list",
            "Accept: YAML",
            &format!("{CM}?{LABELLED}"),
        )
        .accept(YAML),
        get(
            "accept/yaml-error",
            "Accept: YAML",
            &format!("{CM}/tables-missing"),
        )
        .accept(YAML),
        get("accept/yaml-cr", "Accept: YAML", gizmo).accept(YAML),
        get("accept/yaml-table", "Accept: YAML Table", cm)
            .accept("application/yaml;as=Table;g=meta.k8s.io;v=v1"),
        Step::watch(
            "accept/yaml-table-watch",
            "watch: YAML 406",
            "yaml-table",
            &format!("{CM}?watch=true&timeoutSeconds=1"),
        )
        .accept("application/yaml;as=Table;g=meta.k8s.io;v=v1"),
    ]
}

/// A ConfigMap whose keys and values go-yaml v2 writes in each of its styles.
fn yaml_strings() -> Value {
    let long = "word ".repeat(30);
    json!({"metadata": {"name": "tables-yaml"}, "data": {
        "y": "y", "n": "no", "empty": "", "float": "1.5", "int": "0x1F", "under": "1_000",
        "sexagesimal": "12:30", "date": "2026-01-01", "tilde": "~", "null": "null",
        "colon": "a: b", "dash": "- x", "hash": "#x", "comment": "x #y", "quote": "'q'",
        "lines": "multi\nline\n", "chomped": "multi\nline", "kept": "a\n\n",
        "indented": " lead\nx", "trailing": "trailing ", "leading": " leading",
        "tab": "tab\tx", "unicode": "ünïcode ✓", "emoji": "😀", "bell": "\u{7}",
        "long": long.trim_end(), "long-single": format!("'{long}"),
        "long-double": format!("tab\t{long}"), "10": "ten", "9": "nine", "a10": "x",
        "a9": "x", "A": "upper", "_": "underscore", ".dot": "dot"}})
}

pub fn steps() -> Vec<Step> {
    let mut s = setup();
    s.extend(tables());
    s.extend(watches());
    s.extend(accepts());
    s
}
