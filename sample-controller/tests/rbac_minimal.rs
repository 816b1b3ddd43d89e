//! The roles `src/rbac.rs` generates are enough and minimal, proven on a real kube-apiserver
//! 1.36 (RBAC authorization, and the OwnerReferencesPermissionEnforcement admission plugin
//! on, as OpenShift runs it, so that `blockOwnerDeletion` needs its grant).
//!
//! The controller runs through its library API (`app::build`, leader election on) as a
//! ServiceAccount bound to exactly the generated `ClusterRole` (granted in the test's
//! namespace by a RoleBinding) and the generated leader election `Role`, with a client whose
//! transport records every request's verb, resource and status code. A story of named
//! [`Step`]s drives it:
//!
//! | step | the controller's requests it needs |
//! |---|---|
//! | `Start` | watch Foos and Deployments (informers; a streaming list is a watch, a server without them is listed first); get and create the Lease |
//! | `Renew` | update the Lease |
//! | `Create` | patch the Foo (finalizer); create the Deployment (the admission plugin asks for `update` of `foos/finalizers`, for `blockOwnerDeletion`); get and create ConfigMap `foo-records`; update `foos/status`; create an Event |
//! | `Scale` | update the Deployment; patch the repeated `Synced` Event |
//! | `SecondFoo` | patch `foo-records` (a second record) |
//! | `Recreate` | get the Deployment the cache lost (deleted by hand), then create it again |
//! | `Delete` | patch `foo-records` (the record removed), patch the Foo (finalizer removed) |
//!
//! `the_generated_roles_are_enough`: the whole story converges with not one 403, and the
//! Lease is released on shutdown. `each_grant_of_the_generated_roles_is_needed`: for every
//! verb on every resource of either role (taken away alone, the rest kept), the steps before
//! the one [`needed_for`] names still converge, and that step meets a 403 on the request it
//! names (the grant's own, or for `foos/finalizers` the Deployment's create, which the
//! admission plugin refuses), and no other 403 is seen. A grant the table does not know
//! fails the test: a new rule must say which step needs it.
//! `without_streaming_lists_the_roles_are_enough_and_list_is_needed` does both on a
//! kube-apiserver with streaming lists off (`WatchList=false`), where the informers list:
//! the one place `list` shows that it is needed.
//!
//! Real time, every wait bounded; skipped (one line) without the envtest binaries unless
//! `CLIENTGO_ENVTEST_REQUIRED=1`.

use std::future::Future;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use bytes::Bytes;
use clientgo_derive::rbac::{Role, ServiceAccount};
use clientgo_envtest::{ControlPlane, ControlPlaneOptions};
use clientgo_leaderelection::LeaderElectionConfig;
use clientgo_rest::transport::Transport;
use clientgo_rest::{
    Auth, Body, BoxFuture, Config, DeleteParams, HttpClient, PostParams, ResourceClient, RestClient,
};
use clientgo_sample_controller::app::{self, LeaderElection, Options, RunError};
use clientgo_sample_controller::controller::{CONTROLLER_NAME, Controller, SUCCESS_SYNCED};
use clientgo_sample_controller::desired::new_deployment;
use clientgo_sample_controller::foo::{self, Foo};
use clientgo_sample_controller::{finalizer, rbac, records};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::Event;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// Checks `condition` every 100 ms for at most `within` of real time.
async fn eventually<T, F, Fut>(what: &str, within: Duration, condition: F) -> Result<T, String>
where
    F: Fn() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let deadline = tokio::time::Instant::now() + within;
    loop {
        if let Some(value) = condition().await {
            return Ok(value);
        }
        if tokio::time::Instant::now() >= deadline {
            return Err(format!("timed out after {within:?} waiting for {what}"));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// How long one step may take to converge.
const STEP: Duration = Duration::from_secs(30);

// ---------------------------------------------------------------------------------------
// The control plane, the CRD, and a client that records what it asks.
// ---------------------------------------------------------------------------------------

/// A control plane with the CRD installed, and the admin's configuration.
struct Env {
    cp: Plane,
    /// The admin's configuration (client certificate, `system:masters`).
    admin: Config,
}

/// The test binary's shared control plane, or one of a test's own (stopped when dropped).
enum Plane {
    Shared(&'static ControlPlane),
    Own(Box<ControlPlane>),
}

impl std::ops::Deref for Plane {
    type Target = ControlPlane;
    fn deref(&self) -> &ControlPlane {
        match self {
            Plane::Shared(cp) => cp,
            Plane::Own(cp) => cp,
        }
    }
}

/// RBAC, and OwnerReferencesPermissionEnforcement: `blockOwnerDeletion` towards a Foo
/// needs `update` of `foos/finalizers`.
const ADMISSION: &str = "--enable-admission-plugins=OwnerReferencesPermissionEnforcement";

/// The shared control plane (streaming lists on, as kube-apiserver 1.36 defaults), with the
/// CRD installed and the admission plugin ready for Foo owners; `None` when the envtest
/// binaries are missing (and not required).
fn env() -> Option<Arc<Env>> {
    static ENV: OnceLock<Option<Arc<Env>>> = OnceLock::new();
    ENV.get_or_init(|| {
        let cp = ControlPlane::shared_with(ControlPlaneOptions {
            apiserver_args: vec![ADMISSION.to_owned()],
            ..ControlPlaneOptions::default()
        })?;
        let env = Arc::new(Env {
            admin: Config::from_kubeconfig_file(cp.kubeconfig_path()).unwrap(),
            cp: Plane::Shared(cp),
        });
        // Each test has a runtime of its own: the setup gets one too.
        let setup = env.clone();
        std::thread::spawn(move || {
            tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap()
                .block_on(install(&setup))
        })
        .join()
        .expect("the setup");
        Some(env)
    })
    .clone()
}

/// A control plane of the calling test's own whose kube-apiserver has streaming lists off
/// (`WatchList=false`, as servers before them): informers fall back to LIST+WATCH.
async fn env_without_streaming_lists() -> Option<Arc<Env>> {
    let cp = tokio::task::spawn_blocking(|| {
        ControlPlane::start_or_skip(ControlPlaneOptions {
            apiserver_args: vec![
                ADMISSION.to_owned(),
                "--feature-gates=WatchList=false".to_owned(),
            ],
            ..ControlPlaneOptions::default()
        })
    })
    .await
    .unwrap()?;
    let env = Arc::new(Env {
        admin: Config::from_kubeconfig_file(cp.kubeconfig_path()).unwrap(),
        cp: Plane::Own(Box::new(cp)),
    });
    install(&env).await;
    Some(env)
}

/// Installs the CRD and waits until kube-apiserver's OwnerReferencesPermissionEnforcement
/// plugin can map the kind Foo (its RESTMapper learns new kinds from discovery, lazily):
/// until then it refuses any `blockOwnerDeletion` towards a Foo with a 403, whoever asks.
async fn install(env: &Arc<Env>) {
    let admin = RestClient::new(&env.admin).unwrap();
    foo::install_crd(&admin).await.unwrap();
    let setup = env.clone();
    let namespace = blocking(move || setup.cp.create_namespace("rbac-probe")).await;
    let foos: ResourceClient<Foo> = ResourceClient::namespaced(&admin, &namespace);
    let probe = eventually(
        "the Foo CRD to be served",
        Duration::from_secs(60),
        || async {
            let probe = Foo::new(&namespace, "probe", "probe", 1);
            foos.create(&probe, &PostParams::default()).await.ok()
        },
    )
    .await
    .unwrap();
    let deployments: ResourceClient<Deployment> = ResourceClient::namespaced(&admin, &namespace);
    let owned = new_deployment(&probe);
    eventually(
        "the admission plugin to map the kind Foo",
        Duration::from_secs(120),
        || async {
            match deployments.create(&owned, &PostParams::default()).await {
                Ok(_) => Some(()),
                Err(error) if error.is_forbidden() => None,
                Err(error) => panic!("creating the probe Deployment: {error}"),
            }
        },
    )
    .await
    .unwrap();
}

async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, clientgo_envtest::Error> + Send + 'static,
) -> T {
    tokio::task::spawn_blocking(f).await.unwrap().unwrap()
}

/// One request as the authorizer sees it, and the answer's status code.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Seen {
    verb: &'static str,
    group: String,
    /// `resource` or `resource/subresource`.
    resource: String,
    name: String,
    status: u16,
}

impl std::fmt::Display for Seen {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let group = if self.group.is_empty() {
            "core"
        } else {
            &self.group
        };
        write!(
            f,
            "{} {}/{} {:?}: {}",
            self.verb, group, self.resource, self.name, self.status
        )
    }
}

/// What the controller's clients asked, in order.
#[derive(Debug, Clone, Default)]
struct Log(Arc<Mutex<Vec<Seen>>>);

impl Log {
    fn forbidden(&self) -> Vec<Seen> {
        let seen = self.0.lock().unwrap();
        seen.iter().filter(|s| s.status == 403).cloned().collect()
    }

    fn saw_forbidden(&self, verb: &str, resource: &str) -> bool {
        self.forbidden()
            .iter()
            .any(|s| s.verb == verb && s.resource == resource)
    }
}

/// The real transport, every answer logged with the request's verb and resource.
struct Recording {
    inner: Transport,
    log: Log,
}

impl HttpClient for Recording {
    fn send(
        &self,
        request: http::Request<Bytes>,
    ) -> BoxFuture<'_, Result<http::Response<Body>, clientgo_rest::Error>> {
        let what = classify(request.method(), request.uri());
        Box::pin(async move {
            let response = self.inner.send(request).await;
            if let (Some((verb, group, resource, name)), Ok(answer)) = (what, &response) {
                self.log.0.lock().unwrap().push(Seen {
                    verb,
                    group,
                    resource,
                    name,
                    status: answer.status().as_u16(),
                });
            }
            response
        })
    }
}

/// The RBAC verb, group, resource (with subresource) and name of a request; `None` for
/// discovery and anything else that is not a resource request.
fn classify(
    method: &http::Method,
    uri: &http::Uri,
) -> Option<(&'static str, String, String, String)> {
    let segments: Vec<&str> = uri.path().split('/').filter(|s| !s.is_empty()).collect();
    let (group, rest) = match segments.as_slice() {
        ["api", _version, rest @ ..] => ("", rest),
        ["apis", group, _version, rest @ ..] => (*group, rest),
        _ => return None,
    };
    let rest = match rest {
        ["namespaces", _namespace, rest @ ..] if !rest.is_empty() => rest,
        rest => rest,
    };
    let (resource, name, subresource) = match rest {
        [] => return None,
        [resource] => (*resource, "", None),
        [resource, name] => (*resource, *name, None),
        [resource, name, subresource, ..] => (*resource, *name, Some(*subresource)),
    };
    let watch = uri
        .query()
        .is_some_and(|q| q.split('&').any(|p| p == "watch=true" || p == "watch=1"));
    let verb = match (method.as_str(), name.is_empty()) {
        ("GET", false) => "get",
        ("GET", true) if watch => "watch",
        ("GET", true) => "list",
        ("POST", _) => "create",
        ("PUT", _) => "update",
        ("PATCH", _) => "patch",
        ("DELETE", false) => "delete",
        ("DELETE", true) => "deletecollection",
        _ => return None,
    };
    let resource = match subresource {
        Some(subresource) => format!("{resource}/{subresource}"),
        None => resource.to_owned(),
    };
    Some((verb, group.to_owned(), resource, name.to_owned()))
}

// ---------------------------------------------------------------------------------------
// The story.
// ---------------------------------------------------------------------------------------

/// The steps of the story, in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Step {
    /// The controller starts: its informers sync, it takes the Lease.
    Start,
    /// It renews the Lease.
    Renew,
    /// Foo `web` is created: finalizer, Deployment, record, status, a `Synced` Event.
    Create,
    /// `web` is scaled to 2: the Deployment follows; `Synced` again (the Event's count 2).
    Scale,
    /// Foo `api` is created: a second record in `foo-records`.
    SecondFoo,
    /// `web`'s Deployment is deleted by hand: the controller creates it again.
    Recreate,
    /// `web` is deleted: its record goes, then its finalizer, then the Foo.
    Delete,
}

const STEPS: [Step; 7] = [
    Step::Start,
    Step::Renew,
    Step::Create,
    Step::Scale,
    Step::SecondFoo,
    Step::Recreate,
    Step::Delete,
];

/// Where a grant's need shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Server {
    /// kube-apiserver 1.36 as it comes: informers use streaming lists (watches).
    Default,
    /// Streaming lists off (`WatchList=false`, as older servers): informers LIST, then WATCH.
    WithoutStreamingLists,
}

/// What taking a grant away breaks: the step that needs it, the request that then meets a
/// 403, and on which server.
#[derive(Debug, Clone)]
struct Need {
    step: Step,
    verb: String,
    resource: String,
    server: Server,
}

/// The minimality table: which step needs `verb` on `resource`. `None`: a grant no step is
/// known to need (the test fails: say which step needs it, or drop the grant).
fn needed_for(resource: &str, verb: &str) -> Option<Need> {
    let (step, server) = match (resource, verb) {
        ("foos" | "deployments", "watch") => (Step::Start, Server::Default),
        // A streaming list is a watch: only a server without them (or an informer that fell
        // back after a failed one) lists.
        ("foos" | "deployments", "list") => (Step::Start, Server::WithoutStreamingLists),
        ("leases", "get" | "create") => (Step::Start, Server::Default),
        ("leases", "update") => (Step::Renew, Server::Default),
        ("foos", "patch") => (Step::Create, Server::Default),
        // Asked by the admission plugin, not by a request: the Deployment's create is refused.
        ("foos/finalizers", "update") => {
            return Some(Need {
                step: Step::Create,
                verb: "create".to_owned(),
                resource: "deployments".to_owned(),
                server: Server::Default,
            });
        }
        ("foos/status", "update") => (Step::Create, Server::Default),
        ("deployments", "create") => (Step::Create, Server::Default),
        ("configmaps", "get" | "create") => (Step::Create, Server::Default),
        ("events", "create") => (Step::Create, Server::Default),
        ("deployments", "update") => (Step::Scale, Server::Default),
        ("events", "patch") => (Step::Scale, Server::Default),
        ("configmaps", "patch") => (Step::SecondFoo, Server::Default),
        ("deployments", "get") => (Step::Recreate, Server::Default),
        _ => return None,
    };
    Some(Need {
        step,
        verb: verb.to_owned(),
        resource: resource.to_owned(),
        server,
    })
}

/// The controller running as the ServiceAccount in a namespace of its own, and the admin's
/// view of that namespace.
struct Story {
    namespace: String,
    identity: String,
    admin: RestClient,
    foos: ResourceClient<Foo>,
    deployments: ResourceClient<Deployment>,
    leases: ResourceClient<Lease>,
    events: ResourceClient<Event>,
    log: Log,
    ready: Box<dyn Fn() -> bool + Send + Sync>,
    cancel: CancellationToken,
    run: Option<JoinHandle<Result<Arc<Controller>, RunError>>>,
    /// The Lease's renewTime when the controller took it.
    taken_at: Mutex<Option<String>>,
    /// The uid of `web`'s Deployment before `Recreate` deleted it.
    deleted_uid: Mutex<Option<String>>,
}

/// Creates `body` (a JSON object) as the admin.
async fn create_rbac(
    admin: &RestClient,
    resource: &str,
    namespace: Option<&str>,
    body: &serde_json::Value,
) {
    let mut request = admin
        .post()
        .group_version("rbac.authorization.k8s.io", "v1")
        .resource(resource)
        .json(body);
    if let Some(namespace) = namespace {
        request = request.namespace(namespace);
    }
    request
        .send()
        .await
        .unwrap_or_else(|e| panic!("creating {resource} {body}: {e}"));
}

/// Whether the authorizer shows `client` every rule of `roles` in `namespace` (RBAC
/// changes reach it through its own informers, a moment after they are written).
async fn grants_visible(client: &RestClient, namespace: &str, roles: &[&Role]) -> bool {
    let review = serde_json::json!({
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SelfSubjectRulesReview",
        "spec": {"namespace": namespace},
    });
    let Ok(answer) = client
        .post()
        .group_version("authorization.k8s.io", "v1")
        .resource("selfsubjectrulesreviews")
        .json(&review)
        .send()
        .await
    else {
        return false;
    };
    let Ok(answer) = answer.json::<serde_json::Value>() else {
        return false;
    };
    let seen = answer["status"]["resourceRules"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let set = |v: &serde_json::Value| -> std::collections::BTreeSet<String> {
        v.as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|s| s.as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default()
    };
    roles.iter().flat_map(|r| r.rules.iter()).all(|rule| {
        let want = rule.to_json();
        seen.iter().any(|s| {
            ["apiGroups", "resources", "resourceNames", "verbs"]
                .iter()
                .all(|k| set(&s[k]) == set(&want[k]))
        })
    })
}

impl Story {
    /// A namespace, the ServiceAccount, `cluster` (renamed for this story) granted in the
    /// namespace and the leader election Role `leases` there; the controller started with
    /// that account's token once the authorizer knows the grants.
    async fn start(env: &Arc<Env>, prefix: &str, cluster: &Role, leases: &Role) -> Story {
        let (setup, prefix) = (env.clone(), prefix.to_owned());
        let namespace = blocking(move || setup.cp.create_namespace(&prefix)).await;
        let (setup, ns) = (env.clone(), namespace.clone());
        let token = blocking(move || setup.cp.service_account_token(&ns, rbac::NAME)).await;
        let admin = RestClient::new(&env.admin).unwrap();
        let account = ServiceAccount::new(&namespace, rbac::NAME);
        let mut cluster = cluster.clone();
        cluster.name = format!("{}-{namespace}", cluster.name);
        let mut leases = leases.clone();
        leases.namespace = Some(namespace.clone());
        create_rbac(&admin, "clusterroles", None, &cluster.to_json()).await;
        let binding = cluster.bind_in(&namespace, &account).to_json();
        create_rbac(&admin, "rolebindings", Some(&namespace), &binding).await;
        create_rbac(&admin, "roles", Some(&namespace), &leases.to_json()).await;
        let binding = leases.bind(&account).to_json();
        create_rbac(&admin, "rolebindings", Some(&namespace), &binding).await;

        // The admin's kubeconfig, its client certificate swapped for the account's token.
        let mut config = env.admin.clone();
        config.tls.client_cert_pem = None;
        config.tls.client_key_pem = None;
        config.auth = Auth::Bearer(token.into());
        config.user_agent = "sample-controller-rbac".into();
        let plain = RestClient::new(&config).unwrap();
        eventually("the authorizer to know the grants", STEP, || async {
            grants_visible(&plain, &namespace, &[&cluster, &leases])
                .await
                .then_some(())
        })
        .await
        .unwrap();

        let log = Log::default();
        let recording = |config: &Config| {
            RestClient::builder(config.clone())
                .http_client(Recording {
                    inner: Transport::new(config).unwrap(),
                    log: log.clone(),
                })
                .build()
                .unwrap()
        };
        let client = recording(&config);
        // Short leader election timing, so that a renewal comes within a second or two.
        let election = LeaderElectionConfig {
            name: CONTROLLER_NAME.to_owned(),
            release_on_cancel: true,
            lease_duration: Duration::from_secs(6),
            renew_deadline: Duration::from_secs(4),
            retry_period: Duration::from_secs(1),
            ..LeaderElectionConfig::default()
        };
        // A client of its own, as `LeaderElection::new` builds it.
        let mut election_config = config.clone();
        election_config.timeout = Some(election.request_timeout());
        election_config.user_agent = format!("{}/leader-election", config.user_agent);
        let identity = format!("{namespace}-replica");
        let options = Options {
            namespace: Some(namespace.clone()),
            resync: Duration::from_secs(300),
            leader_election: Some(LeaderElection {
                namespace: namespace.clone(),
                name: rbac::NAME.to_owned(),
                identity: identity.clone(),
                config: election,
                client: recording(&election_config),
            }),
            ..Options::default()
        };
        let built = app::build(client, options, None).unwrap();
        let ready = Box::new(built.ready());
        let cancel = CancellationToken::new();
        let run = Some(tokio::spawn(built.run(cancel.clone())));
        Story {
            foos: ResourceClient::namespaced(&admin, &namespace),
            deployments: ResourceClient::namespaced(&admin, &namespace),
            leases: ResourceClient::namespaced(&admin, &namespace),
            events: ResourceClient::namespaced(&admin, &namespace),
            admin,
            namespace,
            identity,
            log,
            ready,
            cancel,
            run,
            taken_at: Mutex::new(None),
            deleted_uid: Mutex::new(None),
        }
    }

    async fn lease(&self) -> Option<Lease> {
        self.leases.get(rbac::NAME, &Default::default()).await.ok()
    }

    fn renew_time(lease: &Lease) -> Option<String> {
        let spec = lease.spec.as_ref()?;
        Some(serde_json::to_string(spec.renew_time.as_ref()?).unwrap())
    }

    fn holder(lease: &Lease) -> Option<&str> {
        lease.spec.as_ref()?.holder_identity.as_deref()
    }

    async fn foo(&self, name: &str) -> Option<Foo> {
        self.foos.get(name, &Default::default()).await.ok()
    }

    async fn deployment(&self, name: &str) -> Option<Deployment> {
        self.deployments.get(name, &Default::default()).await.ok()
    }

    async fn record(&self, foo: &str) -> Option<String> {
        records::entry(&self.admin, &self.namespace, foo)
            .await
            .ok()
            .flatten()
    }

    /// The `Synced` Event of Foo `foo`, if any: its count.
    async fn synced_count(&self, foo: &str) -> Option<i32> {
        let events = self.events.list(&Default::default()).await.ok()?;
        events
            .items
            .iter()
            .find(|e| {
                e.reason.as_deref() == Some(SUCCESS_SYNCED)
                    && e.involved_object.name.as_deref() == Some(foo)
            })
            .map(|e| e.count.unwrap_or(1))
    }

    /// What the admin does to begin `step` (nothing for the controller's own steps).
    async fn act(&self, step: Step) -> Result<(), String> {
        let post = PostParams::default();
        let failed = |what: &str, e: clientgo_rest::Error| format!("{what}: {e}");
        match step {
            Step::Start | Step::Renew => {}
            Step::Create => {
                let web = Foo::new(&self.namespace, "web", "web-deploy", 1);
                self.foos
                    .create(&web, &post)
                    .await
                    .map_err(|e| failed("creating Foo web", e))?;
            }
            Step::Scale => {
                // Read, change, write; again on a conflict (the controller writes meanwhile).
                eventually("Foo web scaled to 2", STEP, || async {
                    let mut web = self.foo("web").await?;
                    web.spec.replicas = Some(2);
                    match self.foos.update("web", &web, &PostParams::default()).await {
                        Ok(_) => Some(()),
                        Err(error) if error.is_conflict() => None,
                        Err(error) => panic!("scaling Foo web: {error}"),
                    }
                })
                .await?;
            }
            Step::SecondFoo => {
                let api = Foo::new(&self.namespace, "api", "api-deploy", 1);
                self.foos
                    .create(&api, &post)
                    .await
                    .map_err(|e| failed("creating Foo api", e))?;
            }
            Step::Recreate => {
                let deployment = self.deployment("web-deploy").await.ok_or("no web-deploy")?;
                *self.deleted_uid.lock().unwrap() = deployment.metadata.uid;
                self.deployments
                    .delete("web-deploy", &DeleteParams::default())
                    .await
                    .map_err(|e| failed("deleting web-deploy", e))?;
            }
            Step::Delete => {
                self.foos
                    .delete("web", &DeleteParams::default())
                    .await
                    .map_err(|e| failed("deleting Foo web", e))?;
            }
        }
        Ok(())
    }

    /// Waits until `step` has converged.
    async fn settle(&self, step: Step) -> Result<(), String> {
        match step {
            Step::Start => {
                let renewed = eventually("the caches synced and the Lease taken", STEP, || async {
                    let lease = self.lease().await?;
                    let taken = Self::holder(&lease) == Some(self.identity.as_str());
                    (taken && (self.ready)()).then(|| Self::renew_time(&lease))
                })
                .await?;
                *self.taken_at.lock().unwrap() = renewed;
            }
            Step::Renew => {
                let taken_at = self.taken_at.lock().unwrap().clone();
                eventually("the Lease renewed", STEP, || async {
                    let lease = self.lease().await?;
                    let holder = Self::holder(&lease) == Some(self.identity.as_str());
                    (holder && Self::renew_time(&lease) != taken_at).then_some(())
                })
                .await?;
            }
            Step::Create => {
                eventually(
                    "web's finalizer, status, Deployment, record and Synced event",
                    STEP,
                    || async {
                        let web = self.foo("web").await?;
                        let reported = web.status.observed_generation == web.metadata.generation
                            && web.condition("Ready").is_some();
                        let deployment = self.deployment("web-deploy").await?;
                        let owner = deployment.metadata.owner_references.as_ref()?.first()?;
                        let owned = owner.name == "web" && owner.block_owner_deletion == Some(true);
                        let recorded = self.record("web").await.as_deref() == Some("web-deploy");
                        let event = self.synced_count("web").await.is_some();
                        (finalizer::has(&web) && reported && owned && recorded && event)
                            .then_some(())
                    },
                )
                .await?;
            }
            Step::Scale => {
                eventually("web-deploy at 2 replicas, Synced twice", STEP, || async {
                    let deployment = self.deployment("web-deploy").await?;
                    let web = self.foo("web").await?;
                    let reported = web.status.observed_generation == web.metadata.generation;
                    let twice = self.synced_count("web").await? >= 2;
                    (deployment.spec.replicas == Some(2) && reported && twice).then_some(())
                })
                .await?;
            }
            Step::SecondFoo => {
                eventually("api's record", STEP, || async {
                    (self.record("api").await.as_deref() == Some("api-deploy")).then_some(())
                })
                .await?;
            }
            Step::Recreate => {
                let deleted = self.deleted_uid.lock().unwrap().clone();
                eventually("web-deploy created again", STEP, || async {
                    let deployment = self.deployment("web-deploy").await?;
                    (deployment.metadata.uid != deleted).then_some(())
                })
                .await?;
            }
            Step::Delete => {
                eventually("web finalized and gone", STEP, || async {
                    let gone = matches!(
                        self.foos.get("web", &Default::default()).await,
                        Err(e) if e.is_not_found()
                    );
                    (gone && self.record("web").await.is_none()).then_some(())
                })
                .await?;
            }
        }
        Ok(())
    }

    /// Stops the controller (bounded) and returns how its run ended.
    async fn stop(&mut self) -> Result<Arc<Controller>, RunError> {
        self.cancel.cancel();
        let run = self.run.take().expect("running");
        tokio::time::timeout(Duration::from_secs(30), run)
            .await
            .expect("the controller stops within 30 s")
            .expect("the controller's task")
    }
}

// ---------------------------------------------------------------------------------------
// The tests.
// ---------------------------------------------------------------------------------------

/// The whole story with the generated roles: it converges without one 403, and the Lease
/// is released on shutdown.
async fn enough(env: &Arc<Env>) {
    let cluster = rbac::cluster_role();
    let leases = rbac::leader_election_role("placeholder");
    let mut story = Story::start(env, "rbac-enough", &cluster, &leases).await;
    for step in STEPS {
        story.act(step).await.unwrap();
        if let Err(error) = story.settle(step).await {
            let forbidden: Vec<String> =
                story.log.forbidden().iter().map(Seen::to_string).collect();
            panic!("{step:?}: {error}; 403s: {forbidden:?}");
        }
    }
    let forbidden: Vec<String> = story.log.forbidden().iter().map(Seen::to_string).collect();
    assert!(
        forbidden.is_empty(),
        "403s with the generated roles: {forbidden:?}"
    );
    story.stop().await.expect("the controller ends cleanly");
    // Released on shutdown (an update): the next replica need not wait out the lease.
    let lease = story.lease().await.expect("the Lease");
    assert_eq!(Story::holder(&lease).unwrap_or_default(), "");
    assert!(story.log.forbidden().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_generated_roles_are_enough() {
    let Some(env) = env() else { return };
    enough(&env).await;
}

/// One grant taken away: `verb` on `resource` of rule `index` of the ClusterRole
/// (`cluster`) or of the leader election Role.
#[derive(Debug, Clone)]
struct Grant {
    cluster: bool,
    index: usize,
    resource: String,
    verb: String,
}

impl std::fmt::Display for Grant {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let role = if self.cluster { "ClusterRole" } else { "Role" };
        write!(
            f,
            "{role} rule {}: {} {}",
            self.index, self.verb, self.resource
        )
    }
}

fn grants(role: &Role, cluster: bool) -> Vec<Grant> {
    let mut out = Vec::new();
    for (index, rule) in role.rules.iter().enumerate() {
        for resource in &rule.resources {
            for verb in &rule.verbs {
                out.push(Grant {
                    cluster,
                    index,
                    resource: resource.clone(),
                    verb: verb.clone(),
                });
            }
        }
    }
    out
}

/// Runs the story without `grant` up to the step that needs it: the steps before converge,
/// that step meets a 403 on exactly the request `need` names, and no other 403 is seen.
async fn without(env: Arc<Env>, grant: Grant, need: Need) -> Result<String, String> {
    let mut cluster = rbac::cluster_role();
    let mut leases = rbac::leader_election_role("placeholder");
    if grant.cluster {
        cluster = cluster.without_grant(grant.index, &grant.resource, &grant.verb);
    } else {
        leases = leases.without_grant(grant.index, &grant.resource, &grant.verb);
    }
    let mut story = Story::start(&env, "rbac-without", &cluster, &leases).await;
    let step = need.step;
    let request = format!("{} {}", need.verb, need.resource);
    let result = async {
        for earlier in STEPS.iter().copied().take_while(|s| *s < step) {
            story.act(earlier).await?;
            story
                .settle(earlier)
                .await
                .map_err(|e| format!("{earlier:?}, which needs no {grant}: {e}"))?;
        }
        story.act(step).await?;
        let what = format!("{step:?} to meet a 403 on {request}");
        eventually(&what, STEP, || async {
            story
                .log
                .saw_forbidden(&need.verb, &need.resource)
                .then_some(())
        })
        .await?;
        let others: Vec<String> = story
            .log
            .forbidden()
            .iter()
            .filter(|s| s.verb != need.verb || s.resource != need.resource)
            .map(Seen::to_string)
            .collect();
        if !others.is_empty() {
            return Err(format!("other 403s without {grant}: {others:?}"));
        }
        Ok(format!(
            "without {grant}: {step:?} meets 403 on {request} ({:?} server, namespace {})",
            need.server, story.namespace
        ))
    }
    .await;
    let _ = story.stop().await;
    result
}

/// Every grant of both roles whose need shows on `server`, each taken away in a story of
/// its own, all at once.
async fn each_needed(env: &Arc<Env>, server: Server) {
    let all: Vec<Grant> = grants(&rbac::cluster_role(), true)
        .into_iter()
        .chain(grants(&rbac::leader_election_role("placeholder"), false))
        .collect();
    let unknown: Vec<String> = all
        .iter()
        .filter(|g| needed_for(&g.resource, &g.verb).is_none())
        .map(Grant::to_string)
        .collect();
    assert!(
        unknown.is_empty(),
        "grants no step is known to need (add them to needed_for): {unknown:?}"
    );
    let mut runs = tokio::task::JoinSet::new();
    let mut expected = 0;
    for grant in all {
        let need = needed_for(&grant.resource, &grant.verb).unwrap();
        if need.server != server {
            continue;
        }
        expected += 1;
        let env = env.clone();
        runs.spawn(async move {
            let name = grant.to_string();
            (name, without(env, grant, need).await)
        });
    }
    let mut proven = Vec::new();
    let mut failures = Vec::new();
    while let Some(joined) = runs.join_next().await {
        match joined {
            Ok((_, Ok(line))) => proven.push(line),
            Ok((name, Err(error))) => failures.push(format!("{name}: {error}")),
            Err(panic) => failures.push(format!("a variant panicked: {panic}")),
        }
    }
    proven.sort();
    for line in &proven {
        println!("{line}");
    }
    assert!(failures.is_empty(), "{failures:#?}");
    assert_eq!(proven.len(), expected);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_grant_of_the_generated_roles_is_needed() {
    let Some(env) = env() else { return };
    each_needed(&env, Server::Default).await;
}

/// On a server without streaming lists: the roles are enough there too, and `list` (which
/// the default server never sees, its informers' lists being watches) is needed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_streaming_lists_the_roles_are_enough_and_list_is_needed() {
    let Some(env) = env_without_streaming_lists().await else {
        return;
    };
    enough(&env).await;
    each_needed(&env, Server::WithoutStreamingLists).await;
}
