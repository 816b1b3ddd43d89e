//! Storage: the MVCC store ([`Store`]) and the stored object form ([`StoredObject`]).
//!
//! Together these play the role of etcd plus the watch cache behind kube-apiserver's
//! generic registry; see each module for how.

mod mvcc;
mod object;
mod snapshots;

pub use mvcc::{Event, EventType, ListPage, ListRequest, Store, StoreError};
pub use object::{OwnerUid, Pairs, StoredObject, object_key};

#[cfg(test)]
mod tests;
