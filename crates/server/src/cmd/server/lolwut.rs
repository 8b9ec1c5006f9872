//! LOLWUT [VERSION version] [arg ...] — computer art, then the version.
//! As Redis 7.0: VERSION 5 draws Georg Nees's "Schotter" (a column of
//! squares growing more disordered row by row) in Braille dots, taking
//! columns, squares per row and squares per column; VERSION 6 draws a
//! city skyline in coloured terminal cells, taking columns and rows; any
//! other version (and none) prints the version line alone. The drawings
//! are keel's own; the reply (a verbatim string in RESP3) and its closing
//! lines are Redis's. Unlike Redis, a drawing is bounded in size
//! ([`MAX_PIXELS`], [`MAX_CELLS`]) whatever the arguments ask for.

use bytes::Bytes;
use rand::Rng;

use crate::cmd::context::{is, parse_i64, Ctx, Error, Spec, BASE, REDIS_COMPAT_VERSION};

/// LOLWUT.
pub const SPEC: Spec = Spec {
    name: "lolwut",
    complexity: "",
    arity: -1,
    flags: &["readonly", "fast"],
    acl: &["@read", "@fast"],
    group: "server",
    summary: "Display some computer art and the Redis version",
    since: "5.0.0",
    run,
    ..BASE
};

/// Dots of a Schotter drawing at most (about 1.5 MB of reply).
const MAX_PIXELS: i64 = 4 << 20;
/// Cells of a skyline at most (about 1 MB of reply).
const MAX_CELLS: i64 = 64 << 10;

fn run(ctx: &mut Ctx, args: &[Bytes]) -> Result<(), Error> {
    let version = match args {
        [_, token, version, ..] if is(token, "version") => parse_i64(version)?,
        _ => 0,
    };
    // A drawing's own arguments follow VERSION n (Redis ignores any more);
    // missing ones default.
    let drawing_args = |count: usize| {
        args.iter()
            .skip(3)
            .take(count)
            .map(|a| parse_i64(a))
            .collect::<Result<Vec<_>, _>>()
    };
    let arg = |given: &[i64], i: usize, default: i64, max: i64| {
        given.get(i).copied().unwrap_or(default).clamp(1, max)
    };
    let text = match version {
        5 => {
            let given = drawing_args(3)?;
            let art = schotter(
                arg(&given, 0, 66, 1000),
                arg(&given, 1, 8, 200),
                arg(&given, 2, 12, 200),
            );
            format!(
                "{art}\nGeorg Nees - schotter, plotter on paper, 1968. Redis ver. {REDIS_COMPAT_VERSION}\n"
            )
        }
        6 => {
            let given = drawing_args(2)?;
            let art = skyline(arg(&given, 0, 80, 1000), arg(&given, 1, 20, 1000));
            format!(
                "{art}Dedicated to the 8 bit game developers of past and present.\n\
                 Original 8 bit image from Plaguemon by hikikomori. Redis ver. {REDIS_COMPAT_VERSION}\n"
            )
        }
        _ => format!("Redis ver. {REDIS_COMPAT_VERSION}\n"),
    };
    ctx.w().verbatim(b"txt", text.as_bytes());
    Ok(())
}

/// A canvas of dots, printed as Braille characters of 2x4 dots each.
struct Canvas {
    width: i64,
    height: i64,
    dots: Vec<bool>,
}

impl Canvas {
    fn new(width: i64, height: i64) -> Canvas {
        Canvas {
            width,
            height,
            dots: vec![false; (width * height) as usize],
        }
    }

    fn set(&mut self, x: i64, y: i64) {
        if (0..self.width).contains(&x) && (0..self.height).contains(&y) {
            self.dots[(y * self.width + x) as usize] = true;
        }
    }

    /// A straight line from (x0, y0) to (x1, y1), Bresenham's way.
    fn line(&mut self, (mut x0, mut y0): (i64, i64), (x1, y1): (i64, i64)) {
        let (dx, dy) = ((x1 - x0).abs(), -(y1 - y0).abs());
        let (sx, sy) = (if x0 < x1 { 1 } else { -1 }, if y0 < y1 { 1 } else { -1 });
        let mut error = dx + dy;
        loop {
            self.set(x0, y0);
            if x0 == x1 && y0 == y1 {
                return;
            }
            let doubled = 2 * error;
            if doubled >= dy {
                error += dy;
                x0 += sx;
            }
            if doubled <= dx {
                error += dx;
                y0 += sy;
            }
        }
    }

    /// One line of text per 4 rows of dots, each ending in a newline
    /// except one starting on the last row of dots (Redis's layout).
    fn render(&self) -> String {
        // The bit of each dot of a cell in a Braille character, by (x, y).
        const BITS: [[u32; 4]; 2] = [[0x01, 0x02, 0x04, 0x40], [0x08, 0x10, 0x20, 0x80]];
        let mut text = String::new();
        for top in (0..self.height).step_by(4) {
            for left in (0..self.width).step_by(2) {
                let mut bits = 0;
                for (dx, column) in BITS.iter().enumerate() {
                    for (dy, bit) in column.iter().enumerate() {
                        let (x, y) = (left + dx as i64, top + dy as i64);
                        if x < self.width
                            && y < self.height
                            && self.dots[(y * self.width + x) as usize]
                        {
                            bits |= bit;
                        }
                    }
                }
                text.push(char::from_u32(0x2800 + bits).unwrap_or(' '));
            }
            if top != self.height - 1 {
                text.push('\n');
            }
        }
        text
    }
}

/// Schotter: `per_row` squares across `columns` characters, `per_column`
/// rows of them, each row turned and shifted at random a little more than
/// the one above.
fn schotter(columns: i64, per_row: i64, per_column: i64) -> String {
    let width = columns * 2;
    let padding = if width > 4 { 2 } else { 0 };
    let side = ((width - 2 * padding) / per_row).max(1);
    let per_column = per_column
        .min((MAX_PIXELS / width - 2 * padding) / side)
        .max(1);
    let mut canvas = Canvas::new(width, side * per_column + 2 * padding);
    let mut rng = rand::thread_rng();
    for row in 0..per_column {
        let disorder = row as f64 / per_column as f64;
        for column in 0..per_row {
            let angle = rng.gen_range(-1.0..=1.0) * disorder * std::f64::consts::FRAC_PI_4;
            let shift = rng.gen_range(-1.0..=1.0) * disorder * side as f64 / 4.0;
            let center_x = (padding + column * side) as f64 + side as f64 / 2.0 + shift;
            let center_y = (padding + row * side) as f64 + side as f64 / 2.0 + shift;
            let half = side as f64 / 2.0;
            let corners: Vec<(i64, i64)> =
                [(-half, -half), (half, -half), (half, half), (-half, half)]
                    .iter()
                    .map(|&(x, y)| {
                        let (sin, cos) = angle.sin_cos();
                        (
                            (center_x + x * cos - y * sin).round() as i64,
                            (center_y + x * sin + y * cos).round() as i64,
                        )
                    })
                    .collect();
            for i in 0..4 {
                canvas.line(corners[i], corners[(i + 1) % 4]);
            }
        }
    }
    canvas.render()
}

/// A skyline of `columns` by `rows` terminal cells: a white sky, grey
/// towers behind and black ones in front, of random widths and heights.
fn skyline(columns: i64, rows: i64) -> String {
    const SKY: &str = "\x1b[0;97;107m \x1b[0m";
    const BACK: &str = "\x1b[0;37;47m \x1b[0m";
    const FRONT: &str = "\x1b[0;30;40m \x1b[0m";
    let rows = rows.min(MAX_CELLS / columns).max(1);
    let mut rng = rand::thread_rng();
    let mut towers = |tallest: i64| {
        let mut heights = Vec::with_capacity(columns as usize);
        while (heights.len() as i64) < columns {
            let width = rng.gen_range(2..=6);
            let height = rng.gen_range(0..=tallest.max(0));
            heights.extend(std::iter::repeat_n(height, width));
        }
        heights
    };
    let back = towers(rows * 3 / 4);
    let front = towers(rows / 2);
    let mut text = String::new();
    for row in 0..rows {
        let from_bottom = rows - row;
        for column in 0..columns as usize {
            text.push_str(if from_bottom <= front[column] {
                FRONT
            } else if from_bottom <= back[column] {
                BACK
            } else {
                SKY
            });
        }
        text.push('\n');
    }
    text
}
