//! `apiserver-sim`: runs the simulated Kubernetes API server until interrupted.
//!
//! Prints the URL and, with `--kubeconfig PATH`, writes a kubeconfig for kubectl; with
//! `--objects-from DIR`, creates the objects of the manifests in DIR first.
//! Faults are switched through `POST /_sim/<action>` (see the crate README).

use std::time::Duration;

use clap::Parser;
use clientgo_apiserver_sim::{ApiServerSim, SimConfig};

/// An in-process Kubernetes API server for tests, demos and fault injection.
#[derive(Debug, Parser)]
#[command(name = "apiserver-sim", version)]
struct Args {
    /// Port to listen on (127.0.0.1); 0 picks a free one.
    #[arg(long, default_value_t = 0)]
    port: u16,
    /// Serve HTTPS with a generated CA (printed to stderr, and in the kubeconfig).
    #[arg(long)]
    tls: bool,
    /// Require this bearer token.
    #[arg(long)]
    token: Option<String>,
    /// Events kept for watches.
    #[arg(long, default_value_t = 10_000)]
    history_size: usize,
    /// Seconds between watch bookmarks.
    #[arg(long, default_value_t = 60)]
    bookmark_interval: u64,
    /// Behave like a server without the WatchList feature (sendInitialEvents ignored).
    #[arg(long)]
    no_watch_list: bool,
    /// Write a kubeconfig for this server to PATH.
    #[arg(long)]
    kubeconfig: Option<std::path::PathBuf>,
    /// Create the objects of the manifest files (JSON or YAML) in DIR before serving.
    #[arg(long, value_name = "DIR")]
    objects_from: Option<std::path::PathBuf>,
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        .init();
    let args = Args::parse();
    let mut config = SimConfig {
        bind: std::net::SocketAddr::from(([127, 0, 0, 1], args.port)),
        tls: args.tls,
        token: args.token,
        history_size: args.history_size,
        bookmark_interval: Duration::from_secs(args.bookmark_interval.max(1)),
        ..SimConfig::default()
    };
    config.watch_list = !args.no_watch_list;
    let sim = ApiServerSim::start(config).await?;
    if let Some(dir) = &args.objects_from {
        let created = sim.load_manifests(dir)?;
        eprintln!("created {created} objects from {}", dir.display());
    }
    println!("{}", sim.url());
    if let Some(path) = &args.kubeconfig {
        sim.write_kubeconfig(path)?;
        eprintln!("kubeconfig written to {}", path.display());
    }
    tokio::signal::ctrl_c().await?;
    sim.shutdown();
    Ok(())
}
