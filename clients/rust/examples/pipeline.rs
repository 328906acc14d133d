//! Reply types through `query` and pipelines: every reply type implements
//! `redis::FromRedisValue`, so raw commands read into them, and a handle
//! gives its commands as `redis::Cmd`s (`handle.cmd()`) for `redis::pipe()`.
//!
//! `cargo run -p hotpath-client --example pipeline` with a server that has
//! the module on REDIS_URL (default redis://127.0.0.1:6379/).

use hotpath_client::{
    Grab, Maybe, PacketInfo, PollEntry, RateResult, RedPacket, Stock, StockInfo, StockOptions,
};

/// Runs the tour on `url`; returns the lines it prints.
pub fn run(url: &str) -> redis::RedisResult<Vec<String>> {
    let mut con = redis::Client::open(url)?.get_connection()?;
    let mut out = Vec::new();

    // A raw command, read into a reply type.
    redis::cmd("POLL.VOTE")
        .arg("poll:{7}")
        .arg("user:1")
        .arg("alice")
        .query::<bool>(&mut con)?;
    let top: Vec<PollEntry> = redis::cmd("POLL.TOP")
        .arg("poll:{7}")
        .arg(10)
        .query(&mut con)?;
    out.push(format!("top: {top:?}"));
    let rate: RateResult = redis::cmd("RATE.CHECK")
        .arg("rate:{7}")
        .arg(5)
        .arg(1000)
        .query(&mut con)?;
    out.push(format!(
        "allowed {} remaining {}",
        rate.allowed, rate.remaining
    ));

    // A red packet split and grabbed in one round trip: the handle's
    // commands in a pipeline, the replies read as a tuple.
    let packet = RedPacket::new("packet:{7}");
    let (shares, a, b): (i64, Grab, Grab) = redis::pipe()
        .add_command(packet.cmd().split(1000, 2, Some("EQUAL"), None))
        .add_command(packet.cmd().grab("user:1"))
        .add_command(packet.cmd().grab("user:2"))
        .query(&mut con)?;
    out.push(format!(
        "{shares} shares: {} {} / {} {}",
        a.status, a.cents, b.status, b.cents
    ));

    // An entity that is not there: its INFO is an empty reply, which
    // `Maybe` reads as None (`Option` reads nil as None).
    let (info, none): (Maybe<PacketInfo>, Maybe<PacketInfo>) = redis::pipe()
        .add_command(packet.cmd().info())
        .add_command(RedPacket::new("packet:{none}").cmd().info())
        .query(&mut con)?;
    out.push(format!(
        "left: {:?}; unknown packet: {:?}",
        info.0.map(|i| i.left_count),
        none.0
    ));

    // A transaction (MULTI/EXEC): created and reserved together.
    let stock = Stock::new("stock:{7}");
    let (_, r, info): (bool, hotpath_client::Reservation, StockInfo) = redis::pipe()
        .atomic()
        .add_command(stock.cmd().create(10, &StockOptions::default()))
        .add_command(stock.cmd().reserve("user:1", "order:1", 3))
        .add_command(stock.cmd().info())
        .query(&mut con)?;
    out.push(format!(
        "reserved: {:?}, available {}",
        r.status, info.available
    ));
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
