//! Building expected deltas, and fixed known objects (client-go's `literalListerGetter`).

use std::sync::Arc;

use clientgo_informer::{DeleteEvent, DeletedFinalStateUnknown, Delta, KeyListerGetter};

use super::{Obj, obj};

/// Known objects from a fixed list.
pub struct Known(pub Vec<Obj>);

impl KeyListerGetter<Obj> for Known {
    fn list_keys(&self) -> Vec<String> {
        self.0.iter().map(|o| o.metadata.name.clone()).collect()
    }
    fn get_by_key(&self, key: &str) -> Option<Arc<Obj>> {
        let found = self.0.iter().find(|o| o.metadata.name == key);
        found.cloned().map(Arc::new)
    }
}

/// foo=5, bar=6, baz=7: the known objects of many client-go FIFO tests.
pub fn foo_bar_baz() -> Vec<Obj> {
    vec![obj("foo", 5), obj("bar", 6), obj("baz", 7)]
}

pub fn added(o: Obj) -> Delta<Obj> {
    Delta::Added(Arc::new(o))
}
pub fn updated(o: Obj) -> Delta<Obj> {
    Delta::Updated(Arc::new(o))
}
pub fn deleted(o: Obj) -> Delta<Obj> {
    Delta::Deleted(DeleteEvent::Object(Arc::new(o)))
}
pub fn replaced(o: Obj) -> Delta<Obj> {
    Delta::Replaced(Arc::new(o))
}
pub fn sync(o: Obj) -> Delta<Obj> {
    Delta::Sync(Arc::new(o))
}
pub fn tombstone(key: &str, o: Option<Obj>) -> Delta<Obj> {
    let tombstone = DeletedFinalStateUnknown::new(key, o.map(Arc::new));
    Delta::Deleted(DeleteEvent::Tombstone(tombstone))
}
