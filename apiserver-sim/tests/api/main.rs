//! Integration tests: the simulator driven over real HTTP with a plain hyper client.

mod support;

mod apply;
mod crud;
mod defaults;
mod discovery;
mod faults;
mod gc;
mod graceful;
mod kubectl;
mod limits;
mod list;
mod manifests;
mod observed;
mod partial;
mod patch;
mod scale;
mod schema;
mod tls_auth;
mod unserved;
mod watch;
