//! C's `strtod` as glibc implements it, for commands whose Redis code reads
//! numbers with it (SORT's scores): how much of a string it takes, the
//! value, and whether it reports ERANGE.
//!
//! What it accepts, in order: leading white space (`isspace`), a sign, then
//! "inf" or "infinity", "nan" (with an optional parenthesised suffix), a
//! hexadecimal float ("0x1.8p3": hex digits, a point, a binary exponent),
//! or a decimal ("1.5e-3", ".5", "5."). What follows is left unread and
//! callers decide whether a tail is an error; a string with no number in it
//! reads nothing (and 0). Decimal digits are converted with Rust's float
//! parser, which rounds correctly as glibc does.
//!
//! ERANGE: glibc reports it when the result overflows to infinity, and when
//! it underflows: zero from non-zero digits, or a subnormal that is not
//! exact. Exactness of a decimal subnormal is not worked out here: every
//! decimal subnormal is reported, which misses only decimal strings of
//! hundreds of digits that spell a subnormal exactly.

/// What [`strtod`] read.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Parsed {
    /// The number (0 when nothing was read).
    pub value: f64,
    /// How many bytes it took; 0 when it found no number.
    pub consumed: usize,
    /// True when glibc would set `errno` to ERANGE.
    pub out_of_range: bool,
}

const NOTHING: Parsed = Parsed {
    value: 0.0,
    consumed: 0,
    out_of_range: false,
};

/// C's `isspace` in the C locale.
fn is_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r')
}

fn starts_with_ignoring_case(text: &[u8], prefix: &[u8]) -> bool {
    text.len() >= prefix.len() && text[..prefix.len()].eq_ignore_ascii_case(prefix)
}

/// Reads a number from the start of `text` as glibc's `strtod` does.
pub fn strtod(text: &[u8]) -> Parsed {
    let mut at = text.iter().take_while(|&&b| is_space(b)).count();
    let negative = match text.get(at) {
        Some(b'-') => {
            at += 1;
            true
        }
        Some(b'+') => {
            at += 1;
            false
        }
        _ => false,
    };
    let rest = &text[at..];
    let special = |value: f64, len: usize| Parsed {
        value: if negative { -value } else { value },
        consumed: at + len,
        out_of_range: false,
    };
    if starts_with_ignoring_case(rest, b"infinity") {
        return special(f64::INFINITY, 8);
    }
    if starts_with_ignoring_case(rest, b"inf") {
        return special(f64::INFINITY, 3);
    }
    if starts_with_ignoring_case(rest, b"nan") {
        let suffix = rest[3..]
            .strip_prefix(b"(")
            .and_then(|s| {
                let inside = s
                    .iter()
                    .take_while(|b| b.is_ascii_alphanumeric() || **b == b'_');
                let n = inside.count();
                (s.get(n) == Some(&b')')).then_some(n + 2)
            })
            .unwrap_or(0);
        return special(f64::NAN, 3 + suffix);
    }
    let parsed = match hex(rest) {
        Some(parsed) => parsed,
        None => decimal(rest),
    };
    if parsed.consumed == 0 {
        return NOTHING;
    }
    Parsed {
        value: if negative {
            -parsed.value
        } else {
            parsed.value
        },
        consumed: at + parsed.consumed,
        out_of_range: parsed.out_of_range,
    }
}

/// Length of the run of bytes at the start of `text` that `keep` accepts.
fn run_of(text: &[u8], keep: impl Fn(u8) -> bool) -> usize {
    text.iter().take_while(|&&b| keep(b)).count()
}

/// An exponent after a mantissa: `marker`, an optional sign, digits.
/// Its length (0 when there is none) and value, saturated.
fn exponent(text: &[u8], marker: u8) -> (usize, i64) {
    if text.first().map(u8::to_ascii_lowercase) != Some(marker) {
        return (0, 0);
    }
    let sign_len = matches!(text.get(1), Some(b'+' | b'-')) as usize;
    let digits = run_of(&text[1 + sign_len..], |b| b.is_ascii_digit());
    if digits == 0 {
        return (0, 0);
    }
    let value = text[1 + sign_len..1 + sign_len + digits]
        .iter()
        .fold(0i64, |n, d| {
            n.saturating_mul(10).saturating_add((d - b'0') as i64)
        });
    let value = if text[1] == b'-' { -value } else { value };
    (1 + sign_len + digits, value)
}

fn decimal(text: &[u8]) -> Parsed {
    let whole = run_of(text, |b| b.is_ascii_digit());
    let mut len = whole;
    let mut fraction = 0;
    if text.get(len) == Some(&b'.') {
        fraction = run_of(&text[len + 1..], |b| b.is_ascii_digit());
        len += 1 + fraction;
    }
    if whole + fraction == 0 {
        return NOTHING;
    }
    len += exponent(&text[len..], b'e').0;
    let number = std::str::from_utf8(&text[..len]).expect("ASCII digits");
    let value: f64 = number.parse().unwrap_or(0.0);
    let nonzero_digits = text[..whole + fraction + (fraction > 0) as usize]
        .iter()
        .any(|b| (b'1'..=b'9').contains(b));
    Parsed {
        value,
        consumed: len,
        out_of_range: value.is_infinite() || (nonzero_digits && value.abs() < f64::MIN_POSITIVE),
    }
}

fn hex(text: &[u8]) -> Option<Parsed> {
    if !starts_with_ignoring_case(text, b"0x") {
        return None;
    }
    let digits = &text[2..];
    let whole = run_of(digits, |b| b.is_ascii_hexdigit());
    let fraction = match digits.get(whole) {
        Some(b'.') => run_of(&digits[whole + 1..], |b| b.is_ascii_hexdigit()),
        _ => 0,
    };
    if whole + fraction == 0 {
        return None;
    }
    // Up to 16 significant hex digits; any beyond only shift the scale,
    // and a non-zero one among them makes the result inexact.
    let (mut mantissa, mut scale, mut dropped) = (0u64, 0i64, false);
    let fraction_digits = digits.get(whole + 1..whole + 1 + fraction).unwrap_or(&[]);
    for (i, &d) in digits[..whole].iter().chain(fraction_digits).enumerate() {
        let d = (d as char).to_digit(16).expect("hex digit") as u64;
        if mantissa >> 60 == 0 {
            mantissa = mantissa << 4 | d;
        } else {
            scale += 4;
            dropped |= d != 0;
        }
        if i >= whole {
            scale -= 4;
        }
    }
    let point = digits.get(whole) == Some(&b'.');
    let mut len = 2 + whole + if point { 1 + fraction } else { 0 };
    let (exp_len, exp) = exponent(&text[len..], b'p');
    len += exp_len;
    let power = exp.saturating_add(scale).clamp(-5000, 5000) as i32;
    // In two steps, so that neither factor overflows or underflows alone.
    let value = mantissa as f64 * 2f64.powi(power.max(-1000)) * 2f64.powi((power + 1000).min(0));
    let exact = mantissa == 0 || {
        let significant_bits = 64 - mantissa.leading_zeros() - mantissa.trailing_zeros();
        let lowest_bit = mantissa.trailing_zeros() as i64 + power as i64;
        !dropped && significant_bits <= 53 && lowest_bit >= -1074
    };
    let underflow = value.abs() < f64::MIN_POSITIVE && !exact;
    Some(Parsed {
        value,
        consumed: len,
        out_of_range: value.is_infinite() || underflow,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &str) -> (f64, usize, bool) {
        let p = strtod(text.as_bytes());
        (p.value, p.consumed, p.out_of_range)
    }

    #[test]
    fn reads_what_glibc_reads() {
        assert_eq!(read("  5"), (5.0, 3, false));
        assert_eq!(read("1.5e3x"), (1500.0, 5, false));
        assert_eq!(read(".5"), (0.5, 2, false));
        assert_eq!(read("5."), (5.0, 2, false));
        assert_eq!(read("1e"), (1.0, 1, false));
        assert_eq!(read("-inf"), (f64::NEG_INFINITY, 4, false));
        assert_eq!(read("Infinity"), (f64::INFINITY, 8, false));
        assert_eq!(read("0x1.8p3"), (12.0, 7, false));
        assert_eq!(read("0x10"), (16.0, 4, false));
        assert_eq!(read("0x"), (0.0, 1, false));
        assert_eq!(read(""), (0.0, 0, false));
        assert_eq!(read("."), (0.0, 0, false));
        assert_eq!(read(" "), (0.0, 0, false));
        assert_eq!(read("-"), (0.0, 0, false));
        assert!(strtod(b"nan").value.is_nan());
        assert_eq!(strtod(b"nan(123)x").consumed, 8);
    }

    #[test]
    fn reports_erange_as_glibc() {
        assert!(read("1e400").2);
        assert!(read("1e-400").2);
        assert!(read("1e-310").2);
        assert!(!read("2.2250738585072014e-308").2);
        assert!(!read("0e-400").2);
        assert!(!read("0x1p-1074").2);
        assert!(read("0x1p-1075").2);
        assert!(read("0x1p1024").2);
    }
}
