//! What the GEO commands share: coordinate, distance and unit arguments
//! read as Redis reads them, and distances and coordinates written as
//! Redis writes them.

use bytes::Bytes;
use keel_resp::{Protocol, Writer};

use super::zset::parse_score;
use super::{errors, is, Error};

/// Reads a number as Redis's `getDoubleFromObject` (glibc's `strtod`):
/// a decimal or `inf`, as [`parse_score`] reads it, or a hexadecimal
/// float (`0x1.8p3`); `None` for anything else.
pub fn parse_double(arg: &[u8]) -> Option<f64> {
    let (negative, digits) = match arg.first() {
        Some(b'-') => (true, &arg[1..]),
        Some(b'+') => (false, &arg[1..]),
        _ => (false, arg),
    };
    match digits.get(..2) {
        Some(prefix) if prefix.eq_ignore_ascii_case(b"0x") => {
            parse_hex(&digits[2..]).map(|v| if negative { -v } else { v })
        }
        _ => parse_score(arg).ok(),
    }
}

/// The value of hexadecimal digits with an optional point and an optional
/// binary exponent (`p` and a decimal), correctly rounded; `None` if it is
/// malformed, overflows, or underflows to zero.
fn parse_hex(text: &[u8]) -> Option<f64> {
    let (mantissa, exponent) = match text.iter().position(|b| matches!(b, b'p' | b'P')) {
        Some(at) => (&text[..at], Some(&text[at + 1..])),
        None => (text, None),
    };
    let exponent: i64 = match exponent {
        None => 0,
        Some(e) => {
            let digits = e.strip_prefix(b"-").or(e.strip_prefix(b"+")).unwrap_or(e);
            if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
                return None;
            }
            std::str::from_utf8(e)
                .ok()?
                .parse::<i64>()
                .unwrap_or(if e[0] == b'-' {
                    i64::MIN / 2
                } else {
                    i64::MAX / 2
                })
        }
    };
    let (whole, fraction) = match mantissa.iter().position(|&b| b == b'.') {
        Some(at) => (&mantissa[..at], &mantissa[at + 1..]),
        None => (mantissa, &mantissa[..0]),
    };
    if whole.is_empty() && fraction.is_empty() {
        return None;
    }
    // Up to 60 significant bits kept exactly, the rest folded into a
    // sticky bit, which is enough to round to 53 correctly.
    let (mut significand, mut scale, mut sticky) = (0u64, exponent, false);
    let mut seen_nonzero = false;
    for (i, &b) in whole.iter().chain(fraction).enumerate() {
        let digit = u64::from((b as char).to_digit(16)?);
        let in_fraction = i >= whole.len();
        seen_nonzero |= digit != 0;
        if significand >> 56 == 0 {
            significand = significand << 4 | digit;
            if in_fraction {
                scale = scale.saturating_sub(4);
            }
        } else {
            sticky |= digit != 0;
            if !in_fraction {
                scale = scale.saturating_add(4);
            }
        }
    }
    if !seen_nonzero {
        return Some(0.0);
    }
    let value = round_to_double(significand, sticky, scale);
    (value.is_finite() && value != 0.0).then_some(value)
}

/// `(significand + sticky) × 2^scale` rounded to the nearest double, ties
/// to even (the sticky bit is a nonzero tail below the significand).
fn round_to_double(significand: u64, sticky: bool, scale: i64) -> f64 {
    let excess = (64 - significand.leading_zeros()).saturating_sub(53);
    let (mut kept, mut scale) = (significand >> excess, scale + i64::from(excess));
    if excess > 0 {
        let dropped = significand & ((1 << excess) - 1);
        let half = 1 << (excess - 1);
        if dropped > half || (dropped == half && (sticky || kept & 1 == 1)) {
            kept += 1;
            if kept >> 53 != 0 {
                kept >>= 1;
                scale += 1;
            }
        }
    }
    let scale = scale.clamp(-2000, 2000) as i32;
    // Two steps so that 2^scale itself never overflows or underflows.
    (kept as f64) * 2f64.powi(scale / 2) * 2f64.powi(scale - scale / 2)
}

/// Reads `longitude latitude` from the first two of `args`, with Redis's
/// errors: not a number, or outside the limits a geohash can encode.
pub fn parse_point(args: &[Bytes]) -> Result<(f64, f64), Error> {
    let number = |arg: &Bytes| parse_double(arg).ok_or(Error::from(errors::NOT_FLOAT));
    let (longitude, latitude) = (number(&args[0])?, number(&args[1])?);
    if !keel_store::geohash::is_valid(longitude, latitude) {
        return Err(
            format!("ERR invalid longitude,latitude pair {longitude:.6},{latitude:.6}").into(),
        );
    }
    Ok((longitude, latitude))
}

/// Meters per `unit` (m, km, ft or mi, in any case).
pub fn parse_unit(unit: &[u8]) -> Result<f64, Error> {
    [("m", 1.0), ("km", 1000.0), ("ft", 0.3048), ("mi", 1609.34)]
        .iter()
        .find(|(name, _)| is(unit, name))
        .map(|&(_, meters)| meters)
        .ok_or("ERR unsupported unit provided. please use M, KM, FT, MI".into())
}

/// Reads a non-negative length, `what` naming it in the error Redis gives
/// when it is not a number ("radius", "width", "height").
pub fn parse_length(arg: &[u8], what: &str) -> Result<f64, Error> {
    parse_double(arg).ok_or_else(|| Error::from(format!("ERR need numeric {what}")))
}

/// Writes a distance as Redis does: a bulk string with four decimals.
pub fn write_distance(w: &mut Writer, distance: f64) {
    w.bulk(c_fixed(distance, 4).as_bytes());
}

/// `x` as C's `printf("%.*f")` prints it, NaN included.
fn c_fixed(x: f64, decimals: usize) -> String {
    if x.is_nan() {
        return if x.is_sign_negative() { "-nan" } else { "nan" }.into();
    }
    format!("{x:.decimals$}")
}

/// Writes a coordinate as Redis's `addReplyHumanLongDouble` does: 17
/// decimals with trailing zeros (and a trailing point) trimmed, a bulk
/// string in RESP2 and a double in RESP3.
pub fn write_coordinate(w: &mut Writer, x: f64) {
    let fixed = c_fixed(x, 17);
    let trimmed = fixed.trim_end_matches('0').trim_end_matches('.');
    let text = if trimmed == "-0" { "0" } else { trimmed };
    match w.protocol() {
        Protocol::Resp2 => w.bulk(text.as_bytes()),
        Protocol::Resp3 => w.raw(format!(",{text}\r\n").as_bytes()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doubles_parse_as_strtod() {
        assert_eq!(parse_double(b"0x10"), Some(16.0));
        assert_eq!(parse_double(b"-0x1.8p1"), Some(-3.0));
        assert_eq!(parse_double(b"0x.8"), Some(0.5));
        assert_eq!(parse_double(b"0x1p-2"), Some(0.25));
        assert_eq!(parse_double(b"0x0"), Some(0.0));
        assert_eq!(
            parse_double(b"0x1fffffffffffffff"),
            Some(2_305_843_009_213_693_952.0)
        );
        assert_eq!(parse_double(b"1.5"), Some(1.5));
        assert_eq!(parse_double(b"inf"), Some(f64::INFINITY));
        for bad in [
            &b"0x"[..],
            b"0xg",
            b"0x1p",
            b"0x1p+",
            b"nan",
            b" 1",
            b"",
            b"0x1p99999",
        ] {
            assert_eq!(parse_double(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn numbers_print_as_printf() {
        assert_eq!(c_fixed(0.00005, 4), "0.0001");
        assert_eq!(c_fixed(1.03125, 4), "1.0312");
        assert_eq!(c_fixed(f64::NAN, 4), "nan");
        assert_eq!(c_fixed(f64::INFINITY, 6), "inf");
    }
}
