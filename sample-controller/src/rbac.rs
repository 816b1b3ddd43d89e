//! The permissions the sample-controller needs, declared here, beside the code, and turned
//! into `artifacts/rbac.yaml` and `artifacts/rbac-sharded.yaml` by
//! [`clientgo_derive::rbac`]: what kubebuilder's `// +kubebuilder:rbac:...` markers and
//! controller-tools' `rbac` generator do for a Go controller. A test fails when a file
//! drifts from what this module generates.
//!
//! Every rule says which request needs it. `tests/rbac_minimal.rs` proves on a real
//! kube-apiserver that these rules are enough (a Foo converges, is scaled, repaired and
//! finalized, Events are recorded and the leader election Lease is taken and renewed,
//! without one 403) and that none is too many: with any one verb on any one resource taken
//! away, the step that needs it meets a 403 (on that request; for `foos/finalizers`, on the
//! Deployment's create, which the admission plugin refuses), and `list` does on a server
//! without streaming lists (kube-apiserver 1.36's informers' lists are watches).
//!
//! What each part of the program asks of the API server:
//! * the informers (`src/app.rs`): list and watch Foos and Deployments (streaming lists are
//!   watches; a server that refuses them gets a list);
//! * the finalizer (`src/finalizer.rs`): merge patches of Foos;
//! * a reconcile (`src/controller.rs`): creates and updates Deployments; creating one with
//!   `blockOwnerDeletion` needs `update` of `foos/finalizers` where the API server runs
//!   the OwnerReferencesPermissionEnforcement admission plugin (OpenShift does, and the
//!   test turns it on); reads a Deployment the cache lacks for a Foo reconciled before;
//!   updates `foos/status`;
//! * the records (`src/records.rs`): reads, creates and merge-patches the ConfigMap
//!   `foo-records` (a create cannot be limited to a name; the rest is);
//! * the event recorder (`clientgo::tools::record::RestEventSink`, as client-go's `EventSinkImpl`):
//!   core/v1 Events (not `events.k8s.io`), created, and patched when the same event repeats
//!   (the correlator counts it);
//! * `--leader-elect` (`clientgo::tools::leaderelection::LeaseLock`): get, create and update the
//!   Lease (a release is an update), in the lease namespace only: a `Role` there;
//! * `--sharded` needs more, in [`SHARDING_RULES`] and [`SHARDING_LEASE_RULES`]: the
//!   sharder labels Foos and Deployments and a replica acknowledges a drain, both with
//!   patches (Foos are patched anyway, Deployments are not otherwise); the member Leases
//!   and the sharder's Lease are listed and watched (the sharder follows the members),
//!   created, updated, and a dead replica's held Lease deleted. The sharded mode does not
//!   use `--leader-elect`'s Lease. These rules are a separate role and file,
//!   `artifacts/rbac-sharded.yaml`, applied beside `artifacts/rbac.yaml`; the real-server
//!   proof covers the normal mode only.

use clientgo_derive::rbac::{self, Binding, Role, Rule, ServiceAccount};

/// The controller's name: the ServiceAccount, the `ClusterRole` and its binding.
pub const NAME: &str = "sample-controller";
/// The namespace the controller runs in (`artifacts/deployment.yaml`): its ServiceAccount
/// and, with `--lease-namespace`, its Leases.
pub const NAMESPACE: &str = "sample-controller";
/// The name of the sharded mode's extra roles and bindings.
pub const SHARDING_NAME: &str = "sample-controller-sharding";

const FOOS: &[&str] = &["samplecontroller.k8s.io"];
const APPS: &[&str] = &["apps"];
const CORE: &[&str] = &[""];
const COORDINATION: &[&str] = &["coordination.k8s.io"];

/// What the controller needs in every namespace it serves: the `ClusterRole`.
pub const CONTROLLER_RULES: &[Rule] = &[
    Rule::new(FOOS, &["foos"], &["list", "watch"])
        .because("The Foo informer (src/app.rs): a list, or a streaming list, then a watch."),
    Rule::new(FOOS, &["foos"], &["patch"]).because(
        "Adding and removing the finalizer samplecontroller.k8s.io/cleanup (src/finalizer.rs).",
    ),
    Rule::new(FOOS, &["foos/status"], &["update"])
        .because("The status write of a reconcile (src/controller.rs)."),
    Rule::new(FOOS, &["foos/finalizers"], &["update"]).because(
        "Creating a Deployment whose ownerReference to its Foo says blockOwnerDeletion, where\n\
         the OwnerReferencesPermissionEnforcement admission plugin runs.",
    ),
    Rule::new(APPS, &["deployments"], &["list", "watch"])
        .because("The Deployment informer (src/app.rs)."),
    Rule::new(APPS, &["deployments"], &["get"]).because(
        "A Foo reconciled before whose Deployment the cache lacks: deleted, or not seen yet.",
    ),
    Rule::new(APPS, &["deployments"], &["create", "update"])
        .because("Creating a Foo's Deployment, and setting its replicas back to the Foo's."),
    Rule::new(CORE, &["configmaps"], &["create"]).because(
        "The first record of a namespace creates the ConfigMap foo-records (src/records.rs);\n\
         a create cannot be limited to one name.",
    ),
    Rule::new(CORE, &["configmaps"], &["get", "patch"])
        .names(&[crate::records::RECORDS])
        .because("Reading a record, writing and removing one (merge patches)."),
    Rule::new(CORE, &["events"], &["create", "patch"]).because(
        "The event recorder: core/v1 Events, created, and patched when one repeats\n\
         (clientgo_record::RestEventSink, as client-go's EventSinkImpl).",
    ),
];

/// What `--leader-elect` needs in the lease namespace: a `Role` there.
pub const LEADER_ELECTION_RULES: &[Rule] =
    &[
        Rule::new(COORDINATION, &["leases"], &["get", "create", "update"])
            .because("The leader election Lease: read, taken, renewed and released."),
    ];

/// What `--sharded` needs beyond [`CONTROLLER_RULES`], in every namespace: a `ClusterRole`.
pub const SHARDING_RULES: &[Rule] = &[
    Rule::new(FOOS, &["foos"], &["patch"]).because(SHARD_LABELS),
    Rule::new(APPS, &["deployments"], &["patch"]).because(SHARD_LABELS),
];

const SHARD_LABELS: &str = "The sharder's shard labels and a replica's drain acknowledgements: patches of Foos\n\
                            and of Deployments (rbac.yaml grants Foos' for the finalizer already).";

/// What `--sharded` needs in the lease namespace (instead of [`LEADER_ELECTION_RULES`]):
/// a `Role` there.
pub const SHARDING_LEASE_RULES: &[Rule] = &[Rule::new(
    COORDINATION,
    &["leases"],
    &["get", "list", "watch", "create", "update", "delete"],
)
.because(
    "Member Leases and the sharder's Lease: taken and renewed; listed and watched by the\n\
     sharder, which holds a dead replica's Lease and deletes it once its Foos moved.",
)];

/// The `ClusterRole` `sample-controller`.
pub fn cluster_role() -> Role {
    Role::cluster(NAME, CONTROLLER_RULES)
}

/// The `Role` `sample-controller` for `--leader-elect` with its Lease in `namespace`.
pub fn leader_election_role(namespace: &str) -> Role {
    Role::namespaced(NAME, namespace, LEADER_ELECTION_RULES)
}

/// The `ClusterRole` `sample-controller-sharding`.
pub fn sharding_cluster_role() -> Role {
    Role::cluster(SHARDING_NAME, SHARDING_RULES)
}

/// The `Role` `sample-controller-sharding` for `--sharded` with its Leases in `namespace`.
pub fn sharding_lease_role(namespace: &str) -> Role {
    Role::namespaced(SHARDING_NAME, namespace, SHARDING_LEASE_RULES)
}

/// The controller's ServiceAccount (`artifacts/deployment.yaml` runs the pods as it).
pub fn service_account() -> ServiceAccount {
    ServiceAccount::new(NAMESPACE, NAME)
}

const HEADER: &str = "\
# Generated from sample-controller/src/rbac.rs (clientgo_derive::rbac, as controller-gen's
# rbac generator makes roles of +kubebuilder:rbac markers): a test fails when this file says
# anything else; regenerate it with
#   SAMPLE_CONTROLLER_WRITE_ARTIFACTS=1 cargo test -p clientgo-sample-controller --lib rbac
# Above each rule, the requests that need it. tests/rbac_minimal.rs proves on a real
# kube-apiserver that the rules are enough and that each verb is needed.
";

/// `artifacts/rbac.yaml`: the ServiceAccount, the `ClusterRole` and its binding, and the
/// leader election `Role` in [`NAMESPACE`] and its binding.
pub fn rbac_yaml() -> String {
    let account = service_account();
    let cluster = cluster_role();
    let leases = leader_election_role(NAMESPACE);
    file(&[
        account.to_yaml(),
        cluster.to_yaml(),
        cluster.bind(&account).to_yaml(),
        leases.to_yaml(),
        leases.bind(&account).to_yaml(),
    ])
}

/// `artifacts/rbac-sharded.yaml`: what `--sharded` needs beyond `artifacts/rbac.yaml`.
pub fn rbac_sharded_yaml() -> String {
    let account = service_account();
    let cluster = sharding_cluster_role();
    let leases = sharding_lease_role(NAMESPACE);
    let bindings: [Binding; 2] = [cluster.bind(&account), leases.bind(&account)];
    file(&[
        cluster.to_yaml(),
        bindings[0].to_yaml(),
        leases.to_yaml(),
        bindings[1].to_yaml(),
    ])
}

fn file(documents: &[String]) -> String {
    format!("{HEADER}{}", rbac::yaml_documents(documents))
}

/// `artifacts/rbac.yaml` as it is (a test checks it is [`rbac_yaml`]).
pub const RBAC_YAML: &str = include_str!("../artifacts/rbac.yaml");
/// `artifacts/rbac-sharded.yaml` as it is (a test checks it is [`rbac_sharded_yaml`]).
pub const RBAC_SHARDED_YAML: &str = include_str!("../artifacts/rbac-sharded.yaml");

#[cfg(test)]
mod tests {
    use super::*;

    /// The artifacts are what this module generates: change a rule and this fails until the
    /// files say the same (`SAMPLE_CONTROLLER_WRITE_ARTIFACTS=1` writes them).
    #[test]
    fn the_rbac_files_are_what_rbac_rs_generates() {
        let files = [
            ("rbac.yaml", RBAC_YAML, rbac_yaml()),
            ("rbac-sharded.yaml", RBAC_SHARDED_YAML, rbac_sharded_yaml()),
        ];
        let write = std::env::var_os("SAMPLE_CONTROLLER_WRITE_ARTIFACTS").is_some();
        for (name, file, generated) in files {
            if write && file != generated {
                let path = format!("{}/artifacts/{name}", env!("CARGO_MANIFEST_DIR"));
                std::fs::write(&path, &generated).expect("writing the artifact");
                continue;
            }
            assert!(
                file == generated,
                "artifacts/{name} differs from what src/rbac.rs generates \
                 (SAMPLE_CONTROLLER_WRITE_ARTIFACTS=1 writes it):\n{generated}"
            );
        }
    }

    #[test]
    fn the_generated_files_are_kubernetes_objects() {
        for yaml in [rbac_yaml(), rbac_sharded_yaml()] {
            for document in yaml.split("---\n") {
                let object: serde_json::Value =
                    serde_norway::from_str(document).expect("each document parses");
                assert!(object["kind"].is_string(), "{document}");
            }
        }
    }
}
