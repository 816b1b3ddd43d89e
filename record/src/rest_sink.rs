//! The event sink over the REST client: client-go's `EventSinkImpl`
//! (`typed/core/v1/event_expansion.go`), writing core/v1 Events with `POST` and strategic
//! merge `PATCH` in each event's own namespace.

use clientgo_rest::{Error, PatchParams, PatchType, PostParams, ResourceClient, RestClient};
use serde_json::Value;

use crate::event::Event;
use crate::sink::{EventSink, SinkError};

/// Writes events to the API server through a [`RestClient`].
#[derive(Debug, Clone)]
pub struct RestEventSink {
    client: RestClient,
}

impl RestEventSink {
    /// A sink writing through `client`.
    pub fn new(client: &RestClient) -> RestEventSink {
        RestEventSink {
            client: client.clone(),
        }
    }

    fn events(&self, event: &Event) -> ResourceClient<Event> {
        let namespace = match event.metadata.namespace.as_str() {
            "" => "default",
            namespace => namespace,
        };
        ResourceClient::namespaced(&self.client, namespace)
    }
}

/// The API's answer as the broadcaster's retry rules see it.
fn sink_error(error: Error) -> SinkError {
    match error {
        Error::Api(api) => SinkError::from_status(api.status),
        other => SinkError::Transport(Box::new(other)),
    }
}

impl EventSink for RestEventSink {
    async fn create(&self, event: &Event) -> Result<Event, SinkError> {
        self.events(event)
            .create(event, &PostParams::default())
            .await
            .map_err(sink_error)
    }

    async fn patch(&self, event: &Event, patch: &Value) -> Result<Event, SinkError> {
        self.events(event)
            .patch(
                &event.metadata.name,
                PatchType::StrategicMerge,
                patch,
                &PatchParams::default(),
            )
            .await
            .map_err(sink_error)
    }
}
