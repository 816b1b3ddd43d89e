//! The script's lists and watches, in the `{pages}` namespace: pages of a list, its
//! resourceVersion semantics and selectors, then watches from a resourceVersion, from the
//! current state and through a label selector.

use serde_json::{Value, json};

use super::client::Until;
use super::script::{MERGE, delete, get, patch, post};
use super::step::{Pick, Step};

const PAGES: &str = "/api/v1/namespaces/{pages}/configmaps";

fn page(i: usize) -> Value {
    let parity = if i % 2 == 0 { "even" } else { "odd" };
    json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": format!("page-{i}"), "labels": {"n": parity}},
        "data": {"i": i.to_string()}})
}

/// A list of `{pages}` with `query`.
fn list(name: &'static str, behaviour: &'static str, query: &str) -> Step {
    get(name, behaviour, &format!("{PAGES}{query}"))
}

fn unsupported_selector(name: &'static str, path: &str) -> Step {
    let behaviour = "list: unsupported field selector 400";
    get(
        name,
        behaviour,
        &format!("{path}?fieldSelector=spec.foo%3Dx"),
    )
}

pub fn lists() -> Vec<Step> {
    let pages_page = "list: limit, continue, remainingItemCount";
    vec![
        post("list/create-page-1", "create", PAGES, page(1)),
        post("list/create-page-2", "create", PAGES, page(2)),
        post("list/create-page-3", "create", PAGES, page(3)),
        list("list/all", "list", "").save("pages_rv", "/metadata/resourceVersion"),
        post("list/create-page-4", "create", PAGES, page(4)),
        post("list/create-page-5", "create", PAGES, page(5)),
        list("list/limit-page-1", pages_page, "?limit=2").save("cont1", "/metadata/continue"),
        list("list/limit-page-2", pages_page, "?limit=2&continue={cont1}")
            .save("cont2", "/metadata/continue"),
        list("list/limit-page-3", pages_page, "?limit=2&continue={cont2}"),
        list(
            "list/rv-exact",
            "list: resourceVersionMatch=Exact",
            "?resourceVersion={pages_rv}&resourceVersionMatch=Exact",
        ),
        list(
            "list/rv-not-older-than",
            "list: resourceVersionMatch=NotOlderThan",
            "?resourceVersion={pages_rv}&resourceVersionMatch=NotOlderThan",
        ),
        list(
            "list/rv-without-match",
            "list: resourceVersion N without limit is at least N",
            "?resourceVersion={pages_rv}",
        ),
        list(
            "list/rv-with-limit",
            "list: resourceVersion N with limit is exactly N",
            "?resourceVersion={pages_rv}&limit=2",
        ),
        list(
            "list/rv-0-with-limit",
            "list: resourceVersion 0 ignores limit",
            "?resourceVersion=0&limit=2",
        ),
        list(
            "list/continue-and-rv",
            "list: continue with resourceVersion 400",
            "?limit=2&continue={cont1}&resourceVersion={pages_rv}",
        ),
        list(
            "list/match-without-rv",
            "list: option validation 422",
            "?resourceVersionMatch=Exact",
        ),
        list(
            "list/unsupported-field-selector",
            "list: unsupported field selector 400",
            "?fieldSelector=data.i%3D1",
        ),
        unsupported_selector(
            "list/pods-unsupported-field-selector",
            "/api/v1/namespaces/{ns}/pods",
        ),
        unsupported_selector(
            "list/deployments-unsupported-field-selector",
            "/apis/apps/v1/namespaces/{ns}/deployments",
        ),
        unsupported_selector(
            "list/leases-unsupported-field-selector",
            "/apis/coordination.k8s.io/v1/namespaces/{ns}/leases",
        ),
        unsupported_selector(
            "list/events-unsupported-field-selector",
            "/apis/events.k8s.io/v1/namespaces/{ns}/events",
        ),
        unsupported_selector(
            "list/crds-unsupported-field-selector",
            "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
        ),
        list(
            "list/field-selector",
            "list: field selector metadata.name",
            "?fieldSelector=metadata.name%3Dpage-2",
        ),
        list(
            "list/label-selector",
            "list: label selector",
            "?labelSelector=n%3Dodd&limit=1",
        ),
        get(
            "list/missing-namespace",
            "list",
            "/api/v1/namespaces/{ns}-missing/configmaps",
        ),
        list(
            "list/future-rv",
            "list: a future resourceVersion 504 Timeout",
            "?resourceVersion=999999999&resourceVersionMatch=NotOlderThan",
        ),
    ]
}

pub fn watches() -> Vec<Step> {
    let from_rv = format!("{PAGES}?watch=true&resourceVersion={{pages_rv}}&timeoutSeconds=60");
    let selector = format!(
        "{PAGES}?watch=true&labelSelector=n%3Dodd&resourceVersion={{page4_rv}}&timeoutSeconds=60"
    );
    vec![
        Step::watch(
            "watch/open-from-rv",
            "watch: from a resourceVersion",
            "pages",
            &from_rv,
        ),
        Step::collect(
            "watch/from-rv-replays",
            "watch: from N, the changes after N",
            "pages",
            Until::Count(2),
        ),
        patch(
            "watch/patch-page-4",
            "patch: merge",
            &format!("{PAGES}/page-4"),
            MERGE,
            json!({"data": {"i": "four"}}),
        )
        .save("page4_rv", "/metadata/resourceVersion"),
        delete(
            "watch/delete-page-5",
            "delete: Success Status",
            &format!("{PAGES}/page-5"),
        ),
        Step::collect(
            "watch/live-changes",
            "watch: MODIFIED and DELETED",
            "pages",
            Until::Count(2),
        ),
        Step::watch(
            "watch/open-unset-rv",
            "watch: unset resourceVersion",
            "initial",
            &format!("{PAGES}?watch=true&timeoutSeconds=60"),
        ),
        Step::collect(
            "watch/initial-state",
            "watch: ADDED for the state first",
            "initial",
            Until::Count(4),
        ),
        Step::watch(
            "watch/open-label-selector",
            "watch: label selector",
            "odd",
            &selector,
        ),
        patch(
            "watch/relabel-page-3",
            "patch: merge",
            &format!("{PAGES}/page-3"),
            MERGE,
            json!({"metadata": {"labels": {"n": "even"}}}),
        ),
        patch(
            "watch/relabel-page-2",
            "patch: merge",
            &format!("{PAGES}/page-2"),
            MERGE,
            json!({"metadata": {"labels": {"n": "odd"}}}),
        ),
        Step::collect(
            "watch/selector-leave-and-enter",
            "watch: an object leaving the selector is DELETED, one entering is ADDED",
            "odd",
            Until::Count(3),
        )
        .picks(&[Pick::At("/metadata/labels")]),
    ]
}
