//! What the world should look like for a Foo: pure functions from the Foo (and what exists)
//! to the desired objects, with no I/O.
//!
//! Keeping them pure is what makes the loop level-based in practice: `reconcile` computes
//! the desired state from whatever it reads and compares; it never needs to know which event
//! woke it. They are kubernetes/sample-controller's `newDeployment` and the status it
//! writes, plus the `Ready` condition and `observedGeneration` that Kubernetes API
//! conventions ask a status to carry.

use clientgo::apimachinery::{Object, OwnerReference, Resource, Time};
use k8s_openapi::api::apps::v1::{Deployment, DeploymentSpec};
use k8s_openapi::api::core::v1::{Container, PodSpec, PodTemplateSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1 as meta;

use crate::foo::{Condition, Foo, FooStatus};

/// Whether `foo` is the controller owner of `deployment` (by uid, not just by name).
pub fn controlled_by(deployment: &Deployment, foo: &Foo) -> bool {
    deployment
        .controller_ref()
        .is_some_and(|owner| owner.kind == Foo::KIND && owner.uid == foo.uid())
}

/// The Deployment a Foo asks for: nginx pods, owned by the Foo so that deleting the Foo
/// deletes it (garbage collection) and its changes enqueue the Foo.
pub fn new_deployment(foo: &Foo) -> Deployment {
    let labels = [
        ("app".to_owned(), "nginx".to_owned()),
        ("controller".to_owned(), foo.metadata.name.clone()),
    ]
    .into_iter()
    .collect::<std::collections::BTreeMap<_, _>>();
    Deployment {
        metadata: meta::ObjectMeta {
            name: Some(foo.spec.deployment_name.clone()),
            namespace: Some(foo.metadata.namespace.clone()),
            // client-go's `metav1.NewControllerRef(foo, gvk)`.
            owner_references: Some(vec![OwnerReference::controller_of(foo).into()]),
            ..meta::ObjectMeta::default()
        },
        spec: DeploymentSpec {
            replicas: Some(foo.spec.replicas.unwrap_or(1)),
            selector: meta::LabelSelector {
                match_labels: Some(labels.clone()),
                ..meta::LabelSelector::default()
            },
            template: PodTemplateSpec {
                metadata: Some(meta::ObjectMeta {
                    labels: Some(labels),
                    ..meta::ObjectMeta::default()
                }),
                spec: Some(PodSpec {
                    containers: vec![Container {
                        name: "nginx".to_owned(),
                        image: Some("nginx:latest".to_owned()),
                        ..Container::default()
                    }],
                    ..PodSpec::default()
                }),
            },
            ..DeploymentSpec::default()
        },
        status: None,
    }
}

/// Copies the values of the label `keys` that `foo` carries onto `deployment`'s own labels
/// (not its pods'): labels a dependent must share with its controller from its creation on,
/// such as a shard label (a sharded replica's cache holds only the objects labelled with its
/// shard, so a Deployment created without the label would be missing from it).
pub fn inherit_labels(deployment: &mut Deployment, foo: &Foo, keys: &[String]) {
    for key in keys {
        if let Some(value) = foo.metadata.labels.get(key) {
            deployment
                .metadata
                .labels
                .get_or_insert_with(Default::default)
                .insert(key.clone(), value.clone());
        }
    }
}

/// The status `foo` should have given `deployment`, or `None` when it already has it.
///
/// `Ready` is `True` once every wanted replica is available. Its `lastTransitionTime` moves
/// only when its status changes, as API conventions require.
pub fn desired_status(foo: &Foo, deployment: &Deployment) -> Option<FooStatus> {
    let wanted = foo.spec.replicas.unwrap_or(1);
    let available = deployment
        .status
        .as_ref()
        .and_then(|s| s.available_replicas)
        .unwrap_or(0);
    let (ready, reason, message) = if available >= wanted {
        (
            "True",
            "DeploymentAvailable",
            format!("{available} of {wanted} replicas available"),
        )
    } else {
        (
            "False",
            "DeploymentProgressing",
            format!("{available} of {wanted} replicas available"),
        )
    };
    let generation = foo.metadata.generation;
    let previous = foo.condition("Ready");
    let last_transition_time = match previous {
        Some(previous) if previous.status == ready => previous.last_transition_time,
        _ => Some(Time::now()),
    };
    let status = FooStatus {
        available_replicas: available,
        observed_generation: generation,
        conditions: vec![Condition {
            type_: "Ready".to_owned(),
            status: ready.to_owned(),
            reason: reason.to_owned(),
            message,
            last_transition_time,
            observed_generation: generation,
        }],
    };
    (status != foo.status).then_some(status)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn foo_with(replicas: i32, generation: i64, status: FooStatus) -> Foo {
        let mut foo = Foo::new("ns", "f", "d", replicas);
        foo.metadata.generation = generation;
        foo.status = status;
        foo
    }

    fn deployment_with(available: i32) -> Deployment {
        let mut d = new_deployment(&Foo::new("ns", "f", "d", 1));
        d.status = Some(k8s_openapi::api::apps::v1::DeploymentStatus {
            available_replicas: Some(available),
            ..Default::default()
        });
        d
    }

    #[test]
    fn status_is_written_only_when_it_changes() {
        let foo = foo_with(2, 1, FooStatus::default());
        let status = desired_status(&foo, &deployment_with(1)).expect("a first status");
        assert_eq!(status.available_replicas, 1);
        assert_eq!(status.conditions[0].status, "False");
        let foo = foo_with(2, 1, status);
        assert_eq!(
            desired_status(&foo, &deployment_with(1)),
            None,
            "nothing changed"
        );
    }

    #[test]
    fn the_transition_time_moves_only_when_ready_flips() {
        let foo = foo_with(2, 1, FooStatus::default());
        let not_ready = desired_status(&foo, &deployment_with(1)).unwrap();
        let since = not_ready.conditions[0].last_transition_time;
        // Still not ready, with another count: same transition time.
        let foo = foo_with(3, 2, not_ready);
        let still = desired_status(&foo, &deployment_with(2)).unwrap();
        assert_eq!(still.conditions[0].status, "False");
        assert_eq!(still.conditions[0].last_transition_time, since);
        assert_eq!(still.observed_generation, 2);
    }

    #[test]
    fn inherited_labels_are_copied_onto_the_deployment_only() {
        let mut foo = Foo::new("ns", "f", "d", 1);
        foo.metadata
            .labels
            .insert("shard.clientgo-rs.io/c".into(), "a".into());
        foo.metadata.labels.insert("team".into(), "web".into());
        let mut deployment = new_deployment(&foo);
        let keys = ["shard.clientgo-rs.io/c".to_owned(), "absent".to_owned()];
        inherit_labels(&mut deployment, &foo, &keys);
        let labels = deployment.metadata.labels.as_ref().unwrap();
        assert_eq!(labels.len(), 1, "{labels:?}");
        assert_eq!(labels["shard.clientgo-rs.io/c"], "a");
        let pod_labels = deployment.spec.template.metadata.as_ref().unwrap();
        assert!(
            !pod_labels
                .labels
                .as_ref()
                .unwrap()
                .contains_key("shard.clientgo-rs.io/c"),
            "the pods are not sharded"
        );
    }

    #[test]
    fn the_new_deployment_is_controlled_by_its_foo() {
        let mut foo = Foo::new("ns", "f", "d", 3);
        foo.metadata.uid = "uid-1".into();
        let deployment = new_deployment(&foo);
        assert!(controlled_by(&deployment, &foo));
        let mut other = foo.clone();
        other.metadata.uid = "uid-2".into();
        assert!(
            !controlled_by(&deployment, &other),
            "same name, another Foo"
        );
        assert_eq!(deployment.spec.replicas, Some(3));
    }
}
