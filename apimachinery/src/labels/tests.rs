//! Selector tests, most ported from apimachinery's `pkg/labels/selector_test.go`.

use std::collections::{BTreeMap, HashMap};

use super::*;

fn set(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn req(key: &str, op: Operator, values: &[&str]) -> Requirement {
    Requirement::new(key, op, values.iter().copied())
        .unwrap_or_else(|e| panic!("{key} {op} {values:?}: {e}"))
}

fn parse(s: &str) -> Selector {
    Selector::parse(s).unwrap_or_else(|e| panic!("{s:?}: {e}"))
}

// TestSelectorParse
#[test]
fn parse_good_and_bad_strings() {
    let good = [
        "x=a,y=b,z=c",
        "",
        "x!=a,y=b",
        "x=",
        "x= ",
        "x=,z= ",
        "x= ,z= ",
        "!x",
        "x>1",
        "x>1,z<5",
    ];
    for s in good {
        assert_eq!(parse(s).to_string(), s.replace(' ', ""), "{s:?}");
    }
    for s in ["x=a||y=b", "x==a==b", "!x=a", "x<a"] {
        assert!(Selector::parse(s).is_err(), "{s:?} should not parse");
    }
}

// TestDeterministicParse
#[test]
fn parse_is_deterministic() {
    assert_eq!(parse("x=a,a=x").to_string(), parse("a=x,x=a").to_string());
    assert_eq!(parse("x=a,a=x"), parse("a=x,x=a"));
}

// TestEverything, TestSetIsEmpty
#[test]
fn everything_matches_everything() {
    assert!(Selector::everything().matches(&set(&[("x", "y")])));
    assert!(Selector::everything().is_empty());
    assert_eq!(Selector::everything().to_string(), "");
    assert!(Selector::from_set(&BTreeMap::new()).unwrap().is_empty());
}

// TestSelectorMatches
#[test]
fn selector_matches() {
    let yes =
        |s: &str, l: &[(&str, &str)]| assert!(parse(s).matches(&set(l)), "{s} should match {l:?}");
    let no = |s: &str, l: &[(&str, &str)]| {
        assert!(!parse(s).matches(&set(l)), "{s} should not match {l:?}")
    };
    yes("", &[("x", "y")]);
    yes("x=y", &[("x", "y")]);
    yes("x=y,z=w", &[("x", "y"), ("z", "w")]);
    yes("x!=y,z!=w", &[("x", "z"), ("z", "a")]);
    yes("notin=in", &[("notin", "in")]); // in and notin as identifiers
    yes("x", &[("x", "z")]);
    yes("!x", &[("y", "z")]);
    yes("x>1", &[("x", "2")]);
    yes("x<1", &[("x", "0")]);
    no("x=z", &[]);
    no("x=y", &[("x", "z")]);
    no("x=y,z=w", &[("x", "w"), ("z", "w")]);
    no("x!=y,z!=w", &[("x", "z"), ("z", "w")]);
    no("x", &[("y", "z")]);
    no("!x", &[("x", "z")]);
    no("x>1", &[("x", "0")]);
    no("x<1", &[("x", "2")]);

    let labels = [("foo", "bar"), ("baz", "blah")];
    yes("foo=bar", &labels);
    yes("baz=blah", &labels);
    yes("foo=bar,baz=blah", &labels);
    no("foo=blah", &labels);
    no("baz=bar", &labels);
    no("foo=bar,foobar=bar,baz=blah", &labels);
}

// TestSetMatches
#[test]
fn set_selectors_match() {
    let labels = set(&[("foo", "bar"), ("baz", "blah")]);
    for s in [
        vec![],
        vec![("foo", "bar")],
        vec![("baz", "blah")],
        vec![("foo", "bar"), ("baz", "blah")],
    ] {
        assert!(
            Selector::from_set(&set(&s)).unwrap().matches(&labels),
            "{s:?}"
        );
    }
    assert!(
        !Selector::from_set(&set(&[("foo", "blah")]))
            .unwrap()
            .matches(&labels)
    );
    let hashed: HashMap<String, String> = labels.clone().into_iter().collect();
    assert!(parse("foo=bar").matches(&hashed));
}

// TestValidatedSelectorFromSet
#[test]
fn validated_selector_from_set() {
    assert_eq!(
        Selector::from_set(&set(&[("key", "val")])).unwrap(),
        Selector::from(req("key", Operator::Equals, &["val"]))
    );
    let long = "axahm2EJ8Phiephe2eixohbee9eGeiyees1thuozi1xoh0GiuH3diewi8iem7Nui";
    assert_eq!(
        Selector::from_set(&set(&[("Key", long)])),
        Err(RequirementError::InvalidValue {
            key: "Key".into(),
            value: long.into(),
            reason: "must be no more than 63 characters"
        })
    );
}

// TestRequirementConstructor
#[test]
fn requirement_constructor() {
    use Operator::*;
    let cases: &[(&str, Operator, &[&str], bool)] = &[
        ("x", In, &[], false),
        ("x", NotIn, &[], false),
        ("x", In, &["foo"], true),
        ("x", NotIn, &["foo"], true),
        ("x", Exists, &[], true),
        ("x", DoesNotExist, &[], true),
        ("1foo", In, &["bar"], true),
        ("1234", In, &["bar"], true),
        ("y", GreaterThan, &["1"], true),
        ("z", LessThan, &["6"], true),
        ("foo", GreaterThan, &["bar"], false),
        ("barz", LessThan, &["blah"], false),
        (&"a".repeat(254), Exists, &[], false), // breaks the 253 / 63 length rules
        ("x", Equals, &["a", "b"], false),
        ("x", Exists, &["a"], false),
        ("x", GreaterThan, &["1", "2"], false),
        ("x", In, &["a b"], false),
        ("-x", Exists, &[], false),
    ];
    for (key, op, values, ok) in cases {
        let got = Requirement::new(*key, *op, values.iter().copied());
        assert_eq!(got.is_ok(), *ok, "{key} {op} {values:?}: {got:?}");
    }
    assert_eq!(
        Requirement::new("foo", GreaterThan, ["bar"]),
        Err(RequirementError::NotAnInteger {
            key: "foo".into(),
            value: "bar".into()
        })
    );
    let err = Requirement::is_in("x", Vec::<String>::new()).unwrap_err();
    assert_eq!(
        err.to_string(),
        "invalid values for key \"x\" with operator 'in' (0 given): for 'in', 'notin' operators, values set can't be empty"
    );
}

// TestToString
#[test]
fn requirements_render_canonically() {
    use Operator::*;
    let cases: Vec<(Vec<Requirement>, &str)> = vec![
        (
            vec![
                req("x", In, &["abc", "def"]),
                req("y", NotIn, &["jkl"]),
                req("z", Exists, &[]),
            ],
            "x in (abc,def),y notin (jkl),z",
        ),
        (
            vec![
                req("x", NotIn, &["abc", "def"]),
                req("y", NotEquals, &["jkl"]),
                req("z", DoesNotExist, &[]),
            ],
            "x notin (abc,def),y!=jkl,!z",
        ),
        (
            vec![
                req("x", NotIn, &["abc"]),
                req("y", In, &["jkl", "mno"]),
                req("z", NotIn, &[""]),
            ],
            "x notin (abc),y in (jkl,mno),z notin ()",
        ),
        (
            vec![
                req("x", Equals, &["abc"]),
                req("y", DoubleEquals, &["jkl"]),
                req("z", NotEquals, &["a"]),
                req("z", Exists, &[]),
            ],
            "x=abc,y==jkl,z!=a,z",
        ),
        (
            vec![
                req("x", GreaterThan, &["2"]),
                req("y", LessThan, &["8"]),
                req("z", Exists, &[]),
            ],
            "x>2,y<8,z",
        ),
        // Unsorted values are written sorted (Go's safeSort) and without duplicates (which
        // Go keeps), without changing the requirement.
        (vec![req("x", In, &["b", "a", "b"])], "x in (a,b)"),
    ];
    for (reqs, want) in cases {
        let sel: Selector = reqs.into_iter().collect();
        assert_eq!(sel.to_string(), want);
        assert_eq!(parse(want).to_string(), want, "{want} re-parses");
    }
    assert_eq!(req("x", In, &["b", "a"]).values(), ["b", "a"]);
    assert_eq!(req("x", In, &["b", "a", "b"]).values(), ["b", "a", "b"]);
}

#[test]
fn duplicate_empty_values_render_to_a_form_that_parses() {
    // Found by tests/properties_labels.rs: `x in (,,)` (three empty values, as Go's
    // `String` writes them) is rejected by the parser, Go's as ours.
    assert!(Selector::parse("x in (,,)").is_err());
    for values in [&["", "", ""][..], &["", "", "", "", ""], &["", "", "a", ""]] {
        let sel = Selector::from(req("x", Operator::NotIn, values));
        let text = sel.to_string();
        let again = Selector::parse(&text).unwrap_or_else(|e| panic!("{values:?} -> {text}: {e}"));
        let mut unique = values.to_vec();
        unique.sort();
        unique.dedup();
        assert_eq!(again.requirements()[0].values(), unique);
    }
    assert_eq!(
        Selector::from(req("x", Operator::In, &["", "", ""])).to_string(),
        "x in ()"
    );
}

// TestRequirementSelectorMatching
#[test]
fn requirement_selector_matching() {
    use Operator::*;
    let cases: Vec<(BTreeMap<String, String>, Vec<Requirement>, bool)> = vec![
        (
            set(&[("x", "foo"), ("y", "baz")]),
            vec![req("x", In, &["foo"]), req("y", NotIn, &["alpha"])],
            true,
        ),
        (
            set(&[("x", "foo"), ("y", "baz")]),
            vec![req("x", In, &["foo"]), req("y", In, &["alpha"])],
            false,
        ),
        (
            set(&[("y", "")]),
            vec![req("x", NotIn, &[""]), req("y", Exists, &[])],
            true,
        ),
        (
            set(&[("y", "")]),
            vec![req("x", DoesNotExist, &[]), req("y", Exists, &[])],
            true,
        ),
        (
            set(&[("y", "")]),
            vec![req("x", NotIn, &[""]), req("y", DoesNotExist, &[])],
            false,
        ),
        (set(&[("y", "baz")]), vec![req("x", In, &[""])], false),
        (
            set(&[("z", "2")]),
            vec![req("z", GreaterThan, &["1"])],
            true,
        ),
        (
            set(&[("z", "v2")]),
            vec![req("z", GreaterThan, &["1"])],
            false,
        ),
    ];
    for (labels, reqs, want) in cases {
        let sel: Selector = reqs.into_iter().collect();
        assert_eq!(sel.matches(&labels), want, "{sel} on {labels:?}");
    }
}

// TestSetSelectorParser
#[test]
fn set_selector_parser() {
    use Operator::*;
    // (input, expected requirements in key order or None when invalid)
    let cases: Vec<(&str, Option<Vec<Requirement>>)> = vec![
        ("", Some(vec![])),
        ("\rx", Some(vec![req("x", Exists, &[])])),
        (
            "this-is-a-dns.domain.com/key-with-dash",
            Some(vec![req(
                "this-is-a-dns.domain.com/key-with-dash",
                Exists,
                &[],
            )]),
        ),
        (
            "this-is-another-dns.domain.com/key-with-dash in (so,what)",
            Some(vec![req(
                "this-is-another-dns.domain.com/key-with-dash",
                In,
                &["so", "what"],
            )]),
        ),
        (
            "0.1.2.domain/99 notin (10.10.100.1, tick.tack.clock)",
            Some(vec![req(
                "0.1.2.domain/99",
                NotIn,
                &["10.10.100.1", "tick.tack.clock"],
            )]),
        ),
        ("foo  in\t (abc)", Some(vec![req("foo", In, &["abc"])])),
        ("x notin\n (abc)", Some(vec![req("x", NotIn, &["abc"])])),
        (
            "x  notin\t\t\t(abc,def)",
            Some(vec![req("x", NotIn, &["abc", "def"])]),
        ),
        ("x in (abc,def)", Some(vec![req("x", In, &["abc", "def"])])),
        ("x in (abc,)", Some(vec![req("x", In, &["", "abc"])])),
        ("x in ()", Some(vec![req("x", In, &[""])])),
        (
            "x notin (abc,,def),bar,z in (),w",
            Some(vec![
                req("bar", Exists, &[]),
                req("w", Exists, &[]),
                req("x", NotIn, &["", "abc", "def"]),
                req("z", In, &[""]),
            ]),
        ),
        (
            "x,y in (a)",
            Some(vec![req("x", Exists, &[]), req("y", In, &["a"])]),
        ),
        ("x=a", Some(vec![req("x", Equals, &["a"])])),
        ("x>1", Some(vec![req("x", GreaterThan, &["1"])])),
        ("x<7", Some(vec![req("x", LessThan, &["7"])])),
        (
            "x=a,y!=b",
            Some(vec![req("x", Equals, &["a"]), req("y", NotEquals, &["b"])]),
        ),
        (
            "x=a,y!=b,z in (h,i,j)",
            Some(vec![
                req("x", Equals, &["a"]),
                req("y", NotEquals, &["b"]),
                req("z", In, &["h", "i", "j"]),
            ]),
        ),
        ("x=a||y=b", None),
        ("x,,y", None),
        (",x,y", None),
        ("x nott in (y)", None),
        ("x notin ( )", Some(vec![req("x", NotIn, &[""])])),
        ("x notin (, a)", Some(vec![req("x", NotIn, &["", "a"])])),
        ("a in (xyz),", None),
        ("a in (xyz)b notin ()", None),
        ("a ", Some(vec![req("a", Exists, &[])])),
        (
            "a in (x,y,notin, z,in)",
            Some(vec![req("a", In, &["in", "notin", "x", "y", "z"])]),
        ),
        ("a in (xyz abc)", None),
        ("a notin(", None),
        ("a (", None),
        ("(", None),
    ];
    for (input, want) in cases {
        match (Selector::parse(input), want) {
            (Ok(sel), Some(reqs)) => assert_eq!(sel.requirements(), reqs.as_slice(), "{input:?}"),
            (Err(_), None) => {}
            (got, want) => panic!("{input:?}: got {got:?}, want {want:?}"),
        }
    }
}

// TestAdd
#[test]
fn add_keeps_key_order() {
    let sel = Selector::everything().and(req("key", Operator::In, &["value"]));
    assert_eq!(sel.requirements(), [req("key", Operator::In, &["value"])]);
    let sel =
        sel.and(req("key2", Operator::Equals, &["value2"]))
            .and(req("a", Operator::Exists, &[]));
    assert_eq!(sel.to_string(), "a,key in (value),key2=value2");
}

// TestRequiresExactMatch
#[test]
fn requires_exact_match() {
    let sel: Selector = vec![
        req("key", Operator::In, &["value", "value1"]),
        req("key2", Operator::In, &["value2"]),
    ]
    .into_iter()
    .collect();
    assert_eq!(sel.requires_exact_match("key"), None);
    assert_eq!(sel.requires_exact_match("key2"), Some("value2"));
    assert_eq!(
        parse("key=value").requires_exact_match("key"),
        Some("value")
    );
    assert_eq!(
        parse("key==value").requires_exact_match("key"),
        Some("value")
    );
    assert_eq!(parse("key!=value").requires_exact_match("key"), None);
    assert_eq!(
        parse("key in (value),key2=x").requires_exact_match("key"),
        Some("value")
    );
    assert_eq!(parse("other=x").requires_exact_match("key"), None);
}

#[test]
fn syntax_errors_name_position_and_expectation() {
    let syntax = |s: &str, position: usize, found: &str, expected: &'static str| {
        assert_eq!(
            Selector::parse(s),
            Err(SelectorError::Syntax {
                selector: s.to_owned(),
                position,
                found: found.to_owned(),
                expected,
            }),
            "{s:?}"
        );
    };
    syntax("x==a==b", 4, "==", "',' or end of string");
    syntax("!x=a", 2, "=", "',' or end of string");
    syntax(",x", 0, ",", "'!', identifier, or end of string");
    syntax("x,,y", 2, ",", "identifier after ','");
    syntax("a in (xyz),", 11, "end of string", "identifier after ','");
    syntax(
        "x nott in (y)",
        2,
        "nott",
        "one of in, notin, =, ==, !=, >, <",
    );
    syntax("a in (xyz abc)", 10, "abc", "',' or ')'");
    syntax("a notin(", 8, "end of string", "',', ')' or identifier");
    syntax("a in x", 5, "x", "'('");
    syntax("x=(", 2, "(", "identifier");
    syntax("!!x", 1, "!", "identifier");
    syntax("a (", 2, "(", "one of in, notin, =, ==, !=, >, <");
    syntax("(", 0, "(", "'!', identifier, or end of string");
}

#[test]
fn invalid_requirements_name_the_requirement() {
    let err = Selector::parse("ok=1, bad key=x").unwrap_err();
    assert!(
        matches!(err, SelectorError::Syntax { position: 10, .. }),
        "{err:?}"
    );
    let err = Selector::parse("ok=1, -bad=x").unwrap_err();
    assert_eq!(
        err,
        SelectorError::Requirement {
            selector: "ok=1, -bad=x".into(),
            position: 6,
            error: RequirementError::InvalidKey {
                key: "-bad".into(),
                reason: "name part must consist of alphanumeric characters, '-', '_' or '.', \
                         and must start and end with an alphanumeric character"
            }
        }
    );
    assert!(err.to_string().starts_with(
        "invalid label selector \"ok=1, -bad=x\": requirement at byte 6: invalid label key \"-bad\""
    ));
    assert!(std::error::Error::source(&err).is_some());
    let err = Selector::parse("x=a||y").unwrap_err();
    assert!(matches!(
        err,
        SelectorError::Requirement {
            error: RequirementError::InvalidValue { .. },
            ..
        }
    ));
    let err = Selector::parse("x<a").unwrap_err();
    assert!(matches!(
        err,
        SelectorError::Requirement {
            error: RequirementError::NotAnInteger { .. },
            ..
        }
    ));
    // Never a panic, whatever the input.
    for s in [
        "\u{0}",
        "é",
        "a in (é)",
        "=",
        "!",
        "!=",
        ")",
        "a notin",
        "a in (",
        "a in (,",
        "a=b=c",
        "a>",
        "a<b<c",
    ] {
        let _ = Selector::parse(s);
    }
}

#[test]
fn canonical_form_round_trips() {
    for s in [
        "a in (x,y),b notin (),c,!d,e=f,g==h,i!=j,k>3,l<40",
        "app.kubernetes.io/name=web,environment in (production,qa)",
    ] {
        let sel = parse(s);
        assert_eq!(parse(&sel.to_string()), sel, "{s}");
    }
    assert_eq!(
        parse("tier  in ( b , a ),  app = web").to_string(),
        "app=web,tier in (a,b)"
    );
}

#[test]
fn matches_objects_and_builders() {
    let mut meta = crate::ObjectMeta::named("p");
    meta.labels = set(&[("app", "web"), ("tier", "fe")]);
    let sel = Selector::from(Requirement::equals("app", "web").unwrap())
        .and(Requirement::not_in("tier", ["be"]).unwrap())
        .and(Requirement::does_not_exist("canary").unwrap())
        .and(Requirement::exists("tier").unwrap())
        .and(Requirement::not_equals("x", "y").unwrap())
        .and(Requirement::is_in("app", ["web", "api"]).unwrap());
    assert!(sel.matches_object(&meta));
    assert_eq!(
        sel.to_string(),
        "app=web,app in (api,web),!canary,tier notin (be),tier,x!=y"
    );
    assert_eq!(sel.requirements()[0].key(), "app");
    assert_eq!(sel.requirements()[0].operator(), Operator::Equals);
}

/// A tiny deterministic generator, so the fuzz tests below need no dependency.
pub(crate) fn random_strings(alphabet: &[&str], count: usize, max_len: usize) -> Vec<String> {
    let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    (0..count)
        .map(|_| {
            let len = (next() % (max_len as u64 + 1)) as usize;
            (0..len)
                .map(|_| alphabet[(next() % alphabet.len() as u64) as usize])
                .collect()
        })
        .collect()
}

#[test]
fn fuzz_never_panics_and_canonical_form_is_stable() {
    let alphabet = [
        "a", "b", "x", "1", "-", ".", "/", "_", "=", "==", "!", "!=", "(", ")", ",", " ", "\t",
        ">", "<", "in", "notin", " in ", " notin ", "é",
    ];
    let mut parsed = 0;
    for input in random_strings(&alphabet, 20_000, 12) {
        if let Ok(sel) = Selector::parse(&input) {
            parsed += 1;
            let canonical = sel.to_string();
            let again = Selector::parse(&canonical)
                .unwrap_or_else(|e| panic!("{input:?} -> {canonical:?}: {e}"));
            assert_eq!(again, sel, "{input:?} -> {canonical:?}");
            assert_eq!(again.to_string(), canonical);
        }
    }
    assert!(
        parsed > 100,
        "the generator should produce some valid selectors ({parsed})"
    );
}
