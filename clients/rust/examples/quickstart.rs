//! The handles, blocking: one method per command, parsed replies.
//!
//! `cargo run -p hotpath-client --example quickstart` with a server that has
//! the module on REDIS_URL (default redis://127.0.0.1:6379/).

use hotpath_client::{Lock, LockOptions, Poll, PollOptions, Rank, RankOptions, Rate, RateOptions};

/// Runs the tour on `url`; returns the lines it prints.
pub fn run(url: &str) -> redis::RedisResult<Vec<String>> {
    let mut con = redis::Client::open(url)?.get_connection()?;
    let mut out = Vec::new();

    // A poll: one vote per user, the board in one call.
    let poll = Poll::new("poll:{42}");
    poll.create(&mut con, &PollOptions::default())?;
    poll.vote(&mut con, "user:1", "alice")?; // true: counted
    poll.vote(&mut con, "user:2", "alice")?;
    let again = poll.vote(&mut con, "user:1", "bob")?; // false: voted already
    let top = poll.top(&mut con, Some(10), None)?; // Vec<PollEntry>
    out.push(format!(
        "vote again: {again}; top: {}={}",
        top[0].candidate, top[0].votes
    ));

    // A leaderboard: ties go to who got there first.
    let board = Rank::new("week:{42}").at(1_767_225_600_000); // pinned clock
    board.create(&mut con, &RankOptions::default())?;
    board.add(&mut con, "kim", 130, None)?;
    board
        .at(1_767_225_601_000)
        .add(&mut con, "lee", 130, None)?;
    let kim = board.get(&mut con, "kim")?.expect("on the board");
    let lee = board.get(&mut con, "lee")?.expect("on the board");
    out.push(format!("kim #{} lee #{}", kim.rank + 1, lee.rank + 1));

    // A rate limit: 2 calls a second.
    let rate = Rate::new("rate:{api:u1}");
    let o = RateOptions::default();
    let calls: Vec<bool> = (0..3)
        .map(|_| rate.check(&mut con, 2, 1000, &o).map(|r| r.allowed))
        .collect::<redis::RedisResult<_>>()?;
    out.push(format!("allowed: {calls:?}"));

    // A lock with a fencing token.
    let lock = Lock::new("lock:{order:42}");
    let token = lock.acquire(&mut con, "worker-1", 30_000, &LockOptions::default())?;
    let busy = lock.acquire(&mut con, "worker-2", 30_000, &LockOptions::default())?;
    out.push(format!("token: {token:?}, second owner: {busy:?}"));
    lock.release(&mut con, "worker-1")?;
    Ok(out)
}

#[allow(dead_code)]
fn main() -> redis::RedisResult<()> {
    let url = std::env::var("REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379/".into());
    for line in run(&url)? {
        println!("{line}");
    }
    Ok(())
}
