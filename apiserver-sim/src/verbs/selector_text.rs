//! kube-apiserver 1.36.2's wording of a label or field selector it cannot parse
//! (`apimachinery/pkg/labels/selector.go`'s parser, `apimachinery/pkg/fields/selector.go`),
//! built from the errors of `clientgo_apimachinery`'s parsers.
//!
//! Difference: for an invalid value in a set (`a in (b,%)`), Go names its index in the
//! sorted set of values; the index is not known here and is always written `0`.

use clientgo_apimachinery::fields::FieldSelectorError;
use clientgo_apimachinery::labels::{RequirementError, SelectorError};

use crate::go_strconv::go_quote;

/// Go's `expected: ...` for each place the parser stops, and whether Go reports it from
/// inside a requirement (`unable to parse requirement: ...`).
fn expected(rust: &str) -> (&str, bool) {
    match rust {
        "identifier after ','" => ("identifier after ','", false),
        "',' or end of string" => ("',' or 'end of string'", false),
        "'!', identifier, or end of string" => ("!, identifier, or 'end of string'", false),
        "one of in, notin, =, ==, !=, >, <" => ("in, notin, =, ==, !=, gt, lt", true),
        "',', ')' or identifier" => ("',', ')' or identifier", true),
        "',' or identifier" => ("',', or identifier", true),
        other => (other, true),
    }
}

const LABEL_VALUE: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const NAME_PART: &str = "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";

/// A validation reason with the examples and regex Go's `RegexError` appends to it.
fn go_reason(reason: &str) -> String {
    let example = match reason {
        LABEL_VALUE => {
            "(e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
        }
        NAME_PART => {
            "(e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
        }
        _ => return reason.to_owned(),
    };
    format!("{reason} {example}")
}

/// The message of a label selector that does not parse.
pub fn label_selector(e: &SelectorError) -> String {
    match e {
        SelectorError::Syntax {
            found, expected: x, ..
        } => {
            let found = if found == "end of string" { "" } else { found };
            let (x, inner) = expected(x);
            // Go's parseValues leaves out the comma before `expected` for its '('.
            let sep = if x == "'('" { "" } else { "," };
            let text = format!("found '{found}'{sep} expected: {x}");
            if inner {
                format!("unable to parse requirement: {text}")
            } else {
                text
            }
        }
        SelectorError::Requirement { error, .. } => {
            let text = match error {
                RequirementError::InvalidKey { key, reason } => {
                    format!(
                        "<nil>: Invalid value: {}: {}",
                        go_quote(key),
                        go_reason(reason)
                    )
                }
                RequirementError::InvalidValue { key, value, reason } => format!(
                    "values[0][{key}]: Invalid value: {}: {}",
                    go_quote(value),
                    go_reason(reason)
                ),
                RequirementError::NotAnInteger { value, .. } => format!(
                    "values[0]: Invalid value: {}: for 'Gt', 'Lt' operators, the value must be an integer",
                    go_quote(value)
                ),
                other => other.to_string(),
            };
            format!("unable to parse requirement: {text}")
        }
    }
}

/// The message of a field selector that does not parse.
pub fn field_selector(e: &FieldSelectorError) -> String {
    match e {
        FieldSelectorError::InvalidTerm { selector, term } => {
            format!("invalid selector: '{selector}'; can't understand '{term}'")
        }
        other => other.to_string(),
    }
}
