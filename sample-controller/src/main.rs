//! `sample-controller`: runs the Foo controller against a cluster, or `--demo` against an
//! embedded API server.
//!
//! ```text
//! sample-controller --demo                          # the whole loop, no cluster needed
//! sample-controller [--kubeconfig PATH] [--context NAME] [--namespace NS] [--workers N]
//!                   [--leader-elect --lease-namespace NS --lease-name NAME --identity ID]
//! ```

use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;
use clientgo_rest::RestClient;
use clientgo_rest::config::{Config, KubeconfigOptions, LoadingRules};
use clientgo_sample_controller::{app, demo};
use tokio_util::sync::CancellationToken;

/// The Foo controller: keeps a Deployment for every Foo.
#[derive(Debug, Parser)]
#[command(name = "sample-controller", version)]
struct Args {
    /// Run the whole loop against an embedded API server, then exit.
    #[arg(long)]
    demo: bool,
    /// A kubeconfig file (default: $KUBECONFIG, ~/.kube/config, or in-cluster).
    #[arg(long)]
    kubeconfig: Option<std::path::PathBuf>,
    /// The kubeconfig context to use.
    #[arg(long)]
    context: Option<String>,
    /// Only watch this namespace (default: all).
    #[arg(long)]
    namespace: Option<String>,
    /// Parallel reconcile workers.
    #[arg(long, default_value_t = 2)]
    workers: usize,
    /// Seconds between informer resyncs.
    #[arg(long, default_value_t = 30)]
    resync_seconds: u64,
    /// Run only while holding a Lease, so that one of several replicas acts.
    #[arg(long)]
    leader_elect: bool,
    /// The Lease's namespace.
    #[arg(long, default_value = "kube-system")]
    lease_namespace: String,
    /// The Lease's name.
    #[arg(long, default_value = "sample-controller")]
    lease_name: String,
    /// This replica's identity in the Lease (default: hostname and process id).
    #[arg(long)]
    identity: Option<String>,
}

#[tokio::main]
async fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
    let args = Args::parse();
    let result = if args.demo {
        demo::run().await
    } else {
        run(args).await
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("sample-controller: {error}");
            ExitCode::FAILURE
        }
    }
}

async fn run(args: Args) -> Result<(), String> {
    let config = if args.kubeconfig.is_some() || args.context.is_some() {
        Config::from_kubeconfig(&KubeconfigOptions {
            loading_rules: args.kubeconfig.as_ref().map(LoadingRules::explicit),
            context: args.context.clone(),
            ..KubeconfigOptions::default()
        })
    } else {
        Config::infer()
    }
    .map_err(|e| e.to_string())?;
    let client = RestClient::new(&config).map_err(|e| e.to_string())?;
    let identity = args.identity.clone().unwrap_or_else(|| {
        let host = std::env::var("HOSTNAME").unwrap_or_else(|_| "sample-controller".into());
        format!("{host}_{}", std::process::id())
    });
    let options = app::Options {
        workers: args.workers,
        namespace: args.namespace.clone(),
        resync: Duration::from_secs(args.resync_seconds),
        leader_election: args.leader_elect.then(|| {
            (
                args.lease_namespace.clone(),
                args.lease_name.clone(),
                identity,
            )
        }),
    };
    let cancel = CancellationToken::new();
    tokio::spawn(shutdown_on_signal(cancel.clone()));
    app::run(client, options, cancel).await.map(|_| ())
}

/// Cancels on SIGINT or SIGTERM; in-flight reconciles finish before the process exits.
async fn shutdown_on_signal(cancel: CancellationToken) {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let Ok(mut term) = signal(SignalKind::terminate()) else {
            let _ = tokio::signal::ctrl_c().await;
            cancel.cancel();
            return;
        };
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = term.recv() => {}
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
    eprintln!("sample-controller: shutting down, draining in-flight work");
    cancel.cancel();
}
