//! `#[derive(CrdSchema)]`: the expansion for structs and enums.
//!
//! The counterpart of controller-tools' `structToSchema` / `typeToSchema` walk: each field
//! becomes a call with its JSON name (after serde's renames), its type's schema, the facts
//! that decide `required` and `nullable`, its doc comment and its `#[schema]` items; the
//! runtime (`clientgo_derive::__private`) assembles them. What the item alone shows
//! Kubernetes cannot express is refused here, with a compile error at the offending part.

use proc_macro2::TokenStream;
use quote::quote;
use syn::spanned::Spanned;
use syn::{Data, DeriveInput, Fields, Type};

use crate::private;
use crate::schema_attr::SchemaAttrs;
use crate::serde_attr::{self, Container, RenameRule};

fn error(span: proc_macro2::Span, message: &str) -> syn::Error {
    syn::Error::new(span, message)
}

fn opt_str(value: &Option<String>) -> TokenStream {
    match value {
        Some(s) => quote!(::std::option::Option::Some(#s)),
        None => quote!(::std::option::Option::None),
    }
}

/// The last path segment's name of a type, e.g. `BTreeMap` for `std::collections::BTreeMap<K, V>`.
fn type_name(ty: &Type) -> Option<String> {
    match ty {
        Type::Path(p) => p.path.segments.last().map(|s| s.ident.to_string()),
        Type::Reference(r) => type_name(&r.elem),
        Type::Group(g) => type_name(&g.elem),
        Type::Paren(p) => type_name(&p.elem),
        _ => None,
    }
}

/// The named-field part of a struct (or struct variant): statements adding each field to an
/// `Object` named `object`.
fn fields_statements(
    fields: &syn::FieldsNamed,
    rename: Option<RenameRule>,
    default: bool,
) -> syn::Result<Vec<TokenStream>> {
    let p = private();
    let mut statements = Vec::new();
    for field in &fields.named {
        let serde = serde_attr::Field::parse(&field.attrs)?;
        let schema = SchemaAttrs::parse(&field.attrs, true)?;
        if serde.skip {
            continue;
        }
        let ty = &field.ty;
        if serde.flatten {
            if let Some(span) = schema.span {
                return Err(error(
                    span,
                    "a flattened field has no schema of its own: put `#[schema]` items on the flattened struct's fields",
                ));
            }
            let name = type_name(ty).unwrap_or_default();
            if ["HashMap", "BTreeMap", "Map", "Value", "IndexMap"].contains(&name.as_str()) {
                return Err(error(
                    ty.span(),
                    "`#[serde(flatten)]` of a map cannot be expressed in a CRD: Kubernetes structural schemas cannot have both `properties` and `additionalProperties` (use a named map field, or `#[schema(preserve_unknown_fields)]` on the struct)",
                ));
            }
            statements.push(quote!({
                fn flattenable<T: ::clientgo_derive::CrdFlatten + ?Sized>() {}
                flattenable::<#ty>();
                object.flatten(
                    <#ty as ::clientgo_derive::CrdSchema>::crd_schema(),
                    <#ty as ::clientgo_derive::CrdSchema>::optional(),
                );
            }));
            continue;
        }
        let ident = field.ident.as_ref().expect("named");
        let raw = ident.to_string();
        let raw = raw.strip_prefix("r#").unwrap_or(&raw);
        let name = serde
            .rename
            .clone()
            .unwrap_or_else(|| rename.map_or_else(|| raw.to_owned(), |r| r.field(raw)));
        let (type_schema, optional) = match &schema.schema_with {
            Some(path) => {
                let optional = type_name(ty).as_deref() == Some("Option");
                (quote!(#path()), quote!(#optional))
            }
            None => {
                if let Some(span) = serde.serialize_with {
                    return Err(error(
                        span,
                        "`serialize_with`/`with` writes a shape the derive cannot see: give the field `#[schema(schema_with = path)]` (a `fn() -> serde_json::Value`)",
                    ));
                }
                (
                    quote!(<#ty as ::clientgo_derive::CrdSchema>::crd_schema()),
                    quote!(<#ty as ::clientgo_derive::CrdSchema>::optional()),
                )
            }
        };
        let description = opt_str(
            &schema
                .description
                .clone()
                .or_else(|| serde_attr::docs(&field.attrs)),
        );
        let defaulted = serde.default || default;
        let skippable = serde.skippable;
        let attrs = &schema.attrs;
        let opt_bool = |v: Option<bool>| match v {
            Some(b) => quote!(::std::option::Option::Some(#b)),
            None => quote!(::std::option::Option::None),
        };
        let (required, nullable) = (opt_bool(schema.required), opt_bool(schema.nullable));
        statements.push(quote!(object.field(#p::Field {
            name: #name,
            schema: #type_schema,
            optional: #optional,
            defaulted: #defaulted,
            skippable: #skippable,
            description: #description,
            attrs: ::std::vec![#(#attrs),*],
            required: #required,
            nullable: #nullable,
        });));
    }
    Ok(statements)
}

/// An object schema from named fields.
fn object(
    fields: &syn::FieldsNamed,
    rename: Option<RenameRule>,
    default: bool,
    description: TokenStream,
    attrs: &[TokenStream],
) -> syn::Result<TokenStream> {
    let p = private();
    let statements = fields_statements(fields, rename, default)?;
    Ok(quote!({
        let mut object = #p::Object::new(owner);
        #(#statements)*
        object.finish(#description, &[#(#attrs),*])
    }))
}

/// The one field serde writes of a newtype or transparent struct: its schema, finished.
fn inner(
    field: &syn::Field,
    description: TokenStream,
    attrs: &[TokenStream],
) -> syn::Result<(TokenStream, TokenStream)> {
    let p = private();
    let schema = SchemaAttrs::parse(&field.attrs, true)?;
    let ty = &field.ty;
    let field_attrs = &schema.attrs;
    let build = match &schema.schema_with {
        Some(path) => quote!(#path()),
        None => quote!(<#ty as ::clientgo_derive::CrdSchema>::crd_schema()),
    };
    Ok((
        quote!({
            let mut schema = #build;
            #p::apply(&mut schema, &[#(#field_attrs),*], owner);
            #p::finish(schema, #description, &[#(#attrs),*], owner)
        }),
        quote!(<#ty as ::clientgo_derive::CrdSchema>::optional()),
    ))
}

pub fn expand(input: &DeriveInput) -> syn::Result<TokenStream> {
    let p = private();
    let container = Container::parse(&input.attrs)?;
    let schema = SchemaAttrs::parse(&input.attrs, false)?;
    let description = opt_str(
        &schema
            .description
            .clone()
            .or_else(|| serde_attr::docs(&input.attrs)),
    );
    let attrs = &schema.attrs;
    let mut optional = quote!(false);
    let mut flatten = false;
    let body = match &input.data {
        Data::Struct(data) => {
            let kept: Vec<&syn::Field> = data
                .fields
                .iter()
                .filter(|f| {
                    !serde_attr::Field::parse(&f.attrs)
                        .map(|s| s.skip)
                        .unwrap_or(false)
                })
                .collect();
            match &data.fields {
                _ if container.transparent => {
                    let [field] = kept[..] else {
                        return Err(error(
                            input.ident.span(),
                            "`#[serde(transparent)]` needs exactly one field that is not skipped",
                        ));
                    };
                    let (body, opt) = inner(field, description, attrs)?;
                    optional = opt;
                    body
                }
                Fields::Named(named) => {
                    flatten = true;
                    object(
                        named,
                        container.rename_all,
                        container.default,
                        description,
                        attrs,
                    )?
                }
                Fields::Unnamed(unnamed) if unnamed.unnamed.len() == 1 => {
                    let (body, opt) = inner(&unnamed.unnamed[0], description, attrs)?;
                    optional = opt;
                    body
                }
                Fields::Unnamed(_) => {
                    return Err(error(
                        input.ident.span(),
                        "a tuple struct is written as an array of mixed items: a structural schema has a single `items` schema, so it cannot be expressed (use named fields)",
                    ));
                }
                Fields::Unit => {
                    return Err(error(
                        input.ident.span(),
                        "a unit struct is written as `null`, which has no structural schema",
                    ));
                }
            }
        }
        Data::Enum(data) => expand_enum(data, &container, description, attrs)?,
        Data::Union(_) => {
            return Err(error(
                input.ident.span(),
                "unions have no serde representation and no schema",
            ));
        }
    };
    let name = &input.ident;
    let mut generics = input.generics.clone();
    for param in generics.type_params_mut() {
        param
            .bounds
            .push(syn::parse_quote!(::clientgo_derive::CrdSchema));
    }
    let (impl_generics, ty_generics, where_clause) = generics.split_for_impl();
    let flatten_impl = flatten.then(|| {
        quote!(impl #impl_generics ::clientgo_derive::CrdFlatten for #name #ty_generics #where_clause {})
    });
    Ok(quote! {
        #[automatically_derived]
        impl #impl_generics ::clientgo_derive::CrdSchema for #name #ty_generics #where_clause {
            fn crd_schema() -> #p::serde_json::Value {
                #p::guard::<Self>(|| {
                    let owner: &'static str = ::std::any::type_name::<Self>();
                    #body
                })
            }
            fn optional() -> bool {
                #optional
            }
        }
        #flatten_impl
    })
}

fn expand_enum(
    data: &syn::DataEnum,
    container: &Container,
    description: TokenStream,
    attrs: &[TokenStream],
) -> syn::Result<TokenStream> {
    let p = private();
    let mut units = Vec::new();
    let mut datas = Vec::new();
    for variant in &data.variants {
        let serde = serde_attr::Variant::parse(&variant.attrs)?;
        if serde.skip {
            continue;
        }
        let name = serde.rename.clone().unwrap_or_else(|| {
            let raw = variant.ident.to_string();
            container
                .rename_all
                .map_or(raw.clone(), |r| r.variant(&raw))
        });
        let schema = SchemaAttrs::parse(&variant.attrs, false)?;
        let docs = opt_str(
            &schema
                .description
                .clone()
                .or_else(|| serde_attr::docs(&variant.attrs)),
        );
        let variant_attrs = &schema.attrs;
        let built = match &variant.fields {
            Fields::Unit => {
                units.push((name, variant.ident.span()));
                continue;
            }
            Fields::Unnamed(f) if f.unnamed.len() == 1 => {
                let ty = &f.unnamed[0].ty;
                quote!(#p::finish(<#ty as ::clientgo_derive::CrdSchema>::crd_schema(), #docs, &[#(#variant_attrs),*], owner))
            }
            Fields::Unnamed(_) => {
                return Err(error(
                    variant.ident.span(),
                    "a tuple variant of several fields is written as an array of mixed items: a structural schema has a single `items` schema (use named fields)",
                ));
            }
            Fields::Named(named) => {
                let rule = serde.rename_all.or(container.rename_all_fields);
                object(named, rule, false, docs, variant_attrs)?
            }
        };
        datas.push((name, built));
    }
    let kind = |(name, span): &(String, proc_macro2::Span)| (name.clone(), *span);
    let body = if container.untagged {
        if let Some((_, span)) = units.first().map(kind) {
            return Err(error(
                span,
                "a unit variant of an untagged enum is written as `null`, which has no structural schema",
            ));
        }
        let (names, schemas): (Vec<_>, Vec<_>) = datas.into_iter().unzip();
        quote!(#p::untagged_enum(owner, ::std::vec![#((#names, #schemas)),*]))
    } else if let Some(tag) = &container.tag {
        let mut names: Vec<String> = Vec::new();
        let mut schemas = Vec::new();
        for (name, _) in &units {
            names.push(name.clone());
            schemas.push(quote!(#p::serde_json::json!({"type": "object"})));
        }
        for (name, schema) in datas {
            names.push(name);
            schemas.push(schema);
        }
        quote!(#p::internal_enum(owner, #tag, ::std::vec![#((#names, #schemas)),*]))
    } else if datas.is_empty() {
        let names: Vec<String> = units.iter().map(|(n, _)| n.clone()).collect();
        quote!(#p::unit_enum(&[#(#names),*]))
    } else if let Some((_, span)) = units.first().map(kind) {
        return Err(error(
            span,
            "an externally tagged enum mixing unit and data variants is written as a string or an object: a structural schema has one type per value (make every variant carry data, use `#[serde(tag = \"...\")]`, or split the enum)",
        ));
    } else {
        let (names, schemas): (Vec<_>, Vec<_>) = datas.into_iter().unzip();
        quote!(#p::external_enum(owner, ::std::vec![#((#names, #schemas)),*]))
    };
    Ok(quote!(#p::finish(#body, #description, &[#(#attrs),*], owner)))
}
