//! Output negotiation: which representation a request's `Accept` header asks for.
//!
//! Mirrors kube-apiserver's `endpoints/handlers/negotiation` (`NegotiateMediaTypeOptions`,
//! `acceptMediaTypeOptions`) and `RequestScope.AllowsMediaTypeTransform`. The header's clauses
//! are tried in order of preference (q-value, then the more specific media type, then as
//! written) and the first one the server can serve wins. A clause can be served when its media
//! type covers JSON (`application/json`, `application/*`, `*/*`), its `stream` parameter (if
//! any) is `watch`, and the conversion it asks for with `as`, `g` and `v` (if any) is a
//! `meta.k8s.io` `v1` or `v1beta1` `Table`, `PartialObjectMetadata` or
//! `PartialObjectMetadataList`; other clauses are skipped, so
//! `application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json` falls back
//! to plain JSON where a conversion is unknown. When no clause is left the answer is 406
//! `NotAcceptable`. An empty header asks for plain JSON. Unknown parameters are ignored, as
//! the real server ignores them.
//!
//! `application/yaml` is served too, for plain objects, lists, errors and conversions (a
//! Table in YAML), not for watches, which answer 406 as kube-apiserver's do: the response is
//! the JSON answer re-encoded ([`super::body::to_yaml`]).
//!
//! Before negotiating, the built-in resources' requests pass go-restful's check, as in
//! kube-apiserver 1.36.2 where go-restful routes them ([`restful_accepts`]): no clause
//! naming `*/*` or a produced media type exactly is 406 in go-restful's words
//! (`406: Not Acceptable\n\nAvailable representations: ...`); custom resources' requests
//! skip it (their handler is not go-restful's), so `application/*` serves them JSON.
//!
//! Differences: no protobuf or CBOR, and clauses are ordered by a consistent comparison
//! where Go's `goautoneg` sort is not one.

use crate::errors::{self, ApiResult};

/// The representation a request gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Output {
    /// The objects as stored (plain JSON).
    #[default]
    Object,
    /// A `meta.k8s.io` Table of this version (`v1` or `v1beta1`).
    Table(&'static str),
    /// Each object reduced to `PartialObjectMetadata` of this `meta.k8s.io` version.
    PartialObjectMetadata(&'static str),
    /// A list reduced to `PartialObjectMetadataList` of this `meta.k8s.io` version.
    PartialObjectMetadataList(&'static str),
}

/// One clause of the header: `type/subtype;key=value;...;q=0.5`.
struct Clause<'a> {
    kind: &'a str,
    subtype: &'a str,
    params: Vec<(&'a str, &'a str)>,
    q: f32,
}

impl<'a> Clause<'a> {
    fn parse(text: &'a str) -> Option<Clause<'a>> {
        let mut parts = text.split(';');
        let media = parts.next()?.trim();
        let (kind, subtype) = media.split_once('/')?;
        let mut clause = Clause {
            kind: kind.trim(),
            subtype: subtype.trim(),
            params: Vec::new(),
            q: 1.0,
        };
        for part in parts {
            let Some((key, value)) = part.split_once('=') else {
                continue;
            };
            let (key, value) = (key.trim(), value.trim());
            if key == "q" {
                // As Go's goautoneg: an unreadable q is 0.
                clause.q = value.parse().unwrap_or(0.0);
            } else {
                clause.params.push((key, value));
            }
        }
        Some(clause)
    }

    fn param(&self, key: &str) -> Option<&'a str> {
        self.params
            .iter()
            .rev()
            .find(|(k, _)| *k == key)
            .map(|(_, v)| *v)
    }

    fn is_yaml(&self) -> bool {
        (self.kind, self.subtype) == ("application", "yaml")
    }

    fn covers_json(&self) -> bool {
        matches!(
            (self.kind, self.subtype),
            ("application", "json") | ("application", "*") | ("*", "*")
        )
    }

    /// What this clause gets, or `None` if the server cannot serve it.
    fn output(&self) -> Option<Output> {
        if self.is_yaml() && self.param("stream").is_some() {
            return None;
        }
        if !self.covers_json() && !self.is_yaml() {
            return None;
        }
        if self
            .param("stream")
            .is_some_and(|s| !s.is_empty() && s != "watch")
        {
            return None;
        }
        let (kind, group, version) = (self.param("as"), self.param("g"), self.param("v"));
        if kind.is_none() && group.is_none() && version.is_none() {
            return Some(Output::Object);
        }
        if group != Some("meta.k8s.io") {
            return None;
        }
        let version = match version {
            Some("v1") => "v1",
            Some("v1beta1") => "v1beta1",
            _ => return None,
        };
        match kind {
            Some("Table") => Some(Output::Table(version)),
            Some("PartialObjectMetadata") => Some(Output::PartialObjectMetadata(version)),
            Some("PartialObjectMetadataList") => Some(Output::PartialObjectMetadataList(version)),
            _ => None,
        }
    }
}

/// The representation `accept` asks for; 406 `NotAcceptable` when the server can serve none
/// of its clauses.
pub fn negotiate(accept: &str) -> ApiResult<Output> {
    chosen(accept)
        .map(|(output, _)| output)
        .ok_or_else(errors::not_acceptable)
}

/// The clause `accept` gets served by: its output and whether it is YAML.
fn chosen(accept: &str) -> Option<(Output, bool)> {
    if accept.trim().is_empty() {
        return Some((Output::Object, false));
    }
    let mut clauses: Vec<Clause<'_>> = accept.split(',').filter_map(Clause::parse).collect();
    // Stable: clauses that compare equal keep the order they were written in.
    clauses.sort_by(|a, b| {
        b.q.total_cmp(&a.q)
            .then_with(|| (a.kind == "*").cmp(&(b.kind == "*")))
            .then_with(|| (a.subtype == "*").cmp(&(b.subtype == "*")))
    });
    clauses
        .iter()
        .find_map(|c| c.output().map(|o| (o, c.is_yaml())))
}

/// The media types go-restful's routes of built-in resources produce (a collection's GET
/// adds the watch stream types).
const PRODUCED: [&str; 3] = [
    "application/json",
    "application/yaml",
    "application/vnd.kubernetes.protobuf",
];

/// Whether go-restful, which routes the built-in resources' requests in kube-apiserver,
/// lets `accept` through (`Route.matchesAccept`): an empty header, or a clause (its
/// parameters dropped) that is `*/*` or exactly a produced type. `application/*` is not.
pub fn restful_accepts(accept: &str) -> bool {
    accept.trim().is_empty()
        || accept.split(',').any(|clause| {
            let media = clause.split(';').next().unwrap_or("").trim();
            media == "*/*" || PRODUCED.contains(&media)
        })
}

/// go-restful's 406 (empty details), listing what the route produces: a collection's GET
/// (`list_route`) also the watch stream types.
pub fn restful_not_acceptable(list_route: bool) -> errors::ApiError {
    let mut produced = PRODUCED.join(", ");
    if list_route {
        produced.push_str(
            ", application/json;stream=watch, application/vnd.kubernetes.protobuf;stream=watch",
        );
    }
    let mut status = clientgo_apimachinery::Status::failure(
        406,
        clientgo_apimachinery::StatusReason::NotAcceptable,
        format!("406: Not Acceptable\n\nAvailable representations: {produced}"),
    );
    status.details = Some(clientgo_apimachinery::StatusDetails::default());
    status.into()
}

/// Whether the answer to `accept` is YAML.
pub fn wants_yaml(accept: &str) -> bool {
    chosen(accept).is_some_and(|(_, yaml)| yaml)
}

/// 406 for a watch asked in YAML, with kube-apiserver 1.36's message.
pub fn watch_not_acceptable() -> errors::ApiError {
    clientgo_apimachinery::Status::failure(
        406,
        clientgo_apimachinery::StatusReason::NotAcceptable,
        "only the following media types are accepted: application/json;stream=watch, application/vnd.kubernetes.protobuf;stream=watch",
    )
    .into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_json() {
        for accept in [
            "",
            "application/json",
            "*/*",
            "application/*",
            "application/json, */*",
            "application/json;stream=watch",
            "application/vnd.kubernetes.protobuf, application/json",
            "application/json;charset=utf-8;pretty=1",
        ] {
            assert_eq!(negotiate(accept).unwrap(), Output::Object, "{accept}");
        }
    }

    #[test]
    fn conversions() {
        let kubectl = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json";
        assert_eq!(negotiate(kubectl).unwrap(), Output::Table("v1"));
        assert_eq!(
            negotiate("application/json;as=Table;v=v1beta1;g=meta.k8s.io").unwrap(),
            Output::Table("v1beta1")
        );
        assert_eq!(
            negotiate("application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1").unwrap(),
            Output::PartialObjectMetadata("v1")
        );
        assert_eq!(
            negotiate(
                "application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json"
            )
            .unwrap(),
            Output::PartialObjectMetadataList("v1")
        );
        assert_eq!(
            negotiate("application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1beta1").unwrap(),
            Output::PartialObjectMetadata("v1beta1")
        );
    }

    #[test]
    fn yaml() {
        assert!(wants_yaml("application/yaml"));
        assert!(wants_yaml("application/yaml, application/json;q=0.5"));
        assert!(!wants_yaml("application/json, application/yaml"));
        assert!(!wants_yaml(""));
        assert_eq!(negotiate("application/yaml").unwrap(), Output::Object);
    }

    #[test]
    fn go_restful_route_check() {
        assert!(restful_accepts(""));
        assert!(restful_accepts("text/html, application/json"));
        assert!(restful_accepts("application/json;stream=watch"));
        assert!(restful_accepts("*/*;q=0.1"));
        assert!(!restful_accepts("application/*"));
        assert!(!restful_accepts("text/plain"));
        assert_eq!(restful_not_acceptable(true).status.code, 406);
        assert_eq!(
            negotiate("application/yaml;as=Table;g=meta.k8s.io;v=v1").unwrap(),
            Output::Table("v1")
        );
    }

    #[test]
    fn preference_order() {
        // A higher q wins over the order written.
        assert_eq!(
            negotiate("application/json;q=0.5,application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1").unwrap(),
            Output::PartialObjectMetadata("v1")
        );
        // At equal q, a concrete media type comes before a wildcard.
        assert_eq!(
            negotiate("*/*,application/json;as=Table;g=meta.k8s.io;v=v1").unwrap(),
            Output::Table("v1")
        );
        // Otherwise, as written.
        assert_eq!(
            negotiate("application/json,application/json;as=Table;g=meta.k8s.io;v=v1").unwrap(),
            Output::Object
        );
    }

    #[test]
    fn unknown_conversions_fall_back_or_are_not_acceptable() {
        assert_eq!(
            negotiate("application/json;as=Foo;g=meta.k8s.io;v=v1,application/json").unwrap(),
            Output::Object
        );
        for accept in [
            "application/json;as=Foo;g=meta.k8s.io;v=v1",
            "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v2",
            "application/json;as=PartialObjectMetadata;g=example.com;v=v1",
            "application/json;as=PartialObjectMetadata",
            "application/yaml;stream=watch",
            "application/json;stream=chunks",
            "application/vnd.kubernetes.protobuf",
            "text/plain",
            "garbage",
        ] {
            let error = negotiate(accept).unwrap_err();
            assert_eq!(error.status.code, 406, "{accept}");
        }
    }
}
