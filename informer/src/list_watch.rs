//! A [`ListerWatcher`] over the REST client: client-go's `NewFilteredListWatchFromClient`.
//!
//! [`ListWatch`] lists and watches one collection (`GET …/<resource>` and
//! `GET …/<resource>?watch=true`) through a [`ResourceClient`], typed or dynamic, optionally
//! narrowed by label and field selectors that ride on every request (the informer factory's
//! "tweak list options"). Watch bodies are decoded as they arrive by
//! [`clientgo_watch::Watch`].
//!
//! Where it differs from client-go: the selectors are fixed at construction rather than set
//! by a closure that edits each request's options, which is all that closure is ever used for.

use clientgo_apimachinery::ObjectList;
use clientgo_rest::{ListParams, ResourceClient, WatchParams};
use clientgo_watch::Watch;
use serde::de::DeserializeOwned;

use crate::listwatch::{ListWatchError, ListerWatcher};

/// Lists and watches one collection through the REST client.
pub struct ListWatch<T> {
    client: ResourceClient<T>,
    label_selector: Option<String>,
    field_selector: Option<String>,
}

impl<T> Clone for ListWatch<T> {
    fn clone(&self) -> Self {
        Self {
            client: self.client.clone(),
            label_selector: self.label_selector.clone(),
            field_selector: self.field_selector.clone(),
        }
    }
}

impl<T> std::fmt::Debug for ListWatch<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ListWatch")
            .field("client", &self.client)
            .field("label_selector", &self.label_selector)
            .field("field_selector", &self.field_selector)
            .finish()
    }
}

impl<T> ListWatch<T> {
    /// Lists and watches everything `client` addresses (its namespace, or all namespaces).
    pub fn new(client: ResourceClient<T>) -> Self {
        Self {
            client,
            label_selector: None,
            field_selector: None,
        }
    }

    /// Only objects whose labels match `selector` (e.g. `app=web,tier!=cache`).
    pub fn with_label_selector(mut self, selector: impl Into<String>) -> Self {
        self.label_selector = Some(selector.into()).filter(|s| !s.is_empty());
        self
    }

    /// Only objects whose fields match `selector` (e.g. `metadata.name=foo`).
    pub fn with_field_selector(mut self, selector: impl Into<String>) -> Self {
        self.field_selector = Some(selector.into()).filter(|s| !s.is_empty());
        self
    }

    fn selector(own: &Option<String>, asked: &Option<String>) -> Option<String> {
        asked.clone().or_else(|| own.clone())
    }
}

/// The REST client's error as a reflector sees it.
fn list_watch_error(error: clientgo_rest::Error) -> ListWatchError {
    match error {
        clientgo_rest::Error::Api(api) => ListWatchError::Status(Box::new(api.status)),
        clientgo_rest::Error::Decode(decode) => ListWatchError::Decode(decode),
        other => ListWatchError::Transport(Box::new(other)),
    }
}

impl<T> ListerWatcher<T> for ListWatch<T>
where
    T: DeserializeOwned + Send + Sync + 'static,
{
    async fn list(&self, options: &ListParams) -> Result<ObjectList<T>, ListWatchError> {
        let params = ListParams {
            label_selector: Self::selector(&self.label_selector, &options.label_selector),
            field_selector: Self::selector(&self.field_selector, &options.field_selector),
            ..options.clone()
        };
        self.client.list(&params).await.map_err(list_watch_error)
    }

    async fn watch(&self, options: &WatchParams) -> Result<Watch<T>, ListWatchError> {
        let params = WatchParams {
            label_selector: Self::selector(&self.label_selector, &options.label_selector),
            field_selector: Self::selector(&self.field_selector, &options.field_selector),
            ..options.clone()
        };
        self.client.watch(&params).await.map_err(list_watch_error)
    }
}
