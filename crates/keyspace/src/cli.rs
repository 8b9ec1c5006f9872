//! Command line. Connection flags follow `redis-cli` (`-h -p -a -n`) so an
//! operator can reuse the line they already type; everything else is a long
//! option.

use std::time::Duration;

use crate::pattern::{Rule, DEFAULT_SEPARATORS};

/// `--help` text.
pub const USAGE: &str = "\
keel-keyspace: memory, idle time and TTL by key pattern, for keel or any Redis-compatible server

usage: keel-keyspace [options]

connection (as redis-cli):
  -h HOST               server host (default 127.0.0.1)
  -p PORT               server port (default 6379)
  -a, --password PASS   AUTH password (also: REDISCLI_AUTH environment variable)
      --user NAME       ACL user for AUTH (default: the default user)
  -n DB                 database number (default 0)
      --timeout SECS    reply timeout (default 10)

walk:
      --rate N          keys inspected per second, 0 for no limit (default 25000)
      --batch N         keys per pipelined round trip, 4 commands each (default 256)
      --count N         SCAN COUNT hint (default 1000)
      --match GLOB      only keys matching GLOB (SCAN MATCH)
      --sample N        inspect N random keys only and scale up, with 95% intervals
      --sample-method M scan (uniform subset of a keys-only SCAN walk, default)
                        or randomkey (N RANDOMKEY draws; population from DBSIZE)
      --seed N          random seed for --sample (default: from the clock)
      --memory-samples N  MEMORY USAGE ... SAMPLES N for aggregates (server default 5)
  -q, --quiet           no progress bar

patterns:
      --separators STR  segment separators (default \":/.-_|#@,=\")
      --rule RE=REPL    extra rewrite applied to key names first (repeatable; regex
                        syntax of the Rust regex crate, $1 for groups)
      --max-literals N  merge a segment into * when more than N distinct words
                        appear there (default 50, 0: off)

output:
      --top N           rows in the table (default 30; JSON/CSV have all)
      --json            JSON on stdout
      --csv             CSV on stdout
      --ttl-advice      add what shorter TTLs would free, for large patterns
      --advice-min-share PCT  patterns holding at least PCT% of memory get advice (default 5)
      --help            this text
";

/// Everything the command line sets.
#[derive(Debug, Clone)]
pub struct Options {
    /// Server host.
    pub host: String,
    /// Server port.
    pub port: u16,
    /// AUTH password.
    pub password: Option<String>,
    /// ACL user name.
    pub user: Option<String>,
    /// SELECT db.
    pub db: u32,
    /// Reply timeout.
    pub timeout: Duration,
    /// Keys inspected per second (0: unlimited).
    pub rate: u64,
    /// Keys per pipelined batch.
    pub batch: usize,
    /// SCAN COUNT.
    pub scan_count: usize,
    /// SCAN MATCH.
    pub match_glob: Option<String>,
    /// `--sample N`.
    pub sample: Option<u64>,
    /// `--sample-method`.
    pub sample_method: SampleMethod,
    /// `--seed`.
    pub seed: Option<u64>,
    /// `--memory-samples`.
    pub memory_samples: Option<u64>,
    /// Draw the progress bar.
    pub progress: bool,
    /// Separators for pattern inference.
    pub separators: String,
    /// `--rule`s in order.
    pub rules: Vec<Rule>,
    /// `--max-literals`.
    pub max_literals: usize,
    /// `--top`.
    pub top: usize,
    /// Output format.
    pub format: Format,
    /// `--ttl-advice`.
    pub ttl_advice: bool,
    /// `--advice-min-share`, as a fraction.
    pub advice_min_share: f64,
}

/// How `--sample` picks keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SampleMethod {
    /// Uniform subset of a keys-only SCAN walk (exact population, no repeats).
    Scan,
    /// RANDOMKEY draws (no full walk at all; population from DBSIZE).
    RandomKey,
}

/// Output format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// Aligned text table.
    Table,
    /// One JSON document.
    Json,
    /// CSV, one row per pattern.
    Csv,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            host: "127.0.0.1".into(),
            port: 6379,
            password: None,
            user: None,
            db: 0,
            timeout: Duration::from_secs(10),
            rate: 25_000,
            batch: 256,
            scan_count: 1000,
            match_glob: None,
            sample: None,
            sample_method: SampleMethod::Scan,
            seed: None,
            memory_samples: None,
            progress: true,
            separators: DEFAULT_SEPARATORS.into(),
            rules: Vec::new(),
            max_literals: 50,
            top: 30,
            format: Format::Table,
            ttl_advice: false,
            advice_min_share: 0.05,
        }
    }
}

/// Why the command line was not accepted.
#[derive(Debug, PartialEq, Eq)]
pub enum CliError {
    /// `--help`.
    Help,
    /// A bad option, with the message to print.
    Bad(String),
}

fn number<T: std::str::FromStr>(flag: &str, v: &str) -> Result<T, CliError> {
    v.parse()
        .map_err(|_| CliError::Bad(format!("{flag}: not a valid number: {v:?}")))
}

/// Parses the arguments (without the program name). The environment is
/// read only for `REDISCLI_AUTH`, passed in as `env_password`.
pub fn parse(args: &[String], env_password: Option<String>) -> Result<Options, CliError> {
    let mut o = Options {
        password: env_password,
        ..Options::default()
    };
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        let (flag, inline) = match arg.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f, Some(v.to_string())),
            _ => (arg.as_str(), None),
        };
        let mut value = || -> Result<String, CliError> {
            match &inline {
                Some(v) => Ok(v.clone()),
                None => it
                    .next()
                    .cloned()
                    .ok_or_else(|| CliError::Bad(format!("{flag} needs a value"))),
            }
        };
        match flag {
            "--help" => return Err(CliError::Help),
            "-h" | "--host" => o.host = value()?,
            "-p" | "--port" => o.port = number(flag, &value()?)?,
            "-a" | "--password" | "--pass" => o.password = Some(value()?),
            "--user" => o.user = Some(value()?),
            "-n" | "--db" => o.db = number(flag, &value()?)?,
            "--timeout" => {
                let secs: f64 = number(flag, &value()?)?;
                if !(secs > 0.0 && secs.is_finite()) {
                    return Err(CliError::Bad("--timeout must be positive".into()));
                }
                o.timeout = Duration::from_secs_f64(secs);
            }
            "--rate" => o.rate = number(flag, &value()?)?,
            "--batch" => o.batch = number(flag, &value()?)?,
            "--count" => o.scan_count = number(flag, &value()?)?,
            "--match" => o.match_glob = Some(value()?),
            "--sample" => o.sample = Some(number(flag, &value()?)?),
            "--sample-method" => {
                o.sample_method = match value()?.as_str() {
                    "scan" => SampleMethod::Scan,
                    "randomkey" => SampleMethod::RandomKey,
                    other => {
                        return Err(CliError::Bad(format!(
                            "--sample-method: expected scan or randomkey, got {other:?}"
                        )))
                    }
                }
            }
            "--seed" => o.seed = Some(number(flag, &value()?)?),
            "--memory-samples" => o.memory_samples = Some(number(flag, &value()?)?),
            "-q" | "--quiet" => o.progress = false,
            "--separators" => o.separators = value()?,
            "--rule" => o.rules.push(Rule::parse(&value()?).map_err(CliError::Bad)?),
            "--max-literals" => o.max_literals = number(flag, &value()?)?,
            "--top" => o.top = number(flag, &value()?)?,
            "--json" => o.format = Format::Json,
            "--csv" => o.format = Format::Csv,
            "--ttl-advice" => o.ttl_advice = true,
            "--advice-min-share" => {
                let pct: f64 = number(flag, &value()?)?;
                o.advice_min_share = pct / 100.0;
            }
            other => {
                return Err(CliError::Bad(format!(
                    "unknown option {other:?} (see --help)"
                )))
            }
        }
    }
    if o.batch == 0 || o.scan_count == 0 {
        return Err(CliError::Bad(
            "--batch and --count must be at least 1".into(),
        ));
    }
    if o.sample == Some(0) {
        return Err(CliError::Bad("--sample must be at least 1".into()));
    }
    if o.sample_method == SampleMethod::RandomKey && o.match_glob.is_some() {
        return Err(CliError::Bad(
            "--match cannot be combined with --sample-method randomkey (DBSIZE counts every key)"
                .into(),
        ));
    }
    Ok(o)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(s: &str) -> Vec<String> {
        s.split_whitespace().map(str::to_string).collect()
    }

    #[test]
    fn redis_cli_style_flags() {
        let o = parse(
            &args("-h 10.0.0.1 -p 7000 -a pw -n 3 --json --rate 0"),
            None,
        )
        .unwrap();
        assert_eq!((o.host.as_str(), o.port, o.db), ("10.0.0.1", 7000, 3));
        assert_eq!(o.password.as_deref(), Some("pw"));
        assert_eq!((o.format, o.rate), (Format::Json, 0));
        let o = parse(
            &args("--rule=^x=y --sample 100 --ttl-advice"),
            Some("env".into()),
        )
        .unwrap();
        assert_eq!(o.rules.len(), 1);
        assert_eq!(o.sample, Some(100));
        assert!(o.ttl_advice);
        assert_eq!(o.password.as_deref(), Some("env"));
    }

    #[test]
    fn bad_lines_are_refused() {
        assert_eq!(parse(&args("--help"), None).unwrap_err(), CliError::Help);
        assert!(matches!(parse(&args("-p"), None), Err(CliError::Bad(_))));
        assert!(matches!(parse(&args("-p x"), None), Err(CliError::Bad(_))));
        assert!(matches!(
            parse(&args("--bogus"), None),
            Err(CliError::Bad(_))
        ));
        assert!(matches!(
            parse(&args("--rule nope"), None),
            Err(CliError::Bad(_))
        ));
        assert!(matches!(
            parse(
                &args("--sample 5 --sample-method randomkey --match a*"),
                None
            ),
            Err(CliError::Bad(_))
        ));
    }
}
