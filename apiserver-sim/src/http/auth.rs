//! Bearer-token authentication: with a token configured, a request must carry
//! `Authorization: Bearer <token>` (else kube-apiserver's 401 `Unauthorized`, answered by
//! the handler); the comparison takes a time that depends on the lengths only.

use http::{Request, header};

use crate::state::State;

/// Whether `req` may be served: no token configured, or the request's bearer token is it.
pub fn authorized<B>(state: &State, req: &Request<B>) -> bool {
    let Some(token) = &state.config.token else {
        return true;
    };
    req.headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .is_some_and(|t| same_secret(t.trim().as_bytes(), token.as_bytes()))
}

/// Whether two secrets are equal, in a time that depends on their lengths only, not on where
/// they first differ (so a client cannot find the token byte by byte by timing refusals).
fn same_secret(given: &[u8], expected: &[u8]) -> bool {
    if given.len() != expected.len() {
        return false;
    }
    let differences = given
        .iter()
        .zip(expected)
        .fold(0u8, |acc, (a, b)| acc | (a ^ b));
    // black_box: the comparison is of the whole fold, which the optimizer may not cut short.
    std::hint::black_box(differences) == 0
}

#[cfg(test)]
mod secret_tests {
    use super::same_secret;

    #[test]
    fn secrets_compare_equal_only_when_identical() {
        assert!(same_secret(b"s3cret-token", b"s3cret-token"));
        assert!(!same_secret(b"s3cret-tokeN", b"s3cret-token"));
        assert!(!same_secret(b"S3cret-token", b"s3cret-token"));
        assert!(!same_secret(b"s3cret", b"s3cret-token"));
        assert!(!same_secret(b"", b"s3cret-token"));
        assert!(same_secret(b"", b""));
    }
}
