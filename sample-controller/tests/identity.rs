//! The binary refuses, before connecting to anything, an identity or a Lease name the API
//! server would refuse on every request (exit code 2, clap's usage error, and one line on
//! stderr naming the flag and the rule), and its default identity is one the API server
//! accepts. No cluster is needed: `--kubeconfig` names a file that does not exist, so a run
//! that got past the checks fails at once with exit code 1 instead of connecting.

use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use clientgo_sample_controller::controller::CONTROLLER_NAME;
use clientgo_sharding::identity::{default_identity, validate_identity};

/// A kubeconfig that does not exist: the run fails right after the checks.
const NO_KUBECONFIG: &str = "/nonexistent/clientgo-rs/kubeconfig";

/// Runs the binary with `args` (and `env`), at most 60 seconds; its output.
fn run(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_sample-controller"));
    command
        .args(args)
        .args(["--kubeconfig", NO_KUBECONFIG])
        .env_remove("KUBERNETES_SERVICE_HOST")
        .env_remove("KUBECONFIG")
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = command.spawn().expect("the binary starts");
    let deadline = Instant::now() + Duration::from_secs(60);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            let output = child.wait_with_output().unwrap();
            panic!(
                "{command:?} did not exit within 60s:\n{}",
                String::from_utf8_lossy(&output.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

/// Asserts that the run was a usage error (2) whose stderr is one line starting `line`.
fn refused(output: &Output, line: &str) {
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(stderr.starts_with(line), "{stderr}");
    assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
}

const SHARDED: &[&str] = &["--sharded", "--namespace", "n", "--lease-namespace", "n"];

#[test]
fn a_sharded_replica_refuses_an_identity_the_api_server_would_refuse() {
    let with = |identity: &str| run(&[SHARDED, &["--identity", identity]].concat(), &[]);
    refused(
        &with("Host_1"),
        "sample-controller: --identity \"Host_1\": the member Lease name \
         \"sample-controller-shard-Host_1\" is not a DNS-1123 subdomain (",
    );
    let long = "a".repeat(64);
    refused(
        &with(&long),
        &format!("sample-controller: --identity \"{long}\": not a valid label value (at most 63"),
    );
    refused(
        &with(""),
        "sample-controller: --identity \"\": must not be empty",
    );
}

#[test]
fn a_sharded_replica_gets_past_the_checks_with_a_pod_name_or_the_default() {
    // Exit code 1: the kubeconfig is missing, so the checks passed.
    let given = run(
        &[SHARDED, &["--identity", "sample-controller-7d9f8-x2x4k"]].concat(),
        &[],
    );
    let stderr = String::from_utf8_lossy(&given.stderr);
    assert_eq!(given.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains(NO_KUBECONFIG), "{stderr}");
    assert!(!stderr.contains("identity"), "{stderr}");

    // The default, from a hostname the API server would refuse as it is.
    let default = run(SHARDED, &[("HOSTNAME", "Build_Host.Example.COM")]);
    let stderr = String::from_utf8_lossy(&default.stderr);
    assert_eq!(default.status.code(), Some(1), "{stderr}");
    assert!(!stderr.contains("identity"), "{stderr}");
}

#[test]
fn leader_election_refuses_a_lease_name_the_api_server_would_refuse() {
    refused(
        &run(
            &["--leader-elect", "--lease-name", "Sample_Controller"],
            &[],
        ),
        "sample-controller: --lease-name \"Sample_Controller\": not a DNS-1123 subdomain (",
    );
    refused(
        &run(&["--leader-elect", "--identity", ""], &[]),
        "sample-controller: --identity \"\": must not be empty",
    );
    // Any holder string will do: the identity names no object in this mode.
    let output = run(&["--leader-elect", "--identity", "Host_1 (pid 7)"], &[]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
}

#[test]
fn the_default_identity_names_a_shard_of_this_controller() {
    let identity = default_identity();
    assert_eq!(
        validate_identity(CONTROLLER_NAME, &identity),
        Ok(()),
        "{identity}"
    );
    assert!(
        identity.ends_with(&format!("-{}", std::process::id())),
        "{identity}"
    );
}
