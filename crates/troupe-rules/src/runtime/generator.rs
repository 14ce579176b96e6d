//! The seeded choice generator (Format 18.3): `choose(n, label)`.

use crate::cel::dice::{fnv1a64, SplitMix64};

/// Picks an index in `0..n` from `label`: FNV-1a 64 of the label's bytes
/// seeds SplitMix64, and the first output `v` gives `(v × n) >> 64`.
/// `n` = 0 gives 0.
pub fn choose(n: usize, label: &str) -> usize {
    if n == 0 {
        return 0;
    }
    let v = SplitMix64(fnv1a64(label.as_bytes())).next_u64();
    ((u128::from(v) * n as u128) >> 64) as usize
}

/// The label of a rule's reply (Format 18.3): `reply:<seed>:<message id>`.
pub fn reply_label(seed: u64, message: &str) -> String {
    format!("reply:{seed}:{message}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn worked_example_of_18_3() {
        // Format 18.3: `reply:0:m3` hashes to 0x2f93af574caf52f9, whose first
        // next() is 0xafea006bbc4139e7; × 3 >> 64 = 2.
        assert_eq!(fnv1a64(b"reply:0:m3"), 0x2f93_af57_4caf_52f9);
        assert_eq!(
            SplitMix64(0x2f93_af57_4caf_52f9).next_u64(),
            0xafea_006b_bc41_39e7
        );
        assert_eq!(choose(3, "reply:0:m3"), 2);
        assert_eq!(choose(3, &reply_label(42, "m3")), 0);
    }
}
