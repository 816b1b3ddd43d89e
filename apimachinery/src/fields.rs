//! Field selectors: `?fieldSelector=metadata.name=foo,metadata.namespace!=kube-system`.
//!
//! Ports `k8s.io/apimachinery/pkg/fields/selector.go`: comma-separated terms
//! `field=value`, `field==value` (same meaning) or `field!=value`, all of which must hold.
//! In values, `\`, `,` and `=` are escaped with a backslash (`a\,b`); field names are taken
//! verbatim up to the first operator. As in Go, terms are sorted by their text when parsed,
//! so equal selectors render equally, and `==` renders as `=`. (Go sorts the text as written;
//! we sort it as rendered, which differs only when `==` reorders terms: Go renders
//! `a==z,a=b` as `a=z,a=b`, which parses back in the other order, we render `a=b,a=z`.)
//!
//! Matching treats a field the object does not have as the empty string (Go's
//! `Fields.Get`). Objects give `metadata.name` and `metadata.namespace` ([`object_field`]);
//! any other field is looked up through a closure ([`FieldSelector::matches_with`]).
//! [`FieldSelector::check_supported`] lets a server reject fields it cannot select on,
//! as the API server does ("field label not supported").
//!
//! Differences from Go: an empty field name (`=x`) is rejected instead of accepted; the
//! error type is a [`FieldSelectorError`] enum naming the term and the problem.

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

use crate::object::Object;

/// `metadata.name`
pub const METADATA_NAME: &str = "metadata.name";
/// `metadata.namespace`
pub const METADATA_NAMESPACE: &str = "metadata.namespace";

/// Why a field selector is invalid.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FieldSelectorError {
    /// A term has no `=`, `==` or `!=`.
    #[error(
        "invalid field selector {selector:?}: can't understand {term:?} (expected field=value, field==value or field!=value)"
    )]
    InvalidTerm {
        /// The whole selector.
        selector: String,
        /// The term.
        term: String,
    },
    /// A term has nothing before its operator.
    #[error("invalid field selector {selector:?}: empty field name in {term:?}")]
    EmptyField {
        /// The whole selector.
        selector: String,
        /// The term.
        term: String,
    },
    /// A backslash is followed by something other than `\`, `,` or `=`, or ends the value.
    #[error(
        "invalid field selector {selector:?}: invalid escape sequence {sequence:?} in {term:?}"
    )]
    InvalidEscape {
        /// The whole selector.
        selector: String,
        /// The term.
        term: String,
        /// The bad sequence.
        sequence: String,
    },
    /// A value contains `,` or `=` without a backslash.
    #[error(
        "invalid field selector {selector:?}: unescaped {character:?} in the value of {term:?}"
    )]
    UnescapedCharacter {
        /// The whole selector.
        selector: String,
        /// The term.
        term: String,
        /// The character.
        character: char,
    },
    /// The selector uses a field the caller cannot select on.
    #[error("field label not supported: {field}")]
    UnsupportedField {
        /// The field.
        field: String,
    },
}

/// `=` or `!=`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FieldOperator {
    /// `field=value` (also written `==`).
    Equals,
    /// `field!=value`.
    NotEquals,
}

/// One term of a field selector.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct FieldRequirement {
    /// The field path, e.g. `metadata.name`.
    pub field: String,
    /// The operator.
    pub operator: FieldOperator,
    /// The value, unescaped.
    pub value: String,
}

impl FieldRequirement {
    /// Whether the term holds, given the field's value (`None` = absent = `""`).
    pub fn matches(&self, actual: Option<&str>) -> bool {
        let equal = actual.unwrap_or("") == self.value;
        match self.operator {
            FieldOperator::Equals => equal,
            FieldOperator::NotEquals => !equal,
        }
    }
}

impl fmt::Display for FieldRequirement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.field)?;
        f.write_str(match self.operator {
            FieldOperator::Equals => "=",
            FieldOperator::NotEquals => "!=",
        })?;
        for c in self.value.chars() {
            if matches!(c, '\\' | ',' | '=') {
                f.write_str("\\")?;
            }
            write!(f, "{c}")?;
        }
        Ok(())
    }
}

/// A field selector: all terms must hold; the empty selector matches everything.
///
/// ```
/// use clientgo_apimachinery::fields::FieldSelector;
/// use clientgo_apimachinery::ObjectMeta;
///
/// let sel: FieldSelector = "metadata.namespace!=kube-system,metadata.name=web".parse()?;
/// assert!(sel.matches_object(&ObjectMeta::namespaced("default", "web")));
/// assert_eq!(sel.to_string(), "metadata.name=web,metadata.namespace!=kube-system");
/// # Ok::<(), clientgo_apimachinery::fields::FieldSelectorError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct FieldSelector {
    terms: Vec<FieldRequirement>,
}

impl FieldSelector {
    /// The selector that matches everything.
    pub fn everything() -> FieldSelector {
        FieldSelector::default()
    }

    /// `field=value` alone (Go's `OneTermEqualSelector`).
    pub fn equals(field: impl Into<String>, value: impl Into<String>) -> FieldSelector {
        FieldSelector::everything().and(FieldRequirement {
            field: field.into(),
            operator: FieldOperator::Equals,
            value: value.into(),
        })
    }

    /// `metadata.name=name`: selects one object (what `kubectl get pod x --watch` uses).
    pub fn for_name(name: impl Into<String>) -> FieldSelector {
        FieldSelector::equals(METADATA_NAME, name)
    }

    /// Adds a term (builder style, appended in order).
    pub fn and(mut self, term: FieldRequirement) -> FieldSelector {
        self.terms.push(term);
        self
    }

    /// Parses the string syntax.
    pub fn parse(selector: &str) -> Result<FieldSelector, FieldSelectorError> {
        let mut parts = split_terms(selector);
        parts.sort_unstable();
        let mut terms = Vec::with_capacity(parts.len());
        for part in parts.into_iter().filter(|p| !p.is_empty()) {
            let err_ctx = || (selector.to_owned(), part.to_owned());
            let Some((field, operator, raw_value)) = split_term(part) else {
                let (selector, term) = err_ctx();
                return Err(FieldSelectorError::InvalidTerm { selector, term });
            };
            if field.is_empty() {
                let (selector, term) = err_ctx();
                return Err(FieldSelectorError::EmptyField { selector, term });
            }
            let value = unescape(raw_value).map_err(|e| {
                let (selector, term) = err_ctx();
                match e {
                    Unescape::Sequence(sequence) => FieldSelectorError::InvalidEscape {
                        selector,
                        term,
                        sequence,
                    },
                    Unescape::Unescaped(character) => FieldSelectorError::UnescapedCharacter {
                        selector,
                        term,
                        character,
                    },
                }
            })?;
            terms.push(FieldRequirement {
                field: field.to_owned(),
                operator,
                value,
            });
        }
        // A term's text is its rendering, except that `==` renders as `=`, which can move it
        // in the order ("a==z" sorts before "a=b", "a=z" after): sort by the rendering, so the
        // canonical form parses back to the same selector. Without `==` this is Go's order.
        terms.sort_by_cached_key(FieldRequirement::to_string);
        Ok(FieldSelector { terms })
    }

    /// The terms.
    pub fn requirements(&self) -> &[FieldRequirement] {
        &self.terms
    }

    /// Whether there is no term (matches everything).
    pub fn is_empty(&self) -> bool {
        self.terms.is_empty()
    }

    /// Whether every term holds, looking fields up with `get` (absent reads as `""`).
    pub fn matches_with<'a>(&self, get: impl Fn(&str) -> Option<&'a str>) -> bool {
        self.terms.iter().all(|t| t.matches(get(&t.field)))
    }

    /// Whether every term holds on a map of field values.
    pub fn matches_map(&self, fields: &BTreeMap<String, String>) -> bool {
        self.matches_with(|f| fields.get(f).map(String::as_str))
    }

    /// Whether every term holds on an object, which knows `metadata.name` and
    /// `metadata.namespace`; other fields read as `""` (check them first with
    /// [`FieldSelector::check_supported`], or use [`FieldSelector::matches_with`]).
    pub fn matches_object<O: Object + ?Sized>(&self, object: &O) -> bool {
        self.matches_with(|f| object_field(object, f))
    }

    /// If some `=` term constrains `field`, its value.
    pub fn requires_exact_match(&self, field: &str) -> Option<&str> {
        self.terms
            .iter()
            .find(|t| t.field == field && t.operator == FieldOperator::Equals)
            .map(|t| t.value.as_str())
    }

    /// Fails on the first term whose field is not in `supported`.
    pub fn check_supported(&self, supported: &[&str]) -> Result<(), FieldSelectorError> {
        match self
            .terms
            .iter()
            .find(|t| !supported.contains(&t.field.as_str()))
        {
            Some(t) => Err(FieldSelectorError::UnsupportedField {
                field: t.field.clone(),
            }),
            None => Ok(()),
        }
    }
}

/// The value of an object's selectable metadata field (`metadata.name`,
/// `metadata.namespace`), or `None` for any other field.
pub fn object_field<'a, O: Object + ?Sized>(object: &'a O, field: &str) -> Option<&'a str> {
    match field {
        METADATA_NAME => Some(object.name()),
        METADATA_NAMESPACE => Some(object.namespace()),
        _ => None,
    }
}

impl fmt::Display for FieldSelector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, t) in self.terms.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{t}")?;
        }
        Ok(())
    }
}

impl FromStr for FieldSelector {
    type Err = FieldSelectorError;
    fn from_str(s: &str) -> Result<FieldSelector, FieldSelectorError> {
        FieldSelector::parse(s)
    }
}

/// Splits on commas not preceded by a backslash escape (the backslash is kept).
fn split_terms(selector: &str) -> Vec<&str> {
    if selector.is_empty() {
        return Vec::new();
    }
    let mut terms = Vec::with_capacity(1);
    let (mut start, mut escaped) = (0, false);
    for (i, c) in selector.char_indices() {
        if escaped {
            escaped = false;
        } else if c == '\\' {
            escaped = true;
        } else if c == ',' {
            terms.push(&selector[start..i]);
            start = i + 1;
        }
    }
    terms.push(&selector[start..]);
    terms
}

/// Splits at the first operator (`!=` before `==` before `=` at each position).
fn split_term(term: &str) -> Option<(&str, FieldOperator, &str)> {
    for (i, _) in term.char_indices() {
        let rest = &term[i..];
        for (op, operator) in [
            ("!=", FieldOperator::NotEquals),
            ("==", FieldOperator::Equals),
            ("=", FieldOperator::Equals),
        ] {
            if let Some(value) = rest.strip_prefix(op) {
                return Some((&term[..i], operator, value));
            }
        }
    }
    None
}

enum Unescape {
    Sequence(String),
    Unescaped(char),
}

fn unescape(raw: &str) -> Result<String, Unescape> {
    if !raw.contains(['\\', ',', '=']) {
        return Ok(raw.to_owned());
    }
    let mut out = String::with_capacity(raw.len());
    let mut chars = raw.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some(e @ ('\\' | ',' | '=')) => out.push(e),
                Some(other) => return Err(Unescape::Sequence(format!("\\{other}"))),
                None => return Err(Unescape::Sequence("\\".to_owned())),
            },
            ',' | '=' => return Err(Unescape::Unescaped(c)),
            _ => out.push(c),
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ObjectMeta;

    fn parse(s: &str) -> FieldSelector {
        FieldSelector::parse(s).unwrap_or_else(|e| panic!("{s:?}: {e}"))
    }

    #[test]
    fn parse_and_render() {
        for (input, canonical) in [
            ("", ""),
            ("metadata.name=x", "metadata.name=x"),
            ("metadata.name==x", "metadata.name=x"),
            ("metadata.name!=x", "metadata.name!=x"),
            ("b=1,a!=2", "a!=2,b=1"),
            ("a=,b=2", "a=,b=2"),
            (",a=1,", "a=1"),
            ("x=a\\,b\\=c\\\\d", "x=a\\,b\\=c\\\\d"),
            (
                "spec.nodeName=node-1,status.phase!=Running",
                "spec.nodeName=node-1,status.phase!=Running",
            ),
        ] {
            let sel = parse(input);
            assert_eq!(sel.to_string(), canonical, "{input:?}");
            assert_eq!(parse(canonical), sel, "{input:?} re-parses");
        }
        assert_eq!(
            parse("x=a\\,b\\=c\\\\d").requirements()[0].value,
            "a,b=c\\d"
        );
        // The first operator wins; what follows belongs to the value (and must be escaped).
        let sel = parse("a!=b\\=c");
        let t = &sel.requirements()[0];
        assert_eq!(
            (t.field.as_str(), t.operator, t.value.as_str()),
            ("a", FieldOperator::NotEquals, "b=c")
        );
        assert!(parse("").is_empty());
    }

    #[test]
    fn double_equals_does_not_reorder_the_canonical_form() {
        // Found by tests/properties_fields.rs: terms were sorted by their written text, so
        // `a==z` came before `a=b` but rendered as `a=z`, and the rendering parsed back to a
        // different (reordered) selector.
        let sel = parse("a==z,a=b");
        assert_eq!(sel.to_string(), "a=b,a=z");
        assert_eq!(parse(&sel.to_string()), sel);
        assert_eq!(sel, parse("a=z,a=b"));
    }

    #[test]
    fn typed_errors() {
        let sel = |s: &str| s.to_owned();
        assert_eq!(
            FieldSelector::parse("metadata.name"),
            Err(FieldSelectorError::InvalidTerm {
                selector: sel("metadata.name"),
                term: sel("metadata.name")
            })
        );
        assert_eq!(
            FieldSelector::parse("a=1,=x"),
            Err(FieldSelectorError::EmptyField {
                selector: sel("a=1,=x"),
                term: sel("=x")
            })
        );
        assert_eq!(
            FieldSelector::parse("a=x\\y"),
            Err(FieldSelectorError::InvalidEscape {
                selector: sel("a=x\\y"),
                term: sel("a=x\\y"),
                sequence: sel("\\y")
            })
        );
        assert_eq!(
            FieldSelector::parse("a=x\\"),
            Err(FieldSelectorError::InvalidEscape {
                selector: sel("a=x\\"),
                term: sel("a=x\\"),
                sequence: sel("\\")
            })
        );
        assert_eq!(
            FieldSelector::parse("a==b=c"),
            Err(FieldSelectorError::UnescapedCharacter {
                selector: sel("a==b=c"),
                term: sel("a==b=c"),
                character: '='
            })
        );
        let err = FieldSelector::parse("a=1,b").unwrap_err();
        assert_eq!(
            err.to_string(),
            "invalid field selector \"a=1,b\": can't understand \"b\" (expected field=value, field==value or field!=value)"
        );
        for s in ["\\", "=", "!=", "é=\\é", ",,,", "a=\u{0}"] {
            let _ = FieldSelector::parse(s);
        }
    }

    #[test]
    fn matching() {
        let obj = ObjectMeta::namespaced("default", "web");
        assert!(parse("").matches_object(&obj));
        assert!(parse("metadata.name=web").matches_object(&obj));
        assert!(parse("metadata.name=web,metadata.namespace=default").matches_object(&obj));
        assert!(!parse("metadata.name=web,metadata.namespace!=default").matches_object(&obj));
        assert!(parse("metadata.namespace!=kube-system").matches_object(&obj));
        assert!(!parse("metadata.name=other").matches_object(&obj));
        // Unknown fields read as "".
        assert!(parse("spec.nodeName=").matches_object(&obj));
        assert!(!parse("spec.nodeName=n1").matches_object(&obj));
        let node = "n1";
        let get = |f: &str| {
            object_field(&obj, f).or(if f == "spec.nodeName" {
                Some(node)
            } else {
                None
            })
        };
        assert!(parse("spec.nodeName=n1,metadata.name=web").matches_with(get));
        let map = BTreeMap::from([("status.phase".to_string(), "Running".to_string())]);
        assert!(parse("status.phase=Running").matches_map(&map));
        assert!(!parse("status.phase!=Running").matches_map(&map));
    }

    #[test]
    fn fuzz_never_panics_and_canonical_form_is_stable() {
        let alphabet = [
            "a", "b", ".", "=", "==", "!=", "!", ",", "\\", "\\,", "\\=", " ", "é",
        ];
        let mut parsed = 0;
        for input in crate::labels::tests::random_strings(&alphabet, 20_000, 10) {
            if let Ok(sel) = FieldSelector::parse(&input) {
                parsed += 1;
                let canonical = sel.to_string();
                let again = parse(&canonical);
                assert_eq!(again.to_string(), canonical, "{input:?}");
                let mut terms = sel.requirements().to_vec();
                let mut again_terms = again.requirements().to_vec();
                let key = |t: &FieldRequirement| t.to_string();
                terms.sort_by_key(key);
                again_terms.sort_by_key(key);
                assert_eq!(again_terms, terms, "{input:?} -> {canonical:?}");
            }
        }
        assert!(parsed > 100, "{parsed}");
    }

    #[test]
    fn helpers() {
        let sel = FieldSelector::for_name("web").and(FieldRequirement {
            field: METADATA_NAMESPACE.into(),
            operator: FieldOperator::NotEquals,
            value: "a,b".into(),
        });
        assert_eq!(
            sel.to_string(),
            "metadata.name=web,metadata.namespace!=a\\,b"
        );
        assert_eq!(sel.requires_exact_match(METADATA_NAME), Some("web"));
        assert_eq!(sel.requires_exact_match(METADATA_NAMESPACE), None);
        assert_eq!(
            sel.check_supported(&[METADATA_NAME, METADATA_NAMESPACE]),
            Ok(())
        );
        assert_eq!(
            parse("spec.foo=1").check_supported(&[METADATA_NAME]),
            Err(FieldSelectorError::UnsupportedField {
                field: "spec.foo".into()
            })
        );
        assert_eq!(FieldSelector::equals("a", "b"), parse("a==b"));
    }
}
