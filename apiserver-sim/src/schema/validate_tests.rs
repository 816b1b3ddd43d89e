//! The schema validator's causes, each as kube-apiserver 1.36.2 words it.

use super::*;
use serde_json::json;

fn causes(schema: Value, value: Value) -> Vec<(String, String, String)> {
    let mut out = Vec::new();
    validate(&schema, &value, "", &mut out);
    out.into_iter()
        .map(|e| (e.reason.to_owned(), e.field, e.detail))
        .collect()
}

fn one(reason: &str, field: &str, detail: &str) -> Vec<(String, String, String)> {
    vec![(reason.to_owned(), field.to_owned(), detail.to_owned())]
}

#[test]
fn messages_are_kube_apiserver_1_36s() {
    let spec = |props: Value| json!({"type": "object", "properties": {"spec": {"type": "object", "properties": props}}});
    // Each observed on kube-apiserver 1.36.2.
    assert_eq!(
        causes(
            spec(json!({"size": {"type": "integer"}})),
            json!({"spec": {"size": "big"}})
        ),
        one(
            "FieldValueTypeInvalid",
            "spec.size",
            "Invalid value: \"string\": spec.size in body must be of type integer: \"string\""
        )
    );
    assert_eq!(
        causes(
            spec(json!({"n": {"type": "string", "maxLength": 5, "pattern": "^[a-z]+$"}})),
            json!({"spec": {"n": "ABCDEFG"}})
        ),
        one(
            "FieldValueTooLong",
            "spec.n",
            "Too long: may not be more than 5 bytes"
        )
    );
    assert_eq!(
        causes(
            spec(json!({"n": {"type": "string", "pattern": "^[a-z]+$"}})),
            json!({"spec": {"n": "AB"}})
        ),
        one(
            "FieldValueInvalid",
            "spec.n",
            "Invalid value: \"AB\": spec.n in body should match '^[a-z]+$'"
        )
    );
    assert_eq!(
        causes(
            spec(
                json!({"a": {"type": "integer", "maximum": 5, "exclusiveMaximum": true,
                "multipleOf": 2, "enum": [2, 4]}})
            ),
            json!({"spec": {"a": 5}})
        ),
        vec![
            (
                "FieldValueInvalid".into(),
                "spec.a".into(),
                "Invalid value: 5: spec.a in body should be a multiple of 2".into()
            ),
            (
                "FieldValueInvalid".into(),
                "spec.a".into(),
                "Invalid value: 5: spec.a in body should be less than 5".into()
            ),
            (
                "FieldValueNotSupported".into(),
                "spec.a".into(),
                "Unsupported value: 5: supported values: \"2\", \"4\"".into()
            ),
        ]
    );
    assert_eq!(
        causes(
            spec(json!({"c": {"type": "object", "maxProperties": 1,
            "additionalProperties": {"type": "integer"}}})),
            json!({"spec": {"c": {"p": 1, "q": 2}}})
        ),
        one(
            "FieldValueTooMany",
            "spec.c",
            "Too many: 2: must have at most 1 item"
        )
    );
    assert_eq!(
        causes(
            spec(
                json!({"t": {"type": "array", "x-kubernetes-list-type": "set",
            "items": {"type": "string"}}})
            ),
            json!({"spec": {"t": ["a", "a"]}})
        ),
        one("FieldValueDuplicate", "spec.t[1]", "Duplicate value: \"a\"")
    );
    assert_eq!(
        causes(json!({"type": "object", "required": ["spec"]}), json!({})),
        one("FieldValueRequired", "spec", "Required value")
    );
    assert_eq!(
        causes(
            spec(json!({"i": {"x-kubernetes-int-or-string": true}})),
            json!({"spec": {"i": 1.5}})
        ),
        one(
            "FieldValueTypeInvalid",
            "spec.i",
            "Invalid value: \"number\": spec.i in body must be of type integer,string: \"number\""
        )
    );
}

#[test]
fn formats_and_map_list_keys_as_kube_apiserver_1_36_checks_them() {
    let spec = |props: Value| json!({"type": "object", "properties": {"spec": {"type": "object", "properties": props}}});
    let date_time = spec(json!({"t": {"type": "string", "format": "date-time"}}));
    for good in [
        "2030-01-01T00:00:00Z",
        "2030-01-01T00:00:00.5+02:00",
        "2030-01-01t10:00:00",
    ] {
        assert!(
            causes(date_time.clone(), json!({"spec": {"t": good}})).is_empty(),
            "{good}"
        );
    }
    assert_eq!(
        causes(date_time, json!({"spec": {"t": "soon"}})),
        one(
            "FieldValueTypeInvalid",
            "spec.t",
            "Invalid value: \"soon\": spec.t in body must be of type date-time: \"soon\""
        )
    );
    let int32 = spec(json!({"n": {"type": "integer", "format": "int32"}}));
    assert_eq!(
        causes(int32, json!({"spec": {"n": 1.5}})),
        vec![
            (
                "FieldValueTypeInvalid".to_owned(),
                "spec.n".to_owned(),
                "Invalid value: \"float64\": spec.n in body must be of type int32: \"float64\""
                    .to_owned()
            ),
            (
                "FieldValueInvalid".to_owned(),
                "<nil>".to_owned(),
                "Invalid value: \"\": Checked value must be of type integer with format int32 in spec.n"
                    .to_owned()
            ),
        ]
    );
    let ports = spec(
        json!({"p": {"type": "array", "x-kubernetes-list-type": "map",
        "x-kubernetes-list-map-keys": ["name"],
        "items": {"type": "object", "properties": {"name": {"type": "string"}}}}}),
    );
    assert_eq!(
        causes(
            ports,
            json!({"spec": {"p": [{"name": "a"}, {"name": "b"}, {"name": "a"}]}})
        ),
        one(
            "FieldValueDuplicate",
            "spec.p[2]",
            "Duplicate value: {\"name\":\"a\"}"
        )
    );
}
