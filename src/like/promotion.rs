//! LIKE's promotion from a Set to chunks, in bounded steps, as plain logic
//! over a small store trait (as redis-cell's `RateLimiter<T: Store>`): the
//! check, chunk creation, the migration of the Set into chunks a slice at
//! a time, and the settling of migrated chunks (docs/like.md, Promotion).
//!
//! [`step`] reads and writes a post only through [`Store`]: the module's
//! store (`commands/promote.rs`) is the post's keys, and replicates each
//! write it makes as explicit commands; the tests below run the same steps
//! on a store in memory. No Redis type appears here.
//!
//! The state lives in `B:meta` (`state` create|move|settle, `at` its
//! position, `check` the Set size of the next check). A key of the wrong
//! type or a garbled `B:meta` stops the promotion (the post keeps working,
//! LIKE.INFO reports the error): a step never fails the write it rides on.

use super::model::{self, CHUNK_BYTES, MIGRATING_BYTES};
use crate::args::parse_i64_plain;

/// A chunk key `B:bits:<k>` as a step sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Chunk {
    /// No such key.
    Missing,
    /// A String of this many bytes.
    Bytes(usize),
    /// A key of another type (never touched by a step).
    Other,
}

/// What a promotion step reads and writes of one post. Writes replicate
/// (in the module's store) in the order they are made.
pub trait Store {
    /// The error of a Set command (the step then stops, state unchanged).
    type Error;
    /// A field of `B:meta` (the caller has checked that `B:meta` is a Hash
    /// or missing).
    fn meta(&mut self, field: &[u8]) -> Option<Vec<u8>>;
    /// Sets `B:meta`'s `state` and `at`, or deletes both (`None`).
    fn set_state(&mut self, state: Option<(&str, &[u8])>);
    /// Sets `B:meta`'s `check`.
    fn set_check(&mut self, next: u64);
    /// `B:set`'s size (0 when missing), or `None` when it holds another
    /// type.
    fn set_size(&mut self) -> Option<u64>;
    /// Calls `f` with each member `SSCAN B:set 0 COUNT n` returns; true
    /// when that is the whole Set.
    fn sample(&mut self, n: u64, f: &mut dyn FnMut(&[u8])) -> bool;
    /// One slice of the Set: what `SSCAN B:set <cursor> COUNT n` returns.
    fn scan(&mut self, cursor: &[u8], n: u64) -> Result<Slice, Self::Error>;
    /// The chunk index `B:chunks` (empty when missing), or `None` when it
    /// holds another type.
    fn index(&mut self) -> Option<Vec<u8>>;
    /// Sets the index bits of every range of `plan`; false (nothing
    /// written) when the index holds another type.
    fn mark(&mut self, plan: &[(u64, u64)]) -> bool;
    /// The chunk of `range`.
    fn chunk(&mut self, range: u64) -> Chunk;
    /// Creates the (missing) chunk of `range`: zeroed, migrating
    /// ([`MIGRATING_BYTES`] long).
    fn create_chunk(&mut self, range: u64);
    /// Cuts the migrated chunk of `range` back to [`CHUNK_BYTES`].
    fn settle_chunk(&mut self, range: u64);
    /// Moves likers from the Set into their chunks: removes each `id`
    /// (the member, its canonical digits) from the Set and sets bit `off`
    /// of the chunk of `range`.
    fn migrate(&mut self, moved: &[Moved]) -> Result<(), Self::Error>;
}

/// A slice of the Set: the members that are user ids (canonical digits up
/// to [`model::MAX_ID`]; a step never moves anything else) and the next
/// cursor (`0` at the end of the pass).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Slice {
    pub ids: Vec<u64>,
    pub cursor: Vec<u8>,
}

/// A liker a migration slice moves: its id, its range and its bit.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Moved {
    pub id: u64,
    pub range: u64,
    pub off: u64,
}

/// The module's configs a step depends on (which is why steps replicate
/// as their effects).
#[derive(Clone, Copy, Debug)]
pub struct Configs {
    /// `like-promote-at`.
    pub promote_at: i64,
    /// The last range an id up to `like-max-id` falls in.
    pub last_range: u64,
}

/// What [`step`] did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Ran {
    /// A step ran (a check that sampled, a creation, a slice, a settle).
    pub stepped: bool,
    /// The promotion finished with this step.
    pub finished: bool,
}

const STEPPED: Ran = Ran {
    stepped: true,
    finished: false,
};

/// Advances the post's promotion by one bounded step, after a write that
/// brought the count to `count` (`migrating`: the write changed a range
/// being migrated).
pub fn step<S: Store>(s: &mut S, count: i64, migrating: bool, cfg: Configs) -> Ran {
    let state = s.meta(b"state");
    let at = match state {
        Some(_) => s.meta(b"at").unwrap_or_default(),
        None => Vec::new(),
    };
    // A position is a cursor or a range: digits only. Anything else (an
    // edit by hand) stops the promotion rather than feeding SSCAN garbage.
    if state.is_some() && (at.is_empty() || at.len() > 20 || !at.iter().all(u8::is_ascii_digit)) {
        return Ran::default();
    }
    match state.as_deref() {
        None if migrating => {
            // A migrating chunk with no promotion under way (the state was
            // deleted by hand): migrate the Set again from the start.
            s.set_state(Some(("move", b"0")));
            Ran::default()
        }
        None => check(s, count, cfg),
        Some(b"create") => create(s, &at),
        Some(b"move") => move_slice(s, &at).unwrap_or(STEPPED),
        Some(b"settle") => settle(s, &at, cfg),
        Some(_) => Ran::default(),
    }
}

/// The check: when the Set has reached `B:meta`'s `check` size (at first
/// `like-promote-at + 1`), sample it and plan. A failed check is not
/// repeated before the Set has doubled.
fn check<S: Store>(s: &mut S, count: i64, cfg: Configs) -> Ran {
    let threshold = match s.meta(b"check") {
        None => model::next_check(0, cfg.promote_at),
        Some(v) => match parse_i64_plain(&v) {
            Some(n) if n >= 0 => n as u64,
            _ => return Ran::default(),
        },
    };
    // The Set never holds more members than the post has likers.
    if (count as u64) < threshold {
        return Ran::default();
    }
    let Some(size) = s.set_size() else {
        return Ran::default();
    };
    if size < threshold {
        return Ran::default();
    }
    let mut ids: Vec<u64> = Vec::with_capacity(model::SAMPLE as usize + 64);
    let complete = s.sample(model::SAMPLE, &mut |m| {
        if let Some(id) = model::parse_user(m, model::MAX_ID) {
            ids.push(id);
        }
    });
    let plan = model::plan(&ids, size, complete, cfg.last_range);
    if plan.is_empty() {
        s.set_check(model::next_check(size, cfg.promote_at));
        return STEPPED;
    }
    // The chunks are created by the next steps: the check has done its
    // share of work.
    if s.mark(&plan) {
        let first = plan[0].0.to_string();
        s.set_state(Some(("create", first.as_bytes())));
    }
    STEPPED
}

/// Walks the chunk index from `at`: at most [`model::WALK_STEP`] ranges
/// marked, calling `f` with each, until `f` has returned true `limit`
/// times. Returns the position after the last range looked at, or `None`
/// when the walk reached the end.
fn walk<S: Store>(
    s: &mut S,
    at: &[u8],
    limit: usize,
    mut f: impl FnMut(&mut S, u64) -> bool,
) -> Option<u64> {
    // Digits only (checked by the caller); past u64 means past the end.
    let start = std::str::from_utf8(at)
        .ok()
        .and_then(|t| t.parse::<u64>().ok())
        .unwrap_or(u64::MAX);
    let bytes = s.index()?;
    let bits = bytes.len() as u64 * 8;
    let (mut looked, mut done) = (0u64, 0usize);
    let mut p = start;
    while p < bits {
        if bytes[(p / 8) as usize] == 0 {
            p = (p / 8 + 1) * 8;
            continue;
        }
        if model::get_bit(&bytes, p) {
            if looked == model::WALK_STEP || done == limit {
                return Some(p);
            }
            looked += 1;
            if f(s, p) {
                done += 1;
            }
        }
        p += 1;
    }
    None
}

/// Creates the planned chunks that do not exist yet, a few per step, born
/// migrating. Then the migration starts.
fn create<S: Store>(s: &mut S, at: &[u8]) -> Ran {
    let next = walk(s, at, model::CREATE_STEP, |s, p| {
        if s.chunk(p) != Chunk::Missing {
            return false;
        }
        s.create_chunk(p);
        true
    });
    match next {
        Some(p) => s.set_state(Some(("create", p.to_string().as_bytes()))),
        None => s.set_state(Some(("move", b"0"))),
    }
    STEPPED
}

/// Moves one slice of the Set (`SSCAN … COUNT 64` from the saved cursor)
/// into the chunks of the ranges that have one. A full pass of the cursor
/// sees every member that was there when it began, and new likes of a
/// chunked range go to its chunk, so after the pass no member of a
/// chunked range is left.
fn move_slice<S: Store>(s: &mut S, at: &[u8]) -> Result<Ran, S::Error> {
    if s.set_size().is_none() {
        return Ok(STEPPED);
    }
    let Slice { ids, cursor: next } = s.scan(at, model::MOVE_STEP)?;
    // Whether each range seen has a chunk to move into, asked once.
    let mut usable: Vec<(u64, bool)> = Vec::new();
    let mut moved: Vec<Moved> = Vec::new();
    for id in ids {
        let (range, off) = model::locate(id);
        let ok = match usable.iter().find(|(r, _)| *r == range) {
            Some(&(_, ok)) => ok,
            None => {
                let ok = matches!(s.chunk(range), Chunk::Bytes(CHUNK_BYTES | MIGRATING_BYTES));
                usable.push((range, ok));
                ok
            }
        };
        if ok && !moved.iter().any(|x| x.id == id) {
            moved.push(Moved { id, range, off });
        }
    }
    if !moved.is_empty() {
        s.migrate(&moved)?;
    }
    if next == b"0" {
        s.set_state(Some(("settle", b"0")));
    } else {
        s.set_state(Some(("move", &next)));
    }
    Ok(STEPPED)
}

/// Cuts the migrated chunks back to [`CHUNK_BYTES`]: their ranges no longer
/// need the Set. When all are settled the promotion is over, and the next
/// check comes at once on the Set left (or waits for it to double).
fn settle<S: Store>(s: &mut S, at: &[u8], cfg: Configs) -> Ran {
    let next = walk(s, at, model::SETTLE_STEP, |s, p| {
        if s.chunk(p) != Chunk::Bytes(MIGRATING_BYTES) {
            return false;
        }
        s.settle_chunk(p);
        true
    });
    if let Some(p) = next {
        s.set_state(Some(("settle", p.to_string().as_bytes())));
        return STEPPED;
    }
    s.set_state(None);
    let left = s.set_size().unwrap_or(0);
    s.set_check(model::recheck(left, cfg.promote_at));
    Ran {
        stepped: true,
        finished: true,
    }
}

#[cfg(test)]
mod tests {
    use std::collections::{BTreeMap, BTreeSet};

    use rand::rngs::StdRng;
    use rand::{Rng, SeedableRng};

    use super::*;

    /// A post in memory: the Set as ids (a scan cursor is one more than
    /// the next id to read, and 0 at both ends of a pass), the index, the
    /// chunks, `B:meta`, and a log of the writes in order.
    #[derive(Default)]
    struct Mem {
        set: BTreeSet<u64>,
        set_wrong: bool,
        index: Vec<u8>,
        index_wrong: bool,
        chunks: BTreeMap<u64, Vec<u8>>,
        meta: BTreeMap<Vec<u8>, Vec<u8>>,
        log: Vec<String>,
        fail_scan: bool,
    }

    impl Store for Mem {
        type Error = ();
        fn meta(&mut self, field: &[u8]) -> Option<Vec<u8>> {
            self.meta.get(field).cloned()
        }
        fn set_state(&mut self, state: Option<(&str, &[u8])>) {
            match state {
                Some((st, at)) => {
                    self.meta.insert(b"state".to_vec(), st.as_bytes().to_vec());
                    self.meta.insert(b"at".to_vec(), at.to_vec());
                    self.log
                        .push(format!("state {st} {}", String::from_utf8_lossy(at)));
                }
                None => {
                    self.meta.remove(&b"state"[..]);
                    self.meta.remove(&b"at"[..]);
                    self.log.push("state none".into());
                }
            }
        }
        fn set_check(&mut self, next: u64) {
            self.meta
                .insert(b"check".to_vec(), next.to_string().into_bytes());
            self.log.push(format!("check {next}"));
        }
        fn set_size(&mut self) -> Option<u64> {
            (!self.set_wrong).then_some(self.set.len() as u64)
        }
        // Members spread over the whole Set, as a hash table's order is.
        fn sample(&mut self, n: u64, f: &mut dyn FnMut(&[u8])) -> bool {
            let stride = (self.set.len() / n as usize).max(1);
            for id in self.set.iter().step_by(stride).take(n as usize) {
                f(id.to_string().as_bytes());
            }
            self.set.len() as u64 <= n
        }
        fn scan(&mut self, cursor: &[u8], n: u64) -> Result<Slice, ()> {
            if self.fail_scan {
                return Err(());
            }
            let from: u64 = std::str::from_utf8(cursor).unwrap().parse().unwrap();
            let from = from.saturating_sub(1);
            let got: Vec<u64> = self.set.range(from..).take(n as usize).copied().collect();
            let next = match got.last() {
                Some(&last) if self.set.range(last + 1..).next().is_some() => {
                    (last + 2).to_string().into_bytes()
                }
                _ => b"0".to_vec(),
            };
            Ok(Slice {
                ids: got,
                cursor: next,
            })
        }
        fn index(&mut self) -> Option<Vec<u8>> {
            (!self.index_wrong).then(|| self.index.clone())
        }
        fn mark(&mut self, plan: &[(u64, u64)]) -> bool {
            if self.index_wrong {
                return false;
            }
            let top = plan.last().map_or(0, |p| p.1);
            if self.index.len() < model::index_len(top) {
                self.index.resize(model::index_len(top), 0);
            }
            for &(lo, hi) in plan {
                for r in lo..=hi {
                    model::set_bit(&mut self.index, r, true);
                }
            }
            self.log.push(format!("mark {plan:?}"));
            true
        }
        fn chunk(&mut self, range: u64) -> Chunk {
            match self.chunks.get(&range) {
                None => Chunk::Missing,
                Some(c) if c.is_empty() => Chunk::Other,
                Some(c) => Chunk::Bytes(c.len()),
            }
        }
        fn create_chunk(&mut self, range: u64) {
            self.chunks.insert(range, vec![0; MIGRATING_BYTES]);
            self.log.push(format!("create {range}"));
        }
        fn settle_chunk(&mut self, range: u64) {
            self.chunks.get_mut(&range).unwrap().truncate(CHUNK_BYTES);
            self.log.push(format!("settle {range}"));
        }
        fn migrate(&mut self, moved: &[Moved]) -> Result<(), ()> {
            for m in moved {
                let id = m.id;
                assert!(self.set.remove(&id), "moved a liker not in the Set");
                assert_eq!(model::locate(id), (m.range, m.off));
                model::set_bit(self.chunks.get_mut(&m.range).unwrap(), m.off, true);
            }
            self.log.push(format!("migrate {}", moved.len()));
            Ok(())
        }
    }

    const CFG: Configs = Configs {
        promote_at: 512,
        last_range: model::MAX_ID / model::RANGE_IDS,
    };

    impl Mem {
        fn with(ids: impl IntoIterator<Item = u64>) -> Mem {
            Mem {
                set: ids.into_iter().collect(),
                ..Mem::default()
            }
        }

        /// The likers: Set members and chunk bits.
        fn likers(&self) -> BTreeSet<u64> {
            let mut out = self.set.clone();
            for (&r, c) in &self.chunks {
                model::each_bit(c, |off| {
                    if off < model::RANGE_IDS {
                        out.insert(r * model::RANGE_IDS + off);
                    }
                });
            }
            out
        }
    }

    /// Runs steps (as writes observing `count` would) until the promotion
    /// finishes; returns the steps taken and the longest step's writes.
    fn promote(m: &mut Mem, count: i64) -> (usize, usize) {
        let mut longest = 0;
        for n in 1..100_000 {
            let before = m.log.len();
            let ran = step(m, count, false, CFG);
            longest = longest.max(m.log.len() - before);
            if ran.finished {
                return (n, longest);
            }
            assert!(
                ran.stepped,
                "a promotion under way always steps: {:?}",
                m.log
            );
        }
        panic!("the promotion never finished");
    }

    #[test]
    fn a_dense_post_is_promoted_in_bounded_steps_and_keeps_every_liker() {
        let mut rng = StdRng::seed_from_u64(1);
        // 3 dense ranges (~1,500 likers each) and 20 far outliers.
        let mut ids: BTreeSet<u64> = (0..4_500).map(|_| rng.gen_range(0..192_000)).collect();
        ids.extend((0..20).map(|_| rng.gen_range(1_000_000_000..4_000_000_000)));
        let mut m = Mem::with(ids.clone());
        let count = ids.len() as i64;
        let (steps, longest) = promote(&mut m, count);
        assert_eq!(m.likers(), ids, "no liker lost or added");
        assert_eq!(m.chunks.keys().copied().collect::<Vec<_>>(), [0, 1, 2]);
        assert!(
            m.chunks.values().all(|c| c.len() == CHUNK_BYTES),
            "all settled"
        );
        // Only the outliers stay in the Set.
        assert!(m.set.iter().all(|&id| id >= 1_000_000_000));
        assert_eq!(
            m.set.len(),
            ids.iter().filter(|&&i| i >= 1_000_000_000).count()
        );
        assert_eq!(m.meta.get(&b"state"[..]), None);
        // The next check comes at once (at least 513).
        assert_eq!(m.meta[&b"check"[..]], b"513");
        // check, create, ⌈(4,500 + 20) / 64⌉ slices or so, settle.
        assert!(steps > 60 && steps < 100, "{steps} steps");
        // A step writes at most its chunks (3 here), its state and the
        // next check.
        assert!(longest <= 5, "{longest}");
    }

    #[test]
    fn a_sparse_post_is_not_promoted_and_waits_for_the_set_to_double() {
        let mut rng = StdRng::seed_from_u64(2);
        let ids: BTreeSet<u64> = (0..1_000)
            .map(|_| rng.gen_range(0..4_000_000_000))
            .collect();
        let n = ids.len() as u64;
        let mut m = Mem::with(ids);
        assert_eq!(step(&mut m, n as i64, false, CFG), STEPPED);
        assert_eq!(m.log, [format!("check {}", 2 * n)]);
        assert!(m.chunks.is_empty() && m.index.is_empty());
        // Not again before the Set has doubled, whatever the writes do.
        assert_eq!(step(&mut m, n as i64 + 32, false, CFG), Ran::default());
        assert_eq!(m.log.len(), 1);
    }

    #[test]
    fn no_check_below_the_threshold() {
        let mut m = Mem::with(0..512);
        assert_eq!(step(&mut m, 512, false, CFG), Ran::default());
        // The count says 513 but the Set holds 512: the Set decides.
        assert_eq!(step(&mut m, 513, false, CFG), Ran::default());
        assert!(m.log.is_empty());
        // like-promote-at above 512 moves the first check.
        let cfg = Configs {
            promote_at: 600,
            ..CFG
        };
        let mut m = Mem::with(0..600);
        assert_eq!(step(&mut m, 600, false, cfg), Ran::default());
        let mut m = Mem::with(0..601);
        assert_eq!(step(&mut m, 601, false, cfg), STEPPED);
    }

    #[test]
    fn each_step_is_bounded() {
        // 40 dense ranges: creation takes 8 chunks a step, settling 16.
        let ids: BTreeSet<u64> = (0..40 * model::RANGE_IDS).step_by(100).collect();
        let mut m = Mem::with(ids.clone());
        let count = ids.len() as i64;
        let mut creates = Vec::new();
        let mut settles = Vec::new();
        let mut moved = Vec::new();
        loop {
            let before = m.log.len();
            let ran = step(&mut m, count, false, CFG);
            let new = &m.log[before..];
            creates.push(new.iter().filter(|l| l.starts_with("create")).count());
            settles.push(new.iter().filter(|l| l.starts_with("settle")).count());
            for l in new.iter().filter_map(|l| l.strip_prefix("migrate ")) {
                moved.push(l.parse::<usize>().unwrap());
            }
            if ran.finished {
                break;
            }
        }
        assert_eq!(m.likers(), ids);
        assert_eq!(m.chunks.len(), 40);
        assert_eq!(creates.iter().max(), Some(&model::CREATE_STEP));
        assert_eq!(settles.iter().max(), Some(&model::SETTLE_STEP));
        assert!(moved.iter().all(|&n| n as u64 <= model::MOVE_STEP));
        assert_eq!(moved.iter().sum::<usize>(), ids.len());
    }

    #[test]
    fn garbled_or_foreign_state_stops_the_promotion() {
        for (field, value) in [
            (&b"at"[..], &b"12x"[..]),
            (b"at", b""),
            (b"at", b"123456789012345678901"),
            (b"state", b"dance"),
            (b"check", b"-1"),
            (b"check", b"many"),
        ] {
            let mut m = Mem::with(0..2_000);
            if field != b"state" && field != b"check" {
                m.meta.insert(b"state".to_vec(), b"move".to_vec());
            }
            m.meta.insert(field.to_vec(), value.to_vec());
            assert_eq!(step(&mut m, 2_000, false, CFG), Ran::default(), "{field:?}");
            assert!(m.log.is_empty(), "{field:?} {value:?}: {:?}", m.log);
        }
    }

    #[test]
    fn wrong_types_stop_a_step_without_writing() {
        // The Set of another type: no check; a slice steps but moves nothing.
        let mut m = Mem::with(0..2_000);
        m.set_wrong = true;
        assert_eq!(step(&mut m, 2_000, false, CFG), Ran::default());
        m.meta.insert(b"state".to_vec(), b"move".to_vec());
        m.meta.insert(b"at".to_vec(), b"0".to_vec());
        assert_eq!(step(&mut m, 2_000, false, CFG), STEPPED);
        assert!(m.log.is_empty());
        // The index of another type: the check samples, plans, writes nothing.
        let mut m = Mem::with(0..2_000);
        m.index_wrong = true;
        assert_eq!(step(&mut m, 2_000, false, CFG), STEPPED);
        assert!(m.log.is_empty());
        // A chunk key of another type is never created over nor moved into.
        let mut m = Mem::with(0..2_000);
        m.chunks.insert(0, Vec::new());
        promote(&mut m, 2_000);
        assert_eq!(m.set.len(), 2_000);
        assert_eq!(m.chunks[&0], Vec::<u8>::new());
        // A Set command that fails leaves the state where it was.
        let mut m = Mem::with(0..2_000);
        m.meta.insert(b"state".to_vec(), b"move".to_vec());
        m.meta.insert(b"at".to_vec(), b"0".to_vec());
        m.fail_scan = true;
        assert_eq!(step(&mut m, 2_000, false, CFG), STEPPED);
        assert!(m.log.is_empty());
    }

    #[test]
    fn a_migrating_chunk_without_state_restarts_the_migration() {
        let mut m = Mem::with(0..2_000);
        // Range 0 marked (bit 0 is the first byte's high bit, as GETBIT's).
        m.index = vec![0x80];
        m.chunks.insert(0, vec![0; MIGRATING_BYTES]);
        assert_eq!(step(&mut m, 2_000, true, CFG), Ran::default());
        assert_eq!(m.log, ["state move 0"]);
        promote(&mut m, 2_000);
        assert!(m.set.is_empty());
        assert_eq!(m.likers(), (0..2_000).collect());
        assert_eq!(m.chunks[&0].len(), CHUNK_BYTES);
    }
}
