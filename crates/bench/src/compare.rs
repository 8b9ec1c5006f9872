//! `--compare`: the same scenario against two servers in turn, then one
//! side-by-side table with ratios (second ÷ first) and one report holding
//! both timelines. Runs are sequential, never concurrent, so the two
//! servers do not compete for this machine's cores.

use crate::report::ratio;
use crate::run::RunOutput;
use crate::summary::{fmt_value, summarize};

/// The side-by-side table as text.
pub fn table(a: &RunOutput, b: &RunOutput) -> String {
    let (sa, sb) = (summarize(a), summarize(b));
    let mut out = format!(
        "== compare: {} — {} ({}) vs {} ({})\n  {:<44} {:>14} {:>14} {:>9}  unit\n",
        a.scenario,
        a.name,
        a.addr,
        b.name,
        b.addr,
        "metric",
        a.name,
        b.name,
        format!("{}/{}", b.name, a.name)
    );
    for (ia, ib) in sa.items.iter().zip(&sb.items) {
        if ia.value.is_none() && ib.value.is_none() {
            continue;
        }
        out.push_str(&format!(
            "  {:<44} {:>14} {:>14} {:>9}  {}\n",
            ia.label,
            fmt_value(ia.value, ia.unit),
            fmt_value(ib.value, ib.unit),
            ratio(ia.value, ib.value),
            ia.unit
        ));
    }
    let mut kinds: Vec<&String> = sa.errors.keys().chain(sb.errors.keys()).collect();
    kinds.sort();
    kinds.dedup();
    for k in kinds {
        let (x, y) = (sa.errors.get(k).copied(), sb.errors.get(k).copied());
        out.push_str(&format!(
            "  {:<44} {:>14} {:>14} {:>9}\n",
            format!("errors: {k}"),
            x.unwrap_or(0),
            y.unwrap_or(0),
            ratio(x.map(|v| v as f64), y.map(|v| v as f64))
        ));
    }
    out
}

/// Parses `NAME=HOST:PORT` (or bare `HOST:PORT`, named after itself).
pub fn parse_target(s: &str) -> Result<(String, String), String> {
    let (name, addr) = match s.split_once('=') {
        Some((n, a)) => (n.to_string(), a.to_string()),
        None => (s.to_string(), s.to_string()),
    };
    let addr = if addr.contains(':') {
        addr
    } else {
        format!("127.0.0.1:{addr}")
    };
    let port_ok = addr
        .rsplit(':')
        .next()
        .and_then(|p| p.parse::<u16>().ok())
        .is_some();
    if name.is_empty() || !port_ok {
        return Err(format!("--compare expects NAME=HOST:PORT, got {s:?}"));
    }
    Ok((name, addr))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_parse() {
        assert_eq!(
            parse_target("keel=127.0.0.1:7001").unwrap(),
            ("keel".into(), "127.0.0.1:7001".into())
        );
        assert_eq!(
            parse_target("redis=7002").unwrap(),
            ("redis".into(), "127.0.0.1:7002".into())
        );
        assert!(parse_target("x=host").is_err());
    }
}
