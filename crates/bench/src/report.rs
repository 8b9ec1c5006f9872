//! The HTML report: one self-contained page (inline SVG and CSS, no script,
//! no CDN) with time-aligned charts — memory vs maxmemory, evictions/s,
//! ops/s, latency percentiles on a log axis, slow requests, CPU — and the
//! summary table. With `--compare` every chart holds both servers'
//! timelines (second server dashed) and the table shows the ratio.
//! Hovering a second shows that second's values (SVG `<title>`).

use std::fmt::Write as _;
use std::path::Path;

use crate::run::RunOutput;
use crate::summary::{fmt_value, summarize, Summary};
use crate::timeline::Row;

const W: f64 = 980.0;
const H: f64 = 190.0;
const ML: f64 = 70.0;
const MR: f64 = 20.0;
const MT: f64 = 10.0;
const MB: f64 = 28.0;

struct Series {
    name: String,
    color: &'static str,
    dashed: bool,
    values: Vec<Option<f64>>,
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

fn nice_max(v: f64) -> f64 {
    if v <= 0.0 {
        return 1.0;
    }
    let p = 10f64.powf(v.log10().floor());
    for m in [1.0, 2.0, 2.5, 5.0, 10.0] {
        if m * p >= v {
            return m * p;
        }
    }
    10.0 * p
}

fn label(v: f64) -> String {
    if v >= 1e6 {
        format!("{:.1}M", v / 1e6)
    } else if v >= 1e4 {
        format!("{:.0}k", v / 1e3)
    } else if v >= 100.0 || v.fract() == 0.0 {
        format!("{v:.0}")
    } else if v >= 1.0 {
        format!("{v:.1}")
    } else {
        format!("{v}")
    }
}

/// One chart. `log` uses a log10 y axis (latency).
fn chart(title: &str, unit: &str, series: &[Series], xmax: usize, log: bool) -> String {
    let pw = W - ML - MR;
    let ph = H - MT - MB;
    let all: Vec<f64> = series
        .iter()
        .flat_map(|s| s.values.iter().flatten().copied())
        .filter(|v| v.is_finite())
        .collect();
    let vmax = all.iter().cloned().fold(0.0, f64::max);
    let (lo, hi) = if log {
        let minpos = all
            .iter()
            .cloned()
            .filter(|v| *v > 0.0)
            .fold(f64::MAX, f64::min);
        let lo = if minpos == f64::MAX {
            0.01
        } else {
            10f64.powf(minpos.log10().floor())
        };
        let hi = 10f64.powf(vmax.max(lo * 10.0).log10().ceil());
        (lo, hi)
    } else {
        (0.0, nice_max(vmax * 1.05))
    };
    let x = |i: f64| ML + pw * i / xmax.max(1) as f64;
    let y = |v: f64| {
        let f = if log {
            (v.max(lo).log10() - lo.log10()) / (hi.log10() - lo.log10())
        } else {
            (v - lo) / (hi - lo)
        };
        MT + ph * (1.0 - f.clamp(0.0, 1.0))
    };
    let mut svg = String::new();
    let _ = write!(svg, "<h3>{}</h3><div class='legend'>", esc(title));
    for s in series {
        let _ = write!(
            svg,
            "<span><svg width='26' height='10'><line x1='0' y1='5' x2='26' y2='5' stroke='{}' stroke-width='2' {}/></svg> {}</span>",
            s.color,
            if s.dashed { "stroke-dasharray='5,3'" } else { "" },
            esc(&s.name)
        );
    }
    let _ = write!(
        svg,
        "</div><svg class='chart' viewBox='0 0 {W} {H}' width='{W}' height='{H}'>"
    );
    // Grid and y labels.
    let ticks: Vec<f64> = if log {
        let mut t = Vec::new();
        let mut v = lo;
        while v <= hi * 1.0001 {
            t.push(v);
            v *= 10.0;
        }
        t
    } else {
        (0..=4).map(|i| lo + (hi - lo) * i as f64 / 4.0).collect()
    };
    for t in ticks {
        let yy = y(t);
        let _ = write!(
            svg,
            "<line x1='{ML}' y1='{yy:.1}' x2='{}' y2='{yy:.1}' class='grid' /><text x='{}' y='{:.1}' class='yl'>{} {}</text>",
            ML + pw,
            ML - 4.0,
            yy + 4.0,
            label(t),
            esc(unit)
        );
    }
    let step = [1usize, 5, 10, 15, 30, 60, 120, 300, 600]
        .iter()
        .copied()
        .find(|s| xmax / s <= 12)
        .unwrap_or(600);
    let mut t = 0;
    while t <= xmax {
        let xx = x(t as f64);
        let _ = write!(
            svg,
            "<line x1='{xx:.1}' y1='{MT}' x2='{xx:.1}' y2='{}' class='grid' /><text x='{xx:.1}' y='{}' class='xl'>{t}s</text>",
            MT + ph,
            H - 8.0
        );
        t += step;
    }
    for s in series {
        let mut d = String::new();
        let mut pen = false;
        for (i, v) in s.values.iter().enumerate() {
            match v {
                Some(v) if v.is_finite() && (!log || *v > 0.0) => {
                    let _ = write!(
                        d,
                        "{}{:.1},{:.1} ",
                        if pen { "L" } else { "M" },
                        x(i as f64 + 1.0),
                        y(*v)
                    );
                    pen = true;
                }
                _ => pen = false,
            }
        }
        let _ = write!(
            svg,
            "<path d='{d}' fill='none' stroke='{}' stroke-width='1.6' {}/>",
            s.color,
            if s.dashed {
                "stroke-dasharray='5,3'"
            } else {
                ""
            }
        );
    }
    // Hover targets: one column per second with every series' value.
    let n = series.iter().map(|s| s.values.len()).max().unwrap_or(0);
    for i in 0..n {
        let mut tip = format!("t={}s", i + 1);
        for s in series {
            if let Some(Some(v)) = s.values.get(i) {
                let _ = write!(tip, "\n{}: {}", s.name, label_exact(*v));
            }
        }
        let _ = write!(
            svg,
            "<rect x='{:.1}' y='{MT}' width='{:.2}' height='{ph}' class='hov'><title>{}</title></rect>",
            x(i as f64 + 0.5),
            pw / xmax.max(1) as f64,
            esc(&tip)
        );
    }
    svg.push_str("</svg>");
    svg
}

fn label_exact(v: f64) -> String {
    if v.fract() == 0.0 || v.abs() >= 100.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.3}")
    }
}

const COLORS: [[&str; 4]; 2] = [
    ["#1f77b4", "#2ca02c", "#9467bd", "#d62728"],
    ["#ff7f0e", "#17becf", "#8c564b", "#e377c2"],
];

fn col(rows: &[Row], f: impl Fn(&Row) -> Option<f64>) -> Vec<Option<f64>> {
    rows.iter().map(f).collect()
}

fn srv(r: &Row, k: &str) -> Option<f64> {
    r.server.values.get(k).copied()
}

/// Renders the whole page for one or more runs.
pub fn render(runs: &[RunOutput], title: &str, description: &str) -> String {
    let xmax = runs.iter().map(|r| r.rows.len()).max().unwrap_or(1).max(1);
    let multi = runs.len() > 1;
    let name = |r: &RunOutput, what: &str| {
        if multi {
            format!("{} {what}", r.name)
        } else {
            what.to_string()
        }
    };
    let mut charts = String::new();
    let mb = |v: Option<f64>| v.map(|b| b / 1048576.0);

    let mut s = Vec::new();
    for (k, r) in runs.iter().enumerate() {
        let c = COLORS[k % 2];
        let dashed = k % 2 == 1;
        s.push(Series {
            name: name(r, "used_memory (max in second)"),
            color: c[0],
            dashed,
            values: col(&r.rows, |x| mb(srv(x, "used_memory_max"))),
        });
        s.push(Series {
            name: name(r, "used_memory (min in second)"),
            color: c[1],
            dashed,
            values: col(&r.rows, |x| mb(srv(x, "used_memory_min"))),
        });
        s.push(Series {
            name: name(r, "maxmemory"),
            color: c[3],
            dashed: true,
            values: col(&r.rows, |x| mb(srv(x, "maxmemory").filter(|m| *m > 0.0))),
        });
        s.push(Series {
            name: name(r, "client buffers (mem_clients_normal)"),
            color: c[2],
            dashed,
            values: col(&r.rows, |x| mb(srv(x, "mem_clients_normal"))),
        });
        // What the operating system sees: the figure a memory bound is
        // about (`maxmemory` + `maxmemory-clients` + fixed overhead).
        s.push(Series {
            name: name(r, "RSS (used_memory_rss)"),
            color: c[0],
            dashed: true,
            values: col(&r.rows, |x| mb(srv(x, "used_memory_rss"))),
        });
    }
    charts.push_str(&chart("Memory vs maxmemory", "MB", &s, xmax, false));

    let mut s = Vec::new();
    for (k, r) in runs.iter().enumerate() {
        let c = COLORS[k % 2];
        s.push(Series {
            name: name(r, "evicted keys/s"),
            color: c[3],
            dashed: k % 2 == 1,
            values: col(&r.rows, |x| srv(x, "evicted_keys")),
        });
        s.push(Series {
            name: name(r, "expired keys/s"),
            color: c[1],
            dashed: k % 2 == 1,
            values: col(&r.rows, |x| srv(x, "expired_keys")),
        });
    }
    charts.push_str(&chart(
        "Evictions and expirations per second",
        "",
        &s,
        xmax,
        false,
    ));

    let mut s = Vec::new();
    for (k, r) in runs.iter().enumerate() {
        let c = COLORS[k % 2];
        s.push(Series {
            name: name(r, "ops/s (replies)"),
            color: c[0],
            dashed: k % 2 == 1,
            values: col(&r.rows, |x| Some(x.client.ops as f64)),
        });
        s.push(Series {
            name: name(r, "errors/s"),
            color: c[3],
            dashed: k % 2 == 1,
            values: col(&r.rows, |x| Some(x.client.error_total() as f64)),
        });
    }
    charts.push_str(&chart("Throughput", "", &s, xmax, false));

    let mut s = Vec::new();
    for (k, r) in runs.iter().enumerate() {
        let c = COLORS[k % 2];
        let d = k % 2 == 1;
        s.push(Series {
            name: name(r, "p50"),
            color: c[1],
            dashed: d,
            values: col(&r.rows, |x| {
                (x.client.ops > 0).then(|| x.client.latency_ms(0.5))
            }),
        });
        s.push(Series {
            name: name(r, "p99"),
            color: c[0],
            dashed: d,
            values: col(&r.rows, |x| {
                (x.client.ops > 0).then(|| x.client.latency_ms(0.99))
            }),
        });
        s.push(Series {
            name: name(r, "p99.9"),
            color: c[2],
            dashed: d,
            values: col(&r.rows, |x| {
                (x.client.ops > 0).then(|| x.client.latency_ms(0.999))
            }),
        });
        s.push(Series {
            name: name(r, "max"),
            color: c[3],
            dashed: d,
            values: col(&r.rows, |x| (x.client.ops > 0).then(|| x.client.max_ms())),
        });
    }
    charts.push_str(&chart(
        "Latency per second, from intended send time (log scale)",
        "ms",
        &s,
        xmax,
        true,
    ));

    let mut s = Vec::new();
    for (k, r) in runs.iter().enumerate() {
        let c = COLORS[k % 2];
        s.push(Series {
            name: name(r, "requests > 100 ms"),
            color: c[3],
            dashed: k % 2 == 1,
            values: col(&r.rows, |x| Some(x.client.slow[1] as f64)),
        });
        s.push(Series {
            name: name(r, "requests > 1 s"),
            color: c[2],
            dashed: k % 2 == 1,
            values: col(&r.rows, |x| Some(x.client.slow[2] as f64)),
        });
    }
    charts.push_str(&chart("Slow requests per second", "", &s, xmax, false));

    let mut s = Vec::new();
    for (k, r) in runs.iter().enumerate() {
        let c = COLORS[k % 2];
        s.push(Series {
            name: name(r, "server main thread CPU"),
            color: c[0],
            dashed: k % 2 == 1,
            values: col(&r.rows, |x| srv(x, "server_main_cpu_pct")),
        });
        s.push(Series {
            name: name(r, "server CPU (all threads)"),
            color: c[1],
            dashed: k % 2 == 1,
            values: col(&r.rows, |x| srv(x, "server_cpu_pct")),
        });
        s.push(Series {
            name: name(r, "keel-bench CPU"),
            color: c[2],
            dashed: k % 2 == 1,
            values: col(&r.rows, |x| x.bench_cpu),
        });
    }
    charts.push_str(&chart("CPU (% of one core)", "%", &s, xmax, false));

    let summaries: Vec<Summary> = runs.iter().map(summarize).collect();
    let mut table = String::from("<table><tr><th>metric</th>");
    for r in runs {
        let _ = write!(table, "<th>{}</th>", esc(&r.name));
    }
    if runs.len() == 2 {
        let _ = write!(
            table,
            "<th>{} / {}</th>",
            esc(&runs[1].name),
            esc(&runs[0].name)
        );
    }
    table.push_str("<th>unit</th></tr>");
    if let Some(first) = summaries.first() {
        for (i, it) in first.items.iter().enumerate() {
            if summaries.iter().all(|s| s.items[i].value.is_none()) {
                continue;
            }
            let _ = write!(table, "<tr><td>{}</td>", esc(it.label));
            for s in &summaries {
                let _ = write!(
                    table,
                    "<td class=n>{}</td>",
                    fmt_value(s.items[i].value, it.unit)
                );
            }
            if summaries.len() == 2 {
                let _ = write!(
                    table,
                    "<td class=n>{}</td>",
                    ratio(summaries[0].items[i].value, summaries[1].items[i].value)
                );
            }
            let _ = write!(table, "<td>{}</td></tr>", esc(it.unit));
        }
    }
    table.push_str("</table>");

    let mut details = String::new();
    for (r, s) in runs.iter().zip(&summaries) {
        let _ = write!(
            details,
            "<h3>{}: {}</h3><p>{} connections, pipeline {}, {}.</p>",
            esc(&r.name),
            esc(&r.addr),
            r.load.connections,
            r.load.pipeline,
            match r.rate {
                Some(rate) => format!("open loop at {rate:.0} req/s"),
                None => "closed loop".into(),
            }
        );
        if s.errors.is_empty() {
            details.push_str("<p>No errors.</p>");
        } else {
            details.push_str(
                "<table><tr><th>error kind</th><th>count</th><th>first message</th></tr>",
            );
            for (k, v) in &s.errors {
                let _ = write!(
                    details,
                    "<tr><td>{}</td><td class=n>{v}</td><td>{}</td></tr>",
                    esc(k),
                    esc(r.error_examples.get(k).map(|s| s.as_str()).unwrap_or(""))
                );
            }
            details.push_str("</table>");
        }
        for n in &r.notes {
            let _ = write!(details, "<p class=note>{}</p>", esc(n));
        }
    }

    format!(
        "<!DOCTYPE html><html><head><meta charset=utf-8><title>{t}</title><style>
body{{font:14px system-ui,sans-serif;margin:20px;color:#222;max-width:1020px}}
h1{{font-size:20px}} h3{{font-size:15px;margin:18px 0 2px}}
.legend span{{margin-right:14px;font-size:12px;white-space:nowrap}}
.chart .grid{{stroke:#e4e4e4}} .chart text{{font-size:11px;fill:#555}}
.chart .yl{{text-anchor:end}} .chart .xl{{text-anchor:middle}}
.chart .hov{{fill:transparent}} .chart .hov:hover{{fill:rgba(0,0,0,.06)}}
table{{border-collapse:collapse;margin:8px 0}} td,th{{border:1px solid #ddd;padding:3px 8px;text-align:left}}
td.n{{text-align:right;font-variant-numeric:tabular-nums}} .note{{color:#a00}}
pre{{white-space:pre-wrap;background:#f6f6f6;padding:8px}}
</style></head><body><h1>{t}</h1><pre>{d}</pre>
<p>All charts share the time axis (seconds of the measured phase). Latency is measured from each request's
<em>intended</em> send time (open loop), so a stall shows up as latency rather than as missing requests.
Hover a chart to read one second's values.</p>
{charts}<h2>Summary</h2>{table}{details}</body></html>
",
        t = esc(title),
        d = esc(description),
    )
}

/// `b / a`, formatted.
pub fn ratio(a: Option<f64>, b: Option<f64>) -> String {
    match (a, b) {
        (Some(a), Some(b)) if a != 0.0 => format!("{:.2}×", b / a),
        _ => "-".into(),
    }
}

/// Writes the report, creating parent directories.
pub fn write(
    runs: &[RunOutput],
    title: &str,
    description: &str,
    path: &Path,
) -> std::io::Result<()> {
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent)?;
    }
    std::fs::write(path, render(runs, title, description))
}
