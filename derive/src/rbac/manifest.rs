//! The manifests a controller's [`Rule`]s become: a `ClusterRole` or `Role`, the
//! `ServiceAccount` and the binding between them, as JSON or as YAML with each rule's reasons
//! as comments (controller-tools' `rbac` generator writes `role.yaml`; its bindings are
//! written by hand in a kubebuilder project's `config/rbac/`).

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde_json::{Value, json};

use super::{PolicyRule, RBAC_API_VERSION, Rule, normalize};

/// A generated `ClusterRole` (no namespace) or `Role`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Role {
    /// `metadata.name`.
    pub name: String,
    /// `metadata.namespace`: `Some` for a `Role`.
    pub namespace: Option<String>,
    /// The merged rules ([`normalize`]).
    pub rules: Vec<PolicyRule>,
}

impl Role {
    /// The `ClusterRole` `name` granting `rules` (their namespaces ignored).
    pub fn cluster(name: impl Into<String>, rules: &[Rule]) -> Role {
        Role {
            name: name.into(),
            namespace: None,
            rules: normalize(rules),
        }
    }

    /// The `Role` `name` in `namespace` granting `rules` (their namespaces ignored). Panics
    /// on a rule with non-resource URLs, which only a `ClusterRole` can grant.
    pub fn namespaced(
        name: impl Into<String>,
        namespace: impl Into<String>,
        rules: &[Rule],
    ) -> Role {
        if let Some(rule) = rules.iter().find(|r| !r.urls.is_empty()) {
            panic!("RBAC rule {rule:?}: non-resource URLs can only be granted by a ClusterRole");
        }
        Role {
            name: name.into(),
            namespace: Some(namespace.into()),
            rules: normalize(rules),
        }
    }

    /// `ClusterRole` or `Role`.
    pub fn kind(&self) -> &'static str {
        if self.namespace.is_some() {
            "Role"
        } else {
            "ClusterRole"
        }
    }

    /// This role without rule `index`.
    pub fn without_rule(&self, index: usize) -> Role {
        let mut role = self.clone();
        role.rules.remove(index);
        role
    }

    /// This role without the verb `verb` of rule `index` (without the rule if it was its
    /// only verb).
    pub fn without_verb(&self, index: usize, verb: &str) -> Role {
        let mut role = self.clone();
        match role.rules[index].without_verb(verb) {
            Some(rule) => role.rules[index] = rule,
            None => {
                role.rules.remove(index);
            }
        }
        role
    }

    /// This role without `verb` on `resource` in rule `index`, everything else kept: a rule
    /// over more resources is split in two. What a minimality test takes away, one grant at
    /// a time.
    pub fn without_grant(&self, index: usize, resource: &str, verb: &str) -> Role {
        let mut role = self.clone();
        let rule = role.rules.remove(index);
        let mut at = index;
        let others: Vec<String> = rule
            .resources
            .iter()
            .filter(|r| *r != resource)
            .cloned()
            .collect();
        if !others.is_empty() {
            role.rules.insert(
                at,
                PolicyRule {
                    resources: others,
                    ..rule.clone()
                },
            );
            at += 1;
        }
        let single = PolicyRule {
            resources: vec![resource.to_owned()],
            ..rule
        };
        if let Some(kept) = single.without_verb(verb) {
            role.rules.insert(at, kept);
        }
        role
    }

    /// The role as the API server reads it.
    pub fn to_json(&self) -> Value {
        json!({
            "apiVersion": RBAC_API_VERSION,
            "kind": self.kind(),
            "metadata": metadata(&self.name, self.namespace.as_deref()),
            "rules": self.rules.iter().map(PolicyRule::to_json).collect::<Vec<_>>(),
        })
    }

    /// The role as one YAML document (no `---`), each rule under its reasons as comments.
    pub fn to_yaml(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "apiVersion: {}", scalar(RBAC_API_VERSION));
        let _ = writeln!(out, "kind: {}", self.kind());
        write_metadata(&mut out, &self.name, self.namespace.as_deref());
        if self.rules.is_empty() {
            out.push_str("rules: []\n");
            return out;
        }
        out.push_str("rules:\n");
        for rule in &self.rules {
            for reason in &rule.reasons {
                for line in reason.lines() {
                    let _ = writeln!(out, "  # {line}");
                }
            }
            let mut first = true;
            let fields = [
                ("apiGroups", &rule.api_groups),
                ("resources", &rule.resources),
                ("resourceNames", &rule.resource_names),
                ("nonResourceURLs", &rule.non_resource_urls),
                ("verbs", &rule.verbs),
            ];
            for (key, values) in fields {
                if values.is_empty() {
                    continue;
                }
                let lead = if first { "  - " } else { "    " };
                first = false;
                let _ = writeln!(out, "{lead}{key}: {}", flow(values));
            }
        }
        out
    }

    /// The binding of this role to `account`: a `ClusterRoleBinding` for a `ClusterRole`,
    /// a `RoleBinding` in the role's namespace for a `Role`; named as the role.
    pub fn bind(&self, account: &ServiceAccount) -> Binding {
        Binding {
            name: self.name.clone(),
            namespace: self.namespace.clone(),
            role_kind: self.kind(),
            role_name: self.name.clone(),
            subjects: vec![account.clone()],
        }
    }

    /// A `RoleBinding` in `namespace` granting this role to `account` there only (a
    /// `ClusterRole`'s rules limited to one namespace, or a `Role` of that namespace).
    pub fn bind_in(&self, namespace: impl Into<String>, account: &ServiceAccount) -> Binding {
        Binding {
            name: self.name.clone(),
            namespace: Some(namespace.into()),
            role_kind: self.kind(),
            role_name: self.name.clone(),
            subjects: vec![account.clone()],
        }
    }
}

/// The roles controller-tools' generator writes for `rules`: the `ClusterRole` `name` for
/// the rules without a namespace, then one `Role` `name` per namespace, sorted; a role with
/// no rules is left out.
pub fn roles(name: &str, rules: &[Rule]) -> Vec<Role> {
    let mut by_namespace: BTreeMap<Option<&str>, Vec<Rule>> = BTreeMap::new();
    for rule in rules {
        by_namespace.entry(rule.namespace).or_default().push(*rule);
    }
    by_namespace
        .into_iter()
        .map(|(namespace, rules)| match namespace {
            None => Role::cluster(name, &rules),
            Some(namespace) => Role::namespaced(name, namespace, &rules),
        })
        .collect()
}

/// A ServiceAccount, as a binding's subject and as a document of its own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServiceAccount {
    /// Its namespace.
    pub namespace: String,
    /// Its name.
    pub name: String,
}

impl ServiceAccount {
    /// The ServiceAccount `namespace/name`.
    pub fn new(namespace: impl Into<String>, name: impl Into<String>) -> ServiceAccount {
        ServiceAccount {
            namespace: namespace.into(),
            name: name.into(),
        }
    }

    /// The ServiceAccount object.
    pub fn to_json(&self) -> Value {
        json!({
            "apiVersion": "v1",
            "kind": "ServiceAccount",
            "metadata": metadata(&self.name, Some(&self.namespace)),
        })
    }

    /// The ServiceAccount object as one YAML document.
    pub fn to_yaml(&self) -> String {
        let mut out = String::from("apiVersion: v1\nkind: ServiceAccount\n");
        write_metadata(&mut out, &self.name, Some(&self.namespace));
        out
    }

    fn subject(&self) -> Value {
        json!({"kind": "ServiceAccount", "name": self.name, "namespace": self.namespace})
    }
}

/// A `ClusterRoleBinding` (no namespace) or `RoleBinding` of a generated [`Role`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Binding {
    /// `metadata.name`.
    pub name: String,
    /// `metadata.namespace`: `Some` for a `RoleBinding`.
    pub namespace: Option<String>,
    /// `roleRef.kind`: `ClusterRole` or `Role`.
    pub role_kind: &'static str,
    /// `roleRef.name`.
    pub role_name: String,
    /// The ServiceAccounts granted the role.
    pub subjects: Vec<ServiceAccount>,
}

impl Binding {
    /// `ClusterRoleBinding` or `RoleBinding`.
    pub fn kind(&self) -> &'static str {
        if self.namespace.is_some() {
            "RoleBinding"
        } else {
            "ClusterRoleBinding"
        }
    }

    /// The binding as the API server reads it.
    pub fn to_json(&self) -> Value {
        json!({
            "apiVersion": RBAC_API_VERSION,
            "kind": self.kind(),
            "metadata": metadata(&self.name, self.namespace.as_deref()),
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": self.role_kind,
                "name": self.role_name,
            },
            "subjects": self.subjects.iter().map(ServiceAccount::subject).collect::<Vec<_>>(),
        })
    }

    /// The binding as one YAML document.
    pub fn to_yaml(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "apiVersion: {}", scalar(RBAC_API_VERSION));
        let _ = writeln!(out, "kind: {}", self.kind());
        write_metadata(&mut out, &self.name, self.namespace.as_deref());
        out.push_str("roleRef:\n  apiGroup: rbac.authorization.k8s.io\n");
        let _ = writeln!(out, "  kind: {}", self.role_kind);
        let _ = writeln!(out, "  name: {}", scalar(&self.role_name));
        out.push_str("subjects:\n");
        for subject in &self.subjects {
            out.push_str("  - kind: ServiceAccount\n");
            let _ = writeln!(out, "    name: {}", scalar(&subject.name));
            let _ = writeln!(out, "    namespace: {}", scalar(&subject.namespace));
        }
        out
    }
}

/// Joins YAML documents with `---` lines.
pub fn yaml_documents<S: AsRef<str>>(documents: &[S]) -> String {
    documents
        .iter()
        .map(AsRef::as_ref)
        .collect::<Vec<_>>()
        .join("---\n")
}

fn metadata(name: &str, namespace: Option<&str>) -> Value {
    match namespace {
        Some(namespace) => json!({"name": name, "namespace": namespace}),
        None => json!({"name": name}),
    }
}

fn write_metadata(out: &mut String, name: &str, namespace: Option<&str>) {
    out.push_str("metadata:\n");
    let _ = writeln!(out, "  name: {}", scalar(name));
    if let Some(namespace) = namespace {
        let _ = writeln!(out, "  namespace: {}", scalar(namespace));
    }
}

/// `value` as a YAML scalar: plain when it is a Kubernetes name or path YAML cannot read as
/// anything but a string, else double-quoted (JSON's quoting is valid YAML).
fn scalar(value: &str) -> String {
    let plain = value
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '/' | '_'))
        && value.starts_with(|c: char| c.is_ascii_alphabetic())
        && !matches!(
            value.to_ascii_lowercase().as_str(),
            "true" | "false" | "null" | "yes" | "no" | "on" | "off" | "y" | "n"
        );
    if plain {
        value.to_owned()
    } else {
        Value::from(value).to_string()
    }
}

/// A list of strings as a YAML flow sequence of double-quoted strings.
fn flow(values: &[String]) -> String {
    let quoted: Vec<String> = values
        .iter()
        .map(|v| Value::from(v.as_str()).to_string())
        .collect();
    format!("[{}]", quoted.join(", "))
}
