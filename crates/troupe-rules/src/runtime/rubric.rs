//! Rubric scoring (Format 19.6): graded criteria evaluated as doubles,
//! clamped to [0, 1], NaN and errors counting 0; the weighted mean in
//! criterion order; every score rounded to 4 places half away from zero.

use indexmap::IndexMap;
use rust_decimal::prelude::{FromPrimitive, ToPrimitive};
use rust_decimal::{Decimal, RoundingStrategy};

use super::compiled::CriterionIr;
use super::turn::Score;
use crate::cel::{NoHost, Value};
use crate::engine::{Observer, Point, Site, State};

/// Rounds to 4 decimal places, half away from zero, from the double's
/// exact value.
pub fn round4(x: f64) -> f64 {
    // A whole number (the common score) is its own rounding.
    if x != 0.0 && x.fract() == 0.0 && x.abs() <= 9_007_199_254_740_992.0 {
        return x;
    }
    match Decimal::from_f64_retain(x) {
        Some(d) => d
            .round_dp_with_strategy(4, RoundingStrategy::MidpointAwayFromZero)
            .to_f64()
            .unwrap_or(0.0),
        None => Decimal::from_f64(x).and_then(|d| d.to_f64()).unwrap_or(0.0),
    }
}

/// Scores `criteria` at `state` (char `""`, `self` the scenario), reporting
/// each score's branches to `obs` when there is one.
pub fn score(
    point: &Point<'_>,
    criteria: &[CriterionIr],
    state: &State,
    mut obs: Option<&mut (dyn Observer + '_)>,
) -> Score {
    let mut out = IndexMap::new();
    let (mut num, mut den) = (0.0f64, 0.0f64);
    let mut graded = false;
    for c in criteria {
        let Some(p) = &c.score else {
            out.insert(c.id.to_string(), None);
            continue;
        };
        let site = Site::Score(&c.id);
        let v = match point.eval_observed(p, 0, state, &mut NoHost, site, obs.as_deref_mut()) {
            Ok(Value::Double(d)) if !d.is_nan() => d.clamp(0.0, 1.0),
            Ok(Value::Int(i)) => (i as f64).clamp(0.0, 1.0),
            _ => 0.0,
        };
        graded = true;
        num += c.weight * v;
        den += c.weight;
        out.insert(c.id.to_string(), Some(round4(v)));
    }
    Score {
        criteria: out,
        total: (graded && den > 0.0).then(|| round4(num / den)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounding_half_away_from_zero_from_the_exact_double() {
        assert_eq!(round4(0.8), 0.8);
        assert_eq!(round4(2.0 / 3.0), 0.6667);
        // 0.00005 as a double is slightly above 5e-5: rounds up.
        assert_eq!(round4(0.00005), 0.0001);
        assert_eq!(round4(1.0), 1.0);
    }
}
