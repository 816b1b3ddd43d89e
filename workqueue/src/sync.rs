//! Synchronisation primitives, swapped for loom's under `--cfg clientgo_loom`.
//!
//! The queue's concurrency is checked with the [loom] model checker, which can only explore
//! interleavings of primitives it controls. Everything the queue core synchronises on goes
//! through this module so that a loom build sees all of it. (The flag is our own, not plain
//! `loom`: tokio reads `cfg(loom)` itself and would switch its internals too.)
//!
//! [loom]: https://docs.rs/loom

#[cfg(not(clientgo_loom))]
pub(crate) use std::sync::{
    Arc,
    atomic::{AtomicBool, fence},
};

#[cfg(clientgo_loom)]
pub(crate) use loom::sync::{
    Arc,
    atomic::{AtomicBool, fence},
};

/// A mutex with parking_lot's poison-free interface, backed by loom's mutex under loom.
#[derive(Debug, Default)]
pub(crate) struct Mutex<T>(
    #[cfg(not(clientgo_loom))] parking_lot::Mutex<T>,
    #[cfg(clientgo_loom)] loom::sync::Mutex<T>,
);

#[cfg(not(clientgo_loom))]
impl<T> Mutex<T> {
    pub(crate) fn new(value: T) -> Self {
        Self(parking_lot::Mutex::new(value))
    }

    pub(crate) fn lock(&self) -> parking_lot::MutexGuard<'_, T> {
        self.0.lock()
    }

    /// Whether some thread holds the lock (for tests that check what runs outside it).
    #[cfg(test)]
    pub(crate) fn is_locked(&self) -> bool {
        self.0.is_locked()
    }
}

#[cfg(clientgo_loom)]
impl<T> Mutex<T> {
    pub(crate) fn new(value: T) -> Self {
        Self(loom::sync::Mutex::new(value))
    }

    pub(crate) fn lock(&self) -> loom::sync::MutexGuard<'_, T> {
        // A panic while the lock is held already failed the model; poisoning adds nothing.
        self.0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// Runs a future to completion on the current thread, parking the thread while it waits.
///
/// This is what the blocking variants of `get` and `shut_down_with_drain` use, so that plain
/// threads share one waiting mechanism with async tasks.
#[cfg(not(clientgo_loom))]
pub(crate) fn block_on<F: std::future::Future>(future: F) -> F::Output {
    use std::pin::pin;
    use std::task::{Context, Poll, Wake, Waker};
    use std::thread::{self, Thread};

    struct Unpark(Thread);
    impl Wake for Unpark {
        fn wake(self: std::sync::Arc<Self>) {
            self.0.unpark();
        }
        fn wake_by_ref(self: &std::sync::Arc<Self>) {
            self.0.unpark();
        }
    }

    let waker = Waker::from(std::sync::Arc::new(Unpark(thread::current())));
    let mut cx = Context::from_waker(&waker);
    let mut future = pin!(future);
    loop {
        match future.as_mut().poll(&mut cx) {
            Poll::Ready(output) => return output,
            // A spurious unpark only costs one more poll: the future re-checks its condition.
            Poll::Pending => thread::park(),
        }
    }
}

#[cfg(clientgo_loom)]
pub(crate) use loom::future::block_on;
