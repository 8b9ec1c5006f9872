//! Scenario files (TOML, under `bench/scenarios/`): a workload, a load
//! shape, the server settings it assumes, and what to do before and after.
//!
//! Command-line options are applied to the parsed TOML table *before*
//! validation, so a scenario and a one-off `--mix get=9,set=1` go through
//! the same checks and every error names the file and the field
//! (`bench/scenarios/x.toml: field `load.rate`: expected a number`).
//! Unknown fields are errors too: a typo must not silently fall back to a
//! default.

use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicU64;
use std::time::Duration;

use toml::{Table, Value};

use crate::driver::LoadParams;
use crate::schedule::Arrival;
use crate::workload::{Cmd, KeyDist, Keys, MixEntry, Ttl, ValueSize, Weighted, Workload, Zipf};

/// A scenario problem, phrased as `file: field `x.y`: what is wrong`.
#[derive(Debug, Clone)]
pub struct ScenarioError {
    /// The scenario file, or `<command line>`.
    pub file: String,
    /// Dotted field path, e.g. `workload.mix[1].weight`.
    pub field: String,
    /// What is wrong.
    pub message: String,
}

impl std::fmt::Display for ScenarioError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.field.is_empty() {
            write!(f, "{}: {}", self.file, self.message)
        } else {
            write!(f, "{}: field `{}`: {}", self.file, self.field, self.message)
        }
    }
}

impl std::error::Error for ScenarioError {}

/// Keys to write before the measured phase, so the server starts full of
/// small keys (the eviction-storm precondition) or warm.
#[derive(Debug, Clone)]
pub struct Prefill {
    /// How many keys.
    pub keys: u64,
    /// First key index.
    pub first: u64,
    /// Key prefix.
    pub prefix: String,
    /// Value size of each key.
    pub value: ValueSize,
    /// TTL of each key.
    pub ttl: Ttl,
    /// Run FLUSHALL first (scenarios meant for a dedicated test server).
    pub flush: bool,
    /// Connections used to prefill.
    pub connections: usize,
    /// Requests per pipelined batch.
    pub pipeline: usize,
}

/// A parsed, validated scenario.
#[derive(Debug, Clone)]
pub struct Scenario {
    /// Short name (file stem).
    pub name: String,
    /// Where it came from, for messages.
    pub source: String,
    /// Free text from the file.
    pub description: String,
    /// `[server]` settings as `--name value` pairs for redis-server and
    /// keel-server (used by `bench/compare-redis.sh`).
    pub server_args: Vec<(String, String)>,
    /// Load shape.
    pub load: LoadParams,
    /// Length of the measured phase.
    pub duration: Duration,
    /// Runtime worker threads for the generator.
    pub threads: usize,
    /// Keys written before the run.
    pub prefill: Option<Prefill>,
    /// After the run: full SCAN to reclaim expired keys and measure the
    /// expired-key overhead.
    pub scan_after: bool,
    /// `--calibrate`: closed-loop seconds to measure capacity.
    pub calibrate_seconds: u64,
    /// `--calibrate`: fraction of measured capacity to run at.
    pub calibrate_fraction: f64,
    /// The `[workload]` table, kept to build a fresh [`Workload`] per run
    /// (sequential counters must restart for each server compared).
    workload_table: Table,
}

/// Where scenario names are looked up: `bench/scenarios/` under the current
/// directory, then under the workspace this binary was built from.
pub fn resolve(name_or_path: &str) -> PathBuf {
    let p = Path::new(name_or_path);
    if p.exists() {
        return p.to_path_buf();
    }
    let file = if name_or_path.ends_with(".toml") {
        name_or_path.to_string()
    } else {
        format!("{name_or_path}.toml")
    };
    let local = Path::new("bench/scenarios").join(&file);
    if local.exists() {
        return local;
    }
    let built = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../bench/scenarios")
        .join(&file);
    if built.exists() {
        return built;
    }
    p.to_path_buf()
}

/// Reads and parses a scenario file.
pub fn read_table(path: &Path) -> Result<Table, ScenarioError> {
    let file = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|e| ScenarioError {
        file: file.clone(),
        field: String::new(),
        message: format!("cannot read scenario file: {e}"),
    })?;
    text.parse::<Table>().map_err(|e| {
        let line = e
            .span()
            .map(|s| text[..s.start.min(text.len())].lines().count().max(1))
            .unwrap_or(0);
        ScenarioError {
            file,
            field: String::new(),
            message: format!("not valid TOML (line {line}): {}", e.message()),
        }
    })
}

struct Ctx<'a> {
    file: &'a str,
}

impl Ctx<'_> {
    fn err(&self, field: &str, message: impl Into<String>) -> ScenarioError {
        ScenarioError {
            file: self.file.to_string(),
            field: field.to_string(),
            message: message.into(),
        }
    }

    fn table<'t>(
        &self,
        parent: &'t Table,
        key: &str,
        path: &str,
    ) -> Result<Option<&'t Table>, ScenarioError> {
        match parent.get(key) {
            None => Ok(None),
            Some(Value::Table(t)) => Ok(Some(t)),
            Some(v) => Err(self.err(path, format!("expected a table, got {}", v.type_str()))),
        }
    }

    fn known(&self, t: &Table, path: &str, allowed: &[&str]) -> Result<(), ScenarioError> {
        for k in t.keys() {
            if !allowed.contains(&k.as_str()) {
                let field = if path.is_empty() {
                    k.clone()
                } else {
                    format!("{path}.{k}")
                };
                return Err(self.err(
                    &field,
                    format!("unknown field (expected one of: {})", allowed.join(", ")),
                ));
            }
        }
        Ok(())
    }

    fn num(&self, t: &Table, key: &str, path: &str) -> Result<Option<f64>, ScenarioError> {
        match t.get(key) {
            None => Ok(None),
            Some(Value::Integer(i)) => Ok(Some(*i as f64)),
            Some(Value::Float(f)) if f.is_finite() => Ok(Some(*f)),
            Some(v) => Err(self.err(
                &join(path, key),
                format!("expected a number, got {}", describe(v)),
            )),
        }
    }

    fn uint(&self, t: &Table, key: &str, path: &str) -> Result<Option<u64>, ScenarioError> {
        match t.get(key) {
            None => Ok(None),
            Some(Value::Integer(i)) if *i >= 0 => Ok(Some(*i as u64)),
            Some(v) => Err(self.err(
                &join(path, key),
                format!("expected a non-negative integer, got {}", describe(v)),
            )),
        }
    }

    fn string(&self, t: &Table, key: &str, path: &str) -> Result<Option<String>, ScenarioError> {
        match t.get(key) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(v) => Err(self.err(
                &join(path, key),
                format!("expected a string, got {}", describe(v)),
            )),
        }
    }

    fn boolean(&self, t: &Table, key: &str, path: &str) -> Result<Option<bool>, ScenarioError> {
        match t.get(key) {
            None => Ok(None),
            Some(Value::Boolean(b)) => Ok(Some(*b)),
            Some(v) => Err(self.err(
                &join(path, key),
                format!("expected true or false, got {}", describe(v)),
            )),
        }
    }
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

fn describe(v: &Value) -> String {
    match v {
        Value::String(s) => format!("the string {s:?}"),
        other => format!("{} {}", other.type_str(), other),
    }
}

/// Parses a value-size string: `200`, `100-300`, or `200:98,32768:2`.
pub fn parse_value_size(s: &str) -> Result<ValueSize, String> {
    let s = s.trim();
    if s.contains(':') {
        let mut pairs = Vec::new();
        for part in s.split(',') {
            let (size, w) = part
                .split_once(':')
                .ok_or_else(|| format!("expected SIZE:WEIGHT in {part:?}"))?;
            pairs.push((parse_bytes(size)?, parse_f64(w)?));
        }
        return Weighted::new(pairs)
            .map(ValueSize::Weighted)
            .ok_or_else(|| "weights must be non-negative and not all zero".to_string());
    }
    if let Some((lo, hi)) = s.split_once('-') {
        let (lo, hi) = (parse_bytes(lo)?, parse_bytes(hi)?);
        if lo > hi {
            return Err(format!("range {lo}-{hi} is empty"));
        }
        return Ok(ValueSize::Uniform(lo, hi));
    }
    Ok(ValueSize::Fixed(parse_bytes(s)?))
}

fn parse_bytes(s: &str) -> Result<usize, String> {
    let s = s.trim().to_ascii_lowercase();
    let (num, mult) = if let Some(n) = s.strip_suffix("kb").or_else(|| s.strip_suffix('k')) {
        (n, 1024)
    } else if let Some(n) = s.strip_suffix("mb").or_else(|| s.strip_suffix('m')) {
        (n, 1024 * 1024)
    } else {
        (s.strip_suffix('b').unwrap_or(&s), 1)
    };
    let n: usize = num
        .trim()
        .parse()
        .map_err(|_| format!("{s:?} is not a size in bytes (e.g. 200, 32k)"))?;
    if n * mult > 512 * 1024 * 1024 {
        return Err(format!("{s} is larger than Redis's 512 MB value limit"));
    }
    Ok(n * mult)
}

fn parse_f64(s: &str) -> Result<f64, String> {
    s.trim()
        .parse::<f64>()
        .ok()
        .filter(|f| f.is_finite() && *f >= 0.0)
        .ok_or_else(|| format!("{s:?} is not a non-negative number"))
}

fn secs_to_ms(s: f64) -> u64 {
    (s * 1000.0).round().max(1.0) as u64
}

/// Parses a TTL string in seconds: `none`, `30`, `5-15`, or a mixture
/// `5-15:80,3600:10,none:10`.
pub fn parse_ttl(s: &str) -> Result<Ttl, String> {
    let s = s.trim();
    if s.contains(':') {
        let mut pairs = Vec::new();
        for part in s.split(',') {
            let (ttl, w) = part
                .rsplit_once(':')
                .ok_or_else(|| format!("expected TTL:WEIGHT in {part:?}"))?;
            pairs.push((parse_ttl(ttl)?, parse_f64(w)?));
        }
        return Weighted::new(pairs)
            .map(Ttl::Mix)
            .ok_or_else(|| "weights must be non-negative and not all zero".to_string());
    }
    if s == "none" || s.is_empty() {
        return Ok(Ttl::None);
    }
    if let Some((lo, hi)) = s.split_once('-') {
        let (lo, hi) = (secs_to_ms(parse_f64(lo)?), secs_to_ms(parse_f64(hi)?));
        if lo > hi {
            return Err(format!("TTL range {s} is empty"));
        }
        return Ok(Ttl::Uniform(lo, hi));
    }
    Ok(Ttl::Fixed(secs_to_ms(parse_f64(s)?)))
}

/// Parses `--mix get=9,set=1`.
pub fn parse_mix(s: &str) -> Result<Vec<(Cmd, f64)>, String> {
    let mut out = Vec::new();
    for part in s.split(',') {
        let (name, w) = part.split_once('=').unwrap_or((part, "1"));
        let cmd =
            Cmd::parse(name.trim()).ok_or_else(|| format!("unknown command {name:?} in --mix"))?;
        out.push((cmd, parse_f64(w)?));
    }
    Ok(out)
}

impl Ctx<'_> {
    fn value_size(&self, v: &Value, path: &str) -> Result<ValueSize, ScenarioError> {
        match v {
            Value::Integer(i) if *i >= 0 => Ok(ValueSize::Fixed(*i as usize)),
            Value::String(s) => parse_value_size(s).map_err(|m| self.err(path, m)),
            Value::Table(t) => {
                self.known(t, path, &["uniform", "weighted"])?;
                if let Some(Value::Array(a)) = t.get("uniform") {
                    if let [Value::Integer(lo), Value::Integer(hi)] = a.as_slice() {
                        if 0 <= *lo && lo <= hi {
                            return Ok(ValueSize::Uniform(*lo as usize, *hi as usize));
                        }
                    }
                    return Err(self.err(
                        &join(path, "uniform"),
                        "expected [low, high] byte counts, low <= high",
                    ));
                }
                if let Some(Value::Array(a)) = t.get("weighted") {
                    let mut pairs = Vec::new();
                    for (i, item) in a.iter().enumerate() {
                        match item.as_array().map(|x| x.as_slice()) {
                            Some([Value::Integer(size), w]) if *size >= 0 => {
                                let w = w.as_float().or(w.as_integer().map(|i| i as f64));
                                match w {
                                    Some(w) => pairs.push((*size as usize, w)),
                                    None => {
                                        return Err(self.err(
                                            &format!("{path}.weighted[{i}]"),
                                            "weight must be a number",
                                        ))
                                    }
                                }
                            }
                            _ => {
                                return Err(self.err(
                                    &format!("{path}.weighted[{i}]"),
                                    "expected [size_bytes, weight]",
                                ))
                            }
                        }
                    }
                    return Weighted::new(pairs)
                        .map(ValueSize::Weighted)
                        .ok_or_else(|| {
                            self.err(
                                &join(path, "weighted"),
                                "weights must be non-negative and not all zero",
                            )
                        });
                }
                Err(self.err(
                    path,
                    "expected { uniform = [lo, hi] } or { weighted = [[size, weight], ...] }",
                ))
            }
            other => Err(self.err(path, format!("expected a size, got {}", describe(other)))),
        }
    }

    fn ttl(&self, v: &Value, path: &str) -> Result<Ttl, ScenarioError> {
        match v {
            Value::Integer(i) if *i > 0 => Ok(Ttl::Fixed(*i as u64 * 1000)),
            Value::Float(f) if *f > 0.0 && f.is_finite() => Ok(Ttl::Fixed(secs_to_ms(*f))),
            Value::String(s) => parse_ttl(s).map_err(|m| self.err(path, m)),
            Value::Table(t) => {
                self.known(t, path, &["uniform", "mix"])?;
                if let Some(Value::Array(a)) = t.get("uniform") {
                    let nums: Vec<f64> = a
                        .iter()
                        .filter_map(|x| x.as_float().or(x.as_integer().map(|i| i as f64)))
                        .collect();
                    if let [lo, hi] = nums.as_slice() {
                        if *lo > 0.0 && lo <= hi {
                            return Ok(Ttl::Uniform(secs_to_ms(*lo), secs_to_ms(*hi)));
                        }
                    }
                    return Err(self.err(
                        &join(path, "uniform"),
                        "expected [low, high] seconds, 0 < low <= high",
                    ));
                }
                if let Some(Value::Array(a)) = t.get("mix") {
                    let mut pairs = Vec::new();
                    for (i, item) in a.iter().enumerate() {
                        let p = format!("{path}.mix[{i}]");
                        let Value::Table(it) = item else {
                            return Err(self.err(&p, "expected { ttl = ..., weight = ... }"));
                        };
                        self.known(it, &p, &["ttl", "weight"])?;
                        let w = self
                            .num(it, "weight", &p)?
                            .ok_or_else(|| self.err(&join(&p, "weight"), "missing"))?;
                        let ttl = match it.get("ttl") {
                            Some(v) => self.ttl(v, &join(&p, "ttl"))?,
                            None => return Err(self.err(&join(&p, "ttl"), "missing")),
                        };
                        pairs.push((ttl, w));
                    }
                    return Weighted::new(pairs).map(Ttl::Mix).ok_or_else(|| {
                        self.err(
                            &join(path, "mix"),
                            "weights must be non-negative and not all zero",
                        )
                    });
                }
                Err(self.err(
                    path,
                    "expected { uniform = [lo, hi] } or { mix = [{ ttl = ..., weight = ... }] }",
                ))
            }
            other => Err(self.err(
                path,
                format!(
                    "expected seconds, a string like \"5-15\" or \"none\", got {}",
                    describe(other)
                ),
            )),
        }
    }

    fn keys(&self, v: Option<&Value>, path: &str, keyspace: u64) -> Result<Keys, ScenarioError> {
        let (dist, t): (String, Option<&Table>) = match v {
            None => ("uniform".into(), None),
            Some(Value::String(s)) => (s.clone(), None),
            Some(Value::Table(t)) => {
                self.known(t, path, &["dist", "theta", "first", "count", "wrap"])?;
                (
                    self.string(t, "dist", path)?
                        .unwrap_or_else(|| "uniform".into()),
                    Some(t),
                )
            }
            Some(other) => {
                return Err(self.err(
                    path,
                    format!(
                        "expected \"uniform\", \"sequential\", \"zipf\" or a table, got {}",
                        describe(other)
                    ),
                ))
            }
        };
        let empty = Table::new();
        let t = t.unwrap_or(&empty);
        let first = self.uint(t, "first", path)?.unwrap_or(0);
        let count = self.uint(t, "count", path)?.unwrap_or(keyspace);
        if count == 0 {
            return Err(self.err(&join(path, "count"), "key range is empty"));
        }
        let (dist_name, inline_theta) = match dist.split_once(':') {
            Some((d, th)) => (
                d.to_string(),
                Some(
                    th.parse::<f64>()
                        .map_err(|_| self.err(path, format!("bad zipf theta {th:?}")))?,
                ),
            ),
            None => (dist.clone(), None),
        };
        let d = match dist_name.as_str() {
            "uniform" => KeyDist::Uniform,
            "zipf" | "zipfian" => {
                let theta = self.num(t, "theta", path)?.or(inline_theta).unwrap_or(0.99);
                KeyDist::Zipf(
                    Zipf::new(count, theta).map_err(|m| self.err(&join(path, "theta"), m))?,
                )
            }
            "sequential" => KeyDist::Sequential {
                next: AtomicU64::new(0),
                wrap: self.boolean(t, "wrap", path)?.unwrap_or(true),
            },
            other => {
                return Err(self.err(
                    &join(path, "dist"),
                    format!("unknown key distribution {other:?} (uniform, zipf, sequential)"),
                ))
            }
        };
        Ok(Keys::new(first, count, d))
    }

    fn workload(&self, w: &Table) -> Result<Workload, ScenarioError> {
        let p = "workload";
        self.known(w, p, &["keyspace", "keys", "value", "ttl", "prefix", "mix"])?;
        let keyspace = self.uint(w, "keyspace", p)?.unwrap_or(100_000);
        if keyspace == 0 {
            return Err(self.err("workload.keyspace", "must be at least 1"));
        }
        let default_value = match w.get("value") {
            Some(v) => self.value_size(v, "workload.value")?,
            None => ValueSize::Fixed(100),
        };
        let default_ttl = match w.get("ttl") {
            Some(v) => self.ttl(v, "workload.ttl")?,
            None => Ttl::None,
        };
        let default_prefix = self.string(w, "prefix", p)?;
        let mix = match w.get("mix") {
            None => {
                return Err(self.err(
                    "workload.mix",
                    "missing: give at least one [[workload.mix]] entry",
                ))
            }
            Some(Value::Array(a)) if !a.is_empty() => a,
            Some(_) => {
                return Err(self.err(
                    "workload.mix",
                    "expected a non-empty array of tables ([[workload.mix]])",
                ))
            }
        };
        let mut entries = Vec::new();
        for (i, item) in mix.iter().enumerate() {
            let ep = format!("workload.mix[{i}]");
            let Value::Table(e) = item else {
                return Err(self.err(&ep, "expected a table"));
            };
            self.known(
                e,
                &ep,
                &[
                    "cmd",
                    "weight",
                    "keys",
                    "value",
                    "ttl",
                    "prefix",
                    "count",
                    "fill_on_miss",
                ],
            )?;
            let name = self
                .string(e, "cmd", &ep)?
                .ok_or_else(|| self.err(&join(&ep, "cmd"), "missing"))?;
            let cmd = Cmd::parse(&name).ok_or_else(|| {
                self.err(
                    &join(&ep, "cmd"),
                    format!("unknown command {name:?} (GET SET MGET DEL INCR EXPIRE HSET HGET SADD SMEMBERS)"),
                )
            })?;
            let weight = self.num(e, "weight", &ep)?.unwrap_or(1.0);
            if weight < 0.0 {
                return Err(self.err(&join(&ep, "weight"), "must not be negative"));
            }
            let keys = match e.get("keys") {
                Some(v) => self.keys(Some(v), &join(&ep, "keys"), keyspace)?,
                None => self.keys(w.get("keys"), "workload.keys", keyspace)?,
            };
            let value = match e.get("value") {
                Some(v) => self.value_size(v, &join(&ep, "value"))?,
                None => default_value.clone(),
            };
            let ttl = match e.get("ttl") {
                Some(v) => self.ttl(v, &join(&ep, "ttl"))?,
                None => default_ttl.clone(),
            };
            let prefix = self
                .string(e, "prefix", &ep)?
                .or_else(|| {
                    // A workload-wide prefix applies to string commands only,
                    // so hashes and sets keep their own key spaces.
                    default_prefix
                        .clone()
                        .filter(|_| cmd.default_prefix() == "key:")
                })
                .unwrap_or_else(|| cmd.default_prefix().to_string());
            let count = self.uint(e, "count", &ep)?.unwrap_or(match cmd {
                Cmd::Mget => 10,
                _ => 16,
            });
            let fill_on_miss = self.boolean(e, "fill_on_miss", &ep)?.unwrap_or(false);
            if fill_on_miss && cmd != Cmd::Get {
                return Err(self.err(
                    &join(&ep, "fill_on_miss"),
                    "only GET entries can fill on miss",
                ));
            }
            entries.push((
                MixEntry {
                    cmd,
                    prefix,
                    keys,
                    value,
                    ttl,
                    count,
                    fill_on_miss,
                },
                weight,
            ));
        }
        let mix = Weighted::new(entries)
            .ok_or_else(|| self.err("workload.mix", "all weights are zero"))?;
        Ok(Workload::new(mix))
    }
}

/// Parses a scenario table (from a file, with command-line overrides
/// already applied).
pub fn parse(table: &Table, source: &str, name: &str) -> Result<Scenario, ScenarioError> {
    let cx = Ctx { file: source };
    cx.known(
        table,
        "",
        &[
            "name",
            "description",
            "server",
            "load",
            "workload",
            "prefill",
            "after",
            "calibrate",
        ],
    )?;
    let name = cx
        .string(table, "name", "")?
        .unwrap_or_else(|| name.to_string());
    let description = cx.string(table, "description", "")?.unwrap_or_default();

    let mut server_args = Vec::new();
    if let Some(s) = cx.table(table, "server", "server")? {
        for (k, v) in s {
            let val = match v {
                Value::String(s) => s.clone(),
                Value::Integer(i) => i.to_string(),
                Value::Float(f) => f.to_string(),
                Value::Boolean(b) => if *b { "yes" } else { "no" }.to_string(),
                other => {
                    return Err(cx.err(
                        &format!("server.{k}"),
                        format!("expected a plain value, got {}", describe(other)),
                    ))
                }
            };
            server_args.push((k.clone(), val));
        }
    }

    let empty = Table::new();
    let l = cx.table(table, "load", "load")?.unwrap_or(&empty);
    cx.known(
        l,
        "load",
        &[
            "duration",
            "connections",
            "pipeline",
            "rate",
            "arrival",
            "timeout",
            "drain",
            "seed",
            "threads",
        ],
    )?;
    let duration = cx.num(l, "duration", "load")?.unwrap_or(10.0);
    if !(1.0..=86_400.0).contains(&duration) {
        return Err(cx.err("load.duration", "must be between 1 and 86400 seconds"));
    }
    let connections = cx.uint(l, "connections", "load")?.unwrap_or(50) as usize;
    if connections == 0 || connections > 60_000 {
        return Err(cx.err("load.connections", "must be between 1 and 60000"));
    }
    let pipeline = cx.uint(l, "pipeline", "load")?.unwrap_or(1) as usize;
    if pipeline == 0 || pipeline > 100_000 {
        return Err(cx.err("load.pipeline", "must be between 1 and 100000"));
    }
    let rate = match cx.num(l, "rate", "load")? {
        None => None,
        Some(0.0) => None,
        Some(r) if r > 0.0 => Some(r),
        Some(_) => return Err(cx.err("load.rate", "must be positive (or 0 for the closed loop)")),
    };
    let arrival = match cx.string(l, "arrival", "load")? {
        None => Arrival::Poisson,
        Some(s) => Arrival::parse(&s).ok_or_else(|| {
            cx.err(
                "load.arrival",
                format!("{s:?} is not \"uniform\" or \"poisson\""),
            )
        })?,
    };
    let timeout = cx.num(l, "timeout", "load")?.unwrap_or(10.0);
    let drain = cx.num(l, "drain", "load")?.unwrap_or(2.0);
    if timeout <= 0.0 || drain < 0.0 {
        return Err(cx.err(
            "load.timeout",
            "timeout must be positive and drain non-negative",
        ));
    }
    let seed = cx.uint(l, "seed", "load")?.unwrap_or(1);
    let threads = cx.uint(l, "threads", "load")?.unwrap_or(1).clamp(1, 64) as usize;

    let w = cx
        .table(table, "workload", "workload")?
        .ok_or_else(|| cx.err("workload", "missing [workload] table"))?;
    // Build once now so every error surfaces before anything is sent.
    cx.workload(w)?;

    let prefill = match cx.table(table, "prefill", "prefill")? {
        None => None,
        Some(p) => {
            cx.known(
                p,
                "prefill",
                &[
                    "keys",
                    "first",
                    "prefix",
                    "value",
                    "ttl",
                    "flush",
                    "connections",
                    "pipeline",
                ],
            )?;
            let keys = cx.uint(p, "keys", "prefill")?.unwrap_or(0);
            if keys == 0 {
                None
            } else {
                Some(Prefill {
                    keys,
                    first: cx.uint(p, "first", "prefill")?.unwrap_or(0),
                    prefix: cx
                        .string(p, "prefix", "prefill")?
                        .unwrap_or_else(|| "key:".into()),
                    value: match p.get("value") {
                        Some(v) => cx.value_size(v, "prefill.value")?,
                        None => ValueSize::Fixed(100),
                    },
                    ttl: match p.get("ttl") {
                        Some(v) => cx.ttl(v, "prefill.ttl")?,
                        None => Ttl::None,
                    },
                    flush: cx.boolean(p, "flush", "prefill")?.unwrap_or(false),
                    connections: cx
                        .uint(p, "connections", "prefill")?
                        .unwrap_or(4)
                        .clamp(1, 64) as usize,
                    pipeline: cx
                        .uint(p, "pipeline", "prefill")?
                        .unwrap_or(256)
                        .clamp(1, 10_000) as usize,
                })
            }
        }
    };
    let after = cx.table(table, "after", "after")?.unwrap_or(&empty);
    cx.known(after, "after", &["scan"])?;
    let scan_after = cx.boolean(after, "scan", "after")?.unwrap_or(false);
    let cal = cx.table(table, "calibrate", "calibrate")?.unwrap_or(&empty);
    cx.known(cal, "calibrate", &["seconds", "fraction"])?;
    let calibrate_seconds = cx
        .uint(cal, "seconds", "calibrate")?
        .unwrap_or(10)
        .clamp(2, 120);
    let calibrate_fraction = cx.num(cal, "fraction", "calibrate")?.unwrap_or(0.8);
    if !(calibrate_fraction > 0.0 && calibrate_fraction <= 2.0) {
        return Err(cx.err("calibrate.fraction", "must be in (0, 2]"));
    }

    Ok(Scenario {
        name,
        source: source.to_string(),
        description,
        server_args,
        load: LoadParams {
            connections,
            pipeline,
            rate,
            arrival,
            timeout: Duration::from_secs_f64(timeout),
            drain: Duration::from_secs_f64(drain),
            seed,
        },
        duration: Duration::from_secs_f64(duration),
        threads,
        prefill,
        scan_after,
        calibrate_seconds,
        calibrate_fraction,
        workload_table: w.clone(),
    })
}

impl Scenario {
    /// A fresh workload (new sequential counters) for one run.
    pub fn build_workload(&self) -> Workload {
        Ctx { file: &self.source }
            .workload(&self.workload_table)
            .expect("validated when the scenario was parsed")
    }
}

/// The table used when no scenario file is given: a small closed-loop
/// GET/SET mix, which command-line options then adjust.
pub fn default_table() -> Table {
    r#"
[load]
duration = 10
connections = 50
pipeline = 1

[workload]
keyspace = 100000
value = 100

[[workload.mix]]
cmd = "GET"
weight = 1

[[workload.mix]]
cmd = "SET"
weight = 1
"#
    .parse()
    .expect("built-in default scenario parses")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_str(s: &str) -> Result<Scenario, ScenarioError> {
        parse(&s.parse().unwrap(), "test.toml", "test")
    }

    #[test]
    fn errors_name_the_file_and_the_field() {
        let bad = r#"
[load]
duration = 5
rate = "fast"
[workload]
[[workload.mix]]
cmd = "GET"
"#;
        let e = parse_str(bad).unwrap_err().to_string();
        assert!(e.starts_with("test.toml: field `load.rate`"), "{e}");
        let typo = "[load]\nconections = 5\n[workload]\n[[workload.mix]]\ncmd = \"GET\"\n";
        let e = parse_str(typo).unwrap_err().to_string();
        assert!(
            e.contains("`load.conections`") && e.contains("unknown field"),
            "{e}"
        );
        let cmd = "[workload]\n[[workload.mix]]\ncmd = \"GETT\"\n";
        let e = parse_str(cmd).unwrap_err().to_string();
        assert!(e.contains("`workload.mix[0].cmd`"), "{e}");
        let ttl = "[workload]\n[[workload.mix]]\ncmd = \"SET\"\nttl = { mix = [{ ttl = \"x\", weight = 1 }] }\n";
        let e = parse_str(ttl).unwrap_err().to_string();
        assert!(e.contains("`workload.mix[0].ttl.mix[0].ttl`"), "{e}");
    }

    #[test]
    fn string_syntaxes() {
        assert!(matches!(
            parse_value_size("32k").unwrap(),
            ValueSize::Fixed(32768)
        ));
        assert!(matches!(
            parse_value_size("100-300").unwrap(),
            ValueSize::Uniform(100, 300)
        ));
        assert!(matches!(
            parse_value_size("200:98,32k:2").unwrap(),
            ValueSize::Weighted(_)
        ));
        assert!(parse_value_size("300-100").is_err());
        assert!(matches!(parse_ttl("none").unwrap(), Ttl::None));
        assert!(matches!(parse_ttl("1.5").unwrap(), Ttl::Fixed(1500)));
        assert!(matches!(
            parse_ttl("5-15").unwrap(),
            Ttl::Uniform(5000, 15000)
        ));
        assert!(matches!(parse_ttl("5-15:80,none:20").unwrap(), Ttl::Mix(_)));
        assert_eq!(
            parse_mix("get=9,set=1").unwrap(),
            vec![(Cmd::Get, 9.0), (Cmd::Set, 1.0)]
        );
        assert!(parse_mix("fly=1").is_err());
    }

    #[test]
    fn shipped_scenarios_parse() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../bench/scenarios");
        let mut n = 0;
        for entry in std::fs::read_dir(&dir).expect("bench/scenarios exists") {
            let path = entry.unwrap().path();
            if path.extension().and_then(|e| e.to_str()) != Some("toml") {
                continue;
            }
            let t = read_table(&path).unwrap();
            parse(&t, &path.display().to_string(), "x").unwrap_or_else(|e| panic!("{e}"));
            n += 1;
        }
        assert!(n >= 4, "expected the four shipped scenarios, found {n}");
    }
}
