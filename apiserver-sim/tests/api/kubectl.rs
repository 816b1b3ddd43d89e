//! A stock kubectl (1.32, from PATH) against the simulator: get, apply (client- and
//! server-side, with field-manager conflicts), create, patch, wait, watch, delete, and
//! managedFields as `kubectl get -o yaml --show-managed-fields` prints them.

use std::process::Output;

use clientgo_apiserver_sim::{ApiServerSim, SimConfig};

struct Kubectl {
    kubeconfig: std::path::PathBuf,
}

impl Kubectl {
    async fn run(&self, args: &[&str], stdin: Option<&str>) -> Output {
        use tokio::io::AsyncWriteExt;
        let mut cmd = tokio::process::Command::new("kubectl");
        cmd.arg("--kubeconfig").arg(&self.kubeconfig).args(args);
        cmd.stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        cmd.kill_on_drop(true);
        let mut child = cmd.spawn().expect("kubectl on PATH");
        let mut input = child.stdin.take().expect("stdin");
        input
            .write_all(stdin.unwrap_or("").as_bytes())
            .await
            .expect("stdin");
        drop(input);
        tokio::time::timeout(std::time::Duration::from_secs(60), child.wait_with_output())
            .await
            .expect("kubectl finished in time")
            .expect("kubectl ran")
    }

    async fn ok(&self, args: &[&str], stdin: Option<&str>) -> String {
        let out = self.run(args, stdin).await;
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(
            out.status.success(),
            "kubectl {args:?} failed: {stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        stdout
    }
}

const CRD: &str = "apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget, shortNames: [wd]}
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {status: {}}
    schema:
      openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
";

const WIDGET: &str = "apiVersion: example.com/v1
kind: Widget
metadata: {name: w1}
spec: {size: 1}
";

#[tokio::test]
async fn kubectl_gets_applies_patches_watches_and_deletes() {
    let (_sim, k, cache_flag, dir) = kubectl_for("main").await;
    let cf = cache_flag.as_str();

    let out = k.ok(&[cf, "get", "namespaces"], None).await;
    assert!(
        out.contains("NAME") && out.contains("AGE") && out.contains("default"),
        "{out}"
    );

    let out = k
        .ok(&[cf, "apply", "--validate=false", "-f", "-"], Some(CRD))
        .await;
    assert!(
        out.contains("customresourcedefinition.apiextensions.k8s.io/widgets.example.com created"),
        "{out}"
    );
    k.ok(
        &[
            cf,
            "wait",
            "--for=condition=Established",
            "crd/widgets.example.com",
            "--timeout=30s",
        ],
        None,
    )
    .await;

    let out = k
        .ok(&[cf, "create", "--validate=false", "-f", "-"], Some(WIDGET))
        .await;
    assert!(out.contains("widget.example.com/w1 created"), "{out}");
    let out = k
        .ok(
            &[cf, "get", "widgets", "w1", "-o", "jsonpath={.spec.size}"],
            None,
        )
        .await;
    assert_eq!(out, "1");
    let out = k.ok(&[cf, "get", "wd"], None).await;
    assert!(out.contains("w1"), "{out}");

    let out = k
        .ok(
            &[
                cf,
                "patch",
                "widget",
                "w1",
                "--type=merge",
                "-p",
                r#"{"spec":{"size":2}}"#,
            ],
            None,
        )
        .await;
    assert!(out.contains("widget.example.com/w1 patched"), "{out}");
    let out = k
        .ok(
            &[
                cf,
                "get",
                "widget",
                "w1",
                "-o",
                "jsonpath={.spec.size} {.metadata.generation}",
            ],
            None,
        )
        .await;
    assert_eq!(out, "2 2");
    let bad = k
        .run(
            &[cf, "patch", "widget", "w1", "-p", r#"{"spec":{"size":3}}"#],
            None,
        )
        .await;
    assert!(!bad.status.success());
    assert!(
        String::from_utf8_lossy(&bad.stderr)
            .contains("application/strategic-merge-patch+json is not supported")
    );

    // spec.size belongs to kubectl-patch now: applying another value conflicts (as with
    // kube-apiserver 1.36.2), --force-conflicts takes it over.
    let conflict = k
        .run(
            &[cf, "apply", "--server-side", "--validate=false", "-f", "-"],
            Some(WIDGET),
        )
        .await;
    assert!(!conflict.status.success());
    let stderr = String::from_utf8_lossy(&conflict.stderr);
    assert!(
        stderr.contains(
            r#"Apply failed with 1 conflict: conflict with "kubectl-patch" using example.com/v1: .spec.size"#
        ),
        "{stderr}"
    );
    let out = k
        .ok(
            &[
                cf,
                "apply",
                "--server-side",
                "--force-conflicts",
                "--validate=false",
                "-f",
                "-",
            ],
            Some(WIDGET),
        )
        .await;
    assert!(out.contains("serverside-applied"), "{out}");

    // A bounded watch: the raw watch stream ends with timeoutSeconds.
    let out = k
        .ok(
            &[
                cf,
                "get",
                "--raw",
                "/apis/example.com/v1/namespaces/default/widgets?watch=1&timeoutSeconds=1",
            ],
            None,
        )
        .await;
    assert!(
        out.contains(r#""type":"ADDED""#) && out.contains(r#""name":"w1""#),
        "{out}"
    );
    // kubectl wait --for=delete watches until the object is gone.
    let waiter = {
        let k = Kubectl {
            kubeconfig: k.kubeconfig.clone(),
        };
        let cf = cache_flag.clone();
        tokio::spawn(async move {
            k.run(
                &[&cf, "wait", "--for=delete", "widget/w1", "--timeout=30s"],
                None,
            )
            .await
        })
    };
    let out = k.ok(&[cf, "delete", "widget", "w1"], None).await;
    assert!(out.contains("widget.example.com \"w1\" deleted"), "{out}");
    let waited = waiter.await.expect("join");
    assert!(
        waited.status.success(),
        "{}",
        String::from_utf8_lossy(&waited.stderr)
    );
    let out = k.run(&[cf, "get", "widget", "w1"], None).await;
    assert!(String::from_utf8_lossy(&out.stderr).contains("NotFound"));
    let _ = std::fs::remove_dir_all(&dir);
}

const APPLIED_CM: &str = "apiVersion: v1
kind: ConfigMap
metadata: {name: owned}
data: {a: \"1\"}
";

/// Starts a sim and a kubectl for it, with its cache flag and working directory.
async fn kubectl_for(tag: &str) -> (ApiServerSim, Kubectl, String, std::path::PathBuf) {
    let sim = ApiServerSim::start(SimConfig::default().with_tls().with_token("kubectl-token"))
        .await
        .expect("start");
    let dir = std::env::temp_dir().join(format!(
        "apiserver-sim-kubectl-{tag}-{}",
        std::process::id()
    ));
    std::fs::create_dir_all(&dir).expect("tmp dir");
    let kubeconfig = dir.join("config");
    std::fs::write(&kubeconfig, sim.kubeconfig()).expect("kubeconfig");
    let cache_flag = format!("--cache-dir={}", dir.join("cache").display());
    (sim, Kubectl { kubeconfig }, cache_flag, dir)
}

#[tokio::test]
async fn kubectl_server_side_apply_by_two_managers_conflicts() {
    let (_sim, k, cf, dir) = kubectl_for("ssa").await;
    let cf = cf.as_str();
    let apply = |manager: &'static str| {
        [
            cf,
            "apply",
            "--server-side",
            "--validate=false",
            "--field-manager",
            manager,
            "-f",
            "-",
        ]
    };
    let out = k.ok(&apply("alice"), Some(APPLIED_CM)).await;
    assert!(out.contains("configmap/owned serverside-applied"), "{out}");
    let other = APPLIED_CM.replace("\"1\"", "\"2\"");
    let conflict = k.run(&apply("bob"), Some(&other)).await;
    assert!(!conflict.status.success());
    // kubectl 1.32 against kube-apiserver 1.36.2 prints the same first line.
    let stderr = String::from_utf8_lossy(&conflict.stderr);
    assert!(
        stderr.contains(r#"error: Apply failed with 1 conflict: conflict with "alice": .data.a"#),
        "{stderr}"
    );
    let out = k
        .ok(
            &[cf, "get", "cm", "owned", "-o", "jsonpath={.data.a}"],
            None,
        )
        .await;
    assert_eq!(out, "1", "the conflicting apply changed nothing");

    // managedFields are hidden by kubectl's -o yaml unless asked for.
    let yaml = k.ok(&[cf, "get", "cm", "owned", "-o", "yaml"], None).await;
    assert!(!yaml.contains("managedFields"), "{yaml}");
    let yaml = k
        .ok(
            &[
                cf,
                "get",
                "cm",
                "owned",
                "-o",
                "yaml",
                "--show-managed-fields",
            ],
            None,
        )
        .await;
    for line in [
        "  managedFields:",
        "  - apiVersion: v1",
        "    fieldsType: FieldsV1",
        "        f:a: {}",
        "    manager: alice",
        "    operation: Apply",
    ] {
        assert!(yaml.contains(line), "{line:?} in {yaml}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn kubectl_get_of_an_unknown_group_says_there_is_no_such_resource_type() {
    let (_sim, k, cf, dir) = kubectl_for("unknown").await;
    let cf = cf.as_str();
    let out = k.run(&[cf, "get", "things.nope.example.com"], None).await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        stderr.contains("the server doesn't have a resource type \"things\""),
        "{stderr}"
    );
    // The path itself answers `404 page not found` (text/plain), which kubectl reports as
    // kube-apiserver's NotFound (kubectl's two messages observed against kube-apiserver
    // 1.36.2).
    let out = k
        .run(
            &[cf, "get", "--raw", "/apis/nope.example.com/v1/things"],
            None,
        )
        .await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        stderr.contains("(NotFound)") && stderr.contains("could not find the requested resource"),
        "{stderr}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
