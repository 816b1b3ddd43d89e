//! The HTTP side: routing, handlers, bodies, discovery, output negotiation, and Table and
//! `PartialObjectMetadata` output.
//!
//! Together these play the role of kube-apiserver's `endpoints` package and its handler
//! chain; the listener itself is in [`crate::server`].

pub mod accept;
pub mod admin;
pub mod auth;
pub mod body;
pub mod discovery;
pub mod handler;
pub mod output;
pub mod partial;
pub mod route;
pub mod table;
pub mod yaml;
