//! The cells of a Pod's Table row.
//!
//! Mirrors kube-apiserver 1.36.2's `printPod` (`pkg/printers/internalversion/printers.go`):
//! `Ready` (ready containers of all, restartable init containers counted), `Status` (the
//! phase, or `status.reason`, `SchedulingGated`, an init container's `Init:...`, a
//! container's waiting or terminated reason, `Terminating` once deleted), `Restarts` (with
//! `(<age> ago)` of the last restart), `Age`, then `IP`, `Node`, `Nominated Node`,
//! `Readiness Gates` (`<none>` when unset). A `Succeeded` or `Failed` Pod's row carries the
//! `Completed` condition.

use serde_json::{Value, json};

use super::age;

fn text(v: &Value) -> &str {
    v.as_str().unwrap_or("")
}

fn items(v: &Value) -> &[Value] {
    v.as_array().map(Vec::as_slice).unwrap_or_default()
}

fn restartable(init: &[Value], name: &str) -> bool {
    init.iter()
        .find(|c| c["name"] == name)
        .is_some_and(|c| c["restartPolicy"] == "Always")
}

/// The later of two RFC 3339 times (`""` for none).
fn later<'a>(a: &'a str, b: &'a str) -> &'a str {
    if b > a { b } else { a }
}

fn last_termination(status: &Value) -> &str {
    text(&status["lastState"]["terminated"]["finishedAt"])
}

/// The reason an init container's state gives, if initialization stops at it.
fn init_reason(c: &Value, i: usize, count: usize) -> String {
    let terminated = &c["state"]["terminated"];
    let waiting = text(&c["state"]["waiting"]["reason"]);
    if terminated.is_object() {
        let reason = text(&terminated["reason"]);
        if !reason.is_empty() {
            return format!("Init:{reason}");
        }
        return match terminated["signal"].as_i64().unwrap_or(0) {
            0 => format!(
                "Init:ExitCode:{}",
                terminated["exitCode"].as_i64().unwrap_or(0)
            ),
            signal => format!("Init:Signal:{signal}"),
        };
    }
    if !waiting.is_empty() && waiting != "PodInitializing" {
        return format!("Init:{waiting}");
    }
    format!("Init:{i}/{count}")
}

pub fn cells(obj: &Value, name: Value, age_cell: Value) -> (Vec<Value>, Option<Value>) {
    let (spec, status) = (&obj["spec"], &obj["status"]);
    let init = items(&spec["initContainers"]);
    let phase = text(&status["phase"]);
    let mut reason = if text(&status["reason"]).is_empty() {
        phase.to_owned()
    } else {
        text(&status["reason"]).to_owned()
    };
    let conditions = items(&status["conditions"]);
    if conditions
        .iter()
        .any(|c| c["type"] == "PodScheduled" && c["reason"] == "SchedulingGated")
    {
        reason = "SchedulingGated".to_owned();
    }
    let row_conditions = match phase {
        "Succeeded" => Some(json!([{"type": "Completed", "status": "True",
            "reason": "Succeeded", "message": "The pod has completed successfully."}])),
        "Failed" => Some(json!([{"type": "Completed", "status": "True",
            "reason": "Failed", "message": "The pod failed."}])),
        _ => None,
    };
    let total = items(&spec["containers"]).len()
        + init
            .iter()
            .filter(|c| c["restartPolicy"] == "Always")
            .count();
    let mut ready = 0;
    let mut restarts = 0;
    let mut sidecar_restarts = 0;
    let mut last_restart = "";
    let mut sidecar_last_restart = "";
    let mut initializing = false;
    for (i, c) in items(&status["initContainerStatuses"]).iter().enumerate() {
        let count = c["restartCount"].as_i64().unwrap_or(0);
        restarts += count;
        last_restart = later(last_restart, last_termination(c));
        let sidecar = restartable(init, text(&c["name"]));
        if sidecar {
            sidecar_restarts += count;
            sidecar_last_restart = later(sidecar_last_restart, last_termination(c));
        }
        let terminated = &c["state"]["terminated"];
        if terminated.is_object() && terminated["exitCode"].as_i64().unwrap_or(0) == 0 {
            continue;
        }
        if sidecar && c["started"] == true {
            if c["ready"] == true {
                ready += 1;
            }
            continue;
        }
        reason = init_reason(c, i, init.len());
        initializing = true;
        break;
    }
    let initialized = conditions
        .iter()
        .any(|c| c["type"] == "Initialized" && c["status"] == "True");
    if !initializing || initialized {
        restarts = sidecar_restarts;
        last_restart = sidecar_last_restart;
        let mut running = false;
        for c in items(&status["containerStatuses"]).iter().rev() {
            restarts += c["restartCount"].as_i64().unwrap_or(0);
            last_restart = later(last_restart, last_termination(c));
            let (waiting, terminated) = (&c["state"]["waiting"], &c["state"]["terminated"]);
            if !text(&waiting["reason"]).is_empty() {
                reason = text(&waiting["reason"]).to_owned();
            } else if terminated.is_object() && !text(&terminated["reason"]).is_empty() {
                reason = text(&terminated["reason"]).to_owned();
            } else if terminated.is_object() {
                reason = match terminated["signal"].as_i64().unwrap_or(0) {
                    0 => format!("ExitCode:{}", terminated["exitCode"].as_i64().unwrap_or(0)),
                    signal => format!("Signal:{signal}"),
                };
            } else if c["ready"] == true && c["state"]["running"].is_object() {
                running = true;
                ready += 1;
            }
        }
        if reason == "Completed" && running {
            let pod_ready = conditions
                .iter()
                .any(|c| c["type"] == "Ready" && c["status"] == "True");
            reason = if pod_ready { "Running" } else { "NotReady" }.to_owned();
        }
    }
    let deleting = obj["metadata"]["deletionTimestamp"].is_string();
    if deleting && text(&status["reason"]) == "NodeLost" {
        reason = "Unknown".to_owned();
    } else if deleting && !matches!(phase, "Succeeded" | "Failed") {
        reason = "Terminating".to_owned();
    }
    let restarts = if restarts != 0 && !last_restart.is_empty() {
        format!("{restarts} ({} ago)", age(Some(last_restart)))
    } else {
        restarts.to_string()
    };
    let or_none = |s: &str| {
        if s.is_empty() {
            "<none>".to_owned()
        } else {
            s.to_owned()
        }
    };
    let ip = items(&status["podIPs"])
        .first()
        .map_or("", |ip| text(&ip["ip"]));
    let gates = items(&spec["readinessGates"]);
    let readiness = if gates.is_empty() {
        "<none>".to_owned()
    } else {
        let true_count = gates
            .iter()
            .filter(|g| {
                conditions
                    .iter()
                    .find(|c| c["type"] == g["conditionType"])
                    .is_some_and(|c| c["status"] == "True")
            })
            .count();
        format!("{true_count}/{}", gates.len())
    };
    let cells = vec![
        name,
        json!(format!("{ready}/{total}")),
        json!(reason),
        json!(restarts),
        age_cell,
        json!(or_none(ip)),
        json!(or_none(text(&spec["nodeName"]))),
        json!(or_none(text(&status["nominatedNodeName"]))),
        json!(readiness),
    ];
    (cells, row_conditions)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pending_pod_and_a_crashing_one() {
        let pending = json!({"metadata": {"name": "p"},
            "spec": {"containers": [{"name": "a"}, {"name": "b"}],
                "readinessGates": [{"conditionType": "x"}]},
            "status": {"phase": "Pending"}});
        let (cells, conditions) = cells(&pending, json!("p"), json!("1s"));
        assert_eq!(
            cells,
            vec![
                json!("p"),
                json!("0/2"),
                json!("Pending"),
                json!("0"),
                json!("1s"),
                json!("<none>"),
                json!("<none>"),
                json!("<none>"),
                json!("0/1")
            ]
        );
        assert!(conditions.is_none());
        let crashing = json!({"metadata": {"name": "c"},
            "spec": {"containers": [{"name": "a"}]},
            "status": {"phase": "Running", "podIPs": [{"ip": "10.0.0.1"}],
                "containerStatuses": [{"name": "a", "restartCount": 2,
                    "state": {"waiting": {"reason": "CrashLoopBackOff"}}}]}});
        let (cells, _) = super::cells(&crashing, json!("c"), json!("1s"));
        assert_eq!(cells[2], "CrashLoopBackOff");
        assert_eq!(cells[3], "2");
        assert_eq!(cells[5], "10.0.0.1");
    }
}
