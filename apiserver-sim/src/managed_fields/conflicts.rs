//! The answer to an apply that changes fields other managers own: 409 `Conflict`.
//!
//! Mirrors k8s.io/apiserver's `managedfields/internal/conflict.go` (`NewConflictError`):
//! one `FieldManagerConflict` cause per field (`conflict with "<manager>"`, the field as a
//! path such as `.data.a`) and the message `Apply failed with 1 conflict: conflict with
//! "alice": .data.a`, or for several `Apply failed with N conflicts: conflicts with
//! "<manager>":` followed by `- <path>` lines, managers sorted. An `Update` manager prints
//! as `"bob" using v1`, one through `/status` as `"bob" with subresource "status" using v1`.
//! Difference: kube-apiserver lists the causes in the random order of a Go map; the sim
//! lists them by manager, as the message does.

use std::collections::BTreeMap;

use clientgo_apimachinery::{Status, StatusCause, StatusDetails, StatusReason};

use super::fieldset::path_string;
use super::managers::Conflict;
use crate::errors::ApiError;

/// The 409 for `conflicts` (not empty).
pub fn error(conflicts: &[Conflict]) -> ApiError {
    let mut by_manager: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    for c in conflicts {
        by_manager
            .entry(c.manager.as_str())
            .or_default()
            .push(path_string(&c.path));
    }
    let message = match conflicts {
        [one] => format!(
            "Apply failed with 1 conflict: conflict with {}: {}",
            one.manager,
            path_string(&one.path)
        ),
        _ => {
            let mut lines = Vec::new();
            for (manager, paths) in &by_manager {
                lines.push(format!("conflicts with {manager}:"));
                lines.extend(paths.iter().map(|p| format!("- {p}")));
            }
            format!(
                "Apply failed with {} conflicts: {}",
                conflicts.len(),
                lines.join("\n")
            )
        }
    };
    let causes = by_manager
        .iter()
        .flat_map(|(manager, paths)| {
            paths.iter().map(move |p| StatusCause {
                reason: "FieldManagerConflict".into(),
                message: format!("conflict with {manager}"),
                field: p.clone(),
            })
        })
        .collect();
    let mut status = Status::failure(409, StatusReason::Conflict, message);
    status.details = Some(StatusDetails {
        causes,
        ..StatusDetails::default()
    });
    status.into()
}
