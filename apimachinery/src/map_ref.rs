//! [`MapRef`]: a borrowed, read-only view of a string map (an object's labels or
//! annotations), whatever form the object keeps it in.
//!
//! [`Object::labels`](crate::Object::labels) and [`Object::annotations`](crate::Object::annotations)
//! return it, so that [`ObjectMeta`](crate::ObjectMeta) and k8s-openapi's metadata (a
//! `BTreeMap` each) and [`CompactMeta`](crate::CompactMeta) (strings packed in one buffer,
//! see `compact/`) answer the same calls without copying. It plays the part of Go's
//! `map[string]string` in `metav1.Object`'s `GetLabels()`; iteration is in key order, as a
//! `BTreeMap`'s is. It is `Copy`, two words or three, and matches label selectors.

use std::collections::BTreeMap;
use std::fmt;

use crate::labels::Labels;

/// A span of a packed string buffer: `text[start..start + len]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Span {
    pub(crate) start: u32,
    pub(crate) len: u32,
}

impl Span {
    pub(crate) fn of(self, text: &str) -> &str {
        let start = self.start as usize;
        text.get(start..start + self.len as usize).unwrap_or("")
    }
}

/// A read-only view of a string map. See the module documentation.
#[derive(Clone, Copy)]
pub struct MapRef<'a>(Inner<'a>);

#[derive(Clone, Copy)]
enum Inner<'a> {
    Tree(&'a BTreeMap<String, String>),
    /// Key and value spans alternating, sorted by key, keys unique.
    Packed {
        text: &'a str,
        spans: &'a [Span],
    },
}

static EMPTY: BTreeMap<String, String> = BTreeMap::new();

impl<'a> MapRef<'a> {
    /// The empty map.
    pub fn empty() -> MapRef<'static> {
        MapRef(Inner::Tree(&EMPTY))
    }

    /// A view of packed key/value spans (sorted by key, keys unique) into `text`.
    pub(crate) fn packed(text: &'a str, spans: &'a [Span]) -> MapRef<'a> {
        debug_assert!(spans.len() % 2 == 0);
        MapRef(Inner::Packed { text, spans })
    }

    /// The value of `key`.
    pub fn get(&self, key: &str) -> Option<&'a str> {
        match self.0 {
            Inner::Tree(map) => map.get(key).map(String::as_str),
            Inner::Packed { text, spans } => {
                let pairs = spans.len() / 2;
                let (mut lo, mut hi) = (0, pairs);
                while lo < hi {
                    let mid = (lo + hi) / 2;
                    match spans[2 * mid].of(text).cmp(key) {
                        std::cmp::Ordering::Less => lo = mid + 1,
                        std::cmp::Ordering::Greater => hi = mid,
                        std::cmp::Ordering::Equal => return Some(spans[2 * mid + 1].of(text)),
                    }
                }
                None
            }
        }
    }

    /// Whether `key` is present.
    pub fn contains_key(&self, key: &str) -> bool {
        self.get(key).is_some()
    }

    /// The number of entries.
    pub fn len(&self) -> usize {
        match self.0 {
            Inner::Tree(map) => map.len(),
            Inner::Packed { spans, .. } => spans.len() / 2,
        }
    }

    /// Whether the map is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The entries, in key order.
    pub fn iter(&self) -> Iter<'a> {
        Iter(match self.0 {
            Inner::Tree(map) => IterInner::Tree(map.iter()),
            Inner::Packed { text, spans } => IterInner::Packed {
                text,
                pairs: spans.chunks_exact(2),
            },
        })
    }

    /// The keys, in order.
    pub fn keys(&self) -> impl Iterator<Item = &'a str> + 'a {
        self.iter().map(|(k, _)| k)
    }

    /// The values, in key order.
    pub fn values(&self) -> impl Iterator<Item = &'a str> + 'a {
        self.iter().map(|(_, v)| v)
    }

    /// An owned copy.
    pub fn to_btree_map(&self) -> BTreeMap<String, String> {
        self.iter()
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect()
    }
}

impl<'a> From<&'a BTreeMap<String, String>> for MapRef<'a> {
    fn from(map: &'a BTreeMap<String, String>) -> Self {
        MapRef(Inner::Tree(map))
    }
}

impl<'a> IntoIterator for MapRef<'a> {
    type Item = (&'a str, &'a str);
    type IntoIter = Iter<'a>;

    fn into_iter(self) -> Iter<'a> {
        self.iter()
    }
}

impl PartialEq for MapRef<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.len() == other.len() && self.iter().eq(other.iter())
    }
}

impl Eq for MapRef<'_> {}

impl PartialEq<BTreeMap<String, String>> for MapRef<'_> {
    fn eq(&self, other: &BTreeMap<String, String>) -> bool {
        *self == MapRef::from(other)
    }
}

impl fmt::Debug for MapRef<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

impl Labels for MapRef<'_> {
    fn label(&self, key: &str) -> Option<&str> {
        self.get(key)
    }
}

/// Iterator over a [`MapRef`]'s entries.
#[derive(Clone)]
pub struct Iter<'a>(IterInner<'a>);

#[derive(Clone)]
enum IterInner<'a> {
    Tree(std::collections::btree_map::Iter<'a, String, String>),
    Packed {
        text: &'a str,
        pairs: std::slice::ChunksExact<'a, Span>,
    },
}

impl<'a> Iterator for Iter<'a> {
    type Item = (&'a str, &'a str);

    fn next(&mut self) -> Option<Self::Item> {
        match &mut self.0 {
            IterInner::Tree(it) => it.next().map(|(k, v)| (k.as_str(), v.as_str())),
            IterInner::Packed { text, pairs } => {
                pairs.next().map(|p| (p[0].of(text), p[1].of(text)))
            }
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        match &self.0 {
            IterInner::Tree(it) => it.size_hint(),
            IterInner::Packed { pairs, .. } => pairs.size_hint(),
        }
    }
}

impl ExactSizeIterator for Iter<'_> {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tree_and_packed_views_agree() {
        let tree: BTreeMap<String, String> = [("app", "web"), ("tier", "fe"), ("a", "1")]
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect();
        let text = "a1appwebtierfe";
        let s = |start, len| Span { start, len };
        let spans = [s(0, 1), s(1, 1), s(2, 3), s(5, 3), s(8, 4), s(12, 2)];
        let packed = MapRef::packed(text, &spans);
        let view = MapRef::from(&tree);
        assert_eq!(packed, view);
        assert_eq!(packed, tree);
        for key in ["a", "app", "tier", "zzz", ""] {
            assert_eq!(packed.get(key), view.get(key), "{key}");
        }
        assert_eq!(packed.keys().collect::<Vec<_>>(), ["a", "app", "tier"]);
        assert_eq!(packed.to_btree_map(), tree);
        assert_eq!(format!("{packed:?}"), format!("{tree:?}"));
        assert!(MapRef::empty().is_empty());
        let selector: crate::labels::Selector = "app=web,tier".parse().unwrap();
        assert!(selector.matches(&packed));
    }

    #[test]
    fn spans_outside_the_text_read_as_empty() {
        assert_eq!(Span { start: 10, len: 5 }.of("short"), "");
    }
}
