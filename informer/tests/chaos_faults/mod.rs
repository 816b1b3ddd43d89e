//! What the chaos test's faults did: which kinds were scheduled, and which hit a request or
//! a watch.

use std::collections::{BTreeMap, VecDeque};

use clientgo_apiserver_sim::ApiServerSim;
use clientgo_apiserver_sim::faults::{InjectedError, RequestMatch, WatchFault};

/// The name of an injected error's kind.
pub fn error_kind(error: InjectedError) -> &'static str {
    match error {
        InjectedError::TooManyRequests { .. } => "429",
        InjectedError::InternalError => "500",
        InjectedError::ServiceUnavailable { .. } => "503",
        InjectedError::GatewayTimeout { .. } => "504",
        InjectedError::Expired => "410",
        InjectedError::CutBody => "cut body",
    }
}

/// The name of a watch fault's kind.
pub fn watch_fault_kind(fault: WatchFault) -> String {
    match fault {
        WatchFault::Close => "watch: close".to_owned(),
        WatchFault::CutMidFrame => "watch: cut mid-frame".to_owned(),
        WatchFault::MalformedFrame => "watch: malformed frame".to_owned(),
        WatchFault::Stall => "watch: stall".to_owned(),
        WatchFault::Error(error) => format!("watch: ERROR {}", error_kind(error)),
    }
}

/// Request-fault rules not consumed yet, oldest first: (kind, requests left).
pub type PendingRules = VecDeque<(String, usize)>;

/// Which fault kinds were scheduled and which fired. Request faults are consumed by the
/// informer's list and watch requests in the order they were scheduled (the sim answers
/// each matching request from the oldest rule with some left), so counting the requests
/// the sim logged tells which rules were consumed; a watch fault fires when an open watch
/// receives it, and is retried at the next steps until one does.
pub struct FaultLog {
    /// How many times each kind was scheduled.
    pub scheduled: BTreeMap<String, usize>,
    /// How many requests or watches each kind hit.
    pub fired: BTreeMap<String, usize>,
    /// Per verb: the request count last seen, and the rules not consumed yet (kind, left).
    pub requests: BTreeMap<&'static str, (usize, PendingRules)>,
    /// Watch faults that found no open watch yet.
    watches: Vec<WatchFault>,
}

impl FaultLog {
    pub fn new(sim: &ApiServerSim) -> FaultLog {
        let requests = ["list", "watch"]
            .into_iter()
            .map(|verb| {
                (
                    verb,
                    (sim.requests().count(verb, "configmaps"), VecDeque::new()),
                )
            })
            .collect();
        FaultLog {
            scheduled: BTreeMap::new(),
            fired: BTreeMap::new(),
            requests,
            watches: Vec::new(),
        }
    }

    fn schedule(&mut self, kind: &str) {
        *self.scheduled.entry(kind.to_owned()).or_default() += 1;
    }

    fn fire(&mut self, kind: &str) {
        *self.fired.entry(kind.to_owned()).or_default() += 1;
    }

    /// Counts the request faults consumed since the last look.
    pub fn update(&mut self, sim: &ApiServerSim) {
        let mut fired = Vec::new();
        for (verb, (seen, rules)) in &mut self.requests {
            let now = sim.requests().count(verb, "configmaps");
            let mut consumed = now - *seen;
            *seen = now;
            while consumed > 0 {
                let Some((kind, left)) = rules.front_mut() else {
                    break; // no rule pending: the request was answered normally
                };
                let taken = consumed.min(*left);
                fired.extend(std::iter::repeat_n(kind.clone(), taken));
                *left -= taken;
                consumed -= taken;
                if *left == 0 {
                    rules.pop_front();
                }
            }
        }
        for kind in fired {
            self.fire(&kind);
        }
    }

    pub fn fail_next(
        &mut self,
        sim: &ApiServerSim,
        verb: &'static str,
        count: usize,
        error: InjectedError,
    ) {
        self.update(sim);
        let kind = format!("{verb}: {}", error_kind(error));
        self.schedule(&kind);
        self.requests
            .get_mut(verb)
            .expect("list or watch")
            .1
            .push_back((kind, count));
        sim.faults()
            .fail_next(count, RequestMatch::new(verb, "configmaps"), error);
    }

    pub fn watch_fault(&mut self, sim: &ApiServerSim, fault: WatchFault) {
        self.schedule(&watch_fault_kind(fault));
        self.watches.push(fault);
        self.retry_watch_faults(sim);
    }

    /// Sends the watch faults that found no open watch yet again.
    pub fn retry_watch_faults(&mut self, sim: &ApiServerSim) {
        let mut fired = Vec::new();
        self.watches.retain(|&fault| {
            let received = sim.faults().watches(fault) > 0;
            if received {
                fired.push(watch_fault_kind(fault));
            }
            !received
        });
        for kind in fired {
            self.fire(&kind);
        }
    }

    /// An action that always takes effect (a compaction, a latency).
    pub fn immediate(&mut self, kind: &str) {
        self.schedule(kind);
        self.fire(kind);
    }

    pub fn pending(&self) -> bool {
        !self.watches.is_empty() || self.requests.values().any(|(_, rules)| !rules.is_empty())
    }

    /// The kinds scheduled that never fired.
    pub fn never_fired(&self) -> Vec<&str> {
        self.scheduled
            .keys()
            .filter(|kind| !self.fired.contains_key(*kind))
            .map(String::as_str)
            .collect()
    }
}
