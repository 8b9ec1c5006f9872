//! `keel-keyspace` binary: parse the command line, walk, print. Exit code 0
//! on success, 1 when the server cannot be read (unreachable, password
//! refused, connection lost), 2 for a bad command line.

use std::io::Write;
use std::process::ExitCode;

use keel_keyspace::cli::{self, CliError, Format};
use keel_keyspace::pattern::Inferrer;
use keel_keyspace::{render, report, walk};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let opts = match cli::parse(&args, std::env::var("REDISCLI_AUTH").ok()) {
        Ok(o) => o,
        Err(CliError::Help) => {
            print!("{}", cli::USAGE);
            return ExitCode::SUCCESS;
        }
        Err(CliError::Bad(m)) => {
            eprintln!("keel-keyspace: {m}");
            return ExitCode::from(2);
        }
    };
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("keel-keyspace: cannot start the runtime: {e}");
            return ExitCode::from(1);
        }
    };
    let inferrer = Inferrer::new(&opts.separators, opts.rules.clone());
    let collected = match rt.block_on(walk::collect_all(&opts, &inferrer)) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("keel-keyspace: {e}");
            return ExitCode::from(1);
        }
    };
    let report = report::build(
        collected,
        opts.db,
        inferrer.separators(),
        opts.max_literals,
        opts.ttl_advice,
        opts.advice_min_share,
    );
    let text = match opts.format {
        Format::Table => render::table(&report, opts.top),
        Format::Json => render::json(&report),
        Format::Csv => render::csv(&report),
    };
    let mut out = std::io::stdout().lock();
    if out
        .write_all(text.as_bytes())
        .and_then(|_| out.flush())
        .is_err()
    {
        return ExitCode::from(1);
    }
    ExitCode::SUCCESS
}
