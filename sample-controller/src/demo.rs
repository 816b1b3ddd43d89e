//! `--demo`: the whole loop, end to end, against an API server embedded in the process.
//!
//! No cluster needed: the demo starts clientgo-rs's apiserver-sim (TLS and a bearer token, as
//! a real server), writes a kubeconfig for it, and from then on talks to it exactly as it
//! would to a real cluster: it installs the Foo CRD from `artifacts/crd.yaml`, starts the
//! controller, and plays a short scenario, printing what happens:
//!
//! 1. two Foos are created: the controller puts its finalizer on them, creates their
//!    Deployments, records them in the `foo-records` ConfigMap and reports them Ready;
//! 2. one Foo is scaled: its Deployment follows. While that reconcile is writing the
//!    Deployment, someone labels the Foo: the reconcile's status write, which carries the
//!    resourceVersion of the Foo it read, is refused with 409 Conflict, and the retry writes
//!    it from the labelled Foo. (The embedded server holds that one Deployment write for a
//!    second, by fault injection, so that the label always lands in the window; on a real
//!    cluster the window is short, and the conflict rare, but it happens.)
//! 3. a Foo asks for a Deployment that someone else owns: the controller refuses and records
//!    a Warning event;
//! 4. a Foo is deleted: the API server only marks it, because of the finalizer; the
//!    controller removes its record, then the finalizer, and the Foo goes; garbage collection
//!    then removes its Deployment;
//! 5. the final Foos, Deployments and records are printed, and every Foo that owns its
//!    Deployment must have converged (Deployment with the wanted replicas, Ready,
//!    observedGeneration current, recorded), or the demo fails;
//! 6. the controller shuts down cleanly.
//!
//! The simulator has no kube-controller-manager, so nothing would ever start the Deployments'
//! pods: a few lines here stand in for it and mark a Deployment's replicas available.

use std::future::Future;
use std::time::Duration;

use clientgo::CancellationToken;
use clientgo::apimachinery::{ApiResource, DynamicObject, Object, ObjectList};
use clientgo::rest::config::{Config, KubeconfigOptions, LoadingRules};
use clientgo::rest::{
    DeleteParams, Deleted, DynamicClient, ListParams, PatchParams, PatchType, PostParams,
    ResourceClient, RestClient,
};
use clientgo::testing::sim::faults::RequestMatch;
use clientgo::testing::sim::{ApiServerSim, SimConfig};
use k8s_openapi::api::apps::v1::{Deployment, DeploymentStatus};

use crate::app::{self, Options};
use crate::finalizer::FINALIZER;
use crate::foo::Foo;
use crate::records::{self, RECORDS};

const NAMESPACE: &str = "default";

/// Runs the demo; `Err` says which step did not converge.
pub async fn run() -> Result<(), String> {
    say("starting an embedded API server (apiserver-sim) with TLS and token auth");
    let sim = ApiServerSim::start(SimConfig::default().with_tls().with_token("demo-token"))
        .await
        .map_err(|e| format!("cannot start the API server: {e}"))?;
    let dir = std::env::temp_dir().join(format!("sample-controller-demo-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let kubeconfig = dir.join("kubeconfig");
    std::fs::write(&kubeconfig, sim.kubeconfig()).map_err(|e| e.to_string())?;
    say(&format!("kubeconfig written to {}", kubeconfig.display()));

    let config = Config::from_kubeconfig(&KubeconfigOptions {
        loading_rules: Some(LoadingRules::explicit(&kubeconfig)),
        ..KubeconfigOptions::default()
    })
    .map_err(|e| e.to_string())?;
    // Three clients, as there would be three processes: the controller, kube-controller-
    // manager (stood in for below) and the user's kubectl. Each has its own client-side
    // rate limit (client-go's 5 requests per second, bursts of 10).
    let client = RestClient::new(&config).map_err(|e| e.to_string())?;
    let controller_client = RestClient::new(&config).map_err(|e| e.to_string())?;
    let stand_in_client = RestClient::new(&config).map_err(|e| e.to_string())?;

    crate::foo::install_crd(&client).await?;
    say("installed the Foo CRD (samplecontroller.k8s.io/v1alpha1)");
    let cancel = CancellationToken::new();
    let controller_run = tokio::spawn(app::run(
        controller_client,
        Options {
            namespace: Some(NAMESPACE.to_owned()),
            ..Options::default()
        },
        cancel.clone(),
    ));
    let stand_in = tokio::spawn(stand_in_for_controller_manager(
        stand_in_client,
        cancel.clone(),
    ));

    let outcome = scenario(&client, &sim).await;
    say("stopping the controller (as on SIGTERM): in-flight work drains first");
    cancel.cancel();
    let controller = controller_run
        .await
        .map_err(|e| e.to_string())?
        .map_err(|e| format!("controller: {e}"))?;
    let _ = stand_in.await;
    let stats = controller.stats();
    say(&format!(
        "done: {} reconciles succeeded, {} failed and were retried, {} writes to the API server",
        stats.synced.get(),
        stats.failed.get(),
        stats.writes.get(),
    ));
    let _ = std::fs::remove_dir_all(&dir);
    sim.shutdown();
    outcome
}

fn say(line: &str) {
    println!("[demo] {line}");
}

/// How long the embedded server holds the reconcile's Deployment write in step 2: long enough
/// for the user's label to land, even behind the user's client-side throttle.
const HELD_WRITE: Duration = Duration::from_secs(1);

async fn scenario(client: &RestClient, sim: &ApiServerSim) -> Result<(), String> {
    let foos = ResourceClient::<Foo>::namespaced(client, NAMESPACE);
    let deployments = ResourceClient::<Deployment>::namespaced(client, NAMESPACE);
    let post = PostParams::default();

    say("1. creating Foo example-foo (1 replica) and Foo web (3 replicas)");
    for (name, replicas) in [("example-foo", 1), ("web", 3)] {
        foos.create(&Foo::new(NAMESPACE, name, name, replicas), &post)
            .await
            .map_err(|e| format!("creating foo {name}: {e}"))?;
    }
    for (name, replicas) in [("example-foo", 1), ("web", 3)] {
        wait_ready(&foos, name, replicas).await?;
    }
    let example = foos
        .get("example-foo", &Default::default())
        .await
        .map_err(|e| e.to_string())?;
    say(&format!(
        "   Foo example-foo carries the finalizers {:?}: it cannot go before the controller has cleaned up",
        example.metadata.finalizers
    ));
    let recorded = wait_for("the record of example-foo", || async {
        records::entry(client, NAMESPACE, "example-foo")
            .await
            .ok()
            .flatten()
    })
    .await?;
    say(&format!(
        "   ConfigMap {RECORDS} (no owner, so garbage collection will not touch it): example-foo -> {recorded}"
    ));

    say("2. scaling Foo web to 5 replicas");
    let held = sim.faults().delayed();
    sim.faults()
        .delay_next(1, RequestMatch::new("update", "deployments"), HELD_WRITE);
    let patch = serde_json::json!({"spec": {"replicas": 5}});
    foos.patch("web", PatchType::Merge, &patch, &PatchParams::default())
        .await
        .map_err(|e| format!("scaling web: {e}"))?;
    wait_for("the reconcile of web to write its Deployment", || async {
        (sim.faults().delayed() > held).then_some(())
    })
    .await?;
    let mark = sim.requests().mark();
    say(
        "   while its reconcile is writing the Deployment (held by the server), someone labels Foo web",
    );
    let label = serde_json::json!({"metadata": {"labels": {"team": "storefront"}}});
    foos.patch("web", PatchType::Merge, &label, &PatchParams::default())
        .await
        .map_err(|e| format!("labelling web: {e}"))?;
    wait_ready(&foos, "web", 5).await?;
    // A held request enters the server's log when the hold ends: the label came first if the
    // reconcile's status write was bound to conflict.
    let log = sim.requests().since(mark);
    let position = |verb: &str, resource: &str| {
        log.iter()
            .position(|r| r.verb == verb && r.resource == resource && r.subresource.is_none())
    };
    if position("patch", "foos") < position("update", "deployments") {
        say(
            "   the reconcile's status write carried the resourceVersion of the Foo it had \
             read, from before the label: 409 Conflict; the retry read the labelled Foo and \
             wrote it",
        );
    } else {
        say("   the label came after the Deployment write: no conflict this time");
    }

    say("3. a Deployment named taken exists, owned by nobody; Foo intruder asks for it");
    let taken = crate::desired::new_deployment(&Foo::new(NAMESPACE, "nobody", "taken", 1));
    let mut taken = taken;
    taken.metadata.owner_references = None;
    deployments
        .create(&taken, &post)
        .await
        .map_err(|e| format!("creating taken: {e}"))?;
    foos.create(&Foo::new(NAMESPACE, "intruder", "taken", 2), &post)
        .await
        .map_err(|e| format!("creating intruder: {e}"))?;
    let events = DynamicClient::from_api_resource(
        client,
        &ApiResource {
            group: String::new(),
            version: "v1".into(),
            kind: "Event".into(),
            plural: "events".into(),
            namespaced: true,
        },
        Some(NAMESPACE),
    );
    let warning = wait_for("a Warning event ErrResourceExists on intruder", || async {
        let list: ObjectList<DynamicObject> = events.list(&ListParams::default()).await.ok()?;
        list.items.into_iter().find(|e| {
            e.data["reason"] == "ErrResourceExists"
                && e.data["involvedObject"]["name"] == "intruder"
        })
    })
    .await?;
    say(&format!(
        "   Warning {}: {}",
        warning.data["reason"], warning.data["message"]
    ));
    let untouched = deployments
        .get("taken", &Default::default())
        .await
        .map_err(|e| e.to_string())?;
    if untouched.spec.replicas != Some(1) {
        return Err("the controller changed a Deployment it does not own".into());
    }
    say("   the foreign Deployment was left alone");

    say("4. deleting Foo example-foo");
    let deleted = foos
        .delete("example-foo", &DeleteParams::default())
        .await
        .map_err(|e| e.to_string())?;
    if let Deleted::Object(marked) = deleted {
        if let Some(at) = marked.metadata.deletion_timestamp {
            say(&format!(
                "   the API server marked it (deletionTimestamp {at}) but keeps it while finalizer {FINALIZER} is on"
            ));
        }
    }
    let cleaned = wait_for("the controller to clean up example-foo", || async {
        let list: ObjectList<DynamicObject> = events.list(&ListParams::default()).await.ok()?;
        list.items.into_iter().find(|e| {
            e.data["reason"] == crate::controller::CLEANED_UP
                && e.data["involvedObject"]["name"] == "example-foo"
        })
    })
    .await?;
    say(&format!(
        "   {} {}: {}",
        cleaned.data["type"].as_str().unwrap_or(""),
        cleaned.data["reason"].as_str().unwrap_or(""),
        cleaned.data["message"].as_str().unwrap_or("")
    ));
    wait_for("Foo example-foo to be gone", || async {
        match foos.get("example-foo", &Default::default()).await {
            Err(e) if e.is_not_found() => Some(()),
            _ => None,
        }
    })
    .await?;
    if records::entry(client, NAMESPACE, "example-foo")
        .await
        .map_err(|e| e.to_string())?
        .is_some()
    {
        return Err("Foo example-foo is gone but its record is still there".into());
    }
    say(&format!(
        "   its entry in {RECORDS} went first, then the finalizer; then the API server removed the Foo"
    ));
    say("   garbage collection now removes the Deployment it owned");
    wait_for("Deployment example-foo to be deleted", || async {
        match deployments.get("example-foo", &Default::default()).await {
            Err(e) if e.is_not_found() => Some(()),
            _ => None,
        }
    })
    .await?;
    say("   Deployment example-foo is gone");
    final_state(client, &foos, &deployments).await
}

/// Prints the Foos, Deployments and records as they ended, and checks that every Foo whose
/// Deployment is its own has converged.
async fn final_state(
    client: &RestClient,
    foos: &ResourceClient<Foo>,
    deployments: &ResourceClient<Deployment>,
) -> Result<(), String> {
    let foos = foos
        .list(&ListParams::default())
        .await
        .map_err(|e| e.to_string())?
        .items;
    let deployments = deployments
        .list(&ListParams::default())
        .await
        .map_err(|e| e.to_string())?
        .items;
    say("final state:");
    say(&format!(
        "   {:<12} {:<12} {:>7} {:>9} {:>5} {:>10}",
        "FOO", "DEPLOYMENT", "DESIRED", "AVAILABLE", "READY", "GENERATION"
    ));
    let mut unconverged = Vec::new();
    for foo in &foos {
        let ready = foo.condition("Ready").map_or("-", |c| c.status.as_str());
        say(&format!(
            "   {:<12} {:<12} {:>7} {:>9} {:>5} {:>10}",
            foo.metadata.name,
            foo.spec.deployment_name,
            foo.spec.replicas.unwrap_or(1),
            foo.status.available_replicas,
            ready,
            format!(
                "{}/{}",
                foo.status.observed_generation, foo.metadata.generation
            ),
        ));
        let owned = deployments.iter().find(|d| {
            d.metadata.name.as_deref() == Some(foo.spec.deployment_name.as_str())
                && d.controller_ref()
                    .is_some_and(|owner| owner.uid == foo.metadata.uid)
        });
        let Some(owned) = owned else {
            continue; // refused on purpose (step 3): its Deployment belongs to someone else
        };
        let recorded = records::entry(client, NAMESPACE, &foo.metadata.name)
            .await
            .map_err(|e| e.to_string())?;
        let converged = owned.spec.replicas == foo.spec.replicas
            && recorded.as_deref() == Some(foo.spec.deployment_name.as_str())
            && ready == "True"
            && foo.status.observed_generation == foo.metadata.generation
            && owned.status.as_ref().and_then(|s| s.available_replicas)
                == Some(foo.status.available_replicas);
        if !converged {
            unconverged.push(foo.metadata.name.clone());
        }
    }
    for deployment in &deployments {
        let owner = deployment
            .controller_ref()
            .map_or("-".to_owned(), |o| format!("{} {}", o.kind, o.name));
        say(&format!(
            "   deployment {:<12} replicas {:>2}  owner {}",
            deployment.metadata.name.as_deref().unwrap_or(""),
            deployment.spec.replicas.unwrap_or(1),
            owner,
        ));
    }
    for foo in &foos {
        let recorded = records::entry(client, NAMESPACE, &foo.metadata.name)
            .await
            .map_err(|e| e.to_string())?;
        say(&format!(
            "   {RECORDS}: {:<12} -> {}",
            foo.metadata.name,
            recorded.as_deref().unwrap_or("-")
        ));
    }
    if unconverged.is_empty() {
        Ok(())
    } else {
        Err(format!("not converged: {}", unconverged.join(", ")))
    }
}

/// Waits until Foo `name` reports `replicas` available and Ready.
async fn wait_ready(foos: &ResourceClient<Foo>, name: &str, replicas: i32) -> Result<(), String> {
    let foo = wait_for(
        &format!("Foo {name} to be Ready with {replicas} replicas"),
        || async {
            let foo = foos.get(name, &Default::default()).await.ok()?;
            let ready = foo.condition("Ready").is_some_and(|c| c.status == "True");
            (ready
                && foo.status.available_replicas == replicas
                && foo.status.observed_generation == foo.metadata.generation)
                .then_some(foo)
        },
    )
    .await?;
    let ready = foo
        .condition("Ready")
        .map(|c| c.message.clone())
        .unwrap_or_default();
    say(&format!(
        "   Foo {name}: Ready ({ready}), observed generation {}",
        foo.status.observed_generation
    ));
    Ok(())
}

/// Polls `check` every 50 ms for up to 30 s.
async fn wait_for<T, F, Fut>(what: &str, check: F) -> Result<T, String>
where
    F: Fn() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        if let Some(found) = check().await {
            return Ok(found);
        }
        if tokio::time::Instant::now() >= deadline {
            return Err(format!("timed out waiting for {what}"));
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Stands in for kube-controller-manager: marks each Deployment's replicas available.
async fn stand_in_for_controller_manager(client: RestClient, cancel: CancellationToken) {
    let deployments = ResourceClient::<Deployment>::namespaced(&client, NAMESPACE);
    while !cancel.is_cancelled() {
        if let Ok(list) = deployments.list(&ListParams::default()).await {
            for deployment in list.items {
                let wanted = deployment.spec.replicas.unwrap_or(1);
                let available = deployment
                    .status
                    .as_ref()
                    .and_then(|s| s.available_replicas);
                if available == Some(wanted) {
                    continue;
                }
                let Some(name) = deployment.metadata.name.clone() else {
                    continue;
                };
                let mut updated = deployment;
                updated.status = Some(DeploymentStatus {
                    replicas: Some(wanted),
                    ready_replicas: Some(wanted),
                    available_replicas: Some(wanted),
                    updated_replicas: Some(wanted),
                    ..DeploymentStatus::default()
                });
                let _ = deployments
                    .update_status(&name, &updated, &PostParams::default())
                    .await;
            }
        }
        tokio::select! {
            () = cancel.cancelled() => {}
            () = tokio::time::sleep(Duration::from_millis(100)) => {}
        }
    }
}
