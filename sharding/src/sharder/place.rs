//! One sharder reconcile: where an object should be, and the one label write that brings it
//! closer.
//!
//! The sharder's share of the reference design's `sharder` controller
//! (timebertt's kubernetes-controller-sharding, `controller/sharder`): for a primary object,
//!
//! | labels now | ring says | write |
//! |---|---|---|
//! | no shard | `s` | dependents → `s`, then the object → `s` (an assignment, or the end of a drained move) |
//! | shard `d`, `d` not live | `s` | once the sharder holds `d`'s Lease (see `fence`): dependents → `s`, then the object → `s`, drain removed |
//! | shard `s` | `s` | dependents → `s` if they differ |
//! | shard `o` live, no drain | `s ≠ o` | the drain label (at most `max_drains_in_flight` at once) |
//! | shard `o` live, drain | any | none: `o` acknowledges by removing both labels |
//!
//! A dependent takes its controller's shard label whenever it differs (it needs no drain of
//! its own: its controller's key is what the old shard reconciles). Writes are merge patches
//! carrying the resourceVersion the decision was taken on; a conflict means a newer version
//! is on its way through the watch, which enqueues the key again.

use std::time::Duration;

use clientgo_apimachinery::{Object, PartialObjectMetadata};
use clientgo_informer::controller_key;
use clientgo_rest::{PatchParams, PatchType, ResourceClient};
use serde_json::{Value, json};
use tokio::time::Instant;

use super::State;
use crate::ring::Partition;

/// Why a reconcile failed (retried after backoff).
#[derive(Debug, thiserror::Error)]
pub(super) enum PlaceError {
    /// A label write failed.
    #[error("labelling {key} failed: {source}")]
    Write {
        /// The object.
        key: String,
        /// The client's error.
        #[source]
        source: clientgo_rest::Error,
    },
}

/// What a label write came to.
enum Written {
    Done,
    /// The object changed (or vanished) since it was read: its newer version decides.
    Stale,
}

impl State {
    pub(super) async fn reconcile(&self, queued: &str) -> Result<(), PlaceError> {
        let Some((index, key)) = queued
            .split_once('|')
            .and_then(|(i, key)| Some((i.parse::<usize>().ok()?, key)))
        else {
            tracing::warn!(key = queued, "sharder: not a key of its own; dropped");
            return Ok(());
        };
        let Some(informer) = self.informers.get(index) else {
            return Ok(());
        };
        let Some(object) = informer.indexer().get_by_key(key) else {
            return Ok(()); // deleted
        };
        match &self.config.resources[index].partition {
            Partition::Object => self.place(index, key, &object).await,
            Partition::Controller { kind } => {
                let Some(controller) = controller_key(object.as_ref(), kind) else {
                    return Ok(()); // not a dependent of a sharded object: left alone
                };
                let shard = self
                    .primary_of(kind, controller.as_str())
                    .and_then(|c| c.labels().get(&self.shard_label).map(str::to_owned));
                match shard {
                    Some(shard) => self.follow(index, &object, &shard).await.map(|_| ()),
                    None => Ok(()), // the controller has no shard yet: it brings us back
                }
            }
        }
    }

    fn primary_of(&self, kind: &str, key: &str) -> Option<std::sync::Arc<PartialObjectMetadata>> {
        self.config
            .resources
            .iter()
            .zip(&self.informers)
            .filter(|(r, _)| r.partition == Partition::Object && r.resource.kind == kind)
            .find_map(|(_, informer)| informer.indexer().get_by_key(key))
    }

    async fn place(
        &self,
        index: usize,
        key: &str,
        object: &PartialObjectMetadata,
    ) -> Result<(), PlaceError> {
        let ring = self.ring.read().clone();
        let Some(desired) = ring.owner(key) else {
            return Ok(()); // no members: a membership change brings every key back
        };
        let labels = object.labels();
        let current = labels.get(&self.shard_label);
        let draining = labels.contains_key(&self.drain_label);
        match current {
            None => {
                if !self.dependents_follow(index, key, desired).await? {
                    self.enqueue_after(&format!("{index}|{key}"), Duration::from_millis(100));
                    return Ok(());
                }
                let patch = self.labels_patch(object, Some(desired), false);
                if let Written::Done = self.write(index, object, &patch).await? {
                    let drained = self.draining_since.lock().remove(key);
                    let seen = self.unassigned_since.lock().remove(key);
                    match drained {
                        Some(since) => {
                            self.metrics
                                .drain_duration
                                .observe(since.elapsed().as_secs_f64());
                            self.metrics.moved("drained");
                        }
                        None => {
                            self.metrics.assignments.inc();
                            if let Some(seen) = seen {
                                self.metrics
                                    .assignment_latency
                                    .observe(seen.elapsed().as_secs_f64());
                            }
                        }
                    }
                    tracing::debug!(%key, shard = desired, "assigned");
                }
            }
            Some(old) if !ring.contains(old) => {
                // Only under a hold on the old shard's Lease (see `fence`): never while it
                // might still be working.
                if !self.may_move_off(old) {
                    self.enqueue_after(&format!("{index}|{key}"), Duration::from_millis(500));
                    return Ok(());
                }
                if !self.dependents_follow(index, key, desired).await? {
                    self.enqueue_after(&format!("{index}|{key}"), Duration::from_millis(100));
                    return Ok(());
                }
                let patch = self.labels_patch(object, Some(desired), draining);
                if let Written::Done = self.write(index, object, &patch).await? {
                    self.draining_since.lock().remove(key);
                    self.metrics.moved("dead");
                    tracing::debug!(%key, from = old, to = desired, "moved off a dead shard");
                }
            }
            Some(old) if draining => {
                // Waiting for `old` to acknowledge; remember since when (a new sharder
                // finds drains its predecessor started).
                self.draining_since
                    .lock()
                    .entry(key.to_owned())
                    .or_insert_with(Instant::now);
                tracing::trace!(%key, shard = old, "drain pending");
            }
            Some(old) if old == desired => {
                self.dependents_follow(index, key, desired).await?;
            }
            Some(old) => {
                if self.draining_since.lock().len() >= self.config.max_drains_in_flight {
                    self.enqueue_after(&format!("{index}|{key}"), Duration::from_secs(1));
                    return Ok(());
                }
                let patch = json!({"metadata": {
                    "resourceVersion": object.resource_version(),
                    "labels": {self.drain_label.as_str(): "true"},
                }});
                if let Written::Done = self.write(index, object, &patch).await? {
                    self.draining_since
                        .lock()
                        .insert(key.to_owned(), Instant::now());
                    self.metrics.drains.inc();
                    tracing::debug!(%key, from = old, to = desired, "drain asked");
                }
            }
        }
        Ok(())
    }

    /// Gives every known dependent of the primary `key` (of resource `index`) the shard
    /// `shard`; false if one of them was stale (the caller waits for the newer version).
    async fn dependents_follow(
        &self,
        index: usize,
        key: &str,
        shard: &str,
    ) -> Result<bool, PlaceError> {
        let kind = &self.config.resources[index].resource.kind;
        let mut all_current = true;
        for (dependent_index, resource) in self.config.resources.iter().enumerate() {
            if !matches!(&resource.partition, Partition::Controller { kind: k } if k == kind) {
                continue;
            }
            let keys: Vec<String> = self
                .dependents
                .lock()
                .get(&(dependent_index, key.to_owned()))
                .map(|keys| keys.iter().cloned().collect())
                .unwrap_or_default();
            for dependent in keys {
                let Some(object) = self.informers[dependent_index]
                    .indexer()
                    .get_by_key(&dependent)
                else {
                    continue;
                };
                if controller_key(object.as_ref(), kind)
                    .as_ref()
                    .map(|c| c.as_str())
                    != Some(key)
                {
                    continue;
                }
                all_current &= self.follow(dependent_index, &object, shard).await?;
            }
        }
        Ok(all_current)
    }

    /// Labels a dependent with `shard` unless it has it; false if it was stale.
    async fn follow(
        &self,
        index: usize,
        object: &PartialObjectMetadata,
        shard: &str,
    ) -> Result<bool, PlaceError> {
        if object.labels().get(&self.shard_label) == Some(shard) {
            return Ok(true);
        }
        let patch = self.labels_patch(object, Some(shard), false);
        Ok(matches!(
            self.write(index, object, &patch).await?,
            Written::Done
        ))
    }

    /// A merge patch setting the shard label (or removing it), removing the drain label if
    /// `remove_drain`, guarded by the object's resourceVersion.
    fn labels_patch(
        &self,
        object: &PartialObjectMetadata,
        shard: Option<&str>,
        remove_drain: bool,
    ) -> Value {
        let mut labels = serde_json::Map::new();
        labels.insert(
            self.shard_label.clone(),
            shard.map_or(Value::Null, |s| json!(s)),
        );
        if remove_drain {
            labels.insert(self.drain_label.clone(), Value::Null);
        }
        json!({"metadata": {
            "resourceVersion": object.resource_version(),
            "labels": labels,
        }})
    }

    async fn write(
        &self,
        index: usize,
        object: &PartialObjectMetadata,
        patch: &Value,
    ) -> Result<Written, PlaceError> {
        let namespace = Some(object.namespace()).filter(|ns| !ns.is_empty());
        let client = ResourceClient::<PartialObjectMetadata>::metadata(
            &self.client,
            &self.config.resources[index].resource,
            namespace,
        );
        match client
            .patch(
                object.name(),
                PatchType::Merge,
                patch,
                &PatchParams::default(),
            )
            .await
        {
            Ok(_) => Ok(Written::Done),
            Err(error) if error.is_conflict() || error.is_not_found() => Ok(Written::Stale),
            Err(source) => Err(PlaceError::Write {
                key: clientgo_informer::meta_namespace_key_func(object),
                source,
            }),
        }
    }
}
