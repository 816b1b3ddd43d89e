//! The sample-controller's whole story against a real kube-apiserver 1.36 with
//! kube-controller-manager (garbage collection, Deployment and ReplicaSet controllers): it
//! creates and scales its Deployment, repairs drift, leaves a foreign Deployment alone with a
//! Warning event, survives an API server restart, finalizes, and garbage collection removes
//! what it owned. Real time: every wait is bounded.

use std::future::Future;
use std::time::Duration;

use clientgo_envtest::{ControlPlane, ControlPlaneOptions};
use clientgo_rest::config::Config;
use clientgo_rest::{DeleteParams, ListParams, PostParams, ResourceClient, RestClient};
use clientgo_sample_controller::app::{self, Options};
use clientgo_sample_controller::controller::ERR_RESOURCE_EXISTS;
use clientgo_sample_controller::foo::{self, Foo};
use clientgo_sample_controller::{finalizer, records};
use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use k8s_openapi::api::core::v1::Event;
use tokio_util::sync::CancellationToken;

/// Checks `condition` every 200 ms for at most 60 s of real time.
async fn eventually<T, F, Fut>(what: &str, condition: F) -> T
where
    F: Fn() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    for _ in 0..300 {
        if let Some(value) = condition().await {
            return value;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    panic!("timed out after 60 s waiting for {what}");
}

struct Story {
    foos: ResourceClient<Foo>,
    deployments: ResourceClient<Deployment>,
}

impl Story {
    async fn foo(&self, name: &str) -> Option<Foo> {
        match self.foos.get(name, &Default::default()).await {
            Ok(foo) => Some(foo),
            Err(e) if e.is_not_found() => None,
            // The API server may be restarting: not an answer either way.
            Err(_) => None,
        }
    }

    async fn deployment(&self, name: &str) -> Option<Deployment> {
        self.deployments.get(name, &Default::default()).await.ok()
    }

    async fn gone(&self, name: &str) -> bool {
        matches!(self.deployments.get(name, &Default::default()).await, Err(e) if e.is_not_found())
    }

    async fn wait_replicas(&self, deployment: &str, replicas: i32) -> Deployment {
        eventually(
            &format!("Deployment {deployment} with {replicas} replicas"),
            || async {
                let d = self.deployment(deployment).await?;
                (d.spec.replicas == Some(replicas)).then_some(d)
            },
        )
        .await
    }

    /// Read, change, write; again on a conflict (the controller writes the Foo's status
    /// meanwhile, which changes its resourceVersion), as any writer must.
    async fn set_foo_replicas(&self, name: &str, replicas: i32) {
        eventually(
            &format!("Foo {name} updated to {replicas} replicas"),
            || async {
                let mut foo = self.foo(name).await.expect("the Foo exists");
                foo.spec.replicas = Some(replicas);
                match self.foos.update(name, &foo, &PostParams::default()).await {
                    Err(error) if error.is_conflict() => None,
                    written => Some(written.expect("updating the Foo")),
                }
            },
        )
        .await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_controller_converges_repairs_finalizes_and_survives_an_apiserver_restart() {
    let Some(cp) = ControlPlane::start_or_skip(ControlPlaneOptions {
        controller_manager: true,
        ..ControlPlaneOptions::default()
    }) else {
        return;
    };
    let config = Config::from_kubeconfig_file(cp.kubeconfig_path()).unwrap();
    let client = RestClient::new(&config).unwrap();
    foo::install_crd(&client).await.unwrap();
    let namespace = cp.create_namespace("sample").unwrap();
    let story = Story {
        foos: ResourceClient::namespaced(&client, &namespace),
        deployments: ResourceClient::namespaced(&client, &namespace),
    };
    // The CRD is served once it is Established: until then its path is a plain-text 404.
    eventually("the Foo CRD to be served", || async {
        story.foos.list(&ListParams::default()).await.ok()
    })
    .await;

    let mut controller_config = config.clone();
    controller_config.user_agent = "sample-controller-e2e".into();
    let built = app::build(
        RestClient::new(&controller_config).unwrap(),
        Options {
            namespace: Some(namespace.clone()),
            resync: Duration::from_secs(30),
            ..Options::default()
        },
        None,
    )
    .unwrap();
    let cancel = CancellationToken::new();
    let run = tokio::spawn(built.run(cancel.clone()));

    // Converges: the Deployment, owned by the Foo, with the Foo's replicas; the controller
    // manager's ReplicaSet follows; the Foo carries the finalizer and has its record.
    story
        .foos
        .create(
            &Foo::new(&namespace, "web", "web-deploy", 1),
            &PostParams::default(),
        )
        .await
        .unwrap();
    let deployment = story.wait_replicas("web-deploy", 1).await;
    let owner = &deployment.metadata.owner_references.as_ref().unwrap()[0];
    assert_eq!((owner.kind.as_str(), owner.name.as_str()), ("Foo", "web"));
    assert_eq!(owner.controller, Some(true));
    let replica_sets: ResourceClient<ReplicaSet> = ResourceClient::namespaced(&client, &namespace);
    eventually("a ReplicaSet made by kube-controller-manager", || async {
        let list = replica_sets.list(&ListParams::default()).await.ok()?;
        (!list.items.is_empty()).then_some(())
    })
    .await;
    let foo = eventually("the Foo's status for its generation", || async {
        let foo = story.foo("web").await?;
        (foo.status.observed_generation == foo.metadata.generation
            && foo.condition("Ready").is_some())
        .then_some(foo)
    })
    .await;
    // No kubelet: nothing becomes available, and the controller says so.
    assert_eq!(foo.condition("Ready").unwrap().status, "False");
    assert!(finalizer::has(&foo), "{:?}", foo.metadata.finalizers);
    let record = eventually("the Foo's record", || async {
        records::entry(&client, &namespace, "web")
            .await
            .ok()
            .flatten()
    })
    .await;
    assert_eq!(record, "web-deploy");

    // Scales.
    story.set_foo_replicas("web", 3).await;
    story.wait_replicas("web-deploy", 3).await;

    // Repairs drift: someone scales the Deployment by hand (again on a conflict: the
    // deployment controller writes its status meanwhile).
    eventually("the Deployment scaled by hand", || async {
        let mut drifted = story.deployment("web-deploy").await.unwrap();
        drifted.spec.replicas = Some(7);
        let params = PostParams::default();
        match story
            .deployments
            .update("web-deploy", &drifted, &params)
            .await
        {
            Err(error) if error.is_conflict() => None,
            written => Some(written.unwrap()),
        }
    })
    .await;
    story.wait_replicas("web-deploy", 3).await;

    // Leaves a foreign Deployment alone, with a Warning event on the Foo.
    let mut foreign = clientgo_sample_controller::desired::new_deployment(&Foo::new(
        &namespace, "other", "taken", 1,
    ));
    foreign.metadata.owner_references = None;
    story
        .deployments
        .create(&foreign, &PostParams::default())
        .await
        .unwrap();
    story
        .foos
        .create(
            &Foo::new(&namespace, "squatter", "taken", 2),
            &PostParams::default(),
        )
        .await
        .unwrap();
    let events: ResourceClient<Event> = ResourceClient::namespaced(&client, &namespace);
    eventually(
        "a Warning event ErrResourceExists on Foo squatter",
        || async {
            let list = events.list(&ListParams::default()).await.ok()?;
            list.items
                .iter()
                .any(|e| {
                    e.reason.as_deref() == Some(ERR_RESOURCE_EXISTS)
                        && e.type_.as_deref() == Some("Warning")
                        && e.involved_object.name.as_deref() == Some("squatter")
                })
                .then_some(())
        },
    )
    .await;
    let taken = story.deployment("taken").await.unwrap();
    assert_eq!(
        taken.spec.replicas,
        Some(1),
        "the foreign Deployment is untouched"
    );
    assert!(taken.metadata.owner_references.is_none());

    // Survives an API server restart: a change made after it converges.
    let restarted = tokio::task::spawn_blocking({
        let cp = std::sync::Arc::new(cp);
        let inner = cp.clone();
        move || inner.restart_apiserver().map(|()| cp)
    })
    .await
    .unwrap()
    .expect("kube-apiserver restarts");
    eventually("the Foo after the restart", || async {
        story.foo("web").await
    })
    .await;
    story.set_foo_replicas("web", 2).await;
    story.wait_replicas("web-deploy", 2).await;

    // Finalizes: the record goes first, then the finalizer, then the Foo; garbage
    // collection (kube-controller-manager) removes the Deployment the Foo owned.
    story
        .foos
        .delete("web", &DeleteParams::default())
        .await
        .unwrap();
    eventually("the Foo to be gone", || async {
        matches!(story.foos.get("web", &Default::default()).await, Err(e) if e.is_not_found())
            .then_some(())
    })
    .await;
    assert_eq!(
        records::entry(&client, &namespace, "web").await.unwrap(),
        None,
        "the record was cleaned up before the finalizer was removed"
    );
    eventually("garbage collection of the Deployment", || async {
        story.gone("web-deploy").await.then_some(())
    })
    .await;
    assert!(
        story.deployment("taken").await.is_some(),
        "the foreign Deployment is not collected"
    );

    cancel.cancel();
    tokio::time::timeout(Duration::from_secs(60), run)
        .await
        .expect("the controller stops")
        .unwrap()
        .expect("the controller ends cleanly");

    the_binary_runs_and_exits_cleanly_on_sigterm(&restarted, &client).await;
}

/// The `sample-controller` binary as a user runs it (`--kubeconfig`), in a namespace of its
/// own: ready once synced, reconciles, and exits 0 on SIGTERM.
async fn the_binary_runs_and_exits_cleanly_on_sigterm(cp: &ControlPlane, client: &RestClient) {
    let namespace = cp.create_namespace("binary").unwrap();
    let health = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_sample-controller"))
        .arg("--kubeconfig")
        .arg(cp.kubeconfig_path())
        .args([
            "--namespace",
            &namespace,
            "--health-addr",
            &health.to_string(),
        ])
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    eventually("the binary's /readyz", || async {
        (http_status(health, "/readyz").await == Some(200)).then_some(())
    })
    .await;
    let foos: ResourceClient<Foo> = ResourceClient::namespaced(client, &namespace);
    let deployments: ResourceClient<Deployment> = ResourceClient::namespaced(client, &namespace);
    foos.create(
        &Foo::new(&namespace, "bin", "bin-deploy", 2),
        &PostParams::default(),
    )
    .await
    .unwrap();
    eventually("the binary's Deployment", || async {
        deployments
            .get("bin-deploy", &Default::default())
            .await
            .ok()
    })
    .await;
    let pid = child.id().unwrap().to_string();
    let killed = std::process::Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .unwrap();
    assert!(killed.success());
    let status = tokio::time::timeout(Duration::from_secs(30), child.wait())
        .await
        .expect("the binary exits within 30 s of SIGTERM")
        .unwrap();
    assert!(status.success(), "exit status {status}");
}

/// The status code of a plain HTTP GET of `path`, or `None` when nothing answers.
async fn http_status(addr: std::net::SocketAddr, path: &str) -> Option<u16> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = tokio::net::TcpStream::connect(addr).await.ok()?;
    let request = format!("GET {path} HTTP/1.0\r\nHost: {addr}\r\n\r\n");
    stream.write_all(request.as_bytes()).await.ok()?;
    let mut response = Vec::new();
    tokio::time::timeout(Duration::from_secs(5), stream.read_to_end(&mut response))
        .await
        .ok()?
        .ok()?;
    std::str::from_utf8(&response)
        .ok()?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}
