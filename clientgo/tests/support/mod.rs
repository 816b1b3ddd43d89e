//! What the example tests share.

// Each test binary uses a part.
#![allow(dead_code)]

use std::future::Future;
use std::time::Duration;

use clientgo::CancellationToken;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

/// An example's error.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

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

/// The next `n` lines, each within 60 s.
pub async fn lines(rx: &mut mpsc::UnboundedReceiver<String>, n: usize) -> Vec<String> {
    let mut got = Vec::with_capacity(n);
    for _ in 0..n {
        match tokio::time::timeout(Duration::from_secs(60), rx.recv()).await {
            Ok(Some(line)) => got.push(line),
            _ => panic!("{n} lines expected, got only {got:?}"),
        }
    }
    got
}

/// What an example prints.
pub type Print = Box<dyn Fn(String) + Send + Sync>;

/// Spawns an example, giving it a cancel token and a `print` that collects its lines.
pub fn printing<Fut>(
    start: impl FnOnce(CancellationToken, Print) -> Fut,
) -> (
    mpsc::UnboundedReceiver<String>,
    CancellationToken,
    JoinHandle<Result<(), BoxError>>,
)
where
    Fut: Future<Output = Result<(), BoxError>> + Send + 'static,
{
    let (tx, rx) = mpsc::unbounded_channel();
    let shutdown = CancellationToken::new();
    let print: Print = Box::new(move |line| tx.send(line).unwrap());
    let run = tokio::spawn(start(shutdown.clone(), print));
    (rx, shutdown, run)
}

/// Cancels `shutdown` and waits (bounded) for a clean exit.
pub async fn stop(shutdown: CancellationToken, run: JoinHandle<Result<(), BoxError>>) {
    shutdown.cancel();
    tokio::time::timeout(Duration::from_secs(60), run)
        .await
        .expect("the example exits after cancel")
        .unwrap()
        .expect("the example exits cleanly");
}
