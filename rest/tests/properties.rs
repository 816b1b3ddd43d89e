//! Property tests of what the client decodes from the network and from files: the streaming
//! list decoder agrees with serde_json on any body cut into any chunks (valid, mutated or
//! arbitrary), and the kubeconfig parser and the configuration built from it never panic on
//! any document, valid or mangled.
//!
//! Seeded: the seed is printed; `PROPTEST_RNG_SEED` and `PROPTEST_CASES` run others, or more
//! (`PROPTEST_CASES=20000 cargo test --release -p clientgo-rest --test properties`).

use clientgo_apimachinery::ObjectList;
use clientgo_rest::config::{Kubeconfig, KubeconfigOptions, LoadedKubeconfig};
use clientgo_rest::list_decode::{ListBody, ListDecoder};
use clientgo_rest::{Config, DecodeError};
use proptest::prelude::*;
use serde_json::{Map, Value, json};

/// The seeded proptest configuration the workspace's property tests share.
#[path = "../../apimachinery/tests/support/mod.rs"]
mod support;
use support::config;

fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-z0-9-]{0,12}",
        "[\\[\\]{}\",:\\\\ a]{0,10}",
        Just("é→𝄞\\u0041\n".to_owned()),
    ]
}

fn value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        (-1e6f64..1e6).prop_map(Value::from),
        text().prop_map(Value::String),
    ];
    leaf.prop_recursive(5, 40, 5, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
            proptest::collection::btree_map(text(), inner, 0..5)
                .prop_map(|m| Value::Object(m.into_iter().collect::<Map<_, _>>())),
        ]
    })
}

/// A list body: its members in any order, an unknown one sometimes, items of any JSON type
/// (a `Value` list takes them all), written compactly or with whitespace.
fn list_body() -> impl Strategy<Value = Vec<u8>> {
    let members = (
        proptest::option::of("[A-Za-z]{1,10}List"),
        proptest::option::of(prop_oneof![Just("v1"), Just("apps/v1")]),
        proptest::option::of(("[0-9]{1,6}", proptest::option::of("[a-zA-Z0-9=]{1,12}"))),
        proptest::option::of(proptest::collection::vec(value(), 0..6)),
        proptest::option::of(value()),
    );
    (members, any::<u64>(), any::<bool>()).prop_map(
        |((kind, api_version, meta, items, unknown), order, pretty)| {
            let mut out: Vec<(String, Value)> = Vec::new();
            if let Some(kind) = kind {
                out.push(("kind".into(), json!(kind)));
            }
            if let Some(api_version) = api_version {
                out.push(("apiVersion".into(), json!(api_version)));
            }
            if let Some((rv, cont)) = meta {
                let mut meta = json!({"resourceVersion": rv});
                if let Some(cont) = cont {
                    meta["continue"] = json!(cont);
                }
                out.push(("metadata".into(), meta));
            }
            if let Some(items) = items {
                out.push(("items".into(), Value::Array(items)));
            }
            if let Some(unknown) = unknown {
                out.push(("extra".into(), unknown));
            }
            // A permutation of the members from `order`.
            let mut order = order;
            for i in (1..out.len()).rev() {
                out.swap(i, (order % (i as u64 + 1)) as usize);
                order /= i as u64 + 1;
            }
            let sep = if pretty { ",\n  " } else { "," };
            let body: Vec<String> = out
                .iter()
                .map(|(k, v)| {
                    let v = if pretty {
                        serde_json::to_string_pretty(v).unwrap()
                    } else {
                        v.to_string()
                    };
                    format!("{}:{v}", json!(k))
                })
                .collect();
            format!("{{{}}}", body.join(sep)).into_bytes()
        },
    )
}

fn mutate(mut body: Vec<u8>, edits: &[(usize, u8, u8)]) -> Vec<u8> {
    const USEFUL: &[u8] = b"{}[]\",:\\ 0an";
    for &(at, byte, how) in edits {
        let at = at % (body.len() + 1);
        let byte = if byte % 2 == 0 {
            USEFUL[usize::from(byte / 2) % USEFUL.len()]
        } else {
            byte
        };
        match how % 3 {
            0 if at < body.len() => body[at] = byte,
            1 => body.insert(at, byte),
            _ if at < body.len() => {
                body.remove(at);
            }
            _ => {}
        }
    }
    body
}

/// `body` cut at `cuts` (positions modulo its length, sorted, repeats allowed).
fn chunks<'a>(body: &'a [u8], cuts: &[usize]) -> Vec<&'a [u8]> {
    let mut at: Vec<usize> = cuts.iter().map(|c| c % (body.len() + 1)).collect();
    at.sort_unstable();
    let mut out = Vec::new();
    let mut start = 0;
    for end in at.into_iter().chain([body.len()]) {
        out.push(&body[start..end]);
        start = end;
    }
    out
}

fn decode<T: serde::de::DeserializeOwned>(
    decoder: ListDecoder<T>,
    body: &[u8],
    cuts: &[usize],
) -> Result<ListBody<T>, DecodeError> {
    let mut decoder = decoder;
    for chunk in chunks(body, cuts) {
        decoder.push(chunk)?;
    }
    decoder.finish()
}

/// The decoder's outcome as serde_json's: the list, or whether it failed.
fn as_list(result: Result<ListBody<Value>, DecodeError>) -> Result<ObjectList<Value>, ()> {
    match result {
        Ok(ListBody::List(list)) => Ok(list),
        Ok(ListBody::Status(_)) => panic!("no generated body is a Status"),
        Err(_) => Err(()),
    }
}

/// What the module promises to agree with: serde_json decoding the whole body, but for a
/// top-level array (serde takes a sequence for a struct; no server sends one).
fn serde_reading(body: &[u8]) -> Option<Result<ObjectList<Value>, ()>> {
    let first = body.iter().find(|b| !b" \t\r\n".contains(b));
    if first == Some(&b'[') {
        return None;
    }
    // A body that says it is a Status is returned as one, not as a list.
    if let Ok(Value::Object(map)) = serde_json::from_slice::<Value>(body) {
        if map.get("kind") == Some(&json!("Status")) {
            return None;
        }
    }
    Some(serde_json::from_slice::<ObjectList<Value>>(body).map_err(|_| ()))
}

proptest! {
    #![proptest_config(config(256))]

    /// Any list body, cut anywhere, decodes to what serde_json makes of the whole.
    #[test]
    fn any_cut_of_a_list_decodes_as_serde_json_does(
        body in list_body(),
        cuts in proptest::collection::vec(any::<usize>(), 0..12),
    ) {
        let expected = serde_reading(&body).unwrap();
        prop_assert!(expected.is_ok());
        prop_assert_eq!(as_list(decode(ListDecoder::new(), &body, &cuts)), expected);
    }

    /// A list body with bytes changed, inserted or removed: accepted exactly when serde_json
    /// accepts it, to the same list.
    #[test]
    fn mutated_lists_are_accepted_exactly_when_serde_json_accepts_them(
        body in list_body(),
        edits in proptest::collection::vec((any::<usize>(), any::<u8>(), any::<u8>()), 1..4),
        cuts in proptest::collection::vec(any::<usize>(), 0..8),
    ) {
        let body = mutate(body, &edits);
        if let Some(expected) = serde_reading(&body) {
            prop_assert_eq!(as_list(decode(ListDecoder::new(), &body, &cuts)), expected);
        }
    }

    /// Arbitrary bytes, cut anywhere, under a small item cap, skipping or not: an error or a
    /// list, never a panic.
    #[test]
    fn arbitrary_bytes_never_panic(
        body in proptest::collection::vec(any::<u8>(), 0..300),
        cuts in proptest::collection::vec(any::<usize>(), 0..8),
        skipping in any::<bool>(),
    ) {
        let mut decoder = ListDecoder::<Value>::new().with_max_item_bytes(32);
        if skipping {
            decoder = decoder.skipping_undecodable();
        }
        let _ = decode(decoder, &body, &cuts);
    }

    /// Skipping, a typed list keeps exactly the items that decode on their own, in order, and
    /// names the index of each one left out.
    #[test]
    fn skipping_keeps_exactly_the_items_that_decode(
        items in proptest::collection::vec(prop_oneof![
            "[a-z]{1,8}".prop_map(|name| json!({"name": name})),
            value(),
        ], 0..10),
        cuts in proptest::collection::vec(any::<usize>(), 0..8),
    ) {
        #[derive(Debug, PartialEq, serde::Deserialize)]
        struct Named {
            name: String,
        }
        let body = json!({"kind": "NamedList", "items": items}).to_string();
        let mut decoder = ListDecoder::<Named>::new().skipping_undecodable();
        for chunk in chunks(body.as_bytes(), &cuts) {
            decoder.push(chunk).unwrap();
        }
        let left_out: Vec<String> = decoder.skipped().iter().map(|e| e.to_string()).collect();
        let Ok(ListBody::List(list)) = decoder.finish() else {
            panic!("a list of valid JSON items decodes");
        };
        let expected: Vec<Named> = items
            .iter()
            .filter_map(|item| serde_json::from_value(item.clone()).ok())
            .collect();
        prop_assert_eq!(list.items, expected);
        let bad = items
            .iter()
            .filter(|item| serde_json::from_value::<Named>((*item).clone()).is_err())
            .count();
        prop_assert_eq!(left_out.len(), bad);
    }
}

/// A kubeconfig with fields of the right types, as YAML: clusters `c<i>`, users `u<i>` and
/// contexts `x<i>`, each context naming a cluster and a user that may or may not exist.
fn kubeconfig() -> impl Strategy<Value = String> {
    let cluster = (
        prop_oneof![Just("https"), Just("http")],
        "[a-z]{1,8}",
        proptest::option::of(1u16..),
        any::<bool>(),
    );
    let user = proptest::option::of("[A-Za-z0-9]{1,16}");
    let context = (0..4usize, 0..4usize, proptest::option::of("[a-z]{1,6}"));
    (
        proptest::collection::vec(cluster, 0..3),
        proptest::collection::vec(user, 0..3),
        proptest::collection::vec(context, 0..3),
        proptest::option::of(0..4usize),
    )
        .prop_map(|(clusters, users, contexts, current)| {
            let mut yaml = String::from("apiVersion: v1\nkind: Config\n");
            if let Some(current) = current {
                yaml.push_str(&format!("current-context: x{current}\n"));
            }
            yaml.push_str("clusters:\n");
            for (i, (scheme, host, port, insecure)) in clusters.into_iter().enumerate() {
                let port = port.map(|p| format!(":{p}")).unwrap_or_default();
                yaml.push_str(&format!(
                    "- name: c{i}\n  cluster:\n    server: {scheme}://{host}{port}\n    insecure-skip-tls-verify: {insecure}\n"
                ));
            }
            yaml.push_str("users:\n");
            for (i, token) in users.into_iter().enumerate() {
                yaml.push_str(&format!("- name: u{i}\n  user:\n"));
                match token {
                    Some(token) => yaml.push_str(&format!("    token: {token}\n")),
                    None => yaml.push_str("    username: admin\n    password: secret\n"),
                }
            }
            yaml.push_str("contexts:\n");
            for (i, (cluster, user, namespace)) in contexts.into_iter().enumerate() {
                yaml.push_str(&format!(
                    "- name: x{i}\n  context:\n    cluster: c{cluster}\n    user: u{user}\n"
                ));
                if let Some(namespace) = namespace {
                    yaml.push_str(&format!("    namespace: {namespace}\n"));
                }
            }
            yaml
        })
}

/// Parses `bytes` as a kubeconfig and, when that works, builds a configuration from it with
/// each of its contexts: never a panic, whatever the outcome.
fn parse_and_build(bytes: &[u8]) -> Result<usize, String> {
    let kubeconfig = Kubeconfig::parse(bytes, None).map_err(|e| e.to_string())?;
    let mut contexts: Vec<Option<String>> = kubeconfig.contexts.keys().cloned().map(Some).collect();
    contexts.push(None);
    let loaded = LoadedKubeconfig {
        kubeconfig,
        ..LoadedKubeconfig::default()
    };
    let mut built = 0;
    for context in contexts {
        let options = KubeconfigOptions {
            context,
            ..KubeconfigOptions::default()
        };
        if Config::from_loaded_kubeconfig(&loaded, &options).is_ok() {
            built += 1;
        }
    }
    Ok(built)
}

proptest! {
    #![proptest_config(config(256))]

    /// A well-formed kubeconfig parses, and every context naming a known cluster and user
    /// builds a configuration.
    #[test]
    fn generated_kubeconfigs_parse_and_build(yaml in kubeconfig()) {
        let outcome = parse_and_build(yaml.as_bytes());
        prop_assert!(outcome.is_ok(), "{outcome:?}\n{yaml}");
    }

    /// The same, mangled (bytes changed, inserted, removed), or arbitrary bytes: an error or
    /// a configuration, never a panic.
    #[test]
    fn mangled_kubeconfigs_never_panic(
        yaml in kubeconfig(),
        edits in proptest::collection::vec((any::<usize>(), any::<u8>(), any::<u8>()), 1..6),
        noise in proptest::collection::vec(any::<u8>(), 0..200),
    ) {
        let _ = parse_and_build(&mutate(yaml.into_bytes(), &edits));
        let _ = parse_and_build(&noise);
    }
}
