//! Shared pieces of the clientgo-rs benchmarks: the seeded generator, process measurements and
//! the workloads of `bench-report`.
//!
//! The workloads are defined in the project's benchmark plan (IDs Q1, Q1p4, Q2, Q3, ...) with
//! exact parameters, so that their figures compare side by side with client-go's and kube-rs's
//! harnesses on the same machine. Each workload runs in a process of its own; `bench-report`
//! starts one child process per run and reports the median of the runs.

#![deny(missing_docs)]

pub mod decode;
pub mod informer;
pub mod pods;
pub mod process;
pub mod queue_debounce;
pub mod queue_priority;
pub mod sharding;
pub mod store;
pub mod workloads;
pub mod write;

/// splitmix64, the seeded generator the benchmark plan prescribes for random delays.
#[derive(Debug, Clone)]
pub struct SplitMix64(u64);

impl SplitMix64 {
    /// A generator with the given seed.
    pub fn new(seed: u64) -> Self {
        Self(seed)
    }

    /// The next value of the stream.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

/// The median of `values` (the mean of the middle two for an even count); `None` when empty.
pub fn median(values: &mut [f64]) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    values.sort_by(f64::total_cmp);
    let mid = values.len() / 2;
    Some(if values.len() % 2 == 1 {
        values[mid]
    } else {
        (values[mid - 1] + values[mid]) / 2.0
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splitmix64_matches_the_reference_stream() {
        // First outputs of the reference splitmix64 with seed 1.
        let mut rng = SplitMix64::new(1);
        assert_eq!(rng.next_u64(), 0x910A_2DEC_8902_5CC1);
        assert_eq!(rng.next_u64(), 0xBEEB_8DA1_658E_EC67);
    }

    #[test]
    fn median_of_odd_and_even_counts() {
        assert_eq!(median(&mut [3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&mut [4.0, 1.0, 3.0, 2.0]), Some(2.5));
        assert_eq!(median(&mut []), None);
    }
}
