//! Command line: which scenario, which server(s), overrides, outputs.
//! Flags follow redis-benchmark where they overlap (`-h -p -a -c -P`), so
//! an operator can switch tools without relearning them.

use std::path::PathBuf;

use toml::{Table, Value};

use crate::client::Target;
use crate::compare::parse_target;
use crate::run::RunOpts;
use crate::scenario::{self, parse_mix, parse_ttl, parse_value_size, Scenario};

/// Usage text.
pub const USAGE: &str = "\
keel-bench: load generator and timeline report for Redis-compatible servers

usage: keel-bench [SCENARIO] [options]

SCENARIO is a TOML file or a name under bench/scenarios/ (eviction-storm,
ttl-churn, zipf-read-heavy, scan-resistance). Without one: a 10 s closed-loop
GET/SET mix; options below adjust either.

target:
  -h HOST                 server host (default 127.0.0.1)
  -p PORT                 server port (default 6379)
  -a, --password PASS     AUTH password
  --resp3                 speak RESP3 (HELLO 3)
  --name LABEL            label for reports (default host:port)
  --compare A=HOST:PORT B=HOST:PORT
                          run the scenario against A, then B; side-by-side table
load:
  -c N                    connections
  -P N                    pipeline depth (most requests in flight per connection)
  --rate R                open loop at R requests/s in total (0 = closed loop)
  --arrival poisson|uniform
  --duration SECONDS      measured phase
  --timeout SECONDS       request timeout (counted, connection re-opened)
  --threads N             generator threads (default 1)
  --seed N
workload:
  --keyspace N            keys 0..N
  --keys DIST             uniform | sequential | zipf:THETA
  --mix CMD=W,...         e.g. get=9,set=1 (GET SET MGET DEL INCR EXPIRE HSET HGET SADD SMEMBERS)
  --value SIZE            200 | 100-300 | 200:98,32k:2
  --ttl TTL               none | 30 | 5-15 | 5-15:80,none:20   (seconds)
steps:
  --no-prefill            skip the scenario's [prefill]
  --calibrate             measure closed-loop capacity, then run at calibrate.fraction of it
output:
  --csv FILE              per-second timeline (with --compare: FILE-NAME.csv per server)
  --report FILE.html      self-contained HTML report
  --summary FILE          also write the summary text to FILE
  --quiet                 no progress line
  --print-server-args     print the scenario's [server] settings as redis-server flags and exit
  --help
";

/// What the command line asked for.
#[derive(Debug)]
pub struct Cli {
    /// The validated scenario (file plus overrides).
    pub scenario: Scenario,
    /// One target, or two with `--compare`.
    pub targets: Vec<Target>,
    /// Run options.
    pub opts: RunOpts,
    /// `--csv`.
    pub csv: Option<PathBuf>,
    /// `--report`.
    pub report: Option<PathBuf>,
    /// `--summary`.
    pub summary: Option<PathBuf>,
    /// `--print-server-args`.
    pub print_server_args: bool,
}

/// A parse outcome that is not a run.
#[derive(Debug)]
pub enum CliError {
    /// `--help`.
    Help,
    /// Bad usage or scenario, with the message to print.
    Bad(String),
}

fn set(t: &mut Table, section: &str, key: &str, v: Value) {
    let sec = t
        .entry(section.to_string())
        .or_insert_with(|| Value::Table(Table::new()));
    if let Value::Table(s) = sec {
        s.insert(key.to_string(), v);
    }
}

fn int(flag: &str, v: &str) -> Result<i64, CliError> {
    v.parse::<i64>()
        .ok()
        .filter(|n| *n >= 0)
        .ok_or_else(|| CliError::Bad(format!("{flag} expects a non-negative integer, got {v:?}")))
}

fn float(flag: &str, v: &str) -> Result<f64, CliError> {
    v.parse::<f64>()
        .ok()
        .filter(|n| n.is_finite() && *n >= 0.0)
        .ok_or_else(|| CliError::Bad(format!("{flag} expects a non-negative number, got {v:?}")))
}

/// Parses arguments (without the program name).
pub fn parse(args: &[String]) -> Result<Cli, CliError> {
    let mut scenario_arg: Option<String> = None;
    let mut host = "127.0.0.1".to_string();
    let mut port = "6379".to_string();
    let mut password = None;
    let mut resp3 = false;
    let mut name = None;
    let mut compare: Vec<(String, String)> = Vec::new();
    let mut overrides: Vec<(&str, &str, Value)> = Vec::new();
    let mut mix: Option<String> = None;
    let mut opts = RunOpts::default();
    let (mut csv, mut report, mut summary) = (None, None, None);
    let mut print_server_args = false;

    let mut i = 0;
    let need = |i: usize, flag: &str| -> Result<String, CliError> {
        args.get(i + 1)
            .cloned()
            .ok_or_else(|| CliError::Bad(format!("{flag} needs a value")))
    };
    while i < args.len() {
        let a = args[i].as_str();
        let mut takes = true;
        match a {
            "--help" => return Err(CliError::Help),
            "-h" => host = need(i, a)?,
            "-p" => port = need(i, a)?,
            "-a" | "--password" => password = Some(need(i, a)?),
            "--name" => name = Some(need(i, a)?),
            "--resp3" => {
                resp3 = true;
                takes = false;
            }
            "--compare" => {
                let first = need(i, a)?;
                let second = args.get(i + 2).cloned().ok_or_else(|| {
                    CliError::Bad("--compare needs two targets: A=HOST:PORT B=HOST:PORT".into())
                })?;
                compare.push(parse_target(&first).map_err(CliError::Bad)?);
                compare.push(parse_target(&second).map_err(CliError::Bad)?);
                i += 1;
            }
            "-c" => overrides.push(("load", "connections", Value::Integer(int(a, &need(i, a)?)?))),
            "-P" => overrides.push(("load", "pipeline", Value::Integer(int(a, &need(i, a)?)?))),
            "--rate" => overrides.push(("load", "rate", Value::Float(float(a, &need(i, a)?)?))),
            "--arrival" => overrides.push(("load", "arrival", Value::String(need(i, a)?))),
            "--duration" => {
                overrides.push(("load", "duration", Value::Float(float(a, &need(i, a)?)?)))
            }
            "--timeout" => {
                overrides.push(("load", "timeout", Value::Float(float(a, &need(i, a)?)?)))
            }
            "--threads" => {
                overrides.push(("load", "threads", Value::Integer(int(a, &need(i, a)?)?)))
            }
            "--seed" => overrides.push(("load", "seed", Value::Integer(int(a, &need(i, a)?)?))),
            "--keyspace" => overrides.push((
                "workload",
                "keyspace",
                Value::Integer(int(a, &need(i, a)?)?),
            )),
            "--keys" => overrides.push(("workload", "keys", Value::String(need(i, a)?))),
            "--value" => {
                let v = need(i, a)?;
                parse_value_size(&v).map_err(|m| CliError::Bad(format!("--value: {m}")))?;
                overrides.push(("workload", "value", Value::String(v)));
            }
            "--ttl" => {
                let v = need(i, a)?;
                parse_ttl(&v).map_err(|m| CliError::Bad(format!("--ttl: {m}")))?;
                overrides.push(("workload", "ttl", Value::String(v)));
            }
            "--mix" => mix = Some(need(i, a)?),
            "--no-prefill" => {
                opts.no_prefill = true;
                takes = false;
            }
            "--calibrate" => {
                opts.calibrate = true;
                takes = false;
            }
            "--quiet" => {
                opts.quiet = true;
                takes = false;
            }
            "--print-server-args" => {
                print_server_args = true;
                takes = false;
            }
            "--csv" => csv = Some(PathBuf::from(need(i, a)?)),
            "--report" => report = Some(PathBuf::from(need(i, a)?)),
            "--summary" => summary = Some(PathBuf::from(need(i, a)?)),
            s if s.starts_with('-') => {
                return Err(CliError::Bad(format!("unknown option {s} (see --help)")))
            }
            s => {
                if scenario_arg.is_some() {
                    return Err(CliError::Bad(format!(
                        "unexpected argument {s:?}: only one scenario"
                    )));
                }
                scenario_arg = Some(s.to_string());
                takes = false;
            }
        }
        i += if takes { 2 } else { 1 };
    }

    let (mut table, source, stem) = match &scenario_arg {
        Some(s) => {
            let path = scenario::resolve(s);
            let table = scenario::read_table(&path).map_err(|e| CliError::Bad(e.to_string()))?;
            let stem = path
                .file_stem()
                .and_then(|x| x.to_str())
                .unwrap_or("scenario")
                .to_string();
            (table, path.display().to_string(), stem)
        }
        None => (
            scenario::default_table(),
            "<built-in default>".to_string(),
            "default".to_string(),
        ),
    };
    for (section, key, v) in overrides {
        set(&mut table, section, key, v);
    }
    if let Some(m) = mix {
        let entries = parse_mix(&m).map_err(CliError::Bad)?;
        let arr = entries
            .into_iter()
            .map(|(cmd, w)| {
                let mut t = Table::new();
                t.insert("cmd".into(), Value::String(cmd.name().into()));
                t.insert("weight".into(), Value::Float(w));
                Value::Table(t)
            })
            .collect();
        set(&mut table, "workload", "mix", Value::Array(arr));
    }
    let scenario =
        scenario::parse(&table, &source, &stem).map_err(|e| CliError::Bad(e.to_string()))?;

    let targets = if compare.is_empty() {
        let addr = format!("{host}:{port}");
        vec![Target {
            name: name.unwrap_or_else(|| addr.clone()),
            addr,
            password,
            resp3,
        }]
    } else {
        compare
            .into_iter()
            .map(|(name, addr)| Target {
                name,
                addr,
                password: password.clone(),
                resp3,
            })
            .collect()
    };
    Ok(Cli {
        scenario,
        targets,
        opts,
        csv,
        report,
        summary,
        print_server_args,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn overrides_go_through_scenario_validation() {
        let cli = parse(&args(
            "-p 7000 -c 8 -P 16 --duration 3 --mix get=9,set=1 --value 32",
        ))
        .unwrap();
        assert_eq!(cli.targets[0].addr, "127.0.0.1:7000");
        assert_eq!(cli.scenario.load.connections, 8);
        assert_eq!(cli.scenario.load.pipeline, 16);
        assert_eq!(cli.scenario.duration.as_secs(), 3);
        assert!(cli.scenario.load.rate.is_none());
        let e = parse(&args("--arrival bursty")).unwrap_err();
        let CliError::Bad(m) = e else { panic!() };
        assert!(m.contains("load.arrival"), "{m}");
        assert!(matches!(parse(&args("--bogus")), Err(CliError::Bad(_))));
        let cli = parse(&args("--compare keel=7001 redis=127.0.0.1:7002 --rate 100")).unwrap();
        assert_eq!(cli.targets.len(), 2);
        assert_eq!(cli.scenario.load.rate, Some(100.0));
    }

    #[test]
    fn missing_scenario_file_is_named() {
        let CliError::Bad(m) = parse(&args("/nonexistent/x.toml")).unwrap_err() else {
            panic!()
        };
        assert!(m.contains("/nonexistent/x.toml"), "{m}");
    }
}
