//! `#[derive(CustomResource)]`: the root type of a custom resource from its spec type.
//!
//! kube-derive's `CustomResource` derive does the same from `#[kube(...)]`; controller-tools
//! reads `+kubebuilder:resource`, `+kubebuilder:subresource`, `+kubebuilder:printcolumn`,
//! `+kubebuilder:storageversion` and `+kubebuilder:selectablefield` markers from the Go root
//! type. Where it differs, and why: the root type is generated (as in kube-derive), and what
//! clientgo-apimachinery's `impl_object!` writes is reached through that very macro, so the
//! root type is an `Object` exactly as a hand-written one is. Names the API server would
//! refuse (a group without a dot, an upper-case plural, an unknown column type) are compile
//! errors here.

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote};
use syn::meta::ParseNestedMeta;
use syn::{DeriveInput, Expr, Ident, LitBool, LitInt, LitStr, Path, Type};

use crate::private;
use crate::schema_attr::validation_rule;
use crate::serde_attr::skip_value;

#[derive(Default)]
struct Attrs {
    group: Option<LitStr>,
    version: Option<LitStr>,
    kind: Option<LitStr>,
    plural: Option<LitStr>,
    singular: Option<LitStr>,
    namespaced: Option<bool>,
    status: Option<Type>,
    short_names: Vec<LitStr>,
    categories: Vec<LitStr>,
    columns: Vec<TokenStream>,
    scale: Option<TokenStream>,
    selectable_fields: Vec<LitStr>,
    served: Option<bool>,
    storage: Option<bool>,
    deprecated: bool,
    deprecation_warning: Option<LitStr>,
    validations: Vec<TokenStream>,
    annotations: Vec<(LitStr, LitStr)>,
    labels: Vec<(LitStr, LitStr)>,
    root: Option<Ident>,
    derives: Vec<Path>,
    spec_default: bool,
    max_description_len: Option<usize>,
}

fn strings(meta: &ParseNestedMeta) -> syn::Result<Vec<LitStr>> {
    let array: syn::ExprArray = meta.value()?.parse()?;
    array
        .elems
        .iter()
        .map(|e| match e {
            Expr::Lit(syn::ExprLit {
                lit: syn::Lit::Str(s),
                ..
            }) => Ok(s.clone()),
            other => Err(syn::Error::new_spanned(other, "expected a string literal")),
        })
        .collect()
}

fn lowercase_label(lit: &LitStr, what: &str) -> syn::Result<()> {
    let v = lit.value();
    let ok = !v.is_empty()
        && v.len() <= 63
        && v.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !v.starts_with('-')
        && !v.ends_with('-');
    if ok {
        Ok(())
    } else {
        Err(syn::Error::new(
            lit.span(),
            format!(
                "{what} must be a lower-case DNS label (a-z, 0-9, `-`), as the API server requires"
            ),
        ))
    }
}

/// `name(key = "..", ...)` items of a nested list, as (key, literal) pairs.
fn nested(meta: &ParseNestedMeta, allowed: &[&str]) -> syn::Result<Vec<(String, syn::Lit)>> {
    let mut items = Vec::new();
    meta.parse_nested_meta(|inner| {
        let key = inner
            .path
            .get_ident()
            .map(ToString::to_string)
            .unwrap_or_default();
        if !allowed.contains(&key.as_str()) {
            return Err(inner.error(format!("expected one of {allowed:?}")));
        }
        items.push((key, inner.value()?.parse::<syn::Lit>()?));
        Ok(())
    })?;
    Ok(items)
}

fn get_str(items: &[(String, syn::Lit)], key: &str) -> syn::Result<Option<LitStr>> {
    match items.iter().find(|(k, _)| k == key) {
        None => Ok(None),
        Some((_, syn::Lit::Str(s))) => Ok(Some(s.clone())),
        Some((_, other)) => Err(syn::Error::new_spanned(
            other,
            format!("`{key}` is a string"),
        )),
    }
}

fn opt(lit: Option<LitStr>) -> TokenStream {
    match lit {
        Some(l) => quote!(::std::option::Option::Some(#l)),
        None => quote!(::std::option::Option::None),
    }
}

fn pair(meta: &ParseNestedMeta) -> syn::Result<(LitStr, LitStr)> {
    let items = nested(meta, &["name", "value"])?;
    match (get_str(&items, "name")?, get_str(&items, "value")?) {
        (Some(n), Some(v)) => Ok((n, v)),
        _ => Err(meta.error("expected `(name = \"..\", value = \"..\")`")),
    }
}

impl Attrs {
    fn parse(input: &DeriveInput) -> syn::Result<Attrs> {
        let mut a = Attrs::default();
        let mut seen = false;
        for attr in input.attrs.iter().filter(|a| a.path().is_ident("resource")) {
            seen = true;
            attr.parse_nested_meta(|meta| a.item(&meta))?;
        }
        if !seen {
            return Err(syn::Error::new(
                Span::call_site(),
                "`#[derive(CustomResource)]` needs `#[resource(group = \"...\", version = \"...\", ...)]`",
            ));
        }
        Ok(a)
    }

    fn item(&mut self, meta: &ParseNestedMeta) -> syn::Result<()> {
        let key = meta
            .path
            .get_ident()
            .map(ToString::to_string)
            .unwrap_or_default();
        match key.as_str() {
            "group" => self.group = Some(meta.value()?.parse()?),
            "version" => self.version = Some(meta.value()?.parse()?),
            "kind" => self.kind = Some(meta.value()?.parse()?),
            "plural" => self.plural = Some(meta.value()?.parse()?),
            "singular" => self.singular = Some(meta.value()?.parse()?),
            "namespaced" | "cluster" => {
                let namespaced = key == "namespaced";
                if self.namespaced.is_some_and(|n| n != namespaced) {
                    return Err(meta.error("`namespaced` and `cluster` exclude each other"));
                }
                self.namespaced = Some(namespaced);
            }
            "status" => {
                let lit: LitStr = meta.value()?.parse()?;
                self.status = Some(lit.parse()?);
            }
            "shortnames" => self.short_names = strings(meta)?,
            "categories" => self.categories = strings(meta)?,
            "printcolumn" => {
                let items = nested(
                    meta,
                    &[
                        "name",
                        "type",
                        "json_path",
                        "description",
                        "format",
                        "priority",
                    ],
                )?;
                let (Some(name), Some(ty), Some(path)) = (
                    get_str(&items, "name")?,
                    get_str(&items, "type")?,
                    get_str(&items, "json_path")?,
                ) else {
                    return Err(meta.error("a printcolumn needs `name`, `type` and `json_path`"));
                };
                if !["integer", "number", "string", "boolean", "date"]
                    .contains(&ty.value().as_str())
                {
                    return Err(syn::Error::new(
                        ty.span(),
                        "a column's type is integer, number, string, boolean or date",
                    ));
                }
                if !path.value().starts_with('.') {
                    return Err(syn::Error::new(
                        path.span(),
                        "a column's json_path starts with `.`, e.g. `.spec.replicas`",
                    ));
                }
                let priority = match items.iter().find(|(k, _)| k == "priority") {
                    Some((_, syn::Lit::Int(i))) => i.base10_parse::<i32>()?,
                    Some((_, other)) => {
                        return Err(syn::Error::new_spanned(other, "`priority` is an integer"));
                    }
                    None => 0,
                };
                let (description, format) = (
                    opt(get_str(&items, "description")?),
                    opt(get_str(&items, "format")?),
                );
                let priority = LitInt::new(&priority.to_string(), Span::call_site());
                self.columns.push(quote!(::clientgo_derive::PrinterColumn {
                    name: #name, type_: #ty, json_path: #path,
                    description: #description, format: #format, priority: #priority,
                }));
            }
            "scale" => {
                let items = nested(
                    meta,
                    &[
                        "spec_replicas_path",
                        "status_replicas_path",
                        "label_selector_path",
                    ],
                )?;
                let (Some(spec), Some(status)) = (
                    get_str(&items, "spec_replicas_path")?,
                    get_str(&items, "status_replicas_path")?,
                ) else {
                    return Err(
                        meta.error("scale needs `spec_replicas_path` and `status_replicas_path`")
                    );
                };
                if !spec.value().starts_with(".spec.") {
                    return Err(syn::Error::new(
                        spec.span(),
                        "spec_replicas_path is under `.spec.`",
                    ));
                }
                if !status.value().starts_with(".status.") {
                    return Err(syn::Error::new(
                        status.span(),
                        "status_replicas_path is under `.status.`",
                    ));
                }
                let selector = opt(get_str(&items, "label_selector_path")?);
                self.scale = Some(quote!(::clientgo_derive::Scale {
                    spec_replicas_path: #spec, status_replicas_path: #status, label_selector_path: #selector,
                }));
            }
            "selectable_field" => self.selectable_fields.push(meta.value()?.parse()?),
            "served" => self.served = Some(meta.value()?.parse::<LitBool>()?.value),
            "storage" => {
                self.storage = Some(if meta.input.peek(syn::Token![=]) {
                    meta.value()?.parse::<LitBool>()?.value
                } else {
                    true
                })
            }
            "deprecated" => {
                self.deprecated = true;
                if meta.input.peek(syn::Token![=]) {
                    self.deprecation_warning = Some(meta.value()?.parse()?);
                }
            }
            "validation" => self.validations.push(validation_rule(meta)?),
            "annotation" => self.annotations.push(pair(meta)?),
            "label" => self.labels.push(pair(meta)?),
            "root" => {
                let lit: LitStr = meta.value()?.parse()?;
                self.root = Some(lit.parse()?);
            }
            "spec_default" => self.spec_default = true,
            "max_description_len" => {
                self.max_description_len = Some(meta.value()?.parse::<LitInt>()?.base10_parse()?)
            }
            "derive" => {
                for lit in strings(meta)? {
                    self.derives.push(lit.parse()?);
                }
            }
            _ => {
                skip_value(meta)?;
                return Err(meta.error(format!("unknown `#[resource]` item `{key}`")));
            }
        }
        Ok(())
    }
}

/// English plural of a lower-case kind, as kube-derive guesses it; irregular ones need
/// `plural = "..."`.
fn plural(kind: &str) -> String {
    let consonant_y =
        kind.ends_with('y') && !kind[..kind.len() - 1].ends_with(['a', 'e', 'i', 'o', 'u']);
    if consonant_y {
        format!("{}ies", &kind[..kind.len() - 1])
    } else if ["s", "x", "z", "ch", "sh"]
        .iter()
        .any(|e| kind.ends_with(e))
    {
        format!("{kind}es")
    } else {
        format!("{kind}s")
    }
}

pub fn expand(input: &DeriveInput) -> syn::Result<TokenStream> {
    let p = private();
    let a = Attrs::parse(input)?;
    if !input.generics.params.is_empty() {
        return Err(syn::Error::new_spanned(
            &input.generics,
            "a custom resource's spec type cannot be generic: the CRD has one schema",
        ));
    }
    let spec = &input.ident;
    let (Some(group), Some(version)) = (&a.group, &a.version) else {
        return Err(syn::Error::new(
            Span::call_site(),
            "`#[resource]` needs `group` and `version`",
        ));
    };
    let g = group.value();
    if !g.contains('.')
        || g.split('.')
            .any(|l| lowercase_label(&LitStr::new(l, group.span()), "").is_err())
    {
        return Err(syn::Error::new(
            group.span(),
            "a CRD's group is a lower-case DNS subdomain with at least one dot, e.g. `example.com`",
        ));
    }
    lowercase_label(version, "version")?;
    let kind = a.kind.clone().map_or_else(
        || {
            spec.to_string()
                .strip_suffix("Spec")
                .unwrap_or(&spec.to_string())
                .to_owned()
        },
        |k| k.value(),
    );
    if !kind.starts_with(|c: char| c.is_ascii_uppercase())
        || !kind.chars().all(|c| c.is_ascii_alphanumeric())
    {
        return Err(syn::Error::new(
            a.kind.as_ref().map_or(spec.span(), LitStr::span),
            "a kind is CamelCase ASCII, e.g. `Foo`",
        ));
    }
    let lower = kind.to_ascii_lowercase();
    let plural = a
        .plural
        .clone()
        .unwrap_or_else(|| LitStr::new(&plural(&lower), Span::call_site()));
    lowercase_label(&plural, "plural")?;
    let singular = a
        .singular
        .clone()
        .unwrap_or_else(|| LitStr::new(&lower, Span::call_site()));
    lowercase_label(&singular, "singular")?;
    for name in &a.short_names {
        lowercase_label(name, "a short name")?;
    }
    let root = a.root.clone().unwrap_or_else(|| format_ident!("{}", kind));
    if root == *spec {
        return Err(syn::Error::new(
            spec.span(),
            "the root type would be named like the spec type: rename the spec type (e.g. `FooSpec`) or give `root = \"...\"`",
        ));
    }
    let namespaced = a.namespaced.unwrap_or(true);
    let vis = &input.vis;
    let api_version = format!("{}/{}", g, version.value());
    let served = a.served.unwrap_or(true);
    let storage = a.storage.unwrap_or(true);
    let deprecated = a.deprecated;
    let warning = opt(a.deprecation_warning.clone());
    let (short_names, categories, columns, fields, validations) = (
        &a.short_names,
        &a.categories,
        &a.columns,
        &a.selectable_fields,
        &a.validations,
    );
    let scale = match &a.scale {
        Some(s) => quote!(::std::option::Option::Some(#s)),
        None => quote!(::std::option::Option::None),
    };
    let (ann_k, ann_v): (Vec<_>, Vec<_>) = a.annotations.iter().cloned().unzip();
    let (lab_k, lab_v): (Vec<_>, Vec<_>) = a.labels.iter().cloned().unzip();
    let derives = &a.derives;
    let has_status = a.status.is_some();
    let (status_field, status_init, status_schema) = match &a.status {
        Some(status) => (
            quote! {
                /// What the controller reports (the `status` subresource).
                #[serde(default, skip_serializing_if = "::std::option::Option::is_none")]
                pub status: ::std::option::Option<#status>,
            },
            quote!(status: ::std::option::Option::None,),
            quote!(::std::option::Option::Some(<#status as ::clientgo_derive::CrdSchema>::crd_schema())),
        ),
        None => (quote!(), quote!(), quote!(::std::option::Option::None)),
    };
    let spec_required = !a.spec_default;
    let spec_serde = a.spec_default.then(|| quote!(#[serde(default)]));
    let max_description_len = match a.max_description_len {
        Some(n) => quote!(::std::option::Option::Some(#n)),
        None => quote!(::std::option::Option::None),
    };
    let doc = format!(
        "The `{kind}` custom resource (`{api_version}`), generated from [`{spec}`] by `#[derive(CustomResource)]`."
    );
    let serde_crate = format!("{p}::serde").replace(' ', "");
    Ok(quote! {
        #[doc = #doc]
        #[derive(::std::fmt::Debug, ::std::clone::Clone, #p::serde::Serialize, #p::serde::Deserialize, #(#derives),*)]
        #[serde(crate = #serde_crate)]
        #vis struct #root {
            /// `group/version` of the object.
            #[serde(default, rename = "apiVersion")]
            pub api_version: ::std::string::String,
            /// The object's kind.
            #[serde(default)]
            pub kind: ::std::string::String,
            /// Name, namespace, labels, resource version, ...
            #[serde(default)]
            pub metadata: #p::apimachinery::ObjectMeta,
            /// What the user asks for.
            #spec_serde
            pub spec: #spec,
            #status_field
        }

        impl #p::apimachinery::Resource for #root {
            const GROUP: &'static str = #group;
            const VERSION: &'static str = #version;
            const KIND: &'static str = #kind;
            const PLURAL: &'static str = #plural;
            const NAMESPACED: bool = #namespaced;
        }

        #p::apimachinery::impl_object!(#root);

        impl #root {
            /// An object named `name` (no namespace) with `spec`, `apiVersion` and `kind` set.
            #vis fn new(name: &str, spec: #spec) -> Self {
                #root {
                    api_version: ::std::string::String::from(#api_version),
                    kind: ::std::string::String::from(#kind),
                    metadata: #p::apimachinery::ObjectMeta {
                        name: ::std::string::String::from(name),
                        ..::std::default::Default::default()
                    },
                    spec,
                    #status_init
                }
            }
        }

        impl ::clientgo_derive::CustomResource for #root {
            type Spec = #spec;
            const INFO: ::clientgo_derive::ResourceInfo = ::clientgo_derive::ResourceInfo {
                group: #group,
                version: #version,
                kind: #kind,
                plural: #plural,
                singular: #singular,
                namespaced: #namespaced,
                short_names: &[#(#short_names),*],
                categories: &[#(#categories),*],
                printer_columns: &[#(#columns),*],
                scale: #scale,
                status_subresource: #has_status,
                selectable_fields: &[#(#fields),*],
                served: #served,
                storage: #storage,
                deprecated: #deprecated,
                deprecation_warning: #warning,
                validations: &[#(#validations),*],
                annotations: &[#((#ann_k, #ann_v)),*],
                labels: &[#((#lab_k, #lab_v)),*],
                spec_required: #spec_required,
                max_description_len: #max_description_len,
            };

            fn status_schema() -> ::std::option::Option<#p::serde_json::Value> {
                #status_schema
            }

            fn new(name: &str, spec: #spec) -> Self {
                #root::new(name, spec)
            }
        }
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn plurals_follow_english_rules() {
        for (kind, plural) in [
            ("foo", "foos"),
            ("policy", "policies"),
            ("gateway", "gateways"),
            ("ingress", "ingresses"),
            ("box", "boxes"),
            ("patch", "patches"),
        ] {
            assert_eq!(super::plural(kind), plural);
        }
    }
}
