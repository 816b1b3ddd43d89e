//! A replica's identity: a default that the API server accepts, and the checks a given one
//! must pass before it names anything.
//!
//! The identity of a replica ends up in two places the API server validates:
//! * the value of the shard label `shard.clientgo-rs.io/<controller>: <identity>`: a label
//!   value, at most 63 characters;
//! * the name of its member Lease, [`member_lease_name`]`(controller, identity)`
//!   (`<controller>-shard-<identity>`): a DNS-1123 subdomain, lowercase, at most 253
//!   characters.
//!
//! The controller's name is a label value too (of [`MEMBER_LABEL`](crate::MEMBER_LABEL), and
//! the name part of the shard label's key), and names the sharder's Lease
//! (`<controller>-sharder`).
//!
//! An identity the API server refuses is not a transient error: every write would fail the
//! same way, forever. [`validate_identity`] finds it before anything is written, and
//! [`ShardedReplica::new`](crate::ShardedReplica::new) refuses it.
//!
//! client-go's leader election takes any identity string (its default, in
//! kube-controller-manager, is `<hostname>_<uuid>`, which only ever names a Lease holder); a
//! shard's identity also names objects and labels, hence the stricter default of
//! [`default_identity`]: the hostname made lowercase and stripped to letters, digits and
//! `-`, then `-<pid>`. The checks are `clientgo_apimachinery::labels`'
//! [`is_valid_label_value`](clientgo_apimachinery::labels::is_valid_label_value) and
//! [`is_dns1123_subdomain`] (Go's `IsValidLabelValue` and `IsDNS1123Subdomain`), and an error
//! reports one broken rule, not all of them.

pub use clientgo_apimachinery::labels::is_dns1123_subdomain;
use clientgo_apimachinery::labels::is_valid_label_value as is_label_value;

use crate::membership::member_lease_name;

/// The longest label value.
const LABEL_VALUE_MAX: usize = 63;

/// What a label value is made of, for error messages.
const LABEL_VALUE_RULE: &str = "at most 63 letters, digits, '-', '_' and '.', \
                                starting and ending with a letter or digit";
/// What a DNS-1123 subdomain is made of ([`is_dns1123_subdomain`]), for error messages.
pub const DNS1123_SUBDOMAIN_RULE: &str = "at most 253 lowercase letters, digits, '-' and '.', \
                                      starting and ending with a letter or digit, \
                                      as does each part between dots";

/// Why an identity or a controller name cannot name a shard. Each message names the
/// offending value and the rule it breaks; those about the identity read
/// `identity "<identity>": ...`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IdentityError {
    /// The identity is empty: a shard label without a value assigns nothing.
    #[error("identity \"\": must not be empty (it is the value of the shard label)")]
    EmptyIdentity,
    /// The identity is not a valid label value: the shard label could not carry it.
    #[error(
        "identity {identity:?}: not a valid label value ({LABEL_VALUE_RULE}), \
         and it is the value of the shard label"
    )]
    IdentityNotLabelValue {
        /// The identity.
        identity: String,
    },
    /// The member Lease's name, `<controller>-shard-<identity>`, is not a DNS-1123
    /// subdomain: the API server would refuse to create it.
    #[error(
        "identity {identity:?}: the member Lease name {lease:?} is not a DNS-1123 subdomain \
         ({DNS1123_SUBDOMAIN_RULE})"
    )]
    MemberLeaseName {
        /// The identity.
        identity: String,
        /// The member Lease's name.
        lease: String,
    },
    /// The controller's name is not a non-empty label value: the member label could not
    /// carry it, nor the shard label's key.
    #[error(
        "controller name {controller:?}: not a valid label value ({LABEL_VALUE_RULE}, \
         not empty), and it is the value of the member label and the name in the shard \
         label's key"
    )]
    ControllerNotLabelValue {
        /// The controller's name.
        controller: String,
    },
    /// The sharder's Lease name, `<controller>-sharder`, is not a DNS-1123 subdomain (nor
    /// would the member Leases' names be, which the controller's name begins too).
    #[error(
        "controller name {controller:?}: the sharder's Lease name {lease:?} is not a DNS-1123 \
         subdomain ({DNS1123_SUBDOMAIN_RULE})"
    )]
    SharderLeaseName {
        /// The controller's name.
        controller: String,
        /// The sharder's Lease name.
        lease: String,
    },
}

/// Checks that replica `identity` of `controller` can name its shard: `controller` is a
/// non-empty label value and `<controller>-sharder` a DNS-1123 subdomain; `identity` is a
/// non-empty label value and [`member_lease_name`]`(controller, identity)` a DNS-1123
/// subdomain. The controller is checked first.
///
/// ```
/// use clientgo_sharding::identity::{IdentityError, validate_identity};
///
/// assert!(validate_identity("sample-controller", "sample-controller-7d9f8-x2x4k").is_ok());
/// assert!(matches!(
///     validate_identity("sample-controller", "Host_1"),
///     Err(IdentityError::MemberLeaseName { .. })
/// ));
/// ```
pub fn validate_identity(controller: &str, identity: &str) -> Result<(), IdentityError> {
    if controller.is_empty() || !is_label_value(controller) {
        return Err(IdentityError::ControllerNotLabelValue {
            controller: controller.to_owned(),
        });
    }
    let sharder_lease = format!("{controller}-sharder");
    if !is_dns1123_subdomain(&sharder_lease) {
        return Err(IdentityError::SharderLeaseName {
            controller: controller.to_owned(),
            lease: sharder_lease,
        });
    }
    if identity.is_empty() {
        return Err(IdentityError::EmptyIdentity);
    }
    if !is_label_value(identity) {
        return Err(IdentityError::IdentityNotLabelValue {
            identity: identity.to_owned(),
        });
    }
    let lease = member_lease_name(controller, identity);
    if !is_dns1123_subdomain(&lease) {
        return Err(IdentityError::MemberLeaseName {
            identity: identity.to_owned(),
            lease,
        });
    }
    Ok(())
}

/// This process's default identity: its hostname (`$HOSTNAME`, a pod's name in Kubernetes,
/// else `/proc/sys/kernel/hostname`) made lowercase, every character but letters and digits
/// turned into `-` (one `-` for a run of them, none at either end), cut down to leave room
/// for `-<pid>`, which follows; `replica-<pid>` without a hostname.
///
/// The result passes [`validate_identity`] with any controller name that passes it: it is a
/// label value (at most 63 characters), and a member Lease name is at most 63 + 7 + 63
/// characters, far below 253.
///
/// It differs between two processes on one host, and between a process and its successor
/// on the same host unless the process ids match (a container's main process is often pid
/// 1, so a restarted container usually keeps it). Give a replica a stable identity, e.g. its
/// pod name, to keep its share of the objects across restarts.
pub fn default_identity() -> String {
    let host = std::env::var("HOSTNAME")
        .ok()
        .filter(|h| !h.trim().is_empty())
        .or_else(|| std::fs::read_to_string("/proc/sys/kernel/hostname").ok());
    identity_from(host.as_deref(), std::process::id())
}

/// [`default_identity`] of a process `pid` on host `host`.
fn identity_from(host: Option<&str>, pid: u32) -> String {
    let suffix = format!("-{pid}");
    let mut name = String::new();
    for c in host.unwrap_or_default().trim().chars() {
        let c = c.to_ascii_lowercase();
        if c.is_ascii_lowercase() || c.is_ascii_digit() {
            name.push(c);
        } else if !name.is_empty() && !name.ends_with('-') {
            name.push('-');
        }
    }
    // Only ASCII was pushed, so any byte length is a character boundary.
    name.truncate(LABEL_VALUE_MAX - suffix.len());
    let name = name.trim_end_matches('-');
    let name = if name.is_empty() { "replica" } else { name };
    format!("{name}{suffix}")
}

#[cfg(test)]
mod tests {
    use super::*;

    const CONTROLLER: &str = "sample-controller";

    #[test]
    fn default_identities_are_valid_whatever_the_hostname() {
        let long = "a".repeat(80);
        let odd_long = format!("Node_{}.Example.COM", "x".repeat(70));
        let cases = [
            (
                Some("sample-controller-7d9f8-x2x4k"),
                "sample-controller-7d9f8-x2x4k-1",
            ),
            (Some("Host_Name"), "host-name-1"),
            (Some("Node1.Example.COM\n"), "node1-example-com-1"),
            (Some("__weird__--host..."), "weird-host-1"),
            (Some("-a"), "a-1"),
            (Some("ünïcødé"), "n-c-d-1"),
            (Some(""), "replica-1"),
            (Some("___"), "replica-1"),
            (None, "replica-1"),
            (Some(long.as_str()), ""),
            (Some(odd_long.as_str()), ""),
        ];
        for pid in [1, 4_194_304, u32::MAX] {
            for (host, expected) in &cases {
                let identity = identity_from(*host, pid);
                if pid == 1 && !expected.is_empty() {
                    assert_eq!(&identity, expected, "host {host:?}");
                }
                assert!(identity.len() <= LABEL_VALUE_MAX, "{identity}");
                assert!(
                    identity.ends_with(&format!("-{pid}")),
                    "{identity} keeps its pid"
                );
                assert_eq!(
                    validate_identity(CONTROLLER, &identity),
                    Ok(()),
                    "{identity}"
                );
                // The longest valid controller name still leaves a valid member Lease name.
                assert_eq!(
                    validate_identity(&"c".repeat(63), &identity),
                    Ok(()),
                    "{identity}"
                );
            }
        }
        let cut = identity_from(Some(&long), 1);
        assert_eq!(cut, format!("{}-1", "a".repeat(61)));
        // A cut that would end in '-' drops it.
        let host = format!("{}_b", "a".repeat(59));
        assert_eq!(
            identity_from(Some(&host), 12),
            format!("{}-12", "a".repeat(59))
        );
        assert_eq!(
            validate_identity(CONTROLLER, &default_identity()),
            Ok(()),
            "this machine's"
        );
    }

    #[test]
    fn pod_names_are_accepted() {
        for identity in [
            "sample-controller-7d9f8-x2x4k",
            "sample-controller-0",
            "a",
            "0",
            "r1",
            "replica.zone-a",
            &"a".repeat(63),
        ] {
            assert_eq!(
                validate_identity(CONTROLLER, identity),
                Ok(()),
                "{identity}"
            );
        }
    }

    #[test]
    fn identities_the_api_server_would_refuse_are_refused() {
        assert_eq!(
            validate_identity(CONTROLLER, ""),
            Err(IdentityError::EmptyIdentity)
        );
        for identity in [&"a".repeat(64), "-a", "a-", "a b", "a/b", "ä"] {
            assert_eq!(
                validate_identity(CONTROLLER, identity),
                Err(IdentityError::IdentityNotLabelValue {
                    identity: identity.to_owned()
                }),
                "{identity}"
            );
        }
        // Valid label values, but not in a Lease name.
        for identity in ["Host_1", "host_1", "Replica", "a.-b", "a..b"] {
            assert_eq!(
                validate_identity(CONTROLLER, identity),
                Err(IdentityError::MemberLeaseName {
                    identity: identity.to_owned(),
                    lease: format!("{CONTROLLER}-shard-{identity}"),
                }),
                "{identity}"
            );
        }
        let error = validate_identity(CONTROLLER, "Host_1").unwrap_err();
        assert_eq!(
            error.to_string(),
            "identity \"Host_1\": the member Lease name \"sample-controller-shard-Host_1\" is \
             not a DNS-1123 subdomain (at most 253 lowercase letters, digits, '-' and '.', \
             starting and ending with a letter or digit, as does each part between dots)"
        );
        let error = validate_identity(CONTROLLER, &"a".repeat(64)).unwrap_err();
        assert!(error.to_string().contains("at most 63"), "{error}");
    }

    #[test]
    fn controller_names_are_checked_first() {
        for controller in ["", "Foo_Bar", "a b", &"c".repeat(64)] {
            assert!(
                validate_identity(controller, "a").is_err(),
                "{controller:?}"
            );
        }
        assert_eq!(
            validate_identity("", "").unwrap_err(),
            IdentityError::ControllerNotLabelValue {
                controller: String::new()
            }
        );
        assert_eq!(
            validate_identity("Foo", "a"),
            Err(IdentityError::SharderLeaseName {
                controller: "Foo".into(),
                lease: "Foo-sharder".into()
            })
        );
        assert_eq!(
            validate_identity("foo_bar", "a"),
            Err(IdentityError::SharderLeaseName {
                controller: "foo_bar".into(),
                lease: "foo_bar-sharder".into()
            })
        );
        assert!(validate_identity("cm.ctl", "a").is_ok());
    }

    #[test]
    fn subdomains_and_label_values() {
        for good in ["a", "a.b", "a-b.c0", "0", &"a".repeat(253)] {
            assert!(is_dns1123_subdomain(good), "{good}");
        }
        for bad in [
            "",
            "A",
            "a_b",
            "-a",
            "a-",
            "a..b",
            ".a",
            "a.",
            &"a".repeat(254),
        ] {
            assert!(!is_dns1123_subdomain(bad), "{bad}");
        }
        for good in ["", "a", "A_b.c-D", "0", &"a".repeat(63)] {
            assert!(is_label_value(good), "{good}");
        }
        for bad in ["-a", "a_", ".a", "a b", &"a".repeat(64)] {
            assert!(!is_label_value(bad), "{bad}");
        }
    }
}
