//! A fake server behind a [`ListerWatcher`]: lists return the current objects, watches
//! stream every later change as JSON lines, and a list error can be injected. Changes bump a
//! global resourceVersion and set each object's `value` to it.

use std::collections::BTreeMap;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::Bytes;
use clientgo_apimachinery::{ObjectList, Status, WatchEvent};
use clientgo_informer::{ListWatchError, ListerWatcher, meta_namespace_key_func};
use clientgo_rest::{ListParams, WatchParams};
use clientgo_watch::Watch;
use http_body::{Body, Frame};
use parking_lot::Mutex;
use tokio::sync::mpsc;

use super::Obj;

#[derive(Clone, Default)]
pub struct FakeListerWatcher {
    state: Arc<Mutex<State>>,
}

#[derive(Default)]
struct State {
    rv: u64,
    objects: BTreeMap<String, Obj>,
    list_error: Option<Status>,
    watchers: Vec<mpsc::UnboundedSender<Bytes>>,
    lists: usize,
}

impl FakeListerWatcher {
    fn change(&self, event: fn(Obj) -> WatchEvent<Obj>, mut o: Obj, delete: bool) -> Obj {
        let mut state = self.state.lock();
        state.rv += 1;
        o.metadata.resource_version = state.rv.to_string();
        o.value = state.rv as i64;
        let key = meta_namespace_key_func(&o);
        if delete {
            state.objects.remove(&key);
        } else {
            state.objects.insert(key, o.clone());
        }
        let mut line = serde_json::to_vec(&event(o.clone())).expect("an object serializes");
        line.push(b'\n');
        let line = Bytes::from(line);
        state.watchers.retain(|w| w.send(line.clone()).is_ok());
        o
    }

    pub fn add(&self, o: Obj) -> Obj {
        self.change(WatchEvent::Added, o, false)
    }

    pub fn modify(&self, o: Obj) -> Obj {
        self.change(WatchEvent::Modified, o, false)
    }

    pub fn delete(&self, o: Obj) -> Obj {
        self.change(WatchEvent::Deleted, o, true)
    }

    /// Makes every list fail with `status` (`None`: succeed again).
    pub fn set_list_error(&self, status: Option<Status>) {
        self.state.lock().list_error = status;
    }

    pub fn resource_version(&self) -> u64 {
        self.state.lock().rv
    }

    pub fn lists(&self) -> usize {
        self.state.lock().lists
    }
}

impl ListerWatcher<Obj> for FakeListerWatcher {
    async fn list(&self, _: &ListParams) -> Result<ObjectList<Obj>, ListWatchError> {
        let mut state = self.state.lock();
        state.lists += 1;
        if let Some(status) = &state.list_error {
            return Err(status.clone().into());
        }
        let items = state.objects.values().cloned().collect();
        let mut list = ObjectList::new(items);
        list.metadata.resource_version = state.rv.to_string();
        Ok(list)
    }

    async fn watch(&self, _: &WatchParams) -> Result<Watch<Obj>, ListWatchError> {
        let (tx, rx) = mpsc::unbounded_channel();
        self.state.lock().watchers.push(tx);
        Ok(Watch::new(ChannelBody(rx)))
    }

    fn supports_watch_list(&self) -> bool {
        false
    }
}

/// A response body fed through a channel; it ends when the sender is dropped.
struct ChannelBody(mpsc::UnboundedReceiver<Bytes>);

impl Body for ChannelBody {
    type Data = Bytes;
    type Error = std::io::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, std::io::Error>>> {
        self.0
            .poll_recv(cx)
            .map(|chunk| chunk.map(|c| Ok(Frame::data(c))))
    }
}
