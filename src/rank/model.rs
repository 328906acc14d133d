//! The pure logic of RANK: a board's layout, packing points and achievement
//! time into one exact double, decoding it back, the ADD rule and MERGE's
//! aggregation. Nothing here touches Redis; time comes in as a parameter.
//!
//! `packed = points × 10^D + tiebreak`, with `tiebreak = 10^D − 1 − t` for
//! EARLIER, `t` for LATER and `0` for NONE, where `t = (ts − EPOCH)` counted
//! in UNIT and `0 ≤ t < 10^D`. Every packed value is an integer strictly
//! below 2^53 in magnitude, so the double holds it exactly and `ZREVRANGE`
//! on the board is already the leaderboard order: points first, then time.

use std::collections::HashMap;

/// The largest integer a double holds exactly together with all smaller
/// ones: packed values stay strictly below 2^53 in magnitude.
pub const EXACT_MAX: i64 = (1i64 << 53) - 1;
/// The largest DIGITS: 10^16 is already beyond 2^53.
pub const MAX_DIGITS: u32 = 15;
/// The largest TTL in seconds (about 317 years).
pub const MAX_TTL_S: i64 = 10_000_000_000;

/// How equal points are ordered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tiebreak {
    /// Whoever got there first ranks higher.
    Earlier,
    /// Whoever got there last ranks higher.
    Later,
    /// No time is kept: equal points fall back to Redis's member order.
    None,
}

/// The unit `t` is counted in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unit {
    Ms,
    S,
}

impl Tiebreak {
    /// Returns the keyword stored in `B:meta` and accepted by CREATE.
    pub fn name(self) -> &'static str {
        match self {
            Tiebreak::Earlier => "EARLIER",
            Tiebreak::Later => "LATER",
            Tiebreak::None => "NONE",
        }
    }

    /// Parses a keyword (any case).
    pub fn parse(s: &[u8]) -> Option<Tiebreak> {
        [Tiebreak::Earlier, Tiebreak::Later, Tiebreak::None]
            .into_iter()
            .find(|t| t.name().as_bytes().eq_ignore_ascii_case(s))
    }
}

impl Unit {
    /// Returns the keyword stored in `B:meta` and accepted by CREATE.
    pub fn name(self) -> &'static str {
        match self {
            Unit::Ms => "MS",
            Unit::S => "S",
        }
    }

    /// Returns the unit's length in milliseconds.
    pub fn ms(self) -> i64 {
        match self {
            Unit::Ms => 1,
            Unit::S => 1000,
        }
    }

    /// Parses a keyword (any case).
    pub fn parse(s: &[u8]) -> Option<Unit> {
        [Unit::Ms, Unit::S]
            .into_iter()
            .find(|u| u.name().as_bytes().eq_ignore_ascii_case(s))
    }
}

/// What can go wrong with a value on a board.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RankError {
    /// Occurs when points (given or computed) would make a packed value of
    /// 2^53 or more in magnitude; carries the board's limit.
    PointsRange(i64),
    /// Occurs when a time is before EPOCH or needs more than DIGITS digits.
    Timestamp,
    /// Occurs when `B:meta` holds something that is not a layout.
    BadLayout,
}

impl RankError {
    /// Returns the error text after `ERR rank: `.
    pub fn message(&self) -> String {
        match self {
            // ASCII only: error lines stay ASCII (SPEC decision).
            RankError::PointsRange(limit) => {
                format!("points out of exact range (max +/-{limit})")
            }
            RankError::Timestamp => "timestamp out of range".into(),
            RankError::BadLayout => "invalid board layout".into(),
        }
    }
}

/// A board's layout, as stored in `B:meta`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layout {
    pub tiebreak: Tiebreak,
    pub unit: Unit,
    pub digits: u32,
    pub epoch: i64,
    /// LAYOUT WIDE: the score is the points (exact up to ±(2^53 − 1)) and
    /// the achievement time, in unix ms, is a fixed-width prefix of the
    /// stored member (see [`Layout::wide_name`]); UNIT is MS, EPOCH 0 and
    /// DIGITS unused. False for the packed layout (the default).
    pub wide: bool,
}

impl Default for Layout {
    /// TIEBREAK EARLIER, UNIT S, DIGITS 10, EPOCH 0: the layout of a board
    /// that was never created.
    fn default() -> Self {
        Layout {
            tiebreak: Tiebreak::Earlier,
            unit: Unit::S,
            digits: 10,
            epoch: 0,
            wide: false,
        }
    }
}

/// One decoded entry: points and, unless the board is TIEBREAK NONE, the
/// achievement time (unix ms, rounded down to the board's UNIT).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Entry {
    pub points: i64,
    pub achieved_ms: Option<i64>,
}

/// The bytes before the member in a name stored on a LAYOUT WIDE board:
/// 16 digits and `:`.
pub const WIDE_PREFIX: usize = 17;
/// 10^16: the span of the 16 digits of a LAYOUT WIDE prefix.
const WIDE_SPAN: i64 = 10_000_000_000_000_000;

/// The `B:meta` field that holds the layout, as
/// `"<TIEBREAK> <UNIT> <DIGITS> <EPOCH>"`, e.g. `"EARLIER S 10 0"`: one field
/// so that every command reads the layout with a single lookup.
pub const META_FIELD: &str = "layout";

impl Layout {
    /// Returns the default DIGITS for a tiebreak: 10, or 0 for NONE (the
    /// score is then the points themselves).
    pub fn default_digits(tiebreak: Tiebreak) -> u32 {
        if tiebreak == Tiebreak::None {
            0
        } else {
            10
        }
    }

    /// Returns the layout stored in the `layout` field of `B:meta` (the
    /// defaults when there is none).
    ///
    /// Occurs as [`RankError::BadLayout`] unless the value is four words
    /// separated by single spaces, each valid. A board being imported
    /// (RANK.IMPORT) is refused the same way by this function: use
    /// [`Layout::from_field_state`].
    pub fn from_field(v: Option<&[u8]>) -> Result<Layout, RankError> {
        match Layout::from_field_state(v)? {
            (l, None) => Ok(l),
            (_, Some(_)) => Err(RankError::BadLayout),
        }
    }

    /// Returns the layout and, for a board being imported, the time every
    /// imported member is packed with: the field then reads
    /// `"<TIEBREAK> <UNIT> <DIGITS> <EPOCH> IMPORT <unix-ms>"`.
    ///
    /// Occurs as [`RankError::BadLayout`] for anything else.
    pub fn from_field_state(v: Option<&[u8]>) -> Result<(Layout, Option<i64>), RankError> {
        let Some(v) = v else {
            return Ok((Layout::default(), None));
        };
        // Read by every command: split without allocating.
        let mut parts = v.split(|&b| b == b' ');
        let mut w: [&[u8]; 6] = [b""; 6];
        let mut n = 0;
        for p in parts.by_ref() {
            if n == 6 {
                return Err(RankError::BadLayout);
            }
            w[n] = p;
            n += 1;
        }
        let (layout, rest) = match n {
            // LAYOUT WIDE: "<TIEBREAK> WIDE", and while RANK.IMPORT packs
            // it "<TIEBREAK> WIDE IMPORT <unix-ms>".
            2 | 4 if w[1] == b"WIDE" => {
                let l = match Tiebreak::parse(w[0]).filter(|t| t.name().as_bytes() == w[0]) {
                    Some(t) if t != Tiebreak::None => Layout::wide(t),
                    _ => return Err(RankError::BadLayout),
                };
                (l, 2)
            }
            4 | 6 => (
                Layout::from_fields([Some(w[0]), Some(w[1]), Some(w[2]), Some(w[3])])?,
                4,
            ),
            _ => return Err(RankError::BadLayout),
        };
        if n == rest {
            return Ok((layout, None));
        }
        match (w[rest], parse_int(w[rest + 1])) {
            (b"IMPORT", Some(t)) if layout.tick(t).is_ok() => Ok((layout, Some(t))),
            _ => Err(RankError::BadLayout),
        }
    }

    /// Returns the value of the `layout` field: `"<TIEBREAK> WIDE"` for
    /// LAYOUT WIDE (two words, which a module without that layout refuses
    /// as corrupt rather than misreads).
    pub fn to_field(&self) -> String {
        if self.wide {
            return format!("{} WIDE", self.tiebreak.name());
        }
        self.to_fields().join(" ")
    }

    /// Returns the LAYOUT WIDE layout with `tiebreak` (EARLIER or LATER).
    pub fn wide(tiebreak: Tiebreak) -> Layout {
        Layout {
            tiebreak,
            unit: Unit::Ms,
            digits: 0,
            epoch: 0,
            wide: true,
        }
    }

    /// Returns the layout from its four words (`tiebreak`, `unit`,
    /// `digits`, `epoch`; a missing word takes its default).
    ///
    /// Occurs as [`RankError::BadLayout`] when a word is not valid.
    pub fn from_fields(fields: [Option<&[u8]>; 4]) -> Result<Layout, RankError> {
        let tiebreak = match fields[0] {
            None => Tiebreak::Earlier,
            Some(v) => Tiebreak::parse(v)
                .filter(|t| t.name().as_bytes() == v)
                .ok_or(RankError::BadLayout)?,
        };
        let unit = match fields[1] {
            None => Unit::S,
            Some(v) => Unit::parse(v)
                .filter(|u| u.name().as_bytes() == v)
                .ok_or(RankError::BadLayout)?,
        };
        let digits = match fields[2] {
            None => Layout::default_digits(tiebreak),
            Some(v) => match parse_int(v) {
                Some(d) if (0..=MAX_DIGITS as i64).contains(&d) => d as u32,
                _ => return Err(RankError::BadLayout),
            },
        };
        let epoch = match fields[3] {
            None => 0,
            Some(v) => match parse_int(v) {
                Some(e) if (0..=EXACT_MAX).contains(&e) => e,
                _ => return Err(RankError::BadLayout),
            },
        };
        Ok(Layout {
            tiebreak,
            unit,
            digits,
            epoch,
            wide: false,
        })
    }

    /// Returns the four words of the layout.
    pub fn to_fields(&self) -> [String; 4] {
        [
            self.tiebreak.name().to_string(),
            self.unit.name().to_string(),
            self.digits.to_string(),
            self.epoch.to_string(),
        ]
    }

    /// Returns 10^DIGITS.
    pub fn scale(&self) -> i64 {
        10i64.pow(self.digits.min(MAX_DIGITS))
    }

    fn max_tiebreak(&self) -> i64 {
        if self.tiebreak == Tiebreak::None {
            0
        } else {
            self.scale() - 1
        }
    }

    /// Returns the largest |points| the board holds exactly: every packed
    /// value stays within ±(2^53 − 1). 900718 for the default layout.
    pub fn limit(&self) -> i64 {
        if self.wide {
            return EXACT_MAX;
        }
        (EXACT_MAX - self.max_tiebreak()) / self.scale()
    }

    /// Returns true when a write's packed score depends on the time of the
    /// write (EARLIER, LATER); false for NONE, which keeps no time.
    pub fn uses_time(&self) -> bool {
        self.tiebreak != Tiebreak::None
    }

    /// Returns `t`, the time `now_ms` counted in UNIT from EPOCH (0 for
    /// NONE, which keeps no time).
    ///
    /// Occurs as [`RankError::Timestamp`] when `now_ms` is before EPOCH or
    /// `t` needs more than DIGITS digits.
    pub fn tick(&self, now_ms: i64) -> Result<i64, RankError> {
        if self.tiebreak == Tiebreak::None {
            return Ok(0);
        }
        let d = now_ms.checked_sub(self.epoch).ok_or(RankError::Timestamp)?;
        if d < 0 {
            return Err(RankError::Timestamp);
        }
        let t = d / self.unit.ms();
        if self.wide {
            // Any instant the options accept (0 … 2^53 − 1) fits the prefix.
            return if t <= EXACT_MAX {
                Ok(t)
            } else {
                Err(RankError::Timestamp)
            };
        }
        if t >= self.scale() {
            return Err(RankError::Timestamp);
        }
        Ok(t)
    }

    /// Checks that `points` fit the board.
    ///
    /// Occurs as [`RankError::PointsRange`] otherwise.
    pub fn check_points(&self, points: i64) -> Result<(), RankError> {
        let limit = self.limit();
        if points < -limit || points > limit {
            return Err(RankError::PointsRange(limit));
        }
        Ok(())
    }

    /// Returns the packed score of `points` achieved at `now_ms`.
    ///
    /// Occurs as [`RankError::Timestamp`] for a time outside the layout
    /// (checked first) and [`RankError::PointsRange`] for points beyond the
    /// limit.
    pub fn pack(&self, points: i64, now_ms: i64) -> Result<i64, RankError> {
        let t = self.tick(now_ms)?;
        self.check_points(points)?;
        Ok(self.pack_tick(points, t))
    }

    /// Returns the packed score for already checked `points` and `t`: on
    /// a LAYOUT WIDE board, whose score is the points themselves (its time
    /// is in the stored name), `points`.
    pub fn pack_tick(&self, points: i64, t: i64) -> i64 {
        if self.wide {
            return points;
        }
        let tb = match self.tiebreak {
            Tiebreak::Earlier => self.scale() - 1 - t,
            Tiebreak::Later => t,
            Tiebreak::None => 0,
        };
        points * self.scale() + tb
    }

    /// Returns the entry a stored score stands for. Scores that are not
    /// integers (written by hand) are read as their floor; nothing panics.
    pub fn unpack(&self, score: f64) -> Entry {
        let p = if score.is_finite() {
            score.floor() as i64
        } else if score > 0.0 {
            i64::MAX
        } else {
            i64::MIN
        };
        let m = self.scale();
        let points = p.div_euclid(m);
        let rem = p.rem_euclid(m);
        let achieved_ms = match self.tiebreak {
            Tiebreak::None => None,
            Tiebreak::Earlier => Some(self.time_of(m - 1 - rem)),
            Tiebreak::Later => Some(self.time_of(rem)),
        };
        Entry {
            points,
            achieved_ms,
        }
    }

    /// Returns the entry a stored score stands for, or None for a score
    /// the module never writes: not an integer, or beyond ±(2^53 − 1)
    /// where doubles stop being exact (a value written by hand).
    pub fn decode(&self, score: f64) -> Option<Entry> {
        (score.fract() == 0.0 && score.abs() <= EXACT_MAX as f64).then(|| self.unpack(score))
    }

    /// Returns the points a stored score of a LAYOUT WIDE board stands for
    /// (the score itself), or None for a score the module never writes.
    pub fn wide_points(score: f64) -> Option<i64> {
        (score.fract() == 0.0 && score.abs() <= EXACT_MAX as f64).then_some(score as i64)
    }

    /// Returns the name a LAYOUT WIDE board stores `member` under when it
    /// reached its points at `ms`: 16 decimal digits, `:`, the member. The
    /// digits are `ms` (LATER) or `10^16 − 1 − ms` (EARLIER), so that among
    /// equal scores `ZREVRANGE` (members in reverse byte order) lists the
    /// earlier (later) achiever first; `ms` ≤ 2^53 − 1 < 10^16.
    pub fn wide_name(&self, ms: i64, member: &[u8]) -> Vec<u8> {
        let d = match self.tiebreak {
            Tiebreak::Earlier => WIDE_SPAN - 1 - ms,
            _ => ms,
        };
        let mut v = vec![b'0'; WIDE_PREFIX + member.len()];
        let mut rest = d as u64;
        for c in v[..WIDE_PREFIX - 1].iter_mut().rev() {
            *c = b'0' + (rest % 10) as u8;
            rest /= 10;
        }
        v[WIDE_PREFIX - 1] = b':';
        v[WIDE_PREFIX..].copy_from_slice(member);
        v
    }

    /// Returns the achievement time and the member of a name stored on a
    /// LAYOUT WIDE board, or None for a name the module never writes.
    pub fn wide_split<'a>(&self, stored: &'a [u8]) -> Option<(i64, &'a [u8])> {
        if stored.len() <= WIDE_PREFIX || stored[WIDE_PREFIX - 1] != b':' {
            return None;
        }
        let digits = &stored[..WIDE_PREFIX - 1];
        if !digits.iter().all(u8::is_ascii_digit) {
            return None;
        }
        let d: i64 = std::str::from_utf8(digits).ok()?.parse().ok()?;
        let ms = match self.tiebreak {
            Tiebreak::Earlier => WIDE_SPAN - 1 - d,
            _ => d,
        };
        (0..=EXACT_MAX)
            .contains(&ms)
            .then_some((ms, &stored[WIDE_PREFIX..]))
    }

    /// Returns the member and the entry of a name and score stored in
    /// `B` (the stored name itself on a packed board), or None for what
    /// the module never writes: a score that is not an exact integer, or
    /// on a LAYOUT WIDE board a name without its time prefix.
    pub fn decode_stored<'a>(&self, stored: &'a [u8], score: f64) -> Option<(&'a [u8], Entry)> {
        if !self.wide {
            return self.decode(score).map(|e| (stored, e));
        }
        let points = Layout::wide_points(score)?;
        let (ms, member) = self.wide_split(stored)?;
        Some((
            member,
            Entry {
                points,
                achieved_ms: Some(ms),
            },
        ))
    }

    fn time_of(&self, t: i64) -> i64 {
        t.saturating_mul(self.unit.ms()).saturating_add(self.epoch)
    }
}

/// GT/LT of RANK.ADD.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Condition {
    Always,
    Gt,
    Lt,
}

/// Returns true when ADD must write `points` over the `current` points:
/// never for the same points (the original time stays), and under GT/LT
/// only for a better value.
pub fn add_writes(current: Option<i64>, points: i64, cond: Condition) -> bool {
    match current {
        None => true,
        Some(c) if c == points => false,
        Some(c) => match cond {
            Condition::Always => true,
            Condition::Gt => points > c,
            Condition::Lt => points < c,
        },
    }
}

/// Returns INCR's new points.
///
/// Occurs as [`RankError::PointsRange`] when the sum leaves the board.
pub fn incr_points(layout: &Layout, current: i64, delta: i64) -> Result<i64, RankError> {
    let new = current
        .checked_add(delta)
        .ok_or(RankError::PointsRange(layout.limit()))?;
    layout.check_points(new)?;
    Ok(new)
}

/// Returns DECR's new points (`current − delta`).
///
/// Occurs as [`RankError::PointsRange`] when the difference leaves the
/// board (a delta of −2^63 included).
pub fn decr_points(layout: &Layout, current: i64, delta: i64) -> Result<i64, RankError> {
    let new = current
        .checked_sub(delta)
        .ok_or(RankError::PointsRange(layout.limit()))?;
    layout.check_points(new)?;
    Ok(new)
}

/// What a write does to one member.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Plan {
    /// Nothing is written; the reply is these points (ADD keeping the
    /// stored value).
    Keep(i64),
    /// `points` are written, achieved at tick `t`.
    Write { points: i64, t: i64 },
}

/// Returns ADD's plan: `points` (checked against the layout first, so
/// that out-of-range input is refused even when GT/LT would keep the old
/// value) over the `current` points, at tick `t`.
///
/// Occurs as [`RankError::PointsRange`] for points beyond the limit.
pub fn plan_add(
    layout: &Layout,
    current: Option<i64>,
    points: i64,
    cond: Condition,
    t: i64,
) -> Result<Plan, RankError> {
    layout.check_points(points)?;
    Ok(if add_writes(current, points, cond) {
        Plan::Write { points, t }
    } else {
        Plan::Keep(current.unwrap_or(points))
    })
}

/// Returns INCR's plan (DECR's when `decr`): the `current` points (0 for a
/// new member) moved by `delta`, achieved at tick `t`, also for a delta
/// of 0.
///
/// Occurs as [`RankError::PointsRange`] when the result leaves the board.
pub fn plan_incr(
    layout: &Layout,
    current: Option<i64>,
    delta: i64,
    decr: bool,
    t: i64,
) -> Result<Plan, RankError> {
    let current = current.unwrap_or(0);
    let points = if decr {
        decr_points(layout, current, delta)?
    } else {
        incr_points(layout, current, delta)?
    };
    Ok(Plan::Write { points, t })
}

/// The writes of a [`Plan::Write`] on a LAYOUT WIDE board.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WideWrite {
    /// The member's old stored name, removed from `B` (None for a new
    /// member, or when the name does not change).
    pub remove: Option<Vec<u8>>,
    /// The stored name written into `B`, with the points as its score.
    pub name: Vec<u8>,
    pub points: i64,
    /// The achievement time (unix ms) written into `B:time`.
    pub at_ms: i64,
}

impl Layout {
    /// Returns the writes that store `points` achieved at `t` for
    /// `member` on a LAYOUT WIDE board, whose current achievement time is
    /// `current_ms` (None: a new member).
    pub fn wide_write(
        &self,
        member: &[u8],
        current_ms: Option<i64>,
        points: i64,
        t: i64,
    ) -> WideWrite {
        let name = self.wide_name(t, member);
        let remove = current_ms
            .map(|ms| self.wide_name(ms, member))
            .filter(|old| *old != name);
        WideWrite {
            remove,
            name,
            points,
            at_ms: t,
        }
    }
}

/// MERGE's AGGREGATE.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Aggregate {
    /// Points add up; the latest achievement time is kept.
    Sum,
    /// The best entry (points, then time per the destination's tiebreak).
    Max,
}

/// Returns true when `a` ranks above `b` on a board with `tiebreak`.
fn better(tiebreak: Tiebreak, a: (i64, i64), b: (i64, i64)) -> bool {
    if a.0 != b.0 {
        return a.0 > b.0;
    }
    match tiebreak {
        Tiebreak::Earlier => a.1 < b.1,
        Tiebreak::Later => a.1 > b.1,
        Tiebreak::None => false,
    }
}

/// A source board for [`merge`]: its layout and its `(member, score)` list.
pub type Source = (Layout, Vec<(Vec<u8>, f64)>);

/// MERGE's running union: entries go in one at a time (a slice of a large
/// merge at a time), each with the source it came from, and come out
/// packed for the destination, in the order members were first seen.
pub struct Merger {
    dest: Layout,
    agg: Aggregate,
    now_ms: i64,
    index: HashMap<Vec<u8>, usize>,
    /// Per member: points (i128: SUM cannot overflow), time, and the last
    /// source that gave it (a scan may give a member twice: SUM must count
    /// it once per source).
    acc: Vec<(i128, i64, u32)>,
}

impl Merger {
    /// Returns an empty union for a destination with layout `dest`. An
    /// entry without a time (from a NONE board) counts as achieved at
    /// `now_ms`.
    pub fn new(dest: Layout, agg: Aggregate, now_ms: i64) -> Merger {
        Merger {
            dest,
            agg,
            now_ms,
            index: HashMap::new(),
            acc: Vec::new(),
        }
    }

    /// Returns the number of distinct members so far.
    pub fn len(&self) -> usize {
        self.acc.len()
    }

    /// Returns true when no member was added.
    pub fn is_empty(&self) -> bool {
        self.acc.is_empty()
    }

    /// Adds `member`'s decoded entry from source number `source`; a second
    /// entry of the same member from the same source is ignored.
    pub fn add(&mut self, source: u32, member: &[u8], e: Entry) {
        let ms = e.achieved_ms.unwrap_or(self.now_ms);
        let Some(&i) = self.index.get(member) else {
            self.index.insert(member.to_vec(), self.acc.len());
            self.acc.push((e.points as i128, ms, source));
            return;
        };
        let cur = &mut self.acc[i];
        if cur.2 == source {
            return;
        }
        cur.2 = source;
        match self.agg {
            Aggregate::Sum => {
                cur.0 += e.points as i128;
                cur.1 = cur.1.max(ms);
            }
            Aggregate::Max => {
                if better(self.dest.tiebreak, (e.points, ms), (cur.0 as i64, cur.1)) {
                    cur.0 = e.points as i128;
                    cur.1 = ms;
                }
            }
        }
    }

    /// Returns the packed score of the `i`-th member (in the order first
    /// seen).
    ///
    /// Occurs as [`RankError::Timestamp`] when its time does not fit the
    /// destination and [`RankError::PointsRange`] when its points do not.
    pub fn packed(&self, i: usize) -> Result<i64, RankError> {
        let (points, ms, _) = self.acc[i];
        let t = self.dest.tick(ms)?;
        let p = i64::try_from(points).map_err(|_| RankError::PointsRange(self.dest.limit()))?;
        self.dest.check_points(p)?;
        Ok(self.dest.pack_tick(p, t))
    }

    /// Returns the members in the order first seen, consuming the union's
    /// index (the members are moved, not copied).
    pub fn into_members(self) -> Vec<Vec<u8>> {
        let mut out: Vec<Vec<u8>> = vec![Vec::new(); self.acc.len()];
        for (m, i) in self.index {
            out[i] = m;
        }
        out
    }

    /// Returns the union as the destination stores it, best first (each
    /// insert then lands at the head of the skiplist): every entry is
    /// checked in the order first seen, so that the first one that does
    /// not fit is the one reported.
    ///
    /// Occurs as [`RankError::Timestamp`] or [`RankError::PointsRange`]
    /// for the first entry the destination cannot hold.
    pub fn into_union(self) -> Result<Union, RankError> {
        let dest = self.dest;
        let mut times = Vec::new();
        let mut scores = Vec::with_capacity(self.acc.len());
        for i in 0..self.acc.len() {
            scores.push(self.packed(i)?);
            if dest.wide {
                times.push(self.acc[i].1);
            }
        }
        let members = self.into_members();
        if !dest.wide {
            let mut rows: Vec<(Vec<u8>, i64)> = members.into_iter().zip(scores).collect();
            rows.sort_unstable_by(|a, b| (b.1, &b.0).cmp(&(a.1, &a.0)));
            let (names, scores) = rows.into_iter().unzip();
            return Ok(Union {
                names,
                scores,
                times: Vec::new(),
            });
        }
        let mut rows: Vec<(Vec<u8>, i64, i64)> = members
            .into_iter()
            .zip(scores)
            .zip(times)
            .map(|((m, s), ms)| (dest.wide_name(ms, &m), s, ms))
            .collect();
        rows.sort_unstable_by(|a, b| (b.1, &b.0).cmp(&(a.1, &a.0)));
        let mut u = Union {
            names: Vec::with_capacity(rows.len()),
            scores: Vec::with_capacity(rows.len()),
            times: Vec::with_capacity(rows.len()),
        };
        for (name, s, ms) in rows {
            u.names.push(name);
            u.scores.push(s);
            u.times.push(ms);
        }
        Ok(u)
    }
}

/// A MERGE's union as its destination stores it, best first: the names
/// stored in `B` (on a LAYOUT WIDE destination `<16 digits>:<member>`,
/// the member being `name[WIDE_PREFIX..]`), their scores, and on a wide
/// destination the achievement times (unix ms) its `B:time` maps each
/// member to (empty otherwise).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Union {
    pub names: Vec<Vec<u8>>,
    pub scores: Vec<i64>,
    pub times: Vec<i64>,
}

/// Merges source boards (each with its layout and `(member, score)` list)
/// into the packed entries of a destination with layout `dest`. An entry
/// without a time (from a NONE board) counts as achieved at `now_ms`.
/// The result is in the order members were first seen (sources in order,
/// each as listed), so that the first entry that does not fit is the same
/// one the Lua twin reports.
///
/// Occurs as [`RankError::Timestamp`] when a time does not fit `dest` and
/// [`RankError::PointsRange`] when points do not: nothing is returned then.
pub fn merge(
    sources: &[Source],
    dest: &Layout,
    agg: Aggregate,
    now_ms: i64,
) -> Result<Vec<(Vec<u8>, i64)>, RankError> {
    let mut m = Merger::new(*dest, agg, now_ms);
    for (si, (layout, entries)) in sources.iter().enumerate() {
        for (stored, score) in entries {
            match layout.decode_stored(stored, *score) {
                Some((member, e)) => m.add(si as u32, member, e),
                None => m.add(si as u32, stored, layout.unpack(*score)),
            }
        }
    }
    let packed = (0..m.len())
        .map(|i| m.packed(i))
        .collect::<Result<Vec<i64>, _>>()?;
    Ok(m.into_members().into_iter().zip(packed).collect())
}

/// Parses an integer the way Redis does (no `+`, no spaces, no leading
/// zeros).
fn parse_int(v: &[u8]) -> Option<i64> {
    if v.is_empty() || v.len() > 20 {
        return None;
    }
    let digits = v.strip_prefix(b"-").unwrap_or(v);
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    if (digits.len() > 1 && digits[0] == b'0') || v == b"-0" {
        return None;
    }
    std::str::from_utf8(v).ok()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::rngs::StdRng;
    use rand::{Rng, SeedableRng};

    fn layout(tiebreak: Tiebreak, unit: Unit, digits: u32, epoch: i64) -> Layout {
        Layout {
            tiebreak,
            unit,
            digits,
            epoch,
            wide: false,
        }
    }

    #[test]
    fn wide_names_order_ties_by_time_under_reverse_byte_order() {
        let mut rng = StdRng::seed_from_u64(27);
        for tb in [Tiebreak::Earlier, Tiebreak::Later] {
            let l = Layout::wide(tb);
            for _ in 0..20_000 {
                let (a, b) = (rng.gen_range(0..=EXACT_MAX), rng.gen_range(0..=EXACT_MAX));
                let ma = format!("m{}", rng.gen_range(0..1000));
                let mb = format!("{}", rng.gen_range(0..1000));
                let (na, nb) = (l.wide_name(a, ma.as_bytes()), l.wide_name(b, mb.as_bytes()));
                assert_eq!(na.len(), WIDE_PREFIX + ma.len());
                assert_eq!(l.wide_split(&na), Some((a, ma.as_bytes())));
                assert_eq!(l.wide_split(&nb), Some((b, mb.as_bytes())));
                if a != b {
                    // ZREVRANGE lists the greater name first among equal
                    // scores: it must be the earlier (EARLIER) achiever.
                    let first_is_a = na > nb;
                    match tb {
                        Tiebreak::Earlier => assert_eq!(first_is_a, a < b),
                        _ => assert_eq!(first_is_a, a > b),
                    }
                }
            }
            assert_eq!(l.wide_split(b"0000000000000001:"), None);
            assert_eq!(l.wide_split(b"000000000000001:x"), None);
            assert_eq!(l.wide_split(b"00000000000000x1:x"), None);
            assert_eq!(l.wide_split(b"0000000000000001-x"), None);
            assert_eq!(l.wide_split(b"plain"), None);
        }
        // Beyond 2^53 − 1 is not a time the module writes.
        assert_eq!(
            Layout::wide(Tiebreak::Later).wide_split(b"9999999999999999:x"),
            None
        );
        assert_eq!(
            Layout::wide(Tiebreak::Earlier).wide_split(b"9999999999999999:x"),
            Some((0, &b"x"[..]))
        );
        assert_eq!(
            Layout::wide(Tiebreak::Earlier).wide_name(1_700_000_000_000, b"abe"),
            b"9998299999999999:abe".to_vec()
        );
    }

    #[test]
    fn wide_layout_holds_the_whole_exact_range_and_round_trips_its_field() {
        for tb in [Tiebreak::Earlier, Tiebreak::Later] {
            let l = Layout::wide(tb);
            assert_eq!(l.limit(), EXACT_MAX);
            assert_eq!(l.check_points(EXACT_MAX), Ok(()));
            assert_eq!(l.check_points(-EXACT_MAX), Ok(()));
            assert_eq!(
                l.check_points(EXACT_MAX + 1),
                Err(RankError::PointsRange(EXACT_MAX))
            );
            assert_eq!(l.tick(0), Ok(0));
            assert_eq!(l.tick(EXACT_MAX), Ok(EXACT_MAX));
            assert_eq!(l.tick(1_700_000_000_123), Ok(1_700_000_000_123));
            let f = l.to_field();
            assert_eq!(f, format!("{} WIDE", tb.name()));
            assert_eq!(Layout::from_field(Some(f.as_bytes())), Ok(l));
            assert!(l.uses_time());
        }
        for bad in [
            &b"NONE WIDE"[..],
            b"earlier WIDE",
            b"EARLIER wide",
            b"NONE WIDE IMPORT 5",
            b"EARLIER WIDE IMPORT x",
            b"EARLIER WIDE EXPORT 5",
            b"EARLIER WIDE IMPORT 9007199254740992",
            b"EARLIER WIDE IMPORT 5 ",
            b"WIDE",
            b"EARLIER WIDE ",
        ] {
            assert_eq!(
                Layout::from_field(Some(bad)),
                Err(RankError::BadLayout),
                "{bad:?}"
            );
        }
        assert_eq!(Layout::wide_points(EXACT_MAX as f64), Some(EXACT_MAX));
        assert_eq!(Layout::wide_points(-(EXACT_MAX as f64)), Some(-EXACT_MAX));
        assert_eq!(Layout::wide_points(9_007_199_254_740_992.0), None);
        assert_eq!(Layout::wide_points(1.5), None);
        assert_eq!(Layout::wide_points(f64::NAN), None);
        assert_eq!(Layout::wide_points(f64::INFINITY), None);
    }

    #[test]
    fn wide_import_state_round_trips() {
        for tb in [Tiebreak::Earlier, Tiebreak::Later] {
            let l = Layout::wide(tb);
            let v = format!("{} IMPORT 1700000000000", l.to_field());
            assert_eq!(
                Layout::from_field_state(Some(v.as_bytes())),
                Ok((l, Some(1_700_000_000_000)))
            );
            // Refused where an import is not expected.
            assert_eq!(
                Layout::from_field(Some(v.as_bytes())),
                Err(RankError::BadLayout)
            );
        }
    }

    #[test]
    fn decode_stored_reads_both_layouts() {
        let p = Layout::default();
        let w = Layout::wide(Tiebreak::Later);
        let s = p.pack(7, 1_700_000_000_000).unwrap() as f64;
        assert_eq!(
            p.decode_stored(b"abe", s),
            Some((
                &b"abe"[..],
                Entry {
                    points: 7,
                    achieved_ms: Some(1_700_000_000_000)
                }
            ))
        );
        assert_eq!(p.decode_stored(b"abe", 1.5), None);
        let name = w.wide_name(1_700_000_000_123, b"abe");
        assert_eq!(
            w.decode_stored(&name, 5e15),
            Some((
                &b"abe"[..],
                Entry {
                    points: 5_000_000_000_000_000,
                    achieved_ms: Some(1_700_000_000_123)
                }
            ))
        );
        assert_eq!(w.decode_stored(b"abe", 5.0), None);
        assert_eq!(w.decode_stored(&name, 0.5), None);
        assert_eq!(w.decode_stored(&name, 9_007_199_254_740_992.0), None);
        // The score of a wide board is the points themselves.
        assert_eq!(w.pack_tick(-42, 1_700_000_000_000), -42);
    }

    /// The union of `sources` into `dest`, as (stored name, score, time)
    /// rows.
    /// A union row: stored name, score, time on a wide destination.
    type Row = (Vec<u8>, i64, Option<i64>);

    fn union_rows(
        sources: &[Source],
        dest: Layout,
        agg: Aggregate,
        now: i64,
    ) -> Result<Vec<Row>, RankError> {
        let mut m = Merger::new(dest, agg, now);
        for (si, (l, entries)) in sources.iter().enumerate() {
            for (stored, score) in entries {
                let (member, e) = l.decode_stored(stored, *score).unwrap();
                m.add(si as u32, member, e);
            }
        }
        let u = m.into_union()?;
        assert_eq!(u.names.len(), u.scores.len());
        assert_eq!(u.times.len(), if dest.wide { u.names.len() } else { 0 });
        Ok((0..u.names.len())
            .map(|i| (u.names[i].clone(), u.scores[i], u.times.get(i).copied()))
            .collect())
    }

    #[test]
    fn wide_merge_sums_maxes_and_converts_between_layouts() {
        let w = Layout::wide(Tiebreak::Earlier);
        let wl = Layout::wide(Tiebreak::Later);
        let p = Layout::default();
        let none = layout(Tiebreak::None, Unit::S, 0, 0);
        let big = 4_000_000_000_000_000i64;
        let wa = vec![
            (w.wide_name(5_000, b"x"), big as f64),
            (w.wide_name(1_000, b"y"), 1.0),
        ];
        let wb = vec![(w.wide_name(9_000, b"x"), big as f64)];
        // SUM: points add up beyond any packed limit, the latest time kept.
        let rows = union_rows(&[(w, wa.clone()), (w, wb.clone())], w, Aggregate::Sum, 0).unwrap();
        assert_eq!(
            rows,
            vec![
                (w.wide_name(9_000, b"x"), 2 * big, Some(9_000)),
                (w.wide_name(1_000, b"y"), 1, Some(1_000)),
            ]
        );
        // MAX: ties by the destination's tiebreak.
        let rows = union_rows(&[(w, wa.clone()), (w, wb.clone())], w, Aggregate::Max, 0).unwrap();
        assert_eq!(rows[0], (w.wide_name(5_000, b"x"), big, Some(5_000)));
        let rows = union_rows(&[(w, wa.clone()), (w, wb.clone())], wl, Aggregate::Max, 0).unwrap();
        assert_eq!(rows[0], (wl.wide_name(9_000, b"x"), big, Some(9_000)));
        // Beyond 2^53 − 1: refused, nothing returned.
        let max = vec![(w.wide_name(1, b"x"), EXACT_MAX as f64)];
        assert_eq!(
            union_rows(&[(w, max.clone()), (w, max)], w, Aggregate::Sum, 0),
            Err(RankError::PointsRange(EXACT_MAX))
        );
        // Packed into wide: always fits; NONE entries at `now`.
        let ps = vec![(b"z".to_vec(), p.pack(3, 7_000).unwrap() as f64)];
        let ns = vec![(b"z".to_vec(), 4.0)];
        let rows = union_rows(&[(p, ps.clone()), (none, ns)], w, Aggregate::Sum, 8_000).unwrap();
        assert_eq!(rows, vec![(w.wide_name(8_000, b"z"), 7, Some(8_000))]);
        // Wide into packed: the points and the time must fit the layout.
        let rows = union_rows(&[(w, wa.clone())], p, Aggregate::Sum, 0);
        assert_eq!(rows, Err(RankError::PointsRange(900_718)));
        let small = vec![(w.wide_name(7_000, b"z"), 3.0)];
        let rows = union_rows(&[(w, small.clone()), (p, ps)], p, Aggregate::Sum, 0).unwrap();
        assert_eq!(rows, vec![(b"z".to_vec(), p.pack(6, 7_000).unwrap(), None)]);
        let ms = layout(Tiebreak::Earlier, Unit::Ms, 13, 1_000_000);
        assert_eq!(
            union_rows(&[(w, small)], ms, Aggregate::Sum, 0),
            Err(RankError::Timestamp)
        );
        // Best first, the greater stored name first among equal scores.
        let tied = vec![
            (w.wide_name(3, b"a"), 1.0),
            (w.wide_name(2, b"b"), 1.0),
            (w.wide_name(2, b"c"), 1.0),
            (w.wide_name(1, b"d"), 0.0),
        ];
        let rows = union_rows(&[(w, tied)], w, Aggregate::Sum, 0).unwrap();
        let order: Vec<&[u8]> = rows.iter().map(|r| &r.0[WIDE_PREFIX..]).collect();
        assert_eq!(order, vec![&b"c"[..], b"b", b"a", b"d"]);
    }

    #[test]
    fn plans_of_add_incr_and_decr() {
        let d = Layout::default();
        let w = Layout::wide(Tiebreak::Earlier);
        // Set-if-better (GT): a better value moves the time, the same best
        // keeps the first time it was reached, a worse one is kept.
        assert_eq!(
            plan_add(&d, Some(5), 6, Condition::Gt, 9),
            Ok(Plan::Write { points: 6, t: 9 })
        );
        assert_eq!(
            plan_add(&d, Some(5), 5, Condition::Gt, 9),
            Ok(Plan::Keep(5))
        );
        assert_eq!(
            plan_add(&d, Some(5), 4, Condition::Gt, 9),
            Ok(Plan::Keep(5))
        );
        assert_eq!(
            plan_add(&d, None, 4, Condition::Gt, 9),
            Ok(Plan::Write { points: 4, t: 9 })
        );
        // Range first, whatever GT would do.
        assert_eq!(
            plan_add(&d, Some(5), 900_719, Condition::Lt, 9),
            Err(RankError::PointsRange(900_718))
        );
        assert_eq!(
            plan_add(&w, Some(5), EXACT_MAX, Condition::Gt, 9),
            Ok(Plan::Write {
                points: EXACT_MAX,
                t: 9
            })
        );
        assert_eq!(
            plan_incr(&w, Some(EXACT_MAX - 1), 1, false, 3),
            Ok(Plan::Write {
                points: EXACT_MAX,
                t: 3
            })
        );
        assert_eq!(
            plan_incr(&w, Some(EXACT_MAX), 1, false, 3),
            Err(RankError::PointsRange(EXACT_MAX))
        );
        assert_eq!(
            plan_incr(&w, None, 7, true, 3),
            Ok(Plan::Write { points: -7, t: 3 })
        );
        assert_eq!(
            plan_incr(&w, Some(0), i64::MIN, true, 3),
            Err(RankError::PointsRange(EXACT_MAX))
        );
        assert_eq!(
            plan_incr(&d, Some(-900_000), 718, true, 3),
            Ok(Plan::Write {
                points: -900_718,
                t: 3
            })
        );
        assert_eq!(
            plan_incr(&d, Some(-900_000), 719, true, 3),
            Err(RankError::PointsRange(900_718))
        );
        // A wide write moves the member to the name of its new time.
        let ww = w.wide_write(b"abe", Some(5), 10, 9);
        assert_eq!(ww.remove, Some(w.wide_name(5, b"abe")));
        assert_eq!(ww.name, w.wide_name(9, b"abe"));
        assert_eq!((ww.points, ww.at_ms), (10, 9));
        assert_eq!(w.wide_write(b"abe", Some(9), 11, 9).remove, None);
        assert_eq!(w.wide_write(b"abe", None, 11, 9).remove, None);
    }

    fn random_layout(rng: &mut StdRng) -> Layout {
        let tiebreak = [Tiebreak::Earlier, Tiebreak::Later, Tiebreak::None][rng.gen_range(0..3)];
        let unit = if rng.gen_bool(0.5) { Unit::Ms } else { Unit::S };
        layout(
            tiebreak,
            unit,
            rng.gen_range(1..=MAX_DIGITS),
            rng.gen_range(0..2_000_000_000_000),
        )
    }

    /// A random time that fits `l` (its `t` spans the whole digit range).
    fn random_time(rng: &mut StdRng, l: &Layout) -> i64 {
        let t = rng.gen_range(0..l.scale());
        l.epoch + t * l.unit.ms() + rng.gen_range(0..l.unit.ms())
    }

    #[test]
    fn default_layout_limit_is_900718() {
        assert_eq!(Layout::default().limit(), 900_718);
        let max = Layout::default().pack(900_718, 9_999_999_999_999).unwrap();
        assert!(max <= EXACT_MAX);
        assert_eq!(
            Layout::default().pack(900_719, 0),
            Err(RankError::PointsRange(900_718))
        );
        assert_eq!(
            Layout::default().pack(-900_719, 0),
            Err(RankError::PointsRange(900_718))
        );
        assert_eq!(
            RankError::PointsRange(900_718).message(),
            "points out of exact range (max +/-900718)"
        );
    }

    #[test]
    fn points_and_time_round_trip_exactly() {
        let mut rng = StdRng::seed_from_u64(7);
        for _ in 0..200_000 {
            let l = random_layout(&mut rng);
            let limit = l.limit();
            let points = match rng.gen_range(0..4) {
                0 => limit,
                1 => -limit,
                _ => rng.gen_range(-limit..=limit),
            };
            let now = random_time(&mut rng, &l);
            let packed = l.pack(points, now).unwrap();
            assert!(packed.abs() <= EXACT_MAX, "{l:?} {points} {now}");
            // Through the double the board stores.
            let score = packed as f64;
            assert_eq!(score as i64, packed);
            let e = l.unpack(score);
            assert_eq!(e.points, points, "{l:?} {now}");
            match l.tiebreak {
                Tiebreak::None => assert_eq!(e.achieved_ms, None),
                _ => assert_eq!(
                    e.achieved_ms,
                    Some(now - (now - l.epoch) % l.unit.ms()),
                    "{l:?}"
                ),
            }
        }
    }

    #[test]
    fn order_is_points_then_time_per_tiebreak() {
        let mut rng = StdRng::seed_from_u64(11);
        for _ in 0..100_000 {
            let l = random_layout(&mut rng);
            let limit = l.limit().min(1000);
            let (pa, pb) = (rng.gen_range(-limit..=limit), rng.gen_range(-limit..=limit));
            let (ta, tb) = (random_time(&mut rng, &l), random_time(&mut rng, &l));
            let (sa, sb) = (
                l.pack(pa, ta).unwrap() as f64,
                l.pack(pb, tb).unwrap() as f64,
            );
            let (ua, ub) = (l.tick(ta).unwrap(), l.tick(tb).unwrap());
            if pa != pb {
                assert_eq!(sa > sb, pa > pb);
            } else {
                match l.tiebreak {
                    Tiebreak::Earlier => assert_eq!(sa.partial_cmp(&sb), ub.partial_cmp(&ua)),
                    Tiebreak::Later => assert_eq!(sa.partial_cmp(&sb), ua.partial_cmp(&ub)),
                    Tiebreak::None => assert_eq!(sa, sb),
                }
            }
        }
    }

    #[test]
    fn negative_points_decode_by_floor() {
        let l = Layout::default();
        let s = l.pack(-1, 1_700_000_000_000).unwrap();
        assert!(s < 0 && s > -l.scale());
        assert_eq!(l.unpack(s as f64).points, -1);
        assert_eq!(l.unpack(s as f64).achieved_ms, Some(1_700_000_000_000));
        // -1 ranks below 0 whatever the times.
        assert!(l.pack(-1, 0).unwrap() < l.pack(0, 9_999_999_999_000).unwrap());
    }

    #[test]
    fn beyond_exact_range_is_refused_for_every_layout() {
        let mut rng = StdRng::seed_from_u64(3);
        for _ in 0..50_000 {
            let l = random_layout(&mut rng);
            let limit = l.limit();
            let now = random_time(&mut rng, &l);
            let over = limit + rng.gen_range(1..1_000_000_000);
            assert_eq!(l.pack(over, now), Err(RankError::PointsRange(limit)));
            assert_eq!(l.pack(-over, now), Err(RankError::PointsRange(limit)));
            // The limit is tight: one more would not be exact.
            let top = (limit + 1) as i128 * l.scale() as i128 + l.max_tiebreak() as i128;
            assert!(top > EXACT_MAX as i128);
        }
        assert_eq!(
            incr_points(&Layout::default(), 900_000, i64::MAX),
            Err(RankError::PointsRange(900_718))
        );
        assert_eq!(incr_points(&Layout::default(), 900_000, 718), Ok(900_718));
    }

    #[test]
    fn layouts_that_cannot_hold_now_are_refused() {
        let now = 1_764_000_000_000; // 2025-11
        assert!(Layout::default().tick(now).is_ok());
        // Milliseconds since 1970 need 13 digits.
        assert_eq!(
            layout(Tiebreak::Earlier, Unit::Ms, 12, 0).tick(now),
            Err(RankError::Timestamp)
        );
        assert!(layout(Tiebreak::Earlier, Unit::Ms, 13, 0).tick(now).is_ok());
        // Seconds since 1970 need 10; since a recent EPOCH fewer.
        assert_eq!(
            layout(Tiebreak::Later, Unit::S, 9, 0).tick(now),
            Err(RankError::Timestamp)
        );
        assert!(layout(Tiebreak::Later, Unit::S, 8, 1_700_000_000_000)
            .tick(now)
            .is_ok());
        // An EPOCH in the future cannot hold now.
        assert_eq!(
            layout(Tiebreak::Earlier, Unit::S, 10, now + 1).tick(now),
            Err(RankError::Timestamp)
        );
        // NONE keeps no time at all.
        assert_eq!(layout(Tiebreak::None, Unit::S, 0, now + 1).tick(now), Ok(0));
    }

    #[test]
    fn add_keeps_same_points_and_honours_gt_lt() {
        assert!(add_writes(None, 5, Condition::Gt));
        assert!(!add_writes(Some(5), 5, Condition::Always));
        assert!(add_writes(Some(5), 4, Condition::Always));
        assert!(add_writes(Some(5), 6, Condition::Gt));
        assert!(!add_writes(Some(5), 4, Condition::Gt));
        assert!(add_writes(Some(5), 4, Condition::Lt));
        assert!(!add_writes(Some(5), 6, Condition::Lt));
    }

    #[test]
    fn layout_fields_round_trip_and_bad_ones_are_refused() {
        let mut rng = StdRng::seed_from_u64(5);
        for _ in 0..1000 {
            let l = random_layout(&mut rng);
            let f = l.to_fields();
            let back = Layout::from_fields([
                Some(f[0].as_bytes()),
                Some(f[1].as_bytes()),
                Some(f[2].as_bytes()),
                Some(f[3].as_bytes()),
            ]);
            assert_eq!(back, Ok(l));
        }
        assert_eq!(Layout::from_fields([None; 4]), Ok(Layout::default()));
        assert_eq!(Layout::default().to_field(), "EARLIER S 10 0");
        let mut rng2 = StdRng::seed_from_u64(6);
        for _ in 0..1000 {
            let l = random_layout(&mut rng2);
            assert_eq!(Layout::from_field(Some(l.to_field().as_bytes())), Ok(l));
        }
        assert_eq!(Layout::from_field(None), Ok(Layout::default()));
        for bad in [
            &b""[..],
            b"EARLIER S 10",
            b"EARLIER S 10 0 ",
            b"EARLIER  S 10 0",
            b"EARLIER S 10 x",
            b"LATER MS 16 0",
        ] {
            assert_eq!(Layout::from_field(Some(bad)), Err(RankError::BadLayout));
        }
        assert_eq!(
            Layout::from_fields([Some(b"NONE"), None, None, None])
                .unwrap()
                .digits,
            0
        );
        for bad in [
            [Some(&b"earlier"[..]), None, None, None],
            [None, Some(b"H"), None, None],
            [None, None, Some(b"16"), None],
            [None, None, Some(b"x"), None],
            [None, None, None, Some(b"-1")],
        ] {
            assert_eq!(Layout::from_fields(bad), Err(RankError::BadLayout));
        }
    }

    #[test]
    fn merge_sums_points_and_keeps_latest_time() {
        let l = Layout::default();
        let a = vec![
            (b"x".to_vec(), l.pack(10, 5_000).unwrap() as f64),
            (b"y".to_vec(), l.pack(1, 1_000).unwrap() as f64),
        ];
        let b = vec![(b"x".to_vec(), l.pack(-3, 9_000).unwrap() as f64)];
        let out = merge(&[(l, a.clone()), (l, b.clone())], &l, Aggregate::Sum, 0).unwrap();
        assert_eq!(
            out,
            vec![
                (b"x".to_vec(), l.pack(7, 9_000).unwrap()),
                (b"y".to_vec(), l.pack(1, 1_000).unwrap())
            ]
        );
        let out = merge(&[(l, a), (l, b)], &l, Aggregate::Max, 0).unwrap();
        assert_eq!(out[0], (b"x".to_vec(), l.pack(10, 5_000).unwrap()));
    }

    #[test]
    fn merge_max_breaks_ties_by_destination_tiebreak() {
        let l = Layout::default();
        let later = layout(Tiebreak::Later, Unit::S, 10, 0);
        let a = vec![(b"x".to_vec(), l.pack(10, 5_000).unwrap() as f64)];
        let b = vec![(b"x".to_vec(), l.pack(10, 9_000).unwrap() as f64)];
        let srcs = [(l, a), (l, b)];
        assert_eq!(
            merge(&srcs, &l, Aggregate::Max, 0).unwrap()[0].1,
            l.pack(10, 5_000).unwrap()
        );
        assert_eq!(
            merge(&srcs, &later, Aggregate::Max, 0).unwrap()[0].1,
            later.pack(10, 9_000).unwrap()
        );
    }

    #[test]
    fn merge_refuses_what_the_destination_cannot_hold() {
        let big = layout(Tiebreak::None, Unit::S, 0, 0);
        let src = vec![(b"x".to_vec(), 5_000_000.0)];
        assert_eq!(
            merge(
                &[(big, src.clone())],
                &Layout::default(),
                Aggregate::Sum,
                1_000
            ),
            Err(RankError::PointsRange(900_718))
        );
        let recent = layout(Tiebreak::Earlier, Unit::S, 10, 1_000_000);
        let old = vec![(
            b"x".to_vec(),
            Layout::default().pack(1, 500).unwrap() as f64,
        )];
        assert_eq!(
            merge(&[(Layout::default(), old)], &recent, Aggregate::Sum, 0),
            Err(RankError::Timestamp)
        );
        // Sums that pass through large values but end in range are exact.
        let parts = vec![(b"x".to_vec(), EXACT_MAX as f64)];
        let neg = vec![(b"x".to_vec(), -(EXACT_MAX as f64) + 2.0)];
        let out = merge(
            &[
                (big, parts.clone()),
                (big, parts),
                (big, neg.clone()),
                (big, neg),
            ],
            &big,
            Aggregate::Sum,
            0,
        )
        .unwrap();
        assert_eq!(out[0].1, 4);
    }

    #[test]
    fn unpack_never_panics_on_odd_scores() {
        let l = Layout::default();
        for s in [
            f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
            1.5,
            -0.5,
            1e300,
            -1e300,
        ] {
            let _ = l.unpack(s);
        }
        assert_eq!(l.unpack(-0.5).points, -1);
    }
}
