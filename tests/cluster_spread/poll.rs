//! POLL spread over 16 shards on the cluster: votes and revocations from
//! several clients, each master's share of them, the exact merged board
//! equal to a single-node poll fed the same writes, through a master kill
//! and a shard's slot move.

use super::*;

struct PollLoad {
    poll: SpreadPoll,
    voters: u64,
    cands: u64,
}

const SINGLE_POLL: &str = "poll:{single}";

/// A voter id: integers, and every third one a name (routed by FNV-1a
/// rather than `id mod n`).
fn voter(id: u64) -> String {
    if id % 3 == 2 {
        format!("user:{id}")
    } else {
        id.to_string()
    }
}

impl PollLoad {
    /// A skewed choice of candidate: a few popular ones, a long tail.
    fn candidate(&self, op: Op) -> String {
        format!("c{}", op.value)
    }
}

impl Workload for PollLoad {
    fn name(&self) -> &'static str {
        "POLL"
    }
    fn commands(&self) -> &'static [&'static str] {
        &["poll.vote", "poll.revoke"]
    }
    fn shard_keys(&self) -> Vec<String> {
        self.poll.shards().keys().to_vec()
    }
    fn create(&self, c: &mut ClusterConnection) {
        assert!(self.poll.create(c, &PollOptions::default()).unwrap());
    }
    fn create_single(&self, c: &mut Connection) {
        assert!(Poll::new(SINGLE_POLL)
            .create(c, &PollOptions::default())
            .unwrap());
    }
    fn op(&self, rng: &mut Rng, t: u64, threads: u64, _idempotent: bool) -> Op {
        // Mostly votes (ONCE: a vote again is a duplicate), some voters
        // take theirs back: each is safe to apply twice.
        let id = rng.below(self.voters / threads) * threads + t;
        let kind = u8::from(rng.below(10) == 9);
        let (a, b) = (rng.below(self.cands), rng.below(self.cands));
        Op {
            id,
            kind,
            value: (a * b / self.cands) as i64,
        }
    }
    fn apply(&self, c: &mut ClusterConnection, op: Op) -> RedisResult<String> {
        let u = voter(op.id);
        match op.kind {
            0 => self.poll.vote(c, &u, &self.candidate(op)).map(|_| ())?,
            _ => self.poll.revoke(c, &u, None).map(|_| ())?,
        };
        Ok(self.poll.shards().key_of(&u).to_string())
    }
    fn apply_single(&self, c: &mut Connection, op: Op) {
        let p = Poll::new(SINGLE_POLL);
        let u = voter(op.id);
        match op.kind {
            0 => p.vote(c, &u, &self.candidate(op)).map(|_| ()),
            _ => p.revoke(c, &u, None).map(|_| ()),
        }
        .unwrap();
    }
    fn compare(&self, c: &mut ClusterConnection, s: &mut Connection) {
        let single = Poll::new(SINGLE_POLL);
        let board = single.top(s, Some(1000), None).unwrap();
        assert!(board.len() as u64 <= self.cands);
        assert_eq!(self.poll.top(c, 1000, 0).unwrap(), board, "the whole board");
        assert_eq!(
            self.poll.top(c, 10, 0).unwrap(),
            board[..10.min(board.len())]
        );
        for e in board.iter().step_by(17) {
            assert_eq!(
                self.poll.rank(c, &e.candidate).unwrap(),
                single.rank(s, &e.candidate).unwrap(),
                "{}",
                e.candidate
            );
        }
        let (a, b) = (
            self.poll.info(c).unwrap().unwrap(),
            single.info(s).unwrap().unwrap(),
        );
        assert_eq!((a.ballots, a.votes), (b.ballots, b.votes));
        for id in (0..self.voters).step_by((self.voters / 300).max(1) as usize) {
            let u = voter(id);
            assert_eq!(
                self.poll.status(c, &u).unwrap(),
                single.status(s, &u).unwrap(),
                "{u}"
            );
        }
    }
}

fn poll_load(voters: u64) -> Arc<dyn Workload> {
    Arc::new(PollLoad {
        poll: SpreadPoll::new("poll:hot", 16),
        voters,
        cands: 200,
    })
}

/// `make test`: [`scenario`] as every spread family runs it: even and
/// exact, then a master killed and a shard's slot moved under durable
/// votes, the board equal to a single-node poll fed the same writes and
/// every replica equal to its master.
#[test]
fn spread_poll_on_a_cluster() {
    scenario(poll_load(20_000), 4, 8_000, 1_000);
}

/// `make cluster-soak`: 200,000 votes on one spread poll, then a failover
/// and a slot move under 20,000 more.
#[test]
#[ignore]
fn soak_spread_poll() {
    scenario(poll_load(1_000_000), 4, 200_000, 20_000);
}
