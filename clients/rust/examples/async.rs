//! The handles over an async connection (crate feature `aio`, on tokio):
//! `handle.aio()` has every command of the handle, with the same arguments
//! and replies, on any `redis::aio::ConnectionLike`.
//!
//! `cargo run -p hotpath-client --features aio --example async` with a
//! server that has the module on REDIS_URL (default redis://127.0.0.1:6379/).

use hotpath_client::{DelayQueue, JobOptions, Like, Poll, PollOptions, SpreadLike};

/// Runs the tour on `url`; returns the lines it prints.
pub async fn run(url: &str) -> redis::RedisResult<Vec<String>> {
    let client = redis::Client::open(url)?;
    let mut con = client.get_multiplexed_async_connection().await?;
    let mut out = Vec::new();

    let poll = Poll::new("poll:{9}");
    poll.aio().create(&mut con, &PollOptions::default()).await?;
    // A multiplexed connection is cheap to clone: votes from many tasks.
    let mut votes = Vec::new();
    for user in 0..10 {
        let (poll, mut con) = (poll.clone(), con.clone());
        votes.push(tokio::spawn(async move {
            let candidate = if user % 3 == 0 { "bob" } else { "alice" };
            poll.aio()
                .vote(&mut con, &format!("user:{user}"), candidate)
                .await
        }));
    }
    for v in votes {
        v.await.expect("the task ran")?;
    }
    let top = poll.aio().top(&mut con, Some(2), None).await?;
    out.push(format!(
        "{}={} {}={}",
        top[0].candidate, top[0].votes, top[1].candidate, top[1].votes
    ));

    let like = Like::new("post:{9}");
    let toggled = like.aio().toggle(&mut con, 42).await?;
    out.push(format!("liked {} count {}", toggled.liked, toggled.count));

    let queue = DelayQueue::new("jobs:{9}");
    queue
        .aio()
        .add(&mut con, "mail:1", b"hello", &JobOptions::default())
        .await?;
    let jobs = queue.aio().poll(&mut con, 30_000, Some(10), None).await?;
    let acked = queue
        .aio()
        .ack(&mut con, &jobs[0].id, jobs[0].receipt)
        .await?;
    out.push(format!("job {} acked {acked}", jobs[0].id));

    // A spread post (docs/spread.md): likes from many tasks go to their
    // shards; the count is one fan-out over the shards.
    let post = SpreadLike::new("post:{hot}", 4);
    post.aio().create(&mut con).await?;
    let mut likes = Vec::new();
    for user in 1..=8u64 {
        let (post, mut con) = (post.clone(), con.clone());
        likes.push(tokio::spawn(
            async move { post.aio().add(&mut con, user).await },
        ));
    }
    for l in likes {
        l.await.expect("the task ran")?;
    }
    let total = post.aio().count(&mut con).await?;
    let per_shard = post.aio().shard_counts(&mut con).await?;
    out.push(format!("spread likes {total} {per_shard:?}"));
    Ok(out)
}

#[allow(dead_code)]
#[tokio::main(flavor = "current_thread")]
async fn main() -> redis::RedisResult<()> {
    let url = std::env::var("REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379/".into());
    for line in run(&url).await? {
        println!("{line}");
    }
    Ok(())
}
