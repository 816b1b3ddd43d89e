//! A stock kubectl (1.32, from PATH) against the simulator.

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
    let sim = ApiServerSim::start(SimConfig::default().with_tls().with_token("kubectl-token"))
        .await
        .expect("start");
    let dir = std::env::temp_dir().join(format!("apiserver-sim-kubectl-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("tmp dir");
    let kubeconfig = dir.join("config");
    std::fs::write(&kubeconfig, sim.kubeconfig()).expect("kubeconfig");
    let k = Kubectl { kubeconfig };
    let cache = dir.join("cache");
    let cache_flag = format!("--cache-dir={}", cache.display());
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

    let out = k
        .ok(
            &[cf, "apply", "--server-side", "--validate=false", "-f", "-"],
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
