//! The RBAC generator (`clientgo_derive::rbac`): merging as controller-tools'
//! `NormalizeRules` does, roles per namespace as its `rbac` generator writes them, and the
//! JSON and YAML output (read back as k8s-openapi's `ClusterRole`, `Role` and bindings).

use clientgo_derive::rbac::{self, Role, Rule, ServiceAccount};
use k8s_openapi::api::rbac::v1 as k8s;
use serde_json::{Value, json};

fn rules_json(role: &Role) -> Value {
    role.to_json()["rules"].clone()
}

#[test]
fn verbs_of_one_group_and_resource_are_united_in_the_usual_order() {
    const RULES: &[Rule] = &[
        Rule::new(&["apps"], &["deployments"], &["watch", "create"]),
        Rule::new(
            &["apps"],
            &["deployments"],
            &["update", "get", "list", "create"],
        ),
    ];
    assert_eq!(
        rules_json(&Role::cluster("r", RULES)),
        json!([{"apiGroups": ["apps"], "resources": ["deployments"],
                "verbs": ["get", "list", "watch", "create", "update"]}])
    );
}

#[test]
fn resources_with_the_same_verbs_are_joined_then_groups_with_the_same_resources() {
    const RULES: &[Rule] = &[
        Rule::new(&["apps"], &["deployments", "statefulsets"], &["get"]),
        Rule::new(&["apps"], &["deployments/status"], &["get"]),
        Rule::new(&["batch"], &["jobs"], &["get"]),
        Rule::new(&["extra"], &["jobs"], &["get"]),
        Rule::new(&["apps"], &["deployments"], &["list"]),
    ];
    // deployments has get and list: it stays apart from its group's get-only resources.
    assert_eq!(
        rules_json(&Role::cluster("r", RULES)),
        json!([
            {"apiGroups": ["apps"], "resources": ["deployments"], "verbs": ["get", "list"]},
            {"apiGroups": ["apps"], "resources": ["deployments/status", "statefulsets"],
             "verbs": ["get"]},
            {"apiGroups": ["batch", "extra"], "resources": ["jobs"], "verbs": ["get"]},
        ])
    );
}

#[test]
fn subresources_are_resources_of_their_own() {
    const RULES: &[Rule] = &[
        Rule::new(&["samplecontroller.k8s.io"], &["foos"], &["list", "watch"]),
        Rule::new(&["samplecontroller.k8s.io"], &["foos/status"], &["update"]),
        Rule::new(
            &["samplecontroller.k8s.io"],
            &["foos/finalizers"],
            &["update"],
        ),
    ];
    assert_eq!(
        rules_json(&Role::cluster("r", RULES)),
        json!([
            {"apiGroups": ["samplecontroller.k8s.io"], "resources": ["foos"],
             "verbs": ["list", "watch"]},
            {"apiGroups": ["samplecontroller.k8s.io"],
             "resources": ["foos/finalizers", "foos/status"], "verbs": ["update"]},
        ])
    );
}

#[test]
fn resource_names_keep_a_rule_apart_and_core_is_the_empty_group() {
    const RULES: &[Rule] = &[
        Rule::new(&["core"], &["configmaps"], &["create"]),
        Rule::new(&[""], &["configmaps"], &["get", "patch"]).names(&["records"]),
        Rule::new(&[""], &["configmaps"], &["get"]).names(&["records"]),
    ];
    assert_eq!(
        rules_json(&Role::cluster("r", RULES)),
        json!([
            {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["create"]},
            {"apiGroups": [""], "resources": ["configmaps"], "resourceNames": ["records"],
             "verbs": ["get", "patch"]},
        ])
    );
}

#[test]
fn a_star_verb_is_all_verbs_and_urls_are_joined() {
    const RULES: &[Rule] = &[
        Rule::new(&[""], &["pods"], &["get", "*"]),
        Rule::urls(&["/metrics"], &["get"]),
        Rule::urls(&["/healthz"], &["get"]),
    ];
    assert_eq!(
        rules_json(&Role::cluster("r", RULES)),
        json!([
            {"nonResourceURLs": ["/healthz", "/metrics"], "verbs": ["get"]},
            {"apiGroups": [""], "resources": ["pods"], "verbs": ["*"]},
        ])
    );
}

#[test]
fn reasons_follow_the_merged_rules_in_declaration_order() {
    const RULES: &[Rule] = &[
        Rule::new(&["apps"], &["deployments"], &["list", "watch"]).because("the informer"),
        Rule::new(&["apps"], &["deployments"], &["create"]).because("new Deployments"),
        Rule::new(&["apps"], &["deployments"], &["watch"]).because("the informer"),
        Rule::new(&[""], &["events"], &["create"]),
    ];
    let role = Role::cluster("r", RULES);
    assert_eq!(role.rules[0].reasons, Vec::<String>::new());
    assert_eq!(role.rules[1].reasons, ["the informer", "new Deployments"]);
    let yaml = role.to_yaml();
    assert!(
        yaml.ends_with(
            "  - apiGroups: [\"\"]\n    resources: [\"events\"]\n    verbs: [\"create\"]\n  \
             # the informer\n  # new Deployments\n  - apiGroups: [\"apps\"]\n    \
             resources: [\"deployments\"]\n    verbs: [\"list\", \"watch\", \"create\"]\n"
        ),
        "{yaml}"
    );
}

#[test]
fn roles_are_split_by_namespace_as_controller_gen_writes_them() {
    const RULES: &[Rule] = &[
        Rule::new(&["coordination.k8s.io"], &["leases"], &["get"]).namespace("system"),
        Rule::new(&["apps"], &["deployments"], &["get"]),
        Rule::new(&[""], &["secrets"], &["get"]).namespace("app"),
        Rule::new(&["coordination.k8s.io"], &["leases"], &["update"]).namespace("system"),
    ];
    let roles = rbac::roles("manager-role", RULES);
    let kinds: Vec<(&str, Option<&str>, usize)> = roles
        .iter()
        .map(|r| (r.kind(), r.namespace.as_deref(), r.rules.len()))
        .collect();
    assert_eq!(
        kinds,
        [
            ("ClusterRole", None, 1),
            ("Role", Some("app"), 1),
            ("Role", Some("system"), 1)
        ]
    );
    assert_eq!(roles[2].rules[0].verbs, ["get", "update"]);
}

#[test]
fn the_json_decodes_as_the_kubernetes_types() {
    const RULES: &[Rule] = &[
        Rule::new(&["apps"], &["deployments"], &["get", "list"]),
        Rule::new(&[""], &["configmaps"], &["get"]).names(&["a", "b"]),
    ];
    let account = ServiceAccount::new("system", "controller");
    let cluster = Role::cluster("c", RULES);
    let decoded: k8s::ClusterRole = serde_json::from_value(cluster.to_json()).unwrap();
    assert_eq!(decoded.metadata.name.as_deref(), Some("c"));
    let rules = decoded.rules.unwrap();
    assert_eq!(rules[0].api_groups.as_deref(), Some(&[String::new()][..]));
    assert_eq!(
        rules[0].resource_names.as_deref(),
        Some(&["a".to_owned(), "b".to_owned()][..])
    );
    let binding: k8s::ClusterRoleBinding =
        serde_json::from_value(cluster.bind(&account).to_json()).unwrap();
    assert_eq!(
        (
            binding.role_ref.kind.as_str(),
            binding.role_ref.name.as_str()
        ),
        ("ClusterRole", "c")
    );
    let subject = &binding.subjects.unwrap()[0];
    assert_eq!(
        (subject.kind.as_str(), subject.namespace.as_deref()),
        ("ServiceAccount", Some("system"))
    );

    let role = Role::namespaced("r", "app", RULES);
    let decoded: k8s::Role = serde_json::from_value(role.to_json()).unwrap();
    assert_eq!(decoded.metadata.namespace.as_deref(), Some("app"));
    let binding: k8s::RoleBinding = serde_json::from_value(role.bind(&account).to_json()).unwrap();
    assert_eq!(binding.metadata.namespace.as_deref(), Some("app"));
    // A ClusterRole's rules granted in one namespace only.
    let limited = cluster.bind_in("app", &account);
    assert_eq!(
        (limited.kind(), limited.role_kind),
        ("RoleBinding", "ClusterRole")
    );
}

#[test]
fn the_yaml_says_what_the_json_says() {
    const RULES: &[Rule] = &[
        Rule::new(&["apps"], &["deployments"], &["get"]).because("reads\nand more"),
        Rule::new(&[""], &["configmaps"], &["get"]).names(&["true", "x y"]),
        Rule::urls(&["/metrics"], &["get"]),
    ];
    let account = ServiceAccount::new("system", "controller");
    let cluster = Role::cluster("c", RULES);
    let documents = [
        account.to_yaml(),
        cluster.to_yaml(),
        cluster.bind(&account).to_yaml(),
    ];
    let yaml = rbac::yaml_documents(&documents);
    let read: Vec<Value> = yaml
        .split("---\n")
        .map(|document| serde_norway::from_str(document).unwrap())
        .collect();
    assert_eq!(
        read,
        [
            account.to_json(),
            cluster.to_json(),
            cluster.bind(&account).to_json()
        ]
    );
    let empty = Role::namespaced("nothing", "app", &[]);
    let read: Value = serde_norway::from_str(&empty.to_yaml()).unwrap();
    assert_eq!(read, empty.to_json());
}

#[test]
fn removing_a_verb_or_a_rule() {
    const RULES: &[Rule] = &[
        Rule::new(&["apps"], &["deployments"], &["get", "list"]),
        Rule::new(&[""], &["events"], &["create"]),
    ];
    let role = Role::cluster("c", RULES);
    // Rules are sorted: events (core) first.
    assert_eq!(role.without_verb(1, "get").rules[1].verbs, ["list"]);
    assert_eq!(role.without_verb(0, "create").rules.len(), 1);
    assert_eq!(role.without_rule(1).rules[0].resources, ["events"]);

    const JOINED: &[Rule] = &[Rule::new(&["x"], &["a", "b"], &["get", "update"])];
    let joined = Role::cluster("c", JOINED);
    assert_eq!(
        rules_json(&joined.without_grant(0, "b", "update")),
        json!([
            {"apiGroups": ["x"], "resources": ["a"], "verbs": ["get", "update"]},
            {"apiGroups": ["x"], "resources": ["b"], "verbs": ["get"]},
        ])
    );
    const SINGLE: &[Rule] = &[Rule::new(&["x"], &["a", "b"], &["get"])];
    assert_eq!(
        rules_json(&Role::cluster("c", SINGLE).without_grant(0, "a", "get")),
        json!([{"apiGroups": ["x"], "resources": ["b"], "verbs": ["get"]}])
    );
}

#[test]
#[should_panic(expected = "a create cannot be limited to resource names")]
fn a_create_limited_to_names_is_refused() {
    let _ = Role::cluster(
        "c",
        &[Rule::new(&[""], &["configmaps"], &["create"]).names(&["x"])],
    );
}

#[test]
#[should_panic(expected = "non-resource URLs can only be granted by a ClusterRole")]
fn urls_in_a_role_are_refused() {
    let _ = Role::namespaced("r", "app", &[Rule::urls(&["/metrics"], &["get"])]);
}

#[test]
#[should_panic(expected = "resources need their API groups")]
fn resources_without_groups_are_refused() {
    let _ = Role::cluster("c", &[Rule::new(&[], &["pods"], &["get"])]);
}
