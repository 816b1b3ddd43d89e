//! `#[schema(...)]`: validations and Kubernetes extensions of a field or a type, read into the
//! `__private::Attr` expressions the generated code applies.
//!
//! Plays the role of controller-tools' validation markers (`+kubebuilder:validation:Minimum`,
//! `Pattern`, `Enum`, `XValidation`, `+kubebuilder:default`, `+listType`,
//! `+kubebuilder:pruning:PreserveUnknownFields`, ...). Where it differs, and why: one
//! attribute with snake_case keys instead of one marker per rule, and values are Rust
//! expressions (`default = json!({...})`, `maximum = MAX`), serialized when the schema is
//! built, so they type-check where they are written.

use proc_macro2::TokenStream;
use quote::{ToTokens, quote};
use syn::meta::ParseNestedMeta;
use syn::{Attribute, Expr, LitBool, LitStr, Path, Token};

use crate::private;

/// What `#[schema(...)]` says about a field or a type.
#[derive(Default)]
pub struct SchemaAttrs {
    /// `__private::Attr` expressions, in order.
    pub attrs: Vec<TokenStream>,
    pub required: Option<bool>,
    pub nullable: Option<bool>,
    pub description: Option<String>,
    pub schema_with: Option<Path>,
    /// The first `#[schema]` attribute, to point errors at.
    pub span: Option<proc_macro2::Span>,
}

/// `Some(value)` for `= true/false`, `Some(true)` for a bare flag.
fn flag(meta: &ParseNestedMeta) -> syn::Result<bool> {
    if meta.input.peek(Token![=]) {
        Ok(meta.value()?.parse::<LitBool>()?.value)
    } else {
        Ok(true)
    }
}

/// A value expression: `json!(...)` (any path ending in `json`) goes to the re-exported
/// serde_json; anything else is serialized with `serde_json::to_value`.
fn value(meta: &ParseNestedMeta) -> syn::Result<TokenStream> {
    let expr: Expr = meta.value()?.parse()?;
    let p = private();
    if let Expr::Macro(m) = &expr {
        if m.mac
            .path
            .segments
            .last()
            .is_some_and(|s| s.ident == "json")
        {
            let tokens = &m.mac.tokens;
            return Ok(quote!(#p::serde_json::json!(#tokens)));
        }
    }
    Ok(quote!(#p::to_value(&(#expr), owner)))
}

/// `validation(rule = "...", message = "...", ...)` or `validation = "rule"`: an
/// `x-kubernetes-validations` entry (a `ValidationRule` expression).
pub fn validation_rule(meta: &ParseNestedMeta) -> syn::Result<TokenStream> {
    let mut rule: Option<LitStr> = None;
    let mut strings: Vec<(&str, LitStr)> = Vec::new();
    let mut optional_old_self = false;
    if meta.input.peek(Token![=]) {
        rule = Some(meta.value()?.parse()?);
    } else {
        meta.parse_nested_meta(|inner| {
            let key = inner
                .path
                .get_ident()
                .map(ToString::to_string)
                .unwrap_or_default();
            match key.as_str() {
                "rule" => rule = Some(inner.value()?.parse()?),
                "message" | "message_expression" | "reason" | "field_path" => {
                    let lit: LitStr = inner.value()?.parse()?;
                    if key == "reason"
                        && ![
                            "FieldValueInvalid",
                            "FieldValueForbidden",
                            "FieldValueRequired",
                            "FieldValueDuplicate",
                        ]
                        .contains(&lit.value().as_str())
                    {
                        return Err(syn::Error::new(
                            lit.span(),
                            "reason must be FieldValueInvalid, FieldValueForbidden, FieldValueRequired or FieldValueDuplicate",
                        ));
                    }
                    strings.push((
                        match key.as_str() {
                            "message" => "message",
                            "message_expression" => "message_expression",
                            "reason" => "reason",
                            _ => "field_path",
                        },
                        lit,
                    ));
                }
                "optional_old_self" => optional_old_self = flag(&inner)?,
                _ => {
                    return Err(inner.error(
                        "expected `rule`, `message`, `message_expression`, `reason`, `field_path` or `optional_old_self`",
                    ));
                }
            }
            Ok(())
        })?;
    }
    let Some(rule) = rule else {
        return Err(meta.error("a validation needs `rule = \"<CEL expression>\"`"));
    };
    let field = |name: &str| {
        strings
            .iter()
            .find(|(k, _)| *k == name)
            .map_or_else(|| quote!(None), |(_, v)| quote!(Some(#v)))
    };
    let (message, message_expression, reason, field_path) = (
        field("message"),
        field("message_expression"),
        field("reason"),
        field("field_path"),
    );
    Ok(quote!(::clientgo_derive::ValidationRule {
        rule: #rule,
        message: #message,
        message_expression: #message_expression,
        reason: #reason,
        field_path: #field_path,
        optional_old_self: #optional_old_self,
    }))
}

/// JSON keys set from a value, by attribute name.
const KEYS: &[(&str, &str)] = &[
    ("minimum", "minimum"),
    ("maximum", "maximum"),
    ("multiple_of", "multipleOf"),
    ("min_length", "minLength"),
    ("max_length", "maxLength"),
    ("pattern", "pattern"),
    ("format", "format"),
    ("enum_values", "enum"),
    ("min_items", "minItems"),
    ("max_items", "maxItems"),
    ("min_properties", "minProperties"),
    ("max_properties", "maxProperties"),
    ("list_type", "x-kubernetes-list-type"),
    ("list_map_keys", "x-kubernetes-list-map-keys"),
    ("map_type", "x-kubernetes-map-type"),
    ("default", "default"),
    ("example", "example"),
    ("title", "title"),
];

/// JSON keys set to `true` by a flag.
const FLAGS: &[(&str, &str)] = &[
    ("exclusive_minimum", "exclusiveMinimum"),
    ("exclusive_maximum", "exclusiveMaximum"),
    (
        "preserve_unknown_fields",
        "x-kubernetes-preserve-unknown-fields",
    ),
];

impl SchemaAttrs {
    /// Reads every `#[schema(...)]` of an item. `field`: field-only keys are allowed.
    pub fn parse(attrs: &[Attribute], field: bool) -> syn::Result<SchemaAttrs> {
        let mut s = SchemaAttrs::default();
        for attr in attrs.iter().filter(|a| a.path().is_ident("schema")) {
            s.span.get_or_insert(attr.pound_token.span);
            attr.parse_nested_meta(|meta| s.item(&meta, field, true))?;
        }
        Ok(s)
    }

    fn item(&mut self, meta: &ParseNestedMeta, field: bool, top: bool) -> syn::Result<()> {
        let p = private();
        let key = meta
            .path
            .get_ident()
            .map(ToString::to_string)
            .unwrap_or_default();
        if let Some((_, json)) = KEYS.iter().find(|(k, _)| *k == key) {
            if key == "list_type" || key == "map_type" {
                let lit: LitStr = meta.value()?.parse()?;
                let allowed: &[&str] = if key == "list_type" {
                    &["atomic", "set", "map"]
                } else {
                    &["atomic", "granular"]
                };
                if !allowed.contains(&lit.value().as_str()) {
                    return Err(syn::Error::new(
                        lit.span(),
                        format!("{key} must be one of {allowed:?}"),
                    ));
                }
                self.attrs
                    .push(quote!(#p::Attr::Set(#json, #p::serde_json::Value::from(#lit))));
            } else {
                let v = value(meta)?;
                self.attrs.push(quote!(#p::Attr::Set(#json, #v)));
            }
        } else if let Some((_, json)) = FLAGS.iter().find(|(k, _)| *k == key) {
            let on = flag(meta)?;
            self.attrs
                .push(quote!(#p::Attr::Set(#json, #p::serde_json::Value::Bool(#on))));
        } else if key == "validation" {
            let rule = validation_rule(meta)?;
            self.attrs
                .push(quote!(#p::Attr::Validation((#rule).to_json())));
        } else if key == "int_or_string" {
            self.attrs.push(quote!(#p::Attr::IntOrString));
        } else if key == "embedded_resource" {
            self.attrs.push(quote!(#p::Attr::EmbeddedResource));
        } else if key == "items" || key == "values" {
            let mut inner = SchemaAttrs::default();
            meta.parse_nested_meta(|m| inner.item(&m, false, false))?;
            let attrs = inner.attrs;
            let variant = if key == "items" {
                quote!(Items)
            } else {
                quote!(Values)
            };
            self.attrs
                .push(quote!(#p::Attr::#variant(::std::vec![#(#attrs),*])));
        } else if key == "description" && top {
            self.description = Some(meta.value()?.parse::<LitStr>()?.value());
        } else if key == "required" && field {
            self.required = Some(flag(meta)?);
        } else if key == "nullable" && top {
            let on = flag(meta)?;
            if field {
                self.nullable = Some(on);
            } else {
                self.attrs
                    .push(quote!(#p::Attr::Set("nullable", #p::serde_json::Value::Bool(#on))));
            }
        } else if key == "schema_with" && field {
            let path: Expr = meta.value()?.parse()?;
            self.schema_with = Some(match path {
                Expr::Path(p) => p.path,
                Expr::Lit(syn::ExprLit {
                    lit: syn::Lit::Str(s),
                    ..
                }) => s.parse()?,
                other => {
                    return Err(syn::Error::new_spanned(
                        other.to_token_stream(),
                        "expected a path to a `fn() -> serde_json::Value`",
                    ));
                }
            });
        } else {
            return Err(meta.error(format!(
                "unknown or misplaced `#[schema]` item `{key}`{}",
                if field {
                    ""
                } else {
                    " (`required`, `nullable` and `schema_with` are field items; `items(...)`/`values(...)` take validations only)"
                }
            )));
        }
        Ok(())
    }
}
