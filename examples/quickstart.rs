//! hotpath from Rust (the `redis` crate): a poll with a live board.
//!
//! Run: `cargo run --release --example quickstart -- redis://127.0.0.1:6379/`

use redis::{Commands, RedisResult};

/// Runs the tour against the server at `url` and returns the top two.
pub fn tour(url: &str) -> RedisResult<Vec<(String, i64)>> {
    let client = redis::Client::open(url)?;
    let mut con = client.get_connection()?;
    let _: () = con.del(&["poll:{rs}:meta", "poll:{rs}:voted", "poll:{rs}:board"])?;

    let _: () = redis::cmd("POLL.CREATE")
        .arg("poll:{rs}")
        .arg(&["CANDIDATES", "3", "rust", "go", "zig"])
        .query(&mut con)?;
    for (user, lang) in [("u1", "rust"), ("u2", "zig"), ("u3", "rust"), ("u1", "go")] {
        let counted: i64 = redis::cmd("POLL.VOTE")
            .arg("poll:{rs}")
            .arg(user)
            .arg(lang)
            .query(&mut con)?;
        println!("{user} votes {lang}: counted={counted}");
    }
    let top: Vec<(String, i64)> = redis::cmd("POLL.TOP")
        .arg("poll:{rs}")
        .arg(2)
        .query(&mut con)?;
    println!("{top:?}"); // [("rust", 2), ("zig", 1)]
    Ok(top)
}

#[allow(dead_code)]
fn main() -> RedisResult<()> {
    let url = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "redis://127.0.0.1:6379/".into());
    tour(&url).map(|_| ())
}
