//! The proptest configuration shared by the property tests of the workspace: this crate's
//! `properties_*.rs`, and (by `#[path]`) the REST client's and the watch framer's.

use proptest::test_runner::{Config as ProptestConfig, RngSeed};

/// The default seed: every run generates the same cases unless `PROPTEST_RNG_SEED` is set.
const SEED: u64 = 0x6b75_6265_2d72_7321;

/// A seeded configuration running `cases` cases per property. `PROPTEST_RNG_SEED` and
/// `PROPTEST_CASES` override the seed and the count; the seed is printed, so that a failure
/// found with another seed can be replayed.
pub fn config(cases: u32) -> ProptestConfig {
    let seed = std::env::var("PROPTEST_RNG_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(SEED);
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(cases);
    eprintln!("proptest seed {seed}, {cases} cases (PROPTEST_RNG_SEED, PROPTEST_CASES override)");
    ProptestConfig {
        cases,
        rng_seed: RngSeed::Fixed(seed),
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}
