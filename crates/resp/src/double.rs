/// Formats a double the way Redis 7.0 replies with one: `%.17g`, with `inf`
/// and `-inf` spelled out, so scores and RESP3 doubles match byte for byte.
pub fn format_double(d: f64) -> String {
    if d.is_infinite() {
        return if d > 0.0 { "inf".into() } else { "-inf".into() };
    }
    if d.is_nan() {
        return "nan".into();
    }
    if d == 0.0 {
        return if d.is_sign_negative() {
            "-0".into()
        } else {
            "0".into()
        };
    }
    const PRECISION: i32 = 17;
    // `{:e}` with 16 fractional digits gives the 17 significant digits %g
    // rounds to, and the decimal exponent %g uses to choose its style.
    let sci = format!("{:.*e}", (PRECISION - 1) as usize, d);
    let (mantissa, exponent) = sci.split_once('e').expect("{:e} always has an exponent");
    let exponent: i32 = exponent.parse().expect("{:e} exponent is an integer");
    if !(-4..PRECISION).contains(&exponent) {
        let mantissa = strip_trailing_zeros(mantissa);
        let sign = if exponent < 0 { '-' } else { '+' };
        format!("{mantissa}e{sign}{:02}", exponent.abs())
    } else {
        let decimals = (PRECISION - 1 - exponent) as usize;
        strip_trailing_zeros(&format!("{:.*}", decimals, d)).to_string()
    }
}

fn strip_trailing_zeros(s: &str) -> &str {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.')
    } else {
        s
    }
}

#[cfg(test)]
mod tests {
    use super::format_double;

    #[test]
    fn matches_printf_g17() {
        let cases = [
            (1.5, "1.5"),
            (0.1, "0.10000000000000001"),
            (3.0, "3"),
            (-2.25, "-2.25"),
            (1e20, "1e+20"),
            (1.0e-5, "1.0000000000000001e-05"),
            (123456789012345678.0, "1.2345678901234568e+17"),
            (0.0001, "0.0001"),
            (f64::INFINITY, "inf"),
            (f64::NEG_INFINITY, "-inf"),
            (0.0, "0"),
        ];
        for (d, want) in cases {
            assert_eq!(format_double(d), want, "formatting {d:?}");
        }
    }
}
