//! Error answers to requests the real server refuses before or while it reads: an update
//! whose `metadata.resourceVersion` is no number, a POST to an object's path, list options
//! that do not parse (`limit`, `continue`, `resourceVersion`, selectors), a watch from a
//! resourceVersion that does not parse. Status bodies are compared whole.

use serde_json::json;

use super::script::{CM, cm, get, post, put};
use super::step::{Pick, Step};

/// A list of `{ns}`'s ConfigMaps with `query`.
fn list(name: &'static str, behaviour: &'static str, query: &str) -> Step {
    get(name, behaviour, &format!("{CM}{query}"))
}

pub fn errors() -> Vec<Step> {
    let bad_continue = "list: an invalid continue token 400 with Go's reason";
    let bad_limit = "list: a limit strconv.ParseInt refuses 400";
    let mut bad_rv = cm("errors-cm", json!({"a": "1"}));
    bad_rv["metadata"]["resourceVersion"] = json!("abc");
    let mut signed_rv = bad_rv.clone();
    signed_rv["metadata"]["resourceVersion"] = json!("+1");
    let mut missing_bad_rv = bad_rv.clone();
    missing_bad_rv["metadata"]["name"] = json!("errors-missing");
    vec![
        post(
            "errors/create",
            "create",
            CM,
            cm("errors-cm", json!({"a": "1"})),
        ),
        put(
            "errors/update-non-numeric-rv",
            "update: a resourceVersion strconv.ParseUint refuses 500",
            &format!("{CM}/errors-cm"),
            bad_rv,
        ),
        put(
            "errors/update-signed-rv",
            "update: a resourceVersion strconv.ParseUint refuses 500",
            &format!("{CM}/errors-cm"),
            signed_rv,
        ),
        put(
            "errors/update-missing-non-numeric-rv",
            "update: 404 before the resourceVersion is read",
            &format!("{CM}/errors-missing"),
            missing_bad_rv,
        ),
        post(
            "errors/post-to-object",
            "POST to an object's path 405",
            &format!("{CM}/errors-cm"),
            cm("errors-cm", json!({})),
        ),
        post(
            "errors/post-to-namespace",
            "POST to an object's path 405",
            "/api/v1/namespaces/{ns}",
            json!({"metadata": {"name": "x"}}),
        ),
        list(
            "errors/limit-negative",
            "list: a negative limit is none",
            "?limit=-1",
        ),
        list("errors/limit-non-numeric", bad_limit, "?limit=abc"),
        list("errors/limit-empty", bad_limit, "?limit="),
        list(
            "errors/limit-out-of-range",
            bad_limit,
            "?limit=99999999999999999999",
        ),
        list(
            "errors/continue-not-base64",
            bad_continue,
            "?limit=1&continue=%21%21%21",
        ),
        list(
            "errors/continue-padded",
            bad_continue,
            "?limit=1&continue=bm90anNvbg%3D%3D",
        ),
        list(
            "errors/continue-not-json",
            bad_continue,
            "?limit=1&continue=bm90anNvbg",
        ),
        // {"v":"x","rv":5,"start":"a"}
        list(
            "errors/continue-unknown-version",
            bad_continue,
            "?limit=1&continue=eyJ2IjoieCIsInJ2Ijo1LCJzdGFydCI6ImEifQ",
        ),
        // {"v":"meta.k8s.io/v1","rv":"5","start":"a"}
        list(
            "errors/continue-rv-string",
            bad_continue,
            "?limit=1&continue=eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6IjUiLCJzdGFydCI6ImEifQ",
        ),
        // {"v":"meta.k8s.io/v1","rv":3}
        list(
            "errors/continue-no-start",
            bad_continue,
            "?limit=1&continue=eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6M30",
        ),
        // {"v":"meta.k8s.io/v1","rv":3,"start":"../x"}
        list(
            "errors/continue-traversal",
            bad_continue,
            "?limit=1&continue=eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6Mywic3RhcnQiOiIuLi94In0",
        ),
        list(
            "errors/continue-without-limit",
            bad_continue,
            "?continue=%21%21%21",
        ),
        list(
            "errors/list-non-numeric-rv",
            "list: a resourceVersion strconv.ParseUint refuses 400",
            "?resourceVersion=abc",
        ),
        list(
            "errors/watch-non-numeric-rv",
            "watch: a resourceVersion strconv.ParseUint refuses 500",
            "?watch=true&resourceVersion=abc",
        ),
        list(
            "errors/field-selector-unknown-field",
            "list: unsupported field selector 400",
            "?fieldSelector=spec.foo%3Dx",
        ),
        list(
            "errors/field-selector-unparsable",
            "list: a field selector that does not parse 400",
            "?fieldSelector=metadata.name",
        ),
        list(
            "errors/label-selector-operator",
            "list: a label selector that does not parse 400",
            "?labelSelector=a%3D%3D%3Db",
        ),
        list(
            "errors/label-selector-bang",
            "list: a label selector that does not parse 400",
            "?labelSelector=%21%21",
        ),
        list(
            "errors/label-selector-bad-value",
            "list: a label selector that does not parse 400",
            "?labelSelector=a%3D%25%25",
        ),
        list(
            "errors/label-selector-in-unclosed",
            "list: a label selector that does not parse 400",
            "?labelSelector=a+in+%28b",
        ),
        list(
            "errors/label-selector-no-operator",
            "list: a label selector that does not parse 400",
            "?labelSelector=a+b",
        ),
        list(
            "errors/label-selector-in-without-paren",
            "list: a label selector that does not parse 400",
            "?labelSelector=a+in+b",
        ),
        list(
            "errors/label-selector-after-requirement",
            "list: a label selector that does not parse 400",
            "?labelSelector=a%3Db+c",
        ),
        list(
            "errors/label-selector-trailing-comma",
            "list: a label selector that does not parse 400",
            "?labelSelector=a%3Db%2C",
        ),
        list(
            "errors/label-selector-leading-comma",
            "list: a label selector that does not parse 400",
            "?labelSelector=%2C",
        ),
        list(
            "errors/label-selector-set-operator",
            "list: a label selector that does not parse 400",
            "?labelSelector=a+in+%28%3D",
        ),
        list(
            "errors/label-selector-bad-key",
            "list: a label selector that does not parse 400",
            "?labelSelector=%25%25%3Db",
        ),
        list(
            "errors/label-selector-lt-not-integer",
            "list: a label selector that does not parse 400",
            "?labelSelector=a%3Cx",
        ),
    ]
}

const EVENTS: &str = "/api/v1/namespaces/{ns}/events";

fn event(name: &'static str) -> Step {
    let body = json!({"apiVersion": "v1", "kind": "Event", "metadata": {"name": name},
        "involvedObject": {"kind": "ConfigMap", "name": "errors-cm", "namespace": "{ns}"},
        "reason": "Tested", "message": "m", "type": "Normal"});
    post(name, "create", EVENTS, body).picks(&[Pick::At("/metadata/name")])
}

/// A list of `{ns}`'s Events with `query`, compared by the names of its items and its
/// paging fields (Status answers whole).
fn events(name: &'static str, behaviour: &'static str, query: &str) -> Step {
    get(name, behaviour, &format!("{EVENTS}{query}"))
        .picks(&[Pick::At("/items/0/metadata/name"), Pick::At("/metadata")])
}

/// Pages and exact lists after a compaction, on Events: kube-apiserver 1.36.2 keeps no
/// watch cache for them, so it reads etcd (410); on ConfigMaps, which it caches, its watch
/// cache's snapshots still serve them. Late in the script: the compaction expires every
/// older resourceVersion of uncached resources.
pub fn compaction() -> Vec<Step> {
    vec![
        event("compaction-1"),
        event("compaction-2"),
        event("compaction-3"),
        events(
            "compaction/first-page",
            "list: limit, continue, remainingItemCount",
            "?limit=1",
        )
        .save("ev_cont", "/metadata/continue")
        .save("ev_rv", "/metadata/resourceVersion"),
        list(
            "compaction/cached-first-page",
            "list: limit, continue, remainingItemCount",
            "?limit=1",
        )
        .picks(&[Pick::At("/items/0/metadata/name"), Pick::At("/metadata")])
        .save("cm_cont", "/metadata/continue")
        .save("cm_rv", "/metadata/resourceVersion"),
        event("compaction-4"),
        super::script::delete(
            "compaction/delete-2",
            "delete: Success Status",
            &format!("{EVENTS}/compaction-2"),
        )
        .picks(&[Pick::At("/metadata/name")]),
        Step::compact("compaction/compact", "compaction"),
        events(
            "compaction/continue-after-compaction",
            "list: a continue token past the compaction 410 with an inconsistent continue token",
            "?limit=1&continue={ev_cont}",
        )
        .save("ev_inconsistent", "/metadata/continue"),
        events(
            "compaction/inconsistent-continue",
            "list: an inconsistent continue token continues at the latest state",
            "?limit=1&continue={ev_inconsistent}",
        )
        .save("ev_next", "/metadata/continue"),
        event("compaction-3a"),
        events(
            "compaction/continue-after-inconsistent",
            "list: the page after an inconsistent continue is read at that page's revision",
            "?limit=1&continue={ev_next}",
        ),
        list(
            "compaction/cached-continue-after-compaction",
            "list: a continue token past the compaction served from the watch cache's snapshot",
            "?limit=1&continue={cm_cont}",
        )
        .picks(&[Pick::At("/items/0/metadata/name"), Pick::At("/metadata")]),
        list(
            "compaction/cached-exact-compacted",
            "list: resourceVersionMatch=Exact at a compacted resourceVersion served from the watch cache's snapshot",
            "?resourceVersion={cm_rv}&resourceVersionMatch=Exact",
        )
        .picks(&[Pick::Names("/items"), Pick::At("/metadata")]),
        list(
            "compaction/cached-limit-at-compacted",
            "list: resourceVersion N with limit at a compacted N served from the watch cache's snapshot",
            "?resourceVersion={cm_rv}&limit=2",
        )
        .picks(&[Pick::Names("/items"), Pick::At("/metadata")]),
        events(
            "compaction/exact-compacted",
            "list: resourceVersionMatch=Exact at a compacted resourceVersion 410",
            "?resourceVersion={ev_rv}&resourceVersionMatch=Exact",
        ),
        events(
            "compaction/limit-at-compacted",
            "list: resourceVersion N with limit at a compacted N 410",
            "?resourceVersion={ev_rv}&limit=1",
        ),
        events(
            "compaction/not-older-than-compacted",
            "list: resourceVersionMatch=NotOlderThan",
            "?resourceVersion={ev_rv}&resourceVersionMatch=NotOlderThan",
        ),
    ]
}
