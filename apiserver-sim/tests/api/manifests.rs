//! Seeding from a manifest directory (`apiserver-sim --objects-from DIR`).

use clientgo_apiserver_sim::manifests::ManifestError;

use crate::support::sim;

fn write(dir: &std::path::Path, name: &str, text: &str) {
    std::fs::write(dir.join(name), text).unwrap();
}

#[tokio::test]
async fn creates_crds_namespaces_then_the_rest_from_json_and_yaml() {
    let dir = tempfile::tempdir().unwrap();
    // Named so that file order alone would create the custom object before its CRD.
    write(
        dir.path(),
        "a-objects.yaml",
        r#"apiVersion: example.com/v1
kind: Widget
metadata:
  name: w1
  namespace: team
spec:
  size: 3
---
apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: ConfigMap
  metadata: {name: settings}
  data: {mode: fast}
"#,
    );
    write(
        dir.path(),
        "b-namespace.json",
        r#"{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"team"}}"#,
    );
    write(
        dir.path(),
        "c-crd.yml",
        r#"apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
"#,
    );
    write(dir.path(), "ignored.txt", "not a manifest");

    let (sim, client) = sim().await;
    assert_eq!(sim.load_manifests(dir.path()).unwrap(), 4);
    let widget = client
        .get("/apis/example.com/v1/namespaces/team/widgets/w1")
        .await;
    assert_eq!(widget.status, 200, "{}", widget.body);
    assert_eq!(widget.body["spec"]["size"], 3);
    let cm = client
        .get("/api/v1/namespaces/default/configmaps/settings")
        .await;
    assert_eq!(
        cm.status, 200,
        "a namespaced object without a namespace goes to default"
    );
    assert_eq!(cm.body["data"]["mode"], "fast");
}

#[tokio::test]
async fn errors_name_the_file_and_the_object() {
    let (sim, _client) = sim().await;

    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "bad.yaml", "kind: [unclosed");
    let error = sim.load_manifests(dir.path()).unwrap_err();
    assert!(matches!(error, ManifestError::Parse { .. }), "{error}");
    assert!(error.to_string().contains("bad.yaml"), "{error}");

    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "x.json",
        r#"{"apiVersion":"nope/v9","kind":"Thing","metadata":{"name":"t"}}"#,
    );
    let error = sim.load_manifests(dir.path()).unwrap_err();
    assert!(
        matches!(error, ManifestError::UnknownKind { .. }),
        "{error}"
    );

    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "cm.json",
        r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"Bad_Name"}}"#,
    );
    let error = sim.load_manifests(dir.path()).unwrap_err();
    let text = error.to_string();
    assert!(
        text.contains("cm.json") && text.contains("Bad_Name"),
        "{text}"
    );

    let error = sim
        .load_manifests(std::path::Path::new("/nonexistent/dir"))
        .unwrap_err();
    assert!(matches!(error, ManifestError::Read { .. }));
}
