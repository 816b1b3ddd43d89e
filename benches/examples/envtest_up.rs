//! Starts a real control plane (envtest: kube-apiserver and etcd), prints its kubeconfig's
//! path and keeps it up until stdin closes: for profiling I1 against one server across many
//! runs (`CLIENTGO_BENCH_KUBECONFIG=<path> bench-report --child I1sync`).

use std::io::Read;

use clientgo_envtest::{ControlPlane, ControlPlaneOptions};

fn main() {
    let cp = ControlPlane::start(ControlPlaneOptions::default()).expect("the control plane starts");
    println!("{}", cp.kubeconfig_path().display());
    let mut rest = Vec::new();
    let _ = std::io::stdin().read_to_end(&mut rest);
}
