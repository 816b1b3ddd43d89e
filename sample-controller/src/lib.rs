//! The sample-controller: kubernetes/sample-controller in Rust, written without a framework so
//! that every step of a controller's loop is in view.
//!
//! * [`foo`]: the Foo custom resource.
//! * [`controller`]: informers → handlers → work queue → workers → reconcile → writes, with a
//!   step-by-step account in its module docs.
//! * [`app`]: wiring it to a cluster: client, informers, event recorder, leader election,
//!   signals.
//! * [`demo`]: the whole loop against an embedded API server (`--demo`).
//! * [`serve`]: `/metrics`, `/healthz` and `/readyz`.

#![deny(missing_docs)]

pub mod app;
pub mod controller;
pub mod demo;
pub mod foo;
pub mod serve;
