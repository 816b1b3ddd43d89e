//! The HTTP side: routing, handlers, bodies, discovery and Table output.
//!
//! Together these play the role of kube-apiserver's `endpoints` package and its handler
//! chain; the listener itself is in [`crate::server`].

pub mod admin;
pub mod body;
pub mod discovery;
pub mod handler;
pub mod route;
pub mod table;
