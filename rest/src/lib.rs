//! clientgo-rs's REST layer: for now, the client configuration.
//!
//! This crate ports client-go's `rest` package and what it needs from `tools/clientcmd` and
//! `plugin/pkg/client/auth/exec`. What is here today is the [`config`] module: loading a
//! kubeconfig the way kubectl does, in-cluster configuration, exec credential plugins, and the
//! resolved [`Config`] that a transport is built from. The transport, the request builder and
//! the REST client come next, in their own modules.
//!
//! ```no_run
//! let config = clientgo_rest::Config::infer()?;
//! println!("API server: {}, namespace: {}", config.cluster_url, config.default_namespace);
//! # Ok::<(), clientgo_rest::ConfigError>(())
//! ```

#![deny(missing_docs)]

pub mod config;

pub use config::{Auth, Config, ConfigError, KubeconfigOptions, LoadingRules, TlsConfig};
