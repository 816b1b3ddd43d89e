//! What Kubernetes cannot express (or the derive cannot see) is a compile error saying why:
//! one case per refusal in `tests/ui/`, with the expected message beside it.
//! `TRYBUILD=overwrite cargo test -p clientgo-derive --test compile_fail` rewrites them.

#[test]
fn refusals_are_compile_errors() {
    trybuild::TestCases::new().compile_fail("tests/ui/*.rs");
}
