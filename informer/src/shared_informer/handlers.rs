//! Adding and removing a shared informer's event handlers (client-go's `AddEventHandler`,
//! `AddEventHandlerWithResyncPeriod`, `AddEventHandlerWithOptions` and
//! `RemoveEventHandler`), with the resync-period rules of the module docs.
//!
//! Where it differs from client-go: [`HandlerOptions`] names the handler for metrics
//! (`informer_handler_buffer_length{handler}`) instead of carrying a logger.

use std::sync::Arc;
use std::time::Duration;

use clientgo_apimachinery::Object;

use super::{InformerError, MINIMUM_RESYNC_PERIOD, SharedIndexInformer};
use crate::handler::ResourceEventHandler;
use crate::processor::{Notification, Registration, determine_resync_period};

/// How a handler is added (client-go's `HandlerOptions`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HandlerOptions {
    /// The handler's name in metrics (`informer_handler_buffer_length{handler}`); `None` for
    /// its registration index on the informer (`"0"` for the first handler added, ...).
    pub name: Option<String>,
    /// The resync period it wants, adjusted as
    /// [`add_event_handler_with_resync`](SharedIndexInformer::add_event_handler_with_resync)
    /// describes; `None` for the informer's default period.
    pub resync_period: Option<Duration>,
}

impl<T: Object + Send + Sync + 'static> SharedIndexInformer<T> {
    /// Adds a handler with the informer's default resync period (client-go's
    /// `AddEventHandler`).
    pub fn add_event_handler(
        &self,
        handler: impl ResourceEventHandler<T> + 'static,
    ) -> Result<Registration<T>, InformerError> {
        self.add_event_handler_with_options(handler, HandlerOptions::default())
    }

    /// Adds a handler that wants a resync every `resync_period` (zero: never), adjusted by
    /// client-go's rules: at least [`MINIMUM_RESYNC_PERIOD`]; below the informer's resync
    /// check period, it lowers that period before the start and is raised to it after; zero
    /// if the informer does not resync. Fails once the informer has stopped.
    pub fn add_event_handler_with_resync(
        &self,
        handler: impl ResourceEventHandler<T> + 'static,
        resync_period: Duration,
    ) -> Result<Registration<T>, InformerError> {
        let options = HandlerOptions {
            resync_period: Some(resync_period),
            ..HandlerOptions::default()
        };
        self.add_event_handler_with_options(handler, options)
    }

    /// Adds a handler with a name and, optionally, its own resync period (client-go's
    /// `AddEventHandlerWithOptions`). Fails once the informer has stopped.
    pub fn add_event_handler_with_options(
        &self,
        handler: impl ResourceEventHandler<T> + 'static,
        options: HandlerOptions,
    ) -> Result<Registration<T>, InformerError> {
        let inner = &*self.inner;
        let mut state = inner.state.lock();
        if state.stopped {
            return Err(InformerError::Stopped {
                name: inner.name.clone(),
            });
        }
        let mut requested = options
            .resync_period
            .unwrap_or(state.default_handler_resync_period);
        if !requested.is_zero() {
            if requested < MINIMUM_RESYNC_PERIOD {
                tracing::warn!(informer = %inner.name, ?requested, "resync period too small: raised to 1s");
                requested = MINIMUM_RESYNC_PERIOD;
            }
            if requested < state.resync_check_period {
                if state.started {
                    tracing::warn!(informer = %inner.name, ?requested, check = ?state.resync_check_period,
                        "resync period smaller than the check period of a started informer: raised to it");
                    requested = state.resync_check_period;
                } else {
                    state.resync_check_period = requested;
                    inner.processor.resync_check_period_changed(requested);
                }
            }
        }
        let period = determine_resync_period(requested, state.resync_check_period);
        let handler = Box::new(super::journey::Traced {
            inner: handler,
            name: options.name.as_deref().map(Arc::from),
        });
        let upstream = inner.synced.clone();
        if !state.started {
            return Ok(inner.processor.add_listener(
                handler,
                options.name,
                requested,
                period,
                upstream,
            ));
        }
        // Join a running informer: hold delivery, replay the cache, release.
        let _blocked = inner.block_deltas.lock();
        let registration =
            inner
                .processor
                .add_listener(handler, options.name, requested, period, upstream);
        for object in inner.indexer.list() {
            registration.listener.add(Notification::Add {
                object,
                initial: true,
            });
        }
        Ok(registration)
    }

    /// Removes a handler (client-go's `RemoveEventHandler`): it receives nothing more, and
    /// what it had not handled is dropped. Idempotent; a registration of another informer is
    /// ignored. A notification may still be in the middle of being handled when this
    /// returns; [`Registration::wait_stopped`] waits for it.
    pub fn remove_event_handler(&self, registration: &Registration<T>) {
        let _blocked = self.inner.block_deltas.lock();
        self.inner.processor.remove_listener(registration);
    }

    /// Whether `registration` is a handler of this informer that was not removed.
    pub fn is_registered(&self, registration: &Registration<T>) -> bool {
        self.inner.processor.is_registered(registration)
    }

    /// How many handlers are registered.
    pub fn handler_count(&self) -> usize {
        self.inner.processor.len()
    }
}
