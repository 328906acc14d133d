//! POLL.SYNC's and POLL.SYNCACK's plans: what a SYNC starts (a freeze of
//! the board under a new epoch, or a retry of the pending snapshot), the
//! order of the frozen copy, the deltas it replies, and whether a SYNCACK
//! acknowledges. No Redis types; the handlers read the meta, plan, and
//! the sliced job applies.

/// A frozen entry: (candidate, frozen votes, acknowledged votes).
pub type Frozen = (Vec<u8>, i64, i64);

/// What POLL.SYNC does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SyncStart {
    /// No snapshot pending: freeze the board as snapshot `epoch` (the
    /// last epoch + 1).
    Freeze { epoch: i64 },
    /// Snapshot `epoch` is pending (not acknowledged): reply its deltas
    /// again, writing nothing.
    Retry { epoch: i64 },
}

/// Why POLL.SYNC refuses: the epoch would pass 2^63 − 1 (an integer
/// overflow error naming `B:meta`'s `epoch`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EpochOverflow;

/// Plans POLL.SYNC from `B:meta`'s `pending` and `epoch` (0 when absent).
pub fn plan_sync(pending: i64, last: i64) -> Result<SyncStart, EpochOverflow> {
    if pending != 0 {
        return Ok(SyncStart::Retry { epoch: pending });
    }
    let epoch = last.checked_add(1).ok_or(EpochOverflow)?;
    Ok(SyncStart::Freeze { epoch })
}

/// Plans POLL.SYNCACK of `epoch`: true when it acknowledges the pending
/// snapshot (`pending` goes to 0, the frozen copy replaces the
/// acknowledged one), false (reply 0, write nothing) when none is pending
/// or another epoch is.
pub fn plan_syncack(pending: i64, epoch: i64) -> bool {
    pending != 0 && epoch == pending
}

/// Orders the entries a scan read into the board's order (votes, then
/// name, descending, as ZREVRANGE lists them), keeping a candidate the
/// scan met twice at its last sighting.
pub fn sort_frozen(frozen: Vec<Frozen>) -> Vec<Frozen> {
    let mut kept: Vec<(usize, Frozen)> = frozen.into_iter().enumerate().collect();
    kept.sort_unstable_by(|a, b| a.1 .0.cmp(&b.1 .0).then(b.0.cmp(&a.0)));
    kept.dedup_by(|a, b| a.1 .0 == b.1 .0);
    let mut out: Vec<Frozen> = kept.into_iter().map(|(_, e)| e).collect();
    out.sort_unstable_by(|a, b| (b.1, &b.0).cmp(&(a.1, &a.0)));
    out
}

/// Returns SYNC's deltas: the frozen candidates (already in the frozen
/// board's order) whose votes differ from the acknowledged ones, then the
/// candidates that left the board (`gone`: candidate, acknowledged votes)
/// in the acknowledged snapshot's order, each taken back whole; zero
/// changes left out.
pub fn sync_deltas(frozen: Vec<Frozen>, mut gone: Vec<(Vec<u8>, i64)>) -> Vec<(Vec<u8>, i64)> {
    gone.sort_unstable_by(|a, b| (b.1, &b.0).cmp(&(a.1, &a.0)));
    gone.dedup_by(|a, b| a.0 == b.0);
    let mut out = Vec::with_capacity(frozen.len() + gone.len());
    for (c, v, acked) in frozen {
        if v != acked {
            out.push((c, v - acked));
        }
    }
    for (c, acked) in gone {
        if acked != 0 {
            out.push((c, -acked));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sync_starts_a_freeze_or_retries_the_pending_epoch() {
        assert_eq!(plan_sync(0, 0), Ok(SyncStart::Freeze { epoch: 1 }));
        assert_eq!(plan_sync(0, 41), Ok(SyncStart::Freeze { epoch: 42 }));
        assert_eq!(plan_sync(7, 7), Ok(SyncStart::Retry { epoch: 7 }));
        // A retry never needs a new epoch, even at the top.
        assert_eq!(
            plan_sync(i64::MAX, i64::MAX),
            Ok(SyncStart::Retry { epoch: i64::MAX })
        );
        assert_eq!(plan_sync(0, i64::MAX), Err(EpochOverflow));
    }

    #[test]
    fn syncack_acknowledges_only_the_pending_epoch() {
        assert!(plan_syncack(3, 3));
        assert!(!plan_syncack(3, 2));
        assert!(!plan_syncack(3, 4));
        assert!(!plan_syncack(0, 0));
        assert!(!plan_syncack(0, 1));
    }

    fn f(c: &str, v: i64, a: i64) -> Frozen {
        (c.as_bytes().to_vec(), v, a)
    }

    #[test]
    fn frozen_copy_is_in_board_order_with_last_sightings() {
        let read = vec![f("a", 1, 0), f("b", 5, 0), f("a", 3, 1), f("c", 3, 0)];
        assert_eq!(
            sort_frozen(read),
            vec![f("b", 5, 0), f("c", 3, 0), f("a", 3, 1)]
        );
        assert!(sort_frozen(Vec::new()).is_empty());
    }

    #[test]
    fn deltas_leave_out_zero_changes_and_take_back_the_gone() {
        let frozen = vec![f("b", 5, 2), f("c", 3, 3), f("a", 1, 4)];
        let gone = vec![
            (b"x".to_vec(), 2),
            (b"y".to_vec(), 0),
            (b"z".to_vec(), 9),
            (b"x".to_vec(), 2),
        ];
        let d = sync_deltas(frozen, gone);
        let want: Vec<(Vec<u8>, i64)> = vec![
            (b"b".to_vec(), 3),
            (b"a".to_vec(), -3),
            (b"z".to_vec(), -9),
            (b"x".to_vec(), -2),
        ];
        assert_eq!(d, want);
    }
}
