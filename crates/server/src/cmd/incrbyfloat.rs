//! INCRBYFLOAT key increment — add a float to the number stored at a key.
//!
//! Redis computes in `long double` and prints with `%.17Lf` trimmed; keel
//! computes in f64 and prints the shortest decimal that reads back as the
//! same f64. Both give "10.6" for 10.5 + 0.1, where printing an f64 with 17
//! digits would show its binary rounding ("10.59999999999999964").

use bytes::Bytes;
use keel_store::{Lookup, Str, Value};

use super::{errors, parse_f64, Ctx, Error, Spec, BASE};

/// INCRBYFLOAT.
pub const SPEC: Spec = Spec {
    name: "incrbyfloat",
    arity: 3,
    flags: &["write", "denyoom", "fast"],
    keys: (1, 1, 1),
    acl: &["@write", "@string", "@fast"],
    group: "string",
    summary: "Increment the floating point value of a key by a number. Uses 0 as initial value if the key doesn't exist.",
    since: "2.6.0",
    run,
    ..BASE
};

fn run(ctx: &mut Ctx, args: &[Bytes]) -> Result<(), Error> {
    let key = &args[1];
    let db = ctx.db();
    let mut shard = db.write(key);
    let mut lookup = shard.entry(key);
    let current = match &lookup {
        Lookup::Found(e) => {
            let s = e
                .entry()
                .value
                .as_str()
                .ok_or(Error::from(errors::WRONGTYPE))?;
            parse_f64(&s.to_bytes()).ok_or(Error::from(errors::NOT_FLOAT))?
        }
        Lookup::Missing(_) => 0.0,
    };
    let by = parse_f64(&args[2]).ok_or(Error::from(errors::NOT_FLOAT))?;
    let next = current + by;
    if !next.is_finite() {
        return Err("ERR increment would produce NaN or Infinity".into());
    }
    let text = format_human(next);
    // Redis stores the result as a string, never int-encoded.
    let value = Str::Fixed(text.as_bytes().into());
    match lookup {
        Lookup::Found(ref mut e) => *e.value_mut() = Value::Str(value),
        Lookup::Missing(vacant) => vacant.insert(Value::Str(value), None),
    }
    ctx.w().bulk(text.as_bytes());
    Ok(())
}

/// Plain decimal notation, no exponent, no trailing zeros, "0" for -0.
fn format_human(v: f64) -> String {
    if v == 0.0 {
        return "0".into();
    }
    format!("{v}")
}

#[cfg(test)]
mod tests {
    use super::format_human;

    #[test]
    fn human_format() {
        assert_eq!(format_human(10.5 + 0.1), "10.6");
        assert_eq!(format_human(3.0e5), "300000");
        assert_eq!(format_human(-0.0), "0");
        assert_eq!(format_human(1.5), "1.5");
    }
}
