//! `sample-controller`: runs the Foo controller against a cluster, or `--demo` against an
//! embedded API server.
//!
//! ```text
//! sample-controller --demo                          # the whole loop, no cluster needed
//! sample-controller --demo --trace run.html         # ... and its timeline (or run.json)
//! sample-controller [--kubeconfig PATH] [--context NAME] [--namespace NS] [--workers N]
//!                   [--priority-queue]
//!                   [--leader-elect --lease-namespace NS --lease-name NAME --identity ID]
//!                   [--sharded --lease-namespace NS --identity ID [--sharder-qps 50]]
//!                   [--metrics-addr 0.0.0.0:8080] [--health-addr 0.0.0.0:8081]
//! ```
//!
//! With `--health-addr` the controller records the journey of every key (a bounded flight
//! recorder) and serves it at `/debug/trace`, `/debug/trace.json` and `/debug/queue`.
//!
//! Exit status: 0 after a clean shutdown (SIGINT, SIGTERM) or the demo; 1 on an error,
//! including a lost lease with `--leader-elect` (the work is fenced and the process exits,
//! as kube-controller-manager does, so that its Deployment restarts it); 2 on a usage error:
//! clap's, or, before connecting to anything, a `--identity` (with `--sharded`) or a
//! `--lease-name` (with `--leader-elect`) that would name a Lease or a label value the API
//! server refuses, which no retry would mend.

use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;
use clientgo::CancellationToken;
use clientgo::flightrecorder::Recorder;
use clientgo::rest::RestClient;
use clientgo::rest::config::{Config, KubeconfigOptions, LoadingRules};
use clientgo::sharding::identity::{self, IdentityError};
use clientgo_sample_controller::controller::CONTROLLER_NAME;
use clientgo_sample_controller::serve::{self, Endpoints};
use clientgo_sample_controller::{app, demo, sharded};
use prometheus_client::registry::Registry;
use std::sync::Arc;

/// The Foo controller: keeps a Deployment for every Foo.
#[derive(Debug, Parser)]
#[command(name = "sample-controller", version)]
struct Args {
    /// Run the whole loop against an embedded API server, then exit.
    #[arg(long)]
    demo: bool,
    /// With --demo: write the run's timeline to FILE, an HTML page (FILE.html) or Chrome
    /// Trace Event Format JSON for ui.perfetto.dev (FILE.json).
    #[arg(long, value_name = "FILE", requires = "demo")]
    trace: Option<std::path::PathBuf>,
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
    /// Use the priority work queue: after a start or a failover, real changes pass the
    /// backlog of the initial list (default: client-go's FIFO queue).
    #[arg(long)]
    priority_queue: bool,
    /// Run only while holding a Lease, so that one of several replicas acts.
    #[arg(long)]
    leader_elect: bool,
    /// The Lease's namespace.
    #[arg(long, default_value = "kube-system")]
    lease_namespace: String,
    /// The Lease's name.
    #[arg(long, default_value = "sample-controller")]
    lease_name: String,
    /// This replica's identity: with --leader-elect the Lease's holder (any string); with
    /// --sharded the value of its Foos' shard label and the end of its member Lease's name
    /// (lowercase letters, digits, '-' and '.', at most 63). Default: the hostname made
    /// lowercase and valid, and the process id. Give the pod name to keep a replica's Foos
    /// across restarts.
    #[arg(long)]
    identity: Option<String>,
    /// Run as one of several shards: every replica reconciles the Foos the sharder assigns
    /// it, and leader election only picks the replica that assigns them (the Leases are in
    /// --lease-namespace; see --identity for what names each replica).
    #[arg(long, conflicts_with = "leader_elect")]
    sharded: bool,
    /// With --sharded: the sharder's own requests per second (burst twice that), apart from
    /// the reconciles' throttle.
    #[arg(long, value_name = "QPS", default_value_t = sharded::DEFAULT_SHARDER_QPS)]
    sharder_qps: f32,
    /// Serve Prometheus metrics (work queue, REST client, reconciles) on ADDR at /metrics.
    #[arg(long, value_name = "ADDR")]
    metrics_addr: Option<std::net::SocketAddr>,
    /// Serve /healthz and /readyz (ready once the caches have synced) on ADDR.
    #[arg(long, value_name = "ADDR")]
    health_addr: Option<std::net::SocketAddr>,
}

/// What `--trace` writes.
#[derive(Debug, Clone, Copy)]
enum TraceFormat {
    Html,
    Json,
}

impl TraceFormat {
    fn of(path: &std::path::Path) -> Result<TraceFormat, String> {
        match path.extension().and_then(|e| e.to_str()) {
            Some("html" | "htm") => Ok(TraceFormat::Html),
            Some("json") => Ok(TraceFormat::Json),
            _ => Err(format!(
                "--trace {}: the file must end in .html (a page) or .json (for ui.perfetto.dev)",
                path.display()
            )),
        }
    }
}

/// Logs go to stderr, filtered by `RUST_LOG` (default `warn`); the recorder, if any, gets
/// the journey events whatever that filter says.
fn init_tracing(recorder: Option<&Recorder>) {
    use tracing_subscriber::Layer;
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    let logs = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_filter(filter);
    tracing_subscriber::registry()
        .with(logs)
        .with(recorder.map(Recorder::layer))
        .init();
}

/// Writes the demo's recorded run.
fn write_trace(
    recorder: &Recorder,
    path: &std::path::Path,
    format: TraceFormat,
) -> Result<(), String> {
    let snapshot = recorder.snapshot();
    let text = match format {
        TraceFormat::Html => snapshot.html("sample-controller --demo"),
        TraceFormat::Json => snapshot.chrome_trace(),
    };
    std::fs::write(path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    let open = match format {
        TraceFormat::Html => "open it in a browser",
        TraceFormat::Json => "open it at https://ui.perfetto.dev",
    };
    println!("\nThe run's timeline is in {} ({open}).", path.display());
    Ok(())
}

#[tokio::main]
async fn main() -> ExitCode {
    let args = Args::parse();
    let trace = match args.trace.as_deref().map(TraceFormat::of).transpose() {
        Ok(format) => args.trace.clone().zip(format),
        Err(error) => {
            eprintln!("sample-controller: {error}");
            return ExitCode::FAILURE;
        }
    };
    let identity = args
        .identity
        .clone()
        .unwrap_or_else(identity::default_identity);
    if !args.demo
        && let Err(error) = check_names(&args, &identity)
    {
        eprintln!("sample-controller: {error}");
        // clap's exit code for a usage error.
        return ExitCode::from(2);
    }
    let recorder =
        (trace.is_some() || (!args.demo && args.health_addr.is_some())).then(Recorder::default);
    init_tracing(recorder.as_ref());
    let result = if args.demo {
        let result = demo::run().await;
        match (&recorder, &trace) {
            (Some(recorder), Some((path, format))) => {
                result.and(write_trace(recorder, path, *format))
            }
            _ => result,
        }
    } else {
        run(args, identity, recorder).await
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("sample-controller: {error}");
            ExitCode::FAILURE
        }
    }
}

/// Checks the flags that name Kubernetes objects and label values, before connecting: the API
/// server would refuse a bad one on every request, forever (a member Lease named
/// `sample-controller-shard-<host>_<pid>` is refused with a 422 every few seconds). With
/// `--sharded`, `identity` (given or default) ends the member Lease's name and is the shard
/// label's value; with `--leader-elect`, `--lease-name` names the Lease and `identity` is
/// only its holder string. Returns the one-line usage error.
fn check_names(args: &Args, identity: &str) -> Result<(), String> {
    if args.sharded {
        return identity::validate_identity(CONTROLLER_NAME, identity).map_err(|error| {
            match error {
                IdentityError::ControllerNotLabelValue { .. }
                | IdentityError::SharderLeaseName { .. } => error.to_string(),
                // The identity's errors read `identity "<identity>": ...`.
                _ if args.identity.is_some() => format!("--{error}"),
                _ => format!("the default {error}; give one with --identity"),
            }
        });
    }
    if args.leader_elect {
        if !identity::is_dns1123_subdomain(&args.lease_name) {
            return Err(format!(
                "--lease-name {:?}: not a DNS-1123 subdomain ({}), and it names the Lease",
                args.lease_name,
                identity::DNS1123_SUBDOMAIN_RULE
            ));
        }
        if identity.is_empty() {
            return Err("--identity \"\": must not be empty (it names the Lease's holder)".into());
        }
    }
    Ok(())
}

async fn run(args: Args, identity: String, recorder: Option<Recorder>) -> Result<(), String> {
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
    let mut registry = Registry::default();
    let client = if args.metrics_addr.is_some() {
        RestClient::builder(config.clone())
            .metrics(&mut registry)
            .build()
    } else {
        RestClient::new(&config)
    }
    .map_err(|e| e.to_string())?;
    let leader_election = if args.leader_elect {
        Some(
            app::LeaderElection::new(
                &config,
                args.lease_namespace.clone(),
                args.lease_name.clone(),
                identity.clone(),
            )
            .map_err(|e| e.to_string())?,
        )
    } else {
        None
    };
    let options = app::Options {
        workers: args.workers,
        namespace: args.namespace.clone(),
        resync: Duration::from_secs(args.resync_seconds),
        priority_queue: args.priority_queue,
        leader_election,
        ..app::Options::default()
    };
    // SIGTERM or Ctrl-C: in-flight reconciles get the drain timeout to finish before the
    // process exits; a second signal exits at once.
    let cancel = clientgo::signals::shutdown_on_signal();
    let metrics = args.metrics_addr.is_some().then_some(&mut registry);
    // A lost lease (the leader's, or a shard's member Lease) ends the run with an error, so
    // the process exits non-zero and its Deployment restarts it, as kube-controller-manager
    // does.
    if args.sharded {
        let sharding = sharded::Sharding {
            identity,
            lease_namespace: args.lease_namespace.clone(),
            sharder_qps: args.sharder_qps,
        };
        let replica = sharded::build(&config, client, options, sharding, metrics)
            .map_err(|e| e.to_string())?;
        serve_endpoints(&args, registry, replica.ready(), recorder, &cancel).await?;
        return replica.run(cancel).await.map_err(|e| e.to_string());
    }
    let app = app::build(client, options, metrics)?;
    serve_endpoints(&args, registry, app.ready(), recorder, &cancel).await?;
    app.run(cancel).await.map(|_| ()).map_err(|e| e.to_string())
}

/// Serves `/metrics` (from `registry`), `/healthz`, `/readyz` (from `ready`) and, with a
/// `recorder`, the `/debug/...` pages on `--metrics-addr` and `--health-addr`, until `cancel`.
async fn serve_endpoints(
    args: &Args,
    registry: Registry,
    ready: impl Fn() -> bool + Send + Sync + 'static,
    recorder: Option<Recorder>,
    cancel: &CancellationToken,
) -> Result<(), String> {
    let mut endpoints = Endpoints::new(Some(registry), ready);
    if let Some(recorder) = recorder {
        endpoints = endpoints.with_recorder(recorder);
    }
    let endpoints = Arc::new(endpoints);
    for addr in [args.metrics_addr, args.health_addr].into_iter().flatten() {
        let bound = serve::serve(addr, endpoints.clone(), cancel.clone())
            .await
            .map_err(|e| format!("cannot listen on {addr}: {e}"))?;
        tracing::info!(%bound, "serving /metrics, /healthz, /readyz and /debug/...");
    }
    Ok(())
}
