//! Property tests of the field selector parser (`fields.rs`).
//!
//! Checks that arbitrary text never panics, and that whatever parses renders to a canonical
//! form that parses back to the same selector; that generated selectors (`field=value`,
//! `field==value`, `field!=value` terms, values escaped as Go's `fields.EscapeValue`
//! escapes them, empty terms in between) parse to the expected terms in Go's order, render
//! as Go renders them, and match exactly the field sets (and objects) a reference evaluator
//! written here accepts (an absent field reads as `""`, as Go's `Fields.Get`); and that
//! malformed terms (no operator, empty field name, bad escape, unescaped `=`) are the typed
//! errors naming them.
//!
//! Seeded: every run generates the same cases. More cases, or another seed:
//! `PROPTEST_CASES=20000 PROPTEST_RNG_SEED=7 cargo test -p clientgo-apimachinery --test properties_fields`
//! (the seed in use is printed with `-- --nocapture`).

mod support;

use std::collections::BTreeMap;

use clientgo_apimachinery::ObjectMeta;
use clientgo_apimachinery::fields::{
    FieldOperator, FieldRequirement, FieldSelector, FieldSelectorError, METADATA_NAME,
    METADATA_NAMESPACE,
};
use proptest::prelude::*;
use support::config;

/// Go's `fields.EscapeValue`.
fn escape(value: &str) -> String {
    value
        .replace('\\', "\\\\")
        .replace(',', "\\,")
        .replace('=', "\\=")
}

/// A generated term: field, operator as written, value unescaped.
#[derive(Debug, Clone)]
struct Term {
    field: String,
    op: &'static str,
    value: String,
}

impl Term {
    fn written(&self) -> String {
        format!("{}{}{}", self.field, self.op, escape(&self.value))
    }

    /// As Go renders it: `==` becomes `=`.
    fn canonical(&self) -> String {
        let op = if self.op == "!=" { "!=" } else { "=" };
        format!("{}{op}{}", self.field, escape(&self.value))
    }

    fn requirement(&self) -> FieldRequirement {
        FieldRequirement {
            field: self.field.clone(),
            operator: if self.op == "!=" {
                FieldOperator::NotEquals
            } else {
                FieldOperator::Equals
            },
            value: self.value.clone(),
        }
    }

    /// The reference evaluator: Go's `hasTerm` / `notHasTerm` on `Fields.Get`.
    fn matches(&self, fields: &BTreeMap<String, String>) -> bool {
        let have = fields.get(&self.field).map_or("", String::as_str);
        (have == self.value) == (self.op != "!=")
    }
}

/// Field names: anything without an operator character, `,` or `\`.
fn field() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => "[a-z][a-zA-Z0-9]{0,6}(\\.[a-zA-Z0-9]{1,6}){0,2}",
        1 => Just(METADATA_NAME.to_owned()),
        1 => Just(METADATA_NAMESPACE.to_owned()),
        1 => "[ a-z0-9._/é-]{1,6}",
    ]
}

/// Values: any text, with the characters that need escaping often.
fn value() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => prop::collection::vec(
            prop::sample::select(vec![
                "a", "b", "web", "\\", ",", "=", "==", "!", "!=", " ", "é", "\u{0}", "\\,", "-",
            ]),
            0..6,
        )
        .prop_map(|p| p.concat()),
        1 => any::<String>(),
    ]
}

fn term(fields: Vec<String>, values: Vec<String>) -> impl Strategy<Value = Term> {
    (
        prop::sample::select(fields),
        prop::sample::select(vec!["=", "==", "!="]),
        prop::sample::select(values),
    )
        .prop_map(|(field, op, value)| Term { field, op, value })
}

#[allow(clippy::type_complexity)]
fn selector_case() -> impl Strategy<Value = (Vec<Term>, Vec<usize>, Vec<BTreeMap<String, String>>)>
{
    (
        prop::collection::vec(field(), 1..5),
        prop::collection::vec(value(), 1..5),
    )
        .prop_flat_map(|(fields, values)| {
            let field_value = prop_oneof![
                3 => prop::sample::select(values.clone()),
                1 => value(),
            ];
            (
                prop::collection::vec(term(fields.clone(), values), 0..6),
                // Where empty terms (`,,`) go.
                prop::collection::vec(0usize..8, 0..3),
                prop::collection::vec(
                    prop::collection::btree_map(prop::sample::select(fields), field_value, 0..5),
                    1..8,
                ),
            )
        })
}

/// Invariants of any parse result.
fn check_parsed(
    input: &str,
    result: &Result<FieldSelector, FieldSelectorError>,
) -> Result<(), TestCaseError> {
    match result {
        Ok(sel) => {
            let canonical = sel.to_string();
            let again = FieldSelector::parse(&canonical);
            prop_assert_eq!(again.as_ref(), Ok(sel), "{:?} -> {:?}", input, canonical);
            prop_assert_eq!(again.unwrap().to_string(), canonical);
            for t in sel.requirements() {
                prop_assert!(!t.field.is_empty());
            }
        }
        Err(
            FieldSelectorError::InvalidTerm { selector, term }
            | FieldSelectorError::EmptyField { selector, term }
            | FieldSelectorError::InvalidEscape { selector, term, .. }
            | FieldSelectorError::UnescapedCharacter { selector, term, .. },
        ) => {
            prop_assert_eq!(selector, input);
            prop_assert!(
                !term.is_empty() && input.contains(term.as_str()),
                "{input:?}: {term:?}"
            );
        }
        Err(e @ FieldSelectorError::UnsupportedField { .. }) => {
            prop_assert!(false, "{input:?}: parsing reported {e}");
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(config(1024))]

    #[test]
    fn arbitrary_text_never_panics(input in any::<String>()) {
        check_parsed(&input, &FieldSelector::parse(&input))?;
    }

    #[test]
    fn token_soup_never_panics(
        parts in prop::collection::vec(
            prop::sample::select(vec![
                "a", "b", ".", "=", "==", "!=", "!", ",", "\\", "\\,", "\\=", "\\\\", " ", "é",
                "metadata.name",
            ]),
            0..14,
        )
    ) {
        let input = parts.concat();
        check_parsed(&input, &FieldSelector::parse(&input))?;
    }

    #[test]
    fn generated_selectors_parse_render_and_match_like_go(
        (terms, empty_at, field_sets) in selector_case()
    ) {
        let mut parts: Vec<String> = terms.iter().map(Term::written).collect();
        for &at in &empty_at {
            parts.insert(at.min(parts.len()), String::new());
        }
        let text = parts.join(",");
        let sel = FieldSelector::parse(&text)
            .map_err(|e| TestCaseError::fail(format!("{text:?}: {e}")))?;

        let mut expected: Vec<&Term> = terms.iter().collect();
        expected.sort_by_cached_key(|t| t.canonical());
        let requirements: Vec<FieldRequirement> = expected.iter().map(|t| t.requirement()).collect();
        prop_assert_eq!(sel.requirements(), requirements.as_slice(), "{:?}", text);
        let canonical: Vec<String> = expected.iter().map(|t| t.canonical()).collect();
        prop_assert_eq!(sel.to_string(), canonical.join(","));
        prop_assert_eq!(FieldSelector::parse(&sel.to_string()), Ok(sel.clone()));
        prop_assert_eq!(sel.is_empty(), terms.is_empty());
        if !terms.iter().any(|t| t.op == "==") {
            // Go's `parseSelector(...).String()`: the written terms, sorted, empty ones dropped.
            let mut written: Vec<String> = parts.into_iter().filter(|p| !p.is_empty()).collect();
            written.sort();
            prop_assert_eq!(sel.to_string(), written.join(","));
        }

        for fields in &field_sets {
            let want = terms.iter().all(|t| t.matches(fields));
            prop_assert_eq!(sel.matches_map(fields), want, "{} on {:?}", text, fields);
            prop_assert_eq!(sel.matches_with(|f| fields.get(f).map(String::as_str)), want);
            // An object knows its name and namespace; every other field reads as "".
            let get = |f: &str| fields.get(f).cloned().unwrap_or_default();
            let object = ObjectMeta::namespaced(get(METADATA_NAMESPACE), get(METADATA_NAME));
            let known: BTreeMap<String, String> = fields
                .iter()
                .filter(|(f, _)| *f == METADATA_NAME || *f == METADATA_NAMESPACE)
                .map(|(f, v)| (f.clone(), v.clone()))
                .collect();
            let want = terms.iter().all(|t| t.matches(&known));
            prop_assert_eq!(sel.matches_object(&object), want, "{} on {:?}", text, object);
        }
        for t in &terms {
            if t.op != "!=" {
                prop_assert!(sel.requires_exact_match(&t.field).is_some());
            }
        }
    }

    #[test]
    fn malformed_terms_are_typed_errors(
        good in prop::collection::vec(
            (field(), value()).prop_map(|(field, value)| Term { field, op: "=", value }),
            0..3,
        ),
        flaw in 0usize..5,
        field in field(),
        plain in "[a-z .é-]{0,6}",
        escaped in prop::sample::select(vec!['a', 'n', ' ', 'é', '!', '\u{0}']),
    ) {
        // Each flaw goes last: what precedes it is valid, and it is reported.
        let (term, error): (String, fn(&str, &str) -> FieldSelectorError) = match flaw {
            0 => (
                format!("{field}{plain}"),
                |s, t| FieldSelectorError::InvalidTerm { selector: s.into(), term: t.into() },
            ),
            1 => (
                format!("={}", escape(&plain)),
                |s, t| FieldSelectorError::EmptyField { selector: s.into(), term: t.into() },
            ),
            2 => (format!("{field}={plain}\\{escaped}"), |s, t| {
                let sequence = format!("\\{}", t.chars().last().unwrap());
                FieldSelectorError::InvalidEscape { selector: s.into(), term: t.into(), sequence }
            }),
            3 => (format!("{field}!={plain}\\"), |s, t| FieldSelectorError::InvalidEscape {
                selector: s.into(),
                term: t.into(),
                sequence: "\\".into(),
            }),
            _ => (format!("{field}=={plain}={plain}"), |s, t| {
                FieldSelectorError::UnescapedCharacter {
                    selector: s.into(),
                    term: t.into(),
                    character: '=',
                }
            }),
        };
        // Go sorts the terms before checking them: the first bad term in that order is
        // reported. With one bad term, it is that one.
        let mut parts: Vec<String> = good.iter().map(Term::written).collect();
        parts.push(term.clone());
        let text = parts.join(",");
        prop_assert_eq!(FieldSelector::parse(&text), Err(error(&text, &term)), "{:?}", text);
    }
}
