//! `--shard K/N`: a deterministic share of the backlog with no coordinator. A task belongs to the shard its
//! id hashes to (the first 8 bytes of its sha256, big-endian, mod N), so adding a task never moves another
//! and N machines with the same arguments split the work exactly.

use std::fmt;
use std::str::FromStr;

use sha2::{Digest, Sha256};

/// The K-th of N shards (K is 1-based, as the user writes it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shard {
    pub k: u64,
    pub n: u64,
}

impl Shard {
    /// Whether the task `id` is in this shard.
    pub fn contains(&self, id: &str) -> bool {
        stable_hash(id) % self.n == self.k - 1
    }
}

/// The first 8 bytes of the sha256 of `id`, big-endian: the same on every machine and every build (std's
/// `DefaultHasher` promises neither).
pub fn stable_hash(id: &str) -> u64 {
    let digest = Sha256::digest(id.as_bytes());
    let mut first = [0u8; 8];
    first.copy_from_slice(&digest[..8]);
    u64::from_be_bytes(first)
}

impl FromStr for Shard {
    type Err = String;

    fn from_str(text: &str) -> Result<Shard, String> {
        let bad = || format!("bad --shard `{text}`: give it as K/N with 1 <= K <= N, e.g. 2/4");
        let (k, n) = text.split_once('/').ok_or_else(bad)?;
        let k: u64 = k.trim().parse().map_err(|_| bad())?;
        let n: u64 = n.trim().parse().map_err(|_| bad())?;
        if n == 0 || k == 0 || k > n {
            return Err(bad());
        }
        Ok(Shard { k, n })
    }
}

impl fmt::Display for Shard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.k, self.n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shards_parse_from_k_over_n_and_refuse_anything_else() {
        assert_eq!("2/4".parse::<Shard>(), Ok(Shard { k: 2, n: 4 }));
        assert_eq!("1/1".parse::<Shard>(), Ok(Shard { k: 1, n: 1 }));
        for bad in ["0/4", "5/4", "1/0", "4", "a/b", "", "1/2/3", "-1/2"] {
            let err = bad.parse::<Shard>().unwrap_err();
            assert!(err.starts_with("bad --shard"), "{bad}: {err}");
        }
    }

    #[test]
    fn the_hash_is_the_big_endian_head_of_sha256() {
        // sha256("abc") = ba7816bf 8f01cfea ...
        assert_eq!(stable_hash("abc"), 0xba78_16bf_8f01_cfea);
    }

    #[test]
    fn every_task_is_in_exactly_one_shard_for_every_n() {
        let ids: Vec<String> = (0..500)
            .map(|i| format!("task-{i}"))
            .chain((1..200).map(|i| format!("acme/calc#{i}")))
            .collect();
        for n in 1..=12 {
            let mut sizes = vec![0usize; n as usize];
            for id in &ids {
                let homes: Vec<u64> = (1..=n).filter(|&k| Shard { k, n }.contains(id)).collect();
                assert_eq!(homes.len(), 1, "{id} with n={n}: {homes:?}");
                sizes[(homes[0] - 1) as usize] += 1;
            }
            assert_eq!(sizes.iter().sum::<usize>(), ids.len());
            // A share each: no shard is empty with this many ids.
            assert!(sizes.iter().all(|&s| s > 0), "n={n}: {sizes:?}");
        }
    }

    #[test]
    fn adding_a_task_never_moves_another() {
        let shard_of = |id: &str, n: u64| (1..=n).find(|&k| Shard { k, n }.contains(id));
        let before: Vec<_> = (0..100).map(|i| shard_of(&format!("t{i}"), 5)).collect();
        let after: Vec<_> = (0..100).map(|i| shard_of(&format!("t{i}"), 5)).collect();
        assert_eq!(before, after);
    }
}
