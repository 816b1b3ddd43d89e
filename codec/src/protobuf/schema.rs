//! The messages this codec knows, by field number: how each field of Kubernetes' protobuf
//! (the `generated.proto` files of `k8s.io/api` and `k8s.io/apimachinery`) maps to the JSON
//! kube-apiserver writes for the same object.
//!
//! Go's JSON drops a field tagged `omitempty` when it holds its zero value, but gogo-protobuf
//! writes every non-pointer field, zero or not (an object with no `generateName` carries an
//! empty field 2 in its metadata). [`Emit`] says which rule gives the JSON: a pointer field
//! appears in the JSON exactly when it is on the wire; a plain one tagged `omitempty`, only
//! when it is not zero.
//!
//! To teach the codec a kind: add its message here, list it in [`message_for`], and, for a
//! resource whose lists and watches should be asked for in protobuf, in [`serves`]. Its
//! fields must all be of the [`Kind`]s below: a kind with a field the codec cannot render
//! stays JSON.

/// A protobuf message and the JSON object it becomes.
#[derive(Debug)]
pub(crate) struct Message {
    /// The Go type, for errors.
    pub name: &'static str,
    /// Its fields, by ascending number.
    pub fields: &'static [Field],
}

/// One field of a message.
#[derive(Debug)]
pub(crate) struct Field {
    pub number: u32,
    /// The JSON key.
    pub json: &'static str,
    pub kind: Kind,
    pub emit: Emit,
}

/// What a field holds and how it is written in JSON.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Kind {
    /// A UTF-8 string.
    String,
    Bool,
    /// An `int32` or `int64` varint (two's complement for negatives).
    Int,
    /// A `metav1.Time` message (`seconds` 1, `nanos` 2), written in RFC 3339 to the second;
    /// the zero time is left out, as kube-apiserver 1.36 leaves it out.
    Time,
    /// A `metav1.MicroTime` message (`seconds` 1, `nanos` 2), written in RFC 3339 with six
    /// fractional digits, as Go writes it; the zero time is `null`.
    MicroTime,
    /// A `metav1.FieldsV1` message: its field 1 is JSON, written as it is.
    RawJson,
    Message(&'static Message),
    /// `map<string, string>`: repeated entries of key 1, value 2.
    StringMap,
    /// `map<string, bytes>`, values in base64.
    BytesMap,
    /// `repeated string`.
    Strings,
    /// `repeated` messages.
    Messages(&'static Message),
}

/// When a field appears in the JSON.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Emit {
    /// Whenever it is on the wire: Go pointer fields, and fields without `omitempty`.
    Present,
    /// When it is on the wire and not zero (empty string, 0, false, no entries).
    NonZero,
}

use Emit::{NonZero, Present};

const fn f(number: u32, json: &'static str, kind: Kind, emit: Emit) -> Field {
    Field {
        number,
        json,
        kind,
        emit,
    }
}

/// `metav1.OwnerReference`.
static OWNER_REFERENCE: Message = Message {
    name: "OwnerReference",
    fields: &[
        f(1, "kind", Kind::String, Present),
        f(3, "name", Kind::String, Present),
        f(4, "uid", Kind::String, Present),
        f(5, "apiVersion", Kind::String, Present),
        f(6, "controller", Kind::Bool, Present),
        f(7, "blockOwnerDeletion", Kind::Bool, Present),
    ],
};

/// `metav1.ManagedFieldsEntry`.
static MANAGED_FIELDS_ENTRY: Message = Message {
    name: "ManagedFieldsEntry",
    fields: &[
        f(1, "manager", Kind::String, NonZero),
        f(2, "operation", Kind::String, NonZero),
        f(3, "apiVersion", Kind::String, NonZero),
        f(4, "time", Kind::Time, Present),
        f(6, "fieldsType", Kind::String, NonZero),
        f(7, "fieldsV1", Kind::RawJson, Present),
        f(8, "subresource", Kind::String, NonZero),
    ],
};

/// `metav1.ObjectMeta`.
pub(crate) static OBJECT_META: Message = Message {
    name: "ObjectMeta",
    fields: &[
        f(1, "name", Kind::String, NonZero),
        f(2, "generateName", Kind::String, NonZero),
        f(3, "namespace", Kind::String, NonZero),
        f(4, "selfLink", Kind::String, NonZero),
        f(5, "uid", Kind::String, NonZero),
        f(6, "resourceVersion", Kind::String, NonZero),
        f(7, "generation", Kind::Int, NonZero),
        f(8, "creationTimestamp", Kind::Time, Present),
        f(9, "deletionTimestamp", Kind::Time, Present),
        f(10, "deletionGracePeriodSeconds", Kind::Int, Present),
        f(11, "labels", Kind::StringMap, NonZero),
        f(12, "annotations", Kind::StringMap, NonZero),
        f(
            13,
            "ownerReferences",
            Kind::Messages(&OWNER_REFERENCE),
            NonZero,
        ),
        f(14, "finalizers", Kind::Strings, NonZero),
        f(
            17,
            "managedFields",
            Kind::Messages(&MANAGED_FIELDS_ENTRY),
            NonZero,
        ),
    ],
};

/// `metav1.ListMeta`.
static LIST_META: Message = Message {
    name: "ListMeta",
    fields: &[
        f(1, "selfLink", Kind::String, NonZero),
        f(2, "resourceVersion", Kind::String, NonZero),
        f(3, "continue", Kind::String, NonZero),
        f(4, "remainingItemCount", Kind::Int, Present),
    ],
};

/// `metav1.StatusCause`.
static STATUS_CAUSE: Message = Message {
    name: "StatusCause",
    fields: &[
        f(1, "reason", Kind::String, NonZero),
        f(2, "message", Kind::String, NonZero),
        f(3, "field", Kind::String, NonZero),
    ],
};

/// `metav1.StatusDetails`.
static STATUS_DETAILS: Message = Message {
    name: "StatusDetails",
    fields: &[
        f(1, "name", Kind::String, NonZero),
        f(2, "group", Kind::String, NonZero),
        f(3, "kind", Kind::String, NonZero),
        f(4, "causes", Kind::Messages(&STATUS_CAUSE), NonZero),
        f(5, "retryAfterSeconds", Kind::Int, NonZero),
        f(6, "uid", Kind::String, NonZero),
    ],
};

/// `metav1.Status`: what a watch's `ERROR` event and an error response carry.
static STATUS: Message = Message {
    name: "Status",
    fields: &[
        f(1, "metadata", Kind::Message(&LIST_META), Present),
        f(2, "status", Kind::String, NonZero),
        f(3, "message", Kind::String, NonZero),
        f(4, "reason", Kind::String, NonZero),
        f(5, "details", Kind::Message(&STATUS_DETAILS), Present),
        f(6, "code", Kind::Int, NonZero),
    ],
};

/// `corev1.ConfigMap`.
static CONFIG_MAP: Message = Message {
    name: "ConfigMap",
    fields: &[
        f(1, "metadata", Kind::Message(&OBJECT_META), Present),
        f(2, "data", Kind::StringMap, NonZero),
        f(3, "binaryData", Kind::BytesMap, NonZero),
        f(4, "immutable", Kind::Bool, Present),
    ],
};

/// `corev1.ConfigMapList`.
static CONFIG_MAP_LIST: Message = Message {
    name: "ConfigMapList",
    fields: &[
        f(1, "metadata", Kind::Message(&LIST_META), Present),
        f(2, "items", Kind::Messages(&CONFIG_MAP), Present),
    ],
};

/// `corev1.Secret`.
static SECRET: Message = Message {
    name: "Secret",
    fields: &[
        f(1, "metadata", Kind::Message(&OBJECT_META), Present),
        f(2, "data", Kind::BytesMap, NonZero),
        f(3, "type", Kind::String, NonZero),
        f(4, "stringData", Kind::StringMap, NonZero),
        f(5, "immutable", Kind::Bool, Present),
    ],
};

/// `corev1.SecretList`.
static SECRET_LIST: Message = Message {
    name: "SecretList",
    fields: &[
        f(1, "metadata", Kind::Message(&LIST_META), Present),
        f(2, "items", Kind::Messages(&SECRET), Present),
    ],
};

/// `coordinationv1.LeaseSpec`: every field a pointer.
static LEASE_SPEC: Message = Message {
    name: "LeaseSpec",
    fields: &[
        f(1, "holderIdentity", Kind::String, Present),
        f(2, "leaseDurationSeconds", Kind::Int, Present),
        f(3, "acquireTime", Kind::MicroTime, Present),
        f(4, "renewTime", Kind::MicroTime, Present),
        f(5, "leaseTransitions", Kind::Int, Present),
        f(6, "strategy", Kind::String, Present),
        f(7, "preferredHolder", Kind::String, Present),
    ],
};

/// `coordinationv1.Lease`: what leader election reads and writes every few seconds.
static LEASE: Message = Message {
    name: "Lease",
    fields: &[
        f(1, "metadata", Kind::Message(&OBJECT_META), Present),
        f(2, "spec", Kind::Message(&LEASE_SPEC), Present),
    ],
};

/// `coordinationv1.LeaseList`.
static LEASE_LIST: Message = Message {
    name: "LeaseList",
    fields: &[
        f(1, "metadata", Kind::Message(&LIST_META), Present),
        f(2, "items", Kind::Messages(&LEASE), Present),
    ],
};

/// The message of the kind an envelope names (its `apiVersion` and `kind` as they came).
pub(crate) fn message_for(api_version: &[u8], kind: &[u8]) -> Option<&'static Message> {
    match (api_version, kind) {
        (b"v1", b"ConfigMap") => Some(&CONFIG_MAP),
        (b"v1", b"ConfigMapList") => Some(&CONFIG_MAP_LIST),
        (b"v1", b"Secret") => Some(&SECRET),
        (b"v1", b"SecretList") => Some(&SECRET_LIST),
        (b"coordination.k8s.io/v1", b"Lease") => Some(&LEASE),
        (b"coordination.k8s.io/v1", b"LeaseList") => Some(&LEASE_LIST),
        // kube-apiserver names a Status in protobuf as `v1` of the core group.
        (b"v1" | b"meta.k8s.io/v1", b"Status") => Some(&STATUS),
        _ => None,
    }
}

impl Message {
    /// A list's `items` field and the message of each item; `None` for a message that is
    /// not a list.
    pub(crate) fn list_items(&'static self) -> Option<(&'static Field, &'static Message)> {
        self.fields.iter().find_map(|field| match field.kind {
            Kind::Messages(item) if field.json == "items" => Some((field, item)),
            _ => None,
        })
    }
}

/// Whether the objects of a resource (group, version, plural) decode from protobuf here.
pub fn serves(group: &str, version: &str, plural: &str) -> bool {
    matches!(
        (group, version, plural),
        ("", "v1", "configmaps" | "secrets") | ("coordination.k8s.io", "v1", "leases")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_are_listed_by_ascending_number() {
        let all = [
            &OWNER_REFERENCE,
            &MANAGED_FIELDS_ENTRY,
            &OBJECT_META,
            &LIST_META,
            &STATUS_CAUSE,
            &STATUS_DETAILS,
            &STATUS,
            &CONFIG_MAP,
            &CONFIG_MAP_LIST,
            &SECRET,
            &SECRET_LIST,
            &LEASE_SPEC,
            &LEASE,
            &LEASE_LIST,
        ];
        for message in all {
            assert!(
                message.fields.windows(2).all(|w| w[0].number < w[1].number),
                "{}",
                message.name
            );
        }
    }
}
