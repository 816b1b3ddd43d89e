//! Property tests of the label selector parser (`labels/`: lexer, parser, selector,
//! validation) and of the `metav1.LabelSelector` conversion.
//!
//! Checks that arbitrary text never panics, and that whatever parses has a canonical form
//! that parses back to the same selector and only valid keys and values; that generated
//! selectors (keys with optional DNS prefixes, empty and non-empty values, `=`, `==`, `!=`,
//! `in`, `notin`, exists, `!key`, `>`, `<`, written with Go's whitespace between tokens)
//! parse to the expected requirements, render to the expected canonical string, and match
//! exactly the label sets a reference evaluator written here accepts (Go's semantics:
//! `!=`/`notin` match absent keys, `>`/`<` compare integers parsed like `strconv.ParseInt`),
//! while value lists Go's parser rejects (an even run of commas before `)`: `(a,,)`, `(,,)`)
//! are rejected with the same error;
//! that keys, values and DNS prefixes are accepted exactly when Go's validation regular
//! expressions (compiled verbatim with `regex`) accept them, and only Go's four whitespace
//! characters separate tokens; and that `LabelSelector`s convert to selectors with the same
//! meaning (also through k8s-openapi's type) and report invalid operators, keys and value
//! counts.
//!
//! Seeded: every run generates the same cases. More cases, or another seed:
//! `PROPTEST_CASES=20000 PROPTEST_RNG_SEED=7 cargo test -p clientgo-apimachinery --test properties_labels`
//! (the seed in use is printed with `-- --nocapture`).

mod support;

use std::collections::BTreeMap;
use std::sync::LazyLock;

use clientgo_apimachinery::labels::{
    self, LabelSelector, LabelSelectorRequirement, Operator, Requirement, RequirementError,
    Selector, SelectorError,
};
use proptest::prelude::*;
use regex::Regex;
use support::config;

// Go's regular expressions, from k8s.io/apimachinery/pkg/util/validation/validation.go.
const QUALIFIED_NAME_FMT: &str = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";
const DNS1123_LABEL_FMT: &str = "[a-z0-9]([-a-z0-9]*[a-z0-9])?";

static QUALIFIED_NAME: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(&format!("^{QUALIFIED_NAME_FMT}$")).unwrap());
static LABEL_VALUE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(&format!("^({QUALIFIED_NAME_FMT})?$")).unwrap());
static DNS1123_SUBDOMAIN: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(&format!("^{DNS1123_LABEL_FMT}(\\.{DNS1123_LABEL_FMT})*$")).unwrap()
});

/// Go's `IsDNS1123Subdomain`.
fn go_dns1123_subdomain(s: &str) -> bool {
    s.len() <= 253 && DNS1123_SUBDOMAIN.is_match(s)
}

/// Go's `IsQualifiedName` (what `validateLabelKey` calls).
fn go_qualified_name(key: &str) -> bool {
    let parts: Vec<&str> = key.split('/').collect();
    let name = match parts.as_slice() {
        [name] => name,
        [prefix, name] => {
            if prefix.is_empty() || !go_dns1123_subdomain(prefix) {
                return false;
            }
            name
        }
        _ => return false,
    };
    !name.is_empty() && name.len() <= 63 && QUALIFIED_NAME.is_match(name)
}

/// Go's `IsValidLabelValue`.
fn go_label_value(value: &str) -> bool {
    value.len() <= 63 && LABEL_VALUE.is_match(value)
}

/// Go's `strconv.ParseInt(s, 10, 64)`: an optional sign, then decimal digits, in range.
fn go_parse_int(s: &str) -> Option<i64> {
    let (negative, digits) = match s.as_bytes().first()? {
        b'-' => (true, &s[1..]),
        b'+' => (false, &s[1..]),
        _ => (false, s),
    };
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let mut v: i128 = 0;
    for b in digits.bytes() {
        v = (v * 10 + i128::from(b - b'0')).min(i128::from(u64::MAX));
    }
    i64::try_from(if negative { -v } else { v }).ok()
}

/// A requirement as generated: the operator, written the way the test writes it.
#[derive(Debug, Clone)]
struct Req {
    key: String,
    op: Operator,
    /// As written: set operators may repeat values and list them in any order.
    values: Vec<String>,
}

impl Req {
    /// The reference evaluator: Go's `Requirement.Matches`.
    fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        let have = labels.get(&self.key).map(String::as_str);
        let listed = |v: &str| self.values.iter().any(|x| x == v);
        match self.op {
            Operator::Equals | Operator::DoubleEquals | Operator::In => have.is_some_and(listed),
            Operator::NotEquals | Operator::NotIn => !have.is_some_and(listed),
            Operator::Exists => have.is_some(),
            Operator::DoesNotExist => have.is_none(),
            Operator::GreaterThan | Operator::LessThan => {
                match (have.and_then(go_parse_int), go_parse_int(&self.values[0])) {
                    (Some(have), Some(want)) if self.op == Operator::GreaterThan => have > want,
                    (Some(have), Some(want)) => have < want,
                    _ => false,
                }
            }
        }
    }

    /// Whether Go's parser accepts the value list as written (`parseIdentifiersList`). It
    /// takes commas in pairs, so a run of commas before `)` must be odd: `(a,)`, `(a,,,)` and
    /// `(,)` parse, `(a,,)` and `(,,)` do not. Written values are joined by commas, so
    /// trailing empty values make that run (all-empty lists one comma shorter).
    fn go_accepts(&self) -> bool {
        if !matches!(self.op, Operator::In | Operator::NotIn) {
            return true;
        }
        let trailing = self
            .values
            .iter()
            .rev()
            .take_while(|v| v.is_empty())
            .count();
        let run = if trailing == self.values.len() {
            trailing - 1
        } else {
            trailing
        };
        run == 0 || run % 2 == 1
    }

    /// The values a parsed requirement holds: sets sorted and de-duplicated.
    fn parsed_values(&self) -> Vec<String> {
        let mut values = self.values.clone();
        values.sort();
        values.dedup();
        values
    }

    /// The canonical rendering, built independently of `Display`.
    fn canonical(&self) -> String {
        let k = &self.key;
        match self.op {
            Operator::Exists => k.clone(),
            Operator::DoesNotExist => format!("!{k}"),
            Operator::In => format!("{k} in ({})", self.parsed_values().join(",")),
            Operator::NotIn => format!("{k} notin ({})", self.parsed_values().join(",")),
            Operator::Equals => format!("{k}={}", self.values[0]),
            Operator::DoubleEquals => format!("{k}=={}", self.values[0]),
            Operator::NotEquals => format!("{k}!={}", self.values[0]),
            Operator::GreaterThan => format!("{k}>{}", self.values[0]),
            Operator::LessThan => format!("{k}<{}", self.values[0]),
        }
    }

    /// Writes the requirement with the whitespace `ws` hands out between tokens
    /// (`ws(true)` must be non-empty: it separates two identifiers).
    fn write(&self, out: &mut String, ws: &mut impl FnMut(bool) -> &'static str) {
        let k = &self.key;
        let op = match self.op {
            Operator::Exists => return out.push_str(k),
            Operator::DoesNotExist => {
                out.push('!');
                out.push_str(ws(false));
                return out.push_str(k);
            }
            Operator::In | Operator::NotIn => {
                out.push_str(k);
                out.push_str(ws(true));
                out.push_str(if self.op == Operator::In {
                    "in"
                } else {
                    "notin"
                });
                out.push_str(ws(false));
                out.push('(');
                for (i, v) in self.values.iter().enumerate() {
                    out.push_str(ws(false));
                    if i > 0 {
                        out.push(',');
                        out.push_str(ws(false));
                    }
                    out.push_str(v);
                }
                out.push_str(ws(false));
                return out.push(')');
            }
            Operator::Equals => "=",
            Operator::DoubleEquals => "==",
            Operator::NotEquals => "!=",
            Operator::GreaterThan => ">",
            Operator::LessThan => "<",
        };
        out.push_str(k);
        out.push_str(ws(false));
        out.push_str(op);
        out.push_str(ws(false));
        out.push_str(&self.values[0]);
    }
}

/// Writes requirements as a selector string, with whitespace picked by `choices`.
fn write_selector(reqs: &[Req], choices: &[u8]) -> String {
    const WS: [&str; 6] = ["", " ", "\t", "\n", "\r", " \t\r\n "];
    let mut i = 0;
    let mut ws = |required: bool| {
        let c = usize::from(choices[i % choices.len()]) % WS.len();
        i += 1;
        if required && c == 0 { " " } else { WS[c] }
    };
    let mut out = String::new();
    out.push_str(ws(false));
    for (n, r) in reqs.iter().enumerate() {
        if n > 0 {
            out.push_str(ws(false));
            out.push(',');
            out.push_str(ws(false));
        }
        r.write(&mut out, &mut ws);
    }
    out.push_str(ws(false));
    out
}

fn dns_prefix() -> impl Strategy<Value = String> {
    prop::collection::vec("[a-z0-9]([-a-z0-9]{0,6}[a-z0-9])?", 1..4).prop_map(|l| l.join("."))
}

/// A valid name part or non-empty label value, up to the 63-character limit.
fn name() -> impl Strategy<Value = String> {
    prop_oneof![
        6 => "[A-Za-z0-9]([-A-Za-z0-9_.]{0,8}[A-Za-z0-9])?",
        1 => "[A-Za-z0-9][-A-Za-z0-9_.]{61}[A-Za-z0-9]",
        1 => prop::sample::select(vec!["in", "notin", "x"]).prop_map(String::from),
    ]
}

fn key() -> impl Strategy<Value = String> {
    (prop::option::weighted(0.3, dns_prefix()), name())
        .prop_map(|(p, n)| p.map_or(n.clone(), |p| format!("{p}/{n}")))
}

fn value() -> impl Strategy<Value = String> {
    prop_oneof![1 => Just(String::new()), 4 => name()]
}

/// An integer label value: digits only (a label value cannot start with a sign).
fn int_value() -> impl Strategy<Value = String> {
    prop_oneof![
        (0u64..20).prop_map(|n| n.to_string()),
        (0..=i64::MAX as u64).prop_map(|n| n.to_string()),
        (0u64..1000).prop_map(|n| format!("00{n}")),
    ]
}

/// A requirement over keys and values drawn from the given pools.
fn req(keys: Vec<String>, values: Vec<String>, ints: Vec<String>) -> impl Strategy<Value = Req> {
    let key = prop::sample::select(keys);
    let value = prop::sample::select(values);
    let int = prop::sample::select(ints);
    let ops = prop::sample::select(vec![
        Operator::Equals,
        Operator::DoubleEquals,
        Operator::NotEquals,
        Operator::In,
        Operator::NotIn,
        Operator::Exists,
        Operator::DoesNotExist,
        Operator::GreaterThan,
        Operator::LessThan,
    ]);
    (key, ops, prop::collection::vec(value, 1..5), int).prop_map(|(key, op, mut values, int)| {
        match op {
            Operator::Exists | Operator::DoesNotExist => values.clear(),
            Operator::GreaterThan | Operator::LessThan => values = vec![int],
            Operator::In | Operator::NotIn => {}
            _ => values.truncate(1),
        }
        Req { key, op, values }
    })
}

/// Label sets over the same pools, plus values that stress integer comparison.
fn label_sets(
    keys: Vec<String>,
    values: Vec<String>,
    ints: Vec<String>,
) -> impl Strategy<Value = Vec<BTreeMap<String, String>>> {
    let value = prop_oneof![
        3 => prop::sample::select(values),
        2 => prop::sample::select(ints),
        1 => any::<i64>().prop_map(|n| n.to_string()),
        1 => prop::sample::select(vec!["+5", "-0", "", " 1", "1e3", "99999999999999999999"])
            .prop_map(String::from),
    ];
    let key = prop_oneof![4 => prop::sample::select(keys), 1 => key()];
    prop::collection::vec(prop::collection::btree_map(key, value, 0..6), 1..8)
}

/// Pools of keys, values and integers, then requirements and label sets drawing from them.
fn selector_case() -> impl Strategy<Value = (Vec<Req>, Vec<BTreeMap<String, String>>, Vec<u8>)> {
    (
        prop::collection::vec(key(), 1..5),
        prop::collection::vec(value(), 1..5),
        prop::collection::vec(int_value(), 1..3),
    )
        .prop_flat_map(|(keys, values, ints)| {
            (
                prop::collection::vec(req(keys.clone(), values.clone(), ints.clone()), 0..6),
                label_sets(keys, values, ints),
                prop::collection::vec(any::<u8>(), 1..32),
            )
        })
}

/// The requirements a parse of `reqs` must give: built with `Requirement::new`, stable-sorted
/// by key.
fn expected_requirements(reqs: &[Req]) -> Vec<Requirement> {
    let mut sorted: Vec<&Req> = reqs.iter().collect();
    sorted.sort_by(|a, b| a.key.cmp(&b.key));
    sorted
        .into_iter()
        .map(|r| {
            let values = match r.op {
                Operator::In | Operator::NotIn => r.parsed_values(),
                _ => r.values.clone(),
            };
            Requirement::new(r.key.as_str(), r.op, values).unwrap()
        })
        .collect()
}

/// Invariants of any parse result.
fn check_parsed(
    input: &str,
    result: &Result<Selector, SelectorError>,
) -> Result<(), TestCaseError> {
    match result {
        Ok(sel) => {
            let canonical = sel.to_string();
            let again = Selector::parse(&canonical);
            prop_assert_eq!(again.as_ref(), Ok(sel), "{:?} -> {:?}", input, canonical);
            prop_assert_eq!(again.unwrap().to_string(), canonical);
            for r in sel.requirements() {
                prop_assert!(go_qualified_name(r.key()), "{input:?}: key {:?}", r.key());
                for v in r.values() {
                    prop_assert!(go_label_value(v), "{input:?}: value {v:?}");
                }
            }
            prop_assert!(sel.requirements().is_sorted_by(|a, b| a.key() <= b.key()));
        }
        Err(SelectorError::Syntax {
            selector, position, ..
        })
        | Err(SelectorError::Requirement {
            selector, position, ..
        }) => {
            prop_assert_eq!(selector, input);
            prop_assert!(*position <= input.len(), "{input:?}: {position}");
            prop_assert!(input.is_char_boundary(*position), "{input:?}: {position}");
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(config(512))]

    #[test]
    fn arbitrary_text_never_panics(input in any::<String>()) {
        check_parsed(&input, &Selector::parse(&input))?;
    }

    #[test]
    fn token_soup_never_panics(
        parts in prop::collection::vec(
            prop::sample::select(vec![
                "a", "b", "x", "1", "-", ".", "/", "_", "=", "==", "!", "!=", "(", ")", ",", " ",
                "\t", "\n", ">", "<", "in", "notin", " in ", " notin ", "é", "k8s.io/", "\u{b}",
            ]),
            0..16,
        )
    ) {
        let input = parts.concat();
        check_parsed(&input, &Selector::parse(&input))?;
    }

    #[test]
    fn generated_selectors_parse_render_and_match_like_go(
        (reqs, label_sets, spacing) in selector_case()
    ) {
        let text = write_selector(&reqs, &spacing);
        if !reqs.iter().all(Req::go_accepts) {
            let is_go_error = matches!(
                Selector::parse(&text),
                Err(SelectorError::Syntax { ref found, expected: "',' or identifier", .. }) if found == ")"
            );
            prop_assert!(is_go_error, "{:?}: {:?}", text, Selector::parse(&text));
            return Ok(());
        }
        let sel = Selector::parse(&text)
            .map_err(|e| TestCaseError::fail(format!("{text:?}: {e}")))?;
        let expected = expected_requirements(&reqs);
        prop_assert_eq!(sel.requirements(), expected.as_slice(), "{:?}", text);

        let mut sorted = reqs.clone();
        sorted.sort_by(|a, b| a.key.cmp(&b.key));
        let canonical: Vec<String> = sorted.iter().map(Req::canonical).collect();
        prop_assert_eq!(sel.to_string(), canonical.join(","));
        prop_assert_eq!(Selector::parse(&sel.to_string()), Ok(sel.clone()));
        // The same requirements built directly make the same selector.
        prop_assert_eq!(&expected.into_iter().collect::<Selector>(), &sel);

        for labels in &label_sets {
            let want = reqs.iter().all(|r| r.matches(labels));
            prop_assert_eq!(sel.matches(labels), want, "{} on {:?}", text, labels);
            let hashed: std::collections::HashMap<String, String> =
                labels.clone().into_iter().collect();
            prop_assert_eq!(sel.matches(&hashed), want);
        }
    }

    #[test]
    fn validation_agrees_with_gos_regular_expressions(
        s in prop_oneof![
            4 => prop::collection::vec(
                prop::sample::select(vec![
                    "a", "z", "A", "Z", "0", "9", "-", "_", ".", "/", "é", " ", "in", "a.b", "x-y",
                ]),
                0..12,
            ).prop_map(|p| p.concat()),
            1 => "[a-zA-Z0-9]{1,3}[a-z0-9_.-]{58,62}[a-zA-Z0-9]{0,2}",
            1 => ("[a-z0-9]{250,256}", "[a-z]{0,2}").prop_map(|(p, n)| format!("{p}/{n}")),
            1 => ("([a-z0-9]{60}\\.){3}[a-z0-9-]{68,72}", "[a-z]{1,2}")
                .prop_map(|(p, n)| format!("{p}/{n}")),
        ]
    ) {
        prop_assert_eq!(Requirement::exists(s.as_str()).is_ok(), go_qualified_name(&s), "key {:?}", s);
        prop_assert_eq!(labels::is_valid_label_value(&s), go_label_value(&s), "value {:?}", s);
        prop_assert_eq!(labels::is_dns1123_subdomain(&s), go_dns1123_subdomain(&s), "{:?}", s);
        let built = Requirement::equals("k", s.as_str());
        prop_assert_eq!(built.is_ok(), go_label_value(&s));
        if let Err(e) = built {
            let is_invalid_value = matches!(e, RequirementError::InvalidValue { .. });
            prop_assert!(is_invalid_value, "{e:?}");
        }
    }

    #[test]
    fn parsed_keys_and_values_are_validated_like_go(
        k in "[a-zA-Z0-9_./é~-]{1,10}",
        v in "[a-zA-Z0-9_./é~-]{0,10}",
    ) {
        // No special characters or whitespace: `k=v` is always three tokens.
        let ok = go_qualified_name(&k) && go_label_value(&v);
        let text = format!("{k}={v}");
        prop_assert_eq!(Selector::parse(&text).is_ok(), ok, "{:?}", text);
        prop_assert_eq!(Selector::parse(&k).is_ok(), go_qualified_name(&k), "{:?}", k);
        prop_assert_eq!(Selector::parse(&format!("!{k}")).is_ok(), go_qualified_name(&k));
        let set = format!("{k} in ({v}, {v})");
        prop_assert_eq!(Selector::parse(&set).is_ok(), ok, "{:?}", set);
        if let Err(SelectorError::Requirement { position, .. }) = Selector::parse(&format!("a=b, {text}")) {
            prop_assert_eq!(position, 5, "the error points at the requirement");
        }
    }

    #[test]
    fn only_gos_whitespace_separates_tokens(
        k in key(),
        v in name(),
        ws in prop::sample::select(vec![" ", "\t", "\r", "\n"]),
        not_ws in prop::sample::select(vec!["\u{b}", "\u{c}", "\u{a0}", "\u{85}", "\u{2003}", "\u{feff}"]),
        at in 0usize..4,
    ) {
        let plain = Selector::parse(&format!("{k}={v}")).unwrap();
        let pieces = [k.as_str(), "=", v.as_str()];
        let join = |sep: &str| {
            let mut s = String::new();
            for (i, p) in pieces.iter().enumerate() {
                if i == at { s.push_str(sep); }
                s.push_str(p);
            }
            if at == pieces.len() { s.push_str(sep); }
            s
        };
        prop_assert_eq!(Selector::parse(&join(ws)), Ok(plain));
        // Other white space is part of the key or value, which makes it invalid.
        let with_other = join(not_ws);
        let is_invalid_requirement = matches!(
            Selector::parse(&with_other),
            Err(SelectorError::Requirement { .. })
        );
        prop_assert!(is_invalid_requirement, "{with_other:?}");
    }

    #[test]
    fn integers_out_of_range_are_rejected_for_gt_and_lt(
        k in key(),
        digits in "[1-9][0-9]{19,30}",
        gt in any::<bool>(),
    ) {
        let op = if gt { Operator::GreaterThan } else { Operator::LessThan };
        prop_assert_eq!(
            Requirement::new(k.as_str(), op, [digits.as_str()]),
            Err(RequirementError::NotAnInteger { key: k.clone(), value: digits.clone() })
        );
        let text = format!("{k}{}{digits}", if gt { '>' } else { '<' });
        let is_not_an_integer = matches!(
            Selector::parse(&text),
            Err(SelectorError::Requirement { error: RequirementError::NotAnInteger { .. }, .. })
        );
        prop_assert!(is_not_an_integer);
    }
}

/// A valid `metav1.LabelSelector` over pooled keys and values.
fn label_selector(keys: Vec<String>, values: Vec<String>) -> impl Strategy<Value = LabelSelector> {
    let key = prop::sample::select(keys);
    let value = prop::sample::select(values);
    let expression = (
        key.clone(),
        prop::sample::select(vec!["In", "NotIn", "Exists", "DoesNotExist"]),
        prop::collection::vec(value.clone(), 1..4),
    )
        .prop_map(|(key, op, values)| LabelSelectorRequirement {
            key,
            operator: op.to_owned(),
            values: if op.ends_with("In") {
                values
            } else {
                Vec::new()
            },
        });
    (
        prop::collection::btree_map(key, value, 0..3),
        prop::collection::vec(expression, 0..4),
    )
        .prop_map(|(match_labels, match_expressions)| LabelSelector {
            match_labels,
            match_expressions,
        })
}

/// The reference: Go's `LabelSelectorAsSelector(ls).Matches(labels)`.
fn label_selector_matches(ls: &LabelSelector, labels: &BTreeMap<String, String>) -> bool {
    ls.match_labels
        .iter()
        .all(|(k, v)| labels.get(k) == Some(v))
        && ls.match_expressions.iter().all(|e| {
            let have = labels.get(&e.key);
            let listed = have.is_some_and(|h| e.values.contains(h));
            match e.operator.as_str() {
                "In" => listed,
                "NotIn" => !listed,
                "Exists" => have.is_some(),
                "DoesNotExist" => have.is_none(),
                other => unreachable!("{other}"),
            }
        })
}

fn label_selector_case() -> impl Strategy<Value = (LabelSelector, Vec<BTreeMap<String, String>>)> {
    (
        prop::collection::vec(key(), 1..5),
        prop::collection::vec(value(), 1..5),
    )
        .prop_flat_map(|(keys, values)| {
            (
                label_selector(keys.clone(), values.clone()),
                label_sets(keys, values, vec!["1".to_owned()]),
            )
        })
}

proptest! {
    #![proptest_config(config(384))]

    #[test]
    fn label_selectors_convert_with_the_same_meaning((ls, label_sets) in label_selector_case()) {
        let sel = ls.to_selector().map_err(|e| TestCaseError::fail(format!("{ls:?}: {e}")))?;
        prop_assert_eq!(sel.is_empty(), ls.is_empty());
        prop_assert_eq!(
            sel.requirements().len(),
            ls.match_labels.len() + ls.match_expressions.len()
        );
        // The canonical string means the same (it sorts and de-duplicates set values).
        let reparsed = Selector::parse(&sel.to_string())
            .map_err(|e| TestCaseError::fail(format!("{sel}: {e}")))?;
        // Through JSON, and through k8s-openapi's LabelSelector.
        let json = serde_json::to_string(&ls).unwrap();
        prop_assert_eq!(&serde_json::from_str::<LabelSelector>(&json).unwrap(), &ls);
        let k8s: k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector =
            serde_json::from_str(&json).unwrap();
        prop_assert_eq!(Selector::try_from(&k8s), Ok(sel.clone()));
        for labels in &label_sets {
            let want = label_selector_matches(&ls, labels);
            prop_assert_eq!(sel.matches(labels), want, "{} on {:?}", sel, labels);
            prop_assert_eq!(reparsed.matches(labels), want, "{} on {:?}", reparsed, labels);
        }
    }

    #[test]
    fn invalid_label_selectors_are_typed_errors(
        (ls, _) in label_selector_case(),
        flaw in 0usize..5,
        operator in prop_oneof![
            prop::sample::select(vec!["in", "notin", "IN", "exists", "Equals", "=", "", " In"])
                .prop_map(String::from),
            "[A-Za-z]{1,12}",
        ],
        bad_key in prop::sample::select(vec!["", "-a", "a/b/c", "Upper.Case/a", "a b", "é"]),
    ) {
        let mut ls = ls;
        let bad = LabelSelectorRequirement { key: "k".into(), operator: "In".into(), values: vec!["v".into()] };
        let mut bad = match flaw {
            0 => LabelSelectorRequirement { operator: operator.clone(), ..bad },
            1 => LabelSelectorRequirement { values: Vec::new(), ..bad },
            2 => LabelSelectorRequirement { operator: "NotIn".into(), values: Vec::new(), ..bad },
            3 => LabelSelectorRequirement { operator: "Exists".into(), ..bad },
            _ => LabelSelectorRequirement { key: bad_key.into(), ..bad },
        };
        if flaw == 0 && ["In", "NotIn", "Exists", "DoesNotExist"].contains(&operator.as_str()) {
            bad.operator = "Gt".into();
        }
        ls.match_expressions.push(bad);
        let err = ls.to_selector().unwrap_err();
        let expected_kind = match flaw {
            0 => matches!(&err, RequirementError::UnknownOperator { operator: o } if *o == ls.match_expressions.last().unwrap().operator),
            1 | 2 => matches!(err, RequirementError::InvalidValues { count: 0, .. }),
            3 => matches!(err, RequirementError::InvalidValues { count: 1, .. }),
            _ => matches!(err, RequirementError::InvalidKey { .. }),
        };
        prop_assert!(expected_kind, "flaw {flaw}: {err:?}");
    }
}
