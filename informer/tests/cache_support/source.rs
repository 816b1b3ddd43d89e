//! A fake collection on a fake server, feeding a queue the way a reflector would (client-go's
//! `FakeControllerSource`, without the list/watch plumbing): every change bumps a global
//! resourceVersion, is stamped on the object, and is written to the queue in the same
//! critical section, so the queue sees changes in resourceVersion order. The `*_drop_watch`
//! variants change the state without telling the queue (a missed watch event), which only a
//! relist repairs.

use std::collections::BTreeMap;
use std::sync::Arc;

use clientgo_informer::{ReflectorStore, meta_namespace_key_func};
use parking_lot::Mutex;

use super::Obj;

pub struct FakeSource {
    state: Mutex<State>,
    sink: Arc<dyn ReflectorStore<Obj>>,
    /// Also set each object's `value` to its resourceVersion: values then grow in the
    /// order the server applied the changes.
    stamp_values: bool,
}

#[derive(Default)]
struct State {
    rv: u64,
    objects: BTreeMap<String, Obj>,
    /// The resourceVersion of each key's last deletion (told or not).
    deleted_at: BTreeMap<String, u64>,
}

impl FakeSource {
    pub fn new(sink: Arc<dyn ReflectorStore<Obj>>) -> Self {
        FakeSource {
            state: Mutex::new(State::default()),
            sink,
            stamp_values: false,
        }
    }

    /// A source that sets each changed object's `value` to its resourceVersion.
    pub fn with_value_stamps(sink: Arc<dyn ReflectorStore<Obj>>) -> Self {
        FakeSource {
            stamp_values: true,
            ..FakeSource::new(sink)
        }
    }

    fn stamp(&self, state: &mut State, mut o: Obj) -> Obj {
        state.rv += 1;
        o.metadata.resource_version = state.rv.to_string();
        if self.stamp_values {
            o.value = state.rv as i64;
        }
        o
    }

    fn change(&self, o: Obj, tell: bool, existed: bool) -> Obj {
        let mut state = self.state.lock();
        let o = self.stamp(&mut state, o);
        let previous = state.objects.insert(meta_namespace_key_func(&o), o.clone());
        if tell {
            if previous.is_some() || existed {
                self.sink.update(o.clone());
            } else {
                self.sink.add(o.clone());
            }
        }
        o
    }

    /// Creates (or replaces) an object; the queue gets an add (an update if it existed).
    pub fn add(&self, o: Obj) -> Obj {
        self.change(o, true, false)
    }

    /// Changes an object; the queue gets an update.
    pub fn modify(&self, o: Obj) -> Obj {
        self.change(o, true, true)
    }

    /// Deletes the object with this key, if any; the queue gets a delete.
    pub fn delete(&self, key: &str) -> Option<Obj> {
        self.remove(key, true)
    }

    pub fn add_drop_watch(&self, o: Obj) -> Obj {
        self.change(o, false, false)
    }

    pub fn modify_drop_watch(&self, o: Obj) -> Obj {
        self.change(o, false, true)
    }

    pub fn delete_drop_watch(&self, key: &str) -> Option<Obj> {
        self.remove(key, false)
    }

    fn remove(&self, key: &str, tell: bool) -> Option<Obj> {
        let mut state = self.state.lock();
        let o = state.objects.remove(key)?;
        let o = self.stamp(&mut state, o);
        let rv = state.rv;
        state.deleted_at.insert(key.to_owned(), rv);
        if tell {
            self.sink.delete(o.clone());
        }
        Some(o)
    }

    /// A relist: the queue gets the whole state at the current resourceVersion.
    pub fn relist(&self) {
        let state = self.state.lock();
        let objects = state.objects.values().cloned().collect();
        self.sink.replace(objects, state.rv.to_string());
    }

    /// A periodic resync.
    pub fn resync(&self) {
        let _state = self.state.lock();
        self.sink.resync();
    }

    /// A bookmark at the current resourceVersion.
    pub fn bookmark(&self) {
        let state = self.state.lock();
        self.sink.bookmark(&state.rv.to_string());
    }

    pub fn snapshot(&self) -> BTreeMap<String, Obj> {
        self.state.lock().objects.clone()
    }

    pub fn resource_version(&self) -> u64 {
        self.state.lock().rv
    }

    /// Whether the key was deleted at a resourceVersion above `rv` (recorded in the same
    /// critical section as the deletion reaches the queue, so before the store can apply it).
    pub fn deleted_after(&self, key: &str, rv: u64) -> bool {
        self.state
            .lock()
            .deleted_at
            .get(key)
            .is_some_and(|&deleted| deleted > rv)
    }

    pub fn get(&self, key: &str) -> Option<Obj> {
        self.state.lock().objects.get(key).cloned()
    }
}
