//! RANK spread over a real cluster: one board's increments shared evenly by
//! the masters, equal to a single board on a standalone server fed the
//! same writes (global rank, top and around, ties included), through a
//! master kill and a shard's slot move; the soak run; the bench rows.

use super::*;

/// One leaderboard spread over 16 shards under RANK.INCR (and RANK.ADD,
/// which a retry may apply twice, in the phases that make every write
/// durable).
struct RankLoad {
    board: SpreadRank,
    members: u64,
}

const SINGLE_BOARD: &str = "board:{single}";
/// The achievement times: few distinct seconds, so that equal points tie
/// on the time too and the member decides (the exact tie order).
const T0: i64 = 1_767_225_600_000;

/// A member of the board: integers, and every fifth one a name (routed by
/// FNV-1a rather than `id mod n`).
fn member(id: u64) -> String {
    if id % 5 == 4 {
        format!("m-{id}")
    } else {
        id.to_string()
    }
}

/// `(time, amount)` of an op's value: `value = second × 64 + amount`.
fn split(value: i64) -> (i64, i64) {
    (T0 + (value / 64) * 1000, value % 64)
}

impl Workload for RankLoad {
    fn name(&self) -> &'static str {
        "RANK"
    }
    fn commands(&self) -> &'static [&'static str] {
        &["rank.incr", "rank.add"]
    }
    fn shard_keys(&self) -> Vec<String> {
        self.board.shards().keys().to_vec()
    }
    fn create(&self, c: &mut ClusterConnection) {
        assert!(self
            .board
            .at(T0)
            .create(c, &RankOptions::default())
            .unwrap());
    }
    fn create_single(&self, c: &mut Connection) {
        assert!(Rank::new(SINGLE_BOARD)
            .at(T0)
            .create(c, &RankOptions::default())
            .unwrap());
    }
    fn op(&self, rng: &mut Rng, t: u64, threads: u64, idempotent: bool) -> Op {
        let id = rng.below(self.members / threads) * threads + t;
        let second = rng.below(30) as i64;
        // Increments of 1 to 5 points; where a retry may apply a write
        // twice, sets of 0 to 40 points (the same points keep their time).
        let (kind, amount) = if idempotent {
            (1, rng.below(41) as i64)
        } else {
            (0, 1 + rng.below(5) as i64)
        };
        Op {
            id,
            kind,
            value: second * 64 + amount,
        }
    }
    fn apply(&self, c: &mut ClusterConnection, op: Op) -> RedisResult<String> {
        let (t, amount) = split(op.value);
        let m = member(op.id);
        let b = self.board.at(t);
        match op.kind {
            0 => b.incr(c, &m, amount)?,
            _ => b.add(c, &m, amount, None)?,
        };
        Ok(self.board.shards().key_of(&m).to_string())
    }
    fn apply_single(&self, c: &mut Connection, op: Op) {
        let (t, amount) = split(op.value);
        let b = Rank::new(SINGLE_BOARD).at(t);
        let m = member(op.id);
        match op.kind {
            0 => b.incr(c, &m, amount),
            _ => b.add(c, &m, amount, None),
        }
        .unwrap();
    }
    fn compare(&self, c: &mut ClusterConnection, s: &mut Connection) {
        let single = Rank::new(SINGLE_BOARD);
        let count = single.count(s).unwrap();
        assert_eq!(self.board.count(c).unwrap(), count);
        assert_eq!(
            self.board.top(c, 1000, 0).unwrap(),
            single.top(s, Some(1000), None).unwrap(),
            "top 1000"
        );
        assert_eq!(
            self.board.top(c, 20, 980).unwrap(),
            single.top(s, Some(20), Some(980)).unwrap(),
            "places 980 to 999 (a merge of each shard's best 1000)"
        );
        let step = (self.members / 150).max(1) as usize;
        for id in (0..self.members).step_by(step) {
            let m = member(id);
            assert_eq!(
                self.board.get(c, &m).unwrap(),
                single.get(s, &m).unwrap(),
                "get {m}"
            );
        }
        for id in (0..self.members).step_by(step * 10) {
            let m = member(id);
            assert_eq!(
                self.board.around(c, &m, 3).unwrap(),
                single.around(s, &m, 3).unwrap(),
                "around {m}"
            );
        }
    }
}

fn rank_load(members: u64) -> Arc<dyn Workload> {
    Arc::new(RankLoad {
        board: SpreadRank::new("board:hot", 16),
        members,
    })
}

#[test]
fn spread_rank_on_a_cluster() {
    scenario(rank_load(3_000), 4, 3_000, 800);
}

/// `make cluster-soak`: 200,000 increments on one spread board, then a
/// failover and a slot move under 20,000 more writes.
#[test]
#[ignore]
fn soak_spread_rank() {
    scenario(rank_load(100_000), 4, 200_000, 20_000);
}

/// `make cluster-bench`: RANK.INCR on one board of 16 shards from 4
/// clients, on 1 master and on 3 (the rows of
/// `bench_spread_shares_and_capacity`, measured the same way).
#[test]
#[ignore]
fn bench_spread_rank_shares_and_capacity() {
    const THREADS: u64 = 4;
    const PER: u64 = 10_000;
    let board = SpreadRank::new("board:bench", 16);
    let incr = |b: &SpreadRank, id: u64| (b.clone(), member(id % 50_000), 1 + (id % 5) as i64);

    let one = Server::start();
    {
        let mut c = one.conn();
        board.create(&mut c, &RankOptions::default()).unwrap();
        run(&mut c, &["CONFIG", "RESETSTAT"]);
    }
    let port = one.port;
    let b1 = board.clone();
    let wall = drive(
        THREADS,
        PER,
        move || {
            redis::Client::open(format!("redis://127.0.0.1:{port}/"))
                .unwrap()
                .get_connection()
                .unwrap()
        },
        move |c: &mut redis::Connection, id| {
            let (b, m, d) = incr(&b1, id);
            b.incr(c, &m, d).unwrap();
        },
    );
    let (calls, usec) = server_stat(&mut one.conn(), "rank.incr");
    let per_call = usec as f64 / calls as f64;
    eprintln!(
        "RANK.INCR spread 16, 1 master: {calls} calls, {per_call:.2} µs/call, capacity {:.0}/s; client wall rate {:.0}/s",
        1e6 / per_call,
        calls as f64 / wall.as_secs_f64()
    );

    let cl = Cluster::start();
    board
        .create(&mut cl.client(), &RankOptions::default())
        .unwrap();
    cl.reset_stats();
    let urls = cl.urls();
    let b3 = board.clone();
    let wall = drive(
        THREADS,
        PER,
        move || Conn::new(&urls).c,
        move |c: &mut ClusterConnection, id| {
            let (b, m, d) = incr(&b3, id);
            b.incr(c, &m, d).unwrap();
        },
    );
    let total = THREADS * PER;
    let mut limit = f64::INFINITY;
    for m in cl.masters() {
        let (calls, usec) = cl
            .commandstats(m)
            .get("rank.incr")
            .copied()
            .unwrap_or((0, 0));
        let per_call = usec as f64 / calls.max(1) as f64;
        let share = calls as f64 / total as f64;
        limit = limit.min((1e6 / per_call) / share);
        eprintln!(
            "RANK.INCR spread 16, 3 masters: master {m} served {calls} of {total} ({:.3}× even), {per_call:.2} µs/call",
            share * 3.0
        );
    }
    eprintln!(
        "RANK.INCR spread 16, 3 masters: capacity {limit:.0}/s (the busiest master saturated); client wall rate {:.0}/s",
        total as f64 / wall.as_secs_f64()
    );
}
