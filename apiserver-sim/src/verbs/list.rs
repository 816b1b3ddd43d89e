//! list: `ListOptions`, resourceVersion semantics, pagination and continue tokens.
//!
//! Mirrors the cacher/etcd split of kube-apiserver (`storage/cacher/cacher.go` `GetList`,
//! `storage/etcd3/store.go` `GetList`, `storage/continue.go`) and the option validation of
//! `metainternalversion/validation`:
//! * `resourceVersion` unset: the latest state, paginated by `limit`;
//! * `"0"` (any): the latest state, `limit` ignored, as the watch cache serves it;
//! * `N` without `resourceVersionMatch` and without `limit`, or `NotOlderThan`: a state at
//!   least as new as N (waits for N, then 504 "Too large resource version");
//! * `N` with `limit`, or `Exact`: exactly revision N; 410 Expired "The resourceVersion for
//!   the provided list is too old." once compacted;
//! * `continue` tokens are base64url JSON `{"v":"meta.k8s.io/v1","rv":N,"start":"<key>\u0000"}`
//!   as the real server writes them; a compacted one gives 410 with the real message and a
//!   fresh token (rv -1) that continues at the latest revision, whose next page's token
//!   carries the revision that page was read at (as kube-apiserver 1.36.2 does);
//! * `remainingItemCount` is set on pages read without selectors, as with etcd.

use clientgo_apimachinery::fields::FieldSelector;
use clientgo_apimachinery::labels::Selector;

pub use super::continue_token::{decode_continue, encode_continue};
use super::selector_text;
use crate::errors::{self, ApiResult, FieldError};
use crate::go_strconv;
use crate::resources::ResourceInfo;
use crate::state::SimState;
use crate::store::{ListPage, ListRequest, StoreError, StoredObject};

const INCONSISTENT_CONTINUE: &str = "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list.";

/// `resourceVersionMatch`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RvMatch {
    /// `NotOlderThan`.
    NotOlderThan,
    /// `Exact`.
    Exact,
}

/// The list and watch query parameters.
#[derive(Debug, Clone, Default)]
pub struct ListOptions {
    /// `labelSelector`.
    pub labels: Selector,
    /// `fieldSelector`.
    pub fields: FieldSelector,
    /// `resourceVersion` as given.
    pub resource_version: Option<String>,
    /// `resourceVersionMatch`.
    pub rv_match: Option<RvMatch>,
    /// A `resourceVersionMatch` that is neither `Exact` nor `NotOlderThan`, as given.
    pub rv_match_unsupported: Option<String>,
    /// `limit` (0: none).
    pub limit: usize,
    /// `continue`.
    pub continue_token: Option<String>,
    /// `watch=true`.
    pub watch: bool,
    /// `allowWatchBookmarks=true`.
    pub allow_bookmarks: bool,
    /// `timeoutSeconds`.
    pub timeout_seconds: Option<u64>,
    /// `sendInitialEvents`.
    pub send_initial_events: Option<bool>,
}

/// The message for a field selector on `field`, which `info` does not support: built-in
/// types without a field label conversion of their own answer with apimachinery's
/// `DefaultMetaV1FieldSelectorConversion`, the others with `field label not supported`.
fn unsupported_field(info: &ResourceInfo, field: &str) -> String {
    if info.strategic_merge && info.selectable_fields.is_empty() {
        format!(
            r#""{field}" is not a known field selector: only "metadata.name", "metadata.namespace""#
        )
    } else {
        format!("field label not supported: {field}")
    }
}

fn parse_bool(name: &str, v: &str) -> ApiResult<bool> {
    match v {
        "true" | "1" | "True" | "TRUE" | "t" | "T" => Ok(true),
        "false" | "0" | "False" | "FALSE" | "f" | "F" | "" => Ok(false),
        _ => Err(errors::bad_request(format!(
            "invalid value for {name}: {v:?}"
        ))),
    }
}

impl ListOptions {
    /// Parses the query (`watch` is forced on for `/watch/` paths).
    pub fn parse(
        info: &ResourceInfo,
        query: &[(String, String)],
        watch_path: bool,
        watch_list_enabled: bool,
    ) -> ApiResult<ListOptions> {
        let mut o = ListOptions {
            watch: watch_path,
            ..ListOptions::default()
        };
        for (k, v) in query {
            match k.as_str() {
                "labelSelector" => {
                    o.labels = Selector::parse(v)
                        .map_err(|e| errors::bad_request(selector_text::label_selector(&e)))?;
                }
                "fieldSelector" => {
                    o.fields = FieldSelector::parse(v)
                        .map_err(|e| errors::bad_request(selector_text::field_selector(&e)))?;
                    if let Some(bad) = o
                        .fields
                        .requirements()
                        .iter()
                        .find(|r| !info.field_selectable(&r.field))
                    {
                        return Err(errors::bad_request(unsupported_field(info, &bad.field)));
                    }
                }
                "resourceVersion" => o.resource_version = Some(v.clone()).filter(|s| !s.is_empty()),
                "resourceVersionMatch" => {
                    (o.rv_match, o.rv_match_unsupported) = match v.as_str() {
                        "" => (None, None),
                        "NotOlderThan" => (Some(RvMatch::NotOlderThan), None),
                        "Exact" => (Some(RvMatch::Exact), None),
                        other => (None, Some(other.to_owned())),
                    }
                }
                "limit" => {
                    let n = go_strconv::parse_int(v).map_err(errors::bad_request)?;
                    o.limit = usize::try_from(n.max(0)).unwrap_or(usize::MAX);
                }
                "continue" => o.continue_token = Some(v.clone()).filter(|s| !s.is_empty()),
                "watch" => o.watch = o.watch || parse_bool("watch", v)?,
                "allowWatchBookmarks" => o.allow_bookmarks = parse_bool("allowWatchBookmarks", v)?,
                "timeoutSeconds" => {
                    let n: i64 = v.parse().map_err(|_| {
                        errors::bad_request(format!("invalid value for timeoutSeconds: {v:?}"))
                    })?;
                    o.timeout_seconds = Some(u64::try_from(n).unwrap_or(0));
                }
                "sendInitialEvents" if watch_list_enabled => {
                    o.send_initial_events = Some(parse_bool("sendInitialEvents", v)?);
                }
                _ => {}
            }
        }
        o.validate(watch_list_enabled)?;
        Ok(o)
    }

    /// Checks the options as apimachinery's `ValidateListOptions` does (1.36): every
    /// error found, in its order, in one 422.
    fn validate(&self, watch_list_enabled: bool) -> ApiResult<()> {
        const MATCH: &str = "resourceVersionMatch";
        let given = match (&self.rv_match_unsupported, self.rv_match) {
            (Some(other), _) => Some(other.as_str()),
            (None, Some(RvMatch::Exact)) => Some("Exact"),
            (None, Some(RvMatch::NotOlderThan)) => Some("NotOlderThan"),
            (None, None) => None,
        };
        let not_older_than = self.rv_match == Some(RvMatch::NotOlderThan);
        let mut errs = Vec::new();
        if self.watch && !watch_list_enabled {
            // kube-apiserver 1.21.
            if given.is_some() {
                errs.push(FieldError::forbidden(
                    MATCH,
                    "resourceVersionMatch is forbidden for watch",
                ));
            }
        } else if self.watch {
            if self.send_initial_events.is_some() && !not_older_than {
                errs.push(FieldError::forbidden(
                    MATCH,
                    "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan",
                ));
            }
            if let Some(value) = given {
                if self.send_initial_events.is_none() {
                    errs.push(FieldError::forbidden(
                        MATCH,
                        "resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided",
                    ));
                }
                if !not_older_than {
                    errs.push(FieldError::unsupported(MATCH, value, &["NotOlderThan"]));
                }
                if self.continue_token.is_some() {
                    errs.push(FieldError::forbidden(
                        MATCH,
                        "resourceVersionMatch is forbidden when continue is provided",
                    ));
                }
            }
        } else {
            if let Some(value) = given {
                if self.resource_version.is_none() {
                    errs.push(FieldError::forbidden(
                        MATCH,
                        "resourceVersionMatch is forbidden unless resourceVersion is provided",
                    ));
                }
                if self.continue_token.is_some() {
                    errs.push(FieldError::forbidden(
                        MATCH,
                        "resourceVersionMatch is forbidden when continue is provided",
                    ));
                }
                if self.rv_match_unsupported.is_some() {
                    errs.push(FieldError::unsupported(
                        MATCH,
                        value,
                        &["Exact", "NotOlderThan", ""],
                    ));
                }
                if self.rv_match == Some(RvMatch::Exact)
                    && self.resource_version.as_deref() == Some("0")
                {
                    errs.push(FieldError::forbidden(
                        MATCH,
                        "resourceVersionMatch \"exact\" is forbidden for resourceVersion \"0\"",
                    ));
                }
            }
            if self.send_initial_events.is_some() {
                errs.push(FieldError::forbidden(
                    "sendInitialEvents",
                    "sendInitialEvents is forbidden for list",
                ));
            }
        }
        if errs.is_empty() {
            Ok(())
        } else {
            Err(errors::invalid_list_options(&errs))
        }
    }

    /// Whether the object passes the selectors.
    pub fn matches(&self, obj: &StoredObject) -> bool {
        obj.matches(&self.labels, &self.fields)
    }
}

/// A page read by [`list`].
#[derive(Debug, Clone)]
pub struct ListResult {
    /// The page.
    pub page: ListPage,
    /// The continue token for the next page.
    pub continue_token: Option<String>,
}

/// Waits until the store reaches revision `rv`, or fails with 504 after the configured wait.
pub async fn wait_for_rv(state: &SimState, rv: u64) -> ApiResult<()> {
    let mut rx = state.store.subscribe();
    let wait =
        tokio::time::timeout(state.config.too_large_rv_wait, rx.wait_for(|r| *r >= rv)).await;
    match wait {
        Ok(Ok(_)) => Ok(()),
        _ => Err(errors::too_large_resource_version(rv, state.store.rev())),
    }
}

/// Runs a list.
pub async fn list(
    state: &SimState,
    info: &ResourceInfo,
    namespace: &str,
    opts: &ListOptions,
) -> ApiResult<ListResult> {
    let prefix = if namespace.is_empty() {
        String::new()
    } else {
        format!("{namespace}/")
    };
    let rv = match opts.resource_version.as_deref() {
        None => None,
        Some("0") => Some(0),
        // 400 `invalid resource version: ...` as kube-apiserver 1.36.2 answers.
        Some(s) => match go_strconv::invalid_resource_version(s) {
            Some(e) => {
                return Err(errors::bad_request(format!(
                    "invalid resource version: {e}"
                )));
            }
            None => s.parse::<u64>().ok(),
        },
    };
    let mut start = prefix.clone();
    let mut limit = opts.limit;
    let at = if let Some(token) = &opts.continue_token {
        if opts.resource_version.is_some() {
            return Err(errors::bad_request(
                "specifying resource version is not allowed when using continue",
            ));
        }
        let (token_rv, key) = decode_continue(token)?;
        start = format!(
            "{prefix}{}",
            key.strip_prefix(prefix.as_str()).unwrap_or(&key)
        );
        if token_rv < 0 {
            None
        } else {
            Some(u64::try_from(token_rv).unwrap_or(0))
        }
    } else {
        match (rv, opts.rv_match) {
            (None, _) => None,
            (Some(0), _) => {
                limit = 0;
                None
            }
            (Some(n), Some(RvMatch::Exact)) => {
                wait_for_rv(state, n).await?;
                Some(n)
            }
            (Some(n), None) if opts.limit > 0 => {
                wait_for_rv(state, n).await?;
                Some(n)
            }
            (Some(n), _) => {
                wait_for_rv(state, n).await?;
                None
            }
        }
    };
    let count_remaining = opts.labels.is_empty() && opts.fields.is_empty();
    let req = ListRequest {
        keyspace: &info.keyspace(),
        prefix: &prefix,
        at,
        start: &start,
        limit,
        count_remaining,
        cached: info.watch_cached(),
    };
    let page = match state.store.list(req, &|o| opts.matches(o)) {
        Ok(page) => page,
        Err(StoreError::Compacted { .. }) if opts.continue_token.is_some() => {
            let key = start.strip_prefix(prefix.as_str()).unwrap_or(&start);
            let mut err = errors::expired(INCONSISTENT_CONTINUE);
            err.status.metadata.continue_ = encode_continue(-1, key);
            return Err(err);
        }
        Err(StoreError::Compacted { .. }) => return Err(errors::list_too_old()),
        Err(StoreError::TooLarge { current }) => {
            return Err(errors::too_large_resource_version(at.unwrap_or(0), current));
        }
        Err(e) => return Err(errors::internal(e)),
    };
    let continue_token = page.next_key.as_ref().map(|k| {
        let key = k.strip_prefix(prefix.as_str()).unwrap_or(k);
        encode_continue(i64::try_from(page.rv).unwrap_or(i64::MAX), key)
    });
    Ok(ListResult {
        page,
        continue_token,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn option_validation_matches_the_real_server() {
        let info = crate::resources::builtins().remove(1);
        let q = |pairs: &[(&str, &str)]| -> Vec<(String, String)> {
            pairs
                .iter()
                .map(|(a, b)| ((*a).to_owned(), (*b).to_owned()))
                .collect()
        };
        let e = ListOptions::parse(
            &info,
            &q(&[("watch", "true"), ("resourceVersionMatch", "NotOlderThan")]),
            false,
            false,
        )
        .unwrap_err();
        assert!(
            e.status
                .message
                .ends_with("resourceVersionMatch is forbidden for watch")
        );
        // Older server: sendInitialEvents alone is ignored.
        let o = ListOptions::parse(
            &info,
            &q(&[("watch", "1"), ("sendInitialEvents", "true")]),
            false,
            false,
        )
        .unwrap();
        assert_eq!(o.send_initial_events, None);
        let e = ListOptions::parse(&info, &q(&[("resourceVersionMatch", "Exact")]), false, true)
            .unwrap_err();
        assert_eq!(e.code(), 422);
        let e = ListOptions::parse(&info, &q(&[("fieldSelector", "spec.x=y")]), false, true)
            .unwrap_err();
        // Observed on kube-apiserver 1.36.2: ConfigMaps have no field label conversion of
        // their own, Pods do.
        assert_eq!(
            e.status.message,
            r#""spec.x" is not a known field selector: only "metadata.name", "metadata.namespace""#
        );
        let pods = crate::resources::builtins().remove(3);
        let e = ListOptions::parse(&pods, &q(&[("fieldSelector", "spec.x=y")]), false, true)
            .unwrap_err();
        assert_eq!(e.status.message, "field label not supported: spec.x");
        assert_eq!(
            ListOptions::parse(&info, &q(&[("labelSelector", "a in (")]), false, true)
                .unwrap_err()
                .code(),
            400
        );
        assert_eq!(
            ListOptions::parse(&info, &q(&[("limit", "x")]), false, true)
                .unwrap_err()
                .code(),
            400
        );
    }
}
