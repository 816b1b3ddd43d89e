//! leader-elected: a worker that runs only while this process holds the Lease
//! `leader-elected-example`; run two copies and only one works, stop it and the other takes
//! over at once.
//!
//! Shows client-go's `tools/leaderelection` as a controller uses it (kube-controller-manager,
//! the sample-controller's `--leader-elect`): the informers run for the life of the process,
//! leader or not, so a new leader starts with a warm cache and the keys already queued; the
//! workers run inside the elector, on a token cancelled when leadership ends; the Lease is
//! read and written through a client of its own (`leader_election_client`), so renewals
//! never wait behind the controller's requests. The work is fenced (its future dropped)
//! before the lease can pass to another candidate. Here the work only prints each ConfigMap it
//! would reconcile. A lost lease ends the process with an error, to be restarted, as
//! kube-controller-manager does; on a signal the lease is released.
//!
//! `cargo run -p clientgo --example leader_elected` in two terminals (the kubeconfig's
//! cluster and namespace; the Lease is created there).

use std::error::Error;
use std::sync::Arc;
use std::time::Duration;

use clientgo::CancellationToken;
use clientgo::apimachinery::ObjectKey;
use clientgo::rest::{Config, RestClient};
use clientgo::tools::cache::{ResourceEventHandlerFuncs, SharedInformerFactory};
use clientgo::tools::leaderelection::{
    Ended, LeaderElectionConfig, LeaderElector, LeaseLock, leader_election_client,
};
use clientgo::util::workqueue::{Queue, WorkerPool};
use k8s_openapi::api::core::v1::ConfigMap;

type BoxError = Box<dyn Error + Send + Sync>;

/// The Lease the candidates compete for.
pub const LEASE: &str = "leader-elected-example";

#[tokio::main]
async fn main() -> Result<(), BoxError> {
    tracing_subscriber::fmt::init();
    let config = Config::infer()?;
    let namespace = config.default_namespace.clone();
    // Unique per candidate: the pod name in a cluster (HOSTNAME), plus the process id.
    let host = std::env::var("HOSTNAME").unwrap_or_else(|_| "leader-elected".into());
    let identity = format!("{host}_{}", std::process::id());
    let shutdown = clientgo::signals::shutdown_on_signal();
    run(config, &namespace, &identity, shutdown, |line| {
        println!("{line}")
    })
    .await
}

/// Campaigns for the Lease as `identity` and works while leading, until `shutdown`; says
/// (through `out`) when it leads and what it reconciles.
pub async fn run(
    config: Config,
    namespace: &str,
    identity: &str,
    shutdown: CancellationToken,
    out: impl Fn(String) + Send + Sync + 'static,
) -> Result<(), BoxError> {
    let out = Arc::new(out);
    let client = RestClient::new(&config)?;
    let factory = SharedInformerFactory::builder(&client)
        .namespace(namespace.to_owned())
        .build();
    let configmaps = factory.informer::<ConfigMap>();
    let queue = Queue::with_default_rate_limiter();
    let (on_add, on_update) = (queue.clone(), queue.clone());
    configmaps.add_event_handler(
        ResourceEventHandlerFuncs::new()
            .add_func(move |cm: &Arc<ConfigMap>, _| on_add.add(ObjectKey::of(&**cm)))
            .update_func(move |_, cm: &Arc<ConfigMap>| on_update.add(ObjectKey::of(&**cm))),
    )?;
    // The informers' own token: they outlive the leadership, and stop after it.
    let informers = CancellationToken::new();
    factory.start(&informers);
    factory.wait_for_cache_sync(Duration::from_secs(60)).await?;

    let election = LeaderElectionConfig {
        name: LEASE.into(),
        release_on_cancel: true, // on a clean exit, the next candidate need not wait
        // client-go's timing: a 15 s lease, a 10 s renew deadline, a retry every 2 s.
        ..LeaderElectionConfig::default()
    };
    let lease_client = leader_election_client(&config, &election)?;
    let lock = LeaseLock::new(&lease_client, namespace, LEASE, identity);
    let elector = LeaderElector::new(lock, election)?
        .on_new_leader(|holder| tracing::info!(holder, "the leader is now {holder}"));
    let lister = configmaps.lister().namespace(namespace);
    // Until when this candidate may act: the workers (tasks of their own) check it before
    // every step, so none acts after the lease's renew deadline, even if this task stalls.
    let fence = elector.fence();
    let ended = elector
        .run(shutdown, |leading| async move {
            out(format!("{identity} leads"));
            // A drain shorter than the renew deadline: the work stops before the elector
            // has to drop it.
            let workers = WorkerPool::new(2)
                .drain_timeout(Duration::from_secs(5))
                .fence(fence.deadline());
            let (identity, out) = (identity.to_owned(), out.clone());
            let reconcile = move |key: ObjectKey| {
                let entries = lister
                    .get(key.name())
                    .map_or(0, |cm| cm.data.iter().flatten().count());
                out(format!("{identity} reconciled {key} ({entries} entries)"));
                std::future::ready(Ok::<(), BoxError>(()))
            };
            workers.run(&queue, reconcile, leading).await;
        })
        .await;
    informers.cancel();
    factory.shutdown().await;
    match ended {
        Ended::Lost => Err(format!("lost the Lease {namespace}/{LEASE}: exiting").into()),
        Ended::Cancelled | Ended::WorkFinished => Ok(()),
    }
}
