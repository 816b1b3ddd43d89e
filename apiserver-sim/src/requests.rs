//! The request log: every API request the server routed to a verb, in the order it arrived.
//!
//! kube-apiserver's counterpart is its audit log (and the `apiserver_request_total` metric);
//! here it is an in-memory record a test reads through [`ApiServerSim::requests`] to assert
//! what a client sent: "once converged, the controller wrote nothing", "only the leader
//! wrote", "the cleanup was written before the finalizer was removed". Each entry names the
//! verb, the resource (and subresource), the object and the client's `User-Agent`, so tests
//! tell clients apart by giving each its own user agent.
//!
//! A request is recorded once the handler knows its verb and resource, before injected
//! faults apply: a request answered with an injected error is in the log too. Discovery,
//! health and admin requests are not API requests and are not recorded. Counts per verb and
//! resource are exact; only the last [`KEPT`] entries are kept, so a long-running server's
//! memory stays bounded.
//!
//! [`ApiServerSim::requests`]: crate::ApiServerSim::requests

use std::collections::{HashMap, VecDeque};

use parking_lot::Mutex;

use crate::http::route::ResourcePath;

/// How many entries the log keeps (the oldest are dropped first).
pub const KEPT: usize = 10_000;

/// One request, as it arrived.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordedRequest {
    /// Position in the log: 0 for the first request the server recorded, then 1, 2, ...
    pub seq: u64,
    /// `get`, `list`, `watch`, `create`, `update`, `patch`, `delete` or `deletecollection`.
    pub verb: String,
    /// The API group (`""` for the core group).
    pub group: String,
    /// The resource plural, e.g. `configmaps`.
    pub resource: String,
    /// The subresource, e.g. `status`.
    pub subresource: Option<String>,
    /// The namespace in the path, if any.
    pub namespace: Option<String>,
    /// The object name in the path, if any.
    pub name: Option<String>,
    /// The client's `User-Agent` header (`""` when absent).
    pub user_agent: String,
}

impl RecordedRequest {
    /// Whether the request asked to change something (create, update, patch, delete).
    pub fn is_write(&self) -> bool {
        is_write(&self.verb)
    }
}

/// Whether `verb` changes state.
pub fn is_write(verb: &str) -> bool {
    matches!(
        verb,
        "create" | "update" | "patch" | "delete" | "deletecollection"
    )
}

#[derive(Debug, Default)]
struct Log {
    next_seq: u64,
    recent: VecDeque<RecordedRequest>,
    counts: HashMap<(String, String), usize>,
}

/// The request log of one server.
#[derive(Debug, Default)]
pub struct Requests {
    log: Mutex<Log>,
}

impl Requests {
    /// Records a request for `verb` on `path`, sent by `user_agent`.
    pub fn record(&self, verb: &str, path: &ResourcePath, user_agent: &str) {
        let mut log = self.log.lock();
        let seq = log.next_seq;
        log.next_seq += 1;
        *log.counts
            .entry((verb.to_owned(), path.plural.clone()))
            .or_default() += 1;
        if log.recent.len() == KEPT {
            log.recent.pop_front();
        }
        log.recent.push_back(RecordedRequest {
            seq,
            verb: verb.to_owned(),
            group: path.group.clone(),
            resource: path.plural.clone(),
            subresource: path.subresource.clone(),
            namespace: path.namespace.clone(),
            name: path.name.clone(),
            user_agent: user_agent.to_owned(),
        });
    }

    /// How many `verb` requests on `resource` (plural, any subresource) were recorded.
    pub fn count(&self, verb: &str, resource: &str) -> usize {
        self.log
            .lock()
            .counts
            .get(&(verb.to_owned(), resource.to_owned()))
            .copied()
            .unwrap_or(0)
    }

    /// How many requests were recorded in all: the `seq` the next one will get. Pass it to
    /// [`since`](Requests::since) later to see what came after this moment.
    pub fn mark(&self) -> u64 {
        self.log.lock().next_seq
    }

    /// The kept entries, oldest first.
    pub fn snapshot(&self) -> Vec<RecordedRequest> {
        self.log.lock().recent.iter().cloned().collect()
    }

    /// The kept entries recorded at or after `mark`, oldest first.
    pub fn since(&self, mark: u64) -> Vec<RecordedRequest> {
        self.log
            .lock()
            .recent
            .iter()
            .filter(|r| r.seq >= mark)
            .cloned()
            .collect()
    }

    /// The kept write requests (see [`RecordedRequest::is_write`]) sent with `user_agent`.
    pub fn writes_by(&self, user_agent: &str) -> Vec<RecordedRequest> {
        self.log
            .lock()
            .recent
            .iter()
            .filter(|r| r.is_write() && r.user_agent == user_agent)
            .cloned()
            .collect()
    }

    /// Forgets every entry and count (sequence numbers keep growing).
    pub fn clear(&self) {
        let mut log = self.log.lock();
        log.recent.clear();
        log.counts.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    fn path(plural: &str, name: Option<&str>, subresource: Option<&str>) -> ResourcePath {
        ResourcePath {
            group: String::new(),
            version: "v1".into(),
            plural: plural.into(),
            namespace: Some("ns".into()),
            name: name.map(str::to_owned),
            subresource: subresource.map(str::to_owned),
            watch_prefix: false,
        }
    }

    #[test]
    fn counts_marks_and_writes_by_user_agent() {
        let requests = Requests::default();
        requests.record("list", &path("configmaps", None, None), "a");
        let mark = requests.mark();
        requests.record("update", &path("foos", Some("f"), Some("status")), "a");
        requests.record("update", &path("foos", Some("f"), None), "b");
        requests.record("get", &path("foos", Some("f"), None), "b");

        assert_eq!(requests.count("update", "foos"), 2);
        assert_eq!(requests.count("list", "configmaps"), 1);
        assert_eq!(requests.count("delete", "foos"), 0);
        let after: Vec<u64> = requests.since(mark).iter().map(|r| r.seq).collect();
        assert_eq!(after, [1, 2, 3]);
        let by_a = requests.writes_by("a");
        assert_eq!(by_a.len(), 1);
        assert_eq!(by_a[0].subresource.as_deref(), Some("status"));
        assert_eq!(requests.writes_by("b")[0].verb, "update");

        requests.clear();
        assert!(requests.snapshot().is_empty());
        assert_eq!(requests.count("update", "foos"), 0);
        assert_eq!(requests.mark(), 4, "sequence numbers keep growing");
    }

    #[test]
    fn only_the_last_entries_are_kept_but_counts_stay_exact() {
        let requests = Requests::default();
        for _ in 0..KEPT + 5 {
            requests.record("get", &path("pods", Some("p"), None), "a");
        }
        let kept = requests.snapshot();
        assert_eq!(kept.len(), KEPT);
        assert_eq!(kept[0].seq, 5);
        assert_eq!(requests.count("get", "pods"), KEPT + 5);
    }

    /// A request through the server's HTTP handler lands in the log with its user agent;
    /// discovery does not.
    #[tokio::test]
    async fn the_handler_records_api_requests() {
        let sim = crate::ApiServerSim::start(crate::SimConfig::default())
            .await
            .unwrap();
        for path in ["/api/v1/namespaces/default/configmaps/missing", "/api/v1"] {
            let mut stream = tokio::net::TcpStream::connect(sim.addr()).await.unwrap();
            let request = format!(
                "GET {path} HTTP/1.1\r\nHost: x\r\nUser-Agent: probe/1\r\nConnection: close\r\n\r\n"
            );
            stream.write_all(request.as_bytes()).await.unwrap();
            let mut response = Vec::new();
            stream.read_to_end(&mut response).await.unwrap();
        }
        let log = sim.requests().snapshot();
        assert_eq!(log.len(), 1, "{log:?}");
        assert_eq!(
            (log[0].verb.as_str(), log[0].resource.as_str()),
            ("get", "configmaps")
        );
        assert_eq!(log[0].name.as_deref(), Some("missing"));
        assert_eq!(log[0].namespace.as_deref(), Some("default"));
        assert_eq!(log[0].user_agent, "probe/1");
        assert!(!log[0].is_write());
    }
}
