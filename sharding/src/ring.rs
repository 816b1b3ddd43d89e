//! Which shard owns a partition key: rendezvous (highest random weight) hashing over the live
//! members.
//!
//! Every member scores every key with a hash of the pair; the key belongs to the member with the
//! highest score. Each member's score for a key does not depend on who else is in the ring, so
//! when a member joins it takes exactly the keys it now scores highest on (about 1/N of them,
//! from every other member alike) and nothing else moves; when a member leaves only its keys
//! move, spread over the rest. That is the bound the reference design (timebertt's
//! kubernetes-controller-sharding) gets from a consistent hash ring with virtual nodes; here
//! with no virtual nodes to tune and an even spread at any N, for O(N) work per key (N is the
//! number of replicas, a handful).
//!
//! The hash is fixed (FNV-1a over the two strings, then the SplitMix64 finisher), not Rust's
//! `DefaultHasher`, whose output may change between Rust releases: a sharder built by another
//! compiler must compute the same owners, or a sharder failover would move objects.
//!
//! The partition key is chosen per resource by the sharder (see [`Partition`]): an object's
//! own `namespace/name` by default; dependents follow their controller, so a Foo and the
//! Deployment it owns land on one shard.

/// What an object of a sharded resource is placed by.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Partition {
    /// By its own key (`namespace/name`): the primary resource a controller reconciles.
    Object,
    /// By its controlling owner of this kind: the object carries whatever shard its
    /// controller has (a Deployment follows the Foo that owns it).
    Controller {
        /// The owner's kind, e.g. `Foo`.
        kind: String,
    },
}

/// The live members, ready to place keys.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Ring {
    /// Members, each with its name's own hash, sorted by name.
    members: Vec<(String, u64)>,
}

impl Ring {
    /// A ring over `members` (duplicates collapse).
    pub fn new<I, S>(members: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let mut members: Vec<(String, u64)> = members
            .into_iter()
            .map(Into::into)
            .map(|m| {
                let hash = fnv1a(FNV_OFFSET, m.as_bytes());
                (m, hash)
            })
            .collect();
        members.sort();
        members.dedup_by(|a, b| a.0 == b.0);
        Ring { members }
    }

    /// The members, sorted.
    pub fn members(&self) -> impl Iterator<Item = &str> {
        self.members.iter().map(|(m, _)| m.as_str())
    }

    /// How many members.
    pub fn len(&self) -> usize {
        self.members.len()
    }

    /// No members: nothing can be placed.
    pub fn is_empty(&self) -> bool {
        self.members.is_empty()
    }

    /// Whether `member` is in the ring.
    pub fn contains(&self, member: &str) -> bool {
        self.members
            .binary_search_by(|(m, _)| m.as_str().cmp(member))
            .is_ok()
    }

    /// The member that owns `key`; `None` for an empty ring.
    pub fn owner(&self, key: &str) -> Option<&str> {
        let key_hash = fnv1a(FNV_OFFSET, key.as_bytes());
        self.members
            .iter()
            .max_by_key(|(member, member_hash)| (score(*member_hash, key_hash), member.as_str()))
            .map(|(member, _)| member.as_str())
    }
}

const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;

fn fnv1a(mut hash: u64, bytes: &[u8]) -> u64 {
    for &byte in bytes {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(FNV_PRIME);
    }
    hash
}

/// The member's weight for the key: the two hashes combined and mixed (SplitMix64's finisher),
/// so that every bit of both inputs reaches every bit of the score.
fn score(member: u64, key: u64) -> u64 {
    let mut z = member ^ key.rotate_left(32) ^ 0x9E37_79B9_7F4A_7C15;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn keys(n: usize) -> Vec<String> {
        (0..n).map(|i| format!("default/foo-{i}")).collect()
    }

    fn counts(ring: &Ring, keys: &[String]) -> HashMap<String, usize> {
        let mut counts = HashMap::new();
        for key in keys {
            *counts
                .entry(ring.owner(key).unwrap().to_owned())
                .or_default() += 1;
        }
        counts
    }

    #[test]
    fn an_empty_ring_places_nothing() {
        assert_eq!(Ring::default().owner("a/b"), None);
        assert!(Ring::new(Vec::<String>::new()).is_empty());
    }

    #[test]
    fn keys_spread_evenly() {
        let keys = keys(30_000);
        for n in [2usize, 3, 4, 7] {
            let ring = Ring::new((0..n).map(|i| format!("replica-{i}")));
            let counts = counts(&ring, &keys);
            assert_eq!(counts.len(), n);
            let fair = keys.len() / n;
            for (member, count) in counts {
                assert!(
                    count.abs_diff(fair) * 10 < fair,
                    "{member} holds {count} of {}, fair share {fair}",
                    keys.len()
                );
            }
        }
    }

    #[test]
    fn a_join_moves_only_to_the_newcomer_about_one_in_n() {
        let keys = keys(20_000);
        let before = Ring::new(["a", "b", "c"]);
        let after = Ring::new(["a", "b", "c", "d"]);
        let mut moved: usize = 0;
        for key in &keys {
            let (old, new) = (before.owner(key).unwrap(), after.owner(key).unwrap());
            if old != new {
                assert_eq!(new, "d", "{key} moved from {old} to {new}");
                moved += 1;
            }
        }
        let quarter = keys.len() / 4;
        assert!(moved.abs_diff(quarter) * 10 < quarter, "{moved} moved");
    }

    #[test]
    fn a_leave_moves_only_the_leavers_keys() {
        let keys = keys(20_000);
        let before = Ring::new(["a", "b", "c", "d"]);
        let after = Ring::new(["a", "b", "d"]);
        for key in &keys {
            let old = before.owner(key).unwrap();
            if old != "c" {
                assert_eq!(
                    after.owner(key),
                    Some(old),
                    "{key} moved off a member that stayed"
                );
            }
        }
    }

    #[test]
    fn owners_are_fixed_across_builds_and_orders() {
        let ring = Ring::new(["b", "a", "c", "a"]);
        assert_eq!(ring.len(), 3);
        assert_eq!(ring, Ring::new(["c", "b", "a"]));
        assert!(ring.contains("b") && !ring.contains("d"));
        // Pinned: a change of the hash would move objects on a sharder upgrade.
        let owners: Vec<&str> = ["default/web", "default/db", "prod/api", "prod/cache"]
            .iter()
            .map(|k| ring.owner(k).unwrap())
            .collect();
        assert_eq!(owners, PINNED);
    }

    const PINNED: [&str; 4] = ["c", "c", "c", "b"];
}
