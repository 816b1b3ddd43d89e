//! The shapes field ownership needs to know: which objects are structs (fields declared by
//! the type) and which are maps (free keys, each key owned on its own), which lists merge
//! by key, which are sets and which are atomic.
//!
//! Mirrors the structured-merge-diff schemas kube-apiserver builds from the OpenAPI of
//! built-in types (`+listType`, `+listMapKey`, `+mapType`, `+structType`) and from a CRD's
//! `openAPIV3Schema`. Reduced to the types the sim serves: `ObjectMeta` for every type;
//! for built-ins, the maps, keyed lists and atomic structs of core, apps and coordination
//! types; custom resources' objects are structs and their lists atomic (a structural
//! schema without `x-kubernetes-list-type`). Differences: shapes are chosen by field name,
//! not by a full schema, so a custom resource schema's `additionalProperties` maps and
//! list types are not known.

/// The shape of one value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// An object whose keys are declared fields: a non-empty one is owned through its fields.
    Struct,
    /// An object with free keys (`map[string]T`): every key is owned itself.
    Map,
    /// Owned as a whole (scalars, atomic structs and lists).
    Atomic,
    /// A list whose items merge by these key fields (with the default of a key field a
    /// type declares, used when an item omits it).
    Keyed(&'static [(&'static str, Option<&'static str>)]),
    /// A list of distinct scalars, each owned itself.
    Set,
}

const NAME: &[(&str, Option<&str>)] = &[("name", None)];

/// The shape of field `field` of a struct reached through `parent` (the field names from
/// the root, list items skipped), for a built-in type or a custom resource.
pub fn field_shape(builtin: bool, parent: &[&str], field: &str) -> Shape {
    let in_meta = parent.last() == Some(&"metadata");
    if in_meta {
        return match field {
            "labels" | "annotations" => Shape::Map,
            "finalizers" => Shape::Set,
            "ownerReferences" => Shape::Keyed(&[("uid", None)]),
            "managedFields" => Shape::Atomic,
            _ => Shape::Struct,
        };
    }
    if !builtin {
        return Shape::Struct;
    }
    match field {
        "data" | "binaryData" | "stringData" | "nodeSelector" | "limits" | "requests"
        | "overhead" | "capacity" | "allocatable" | "matchLabels" => Shape::Map,
        "selector" | "labelSelector" | "namespaceSelector" | "podAffinityTerm"
        | "involvedObject" | "regarding" | "related" => Shape::Atomic,
        "containers"
        | "initContainers"
        | "ephemeralContainers"
        | "volumes"
        | "env"
        | "imagePullSecrets"
        | "resourceClaims"
        | "schedulingGates" => Shape::Keyed(NAME),
        "ports" if parent.last().is_some_and(|p| p.ends_with("ontainers")) => {
            Shape::Keyed(&[("containerPort", None), ("protocol", Some("TCP"))])
        }
        "volumeMounts" => Shape::Keyed(&[("mountPath", None)]),
        "volumeDevices" => Shape::Keyed(&[("devicePath", None)]),
        "conditions" => Shape::Keyed(&[("type", None)]),
        "hostAliases" => Shape::Keyed(&[("ip", None)]),
        "topologySpreadConstraints" => {
            Shape::Keyed(&[("topologyKey", None), ("whenUnsatisfiable", None)])
        }
        _ => Shape::Struct,
    }
}

/// The objects a built-in type's Go zero value already has (struct fields without
/// `omitempty`, and `containers`, encoded as `null`): a create, compared with that zero
/// value, does not add them, so its manager does not own them themselves (no `.`).
pub fn zero_value_paths(group: &str, plural: &str) -> &'static [&'static [&'static str]] {
    const POD_TEMPLATE: [&[&str]; 5] = [
        &["spec"],
        &["spec", "template"],
        &["spec", "template", "metadata"],
        &["spec", "template", "spec"],
        &["spec", "template", "spec", "containers"],
    ];
    match (group, plural) {
        ("", "pods") => &[&["spec"], &["spec", "containers"], &["status"]],
        ("", "namespaces") => &[&["spec"], &["status"]],
        ("", "events") => &[&["involvedObject"], &["source"]],
        ("events.k8s.io", "events") => &[&["regarding"], &["deprecatedSource"]],
        ("coordination.k8s.io", "leases") => &[&["spec"]],
        ("apps", "replicasets") => &[
            POD_TEMPLATE[0],
            POD_TEMPLATE[1],
            POD_TEMPLATE[2],
            POD_TEMPLATE[3],
            POD_TEMPLATE[4],
            &["status"],
        ],
        ("apps", "deployments") => &[
            POD_TEMPLATE[0],
            POD_TEMPLATE[1],
            POD_TEMPLATE[2],
            POD_TEMPLATE[3],
            POD_TEMPLATE[4],
            &["spec", "strategy"],
            &["status"],
        ],
        _ => &[],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes() {
        assert_eq!(field_shape(false, &["metadata"], "labels"), Shape::Map);
        assert_eq!(field_shape(false, &["metadata"], "finalizers"), Shape::Set);
        assert_eq!(field_shape(false, &[], "data"), Shape::Struct);
        assert_eq!(field_shape(true, &[], "data"), Shape::Map);
        assert_eq!(field_shape(true, &["spec"], "selector"), Shape::Atomic);
        assert!(matches!(
            field_shape(true, &["spec", "template", "spec", "containers"], "ports"),
            Shape::Keyed([("containerPort", None), ("protocol", Some("TCP"))])
        ));
        assert_eq!(field_shape(true, &["spec"], "ports"), Shape::Struct);
    }
}
