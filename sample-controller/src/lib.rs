//! The sample-controller: kubernetes/sample-controller in Rust, written without a framework so
//! that every step of a controller's loop is in view.
//!
//! * [`foo`]: the Foo custom resource.
//! * [`controller`]: informers → handlers → work queue → workers → reconcile → writes, with a
//!   step-by-step account in its module docs.
//! * [`desired`]: the Deployment and status a Foo should have (pure functions).
//! * [`finalizer`]: the Foo finalizer, and the order its adding and removing must keep.
//! * [`records`]: the state kept outside the ownerReference tree that the finalizer guards.
//! * [`app`]: wiring it to a cluster: client, informers, event recorder, leader election,
//!   signals.
//! * [`demo`]: the whole loop against an embedded API server (`--demo`).
//! * [`serve`]: `/metrics`, `/healthz` and `/readyz`.
//! * [`sharded`]: `--sharded`, the controller as one of N shards.
//! * [`work_queue`]: the FIFO queue, or the priority queue with `--priority-queue`.
//! * [`rbac`]: the permissions it needs, declared beside the code; `artifacts/rbac*.yaml`.
//!
//! `docs/walkthrough.md` (at the top of the repository) reads this crate beside the library
//! code it runs on.

#![deny(missing_docs)]

pub mod app;
pub mod controller;
pub mod demo;
pub mod desired;
pub mod finalizer;
pub mod foo;
pub mod rbac;
pub mod records;
pub mod serve;
pub mod sharded;
pub mod work_queue;
