//! The API form of a label selector: [`LabelSelector`].
//!
//! Mirrors `metav1.LabelSelector` / `metav1.LabelSelectorRequirement` and
//! `metav1.LabelSelectorAsSelector` (`k8s.io/apimachinery/pkg/apis/meta/v1/helpers.go`):
//! `matchLabels` entries become `key=value` requirements, `matchExpressions` use the
//! operators `In`, `NotIn`, `Exists`, `DoesNotExist` (case-sensitive); an empty selector
//! selects everything. Operators are kept as strings so unknown ones survive a round trip
//! and are reported by the conversion rather than by decoding.
//!
//! Difference from Go: Go maps a *nil* `*LabelSelector` to "select nothing"; we have no
//! nil here; a caller holding an `Option<LabelSelector>` decides what `None` means.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::RequirementError;
use super::selector::{Operator, Requirement, Selector};
use crate::serde_util::null_default;

/// A label selector as written in API objects.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LabelSelector {
    /// Each entry requires `key=value`.
    #[serde(
        default,
        skip_serializing_if = "BTreeMap::is_empty",
        deserialize_with = "null_default"
    )]
    pub match_labels: BTreeMap<String, String>,
    /// Set-based requirements.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "null_default"
    )]
    pub match_expressions: Vec<LabelSelectorRequirement>,
}

/// One set-based requirement of a [`LabelSelector`].
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LabelSelectorRequirement {
    /// The label key.
    #[serde(default, deserialize_with = "null_default")]
    pub key: String,
    /// `In`, `NotIn`, `Exists` or `DoesNotExist`.
    #[serde(default, deserialize_with = "null_default")]
    pub operator: String,
    /// Values for `In`/`NotIn`; empty otherwise.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "null_default"
    )]
    pub values: Vec<String>,
}

impl LabelSelector {
    /// Whether it has neither labels nor expressions (selects everything).
    pub fn is_empty(&self) -> bool {
        self.match_labels.is_empty() && self.match_expressions.is_empty()
    }

    /// Converts to a parsed [`Selector`], validating every requirement.
    pub fn to_selector(&self) -> Result<Selector, RequirementError> {
        selector_from_parts(
            self.match_labels
                .iter()
                .map(|(k, v)| (k.as_str(), v.as_str())),
            self.match_expressions
                .iter()
                .map(|e| (e.key.as_str(), e.operator.as_str(), e.values.as_slice())),
        )
    }
}

/// Shared by our `LabelSelector` and k8s-openapi's.
pub(crate) fn selector_from_parts<'a>(
    match_labels: impl Iterator<Item = (&'a str, &'a str)>,
    match_expressions: impl Iterator<Item = (&'a str, &'a str, &'a [String])>,
) -> Result<Selector, RequirementError> {
    let mut selector = Selector::everything();
    for (k, v) in match_labels {
        selector.push(Requirement::equals(k, v)?);
    }
    for (key, operator, values) in match_expressions {
        let op = match operator {
            "In" => Operator::In,
            "NotIn" => Operator::NotIn,
            "Exists" => Operator::Exists,
            "DoesNotExist" => Operator::DoesNotExist,
            other => {
                return Err(RequirementError::UnknownOperator {
                    operator: other.to_owned(),
                });
            }
        };
        selector.push(Requirement::new(
            key,
            op,
            values.iter().map(String::as_str),
        )?);
    }
    Ok(selector)
}

impl TryFrom<&LabelSelector> for Selector {
    type Error = RequirementError;
    fn try_from(ls: &LabelSelector) -> Result<Selector, RequirementError> {
        ls.to_selector()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn converts_like_label_selector_as_selector() {
        let ls: LabelSelector = serde_json::from_str(
            r#"{"matchLabels":{"app":"web"},"matchExpressions":[
                {"key":"tier","operator":"In","values":["fe","be"]},
                {"key":"canary","operator":"DoesNotExist"},
                {"key":"env","operator":"NotIn","values":["dev"]},
                {"key":"zone","operator":"Exists"}]}"#,
        )
        .unwrap();
        let sel = Selector::try_from(&ls).unwrap();
        assert_eq!(
            sel.to_string(),
            "app=web,!canary,env notin (dev),tier in (be,fe),zone"
        );
        assert_eq!(
            LabelSelector::default().to_selector().unwrap(),
            Selector::everything()
        );
        assert!(LabelSelector::default().is_empty());
    }

    #[test]
    fn invalid_api_selectors_are_typed_errors() {
        let with = |op: &str, values: &[&str]| LabelSelector {
            match_labels: BTreeMap::new(),
            match_expressions: vec![LabelSelectorRequirement {
                key: "k".into(),
                operator: op.into(),
                values: values.iter().map(|v| v.to_string()).collect(),
            }],
        };
        assert_eq!(
            with("in", &["a"]).to_selector(),
            Err(RequirementError::UnknownOperator {
                operator: "in".into()
            })
        );
        assert!(matches!(
            with("In", &[]).to_selector(),
            Err(RequirementError::InvalidValues { count: 0, .. })
        ));
        assert!(matches!(
            with("Exists", &["x"]).to_selector(),
            Err(RequirementError::InvalidValues { count: 1, .. })
        ));
        let bad_label = LabelSelector {
            match_labels: BTreeMap::from([("bad key".to_string(), "v".to_string())]),
            ..LabelSelector::default()
        };
        assert!(matches!(
            bad_label.to_selector(),
            Err(RequirementError::InvalidKey { .. })
        ));
    }

    #[test]
    fn serde_omitempty() {
        let ls = LabelSelector {
            match_labels: BTreeMap::from([("a".to_string(), "b".to_string())]),
            match_expressions: vec![LabelSelectorRequirement {
                key: "k".into(),
                operator: "Exists".into(),
                values: vec![],
            }],
        };
        let text = serde_json::to_string(&ls).unwrap();
        assert_eq!(
            text,
            r#"{"matchLabels":{"a":"b"},"matchExpressions":[{"key":"k","operator":"Exists"}]}"#
        );
        assert_eq!(serde_json::from_str::<LabelSelector>(&text).unwrap(), ls);
        assert_eq!(
            serde_json::to_string(&LabelSelector::default()).unwrap(),
            "{}"
        );
    }
}
