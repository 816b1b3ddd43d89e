//! The steps of the script, what each one compares, and running one step on one server.
//!
//! A step is one request (or a watch opened, or a watch's events read, or a bounded wait),
//! written once with placeholders (`{ns}`, `{cm_a_rv}`, ...) that each server fills from its
//! own earlier answers, so that both servers get the same requests in the same order.

use std::collections::HashMap;
use std::time::Duration;

use http::Method;
use serde_json::{Map, Value, json};

use super::client::{Answer, JSON, Server, Until, Watch};
use super::normalize::{Volatile, normalize, yaml_body};
use super::picks::{apply_picks, pick_map};

/// Bound on reading a watch's expected events.
const WATCH_BOUND: Duration = Duration::from_secs(10);
/// Bound on waiting for a CRD to be established.
const ESTABLISHED_BOUND: Duration = Duration::from_secs(30);

/// Whether the sim claims the behaviour a step exercises.
#[derive(Debug, Clone, Copy)]
pub enum Claim {
    /// Listed under "Implemented" in the sim's README: a difference fails the check.
    Claimed,
    /// A known difference (the README's "Not implemented" table, or a cause still to fix),
    /// with a short reason: differences are printed, never failed on.
    Known(&'static str),
}

/// What a step does.
pub enum Action {
    Request {
        method: Method,
        path: String,
        content_type: Option<&'static str>,
        body: Option<String>,
    },
    /// Opens watch `id` (its answer compared: status, content type).
    OpenWatch { id: &'static str, path: String },
    /// Reads watch `id` until `until` (bounded).
    Collect { id: &'static str, until: Until },
    /// Polls GET `path` (bounded) until the CRD's `Established` condition is `True`.
    WaitEstablished { path: String },
    /// Polls GET `path` (bounded) until it answers 404: an object removed asynchronously.
    WaitGone { path: String },
    /// Compacts etcd now from outside kube-apiserver (envtest's compaction, the sim's
    /// `/_sim/compact-etcd`).
    Compact,
    /// Polls GET `path` (bounded) until the object has a `deletionTimestamp`: an object a
    /// controller started deleting.
    WaitDeleting { path: String },
}

/// What part of an object answer is compared (Status answers are always compared whole).
#[derive(Clone)]
pub enum Pick {
    /// The value at a JSON pointer.
    At(&'static str),
    /// The `name`s of the items of the array at a pointer, in order.
    Names(&'static str),
    /// The array at a pointer with it and every array of named items inside sorted by
    /// `name`: the merged content, whatever the order.
    SortedByName(&'static str),
    /// The order of the named items of the array at a pointer (`names`), and of every array
    /// of named items inside them (`app.env`: the `env` names of item `app`).
    Order(&'static str),
    /// The array at a pointer, its items sorted by their member `key` (conditions by
    /// `type`: kube-apiserver's controllers add them in an order that varies).
    SortedBy(&'static str, &'static str),
    /// The member names of the object at a pointer, sorted: its field set, whatever the
    /// values (`/version`'s are each server's own).
    Keys(&'static str),
    /// The items of the array at a pointer with one of these `name`s, whole, by name
    /// (`null` for one that is missing): the entries of a list the other server may hold
    /// more of.
    Named(&'static str, &'static [&'static str]),
}

/// One step of the script.
pub struct Step {
    pub name: &'static str,
    /// The sim behaviour the step exercises.
    pub behaviour: &'static str,
    pub claim: Claim,
    pub action: Action,
    /// `None`: the whole (normalized) body; else these parts of an object answer.
    pub picks: Option<Vec<Pick>>,
    /// Differences under these paths (`*` matches one segment) are known ones, with their
    /// reason, even in a claimed step.
    pub known_fields: Vec<(String, &'static str)>,
    /// (variable, JSON pointer into the answer): saved per server for later placeholders.
    pub saves: Vec<(&'static str, &'static str)>,
    /// (variable, generateName prefix): saves `metadata.name` and stands it for
    /// `<prefix><suffix>` in everything compared afterwards.
    pub generated: Option<(&'static str, &'static str)>,
    pub keep_managed_fields: bool,
    /// Watch events compared with their whole (normalized) object, BOOKMARKs' and ERRORs'
    /// included, instead of their type and name.
    pub whole_events: bool,
    /// BOOKMARKs compared after the other events, wherever they came: for watches whose
    /// bookmark times against the script's writes depend on how fast the server answers.
    pub bookmarks_last: bool,
    /// The request's `Accept` header (`application/json` unless [`Step::accept`]).
    pub accept: &'static str,
}

impl Step {
    /// A claimed step (see [`Step::known_difference`]).
    fn new(name: &'static str, behaviour: &'static str, action: Action) -> Step {
        Step {
            name,
            behaviour,
            claim: Claim::Claimed,
            action,
            picks: None,
            known_fields: Vec::new(),
            saves: Vec::new(),
            generated: None,
            keep_managed_fields: false,
            whole_events: false,
            bookmarks_last: false,
            accept: JSON,
        }
    }

    /// A request with an optional JSON body (`application/json` unless `content_type`).
    pub fn call(
        name: &'static str,
        behaviour: &'static str,
        method: Method,
        path: &str,
        body: Option<Value>,
    ) -> Step {
        let content_type = body.as_ref().map(|_| "application/json");
        let action = Action::Request {
            method,
            path: path.to_owned(),
            content_type,
            body: body.map(|b| b.to_string()),
        };
        Step::new(name, behaviour, action)
    }

    /// A request whose body is sent as is, with this content type.
    pub fn raw(
        name: &'static str,
        behaviour: &'static str,
        method: Method,
        path: &str,
        content_type: &'static str,
        body: &str,
    ) -> Step {
        let action = Action::Request {
            method,
            path: path.to_owned(),
            content_type: Some(content_type),
            body: Some(body.to_owned()),
        };
        Step::new(name, behaviour, action)
    }

    pub fn watch(
        name: &'static str,
        behaviour: &'static str,
        id: &'static str,
        path: &str,
    ) -> Step {
        let path = path.to_owned();
        Step::new(name, behaviour, Action::OpenWatch { id, path })
    }

    pub fn collect(
        name: &'static str,
        behaviour: &'static str,
        id: &'static str,
        until: Until,
    ) -> Step {
        Step::new(name, behaviour, Action::Collect { id, until })
    }

    pub fn wait_established(name: &'static str, behaviour: &'static str, path: &str) -> Step {
        let path = path.to_owned();
        Step::new(name, behaviour, Action::WaitEstablished { path })
    }

    pub fn compact(name: &'static str, behaviour: &'static str) -> Step {
        Step::new(name, behaviour, Action::Compact)
    }

    pub fn wait_gone(name: &'static str, behaviour: &'static str, path: &str) -> Step {
        let path = path.to_owned();
        Step::new(name, behaviour, Action::WaitGone { path })
    }

    pub fn wait_deleting(name: &'static str, behaviour: &'static str, path: &str) -> Step {
        let path = path.to_owned();
        Step::new(name, behaviour, Action::WaitDeleting { path })
    }

    /// Marks the whole step as a known difference, for `why`.
    pub fn known_difference(mut self, why: &'static str) -> Step {
        self.claim = Claim::Known(why);
        self
    }

    pub fn picks(mut self, picks: &[Pick]) -> Step {
        self.picks = Some(picks.to_vec());
        self
    }

    /// Marks differences under `path` as known, for `why`, in a step otherwise claimed.
    pub fn known(mut self, path: impl Into<String>, why: &'static str) -> Step {
        self.known_fields.push((path.into(), why));
        self
    }

    pub fn save(mut self, var: &'static str, pointer: &'static str) -> Step {
        self.saves.push((var, pointer));
        self
    }

    pub fn generated(mut self, var: &'static str, prefix: &'static str) -> Step {
        self.generated = Some((var, prefix));
        self
    }

    pub fn managed_fields(mut self) -> Step {
        self.keep_managed_fields = true;
        self
    }

    pub fn whole_events(mut self) -> Step {
        self.whole_events = true;
        self
    }

    /// Compares a collected watch's BOOKMARKs after its other events (see `bookmarks_last`).
    pub fn bookmarks_last(mut self) -> Step {
        self.bookmarks_last = true;
        self
    }

    /// Sends the request (or opens the watch) with this `Accept` header.
    pub fn accept(mut self, accept: &'static str) -> Step {
        self.accept = accept;
        self
    }

    /// The request as recorded: method, path, content type, body (with `ctx`'s values).
    pub fn describe(&self, ctx: &Ctx) -> String {
        match &self.action {
            Action::Request {
                method,
                path,
                content_type,
                body,
            } => {
                let mut line = format!("{method} {}", ctx.fill(path));
                if self.accept != JSON {
                    line.push_str(&format!(" (Accept: {})", self.accept));
                }
                if let (Some(ct), Some(body)) = (content_type, body) {
                    line.push_str(&format!(" [{ct}] {}", ctx.fill(body)));
                }
                line
            }
            Action::OpenWatch { id, path } if self.accept != JSON => format!(
                "GET {} (watch {id}; Accept: {})",
                ctx.fill(path),
                self.accept
            ),
            Action::OpenWatch { id, path } => format!("GET {} (watch {id})", ctx.fill(path)),
            Action::Collect { id, until } => format!("read watch {id} until {until:?}"),
            Action::WaitEstablished { path } => format!("GET {} until Established", ctx.fill(path)),
            Action::WaitGone { path } => format!("GET {} until 404", ctx.fill(path)),
            Action::Compact => "compact the history".to_owned(),
            Action::WaitDeleting { path } => {
                format!("GET {} until it has a deletionTimestamp", ctx.fill(path))
            }
        }
    }
}

/// One server's side of the run: its client, the values its answers gave, its open watches.
pub struct Ctx {
    pub server: Server,
    pub vars: HashMap<String, String>,
    pub volatile: Volatile,
    /// Compacts this server's history (blocking); `None`: POST `/_sim/compact`.
    pub compact: Option<Compactor>,
    watches: HashMap<&'static str, Watch>,
}

/// A blocking compaction of a server's history, returning the revision compacted to.
pub type Compactor = std::sync::Arc<dyn Fn() -> u64 + Send + Sync>;

impl Ctx {
    pub fn new(server: Server, vars: &[(&str, &str)]) -> Ctx {
        Ctx {
            server,
            vars: vars
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
            volatile: Volatile::default(),
            compact: None,
            watches: HashMap::new(),
        }
    }

    /// `text` with each `{var}` replaced by this server's value, and each `{var+N}` by
    /// that value (a number: a resourceVersion) plus N.
    pub fn fill(&self, text: &str) -> String {
        let mut out = String::with_capacity(text.len());
        let mut rest = text;
        while let Some(open) = rest.find('{') {
            out.push_str(&rest[..open]);
            let after = &rest[open + 1..];
            let ident_len = after
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(after.len());
            let offset = after[ident_len..]
                .strip_prefix('+')
                .and_then(|tail| tail.split_once('}'))
                .and_then(|(n, _)| n.parse::<u64>().ok().map(|v| (v, n.len() + 1)));
            let (add, offset_len) = offset.unwrap_or((0, 0));
            if ident_len > 0 && after[ident_len + offset_len..].starts_with('}') {
                let var = &after[..ident_len];
                let value = self
                    .vars
                    .get(var)
                    .unwrap_or_else(|| panic!("{}: no value for {{{var}}} yet", self.server.label));
                if offset_len == 0 {
                    out.push_str(value);
                } else {
                    let n: u64 = value.parse().unwrap_or_else(|_| {
                        panic!("{}: {{{var}}} is no number: {value}", self.server.label)
                    });
                    out.push_str(&(n + add).to_string());
                }
                rest = &after[ident_len + offset_len + 1..];
            } else {
                out.push('{');
                rest = after;
            }
        }
        out.push_str(rest);
        out
    }

    /// Runs `step` on this server and returns what is compared.
    pub async fn run(&mut self, step: &Step) -> Value {
        match &step.action {
            Action::Request {
                method,
                path,
                content_type,
                body,
            } => {
                let path = self.fill(path);
                let body = body.as_deref().map(|b| self.fill(b));
                let answer = self
                    .server
                    .request_accepting(
                        method,
                        &path,
                        step.accept,
                        *content_type,
                        body.as_deref().map(str::as_bytes),
                    )
                    .await;
                self.after_answer(step, &answer.json());
                self.view(step, &answer)
            }
            Action::OpenWatch { id, path } => {
                let path = self.fill(path);
                let (answer, watch) = self.server.watch(&path, step.accept).await;
                if let Some(watch) = watch {
                    self.watches.insert(id, watch);
                }
                self.view(step, &answer)
            }
            Action::Collect { id, until } => {
                // A watch the server refused to open shows as a difference, not a panic.
                let Some(watch) = self.watches.get_mut(id) else {
                    return json!({ "events": [{ "line": "<not open>" }] });
                };
                let events = watch.collect(*until, WATCH_BOUND).await;
                events.iter().for_each(|e| self.volatile.learn_uids(e));
                let mut events = events
                    .iter()
                    .map(|e| self.event_view(step, e))
                    .collect::<Vec<_>>();
                // kube-apiserver may send the same bookmark twice in a row (its bookmark
                // timer works in 1 s buckets and requeues a watcher whose pre-timeout time is
                // still ahead): one bookmark stands for a run of identical ones.
                if step.bookmarks_last {
                    // A stable sort: the other events keep their order, and so do the
                    // bookmarks, behind them.
                    events.sort_by_key(|e| e["type"] == "BOOKMARK");
                }
                events.dedup_by(|b, a| a == b && a["type"] == "BOOKMARK");
                json!({ "events": events })
            }
            Action::Compact => {
                let status = match self.compact.clone() {
                    Some(compact) => {
                        tokio::task::spawn_blocking(move || compact())
                            .await
                            .expect("the compaction");
                        200
                    }
                    None => {
                        let answer = self
                            .server
                            .request(&Method::POST, "/_sim/compact-etcd", None, None)
                            .await;
                        answer.status
                    }
                };
                json!({ "status": status })
            }
            Action::WaitGone { path } => {
                let path = self.fill(path);
                let deadline = tokio::time::Instant::now() + ESTABLISHED_BOUND;
                loop {
                    let answer = self.server.request(&Method::GET, &path, None, None).await;
                    if answer.status == 404 || tokio::time::Instant::now() >= deadline {
                        return json!({ "status": answer.status });
                    }
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            }
            Action::WaitDeleting { path } => {
                let path = self.fill(path);
                let deadline = tokio::time::Instant::now() + ESTABLISHED_BOUND;
                loop {
                    let answer = self.server.request(&Method::GET, &path, None, None).await;
                    let deleting = answer.json()["metadata"]["deletionTimestamp"].is_string();
                    if deleting || tokio::time::Instant::now() >= deadline {
                        return json!({ "status": answer.status, "deleting": deleting });
                    }
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            }
            Action::WaitEstablished { path } => {
                let path = self.fill(path);
                let deadline = tokio::time::Instant::now() + ESTABLISHED_BOUND;
                loop {
                    let answer = self.server.request(&Method::GET, &path, None, None).await;
                    let crd = answer.json();
                    let established = crd["status"]["conditions"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .find(|c| c["type"] == "Established")
                        .map(|c| c["status"].clone());
                    if established == Some(Value::from("True"))
                        || tokio::time::Instant::now() >= deadline
                    {
                        return json!({ "status": answer.status, "established": established });
                    }
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            }
        }
    }

    fn after_answer(&mut self, step: &Step, body: &Value) {
        self.volatile.learn_uids(body);
        for (var, pointer) in &step.saves {
            let value = match body.pointer(pointer) {
                Some(Value::String(s)) => s.clone(),
                Some(Value::Null) | None => String::new(),
                Some(other) => other.to_string(),
            };
            self.vars.insert((*var).to_owned(), value);
        }
        if let Some((var, prefix)) = step.generated
            && let Some(name) = body["metadata"]["name"].as_str()
        {
            self.vars.insert(var.to_owned(), name.to_owned());
            if name.starts_with(prefix) {
                self.volatile.learn(name, &format!("{prefix}<suffix>"));
            }
        }
    }

    fn view(&self, step: &Step, answer: &Answer) -> Value {
        let mut view = Map::new();
        view.insert("code".into(), answer.status.into());
        view.insert("contentType".into(), answer.content_type.clone().into());
        // `Warning` headers (unknown fields dropped), compared where either server sends one.
        if !answer.warnings.is_empty() {
            view.insert("warnings".into(), answer.warnings.clone().into());
        }
        let body: Value = match serde_json::from_slice::<Value>(&answer.body) {
            Ok(body) => body,
            Err(_) if answer.body.is_empty() => Value::Null,
            Err(_) if answer.content_type == "application/yaml" => {
                yaml_body(&answer.body, &self.volatile)
            }
            Err(_) => String::from_utf8_lossy(&answer.body).trim().into(),
        };
        let mut body = match &step.picks {
            Some(picks) if body.is_object() && body["kind"] != "Status" => {
                apply_picks(&body, picks)
            }
            _ => body,
        };
        normalize(&mut body, &self.volatile, step.keep_managed_fields);
        view.insert("body".into(), body);
        Value::Object(view)
    }

    fn event_view(&self, step: &Step, event: &Value) -> Value {
        let mut view = Map::new();
        if let (Some(type_), true) = (event["type"].as_str(), step.whole_events) {
            view.insert("type".into(), type_.into());
            view.insert("object".into(), event["object"].clone());
        } else if let Some(type_) = event["type"].as_str() {
            let object = &event["object"];
            view.insert("type".into(), type_.into());
            view.insert("name".into(), object["metadata"]["name"].clone());
            if object["kind"] == "Status" {
                for key in ["code", "reason", "message"] {
                    view.insert(key.into(), object[key].clone());
                }
            }
            if let Some(picks) = &step.picks {
                view.extend(pick_map(object, picks));
            }
        } else {
            view.insert("line".into(), event.clone());
        }
        let mut view = Value::Object(view);
        normalize(&mut view, &self.volatile, step.keep_managed_fields);
        view
    }
}
