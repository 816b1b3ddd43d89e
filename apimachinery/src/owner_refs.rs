//! Borrowed views of owner references: [`OwnerRef`], one reference, and [`OwnerRefs`], an
//! object's list of them, over the three places references are stored: our
//! [`OwnerReference`], k8s-openapi's (behind the `k8s-openapi` feature), and the packed
//! spans of compact metadata ([`CompactMeta`](crate::CompactMeta)).
//!
//! Mirrors what Go reads through `metav1.Object.GetOwnerReferences`, without copying: Go
//! hands out the slice it stores, and so do these views, whatever the storage. Its own module,
//! below the object trait and the storages, so that none of them imports another for it.

use std::iter::FusedIterator;

use crate::map_ref::Span;
use crate::meta::OwnerReference;

#[cfg(feature = "k8s-openapi")]
type K8sOwnerReference = ::k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;

/// Spans per packed owner reference: apiVersion, kind, name, uid, and the two flags.
pub(crate) const OWNER_SPANS: usize = 5;

/// A borrowed view of one owner reference.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct OwnerRef<'a> {
    /// The owner's `apiVersion`.
    pub api_version: &'a str,
    /// The owner's kind.
    pub kind: &'a str,
    /// The owner's name.
    pub name: &'a str,
    /// The owner's uid.
    pub uid: &'a str,
    /// `controller`, as written.
    pub controller: Option<bool>,
    /// `blockOwnerDeletion`, as written.
    pub block_owner_deletion: Option<bool>,
}

impl OwnerRef<'_> {
    /// Whether this owner is the managing controller.
    pub fn is_controller(&self) -> bool {
        self.controller == Some(true)
    }

    /// An owned copy.
    pub fn to_owner_reference(&self) -> OwnerReference {
        OwnerReference {
            api_version: self.api_version.to_owned(),
            kind: self.kind.to_owned(),
            name: self.name.to_owned(),
            uid: self.uid.to_owned(),
            controller: self.controller,
            block_owner_deletion: self.block_owner_deletion,
        }
    }
}

impl<'a> From<&'a OwnerReference> for OwnerRef<'a> {
    fn from(r: &'a OwnerReference) -> OwnerRef<'a> {
        OwnerRef {
            api_version: &r.api_version,
            kind: &r.kind,
            name: &r.name,
            uid: &r.uid,
            controller: r.controller,
            block_owner_deletion: r.block_owner_deletion,
        }
    }
}

/// Iterator over an object's owner references ([`Object::owner_references`](crate::Object::owner_references)).
#[derive(Debug, Clone)]
pub struct OwnerRefs<'a> {
    inner: OwnerRefsInner<'a>,
}

#[derive(Debug, Clone)]
enum OwnerRefsInner<'a> {
    Native(std::slice::Iter<'a, OwnerReference>),
    #[cfg(feature = "k8s-openapi")]
    K8s(std::slice::Iter<'a, K8sOwnerReference>),
    /// Packed spans (see `compact/meta.rs`): apiVersion, kind, name, uid and flags per owner.
    Packed {
        text: &'a str,
        owners: std::slice::ChunksExact<'a, Span>,
    },
}

impl<'a> OwnerRefs<'a> {
    /// Iterates over our [`OwnerReference`]s.
    pub fn new(refs: &'a [OwnerReference]) -> OwnerRefs<'a> {
        OwnerRefs {
            inner: OwnerRefsInner::Native(refs.iter()),
        }
    }

    /// Iterates over packed owner spans, five per owner.
    pub(crate) fn packed(text: &'a str, spans: &'a [Span]) -> OwnerRefs<'a> {
        OwnerRefs {
            inner: OwnerRefsInner::Packed {
                text,
                owners: spans.chunks_exact(OWNER_SPANS),
            },
        }
    }

    #[cfg(feature = "k8s-openapi")]
    pub(crate) fn k8s(refs: &'a [K8sOwnerReference]) -> OwnerRefs<'a> {
        OwnerRefs {
            inner: OwnerRefsInner::K8s(refs.iter()),
        }
    }
}

impl<'a> Iterator for OwnerRefs<'a> {
    type Item = OwnerRef<'a>;

    fn next(&mut self) -> Option<OwnerRef<'a>> {
        match &mut self.inner {
            OwnerRefsInner::Native(it) => it.next().map(OwnerRef::from),
            #[cfg(feature = "k8s-openapi")]
            OwnerRefsInner::K8s(it) => it.next().map(k8s_view),
            OwnerRefsInner::Packed { text, owners } => {
                owners.next().map(|spans| packed_view(text, spans))
            }
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = self.len();
        (n, Some(n))
    }
}

impl DoubleEndedIterator for OwnerRefs<'_> {
    fn next_back(&mut self) -> Option<Self::Item> {
        match &mut self.inner {
            OwnerRefsInner::Native(it) => it.next_back().map(OwnerRef::from),
            #[cfg(feature = "k8s-openapi")]
            OwnerRefsInner::K8s(it) => it.next_back().map(k8s_view),
            OwnerRefsInner::Packed { text, owners } => {
                owners.next_back().map(|spans| packed_view(text, spans))
            }
        }
    }
}

impl ExactSizeIterator for OwnerRefs<'_> {
    fn len(&self) -> usize {
        match &self.inner {
            OwnerRefsInner::Native(it) => it.len(),
            #[cfg(feature = "k8s-openapi")]
            OwnerRefsInner::K8s(it) => it.len(),
            OwnerRefsInner::Packed { owners, .. } => owners.len(),
        }
    }
}

impl FusedIterator for OwnerRefs<'_> {}

/// The view of one of k8s-openapi's owner references.
#[cfg(feature = "k8s-openapi")]
fn k8s_view(r: &K8sOwnerReference) -> OwnerRef<'_> {
    OwnerRef {
        api_version: &r.api_version,
        kind: &r.kind,
        name: &r.name,
        uid: &r.uid,
        controller: r.controller,
        block_owner_deletion: r.block_owner_deletion,
    }
}

/// The view of one packed owner reference (`OWNER_SPANS` spans).
fn packed_view<'a>(text: &'a str, spans: &'a [Span]) -> OwnerRef<'a> {
    let flags = spans[4];
    OwnerRef {
        api_version: spans[0].of(text),
        kind: spans[1].of(text),
        name: spans[2].of(text),
        uid: spans[3].of(text),
        controller: decode_flag(flags.start),
        block_owner_deletion: decode_flag(flags.len),
    }
}

/// A packed flag: 0 absent, 1 false, 2 true.
pub(crate) fn encode_flag(flag: Option<bool>) -> u32 {
    match flag {
        None => 0,
        Some(false) => 1,
        Some(true) => 2,
    }
}

fn decode_flag(code: u32) -> Option<bool> {
    match code {
        1 => Some(false),
        2 => Some(true),
        _ => None,
    }
}
