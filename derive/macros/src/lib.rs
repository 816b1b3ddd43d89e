//! The proc-macros of `clientgo-derive`: `#[derive(CustomResource)]` and
//! `#[derive(CrdSchema)]`. Use them through `clientgo-derive`, which also holds the traits
//! and the runtime the generated code calls (a proc-macro crate can export nothing else).
//!
//! Mirrors controller-tools' `crd` generator and marker parsing, and kube-derive. Where it
//! differs, and why: the expansion only gathers facts (names after serde's renames, types,
//! doc comments, attribute values) and emits calls into `clientgo_derive::__private`, where
//! the schema rules are ordinary Rust with unit tests; refusals the item itself shows are
//! compile errors here. See `clientgo_derive`'s documentation for the attributes.

#![deny(missing_docs)]

mod derive_resource;
mod derive_schema;
mod schema_attr;
mod serde_attr;

use proc_macro::TokenStream;
use syn::{DeriveInput, parse_macro_input};

/// The path of the runtime the generated code calls.
fn private() -> proc_macro2::TokenStream {
    quote::quote!(::clientgo_derive::__private)
}

/// Generates the root type of a custom resource from its spec type, with `Resource`,
/// `Object`, `ObjectMut` and `clientgo_derive::CustomResource` (whose `crd()` is the
/// CustomResourceDefinition). Configured by `#[resource(...)]`; see `clientgo_derive`.
#[proc_macro_derive(CustomResource, attributes(resource))]
pub fn derive_custom_resource(input: TokenStream) -> TokenStream {
    let input = parse_macro_input!(input as DeriveInput);
    derive_resource::expand(&input)
        .unwrap_or_else(syn::Error::into_compile_error)
        .into()
}

/// Implements `clientgo_derive::CrdSchema`: the type's structural OpenAPI v3 schema, from its
/// shape, its serde attributes, its doc comments and `#[schema(...)]`; see `clientgo_derive`.
#[proc_macro_derive(CrdSchema, attributes(schema))]
pub fn derive_crd_schema(input: TokenStream) -> TokenStream {
    let input = parse_macro_input!(input as DeriveInput);
    derive_schema::expand(&input)
        .unwrap_or_else(syn::Error::into_compile_error)
        .into()
}
