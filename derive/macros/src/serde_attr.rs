//! Reading what serde will write: `#[serde(...)]` on containers, fields and variants, the
//! `rename_all` rules, and doc comments.
//!
//! Mirrors serde_derive's `internals/attr.rs` and `internals/case.rs` for the attributes that
//! change the serialized shape; the rest are skipped without being understood. Where it
//! differs, and why: attributes that make the written shape unknowable from the item alone
//! (`serialize_with`, `with`, `into`) and representations a structural schema cannot hold
//! are refused with a compile error pointing at them.

use syn::meta::ParseNestedMeta;
use syn::{Attribute, Expr, Lit, LitStr, Token, token};

/// serde's `rename_all` rules.
#[derive(Clone, Copy, Debug)]
pub enum RenameRule {
    Lower,
    Upper,
    Pascal,
    Camel,
    Snake,
    ScreamingSnake,
    Kebab,
    ScreamingKebab,
}

impl RenameRule {
    fn parse(lit: &LitStr) -> syn::Result<RenameRule> {
        Ok(match lit.value().as_str() {
            "lowercase" => RenameRule::Lower,
            "UPPERCASE" => RenameRule::Upper,
            "PascalCase" => RenameRule::Pascal,
            "camelCase" => RenameRule::Camel,
            "snake_case" => RenameRule::Snake,
            "SCREAMING_SNAKE_CASE" => RenameRule::ScreamingSnake,
            "kebab-case" => RenameRule::Kebab,
            "SCREAMING-KEBAB-CASE" => RenameRule::ScreamingKebab,
            other => {
                return Err(syn::Error::new(
                    lit.span(),
                    format!("unknown rename rule `{other}`"),
                ));
            }
        })
    }

    /// A field name (snake_case) renamed, as serde does.
    pub fn field(self, field: &str) -> String {
        match self {
            RenameRule::Lower | RenameRule::Snake => field.to_owned(),
            RenameRule::Upper | RenameRule::ScreamingSnake => field.to_ascii_uppercase(),
            RenameRule::Pascal => {
                let mut pascal = String::new();
                let mut capitalize = true;
                for ch in field.chars() {
                    if ch == '_' {
                        capitalize = true;
                    } else if capitalize {
                        pascal.push(ch.to_ascii_uppercase());
                        capitalize = false;
                    } else {
                        pascal.push(ch);
                    }
                }
                pascal
            }
            RenameRule::Camel => {
                let pascal = RenameRule::Pascal.field(field);
                let mut chars = pascal.chars();
                match chars.next() {
                    Some(first) => first.to_ascii_lowercase().to_string() + chars.as_str(),
                    None => pascal,
                }
            }
            RenameRule::Kebab => field.replace('_', "-"),
            RenameRule::ScreamingKebab => field.to_ascii_uppercase().replace('_', "-"),
        }
    }

    /// A variant name (PascalCase) renamed, as serde does.
    pub fn variant(self, variant: &str) -> String {
        match self {
            RenameRule::Pascal => variant.to_owned(),
            RenameRule::Lower => variant.to_ascii_lowercase(),
            RenameRule::Upper => variant.to_ascii_uppercase(),
            RenameRule::Camel => {
                let mut chars = variant.chars();
                match chars.next() {
                    Some(first) => first.to_ascii_lowercase().to_string() + chars.as_str(),
                    None => String::new(),
                }
            }
            RenameRule::Snake => {
                let mut snake = String::new();
                for (i, ch) in variant.char_indices() {
                    if i > 0 && ch.is_uppercase() {
                        snake.push('_');
                    }
                    snake.push(ch.to_ascii_lowercase());
                }
                snake
            }
            RenameRule::ScreamingSnake => RenameRule::Snake.variant(variant).to_ascii_uppercase(),
            RenameRule::Kebab => RenameRule::Snake.variant(variant).replace('_', "-"),
            RenameRule::ScreamingKebab => RenameRule::ScreamingSnake
                .variant(variant)
                .replace('_', "-"),
        }
    }
}

/// Skips an attribute item's value (`= expr` or `(...)`), for items that do not matter.
pub fn skip_value(meta: &ParseNestedMeta) -> syn::Result<()> {
    if meta.input.peek(Token![=]) {
        meta.value()?.parse::<Expr>()?;
    } else if meta.input.peek(token::Paren) {
        meta.parse_nested_meta(|inner| skip_value(&inner))?;
    }
    Ok(())
}

/// A name given as `= "name"` or `(serialize = "name", deserialize = "...")`: the
/// serialized one, which is what the API server sees; both must agree.
fn serialized_name(meta: &ParseNestedMeta) -> syn::Result<Option<LitStr>> {
    if meta.input.peek(Token![=]) {
        return Ok(Some(meta.value()?.parse()?));
    }
    let mut serialize: Option<LitStr> = None;
    let mut deserialize: Option<LitStr> = None;
    meta.parse_nested_meta(|inner| {
        if inner.path.is_ident("serialize") {
            serialize = Some(inner.value()?.parse()?);
        } else if inner.path.is_ident("deserialize") {
            deserialize = Some(inner.value()?.parse()?);
        } else {
            skip_value(&inner)?;
        }
        Ok(())
    })?;
    if let (Some(s), Some(d)) = (&serialize, &deserialize) {
        if s.value() != d.value() {
            return Err(syn::Error::new(
                d.span(),
                "the CRD schema names a field once: serialize and deserialize names must agree (the API server stores what is written and gives it back)",
            ));
        }
    }
    Ok(serialize.or(deserialize))
}

fn rule(meta: &ParseNestedMeta) -> syn::Result<Option<RenameRule>> {
    serialized_name(meta)?
        .map(|lit| RenameRule::parse(&lit))
        .transpose()
}

/// `#[serde(...)]` on a struct or an enum.
#[derive(Default)]
pub struct Container {
    pub rename_all: Option<RenameRule>,
    pub rename_all_fields: Option<RenameRule>,
    pub default: bool,
    pub transparent: bool,
    pub tag: Option<String>,
    pub untagged: bool,
}

impl Container {
    pub fn parse(attrs: &[Attribute]) -> syn::Result<Container> {
        let mut c = Container::default();
        let mut content = None;
        for attr in attrs.iter().filter(|a| a.path().is_ident("serde")) {
            attr.parse_nested_meta(|meta| {
                let p = &meta.path;
                if p.is_ident("rename_all") {
                    c.rename_all = rule(&meta)?;
                } else if p.is_ident("rename_all_fields") {
                    c.rename_all_fields = rule(&meta)?;
                } else if p.is_ident("default") {
                    skip_value(&meta)?;
                    c.default = true;
                } else if p.is_ident("transparent") {
                    c.transparent = true;
                } else if p.is_ident("tag") {
                    c.tag = Some(meta.value()?.parse::<LitStr>()?.value());
                } else if p.is_ident("content") {
                    content = Some(meta.error(
                        "adjacently tagged enums (`tag` + `content`) are not supported: each variant's `content` would need its own schema under one property; use an internally tagged (`tag` only) or externally tagged enum",
                    ));
                    skip_value(&meta)?;
                } else if p.is_ident("untagged") {
                    c.untagged = true;
                } else if p.is_ident("into") {
                    return Err(meta.error(
                        "`#[serde(into = ...)]` writes another type's shape, which the derive cannot see: implement `CrdSchema` by hand",
                    ));
                } else {
                    skip_value(&meta)?;
                }
                Ok(())
            })?;
        }
        match content {
            Some(error) => Err(error),
            None => Ok(c),
        }
    }
}

/// `#[serde(...)]` on a field.
#[derive(Default)]
pub struct Field {
    pub rename: Option<String>,
    pub default: bool,
    /// Never written nor read (`skip`, or both halves).
    pub skip: bool,
    /// Possibly not written (`skip_serializing_if`, `skip_serializing`).
    pub skippable: bool,
    pub flatten: bool,
    /// `serialize_with` / `with`: the written shape is a function's.
    pub serialize_with: Option<proc_macro2::Span>,
}

impl Field {
    pub fn parse(attrs: &[Attribute]) -> syn::Result<Field> {
        let mut f = Field::default();
        let (mut skip_ser, mut skip_de) = (false, false);
        for attr in attrs.iter().filter(|a| a.path().is_ident("serde")) {
            attr.parse_nested_meta(|meta| {
                let p = &meta.path;
                if p.is_ident("rename") {
                    f.rename = serialized_name(&meta)?.map(|l| l.value());
                } else if p.is_ident("default") {
                    skip_value(&meta)?;
                    f.default = true;
                } else if p.is_ident("skip") {
                    f.skip = true;
                } else if p.is_ident("skip_serializing") {
                    skip_ser = true;
                } else if p.is_ident("skip_deserializing") {
                    skip_de = true;
                } else if p.is_ident("skip_serializing_if") {
                    skip_value(&meta)?;
                    f.skippable = true;
                } else if p.is_ident("flatten") {
                    f.flatten = true;
                } else if p.is_ident("serialize_with") || p.is_ident("with") {
                    f.serialize_with = Some(
                        p.get_ident()
                            .map_or_else(proc_macro2::Span::call_site, syn::Ident::span),
                    );
                    skip_value(&meta)?;
                } else {
                    skip_value(&meta)?;
                }
                Ok(())
            })?;
        }
        f.skip |= skip_ser && skip_de;
        f.skippable |= skip_ser;
        Ok(f)
    }
}

/// `#[serde(...)]` on a variant.
#[derive(Default)]
pub struct Variant {
    pub rename: Option<String>,
    pub rename_all: Option<RenameRule>,
    pub skip: bool,
}

impl Variant {
    pub fn parse(attrs: &[Attribute]) -> syn::Result<Variant> {
        let mut v = Variant::default();
        for attr in attrs.iter().filter(|a| a.path().is_ident("serde")) {
            attr.parse_nested_meta(|meta| {
                let p = &meta.path;
                if p.is_ident("rename") {
                    v.rename = serialized_name(&meta)?.map(|l| l.value());
                } else if p.is_ident("rename_all") {
                    v.rename_all = rule(&meta)?;
                } else if p.is_ident("skip") || p.is_ident("skip_serializing") {
                    v.skip = true;
                } else if p.is_ident("untagged") {
                    return Err(meta.error(
                        "untagged variants in a tagged enum are not supported: a value would be either the tagged object or another shape, and a structural schema has one type",
                    ));
                } else {
                    skip_value(&meta)?;
                }
                Ok(())
            })?;
        }
        Ok(v)
    }
}

/// The doc comment: `///` lines with their one leading space removed, joined by newlines,
/// trimmed; `None` when there is none.
pub fn docs(attrs: &[Attribute]) -> Option<String> {
    let mut lines = Vec::new();
    for attr in attrs.iter().filter(|a| a.path().is_ident("doc")) {
        if let syn::Meta::NameValue(nv) = &attr.meta {
            if let Expr::Lit(syn::ExprLit {
                lit: Lit::Str(s), ..
            }) = &nv.value
            {
                let line = s.value();
                lines.push(
                    line.strip_prefix(' ')
                        .unwrap_or(&line)
                        .trim_end()
                        .to_owned(),
                );
            }
        }
    }
    let text = lines.join("\n").trim().to_owned();
    (!text.is_empty()).then_some(text)
}

#[cfg(test)]
mod tests {
    use super::RenameRule::*;

    #[test]
    fn rename_rules_match_serde() {
        let field = "last_transition_time";
        let cases = [
            (Lower, "last_transition_time", "DarkBlue", "darkblue"),
            (Upper, "LAST_TRANSITION_TIME", "DarkBlue", "DARKBLUE"),
            (Pascal, "LastTransitionTime", "DarkBlue", "DarkBlue"),
            (Camel, "lastTransitionTime", "DarkBlue", "darkBlue"),
            (Snake, "last_transition_time", "DarkBlue", "dark_blue"),
            (
                ScreamingSnake,
                "LAST_TRANSITION_TIME",
                "DarkBlue",
                "DARK_BLUE",
            ),
            (Kebab, "last-transition-time", "DarkBlue", "dark-blue"),
            (
                ScreamingKebab,
                "LAST-TRANSITION-TIME",
                "DarkBlue",
                "DARK-BLUE",
            ),
        ];
        for (rule, renamed_field, variant, renamed_variant) in cases {
            assert_eq!(rule.field(field), renamed_field, "{rule:?}");
            assert_eq!(rule.variant(variant), renamed_variant, "{rule:?}");
        }
    }
}
