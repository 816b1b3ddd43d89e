//! Label key and value syntax.
//!
//! Ports `IsQualifiedName`, `IsValidLabelValue` and `IsDNS1123Subdomain` from
//! `k8s.io/apimachinery/pkg/util/validation/validation.go`, without regular expressions:
//!
//! * a key is `[prefix/]name`: `name` is 1..=63 characters of `[A-Za-z0-9-_.]` starting
//!   and ending with an alphanumeric; the optional `prefix` is a DNS-1123 subdomain
//!   (lower-case `[a-z0-9-]` labels separated by dots, each starting and ending with an
//!   alphanumeric, 253 characters at most);
//! * a value is empty, or a `name` as above (63 characters at most).
//!
//! Go returns every violated rule; we return the first one, as a fixed sentence.

const QUALIFIED_NAME_MAX: usize = 63;
const LABEL_VALUE_MAX: usize = 63;
const DNS1123_SUBDOMAIN_MAX: usize = 253;

const NAME_CHARS: &str = "name part must consist of alphanumeric characters, '-', '_' or '.', \
                          and must start and end with an alphanumeric character";
const VALUE_CHARS: &str = "a valid label must be an empty string or consist of alphanumeric \
                           characters, '-', '_' or '.', and must start and end with an \
                           alphanumeric character";

/// Checks a label key (a qualified name); returns why it is invalid.
pub(crate) fn validate_label_key(key: &str) -> Result<(), &'static str> {
    let name = match key.split_once('/') {
        None => key,
        Some((_, name)) if name.contains('/') => {
            return Err("a qualified name must have at most one '/' \
                        (an optional DNS subdomain prefix, '/', and a name)");
        }
        Some((prefix, name)) => {
            if prefix.is_empty() {
                return Err("prefix part must be non-empty");
            }
            validate_dns1123_subdomain(prefix)?;
            name
        }
    };
    if name.is_empty() {
        return Err("name part must be non-empty");
    }
    if name.len() > QUALIFIED_NAME_MAX {
        return Err("name part must be no more than 63 characters");
    }
    if !is_name(name) {
        return Err(NAME_CHARS);
    }
    Ok(())
}

/// Checks a label value; returns why it is invalid.
pub(crate) fn validate_label_value(value: &str) -> Result<(), &'static str> {
    if value.len() > LABEL_VALUE_MAX {
        return Err("must be no more than 63 characters");
    }
    if !value.is_empty() && !is_name(value) {
        return Err(VALUE_CHARS);
    }
    Ok(())
}

pub(crate) fn validate_dns1123_subdomain(s: &str) -> Result<(), &'static str> {
    if s.len() > DNS1123_SUBDOMAIN_MAX {
        return Err("prefix part must be no more than 253 characters");
    }
    let label_ok = |l: &str| {
        let b = l.as_bytes();
        let alnum = |c: &u8| c.is_ascii_lowercase() || c.is_ascii_digit();
        b.first().is_some_and(alnum)
            && b.last().is_some_and(alnum)
            && b.iter().all(|c| alnum(c) || *c == b'-')
    };
    if s.split('.').all(label_ok) {
        Ok(())
    } else {
        Err(
            "prefix part must be a lowercase RFC 1123 subdomain: lower-case alphanumeric \
             characters, '-' or '.', starting and ending with an alphanumeric character",
        )
    }
}

/// `([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]`
fn is_name(s: &str) -> bool {
    let b = s.as_bytes();
    b.first().is_some_and(u8::is_ascii_alphanumeric)
        && b.last().is_some_and(u8::is_ascii_alphanumeric)
        && b.iter()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys() {
        for good in [
            "a",
            "A",
            "1foo",
            "1234",
            "app.kubernetes.io/name",
            "this-is-a-dns.domain.com/key-with-dash",
            "0.1.2.domain/99",
            "k8s.io/initial-events-end",
            "a_b.c-d",
            &"a".repeat(63),
            &format!("{}/x", "a".repeat(253)),
        ] {
            assert_eq!(validate_label_key(good), Ok(()), "{good}");
        }
        for (bad, reason) in [
            ("", "name part must be non-empty"),
            ("a/", "name part must be non-empty"),
            ("/a", "prefix part must be non-empty"),
            ("a/b/c", "a qualified name must have at most one '/'"),
            ("-a", "name part must consist"),
            ("a-", "name part must consist"),
            ("a b", "name part must consist"),
            ("ünïcode", "name part must consist"),
            (
                "Upper.Case/a",
                "prefix part must be a lowercase RFC 1123 subdomain",
            ),
            (
                "a..b/c",
                "prefix part must be a lowercase RFC 1123 subdomain",
            ),
            (
                "-a.b/c",
                "prefix part must be a lowercase RFC 1123 subdomain",
            ),
        ] {
            let err = validate_label_key(bad).unwrap_err();
            assert!(err.starts_with(reason), "{bad}: {err}");
        }
        assert_eq!(
            validate_label_key(&"a".repeat(64)),
            Err("name part must be no more than 63 characters")
        );
        assert_eq!(
            validate_label_key(&"a".repeat(254)),
            Err("name part must be no more than 63 characters")
        );
        assert_eq!(
            validate_label_key(&format!("{}/x", "a".repeat(254))),
            Err("prefix part must be no more than 253 characters")
        );
    }

    #[test]
    fn values() {
        for good in [
            "",
            "a",
            "10.10.100.1",
            "tick.tack.clock",
            "A_b-C.9",
            &"v".repeat(63),
        ] {
            assert_eq!(validate_label_value(good), Ok(()), "{good}");
        }
        assert_eq!(
            validate_label_value(&"v".repeat(64)),
            Err("must be no more than 63 characters")
        );
        for bad in ["-a", "a.", "a/b", "a b", "é"] {
            assert_eq!(validate_label_value(bad), Err(VALUE_CHARS), "{bad}");
        }
    }
}
