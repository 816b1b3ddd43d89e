//! The control plane itself: it starts, the REST client talks to it with the kubeconfig it
//! writes, namespaces keep tests apart, compaction and restarts work, and no process is ever
//! left behind, whether the control plane is dropped or the test process is killed.

use std::time::{Duration, Instant};

use clientgo_envtest::{ControlPlane, ControlPlaneOptions};
use clientgo_rest::{Config, RestClient};

fn client(cp: &ControlPlane) -> RestClient {
    let config = Config::from_kubeconfig_file(cp.kubeconfig_path()).expect("the kubeconfig loads");
    RestClient::new(&config).expect("a client")
}

/// True while `/proc/PID` exists and the process is not a zombie.
fn running(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => !stat
            .rsplit(')')
            .next()
            .is_some_and(|rest| rest.trim_start().starts_with('Z')),
        Err(_) => false,
    }
}

fn wait_all_gone(pids: &[u32], bound: Duration) -> Vec<u32> {
    let deadline = Instant::now() + bound;
    loop {
        let alive: Vec<u32> = pids.iter().copied().filter(|&p| running(p)).collect();
        if alive.is_empty() || Instant::now() >= deadline {
            return alive;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[tokio::test]
async fn the_rest_client_talks_to_kube_apiserver_1_36() {
    let Some(cp) = ControlPlane::shared() else {
        return;
    };
    let version = client(cp)
        .get()
        .abs_path("/version")
        .send()
        .await
        .expect("GET /version");
    let version: serde_json::Value = serde_json::from_slice(&version.body).unwrap();
    assert_eq!(version["gitVersion"], "v1.36.2", "{version}");
}

#[tokio::test]
async fn namespaces_keep_tests_apart() {
    let Some(cp) = ControlPlane::shared() else {
        return;
    };
    let a = cp.create_namespace("apart").unwrap();
    let b = cp.create_namespace("apart").unwrap();
    assert_ne!(a, b);
    assert!(a.starts_with("apart-"), "{a}");
    let response = client(cp)
        .get()
        .group_version("", "v1")
        .resource("namespaces")
        .name(&a)
        .send()
        .await
        .expect("the namespace exists");
    let ns: serde_json::Value = serde_json::from_slice(&response.body).unwrap();
    assert_eq!(ns["status"]["phase"], "Active");
}

#[test]
fn compaction_returns_a_growing_revision() {
    let Some(cp) = ControlPlane::shared() else {
        return;
    };
    let first = cp.compact().unwrap();
    cp.create_namespace("compact").unwrap();
    let second = cp.compact().unwrap();
    assert!(second > first, "{second} > {first}");
}

#[test]
fn a_dropped_control_plane_leaves_no_process_and_no_directory() {
    if ControlPlane::shared().is_none() {
        return;
    }
    let cp = ControlPlane::start(ControlPlaneOptions::default()).unwrap();
    let pids = cp.pids();
    assert_eq!(pids.len(), 2, "etcd and kube-apiserver: {pids:?}");
    assert!(pids.iter().all(|&p| running(p)));
    let dir = cp.dir().to_owned();

    // A restart on the same address while the first instance was serving.
    let before = cp.pids()[1];
    cp.restart_apiserver().unwrap();
    let after = cp.pids()[1];
    assert_ne!(before, after, "a new kube-apiserver process");
    assert!(!running(before), "the old kube-apiserver is gone");
    cp.create_namespace("after-restart").unwrap();

    let pids = cp.pids();
    drop(cp);
    assert_eq!(
        wait_all_gone(&pids, Duration::from_secs(10)),
        Vec::<u32>::new()
    );
    assert!(!dir.exists(), "{} removed", dir.display());
}

/// Run in a child process by the test below: starts a control plane, prints its pids and
/// waits to be killed.
#[test]
fn child_holding_a_control_plane() {
    if std::env::var_os("ENVTEST_CHILD").is_none() {
        return;
    }
    let cp = ControlPlane::start(ControlPlaneOptions::default()).unwrap();
    println!("PIDS {:?}", cp.pids());
    std::thread::sleep(Duration::from_secs(120));
    unreachable!("the parent kills this process");
}

#[test]
fn a_killed_test_process_leaves_no_process_behind() {
    use std::io::{BufRead, BufReader};
    if ControlPlane::shared().is_none() {
        return;
    }
    let mut child = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "child_holding_a_control_plane",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("ENVTEST_CHILD", "1")
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = BufReader::new(child.stdout.take().unwrap());
    // The harness may print the test's name on the same line first.
    let line = stdout
        .lines()
        .map_while(Result::ok)
        .find_map(|l| l.find("PIDS ").map(|at| l[at + "PIDS ".len()..].to_owned()))
        .expect("the child prints its pids");
    let pids: Vec<u32> = line
        .trim_matches(|c| c == '[' || c == ']')
        .split(", ")
        .map(|p| p.parse().unwrap())
        .collect();
    assert_eq!(pids.len(), 2, "{line}");
    assert!(pids.iter().all(|&p| running(p)));
    child.kill().unwrap(); // SIGKILL: no destructor, no atexit handler runs
    child.wait().unwrap();
    assert_eq!(
        wait_all_gone(&pids, Duration::from_secs(10)),
        Vec::<u32>::new()
    );
}
