//! Geohashes, and the area search that Redis's GEO commands run over a
//! sorted set.
//!
//! A point is stored as a sorted-set member whose score is its 52-bit
//! geohash, so that nearby points have nearby scores. Longitude in
//! [-180, 180] and latitude in [-85.05112878, 85.05112878] (the limits of
//! the Web Mercator projection, EPSG:3857) are each scaled to a 26-bit cell
//! index, and the two indexes are interleaved bit by bit, latitude in the
//! even bits and longitude in the odd ones. The first 2k bits of a hash
//! name the cell of "step" k containing the point, so every point of a
//! cell has a score in one contiguous range, found with two rank queries.
//! A point decodes to the centre of its 26-step cell (about 0.6 m wide at
//! the equator): that, not the coordinates given, is what GEOPOS returns
//! and what distances are measured from.
//!
//! An area search (a circle or a box around a centre) works as Redis's
//! does, because which points it finds near the edges, and in what order,
//! must be the same:
//!
//! 1. Bound the shape with a latitude/longitude box, widened on the side
//!    away from the equator where meridians converge.
//! 2. Estimate the coarsest step whose cells are at least as large as the
//!    search radius (the box's half-diagonal), a little coarser near the
//!    poles, and one coarser again if a neighbour cell of the centre's
//!    does not reach the bounding box.
//! 3. Take the centre's cell and its eight neighbours, dropping those the
//!    bounding box does not reach, and a neighbour equal to the one
//!    searched just before it (at very coarse steps they coincide).
//! 4. Walk each cell's score range and keep the points whose haversine
//!    distance puts them inside the shape.
//!
//! The trade-off is Redis's: nine range scans, each over a cell that may
//! be much larger than the shape, cost O(N + log M) for the N points in
//! those cells, with no index beyond the sorted set itself. Distances use
//! the haversine formula on a sphere of the Earth's mean radius (error
//! up to 0.5% against the ellipsoid), computed with the same operations in
//! the same order as Redis so that every float, and so every reply, is
//! identical.
//!
//! Results come back unordered or sorted by distance. A full sort is the
//! stable merge sort glibc's `qsort` runs; when only the nearest (or
//! farthest) few are wanted, Redis sorts just that range with its `pqsort`
//! (Bentley & McIlroy's quicksort, skipping partitions outside the range),
//! which [`sort_by_distance`] reproduces so that points at equal distances
//! come out in the same order too.

use std::borrow::Cow;
use std::cmp::Ordering;
use std::f64::consts::PI;

use crate::types::ZSet;

/// The longitudes a point may have.
pub const LONGITUDE_LIMITS: (f64, f64) = (-180.0, 180.0);
/// The latitudes a point may have: the limits of Web Mercator.
pub const LATITUDE_LIMITS: (f64, f64) = (-85.05112878, 85.05112878);
/// Bits per coordinate in a stored hash.
pub const STEP_MAX: u8 = 26;

/// The sphere the distances are measured on: the Earth's mean radius.
const EARTH_RADIUS_IN_METERS: f64 = 6372797.560856;
/// Half the Earth's circumference in Web Mercator, in meters.
const MERCATOR_MAX: f64 = 20037726.37;
/// Degrees to radians.
const DEGREES_TO_RADIANS: f64 = PI / 180.0;

fn radians(degrees: f64) -> f64 {
    degrees * DEGREES_TO_RADIANS
}

fn degrees(radians: f64) -> f64 {
    radians / DEGREES_TO_RADIANS
}

/// A cell: the first `2 × step` bits of a geohash.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cell {
    pub bits: u64,
    pub step: u8,
}

/// The coordinates a cell covers.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Area {
    pub longitude: (f64, f64),
    pub latitude: (f64, f64),
}

/// The ranges the coordinates are scaled over: stored hashes use
/// [`LATITUDE_LIMITS`], the standard geohash strings of GEOHASH ±90.
#[derive(Clone, Copy)]
struct Ranges {
    longitude: (f64, f64),
    latitude: (f64, f64),
}

const STORED: Ranges = Ranges {
    longitude: LONGITUDE_LIMITS,
    latitude: LATITUDE_LIMITS,
};

const STANDARD: Ranges = Ranges {
    longitude: (-180.0, 180.0),
    latitude: (-90.0, 90.0),
};

/// True when Redis accepts `(longitude, latitude)` as a point.
pub fn is_valid(longitude: f64, latitude: f64) -> bool {
    (LONGITUDE_LIMITS.0..=LONGITUDE_LIMITS.1).contains(&longitude)
        && (LATITUDE_LIMITS.0..=LATITUDE_LIMITS.1).contains(&latitude)
}

/// Spreads the 32 bits of `x` over the even bits of the result and those
/// of `y` over the odd bits.
fn interleave(x: u32, y: u32) -> u64 {
    fn spread(v: u32) -> u64 {
        let mut v = u64::from(v);
        v = (v | (v << 16)) & 0x0000_FFFF_0000_FFFF;
        v = (v | (v << 8)) & 0x00FF_00FF_00FF_00FF;
        v = (v | (v << 4)) & 0x0F0F_0F0F_0F0F_0F0F;
        v = (v | (v << 2)) & 0x3333_3333_3333_3333;
        (v | (v << 1)) & 0x5555_5555_5555_5555
    }
    spread(x) | (spread(y) << 1)
}

/// The inverse of [`interleave`]: (even bits, odd bits).
fn deinterleave(v: u64) -> (u32, u32) {
    fn gather(mut v: u64) -> u32 {
        v &= 0x5555_5555_5555_5555;
        v = (v | (v >> 1)) & 0x3333_3333_3333_3333;
        v = (v | (v >> 2)) & 0x0F0F_0F0F_0F0F_0F0F;
        v = (v | (v >> 4)) & 0x00FF_00FF_00FF_00FF;
        v = (v | (v >> 8)) & 0x0000_FFFF_0000_FFFF;
        v = (v | (v >> 16)) & 0x0000_0000_FFFF_FFFF;
        v as u32
    }
    (gather(v), gather(v >> 1))
}

/// The cell of `step` holding the point, scaled over `ranges`; `None`
/// for a point outside the limits.
fn encode_in(ranges: Ranges, longitude: f64, latitude: f64, step: u8) -> Option<Cell> {
    let in_range = |v: f64, (min, max): (f64, f64)| v >= min && v <= max;
    if !is_valid(longitude, latitude)
        || !in_range(latitude, ranges.latitude)
        || !in_range(longitude, ranges.longitude)
    {
        return None;
    }
    let cells = (1u64 << step) as f64;
    let offset = |v: f64, (min, max): (f64, f64)| (v - min) / (max - min) * cells;
    // Truncation towards zero, as C's conversion to an unsigned integer;
    // the maximum of a range gives 2^step, which spills one bit over.
    let latitude = offset(latitude, ranges.latitude) as u32;
    let longitude = offset(longitude, ranges.longitude) as u32;
    Some(Cell {
        bits: interleave(latitude, longitude),
        step,
    })
}

/// The cell of `step` holding a valid point.
pub fn encode(longitude: f64, latitude: f64, step: u8) -> Option<Cell> {
    encode_in(STORED, longitude, latitude, step)
}

/// The coordinates `cell` covers, scaled over `ranges`.
fn decode_in(ranges: Ranges, cell: Cell) -> Area {
    let (latitude, longitude) = deinterleave(cell.bits);
    let cells = (1u64 << cell.step) as f64;
    // The index is 32 bits wide, as in Redis, so index + 1 wraps.
    let at = |index: u32, (min, max): (f64, f64)| min + (f64::from(index) / cells) * (max - min);
    let span = |index: u32, range| (at(index, range), at(index.wrapping_add(1), range));
    Area {
        longitude: span(longitude, ranges.longitude),
        latitude: span(latitude, ranges.latitude),
    }
}

/// The coordinates `cell` covers.
pub fn decode(cell: Cell) -> Area {
    decode_in(STORED, cell)
}

/// The centre of `area`, held within the limits.
fn centre(area: Area) -> (f64, f64) {
    let middle = |(min, max): (f64, f64), (low, high): (f64, f64)| {
        let m = (min + max) / 2.0;
        if m > high {
            high
        } else if m < low {
            low
        } else {
            m
        }
    };
    (
        middle(area.longitude, LONGITUDE_LIMITS),
        middle(area.latitude, LATITUDE_LIMITS),
    )
}

/// A double converted to `u64` as Redis's `(uint64_t)` cast compiles on
/// x86-64: values from 2^63 on through the signed conversion of
/// `x - 2^63` with the top bit flipped, anything the signed conversion
/// cannot hold (negatives beyond `i64`, NaN, huge values) as 2^63 there.
/// Scores that are not geohashes (set with ZADD) decode as in Redis.
fn c_cast_to_u64(x: f64) -> u64 {
    const TWO_63: f64 = 9_223_372_036_854_775_808.0;
    let signed = |v: f64| {
        if (-TWO_63..TWO_63).contains(&v) {
            v as i64 as u64
        } else {
            1 << 63
        }
    };
    if x < TWO_63 {
        signed(x)
    } else {
        signed(x - TWO_63) ^ (1 << 63)
    }
}

/// The point a stored score stands for: the centre of its cell,
/// `(longitude, latitude)`.
pub fn decode_score(score: f64) -> (f64, f64) {
    centre(decode(Cell {
        bits: c_cast_to_u64(score),
        step: STEP_MAX,
    }))
}

/// The cell's bits aligned to the 52 bits of a stored score.
fn align52(cell: Cell) -> u64 {
    cell.bits << (52 - 2 * u32::from(cell.step))
}

/// The score a valid point is stored with.
pub fn score_of(longitude: f64, latitude: f64) -> Option<u64> {
    encode(longitude, latitude, STEP_MAX).map(align52)
}

/// The 11-character standard geohash of a stored score, as GEOHASH gives
/// it: the point re-encoded over ±90 degrees of latitude, 52 bits in 10
/// characters and a final '0'.
pub fn geohash_string(score: f64) -> [u8; 11] {
    const ALPHABET: &[u8; 32] = b"0123456789bcdefghjkmnpqrstuvwxyz";
    let (longitude, latitude) = decode_score(score);
    let bits = encode_in(STANDARD, longitude, latitude, STEP_MAX).map_or(0, |c| c.bits);
    let mut text = [b'0'; 11];
    for (i, c) in text.iter_mut().take(10).enumerate() {
        *c = ALPHABET[((bits >> (52 - (i + 1) * 5)) & 0x1f) as usize];
    }
    text
}

/// The cell `east` (+1) or `west` (-1) of `cell`, wrapping around.
fn move_x(cell: Cell, d: i8) -> Cell {
    move_along(cell, d, 0xaaaa_aaaa_aaaa_aaaa)
}

/// The cell north (+1) or south (-1) of `cell`, wrapping around.
fn move_y(cell: Cell, d: i8) -> Cell {
    move_along(cell, d, 0x5555_5555_5555_5555)
}

/// Adds `d` to the coordinate held in the bits of `mask`, carrying
/// through the other coordinate's bits by filling them with ones.
fn move_along(cell: Cell, d: i8, mask: u64) -> Cell {
    if d == 0 {
        return cell;
    }
    let unused = 64 - 2 * u32::from(cell.step);
    let moved = cell.bits & mask;
    let kept = cell.bits & !mask;
    let others = !mask >> unused;
    let moved = if d > 0 {
        moved.wrapping_add(others + 1)
    } else {
        (moved | others).wrapping_sub(others + 1)
    };
    Cell {
        bits: (moved & (mask >> unused)) | kept,
        step: cell.step,
    }
}

/// The shape of an area search.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Extent {
    /// Points within this distance of the centre.
    Radius(f64),
    /// Points within an axis-aligned box this wide and high.
    Box { width: f64, height: f64 },
}

/// An area search: the shape, in the unit the caller gave, and how many
/// meters that unit is.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Shape {
    pub longitude: f64,
    pub latitude: f64,
    pub extent: Extent,
    pub meters_per_unit: f64,
}

/// Haversine distance in meters between two points, in degrees.
pub fn distance(lon1: f64, lat1: f64, lon2: f64, lat2: f64) -> f64 {
    let v = ((radians(lon2) - radians(lon1)) / 2.0).sin();
    // On one meridian the formula reduces to the difference of latitudes.
    if v == 0.0 {
        return latitude_distance(lat1, lat2);
    }
    let (lat1, lat2) = (radians(lat1), radians(lat2));
    let u = ((lat2 - lat1) / 2.0).sin();
    let a = u * u + lat1.cos() * lat2.cos() * v * v;
    2.0 * EARTH_RADIUS_IN_METERS * a.sqrt().asin()
}

/// Distance in meters between two latitudes on one meridian.
fn latitude_distance(lat1: f64, lat2: f64) -> f64 {
    EARTH_RADIUS_IN_METERS * (radians(lat2) - radians(lat1)).abs()
}

/// The step whose cells are about as large as `radius` meters, a little
/// coarser towards the poles where cells narrow.
fn steps_for_radius(mut radius: f64, latitude: f64) -> u8 {
    if radius == 0.0 {
        return STEP_MAX;
    }
    let mut step: i32 = 1;
    while radius < MERCATOR_MAX {
        radius *= 2.0;
        step += 1;
    }
    step -= 2;
    if !(-66.0..=66.0).contains(&latitude) {
        step -= 1;
        if !(-80.0..=80.0).contains(&latitude) {
            step -= 1;
        }
    }
    step.clamp(1, i32::from(STEP_MAX)) as u8
}

/// The nine cells an area search scans, in Redis's order: the centre's,
/// then north, south, east, west, north-east, north-west, south-east,
/// south-west; `None` for those the search does not need.
pub type Cells = [Option<Cell>; 9];

impl Shape {
    /// Half the extent in meters: (north-south, east-west).
    fn half_extent(&self) -> (f64, f64) {
        let (height, width) = match self.extent {
            Extent::Radius(r) => (r, r),
            Extent::Box { width, height } => (height / 2.0, width / 2.0),
        };
        (self.meters_per_unit * height, self.meters_per_unit * width)
    }

    /// The box of coordinates holding the shape: (min longitude, min
    /// latitude, max longitude, max latitude). Meridians converge away
    /// from the equator, so the longitudes are taken at the edge nearer
    /// the pole.
    fn bounding_box(&self) -> [f64; 4] {
        let (height, width) = self.half_extent();
        let latitude_delta = degrees(height / EARTH_RADIUS_IN_METERS);
        let longitude_delta = |at: f64| degrees(width / EARTH_RADIUS_IN_METERS / radians(at).cos());
        let top = longitude_delta(self.latitude + latitude_delta);
        let bottom = longitude_delta(self.latitude - latitude_delta);
        let delta = if self.latitude < 0.0 { bottom } else { top };
        [
            self.longitude - delta,
            self.latitude - latitude_delta,
            self.longitude + delta,
            self.latitude + latitude_delta,
        ]
    }

    /// The cells to scan (see [`Cells`]).
    pub fn cells(&self) -> Cells {
        let [min_lon, min_lat, max_lon, max_lat] = self.bounding_box();
        let radius = match self.extent {
            Extent::Radius(r) => r,
            Extent::Box { width, height } => {
                ((width / 2.0) * (width / 2.0) + (height / 2.0) * (height / 2.0)).sqrt()
            }
        } * self.meters_per_unit;
        let mut step = steps_for_radius(radius, self.latitude);
        let around = |step| {
            let centre =
                encode(self.longitude, self.latitude, step).unwrap_or(Cell { bits: 0, step });
            (centre, decode(centre))
        };
        let (mut centre, mut area) = around(step);
        // A neighbour that does not reach the bounding box means the cells
        // are too small after all.
        let north = decode(move_y(centre, 1));
        let south = decode(move_y(centre, -1));
        let east = decode(move_x(centre, 1));
        let west = decode(move_x(centre, -1));
        if step > 1
            && (north.latitude.1 < max_lat
                || south.latitude.0 > min_lat
                || east.longitude.1 < max_lon
                || west.longitude.0 > min_lon)
        {
            step -= 1;
            (centre, area) = around(step);
        }
        let at = |dx: i8, dy: i8| Some(move_y(move_x(centre, dx), dy));
        let mut cells = [
            Some(centre),
            at(0, 1),
            at(0, -1),
            at(1, 0),
            at(-1, 0),
            at(1, 1),
            at(-1, 1),
            at(1, -1),
            at(-1, -1),
        ];
        // Drop the neighbours beyond a side of the bounding box.
        if step >= 2 {
            let mut drop = |sides: [usize; 3]| sides.iter().for_each(|&i| cells[i] = None);
            if area.latitude.0 < min_lat {
                drop([2, 8, 7]);
            }
            if area.latitude.1 > max_lat {
                drop([1, 5, 6]);
            }
            if area.longitude.0 < min_lon {
                drop([4, 8, 6]);
            }
            if area.longitude.1 > max_lon {
                drop([3, 7, 5]);
            }
        }
        cells
    }

    /// The distance in meters from the centre to the point, if the point
    /// is inside the shape.
    pub fn distance_if_within(&self, longitude: f64, latitude: f64) -> Option<f64> {
        match self.extent {
            Extent::Radius(r) => {
                let d = distance(self.longitude, self.latitude, longitude, latitude);
                // A NaN distance (rounding at antipodes) counts as inside.
                let outside = d.partial_cmp(&(r * self.meters_per_unit)) == Some(Ordering::Greater);
                (!outside).then_some(d)
            }
            Extent::Box { width, height } => {
                let (width, height) = (width * self.meters_per_unit, height * self.meters_per_unit);
                if latitude_distance(latitude, self.latitude) > height / 2.0
                    || distance(longitude, latitude, self.longitude, latitude) > width / 2.0
                {
                    return None;
                }
                Some(distance(self.longitude, self.latitude, longitude, latitude))
            }
        }
    }
}

/// The scores of the points in `cell`: from the first (included) to the
/// last (excluded).
pub fn score_range(cell: Cell) -> (f64, f64) {
    let next = Cell {
        bits: cell.bits + 1,
        step: cell.step,
    };
    (align52(cell) as f64, align52(next) as f64)
}

/// A point an area search found.
#[derive(Debug, Clone, PartialEq)]
pub struct Found<'z> {
    pub member: Cow<'z, [u8]>,
    pub score: f64,
    pub longitude: f64,
    pub latitude: f64,
    /// Meters from the centre.
    pub distance: f64,
}

/// The points of `zset` inside `shape`, in the order Redis finds them:
/// cell by cell, each in score order. With a `limit` (ANY), the search
/// stops once it has that many.
pub fn search<'z>(zset: &'z ZSet, shape: &Shape, limit: Option<usize>) -> Vec<Found<'z>> {
    let mut found = Vec::new();
    let full = |found: &Vec<Found>| limit.is_some_and(|n| found.len() >= n);
    // The index and cell scanned last. At coarse steps neighbours can
    // coincide: a neighbour equal to the one scanned just before is
    // skipped (as in Redis, not one equal to the centre's cell).
    let mut last: Option<(usize, Cell)> = None;
    for (index, cell) in shape.cells().into_iter().enumerate() {
        let Some(cell) = cell else { continue };
        if last.is_some_and(|(i, c)| i > 0 && c == cell) {
            continue;
        }
        if full(&found) {
            break;
        }
        last = Some((index, cell));
        let (min, max) = score_range(cell);
        let start = zset.count_before(|s, _| s < min);
        for (member, score) in zset.range(start, zset.len()) {
            if score >= max {
                break;
            }
            let (longitude, latitude) = decode_score(score);
            if let Some(distance) = shape.distance_if_within(longitude, latitude) {
                found.push(Found {
                    member,
                    score,
                    longitude,
                    latitude,
                    distance,
                });
                if full(&found) {
                    break;
                }
            }
        }
    }
    found
}

/// How a search's results are ordered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sort {
    Nearest,
    Farthest,
}

/// Redis's comparison of distances: a NaN is "less" than anything, as its
/// comparator finds neither greater nor equal.
fn compare_distance(a: f64, b: f64) -> Ordering {
    if a > b {
        Ordering::Greater
    } else if a == b {
        Ordering::Equal
    } else {
        Ordering::Less
    }
}

/// Orders `found` by distance so that its first `keep` points are those
/// Redis returns, in its order: a stable merge sort of all of them (glibc's
/// `qsort`) when all are kept, else a quicksort of that range only
/// (Redis's `pqsort`).
pub fn sort_by_distance(found: &mut [Found], sort: Sort, keep: usize) {
    let compare = |a: &Found, b: &Found| {
        let order = compare_distance(a.distance, b.distance);
        match sort {
            Sort::Nearest => order,
            Sort::Farthest => order.reverse(),
        }
    };
    if keep >= found.len() {
        merge_sort(found, &compare);
    } else if keep > 0 {
        partial_quicksort(found, &compare, 0, found.len(), keep - 1);
    }
}

/// Top-down merge sort, halves split at n/2, the left element taken on
/// ties: glibc's `msort`.
fn merge_sort<T: Clone>(items: &mut [T], compare: &impl Fn(&T, &T) -> Ordering) {
    let n = items.len();
    if n <= 1 {
        return;
    }
    let half = n / 2;
    merge_sort(&mut items[..half], compare);
    merge_sort(&mut items[half..], compare);
    let mut merged = Vec::with_capacity(n);
    let (mut i, mut j) = (0, half);
    while i < half && j < n {
        if compare(&items[i], &items[j]) != Ordering::Greater {
            merged.push(items[i].clone());
            i += 1;
        } else {
            merged.push(items[j].clone());
            j += 1;
        }
    }
    merged.extend_from_slice(&items[i..half]);
    merged.extend_from_slice(&items[j..n]);
    items.clone_from_slice(&merged);
}

/// The median of three positions, as Bentley & McIlroy pick it.
fn median_of_three<T>(
    items: &[T],
    compare: &impl Fn(&T, &T) -> Ordering,
    a: usize,
    b: usize,
    c: usize,
) -> usize {
    let less = |x: usize, y: usize| compare(&items[x], &items[y]) == Ordering::Less;
    let greater = |x: usize, y: usize| compare(&items[x], &items[y]) == Ordering::Greater;
    if less(a, b) {
        if less(b, c) {
            b
        } else if less(a, c) {
            c
        } else {
            a
        }
    } else if greater(b, c) {
        b
    } else if less(a, c) {
        a
    } else {
        c
    }
}

/// Swaps `items[a..a + n]` with `items[b..b + n]` element by element.
fn swap_blocks<T>(items: &mut [T], a: usize, b: usize, n: usize) {
    (0..n).for_each(|i| items.swap(a + i, b + i));
}

/// Redis's `pqsort` on `items[start..start + n]`: Bentley & McIlroy's
/// three-way quicksort (insertion sort below 7 items, ninther pivot above
/// 40), recursing only into partitions that overlap positions
/// `0..=last_kept`, so those end up as a full sort would leave them.
fn partial_quicksort<T>(
    items: &mut [T],
    compare: &impl Fn(&T, &T) -> Ordering,
    mut start: usize,
    mut n: usize,
    last_kept: usize,
) {
    let overlaps = |start: usize, n: usize| last_kept >= start && n > 0;
    loop {
        let a = start;
        if n < 7 {
            for m in a + 1..a + n {
                let mut l = m;
                while l > a && compare(&items[l - 1], &items[l]) == Ordering::Greater {
                    items.swap(l, l - 1);
                    l -= 1;
                }
            }
            return;
        }
        let mut pivot = a + n / 2;
        if n > 7 {
            let (mut low, mut high) = (a, a + n - 1);
            if n > 40 {
                let d = n / 8;
                low = median_of_three(items, compare, low, low + d, low + 2 * d);
                pivot = median_of_three(items, compare, pivot - d, pivot, pivot + d);
                high = median_of_three(items, compare, high - 2 * d, high - d, high);
            }
            pivot = median_of_three(items, compare, low, pivot, high);
        }
        items.swap(a, pivot);
        // Items equal to the pivot gather at both ends, then move to the
        // middle.
        let (mut pa, mut pb) = (a + 1, a + 1);
        let (mut pc, mut pd) = (a + n - 1, a + n - 1);
        loop {
            while pb <= pc {
                let order = compare(&items[pb], &items[a]);
                if order == Ordering::Greater {
                    break;
                }
                if order == Ordering::Equal {
                    items.swap(pa, pb);
                    pa += 1;
                }
                pb += 1;
            }
            while pb <= pc {
                let order = compare(&items[pc], &items[a]);
                if order == Ordering::Less {
                    break;
                }
                if order == Ordering::Equal {
                    items.swap(pc, pd);
                    pd -= 1;
                }
                pc -= 1;
            }
            if pb > pc {
                break;
            }
            items.swap(pb, pc);
            pb += 1;
            pc -= 1;
        }
        let end = a + n;
        let r = (pa - a).min(pb - pa);
        swap_blocks(items, a, pb - r, r);
        let r = (pd - pc).min(end - pd - 1);
        swap_blocks(items, pb, end - r, r);
        let less = pb - pa;
        if less > 1 && overlaps(a, less) {
            partial_quicksort(items, compare, a, less, last_kept);
        }
        let greater = pd - pc;
        if greater <= 1 {
            return;
        }
        start = end - greater;
        n = greater;
        if !overlaps(start, n) {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::Limits;
    use rand::{Rng, SeedableRng};

    #[test]
    fn scores_match_redis() {
        // Scores Redis 7.0.15 stores (the suite's "Check geoset values").
        for (lon, lat, score) in [
            (-74.0131604, 40.7126674, 1791873972053020u64),
            (-73.9903085, 40.7362513, 1791875485187452),
            (-73.9454966, 40.747533, 1791875804419201),
            (-73.7858139, 40.6428986, 1791895905559723),
            (180.0, 85.05112878, 13510798882111488),
            (-180.0, -85.05112878, 0),
        ] {
            assert_eq!(score_of(lon, lat), Some(score), "{lon},{lat}");
        }
        assert_eq!(score_of(180.1, 0.0), None);
        assert_eq!(score_of(0.0, -85.06), None);
    }

    #[test]
    fn decoding_gives_the_cell_centre_within_limits() {
        let (lon, lat) = decode_score(3387193746301568.0);
        assert_eq!(format!("{lon:.17}"), "16.00000172853469849");
        assert_eq!(format!("{lat:.17}"), "0.00000126736058093");
        assert_eq!(decode_score(13510798882111488.0), (180.0, 85.05112878));
        // Scores that are not geohashes decode as Redis's casts make them.
        let corner = decode_score(0.0);
        assert_eq!(decode_score(1e30), corner);
        assert_eq!(decode_score(-0.5), corner);
        assert_eq!(decode_score(-5.0), (180.0, 85.05112878));
        assert_eq!(decode_score(-1e30), (180.0, corner.1));
        assert_eq!(decode_score(9223372036854775808.0), (180.0, corner.1));
    }

    #[test]
    fn interleaving_round_trips() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(3);
        for _ in 0..1000 {
            let (x, y) = (rng.gen(), rng.gen());
            assert_eq!(deinterleave(interleave(x, y)), (x, y));
        }
        assert_eq!(interleave(1, 0), 1);
        assert_eq!(interleave(0, 1), 2);
    }

    #[test]
    fn geohash_strings_match_the_standard() {
        // Wikipedia's example, as the Redis suite checks it.
        let score = score_of(-5.6, 42.6).unwrap() as f64;
        assert_eq!(&geohash_string(score), b"ezs42e44yx0");
    }

    #[test]
    fn neighbours_are_adjacent_and_wrap() {
        let cell = encode(10.0, 20.0, 10).unwrap();
        let area = decode(cell);
        let east = decode(move_x(cell, 1));
        assert_eq!(east.longitude.0, area.longitude.1);
        assert_eq!(east.latitude, area.latitude);
        let north = decode(move_y(cell, 1));
        assert_eq!(north.latitude.0, area.latitude.1);
        let south_west = decode(move_y(move_x(cell, -1), -1));
        assert_eq!(south_west.longitude.1, area.longitude.0);
        assert_eq!(south_west.latitude.1, area.latitude.0);
        // East of the last column is the first one.
        let edge = encode(179.99, 0.0, 5).unwrap();
        assert_eq!(decode(move_x(edge, 1)).longitude.0, -180.0);
    }

    #[test]
    fn distances_are_haversine() {
        // Palermo to Catania, as Redis's GEODIST gives it.
        let d = distance(13.361389, 38.115556, 15.087269, 37.502669);
        assert!((166274.0..166275.0).contains(&d), "{d}");
        assert_eq!(distance(1.0, 2.0, 1.0, 2.0), 0.0);
        assert_eq!(
            distance(10.0, 20.0, 10.0, 30.0),
            latitude_distance(20.0, 30.0)
        );
    }

    /// A brute-force scan agrees with the area search on random points and
    /// shapes, away from the poles where Redis's search is exact.
    #[test]
    fn search_finds_what_a_scan_finds() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(7);
        let limits = Limits::default();
        let mut zset = ZSet::default();
        for i in 0..3000 {
            let (lon, lat) = (rng.gen_range(-180.0..180.0), rng.gen_range(-70.0..70.0));
            zset.insert(
                format!("p{i}").as_bytes(),
                score_of(lon, lat).unwrap() as f64,
                &limits,
            );
        }
        for round in 0..200 {
            let extent = if round % 2 == 0 {
                Extent::Radius(rng.gen_range(10.0..3000.0))
            } else {
                Extent::Box {
                    width: rng.gen_range(10.0..3000.0),
                    height: rng.gen_range(10.0..3000.0),
                }
            };
            let shape = Shape {
                longitude: rng.gen_range(-180.0..180.0),
                latitude: rng.gen_range(-70.0..70.0),
                extent,
                meters_per_unit: 1000.0,
            };
            let mut got: Vec<Vec<u8>> = search(&zset, &shape, None)
                .into_iter()
                .map(|f| f.member.into_owned())
                .collect();
            got.sort();
            let mut want: Vec<Vec<u8>> = zset
                .range(0, zset.len())
                .filter(|(_, s)| {
                    let (lon, lat) = decode_score(*s);
                    shape.distance_if_within(lon, lat).is_some()
                })
                .map(|(m, _)| m.into_owned())
                .collect();
            want.sort();
            assert_eq!(got, want, "{shape:?}");
        }
    }

    fn found(distance: f64, tag: u8) -> Found<'static> {
        Found {
            member: Cow::Owned(vec![tag]),
            score: 0.0,
            longitude: 0.0,
            latitude: 0.0,
            distance,
        }
    }

    #[test]
    fn sorting_is_stable_and_partial_sorting_keeps_the_head() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(5);
        for _ in 0..300 {
            let n = rng.gen_range(0..120);
            let items: Vec<Found> = (0..n)
                .map(|i| found(f64::from(rng.gen_range(0..20)), i as u8))
                .collect();
            let mut full = items.clone();
            sort_by_distance(&mut full, Sort::Nearest, n);
            let mut want = items.clone();
            want.sort_by(|a, b| a.distance.total_cmp(&b.distance));
            assert_eq!(full, want, "a stable sort");
            let mut far = items.clone();
            sort_by_distance(&mut far, Sort::Farthest, n);
            want.sort_by(|a, b| b.distance.total_cmp(&a.distance));
            assert_eq!(
                far.iter().map(|f| f.distance).collect::<Vec<_>>(),
                want.iter().map(|f| f.distance).collect::<Vec<_>>()
            );
            let keep = rng.gen_range(1..=n.max(1));
            let mut partial = items.clone();
            sort_by_distance(&mut partial, Sort::Nearest, keep);
            let head: Vec<f64> = partial.iter().take(keep).map(|f| f.distance).collect();
            let mut sorted: Vec<f64> = items.iter().map(|f| f.distance).collect();
            sorted.sort_by(f64::total_cmp);
            assert_eq!(head, sorted[..keep.min(n)]);
        }
    }

    #[test]
    fn partial_sort_orders_ties_as_redis_pqsort() {
        // Equal distances in Redis's pqsort come out of its partitioning,
        // not in input order: a three-way partition around 1 swaps the
        // equal items to the front.
        let mut items: Vec<Found> = [2.0, 1.0, 0.0, 1.0, 3.0, 1.0, 5.0, 4.0]
            .iter()
            .enumerate()
            .map(|(i, &d)| found(d, i as u8))
            .collect();
        sort_by_distance(&mut items, Sort::Nearest, 3);
        let head: Vec<(f64, u8)> = items[..3]
            .iter()
            .map(|f| (f.distance, f.member[0]))
            .collect();
        assert_eq!(head[0], (0.0, 2));
        assert!(head[1..].iter().all(|&(d, _)| d == 1.0));
    }
}
