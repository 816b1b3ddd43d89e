//! The in-memory MVCC store: keyspaces of objects, one global revision, a bounded history.
//!
//! Mirrors etcd as kube-apiserver uses it (`storage/etcd3/store.go`) together with the
//! watch cache's event window (`storage/cacher/watch_cache.go`):
//! * one global, monotonic revision; every write (create, update, delete) takes the next one
//!   and stamps it into `metadata.resourceVersion`;
//! * per-resource keyspaces (`group/plural`) of `namespace/name` keys kept in byte order, so
//!   lists come out sorted as etcd returns them;
//! * a bounded history of write events (ADDED / MODIFIED / DELETED, each with the previous
//!   object version) serving watches and reads at past revisions; older events are
//!   compacted away, and reads or watches before the compacted revision fail with 410;
//! * optimistic concurrency: updates and deletes can require the current resourceVersion.
//!
//! Differences from etcd: past states are rebuilt from the history (current state plus the
//! previous versions recorded in later events) rather than kept per key; this makes exact
//! reads cost O(page + events since then), and means a read is possible exactly when the
//! watch window still covers it. Writes that leave an object byte-for-byte unchanged are
//! skipped (no new revision), as `GuaranteedUpdate` does.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::ops::Bound;
use std::sync::Arc;

use parking_lot::Mutex;
use serde_json::Value;
use tokio::sync::watch;

use super::object::{StoredObject, object_key};

/// The kind of a write event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventType {
    /// An object was created.
    Added,
    /// An object was changed.
    Modified,
    /// An object was removed.
    Deleted,
}

/// One write, as kept in the history.
#[derive(Debug, Clone)]
pub struct Event {
    /// The revision of the write.
    pub rv: u64,
    /// The keyspace written.
    pub keyspace: Arc<str>,
    /// What happened.
    pub kind: EventType,
    /// The object after the write (for deletes: the last state, stamped with `rv`).
    pub object: Arc<StoredObject>,
    /// The version before the write (`None` for creates).
    pub prev: Option<Arc<StoredObject>>,
}

/// Why a store operation failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StoreError {
    /// No object under the key.
    #[error("not found")]
    NotFound,
    /// An object already exists under the key.
    #[error("already exists")]
    AlreadyExists,
    /// The object's current resourceVersion differs from the required one.
    #[error("conflict: current resourceVersion is {current}")]
    Conflict {
        /// The current resourceVersion.
        current: u64,
    },
    /// The requested revision is no longer in the history.
    #[error("revision compacted (history starts after {compacted})")]
    Compacted {
        /// The compacted revision: every event after it is kept.
        compacted: u64,
    },
    /// The requested revision is in the future.
    #[error("revision in the future (current {current})")]
    TooLarge {
        /// The current revision.
        current: u64,
    },
}

/// One page of a list.
#[derive(Debug, Clone)]
pub struct ListPage {
    /// The matching objects, in key order.
    pub items: Vec<Arc<StoredObject>>,
    /// The revision the page was read at.
    pub rv: u64,
    /// The key to continue from, when more matching objects follow.
    pub next_key: Option<String>,
    /// How many keys follow the page (when counted).
    pub remaining: Option<i64>,
}

/// What a list reads.
#[derive(Debug, Clone, Copy)]
pub struct ListRequest<'a> {
    /// The keyspace.
    pub keyspace: &'a str,
    /// Key prefix (`ns/` for one namespace, `""` for all).
    pub prefix: &'a str,
    /// Revision to read at; `None` for the latest.
    pub at: Option<u64>,
    /// First key to consider (inclusive).
    pub start: &'a str,
    /// Maximum number of items; 0 for no limit.
    pub limit: usize,
    /// Whether to count the keys after a full page (`remainingItemCount`).
    pub count_remaining: bool,
    /// Whether the resource has a watch cache, whose snapshots serve past revisions etcd
    /// compacted (see `snapshots`).
    pub cached: bool,
}

type Space = BTreeMap<Box<str>, Arc<StoredObject>>;

#[derive(Debug)]
struct Inner {
    rev: u64,
    spaces: HashMap<Arc<str>, Space>,
    uids: HashMap<Box<str>, (Arc<str>, Box<str>)>,
    history: VecDeque<Arc<Event>>,
    compacted: u64,
    /// The revision from which past states can be rebuilt from `history` (the last event
    /// dropped from it): [`Store::compact_now`] moves `compacted`, not this.
    floor: u64,
    capacity: usize,
    /// The revision of each keyspace's last write.
    last_writes: HashMap<Arc<str>, u64>,
    /// kube-apiserver's compactor, which drops the watch caches' snapshots.
    snapshots: super::snapshots::Compactor,
}

/// The MVCC store. Cheap to share behind an `Arc`.
#[derive(Debug)]
pub struct Store {
    inner: Mutex<Inner>,
    rev_tx: watch::Sender<u64>,
}

fn set_rv(value: &mut Value, rv: u64) {
    if let Some(meta) = value.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.insert("resourceVersion".to_owned(), Value::String(rv.to_string()));
    }
}

fn key_of(value: &Value) -> String {
    let meta = value.get("metadata");
    let s = |f: &str| {
        meta.and_then(|m| m.get(f))
            .and_then(Value::as_str)
            .unwrap_or("")
    };
    object_key(s("namespace"), s("name"))
}

impl Store {
    /// An empty store at revision `start_rev` keeping at most `history` events.
    pub fn new(history: usize, start_rev: u64) -> Store {
        let (rev_tx, _) = watch::channel(start_rev);
        Store {
            inner: Mutex::new(Inner {
                rev: start_rev,
                spaces: HashMap::new(),
                uids: HashMap::new(),
                history: VecDeque::new(),
                compacted: start_rev,
                floor: start_rev,
                capacity: history.max(1),
                last_writes: HashMap::new(),
                snapshots: super::snapshots::Compactor::new(std::time::Instant::now()),
            }),
            rev_tx,
        }
    }

    /// The current revision.
    pub fn rev(&self) -> u64 {
        self.inner.lock().rev
    }

    /// The compacted revision: events after it are in the history.
    pub fn compacted(&self) -> u64 {
        self.inner.lock().compacted
    }

    /// A receiver that sees every new revision.
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.rev_tx.subscribe()
    }

    /// Compacts now, as kube-apiserver's compactor does: etcd compacted and the watch caches'
    /// snapshots before now dropped, so reads and watches before the current revision get
    /// 410. The history is kept (bounded by its capacity as always).
    pub fn compact_now(&self) {
        let mut inner = self.inner.lock();
        inner.compacted = inner.rev;
        let rev = inner.rev;
        inner.snapshots.compact(rev);
    }

    /// Compacts etcd from outside kube-apiserver (`etcdctl compaction`): reads and watches
    /// before the current revision get 410, except the lists the watch caches' snapshots
    /// still serve (see `snapshots`).
    pub fn compact_etcd(&self) {
        let mut inner = self.inner.lock();
        inner.compacted = inner.rev;
    }

    /// The revision of the last write to `keyspace`, if any.
    pub fn last_write(&self, keyspace: &str) -> Option<u64> {
        self.inner.lock().last_writes.get(keyspace).copied()
    }

    /// The current object under `key`.
    pub fn get(&self, keyspace: &str, key: &str) -> Option<Arc<StoredObject>> {
        self.inner.lock().spaces.get(keyspace)?.get(key).cloned()
    }

    /// The keyspace and key of the object with `uid`, if it exists.
    pub fn find_uid(&self, uid: &str) -> Option<(Arc<str>, String)> {
        let inner = self.inner.lock();
        inner
            .uids
            .get(uid)
            .map(|(ks, key)| (ks.clone(), key.to_string()))
    }

    /// Every current object of a keyspace.
    pub fn all(&self, keyspace: &str) -> Vec<Arc<StoredObject>> {
        self.inner
            .lock()
            .spaces
            .get(keyspace)
            .map(|s| s.values().cloned().collect())
            .unwrap_or_default()
    }

    /// The names of the non-empty keyspaces.
    pub fn keyspaces(&self) -> Vec<Arc<str>> {
        self.inner
            .lock()
            .spaces
            .iter()
            .filter(|(_, s)| !s.is_empty())
            .map(|(k, _)| k.clone())
            .collect()
    }

    /// Number of objects and approximate bytes stored (objects only).
    pub fn stats(&self) -> (usize, usize) {
        let inner = self.inner.lock();
        inner
            .spaces
            .values()
            .flat_map(|s| s.values())
            .fold((0, 0), |(n, b), o| (n + 1, b + o.heap_size()))
    }

    fn commit(
        &self,
        mut inner: parking_lot::MutexGuard<'_, Inner>,
        keyspace: &str,
        kind: EventType,
        object: Arc<StoredObject>,
        prev: Option<Arc<StoredObject>>,
    ) {
        let ks: Arc<str> = match inner.spaces.get_key_value(keyspace) {
            Some((k, _)) => k.clone(),
            None => Arc::from(keyspace),
        };
        let space = inner.spaces.entry(ks.clone()).or_default();
        if kind == EventType::Deleted {
            space.remove(object.key());
        } else {
            space.insert(object.key().into(), object.clone());
        }
        if let Some(p) = &prev {
            if p.uid() != object.uid() || kind == EventType::Deleted {
                inner.uids.remove(p.uid());
            }
        }
        if kind != EventType::Deleted && !object.uid().is_empty() {
            inner
                .uids
                .insert(object.uid().into(), (ks.clone(), object.key().into()));
        }
        let rv = object.rv();
        let before = inner.rev;
        inner.snapshots.advance(std::time::Instant::now(), before);
        inner.rev = rv;
        inner.last_writes.insert(ks.clone(), rv);
        inner.history.push_back(Arc::new(Event {
            rv,
            keyspace: ks,
            kind,
            object,
            prev,
        }));
        while inner.history.len() > inner.capacity {
            if let Some(old) = inner.history.pop_front() {
                inner.compacted = inner.compacted.max(old.rv);
                inner.floor = old.rv;
            }
        }
        drop(inner);
        self.rev_tx.send_replace(rv);
    }

    /// Creates `value` (its `metadata` gives the key); stamps the next revision.
    pub fn create(
        &self,
        keyspace: &str,
        mut value: Value,
        selectable: &[String],
    ) -> Result<Arc<StoredObject>, StoreError> {
        let key = key_of(&value);
        let inner = self.inner.lock();
        if inner
            .spaces
            .get(keyspace)
            .is_some_and(|s| s.contains_key(key.as_str()))
        {
            return Err(StoreError::AlreadyExists);
        }
        let rv = inner.rev + 1;
        set_rv(&mut value, rv);
        let object = StoredObject::from_value(&value, rv, selectable);
        self.commit(inner, keyspace, EventType::Added, object.clone(), None);
        Ok(object)
    }

    /// Replaces the object if its resourceVersion is still `expected_rv`. An update that
    /// changes nothing returns the current object without a new revision.
    pub fn update(
        &self,
        keyspace: &str,
        mut value: Value,
        expected_rv: u64,
        selectable: &[String],
    ) -> Result<Arc<StoredObject>, StoreError> {
        let key = key_of(&value);
        let inner = self.inner.lock();
        let Some(current) = inner
            .spaces
            .get(keyspace)
            .and_then(|s| s.get(key.as_str()))
            .cloned()
        else {
            return Err(StoreError::NotFound);
        };
        if current.rv() != expected_rv {
            return Err(StoreError::Conflict {
                current: current.rv(),
            });
        }
        set_rv(&mut value, current.rv());
        if serde_json::to_vec(&value).is_ok_and(|b| b == current.json()) {
            return Ok(current);
        }
        let rv = inner.rev + 1;
        set_rv(&mut value, rv);
        let object = StoredObject::from_value(&value, rv, selectable);
        self.commit(
            inner,
            keyspace,
            EventType::Modified,
            object.clone(),
            Some(current),
        );
        Ok(object)
    }

    /// Removes the object under `key` (if its resourceVersion is `expected_rv`, when given).
    /// Returns its last state stamped with the deletion revision.
    pub fn delete(
        &self,
        keyspace: &str,
        key: &str,
        expected_rv: Option<u64>,
        selectable: &[String],
    ) -> Result<Arc<StoredObject>, StoreError> {
        let inner = self.inner.lock();
        let Some(current) = inner.spaces.get(keyspace).and_then(|s| s.get(key)).cloned() else {
            return Err(StoreError::NotFound);
        };
        if let Some(expected) = expected_rv {
            if current.rv() != expected {
                return Err(StoreError::Conflict {
                    current: current.rv(),
                });
            }
        }
        let rv = inner.rev + 1;
        let mut value = current.to_value();
        set_rv(&mut value, rv);
        let object = StoredObject::from_value(&value, rv, selectable);
        self.commit(
            inner,
            keyspace,
            EventType::Deleted,
            object.clone(),
            Some(current),
        );
        Ok(object)
    }

    /// The events of `keyspace` after revision `after`, and the revision read up to.
    /// Fails with [`StoreError::Compacted`] when events after `after` were dropped.
    pub fn events_after(
        &self,
        keyspace: &str,
        after: u64,
    ) -> Result<(Vec<Arc<Event>>, u64), StoreError> {
        let inner = self.inner.lock();
        if after < inner.compacted {
            return Err(StoreError::Compacted {
                compacted: inner.compacted,
            });
        }
        let first = inner.history.front().map_or(inner.rev + 1, |e| e.rv);
        let skip =
            usize::try_from(after.saturating_add(1).saturating_sub(first)).unwrap_or(usize::MAX);
        let events = inner
            .history
            .iter()
            .skip(skip)
            .filter(|e| &*e.keyspace == keyspace)
            .cloned()
            .collect();
        Ok((events, inner.rev))
    }

    /// Whether any write after `after` could matter to the garbage collector: a deletion,
    /// a deletion mark, or an object with owner references. `true` when events were
    /// compacted away (the caller must then look at everything).
    pub fn gc_relevant_since(&self, after: u64) -> bool {
        let inner = self.inner.lock();
        if after < inner.compacted {
            return true;
        }
        let first = inner.history.front().map_or(inner.rev + 1, |e| e.rv);
        let skip =
            usize::try_from(after.saturating_add(1).saturating_sub(first)).unwrap_or(usize::MAX);
        inner.history.iter().skip(skip).any(|e| {
            e.kind == EventType::Deleted || e.object.is_deleting() || !e.object.owners().is_empty()
        })
    }

    /// Reads one page of a keyspace at the latest or a past revision.
    pub fn list(
        &self,
        req: ListRequest<'_>,
        filter: &dyn Fn(&StoredObject) -> bool,
    ) -> Result<ListPage, StoreError> {
        let mut inner = self.inner.lock();
        let current = inner.rev;
        inner.snapshots.advance(std::time::Instant::now(), current);
        let at = req.at.unwrap_or(inner.rev);
        if at > inner.rev {
            return Err(StoreError::TooLarge { current: inner.rev });
        }
        let from_snapshot = || req.cached && at >= inner.floor && inner.snapshots.servable(at);
        if at < inner.compacted && at != inner.rev && !from_snapshot() {
            return Err(StoreError::Compacted {
                compacted: inner.compacted,
            });
        }
        // The versions at `at` of keys written later: the `prev` of the first later event.
        let mut overrides: BTreeMap<&str, Option<&Arc<StoredObject>>> = BTreeMap::new();
        if at < inner.rev {
            for e in inner
                .history
                .iter()
                .filter(|e| e.rv > at && *e.keyspace == *req.keyspace)
            {
                overrides.entry(e.object.key()).or_insert(e.prev.as_ref());
            }
        }
        let empty = Space::new();
        let space = inner.spaces.get(req.keyspace).unwrap_or(&empty);
        let start = if req.start > req.prefix {
            req.start
        } else {
            req.prefix
        };
        let current = space
            .range::<str, _>((Bound::Included(start), Bound::Unbounded))
            .map(|(k, v)| (&**k, Some(v)));
        let older = overrides
            .range::<&str, _>((Bound::Included(start), Bound::Unbounded))
            .map(|(k, v)| (*k, *v));
        let merged = MergeByKey {
            a: current.peekable(),
            b: older.peekable(),
        }
        .take_while(|(k, _)| k.starts_with(req.prefix))
        .filter_map(|(_, v)| v);

        let mut items = Vec::new();
        let mut next_key = None;
        let mut remaining = None;
        let mut iter = merged;
        for obj in iter.by_ref() {
            if !filter(obj) {
                continue;
            }
            if req.limit > 0 && items.len() == req.limit {
                next_key = items
                    .last()
                    .map(|o: &Arc<StoredObject>| format!("{}\u{0}", o.key()));
                if req.count_remaining {
                    remaining = Some(1 + iter.by_ref().count() as i64);
                }
                break;
            }
            items.push(obj.clone());
        }
        Ok(ListPage {
            items,
            rv: at,
            next_key,
            remaining,
        })
    }
}

/// Merges two key-ordered iterators; on equal keys the second (the older version) wins.
struct MergeByKey<'a, A, B>
where
    A: Iterator<Item = (&'a str, Option<&'a Arc<StoredObject>>)>,
    B: Iterator<Item = (&'a str, Option<&'a Arc<StoredObject>>)>,
{
    a: std::iter::Peekable<A>,
    b: std::iter::Peekable<B>,
}

impl<'a, A, B> Iterator for MergeByKey<'a, A, B>
where
    A: Iterator<Item = (&'a str, Option<&'a Arc<StoredObject>>)>,
    B: Iterator<Item = (&'a str, Option<&'a Arc<StoredObject>>)>,
{
    type Item = (&'a str, Option<&'a Arc<StoredObject>>);

    fn next(&mut self) -> Option<Self::Item> {
        match (self.a.peek(), self.b.peek()) {
            (Some(a), Some(b)) => match a.0.cmp(b.0) {
                std::cmp::Ordering::Less => self.a.next(),
                std::cmp::Ordering::Greater => self.b.next(),
                std::cmp::Ordering::Equal => {
                    self.a.next();
                    self.b.next()
                }
            },
            (Some(_), None) => self.a.next(),
            (None, _) => self.b.next(),
        }
    }
}
