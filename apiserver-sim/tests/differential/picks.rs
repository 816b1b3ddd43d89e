//! What a step's `Pick`s take from an object answer (or a watch event's object): values at
//! JSON pointers, the names or order of named items, field sets, items by name.

use serde_json::{Map, Value};

use super::step::Pick;

pub fn pick_map(object: &Value, picks: &[Pick]) -> Map<String, Value> {
    let mut out = Map::new();
    for pick in picks {
        let (label, value) = match pick {
            Pick::At(p) => (dotted(p), object.pointer(p).cloned()),
            Pick::Names(p) => (
                format!("names({})", dotted(p)),
                object
                    .pointer(p)
                    .and_then(Value::as_array)
                    .map(|items| names(items)),
            ),
            Pick::SortedByName(p) => (
                format!("sorted({})", dotted(p)),
                object.pointer(p).cloned().map(|mut v| {
                    sort_named(&mut v);
                    v
                }),
            ),
            Pick::SortedBy(p, key) => (
                format!("sorted({}, {key})", dotted(p)),
                object.pointer(p).cloned().map(|mut v| {
                    if let Value::Array(items) = &mut v {
                        items.sort_by(|a, b| a[*key].to_string().cmp(&b[*key].to_string()));
                    }
                    v
                }),
            ),
            Pick::Keys(p) => (
                format!("keys({})", dotted(p)),
                object.pointer(p).and_then(Value::as_object).map(|fields| {
                    let mut keys: Vec<&String> = fields.keys().collect();
                    keys.sort();
                    keys.into_iter().map(|k| Value::from(k.as_str())).collect()
                }),
            ),
            Pick::Named(p, wanted) => (
                format!("named({})", dotted(p)),
                object.pointer(p).and_then(Value::as_array).map(|items| {
                    let by_name = wanted.iter().map(|name| {
                        let item = items.iter().find(|i| i["name"] == *name);
                        ((*name).to_owned(), item.cloned().unwrap_or(Value::Null))
                    });
                    Value::Object(by_name.collect())
                }),
            ),
            Pick::Order(p) => (
                format!("order({})", dotted(p)),
                object.pointer(p).and_then(Value::as_array).map(|items| {
                    let mut order = Map::new();
                    order.insert("names".to_owned(), names(items));
                    for item in items {
                        let Some(fields) = item.as_object() else {
                            continue;
                        };
                        for (key, nested) in fields {
                            if let Some(nested) = nested.as_array().filter(|a| all_named(a)) {
                                let label =
                                    format!("{}.{key}", item["name"].as_str().unwrap_or(""));
                                order.insert(label, names(nested));
                            }
                        }
                    }
                    Value::Object(order)
                }),
            ),
        };
        out.insert(label, value.unwrap_or(Value::Null));
    }
    out
}

fn names(items: &[Value]) -> Value {
    items.iter().map(|i| i["name"].clone()).collect()
}

fn all_named(items: &[Value]) -> bool {
    !items.is_empty() && items.iter().all(|i| i["name"].is_string())
}

/// Sorts every array of named items in `v` by name, recursively.
fn sort_named(v: &mut Value) {
    match v {
        Value::Array(items) => {
            items.iter_mut().for_each(sort_named);
            if all_named(items) {
                items.sort_by(|a, b| a["name"].as_str().cmp(&b["name"].as_str()));
            }
        }
        Value::Object(fields) => fields.values_mut().for_each(sort_named),
        _ => {}
    }
}

/// `/spec/replicas` as `spec.replicas`, a label that is one segment of a compared path.
fn dotted(pointer: &str) -> String {
    pointer.trim_start_matches('/').replace('/', ".")
}

pub fn apply_picks(body: &Value, picks: &[Pick]) -> Value {
    let mut out = pick_map(body, picks);
    out.insert("kind".into(), body["kind"].clone());
    Value::Object(out)
}
