//! `roll()` (Format 11.5): dice notation `NdM`, `NdM+K`, `NdM-K`
//! (1 ≤ N ≤ 100, 1 ≤ M ≤ 1000) and the seeded generator: SplitMix64 seeded
//! with FNV-1a-64 of `"<session seed>:<message id>:<call index>"`; each die is
//! `1 + ((next() as u128 * M) >> 64)`.

use super::error::{EvalError, EvalErrorKind};

/// Parsed dice notation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Dice {
    /// Number of dice, 1..=100.
    pub count: u32,
    /// Sides per die, 1..=1000.
    pub sides: u32,
    /// Constant added (may be negative).
    pub modifier: i64,
}

/// Parses `NdM`, `NdM+K` or `NdM-K` (ASCII digits only, no spaces) within
/// the bounds of Format 11.5; anything else is a runtime error.
pub fn parse_notation(s: &str) -> Result<Dice, EvalError> {
    let bad = || {
        EvalError::new(
            EvalErrorKind::Roll,
            format!("bad dice notation `{s}` (expected NdM, NdM+K or NdM-K)"),
        )
    };
    let digits = |t: &str| -> Option<i64> {
        if t.is_empty() || t.len() > 18 || !t.bytes().all(|b| b.is_ascii_digit()) {
            None
        } else {
            t.parse().ok()
        }
    };
    let (n, rest) = s.split_once('d').ok_or_else(bad)?;
    let (m, k) = match rest.find(['+', '-']) {
        Some(i) => {
            let k = digits(&rest[i + 1..]).ok_or_else(bad)?;
            (&rest[..i], if rest.as_bytes()[i] == b'-' { -k } else { k })
        }
        None => (rest, 0),
    };
    let n = digits(n).ok_or_else(bad)?;
    let m = digits(m).ok_or_else(bad)?;
    // Format 11.5: 1 ≤ N ≤ 100, 1 ≤ M ≤ 1000, 0 ≤ K ≤ 1,000,000.
    if !(1..=100).contains(&n) || !(1..=1000).contains(&m) || k.abs() > 1_000_000 {
        return Err(bad());
    }
    Ok(Dice {
        count: n as u32,
        sides: m as u32,
        modifier: k,
    })
}

/// FNV-1a, 64 bits.
pub fn fnv1a64(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// The SplitMix64 generator.
#[derive(Debug, Clone)]
pub struct SplitMix64(pub u64);

impl SplitMix64 {
    /// The next 64-bit output.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

/// Rolls `notation` for call `call_index` of message `message_id` in a
/// session with `session_seed` (Format 11.5).
pub fn roll(
    notation: &str,
    session_seed: u64,
    message_id: &str,
    call_index: u64,
) -> Result<i64, EvalError> {
    let dice = parse_notation(notation)?;
    let seed = fnv1a64(format!("{session_seed}:{message_id}:{call_index}").as_bytes());
    let mut g = SplitMix64(seed);
    let mut total = dice.modifier;
    for _ in 0..dice.count {
        let die = 1 + ((u128::from(g.next_u64()) * u128::from(dice.sides)) >> 64) as i64;
        total = total.saturating_add(die);
    }
    Ok(total)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notation() {
        assert_eq!(
            parse_notation("2d6+3").unwrap(),
            Dice {
                count: 2,
                sides: 6,
                modifier: 3
            }
        );
        assert_eq!(parse_notation("1d20-1").unwrap().modifier, -1);
        assert_eq!(parse_notation("1d6+1000000").unwrap().modifier, 1_000_000);
        for bad in [
            "",
            "d6",
            "0d6",
            "101d6",
            "1d0",
            "1d1001",
            "2d6+",
            "2 d6",
            "1d6+-1",
            "-1d6",
            "1d6x",
            "1d6+1000001",
            "1d6-1000001",
        ] {
            assert!(parse_notation(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn known_vectors() {
        // FNV-1a-64 of "" and "a" (published test vectors).
        assert_eq!(fnv1a64(b""), 0xcbf29ce484222325);
        assert_eq!(fnv1a64(b"a"), 0xaf63dc4c8601ec8c);
        // SplitMix64 seeded with 0: first output (published reference value).
        assert_eq!(SplitMix64(0).next_u64(), 0xe220a8397b1dcdaf);
    }

    #[test]
    fn one_sided_dice_are_exact() {
        assert_eq!(roll("5d1+2", 7, "m1", 0).unwrap(), 7);
        let r = roll("3d6", 1, "m", 0).unwrap();
        assert!((3..=18).contains(&r));
        assert_eq!(r, roll("3d6", 1, "m", 0).unwrap());
    }
}
