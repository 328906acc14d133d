//! POLL.VOTE's and POLL.REVOKE's plans: from the parsed arguments and
//! the state read, what to write and reply, or the refusal (a refusal
//! writes nothing). No Redis types: a read the plan needs only on some
//! paths (MULTI's vote list, a ballot) is a closure the handler gives, so
//! the checks keep their order and an error of that read comes where it
//! always came.

use super::{ballot_field, ballot_value, day_of, format_user_votes, vote_overflows};
use super::{Bytes, Mode, Rules};

/// Why POLL.VOTE refuses a vote; `E` is the error of a read the plan
/// asked for (a corrupt vote list).
#[derive(Debug, PartialEq, Eq)]
pub enum VoteRefusal<E> {
    /// `ERR poll: not open`: before START or from END on.
    NotOpen,
    /// `ERR poll: unknown candidate`: a closed poll's board lacks it.
    UnknownCandidate,
    /// `ERR poll: candidate must not contain ':' in MODE MULTI`.
    Colon,
    /// `ERR poll: candidate must be valid UTF-8 in MODE MULTI`.
    NotUtf8,
    /// `ERR poll: vote limit reached`: MULTI's MAXVOTES.
    LimitReached,
    /// The candidate's count is at 2^53 − 1 (an integer overflow error
    /// naming `B:board` and the candidate).
    Overflow,
    /// A read the plan asked for failed.
    Read(E),
}

impl<E> VoteRefusal<E> {
    /// Returns the text after `poll: ` of a refusal that has a fixed one.
    pub fn message(&self) -> Option<&'static str> {
        Some(match self {
            VoteRefusal::NotOpen => "not open",
            VoteRefusal::UnknownCandidate => "unknown candidate",
            VoteRefusal::Colon => "candidate must not contain ':' in MODE MULTI",
            VoteRefusal::NotUtf8 => "candidate must be valid UTF-8 in MODE MULTI",
            VoteRefusal::LimitReached => "vote limit reached",
            VoteRefusal::Overflow | VoteRefusal::Read(_) => return None,
        })
    }
}

/// What POLL.VOTE does. (One plan lives on the stack per call: its
/// ballot field and record stay inline, as the handler kept them, rather
/// than boxed for the sake of the empty variant.)
#[derive(Debug, PartialEq, Eq)]
#[allow(clippy::large_enum_variant)]
pub enum VotePlan {
    /// The vote is counted already (its ballot exists, or MULTI's list
    /// holds the candidate): reply 0, write nothing.
    Duplicate,
    /// Set the ballot `field` (None: the user as sent, MODE ONCE) of
    /// `B:voted` to `record`, add 1 to the candidate on `B:board` and, in
    /// MULTI, set the user's field of `B:uservotes` to `list`; reply 1.
    Count {
        field: Option<Bytes>,
        record: Bytes,
        list: Option<String>,
    },
}

/// Plans a vote of `user` for `cand` at `now` under `rules`. `score` is
/// the candidate's count on the board (None: not on it); `list` reads
/// MULTI's vote list of the user, `taken` tells whether a `B:voted` field
/// exists. Checks in this order: the window, a closed poll's candidate,
/// MULTI's candidate form, its list (a duplicate, then MAXVOTES), the
/// ballot (a duplicate), the count's overflow.
pub fn plan_vote<E>(
    rules: &Rules,
    now: i64,
    user: &[u8],
    cand: &[u8],
    score: Option<f64>,
    list: impl FnOnce() -> Result<Vec<String>, E>,
    taken: impl FnOnce(&[u8]) -> bool,
) -> Result<VotePlan, VoteRefusal<E>> {
    if !rules.is_open(now) {
        return Err(VoteRefusal::NotOpen);
    }
    if rules.closed && score.is_none() {
        return Err(VoteRefusal::UnknownCandidate);
    }
    let (field, list) = match rules.mode {
        // The dedup member of ONCE is the user the client sent.
        Mode::Once => (None, None),
        Mode::Daily => {
            let day = day_of(now, rules.tz_minutes);
            (Some(ballot_field(Mode::Daily, user, cand, day)), None)
        }
        Mode::Multi => {
            // The dedup member is `user:candidate`: with no ':' in
            // candidates it splits at its last ':' unambiguously, whatever
            // the user id holds. MULTI keeps each user's candidates as a
            // JSON array of strings.
            if cand.contains(&b':') {
                return Err(VoteRefusal::Colon);
            }
            let Ok(cand_s) = std::str::from_utf8(cand) else {
                return Err(VoteRefusal::NotUtf8);
            };
            let mut list = list().map_err(VoteRefusal::Read)?;
            // A ballot without its list entry (a hand edit) is a duplicate
            // by its ballot, below.
            if list.iter().any(|c| c == cand_s) {
                return Ok(VotePlan::Duplicate);
            }
            if list.len() as i64 >= rules.maxvotes {
                return Err(VoteRefusal::LimitReached);
            }
            list.push(cand_s.to_string());
            let field = ballot_field(Mode::Multi, user, cand, 0);
            (Some(field), Some(format_user_votes(&list)))
        }
    };
    if taken(field.as_deref().unwrap_or(user)) {
        return Ok(VotePlan::Duplicate);
    }
    // A count at 2^53 − 1 takes no more votes (every read of the board
    // would refuse it).
    if score.is_some_and(|s| vote_overflows(s + 1.0)) {
        return Err(VoteRefusal::Overflow);
    }
    Ok(VotePlan::Count {
        field,
        record: ballot_value(cand, now),
        list,
    })
}

/// What POLL.REVOKE does: delete the `B:voted` fields `del`, take 1 from
/// each candidate of `taken` that is on the board, and in MULTI set the
/// user's list to `list` (`Some(None)`: delete its field; None: leave
/// it). Reply the number of candidates taken back; nothing is written
/// when there are none.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct RevokePlan {
    pub del: Vec<Bytes>,
    pub taken: Vec<Vec<u8>>,
    pub list: Option<Option<String>>,
}

/// Plans taking back `user`'s votes at `now` (only the one for `only`
/// when given). ONCE and DAILY read one ballot through `ballot`: the
/// candidate stored at a `B:voted` field, if any; MULTI reads the user's
/// list through `list`. A read's error is the only refusal.
pub fn plan_revoke<E>(
    rules: &Rules,
    now: i64,
    user: &[u8],
    only: Option<&[u8]>,
    ballot: impl FnOnce(&[u8]) -> Result<Option<Vec<u8>>, E>,
    list: impl FnOnce() -> Result<Vec<String>, E>,
) -> Result<RevokePlan, E> {
    let mut plan = RevokePlan::default();
    match rules.mode {
        Mode::Once | Mode::Daily => {
            let day = if rules.mode == Mode::Daily {
                day_of(now, rules.tz_minutes)
            } else {
                0
            };
            let field = ballot_field(rules.mode, user, b"", day);
            if let Some(cand) = ballot(&field)? {
                if only.is_none_or(|o| o == cand.as_slice()) {
                    plan.del.push(field);
                    plan.taken.push(cand);
                }
            }
        }
        Mode::Multi => {
            let (gone, kept): (Vec<String>, Vec<String>) = list()?
                .into_iter()
                .partition(|cand| only.is_none_or(|o| o == cand.as_bytes()));
            for cand in &gone {
                plan.del
                    .push(ballot_field(Mode::Multi, user, cand.as_bytes(), 0));
                plan.taken.push(cand.as_bytes().to_vec());
            }
            if !gone.is_empty() {
                plan.list = Some((!kept.is_empty()).then(|| format_user_votes(&kept)));
            }
        }
    }
    Ok(plan)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules(mode: Mode) -> Rules {
        Rules {
            mode,
            maxvotes: if mode == Mode::Multi { 2 } else { 1 },
            ..Rules::default()
        }
    }

    type Plan = Result<VotePlan, VoteRefusal<&'static str>>;

    /// Plans a vote with a list read and a ballot lookup that must not be
    /// asked for (the checks before them refuse).
    fn vote_no_reads(r: &Rules, now: i64, cand: &[u8], score: Option<f64>) -> Plan {
        plan_vote(
            r,
            now,
            b"u",
            cand,
            score,
            || -> Result<Vec<String>, &'static str> { panic!("list read") },
            |_| panic!("ballot read"),
        )
    }

    fn vote(r: &Rules, cand: &[u8], score: Option<f64>, list: &[&str], taken: bool) -> Plan {
        let list: Vec<String> = list.iter().map(|s| s.to_string()).collect();
        plan_vote(r, 5, b"u", cand, score, || Ok(list), |_| taken)
    }

    #[test]
    fn a_vote_outside_the_window_is_refused_first() {
        let mut r = rules(Mode::Multi);
        r.start = 10;
        r.end = 20;
        r.closed = true;
        for now in [9, 20, 21] {
            let p = vote_no_reads(&r, now, b"a:b", None);
            assert_eq!(p, Err(VoteRefusal::NotOpen), "{now}");
        }
        assert_eq!(
            vote_no_reads(&r, 10, b"a:b", None),
            Err(VoteRefusal::UnknownCandidate)
        );
        assert_eq!(
            vote_no_reads(&r, 19, b"a:b", Some(0.0)),
            Err(VoteRefusal::Colon)
        );
        assert_eq!(
            vote_no_reads(&r, 19, b"\xff", Some(0.0)),
            Err(VoteRefusal::NotUtf8)
        );
    }

    #[test]
    fn multi_reads_its_list_then_the_ballot() {
        let r = rules(Mode::Multi);
        let bad = plan_vote(&r, 5, b"u", b"a", None, || Err("corrupt"), |_| false);
        assert_eq!(bad, Err(VoteRefusal::Read("corrupt")));
        assert_eq!(vote(&r, b"a", None, &["a"], false), Ok(VotePlan::Duplicate));
        assert_eq!(
            vote(&r, b"c", None, &["a", "b"], false),
            Err(VoteRefusal::LimitReached)
        );
        // A ballot without its list entry (a hand edit).
        assert_eq!(vote(&r, b"b", None, &["a"], true), Ok(VotePlan::Duplicate));
        let mut asked = Vec::new();
        let p = plan_vote(
            &r,
            5,
            b"u:1",
            b"b",
            Some(3.0),
            || Ok::<_, ()>(vec!["a".to_string()]),
            |f| {
                asked = f.to_vec();
                false
            },
        );
        assert_eq!(asked, b"u:1:b");
        assert_eq!(
            p,
            Ok(VotePlan::Count {
                field: Some(Bytes::from_slice(b"u:1:b")),
                record: Bytes::from_slice(b"b:5"),
                list: Some(r#"["a","b"]"#.to_string()),
            })
        );
    }

    #[test]
    fn once_and_daily_dedup_by_their_ballot_field() {
        let once = rules(Mode::Once);
        assert_eq!(
            vote(&once, b"a", None, &[], false),
            Ok(VotePlan::Count {
                field: None,
                record: Bytes::from_slice(b"a:5"),
                list: None,
            })
        );
        assert_eq!(vote(&once, b"a", None, &[], true), Ok(VotePlan::Duplicate));
        let mut daily = rules(Mode::Daily);
        daily.tz_minutes = 60;
        let now = 1_735_686_000_000; // 2024-12-31T23:00Z, 2025-01-01 at UTC+1
        let mut asked = Vec::new();
        let p = plan_vote(
            &daily,
            now,
            b"u",
            b"a",
            None,
            || -> Result<Vec<String>, ()> { panic!("list read") },
            |f| {
                asked = f.to_vec();
                false
            },
        );
        assert_eq!(asked, b"u:20250101");
        assert!(matches!(p, Ok(VotePlan::Count { list: None, .. })));
    }

    #[test]
    fn a_count_at_2_53_overflows_unless_the_vote_is_a_duplicate() {
        let r = rules(Mode::Once);
        let top = super::super::MAX_VOTES;
        assert_eq!(
            vote(&r, b"a", Some(top), &[], false),
            Err(VoteRefusal::Overflow)
        );
        assert_eq!(
            vote(&r, b"a", Some(top), &[], true),
            Ok(VotePlan::Duplicate)
        );
        assert!(vote(&r, b"a", Some(top - 1.0), &[], false).is_ok());
    }

    #[test]
    fn every_refusal_but_overflow_and_read_has_its_text() {
        let all: [VoteRefusal<()>; 7] = [
            VoteRefusal::NotOpen,
            VoteRefusal::UnknownCandidate,
            VoteRefusal::Colon,
            VoteRefusal::NotUtf8,
            VoteRefusal::LimitReached,
            VoteRefusal::Overflow,
            VoteRefusal::Read(()),
        ];
        let texts: Vec<Option<&str>> = all.iter().map(VoteRefusal::message).collect();
        assert_eq!(texts.iter().filter(|t| t.is_some()).count(), 5);
        assert_eq!(texts[0], Some("not open"));
    }

    fn revoke(r: &Rules, only: Option<&[u8]>, stored: Option<&[u8]>, list: &[&str]) -> RevokePlan {
        let list: Vec<String> = list.iter().map(|s| s.to_string()).collect();
        plan_revoke(
            r,
            5,
            b"u",
            only,
            |_| Ok::<_, ()>(stored.map(<[u8]>::to_vec)),
            || Ok(list),
        )
        .unwrap()
    }

    #[test]
    fn revoke_takes_back_the_ballot_or_the_list() {
        let once = rules(Mode::Once);
        assert_eq!(revoke(&once, None, None, &[]), RevokePlan::default());
        let p = revoke(&once, None, Some(b"a"), &[]);
        assert_eq!(p.del, vec![Bytes::from_slice(b"u")]);
        assert_eq!(p.taken, vec![b"a".to_vec()]);
        assert_eq!(p.list, None);
        assert_eq!(
            revoke(&once, Some(b"b"), Some(b"a"), &[]),
            RevokePlan::default()
        );
        let multi = rules(Mode::Multi);
        let p = revoke(&multi, Some(b"b"), None, &["a", "b"]);
        assert_eq!(p.del, vec![Bytes::from_slice(b"u:b")]);
        assert_eq!(p.list, Some(Some(r#"["a"]"#.to_string())));
        let p = revoke(&multi, None, None, &["a", "b"]);
        assert_eq!(p.taken, vec![b"a".to_vec(), b"b".to_vec()]);
        assert_eq!(p.list, Some(None));
        assert_eq!(
            revoke(&multi, Some(b"c"), None, &["a"]),
            RevokePlan::default()
        );
    }

    #[test]
    fn a_failed_read_is_revoke_s_only_refusal() {
        let once = rules(Mode::Once);
        let e = plan_revoke(&once, 5, b"u", None, |_| Err("bad"), || Ok(vec![]));
        assert_eq!(e, Err("bad"));
        let multi = rules(Mode::Multi);
        let e = plan_revoke(&multi, 5, b"u", None, |_| Ok(None), || Err("bad"));
        assert_eq!(e, Err("bad"));
    }
}
