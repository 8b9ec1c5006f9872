//! `keel-bench` binary: parses the command line, runs the scenario against
//! one server (or two with `--compare`), writes CSV / summary / HTML.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::Ordering;

use keel_bench::cli::{self, CliError};
use keel_bench::run::{self, RunOutput, INTERRUPTED};
use keel_bench::{compare, csv, report, summary};

fn per_target(path: &Path, name: &str) -> PathBuf {
    let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or("out");
    let ext = path.extension().and_then(|s| s.to_str()).unwrap_or("csv");
    let safe: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    path.with_file_name(format!("{stem}-{safe}.{ext}"))
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let cli = match cli::parse(&args) {
        Ok(c) => c,
        Err(CliError::Help) => {
            print!("{}", cli::USAGE);
            return ExitCode::SUCCESS;
        }
        Err(CliError::Bad(m)) => {
            eprintln!("keel-bench: {m}");
            return ExitCode::from(2);
        }
    };
    if cli.print_server_args {
        let parts: Vec<String> = cli
            .scenario
            .server_args
            .iter()
            .map(|(k, v)| format!("--{k} {v}"))
            .collect();
        println!("{}", parts.join(" "));
        return ExitCode::SUCCESS;
    }
    let threads = cli.scenario.threads;
    let rt = if threads <= 1 {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
    } else {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(threads)
            .enable_all()
            .build()
    };
    let rt = match rt {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("keel-bench: cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let outputs: Vec<RunOutput> = rt.block_on(async {
        tokio::spawn(async {
            if tokio::signal::ctrl_c().await.is_ok() {
                INTERRUPTED.store(true, Ordering::Relaxed);
            }
        });
        let mut outs = Vec::new();
        for t in &cli.targets {
            if INTERRUPTED.load(Ordering::Relaxed) {
                break;
            }
            outs.push(run::run(&cli.scenario, t, &cli.opts).await);
        }
        outs
    });
    // Let connection tasks that are still closing go without waiting.
    rt.shutdown_background();

    let mut text = String::new();
    for o in &outputs {
        text.push_str(&summary::render(o, &summary::summarize(o)));
    }
    if outputs.len() == 2 {
        text.push_str(&compare::table(&outputs[0], &outputs[1]));
    }
    print!("{text}");
    let mut status = ExitCode::SUCCESS;
    let mut write_failed = |what: &str, p: &Path, e: std::io::Error| {
        eprintln!("keel-bench: cannot write {what} {}: {e}", p.display());
        status = ExitCode::FAILURE;
    };
    if let Some(p) = &cli.summary {
        if let Err(e) = std::fs::write(p, &text) {
            write_failed("summary", p, e);
        }
    }
    if let Some(p) = &cli.csv {
        for o in &outputs {
            let path = if outputs.len() > 1 {
                per_target(p, &o.name)
            } else {
                p.clone()
            };
            match csv::write(o, &path) {
                Ok(()) => eprintln!("-- wrote {}", path.display()),
                Err(e) => write_failed("CSV", &path, e),
            }
        }
    }
    if let Some(p) = &cli.report {
        let names: Vec<&str> = outputs.iter().map(|o| o.name.as_str()).collect();
        let title = format!("keel-bench: {} — {}", cli.scenario.name, names.join(" vs "));
        match report::write(&outputs, &title, &cli.scenario.description, p) {
            Ok(()) => eprintln!("-- wrote {}", p.display()),
            Err(e) => write_failed("report", p, e),
        }
    }
    if outputs.iter().all(|o| o.total().ops == 0) {
        eprintln!("keel-bench: no request succeeded (see errors by kind above)");
        return ExitCode::FAILURE;
    }
    status
}
