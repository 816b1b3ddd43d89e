//! What the example tests share.

use std::future::Future;
use std::time::Duration;

/// Checks `f` every 100 ms for at most 60 s; panics naming `what` when it never answers.
pub async fn eventually<T, Fut: Future<Output = Option<T>>>(what: &str, f: impl Fn() -> Fut) -> T {
    for _ in 0..600 {
        if let Some(value) = f().await {
            return value;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("timed out waiting for {what}");
}
