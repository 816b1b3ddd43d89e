//! Label selectors: parse, build, match and render.
//!
//! Mirrors `k8s.io/apimachinery/pkg/labels` (the string syntax of `?labelSelector=`) and
//! `metav1.LabelSelector` (the API form with `matchLabels`/`matchExpressions` found in
//! Deployments, Services' pod selectors, ...).
//!
//! The string syntax, comma-separated requirements that must all hold:
//!
//! | requirement | matches labels where |
//! |---|---|
//! | `key=value`, `key==value` | `key` is present with `value` |
//! | `key!=value` | `key` is absent or has another value |
//! | `key in (a, b)` | `key` is present with `a` or `b` |
//! | `key notin (a, b)` | `key` is absent or has neither value |
//! | `key` | `key` is present |
//! | `!key` | `key` is absent |
//! | `key>5`, `key<5` | `key`'s value is an integer above / below 5 |
//!
//! Whitespace around tokens is ignored; the empty string selects everything. Keys are
//! qualified names with an optional DNS-subdomain prefix (`app.kubernetes.io/name`),
//! values at most 63 characters of `[A-Za-z0-9-_.]` starting and ending alphanumeric, or
//! empty. [`Selector`]'s `Display` writes the canonical form (sorted by key, no spaces),
//! which parses back to an equal selector.
//!
//! Bad input never panics: parsing returns a [`SelectorError`] naming the selector, the
//! byte offset and what was expected or why the requirement is invalid; building a
//! requirement returns a [`RequirementError`].

pub(crate) mod label_selector;
mod lexer;
mod parser;
mod selector;
mod validation;

#[cfg(test)]
pub(crate) mod tests;

pub use label_selector::{LabelSelector, LabelSelectorRequirement};
pub use selector::{Labels, Operator, Requirement, Selector};

/// Whether `value` is a valid label value (Go's `validation.IsValidLabelValue`): empty, or at
/// most 63 characters of `[A-Za-z0-9_.-]` starting and ending with a letter or digit.
pub fn is_valid_label_value(value: &str) -> bool {
    validation::validate_label_value(value).is_ok()
}

/// Whether `name` is a DNS-1123 subdomain (Go's `validation.IsDNS1123Subdomain`): at most
/// 253 characters, dot-separated parts of lowercase letters, digits and `-`, each starting
/// and ending with a letter or digit. Most object names must be one.
pub fn is_dns1123_subdomain(name: &str) -> bool {
    validation::validate_dns1123_subdomain(name).is_ok()
}

/// Why a requirement is invalid (from [`Requirement::new`] or a [`LabelSelector`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RequirementError {
    /// The key is not a qualified name.
    #[error("invalid label key {key:?}: {reason}")]
    InvalidKey {
        /// The rejected key.
        key: String,
        /// Which rule it breaks.
        reason: &'static str,
    },
    /// A value is not a valid label value.
    #[error("invalid label value {value:?} for key {key:?}: {reason}")]
    InvalidValue {
        /// The requirement's key.
        key: String,
        /// The rejected value.
        value: String,
        /// Which rule it breaks.
        reason: &'static str,
    },
    /// The operator does not accept this number of values.
    #[error("invalid values for key {key:?} with operator '{operator}' ({count} given): {reason}")]
    InvalidValues {
        /// The requirement's key.
        key: String,
        /// The operator.
        operator: Operator,
        /// How many values were given.
        count: usize,
        /// The rule.
        reason: &'static str,
    },
    /// `>`/`<` need an integer value.
    #[error(
        "invalid value {value:?} for key {key:?}: for 'gt', 'lt' operators, the value must be an integer"
    )]
    NotAnInteger {
        /// The requirement's key.
        key: String,
        /// The rejected value.
        value: String,
    },
    /// A `matchExpressions` operator other than `In`, `NotIn`, `Exists`, `DoesNotExist`.
    #[error(
        "{operator:?} is not a valid label selector operator (expected In, NotIn, Exists or DoesNotExist)"
    )]
    UnknownOperator {
        /// The rejected operator.
        operator: String,
    },
}

/// Why a selector string could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SelectorError {
    /// The string does not follow the grammar.
    #[error(
        "invalid label selector {selector:?}: found '{found}' at byte {position}, expected {expected}"
    )]
    Syntax {
        /// The whole selector.
        selector: String,
        /// Byte offset of the unexpected token.
        position: usize,
        /// The unexpected token (`end of string` at the end).
        found: String,
        /// What the grammar allows there.
        expected: &'static str,
    },
    /// A requirement is well-formed but invalid (bad key, value or value count).
    #[error("invalid label selector {selector:?}: requirement at byte {position}: {error}")]
    Requirement {
        /// The whole selector.
        selector: String,
        /// Byte offset where the requirement starts.
        position: usize,
        /// What is wrong with it.
        #[source]
        error: RequirementError,
    },
}
