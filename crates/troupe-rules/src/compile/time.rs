//! RFC 3339 date-times as the conditions read them (Format 7, 11.3):
//! seconds since the Unix epoch (fractions truncated), and the hour and
//! weekday in the time's own offset.

/// A message time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Time {
    /// Whole seconds since 1970-01-01T00:00:00Z (fraction truncated).
    pub unix: i64,
    /// The hour 0..=23 in the time's own offset.
    pub hour: u8,
    /// The day of the week in the time's own offset, 0 = Sunday.
    pub weekday: u8,
}

fn num(s: &[u8]) -> Option<i64> {
    if s.is_empty() || !s.iter().all(u8::is_ascii_digit) {
        return None;
    }
    Some(s.iter().fold(0i64, |a, d| a * 10 + i64::from(d - b'0')))
}

/// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's
/// `days_from_civil`).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = if y >= 0 { y } else { y - 399 } / 400;
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146097 + doe - 719468
}

/// Parses `YYYY-MM-DDTHH:MM:SS[.frac](Z|±HH:MM)`; `None` for anything else.
pub fn parse_time(s: &str) -> Option<Time> {
    let b = s.as_bytes();
    if b.len() < 20 || b[4] != b'-' || b[7] != b'-' || !matches!(b[10], b'T' | b't') {
        return None;
    }
    if b[13] != b':' || b[16] != b':' {
        return None;
    }
    let (y, mo, d) = (num(&b[0..4])?, num(&b[5..7])?, num(&b[8..10])?);
    let (h, mi, se) = (num(&b[11..13])?, num(&b[14..16])?, num(&b[17..19])?);
    if !(1..=12).contains(&mo) || !(1..=31).contains(&d) || h > 23 || mi > 59 || se > 60 {
        return None;
    }
    let mut rest = &b[19..];
    if rest.first() == Some(&b'.') {
        let n = rest[1..].iter().take_while(|c| c.is_ascii_digit()).count();
        if n == 0 {
            return None;
        }
        rest = &rest[1 + n..];
    }
    let offset = match rest {
        [b'Z' | b'z'] => 0,
        [sign @ (b'+' | b'-'), h1, h2, b':', m1, m2] => {
            let v = num(&[*h1, *h2])? * 3600 + num(&[*m1, *m2])? * 60;
            if *sign == b'-' {
                -v
            } else {
                v
            }
        }
        _ => return None,
    };
    let days = days_from_civil(y, mo, d);
    let local = days * 86400 + h * 3600 + mi * 60 + se;
    Some(Time {
        unix: local - offset,
        hour: h as u8,
        // 1970-01-01 was a Thursday (4).
        weekday: (days + 4).rem_euclid(7) as u8,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_format_11_3_example() {
        let r = parse_time("2026-05-01T09:00:00+02:00").unwrap();
        let a = parse_time("2026-05-01T09:01:30.900+02:00").unwrap();
        assert_eq!(a.unix - r.unix, 90);
        assert_eq!((a.hour, a.weekday), (9, 5)); // a Friday
        assert_eq!(parse_time("1970-01-01T00:00:00Z").unwrap().unix, 0);
        assert_eq!(parse_time("1970-01-01T01:00:00+01:00").unwrap().unix, 0);
        assert!(parse_time("2026-05-01 09:00:00Z").is_none());
    }
}
