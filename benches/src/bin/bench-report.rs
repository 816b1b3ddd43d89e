//! `bench-report [--runs N] [--envtest] [ID ...]`: runs the named workloads (all when none are
//! named) and prints one JSON line per workload with the median of its runs.
//!
//! `--envtest` starts a real control plane (kube-apiserver and etcd, see the envtest crate)
//! for the whole report and points I1 and W2 at it; `CLIENTGO_BENCH_KUBECONFIG` points them
//! at any other cluster.
//!
//! Every run is a fresh child process (`bench-report --child ID`), so that peak memory and
//! allocator state belong to one workload alone. Run it from a release build:
//! `cargo run --release -p clientgo-benches --bin bench-report`.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

use clientgo_benches::{decode, informer, median, pods, store, workloads};
use clientgo_envtest::{ARCHIVED_VERSIONS, ControlPlane, ControlPlaneOptions};
use serde_json::{Map, Value, json};

const DEFAULT_RUNS: usize = 3;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.as_slice() {
        [flag, id] if flag == "--child" => child(id),
        [flag] if flag == "--i1-helper" => {
            clientgo_benches::informer::helper();
            ExitCode::SUCCESS
        }
        [flag] if flag == "--sim-helper" => {
            clientgo_benches::write::sim_helper();
            ExitCode::SUCCESS
        }
        _ => match parse(&args) {
            Ok((runs, envtest, ids)) => report(runs, envtest, &ids),
            Err(message) => {
                eprintln!("bench-report: {message}");
                eprintln!(
                    "usage: bench-report [--runs N] [--envtest] [ID ...]   (IDs: {})",
                    workloads::ALL.join(", ")
                );
                ExitCode::from(2)
            }
        },
    }
}

fn parse(args: &[String]) -> Result<(usize, bool, Vec<String>), String> {
    let mut runs = DEFAULT_RUNS;
    let mut envtest = false;
    let mut ids = Vec::new();
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        if arg == "--envtest" {
            envtest = true;
        } else if arg == "--runs" {
            runs = args
                .next()
                .and_then(|n| n.parse().ok())
                .filter(|&n| n > 0)
                .ok_or("--runs takes a positive number")?;
        } else if workloads::ALL.contains(&arg.as_str()) {
            ids.push(arg.clone());
        } else {
            return Err(format!("unknown workload {arg:?}"));
        }
    }
    if ids.is_empty() {
        ids = workloads::ALL.iter().map(|id| id.to_string()).collect();
    }
    Ok((runs, envtest, ids))
}

/// Runs one workload in this process and prints its figures as one JSON line.
fn child(id: &str) -> ExitCode {
    match workloads::run(id) {
        Some(figures) => {
            println!("{figures}");
            ExitCode::SUCCESS
        }
        None => {
            eprintln!("bench-report: unknown workload {id:?}");
            ExitCode::from(2)
        }
    }
}

/// Generates the PodLists of D1 (10,000 pods) and S1 (100,000) once for every child
/// (gen-podlist.py takes seconds), unless the caller named files; returns the files to remove
/// at the end.
fn prepare_podlists(ids: &[String], command: &mut Vec<(String, String)>) -> Vec<PathBuf> {
    let mut made = Vec::new();
    for (prefix, count) in [("D1", decode::D1_PODS), ("S1", store::S1_PODS)] {
        let Some(var) = pods::podlist_env(count) else {
            continue;
        };
        let needed = ids.iter().any(|id| id.starts_with(prefix));
        if !needed || std::env::var_os(var).is_some() {
            continue;
        }
        let (bytes, source) = pods::generated(count);
        let path = std::env::temp_dir().join(format!(
            "clientgo-podlist-{count}-{}.json",
            std::process::id()
        ));
        if let Err(err) = std::fs::write(&path, bytes) {
            eprintln!(
                "bench-report: cannot write {}: {err}; each run generates its own",
                path.display()
            );
            continue;
        }
        command.push((var.into(), path.display().to_string()));
        command.push((pods::PODLIST_SOURCE_ENV.into(), source.as_str()));
        made.push(path);
    }
    made
}

fn report(runs: usize, envtest: bool, ids: &[String]) -> ExitCode {
    let exe = match std::env::current_exe() {
        Ok(exe) => exe,
        Err(err) => {
            eprintln!("bench-report: cannot find its own executable: {err}");
            return ExitCode::FAILURE;
        }
    };
    let mut env = Vec::new();
    // Kept until the report ends: dropping it stops the control plane.
    let _control_plane = if envtest {
        match ControlPlane::start(ControlPlaneOptions::default()) {
            Ok(cp) => {
                env.push((
                    informer::KUBECONFIG_ENV.to_owned(),
                    cp.kubeconfig_path().display().to_string(),
                ));
                env.push((
                    informer::SERVER_ENV.to_owned(),
                    format!("kube-apiserver {} (envtest)", ARCHIVED_VERSIONS),
                ));
                Some(cp)
            }
            Err(err) => {
                eprintln!("bench-report: cannot start the envtest control plane: {err}");
                return ExitCode::FAILURE;
            }
        }
    } else {
        None
    };
    let podlists = prepare_podlists(ids, &mut env);
    let code = run_all(&exe, runs, ids, &env);
    for path in podlists {
        let _ = std::fs::remove_file(path);
    }
    code
}

fn run_all(exe: &Path, runs: usize, ids: &[String], env: &[(String, String)]) -> ExitCode {
    for id in ids {
        let mut samples = Vec::with_capacity(runs);
        for _ in 0..runs {
            let child = Command::new(exe)
                .args(["--child", id])
                .envs(env.iter().cloned())
                .output();
            let output = match child {
                Ok(output) if output.status.success() => output,
                Ok(output) => {
                    eprintln!(
                        "bench-report: {id} failed: {}",
                        String::from_utf8_lossy(&output.stderr)
                    );
                    return ExitCode::FAILURE;
                }
                Err(err) => {
                    eprintln!("bench-report: cannot run {id}: {err}");
                    return ExitCode::FAILURE;
                }
            };
            match serde_json::from_slice::<Map<String, Value>>(&output.stdout) {
                Ok(sample) => samples.push(sample),
                Err(err) => {
                    eprintln!("bench-report: {id} printed no JSON object: {err}");
                    return ExitCode::FAILURE;
                }
            }
        }
        println!("{}", summarize(id, &samples));
    }
    ExitCode::SUCCESS
}

/// One line for a workload: every numeric field is the median of the runs.
fn summarize(id: &str, samples: &[Map<String, Value>]) -> Value {
    let mut line = Map::new();
    line.insert("workload".into(), json!(id));
    line.insert("impl".into(), json!("clientgo-rs"));
    line.insert("runs".into(), json!(samples.len()));
    if let Some(first) = samples.first() {
        for (field, value) in first {
            let mut values: Vec<f64> = samples
                .iter()
                .filter_map(|sample| sample.get(field)?.as_f64())
                .collect();
            let summary = match median(&mut values) {
                Some(m) if value.is_u64() => json!(m.round() as u64),
                Some(m) => json!(m),
                None => value.clone(),
            };
            line.insert(field.clone(), summary);
        }
    }
    Value::Object(line)
}
