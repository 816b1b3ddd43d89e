//! Parsed label selectors: [`Selector`], [`Requirement`], [`Operator`].
//!
//! Ports `Requirement`, `internalSelector` and `NewRequirement` from
//! `k8s.io/apimachinery/pkg/labels/selector.go`: a selector is the AND of requirements kept
//! sorted by key; a requirement is validated on construction (key syntax, value syntax,
//! value count per operator, integers for `>`/`<`); matching and the canonical string form
//! follow Go exactly (e.g. `notin` and `!=` match objects that lack the key; values of
//! `in (...)` are rendered sorted).
//!
//! Differences from Go: Go's `sort.Sort` is not stable, ours is, so requirements with the
//! same key keep their written order; there is no "nothing" selector (a `Selector` always
//! means "all requirements hold", and the empty one matches everything); a requirement
//! built with repeated set values renders them once (Go writes `x in (,,)` for three empty
//! values, which its parser rejects).

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::hash::BuildHasher;
use std::str::FromStr;

use super::validation::{validate_label_key, validate_label_value};
use super::{RequirementError, SelectorError};

/// Label lookup, so selectors can match any label container.
pub trait Labels {
    /// The value of `key`, if present.
    fn label(&self, key: &str) -> Option<&str>;
}

impl Labels for BTreeMap<String, String> {
    fn label(&self, key: &str) -> Option<&str> {
        self.get(key).map(String::as_str)
    }
}

impl<S: BuildHasher> Labels for HashMap<String, String, S> {
    fn label(&self, key: &str) -> Option<&str> {
        self.get(key).map(String::as_str)
    }
}

impl<L: Labels + ?Sized> Labels for &L {
    fn label(&self, key: &str) -> Option<&str> {
        (**self).label(key)
    }
}

/// How a requirement relates a key to its values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Operator {
    /// `key in (a,b)`: the key is present with one of the values.
    In,
    /// `key notin (a,b)`: the key is absent or has none of the values.
    NotIn,
    /// `key=a`: the key is present with the value.
    Equals,
    /// `key==a`: same as [`Operator::Equals`], kept to render as written.
    DoubleEquals,
    /// `key!=a`: the key is absent or has another value.
    NotEquals,
    /// `key`: the key is present.
    Exists,
    /// `!key`: the key is absent.
    DoesNotExist,
    /// `key>5`: the key's value is an integer greater than the value.
    GreaterThan,
    /// `key<5`: the key's value is an integer less than the value.
    LessThan,
}

impl Operator {
    /// The operator as Go's `selection.Operator` spells it (`in`, `!=`, `exists`, `gt`...).
    pub fn as_str(self) -> &'static str {
        match self {
            Operator::In => "in",
            Operator::NotIn => "notin",
            Operator::Equals => "=",
            Operator::DoubleEquals => "==",
            Operator::NotEquals => "!=",
            Operator::Exists => "exists",
            Operator::DoesNotExist => "!",
            Operator::GreaterThan => "gt",
            Operator::LessThan => "lt",
        }
    }
}

impl fmt::Display for Operator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One validated condition on one label key.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Requirement {
    key: String,
    operator: Operator,
    values: Vec<String>,
}

impl Requirement {
    /// Builds a requirement, validating it like Go's `NewRequirement`: the key must be a
    /// qualified name; `in`/`notin` need at least one value, `=`/`==`/`!=` exactly one,
    /// `exists`/`!` none, `>`/`<` exactly one integer; every value must be a valid label
    /// value. The empty string is a valid value.
    pub fn new<I, V>(
        key: impl Into<String>,
        operator: Operator,
        values: I,
    ) -> Result<Requirement, RequirementError>
    where
        I: IntoIterator<Item = V>,
        V: Into<String>,
    {
        let key = key.into();
        let values: Vec<String> = values.into_iter().map(Into::into).collect();
        if let Err(reason) = validate_label_key(&key) {
            return Err(RequirementError::InvalidKey { key, reason });
        }
        let count_error = match operator {
            Operator::In | Operator::NotIn if values.is_empty() => {
                Some("for 'in', 'notin' operators, values set can't be empty")
            }
            Operator::Equals | Operator::DoubleEquals | Operator::NotEquals
                if values.len() != 1 =>
            {
                Some("exact-match compatibility requires one single value")
            }
            Operator::Exists | Operator::DoesNotExist if !values.is_empty() => {
                Some("values set must be empty for exists and does not exist")
            }
            Operator::GreaterThan | Operator::LessThan if values.len() != 1 => {
                Some("for 'gt', 'lt' operators, exactly one value is required")
            }
            _ => None,
        };
        if let Some(reason) = count_error {
            return Err(RequirementError::InvalidValues {
                key,
                operator,
                count: values.len(),
                reason,
            });
        }
        for value in &values {
            if let Err(reason) = validate_label_value(value) {
                return Err(RequirementError::InvalidValue {
                    key,
                    value: value.clone(),
                    reason,
                });
            }
            if matches!(operator, Operator::GreaterThan | Operator::LessThan)
                && value.parse::<i64>().is_err()
            {
                return Err(RequirementError::NotAnInteger {
                    key,
                    value: value.clone(),
                });
            }
        }
        Ok(Requirement {
            key,
            operator,
            values,
        })
    }

    /// `key=value`.
    pub fn equals(
        key: impl Into<String>,
        value: impl Into<String>,
    ) -> Result<Requirement, RequirementError> {
        Requirement::new(key, Operator::Equals, [value.into()])
    }

    /// `key!=value`.
    pub fn not_equals(
        key: impl Into<String>,
        value: impl Into<String>,
    ) -> Result<Requirement, RequirementError> {
        Requirement::new(key, Operator::NotEquals, [value.into()])
    }

    /// `key in (values...)`.
    pub fn is_in<I, V>(key: impl Into<String>, values: I) -> Result<Requirement, RequirementError>
    where
        I: IntoIterator<Item = V>,
        V: Into<String>,
    {
        Requirement::new(key, Operator::In, values)
    }

    /// `key notin (values...)`.
    pub fn not_in<I, V>(key: impl Into<String>, values: I) -> Result<Requirement, RequirementError>
    where
        I: IntoIterator<Item = V>,
        V: Into<String>,
    {
        Requirement::new(key, Operator::NotIn, values)
    }

    /// `key` (the key exists).
    pub fn exists(key: impl Into<String>) -> Result<Requirement, RequirementError> {
        Requirement::new(key, Operator::Exists, std::iter::empty::<String>())
    }

    /// `!key` (the key does not exist).
    pub fn does_not_exist(key: impl Into<String>) -> Result<Requirement, RequirementError> {
        Requirement::new(key, Operator::DoesNotExist, std::iter::empty::<String>())
    }

    /// The label key.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// The operator.
    pub fn operator(&self) -> Operator {
        self.operator
    }

    /// The values, in the order given (parsed selectors: sorted, without duplicates).
    pub fn values(&self) -> &[String] {
        &self.values
    }

    fn has_value(&self, v: &str) -> bool {
        self.values.iter().any(|x| x == v)
    }

    /// Whether `labels` satisfy this requirement.
    pub fn matches<L: Labels + ?Sized>(&self, labels: &L) -> bool {
        let value = labels.label(&self.key);
        match self.operator {
            Operator::In | Operator::Equals | Operator::DoubleEquals => {
                value.is_some_and(|v| self.has_value(v))
            }
            Operator::NotIn | Operator::NotEquals => value.is_none_or(|v| !self.has_value(v)),
            Operator::Exists => value.is_some(),
            Operator::DoesNotExist => value.is_none(),
            Operator::GreaterThan | Operator::LessThan => {
                let (Some(have), [want]) = (
                    value.and_then(|v| v.parse::<i64>().ok()),
                    self.values.as_slice(),
                ) else {
                    return false;
                };
                let Ok(want) = want.parse::<i64>() else {
                    return false;
                };
                if self.operator == Operator::GreaterThan {
                    have > want
                } else {
                    have < want
                }
            }
        }
    }
}

impl fmt::Display for Requirement {
    /// The canonical form: `!key`, `key`, `key=v`, `key==v`, `key!=v`, `key>v`, `key<v`,
    /// `key in (a,b)`, `key notin (a,b)`; set values are written sorted and de-duplicated.
    ///
    /// Go's `Requirement.String` sorts but keeps duplicates, which can write what its own
    /// parser rejects: three empty values give `x in (,,)`. A set's duplicates mean nothing,
    /// so we drop them, and every requirement's form parses back.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let op = match self.operator {
            Operator::DoesNotExist => return write!(f, "!{}", self.key),
            Operator::Exists => return f.write_str(&self.key),
            Operator::Equals => "=",
            Operator::DoubleEquals => "==",
            Operator::NotEquals => "!=",
            Operator::GreaterThan => ">",
            Operator::LessThan => "<",
            Operator::In => " in (",
            Operator::NotIn => " notin (",
        };
        f.write_str(&self.key)?;
        f.write_str(op)?;
        if self.values.is_sorted_by(|a, b| a < b) {
            write_joined(f, self.values.iter())?;
        } else {
            let mut sorted: Vec<&String> = self.values.iter().collect();
            sorted.sort();
            sorted.dedup();
            write_joined(f, sorted.into_iter())?;
        }
        if matches!(self.operator, Operator::In | Operator::NotIn) {
            f.write_str(")")?;
        }
        Ok(())
    }
}

fn write_joined<'a>(
    f: &mut fmt::Formatter<'_>,
    values: impl Iterator<Item = &'a String>,
) -> fmt::Result {
    for (i, v) in values.enumerate() {
        if i > 0 {
            f.write_str(",")?;
        }
        f.write_str(v)?;
    }
    Ok(())
}

/// A label selector: all requirements must hold. The empty selector matches everything.
///
/// ```
/// use std::collections::BTreeMap;
/// use clientgo_apimachinery::labels::Selector;
///
/// let sel: Selector = "env in (prod, staging), tier!=cache, !canary".parse()?;
/// assert_eq!(sel.to_string(), "!canary,env in (prod,staging),tier!=cache");
/// let labels = BTreeMap::from([("env".to_string(), "prod".to_string())]);
/// assert!(sel.matches(&labels));
/// # Ok::<(), clientgo_apimachinery::labels::SelectorError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct Selector {
    requirements: Vec<Requirement>,
}

impl Selector {
    /// The selector that matches everything.
    pub fn everything() -> Selector {
        Selector::default()
    }

    /// The selector of `requirements`, in the order of their keys (stable: requirements with
    /// one key keep their order).
    pub(crate) fn from_requirements(mut requirements: Vec<Requirement>) -> Selector {
        requirements.sort_by(|a, b| a.key.cmp(&b.key));
        Selector { requirements }
    }

    /// A selector requiring `key=value` for every entry, validated (Go's
    /// `ValidatedSelectorFromSet`).
    pub fn from_set<'a, I>(set: I) -> Result<Selector, RequirementError>
    where
        I: IntoIterator<Item = (&'a String, &'a String)>,
    {
        let mut selector = Selector::everything();
        for (k, v) in set {
            selector.push(Requirement::equals(k.as_str(), v.as_str())?);
        }
        Ok(selector)
    }

    /// Adds a requirement, keeping requirements sorted by key.
    pub fn push(&mut self, requirement: Requirement) {
        let at = self
            .requirements
            .partition_point(|r| r.key <= requirement.key);
        self.requirements.insert(at, requirement);
    }

    /// Adds a requirement (builder style).
    pub fn and(mut self, requirement: Requirement) -> Selector {
        self.push(requirement);
        self
    }

    /// The requirements, sorted by key.
    pub fn requirements(&self) -> &[Requirement] {
        &self.requirements
    }

    /// Whether the selector has no requirement (matches everything).
    pub fn is_empty(&self) -> bool {
        self.requirements.is_empty()
    }

    /// Whether every requirement holds for `labels`.
    pub fn matches<L: Labels + ?Sized>(&self, labels: &L) -> bool {
        self.requirements.iter().all(|r| r.matches(labels))
    }

    /// Whether the selector matches an object's labels.
    pub fn matches_object<O: crate::Object + ?Sized>(&self, object: &O) -> bool {
        self.matches(&object.labels())
    }

    /// If the first requirement on `key` demands one exact value (`=`, `==`, or `in` with
    /// a single value), that value.
    pub fn requires_exact_match(&self, key: &str) -> Option<&str> {
        let r = self.requirements.iter().find(|r| r.key == key)?;
        match (r.operator, r.values.as_slice()) {
            (Operator::Equals | Operator::DoubleEquals | Operator::In, [v]) => Some(v),
            _ => None,
        }
    }
}

impl fmt::Display for Selector {
    /// The canonical string: requirements joined by `,`; `""` for the empty selector.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, r) in self.requirements.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{r}")?;
        }
        Ok(())
    }
}

impl FromStr for Selector {
    type Err = SelectorError;
    fn from_str(s: &str) -> Result<Selector, SelectorError> {
        Selector::parse(s)
    }
}

impl From<Requirement> for Selector {
    fn from(r: Requirement) -> Selector {
        Selector {
            requirements: vec![r],
        }
    }
}

impl FromIterator<Requirement> for Selector {
    fn from_iter<I: IntoIterator<Item = Requirement>>(iter: I) -> Selector {
        let mut requirements: Vec<Requirement> = iter.into_iter().collect();
        requirements.sort_by(|a, b| a.key.cmp(&b.key));
        Selector { requirements }
    }
}
