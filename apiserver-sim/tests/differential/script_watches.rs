//! The script's watches compared event by event with their whole objects, BOOKMARKs and
//! ERRORs included: `null`s written as nothing in what a create answers and a watch sends,
//! the bookmark that ends the initial events, the bookmark before a watch's timeout, a
//! watch from a resourceVersion not reached yet, and the watch options' validation. They
//! run after `script_lists`' watches, in `{pages}` (page-1 to page-4 left) and `{ns}`.
//!
//! Each watch has a short `timeoutSeconds` and is read to its end ([`Until::End`]), so the
//! events compared are all the server sent: kube-apiserver 1.36.2 sends a watch of 3 s or
//! more its pre-timeout bookmark (2 s before the end, in its 1 s buckets, so possibly twice)
//! before the end, one of 2 s none. The watch expecting it lasts 4 s: a loaded server that
//! registers the watch a little late still has time to send it.

use serde_json::json;

use super::client::Until;
use super::script::{CM, get, post};
use super::step::Step;

const PAGES: &str = "/api/v1/namespaces/{pages}/configmaps";
const DEPLOYMENTS: &str = "/apis/apps/v1/namespaces/{ns}/deployments";

/// A watch of `{pages}` with `query`, read to its end (`timeoutSeconds` in `query`).
fn watch_to_end(
    name: &'static str,
    read: &'static str,
    behaviour: &'static str,
    id: &'static str,
    query: &str,
) -> [Step; 2] {
    [
        Step::watch(name, "watch", id, &format!("{PAGES}?watch=true&{query}")),
        Step::collect(read, behaviour, id, Until::End).whole_events(),
    ]
}

/// `null`s of an ObjectMeta (the object's, a pod template's: `creationTimestamp: null` as
/// kubectl's dry-run writes it) and of a built-in's top-level fields: written as nothing, in
/// the answer and in the watch event.
pub fn nulls() -> Vec<Step> {
    let deployment = json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "nulls", "creationTimestamp": null, "labels": null},
        "spec": {"selector": {"matchLabels": {"app": "nulls"}},
            "template": {"metadata": {"creationTimestamp": null, "annotations": null,
                    "labels": {"app": "nulls"}},
                "spec": {"containers": [{"name": "app", "image": "nginx:1"}]}}},
        "status": null});
    let configmap = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "nulls", "creationTimestamp": null, "annotations": null,
            "finalizers": null},
        "data": null});
    let behaviour = "create: nulls of ObjectMeta and of top-level fields written as nothing";
    vec![
        get("nulls/list-deployments", "list", DEPLOYMENTS)
            .save("deployments_rv", "/metadata/resourceVersion"),
        Step::watch(
            "nulls/open-watch",
            "watch: from a resourceVersion",
            "nulls",
            &format!(
                "{DEPLOYMENTS}?watch=true&resourceVersion={{deployments_rv}}&timeoutSeconds=60"
            ),
        ),
        post(
            "nulls/create-deployment",
            behaviour,
            DEPLOYMENTS,
            deployment,
        ),
        Step::collect(
            "nulls/watch-added",
            "watch: an ADDED event carries the object as created",
            "nulls",
            Until::Count(1),
        )
        .whole_events(),
        post("nulls/create-configmap", behaviour, CM, configmap),
    ]
}

/// The bookmark ending the initial events, and the watch options around it.
pub fn initial_events() -> Vec<Step> {
    let end = "watch: the initial ADDED events, then a BOOKMARK annotated initial-events-end \
        (with allowWatchBookmarks), then the end at timeoutSeconds";
    let options = "watch: option validation 422";
    let mut s = Vec::new();
    s.extend(watch_to_end(
        "watch/initial-end-unset-rv",
        "watch/initial-end-unset-rv-events",
        end,
        "end-unset",
        "allowWatchBookmarks=true&timeoutSeconds=2",
    ));
    s.extend(watch_to_end(
        "watch/initial-end-rv-0",
        "watch/initial-end-rv-0-events",
        end,
        "end-0",
        "resourceVersion=0&allowWatchBookmarks=true&timeoutSeconds=2",
    ));
    s.extend(watch_to_end(
        "watch/initial-no-bookmarks",
        "watch/initial-no-bookmarks-events",
        end,
        "no-bookmarks",
        "timeoutSeconds=1",
    ));
    s.extend(watch_to_end(
        "watch/send-initial-events",
        "watch/send-initial-events-events",
        end,
        "watch-list",
        "sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true\
            &timeoutSeconds=2",
    ));
    s.extend(watch_to_end(
        "watch/send-initial-events-without-bookmarks",
        "watch/send-initial-events-without-bookmarks-events",
        end,
        "watch-list-quiet",
        "sendInitialEvents=true&resourceVersionMatch=NotOlderThan&timeoutSeconds=1",
    ));
    s.extend(watch_to_end(
        "watch/send-no-initial-events",
        "watch/send-no-initial-events-events",
        "watch: sendInitialEvents=false starts from now, nothing to send",
        "watch-list-none",
        "sendInitialEvents=false&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true\
            &timeoutSeconds=1",
    ));
    s.push(get(
        "watch-options/send-initial-events-without-match",
        options,
        &format!("{PAGES}?watch=true&sendInitialEvents=true"),
    ));
    s.push(get(
        "watch-options/match-exact",
        options,
        &format!("{PAGES}?watch=true&resourceVersionMatch=Exact&resourceVersion=1"),
    ));
    s.push(get(
        "watch-options/send-initial-events-match-exact",
        options,
        &format!(
            "{PAGES}?watch=true&sendInitialEvents=true&resourceVersionMatch=Exact\
                &resourceVersion=1&allowWatchBookmarks=true"
        ),
    ));
    s.push(get(
        "list-options/unknown-match",
        "list: option validation 422",
        &format!("{PAGES}?resourceVersionMatch=Bogus"),
    ));
    s
}

const PRE_TIMEOUT: &str = "the bookmark before a replaying watch's timeout: kube-apiserver 1.36.2 sends it or not depending on the writes its watch cache saw meanwhile, which depend on the machine's load";

/// The bookmark before a watch's timeout (from `{pages_rv}`: the changes after it, so the
/// bookmark moves the watch on), and a watch from a resourceVersion not reached yet.
pub fn bookmarks() -> Vec<Step> {
    let mut s = Vec::new();
    s.extend(watch_to_end(
        "watch/bookmark-before-timeout",
        "watch/bookmark-before-timeout-events",
        "watch: allowWatchBookmarks, one BOOKMARK 2 s before timeoutSeconds ends the stream",
        "pre-timeout",
        "resourceVersion={pages_rv}&allowWatchBookmarks=true&timeoutSeconds=4",
    ));
    // kube-apiserver 1.36.2 sends this bookmark only if its watch cache saw a write of the
    // resource in the watch's time, which depends on how the script's steps overlap on a
    // loaded machine: its presence after the replayed events is not compared.
    let events = s.pop().expect("the collect step");
    s.push(
        events
            .known("/events/6", PRE_TIMEOUT)
            .known("/events/7", PRE_TIMEOUT),
    );
    s.extend(watch_to_end(
        "watch/no-bookmark-in-a-short-watch",
        "watch/no-bookmark-in-a-short-watch-events",
        "watch: allowWatchBookmarks, no BOOKMARK in a watch shorter than 3 s",
        "short",
        "resourceVersion={pages_rv}&allowWatchBookmarks=true&timeoutSeconds=2",
    ));
    s.push(
        get("watch/future-rv-list", "list", &format!("{PAGES}?limit=1"))
            .save("pages_now", "/metadata/resourceVersion"),
    );
    s.push(Step::watch(
        "watch/future-rv-open",
        "watch: from a resourceVersion not reached yet, 200",
        "future",
        &format!(
            "{PAGES}?watch=true&resourceVersion={{pages_now+1000}}&allowWatchBookmarks=true\
                &timeoutSeconds=3"
        ),
    ));
    s.push(post(
        "watch/future-rv-write",
        "create",
        PAGES,
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "page-6"}}),
    ));
    s.push(
        Step::collect(
            "watch/future-rv-nothing",
            "watch: from a future resourceVersion, nothing (no bookmark) until it is reached",
            "future",
            Until::End,
        )
        .whole_events(),
    );
    s
}
