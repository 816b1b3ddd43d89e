//! The REST client against apiserver-sim over real HTTP and real sockets: every verb and
//! helper on built-in and custom resources, the error predicates on the Statuses the sim
//! really returns, retries and throttling with injected faults, and discovery with the
//! RESTMapper. The secure suites run with TLS (the sim's generated CA) and a bearer token,
//! loaded from the kubeconfig the sim writes.
//!
//! Waits are bounded and on conditions (a watch event, a polled state), never a fixed sleep;
//! the few real delays come from the sim's `Retry-After` of one second.

mod common;
mod custom;
mod discovery;
mod errors;
mod list_items;
mod retry;
mod stalls;
mod unserved;
mod verbs;
