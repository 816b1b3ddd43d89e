//! The admin endpoint `/_sim/<action>`: fault injection for a server run as a binary.
//!
//! Nothing like it exists in kube-apiserver; it exposes the handle's fault switches over
//! HTTP (POST only, behind the same bearer token as the API):
//! `close-watches`, `compact`, `compact-etcd`, `cut-watches`, `malformed-watch-frame`, `stall-watches`,
//! `clear`, `latency?ms=N`, and `fail?code=429|500|503|504|cut&count=N&verb=V&resource=R&retryAfter=S`.
//! Each answers a `Success` Status; a bad action or parameter is a 400 Status.

use http::{Method, Response, StatusCode};
use serde_json::json;

use super::body::{self, Body};
use crate::errors::{self, ApiResult};
use crate::faults::{InjectedError, RequestMatch, WatchFault};
use crate::state::State;

/// Runs an admin action.
pub fn handle(
    state: &State,
    method: &Method,
    action: &str,
    query: &str,
) -> ApiResult<Response<Body>> {
    if method != Method::POST {
        return Err(errors::method_not_allowed());
    }
    let params: Vec<(String, String)> = form_urlencoded::parse(query.as_bytes())
        .into_owned()
        .collect();
    let get = |k: &str| params.iter().find(|(a, _)| a == k).map(|(_, v)| v.as_str());
    let num = |k: &str, default: u64| -> ApiResult<u64> {
        get(k).map_or(Ok(default), |v| {
            v.parse()
                .map_err(|_| errors::bad_request(format!("invalid value for {k}: {v:?}")))
        })
    };
    let mut affected = 0usize;
    match action {
        "close-watches" => affected = state.faults.watches(WatchFault::Close),
        "cut-watches" => affected = state.faults.watches(WatchFault::CutMidFrame),
        "malformed-watch-frame" => affected = state.faults.watches(WatchFault::MalformedFrame),
        "stall-watches" => affected = state.faults.watches(WatchFault::Stall),
        "compact" => state.store.compact_now(),
        "compact-etcd" => state.store.compact_etcd(),
        "clear" => state.faults.clear(),
        "latency" => state
            .faults
            .set_latency(std::time::Duration::from_millis(num("ms", 0)?)),
        "fail" => {
            let retry_after = u32::try_from(num("retryAfter", 1)?).unwrap_or(u32::MAX);
            let error = match get("code").unwrap_or("500") {
                "429" => InjectedError::TooManyRequests { retry_after },
                "500" => InjectedError::InternalError,
                "503" => InjectedError::ServiceUnavailable { retry_after },
                "504" => InjectedError::GatewayTimeout { retry_after },
                "cut" => InjectedError::CutBody,
                other => {
                    return Err(errors::bad_request(format!(
                        "unsupported fault code {other:?}"
                    )));
                }
            };
            let matcher = RequestMatch {
                verb: get("verb").map(str::to_owned),
                resource: get("resource").map(str::to_owned),
                name: get("name").map(str::to_owned),
            };
            let count = usize::try_from(num("count", 1)?).unwrap_or(usize::MAX);
            state.faults.fail_next(count, matcher, error);
        }
        other => {
            return Err(errors::bad_request(format!(
                "unknown admin action {other:?}"
            )));
        }
    }
    let status = json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
                        "message": format!("{action}: done"), "details": {"causes": [{"message": format!("{affected} watches affected")}]}});
    Ok(body::json(
        StatusCode::OK,
        serde_json::to_vec(&status).unwrap_or_default(),
    ))
}
