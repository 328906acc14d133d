//! The Rust client at the `redis` crate's level: every reply type read
//! through `query` and `redis::pipe()` (RESP2 and RESP3, plain pipelines
//! and MULTI/EXEC), the handles over async connections (a multiplexed
//! connection, the async cluster client, a server without the module that
//! the default backend reaches through the Functions library), and the
//! client's examples (clients/rust/examples, compiled into this test) with
//! the README that shows them.

use crate::common;

use common::cluster::{Cluster, ClusterOpts};
use common::*;
use hotpath_client::*;

#[path = "../clients/rust/examples/async.rs"]
mod async_example;
#[path = "../clients/rust/examples/pipeline.rs"]
mod pipeline_example;
#[path = "../clients/rust/examples/quickstart.rs"]
mod quickstart_example;

const NOW: i64 = 1_767_225_600_000;
/// IDEM's records expire `idem-ttl` after their NOW: one in 2030.
const LATER: i64 = 1_893_456_000_000;

/// LIKE.RECENT answers only with `like-recent` set (docs/like.md).
const RECENT: [&str; 2] = ["--hotpath.like-recent", "10"];

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

fn url(s: &Server, resp3: bool) -> String {
    let proto = if resp3 { "?protocol=resp3" } else { "" };
    format!("redis://127.0.0.1:{}/{proto}", s.port)
}

/// Every reply type from a raw command or a handle's `cmd()` in a
/// pipeline, equal to what the handle's own method parses.
fn replies_through_query(con: &mut redis::Connection, t: &str) {
    let k = |name: &str| format!("{name}:{{{t}}}");

    // POLL: raw commands into the reply types, and a pipeline of them.
    let p = Poll::new(k("poll")).at(NOW);
    assert!(p.create(con, &PollOptions::default()).unwrap());
    let vote = |u: &str, c: &str| p.cmd().vote(u, c);
    type PollReplies = (
        bool,
        bool,
        bool,
        Vec<PollEntry>,
        Option<PollRank>,
        Option<PollRank>,
        PollInfo,
        PollInfo,
        PollSync,
    );
    let got: PollReplies = redis::pipe()
        .add_command(vote("u1", "alice"))
        .add_command(vote("u2", "alice"))
        .add_command(vote("u1", "bob"))
        .add_command(p.cmd().top(Some(10), None))
        .add_command(p.cmd().rank("alice"))
        .add_command(p.cmd().rank("zed"))
        .add_command(p.cmd().info())
        .add_command(Poll::new(k("nopoll")).cmd().info())
        .add_command(p.cmd().sync())
        .query(con)
        .unwrap();
    let alice = PollEntry {
        candidate: "alice".into(),
        votes: 2,
    };
    assert_eq!((got.0, got.1, got.2), (true, true, false));
    assert_eq!(got.3, vec![alice.clone()]);
    assert_eq!(got.3, p.top(con, Some(10), None).unwrap());
    assert_eq!(got.4, Some(PollRank { rank: 0, votes: 2 }));
    assert_eq!(got.5, None);
    assert_eq!((got.6.ballots, got.6.votes), (2, 2));
    assert_eq!(Some(got.6), p.info(con).unwrap());
    // A poll never created reads as an empty one (docs/reference/poll.md).
    assert_eq!((got.7.mode.as_str(), got.7.ballots), ("ONCE", 0));
    assert_eq!(got.8.deltas, vec![alice.clone()]);
    let raw: Vec<PollEntry> = redis::cmd("POLL.TOP")
        .arg(k("poll"))
        .arg(10)
        .query(con)
        .unwrap();
    assert_eq!(raw, vec![alice]);
    // An absent entity asked for as the type itself: a clear error.
    let e = redis::cmd("REDPACKET.INFO")
        .arg(k("nopacket"))
        .query::<PacketInfo>(con)
        .unwrap_err();
    assert!(e.to_string().contains("no such entity"), "{e}");

    // RANK: the record reply (a map in RESP3), rows, and a nil list.
    let b = Rank::new(k("board")).at(NOW);
    assert!(b.create(con, &RankOptions::default()).unwrap());
    type RankReplies = (
        i64,
        i64,
        RankEntry,
        Vec<RankMember>,
        Option<Vec<RankPlace>>,
        Option<Vec<RankPlace>>,
        Option<RankEntry>,
    );
    let got: RankReplies = redis::pipe()
        .add_command(b.cmd().add("kim", 130, None))
        .add_command(b.at(NOW + 1000).cmd().add("lee", 130, None))
        .add_command(b.cmd().get("lee"))
        .add_command(b.cmd().top(Some(5), None))
        .add_command(b.cmd().around("kim", 1))
        .add_command(b.cmd().around("zed", 1))
        .add_command(b.cmd().get("zed"))
        .query(con)
        .unwrap();
    assert_eq!(
        got.2,
        RankEntry {
            points: 130,
            rank: 1,
            achieved_ms: Some(NOW + 1000)
        }
    );
    assert_eq!(got.3, b.top(con, Some(5), None).unwrap());
    assert_eq!(
        got.3.iter().map(|m| m.member.as_str()).collect::<Vec<_>>(),
        ["kim", "lee"]
    );
    assert_eq!(got.4, b.around(con, "kim", 1).unwrap());
    assert_eq!(got.4.unwrap().len(), 2);
    assert_eq!((got.5, got.6), (None, None));

    // LIKE
    let l = Like::new(k("post")).at(NOW);
    let got: (
        LikeToggle,
        LikeChange,
        LikeChange,
        Vec<Liker>,
        LikeInfo,
        Vec<bool>,
    ) = redis::pipe()
        .add_command(l.cmd().toggle(7))
        .add_command(l.cmd().add(8))
        .add_command(l.cmd().add(8))
        .add_command(l.cmd().recent(Some(5)))
        .add_command(l.cmd().info())
        .add_command(l.cmd().check(&[7, 9]))
        .query(con)
        .unwrap();
    assert_eq!(
        got.0,
        LikeToggle {
            liked: true,
            count: 1
        }
    );
    assert_eq!(
        got.1,
        LikeChange {
            changed: true,
            count: 2
        }
    );
    assert_eq!(
        got.2,
        LikeChange {
            changed: false,
            count: 2
        }
    );
    assert_eq!(got.3, l.recent(con, Some(5)).unwrap());
    assert_eq!(got.3.iter().map(|x| x.user).collect::<Vec<_>>(), [8, 7]);
    assert_eq!(got.4, l.info(con).unwrap());
    assert_eq!(got.5, [true, false]);

    // REDPACKET, in a transaction; GRABBED is a map in RESP3.
    let r = RedPacket::new(k("packet")).at(NOW);
    let got: (i64, Grab, Grab, PacketInfo, Vec<(String, i64)>) = redis::pipe()
        .atomic()
        .add_command(r.cmd().split(1000, 2, Some("EQUAL"), None))
        .add_command(r.cmd().grab("u1"))
        .add_command(r.cmd().grab("u1"))
        .add_command(r.cmd().info())
        .add_command(r.cmd().grabbed())
        .query(con)
        .unwrap();
    assert_eq!(got.0, 2);
    assert_eq!((got.1.status.as_str(), got.1.cents), ("OK", 500));
    assert_eq!(got.2.status, "ALREADY");
    assert_eq!((got.3.left_cents, got.3.left_count), (500, 1));
    assert_eq!(got.4, vec![("u1".to_string(), 500)]);
    assert_eq!(got.4, r.grabbed(con).unwrap());

    // LUCKYBAG
    let g = LuckyBag::new(k("bag"));
    assert!(g.create(con, 1, &BagOptions::default()).unwrap());
    let got: (Join, Join, BagInfo, Vec<Winner>, BagResult, Maybe<BagInfo>) = redis::pipe()
        .add_command(g.cmd().join("u1", false))
        .add_command(g.cmd().join("u1", false))
        .add_command(g.cmd().info())
        .add_command(g.cmd().draw())
        .add_command(g.cmd().result("u1"))
        .add_command(LuckyBag::new(k("nobag")).cmd().info())
        .query(con)
        .unwrap();
    assert_eq!((got.0.new, got.0.participants), (true, 1));
    assert!(!got.1.new);
    assert_eq!((got.2.state.as_str(), got.2.participants), ("open", 1));
    assert_eq!(got.3.len(), 1);
    assert_eq!(got.3[0].user, "u1");
    assert_eq!(got.3[0].score, got.3[0].score_text.parse::<f64>().unwrap());
    assert_eq!(got.4, BagResult::Won);
    assert_eq!(got.5 .0, None);

    // RATE: a record (a map in RESP3) and redis-cell's array.
    let rt = Rate::new(k("rate")).at(NOW);
    let o = RateOptions::default();
    let got: (RateResult, RateResult, Throttle, RateResult) = redis::pipe()
        .add_command(rt.cmd().check(1, 1000, &o))
        .add_command(rt.cmd().check(1, 1000, &o))
        .add_command(Rate::new(k("cell")).at(NOW).cmd().throttle(0, 1, 60, None))
        .add_command(Rate::multi_cmd(
            &[(&k("m1"), 5, 1000), (&k("m2"), 9, 1000)],
            &o,
            Some(NOW),
        ))
        .query(con)
        .unwrap();
    assert!(got.0.allowed && !got.1.allowed);
    assert!(got.1.retry_after_ms > 0);
    assert_eq!((got.2.limited, got.2.limit), (false, 1));
    assert_eq!((got.3.allowed, got.3.remaining), (true, 4));

    // LOCK: LOCK.INFO is owner → record in RESP3.
    let lk = Lock::new(k("lock")).at(NOW);
    let lo = LockOptions {
        limit: Some(2),
        ..Default::default()
    };
    let got: (Option<i64>, Option<i64>, Option<i64>, Vec<LockHolder>, bool) = redis::pipe()
        .add_command(lk.cmd().acquire("w1", 5000, &lo))
        .add_command(lk.cmd().acquire("w2", 5000, &lo))
        .add_command(lk.cmd().acquire("w3", 5000, &lo))
        .add_command(lk.cmd().info())
        .add_command(lk.cmd().check(1))
        .query(con)
        .unwrap();
    assert_eq!((got.0, got.1, got.2), (Some(1), Some(2), None));
    assert_eq!(got.3, lk.info(con).unwrap());
    assert_eq!(
        got.3
            .iter()
            .map(|h| (h.owner.as_str(), h.token))
            .collect::<Vec<_>>(),
        [("w1", 1), ("w2", 2)]
    );
    assert!(got.4);

    // DELAYQ
    let q = DelayQueue::new(k("q")).at(NOW);
    let one_try = JobOptions {
        attempts: Some(1),
        ..Default::default()
    };
    assert!(q.add(con, "a", b"pa", &one_try).unwrap());
    assert!(q.add(con, "b", b"pb", &JobOptions::default()).unwrap());
    let got: (Vec<ScheduledJob>, Vec<Job>, QueueInfo) = redis::pipe()
        .add_command(q.cmd().peek(None, None))
        .add_command(q.cmd().poll(1000, Some(1), None))
        .add_command(q.cmd().info())
        .query(con)
        .unwrap();
    assert_eq!(got.0.len(), 2);
    assert_eq!(
        (got.1[0].id.as_str(), got.1[0].payload.as_slice()),
        ("a", &b"pa"[..])
    );
    assert_eq!(got.2, q.info(con).unwrap());
    let got: (Nack, Vec<DeadLetter>) = redis::pipe()
        .add_command(q.cmd().nack("a", got.1[0].receipt, None))
        .add_command(q.cmd().dead(None))
        .query(con)
        .unwrap();
    assert_eq!(got.0, Nack::Dead);
    assert_eq!((got.1[0].id.as_str(), got.1[0].attempts), ("a", 1));

    // IDEM: an enum reply and a record (null when absent).
    let i = Idem::new(k("idem")).at(LATER);
    let got: (
        Option<IdemRecord>,
        IdemBegin,
        IdemBegin,
        bool,
        IdemRecord,
        IdemBegin,
    ) = redis::pipe()
        .add_command(i.cmd().get())
        .add_command(i.cmd().begin(b"fp", 1000, None))
        .add_command(i.cmd().begin(b"other", 1000, None))
        .add_command(i.cmd().complete(LATER, b"result"))
        .add_command(i.cmd().get())
        .add_command(i.cmd().begin(b"fp", 1000, None))
        .query(con)
        .unwrap();
    assert_eq!(got.0, None);
    assert_eq!(got.1, IdemBegin::New(LATER));
    assert_eq!(got.2, IdemBegin::Mismatch);
    assert!(got.3);
    assert_eq!(
        (got.4.state.as_str(), got.4.result.as_deref()),
        ("done", Some(&b"result"[..]))
    );
    assert_eq!(got.5, IdemBegin::Done(b"result".to_vec()));

    // STOCK
    let s = Stock::new(k("stock")).at(NOW);
    let got: (
        bool,
        Reservation,
        Reservation,
        StockInfo,
        StockAudit,
        Maybe<StockInfo>,
    ) = redis::pipe()
        .add_command(s.cmd().create(3, &StockOptions::default()))
        .add_command(s.cmd().reserve("u1", "o1", 2))
        .add_command(s.cmd().reserve("u2", "o2", 2))
        .add_command(s.cmd().info())
        .add_command(s.cmd().audit("0", None))
        .add_command(Stock::new(k("nostock")).cmd().info())
        .query(con)
        .unwrap();
    assert!(got.0);
    assert_eq!((got.1.status, got.1.left), (ReserveStatus::Ok, 1));
    assert_eq!(got.2.status, ReserveStatus::SoldOut);
    assert_eq!((got.3.available, got.3.reserved), (1, 2));
    assert_eq!(Some(got.3), s.info(con).unwrap());
    assert!(got.4.problems.is_empty());
    assert_eq!(got.5 .0, None);
}

#[test]
fn rust_replies_through_query_and_pipelines() {
    let s = Server::start_with(&RECENT);
    for (t, resp3) in [("two", false), ("three", true)] {
        let mut con = redis::Client::open(url(&s, resp3))
            .unwrap()
            .get_connection()
            .unwrap();
        replies_through_query(&mut con, t);
    }
}

/// The async handles give what the blocking ones give, on every family.
async fn async_handles<C: redis::aio::ConnectionLike + Send>(con: &mut C, t: &str) {
    let k = |name: &str| format!("{name}:{{{t}}}");
    let p = Poll::new(k("poll")).at(NOW);
    let pa = p.aio();
    assert!(pa.create(con, &PollOptions::default()).await.unwrap());
    assert!(pa.vote(con, "u1", "alice").await.unwrap());
    assert!(!pa.vote(con, "u1", "alice").await.unwrap());
    let e = pa.revoke(con, "u1", Some("bob")).await.unwrap();
    assert_eq!(e, 0);
    assert_eq!(pa.top(con, None, None).await.unwrap()[0].votes, 1);
    assert_eq!(
        pa.rank(con, "alice").await.unwrap(),
        Some(PollRank { rank: 0, votes: 1 })
    );
    assert_eq!(pa.info(con).await.unwrap().unwrap().ballots, 1);

    let b = Rank::new(k("board")).at(NOW);
    assert!(b.aio().create(con, &RankOptions::default()).await.unwrap());
    assert_eq!(b.aio().incr(con, "kim", 5).await.unwrap(), 5);
    assert_eq!(b.aio().get(con, "kim").await.unwrap().unwrap().rank, 0);
    assert_eq!(b.aio().count(con).await.unwrap(), 1);

    let l = Like::new(k("post")).at(NOW);
    assert_eq!(
        l.aio().add(con, 3).await.unwrap(),
        LikeChange {
            changed: true,
            count: 1
        }
    );
    assert_eq!(l.aio().check(con, &[3, 4]).await.unwrap(), [true, false]);
    // LIKE.COMMON names two keys: one slot on a cluster.
    let other = Like::new(k("post2")).at(NOW);
    other.aio().add(con, 3).await.unwrap();
    other.aio().add(con, 5).await.unwrap();
    assert_eq!(l.aio().common(con, other.key()).await.unwrap(), [3]);

    let r = RedPacket::new(k("packet")).at(NOW);
    assert_eq!(
        r.aio()
            .split(con, 300, 3, Some("EQUAL"), None)
            .await
            .unwrap(),
        3
    );
    assert_eq!(r.aio().grab(con, "u1").await.unwrap().cents, 100);
    assert_eq!(r.aio().info(con).await.unwrap().unwrap().left_count, 2);

    let g = LuckyBag::new(k("bag"));
    assert!(g
        .aio()
        .create(con, 1, &BagOptions::default())
        .await
        .unwrap());
    assert!(g.aio().join(con, "u1", true).await.unwrap().new);
    assert!(g.aio().task(con, "u1").await.unwrap());
    assert_eq!(g.aio().draw(con).await.unwrap().len(), 1);
    assert_eq!(g.aio().result(con, "u1").await.unwrap(), BagResult::Won);

    let rt = Rate::new(k("rate")).at(NOW);
    let o = RateOptions::default();
    assert!(rt.aio().check(con, 1, 1000, &o).await.unwrap().allowed);
    assert!(!rt.aio().check(con, 1, 1000, &o).await.unwrap().allowed);
    assert!(rt.aio().reset(con).await.unwrap());
    let (m1, m2) = (k("m1"), k("m2"));
    let rules = [(m1.as_str(), 1, 1000), (m2.as_str(), 1, 1000)];
    assert!(
        Rate::multi_async(con, &rules, &o, Some(NOW))
            .await
            .unwrap()
            .allowed
    );
    assert!(
        !Rate::multi_async(con, &rules, &o, Some(NOW))
            .await
            .unwrap()
            .allowed
    );

    let lk = Lock::new(k("lock")).at(NOW);
    let token = lk
        .aio()
        .acquire(con, "w1", 5000, &LockOptions::default())
        .await
        .unwrap();
    assert_eq!(token, Some(1));
    assert_eq!(lk.aio().info(con).await.unwrap()[0].owner, "w1");
    assert!(lk.aio().release(con, "w1").await.unwrap());

    let q = DelayQueue::new(k("q")).at(NOW);
    assert!(q
        .aio()
        .add(con, "a", b"x", &JobOptions::default())
        .await
        .unwrap());
    let jobs = q.aio().poll(con, 1000, None, None).await.unwrap();
    assert_eq!(jobs.len(), 1);
    assert!(q.aio().ack(con, "a", jobs[0].receipt).await.unwrap());
    assert_eq!(q.aio().info(con).await.unwrap().jobs, 0);

    let i = Idem::new(k("idem")).at(LATER);
    let IdemBegin::New(fence) = i.aio().begin(con, b"fp", 1000, None).await.unwrap() else {
        panic!("not new")
    };
    assert!(i.aio().complete(con, fence, b"done").await.unwrap());
    assert_eq!(i.aio().get(con).await.unwrap().unwrap().state, "done");

    let s = Stock::new(k("stock")).at(NOW);
    assert!(s
        .aio()
        .create(con, 2, &StockOptions::default())
        .await
        .unwrap());
    assert_eq!(s.aio().reserve(con, "u1", "o1", 1).await.unwrap().left, 1);
    assert!(s.aio().confirm(con, "o1").await.unwrap());
    assert!(s.aio().audit_all(con, None).await.unwrap().is_empty());
    // The server's errors come back as errors.
    let e = s.aio().reserve(con, "u1", "o9", 0).await.unwrap_err();
    assert!(error_text(&e).starts_with("ERR"), "{e}");
}

#[test]
fn rust_async_handles_on_one_server_and_without_the_module() {
    let rt = runtime();
    let s = Server::start();
    for (t, resp3) in [("two", false), ("three", true)] {
        rt.block_on(async {
            let client = redis::Client::open(url(&s, resp3)).unwrap();
            let mut con = client.get_multiplexed_async_connection().await.unwrap();
            async_handles(&mut con, t).await;
        });
    }
    // The same handles with the sync connection see what the async ones
    // wrote.
    let mut c = s.conn();
    assert_eq!(
        Poll::new("poll:{two}").info(&mut c).unwrap().unwrap().votes,
        1
    );

    // Without the module: the default backend falls back to the Functions
    // library, the module backend gets the server's error.
    let bare = Server::start_bare(&[]);
    load_library(&mut bare.conn());
    rt.block_on(async {
        let client = redis::Client::open(url(&bare, false)).unwrap();
        let mut con = client.get_multiplexed_async_connection().await.unwrap();
        let p = Poll::new("poll:{f}").at(NOW);
        assert!(p
            .aio()
            .create(&mut con, &PollOptions::default())
            .await
            .unwrap());
        assert!(p.aio().vote(&mut con, "u1", "alice").await.unwrap());
        assert_eq!(p.aio().top(&mut con, None, None).await.unwrap()[0].votes, 1);
        let e = p
            .with_backend(Backend::Module)
            .aio()
            .vote(&mut con, "u2", "alice")
            .await
            .unwrap_err();
        assert!(fallback::is_unknown_command(&e), "{e}");
    });
    // The library wrote what the module's POLL.TOP would read.
    let top: Vec<PollEntry> = redis::cmd("FCALL")
        .arg("hotpath_poll_top")
        .arg(1)
        .arg("poll:{f}")
        .query(&mut bare.conn())
        .unwrap();
    assert_eq!(top[0].candidate, "alice");
}

#[test]
fn rust_async_handles_on_a_cluster() {
    let cl = Cluster::start_opts(ClusterOpts {
        replicas: 0,
        ..ClusterOpts::default()
    });
    let rt = runtime();
    rt.block_on(async {
        let client = redis::cluster::ClusterClient::new(cl.urls()).unwrap();
        let mut con = client.get_async_connection().await.unwrap();
        for t in ["a", "b", "c", "d"] {
            async_handles(&mut con, t).await;
        }
    });
    assert_eq!(cl.dbsizes().values().filter(|&&n| n > 0).count(), 3);
}

/// A future that is `Send` (so that it can go to `tokio::spawn`).
fn send<F: std::future::Future + Send>(f: F) -> F {
    f
}

/// The async spread handles (`handle.aio()`) give what the blocking ones
/// give: every spread family written through the async connection `con`
/// and read through it and through the blocking handle on `sync` (the
/// same server or cluster). `replicas`: the replicas of each master.
async fn async_spread<C: AioCon + 'static, S: FanOut>(
    con: &mut C,
    sync: &mut S,
    t: &str,
    replicas: i64,
) {
    let k = |name: &str| format!("{name}:{{{t}}}");

    // LIKE: writes at once from clones of the connection.
    let post = SpreadLike::new(&k("spost"), 4).at(NOW);
    assert!(post.aio().create(con).await.unwrap());
    let mut adds = Vec::new();
    for u in 1..=10u64 {
        let (post, mut c) = (post.clone(), con.clone());
        adds.push(tokio::spawn(async move { post.aio().add(&mut c, u).await }));
    }
    for (u, a) in (1..=10u64).zip(adds) {
        let w = a.await.unwrap().unwrap();
        assert_eq!((w.changed, w.shard), (true, (u % 4) as u32));
    }
    let toggled = post.aio().toggle(con, 3).await.unwrap();
    assert_eq!((toggled.changed, toggled.shard), (false, 3));
    assert_eq!(send(post.aio().count(con)).await.unwrap(), 9);
    assert_eq!(post.count(sync).unwrap(), 9);
    assert_eq!(
        post.aio().shard_counts(con).await.unwrap(),
        post.shard_counts(sync).unwrap()
    );
    assert_eq!(
        post.aio().check(con, &[1, 3, 11]).await.unwrap(),
        [true, false, false]
    );
    assert!(post.aio().likes(con, 2).await.unwrap());
    assert_eq!(
        post.aio().info(con).await.unwrap(),
        post.info(sync).unwrap()
    );
    assert_eq!(
        spread_count_async(con, "LIKE", &k("spost")).await.unwrap(),
        Some(4)
    );
    // A durable write waits for `replicas` replicas on the connection of
    // its write; one more than there are: the write ran, not durable.
    let durable = post.durable(replicas, 1000);
    if replicas > 0 {
        assert!(durable.aio().add(con, 20).await.unwrap().changed);
    }
    let e = post
        .durable(replicas + 1, 100)
        .aio()
        .add(con, 21)
        .await
        .unwrap_err();
    assert!(
        e.to_string()
            .contains(&format!("reached {replicas} of {} replicas", replicas + 1)),
        "{e}"
    );
    assert!(post.likes(sync, 21).unwrap());

    // RANK: the global reads merge as the blocking handle's do.
    let board = SpreadRank::new(&k("sboard"), 4).at(NOW);
    assert!(board
        .aio()
        .create(con, &RankOptions::default())
        .await
        .unwrap());
    for i in 0..24 {
        let m = format!("m{i}");
        let w = board.aio().add(con, &m, i % 7, None).await.unwrap();
        assert_eq!(w.shard, board.shards().shard_of(&m));
    }
    assert_eq!(board.aio().incr(con, "m3", 10).await.unwrap().points, 13);
    assert_eq!(board.aio().count(con).await.unwrap(), 24);
    let top = board.aio().top(con, 5, 0).await.unwrap();
    assert_eq!(top, board.top(sync, 5, 0).unwrap());
    assert_eq!(top[0].member, "m3");
    assert_eq!(
        board.aio().top_paged(con, 20, 3, 7).await.unwrap(),
        board.top(sync, 20, 3).unwrap()
    );
    let got = board.aio().get(con, "m10").await.unwrap();
    assert_eq!(got, board.get(sync, "m10").unwrap());
    assert_eq!(
        board.aio().rank(con, "m10").await.unwrap(),
        got.map(|g| g.rank)
    );
    assert_eq!(
        board.aio().around(con, "m10", 2).await.unwrap(),
        board.around(sync, "m10", 2).unwrap()
    );
    assert_eq!(board.aio().rem(con, &["m1", "m2", "zed"]).await.unwrap(), 2);

    // POLL: the exact merged top and ranks, the write-back.
    let poll = SpreadPoll::new(&k("spoll"), 4).at(NOW);
    assert!(poll
        .aio()
        .create(con, &PollOptions::default())
        .await
        .unwrap());
    for u in 0..30 {
        let c = format!("c{}", (u * u) % 5);
        assert!(poll.aio().vote(con, &format!("u{u}"), &c).await.unwrap());
    }
    assert!(!poll.aio().vote(con, "u0", "c0").await.unwrap());
    let top = poll.aio().top(con, 10, 0).await.unwrap();
    assert_eq!(top, poll.top(sync, 10, 0).unwrap());
    assert_eq!(top.iter().map(|e| e.votes).sum::<i64>(), 30);
    assert_eq!(
        poll.aio().rank(con, "c1").await.unwrap(),
        poll.rank(sync, "c1").unwrap()
    );
    assert_eq!(
        poll.aio().totals(con, &["c4", "none"]).await.unwrap(),
        [Some(12), None]
    );
    assert_eq!(poll.aio().status(con, "u2").await.unwrap(), ["c4"]);
    assert_eq!(poll.aio().revoke(con, "u2", None).await.unwrap(), 1);
    assert_eq!(poll.aio().info(con).await.unwrap().unwrap().votes, 29);
    let sync_round = poll.aio().sync(con).await.unwrap();
    assert_eq!(sync_round.epochs.len(), 4);
    assert_eq!(
        poll.aio().syncack(con, &sync_round).await.unwrap(),
        [true; 4]
    );

    // LUCKYBAG: the draw across the shards, its freezes and commit
    // durable with `replicas`; run again, the same winners.
    let bag = SpreadLuckyBag::new(&k("sbag"), 4).at(NOW);
    assert!(bag
        .aio()
        .create(con, 3, &BagOptions::default())
        .await
        .unwrap());
    for u in 0..20 {
        let j = bag.aio().join(con, &format!("u{u}"), false).await.unwrap();
        assert!(j.new);
    }
    assert_eq!(bag.aio().participants(con).await.unwrap(), 20);
    let o = DrawOptions {
        replicas,
        ..DrawOptions::default()
    };
    let won = bag.aio().draw(con, &o).await.unwrap();
    assert_eq!(won.len(), 3);
    assert_eq!(bag.aio().draw(con, &o).await.unwrap(), won);
    assert_eq!(bag.draw(sync, &o).unwrap(), won);
    assert_eq!(
        bag.aio().result(con, &won[0].user).await.unwrap(),
        BagResult::Won
    );
    assert_eq!(bag.aio().info(con).await.unwrap().state, "drawn");

    // STOCK: refills from the pool on shard 0, sold out only when no
    // unit is left anywhere; the ledgers' law holds.
    let sku = SpreadStock::new(&k("ssku"), 3).at(NOW).with_chunk(1);
    assert!(sku
        .aio()
        .create(con, 5, None, Some(60_000), None)
        .await
        .unwrap());
    let mut ok = 0;
    for u in 0..12 {
        let r = sku
            .aio()
            .reserve(con, &format!("u{u}"), &format!("o{u}"), 1)
            .await
            .unwrap();
        if r.status == ReserveStatus::Ok {
            ok += 1;
        } else {
            assert_eq!((r.status, ok), (ReserveStatus::SoldOut, 5));
        }
    }
    assert_eq!(ok, 5);
    assert_eq!(sku.aio().audit(con).await.unwrap(), Vec::<String>::new());
    assert!(sku.aio().confirm(con, "u0", "o0").await.unwrap());
    assert!(sku.aio().release(con, "u1", "o1").await.unwrap());
    let info = sku.aio().info(con).await.unwrap();
    assert_eq!((info.reserved(), info.sold()), (3, 1));
    assert_eq!(info, sku.info(sync).unwrap());
}

#[test]
fn rust_async_spread_handles_on_one_server() {
    let rt = runtime();
    let s = Server::start();
    for (t, resp3) in [("s2", false), ("s3", true)] {
        let client = redis::Client::open(url(&s, resp3)).unwrap();
        // The blocking handles read over the same protocol.
        let mut sync = client.get_connection().unwrap();
        rt.block_on(async {
            let mut con = client.get_multiplexed_async_connection().await.unwrap();
            async_spread(&mut con, &mut sync, t, 0).await;
        });
    }
}

#[test]
fn rust_async_spread_handles_on_a_cluster() {
    let cl = Cluster::start();
    let client = redis::cluster::ClusterClient::new(cl.urls()).unwrap();
    let mut sync = client.get_connection().unwrap();
    let rt = runtime();
    rt.block_on(async {
        let mut con = client.get_async_connection().await.unwrap();
        async_spread(&mut con, &mut sync, "c", 1).await;
    });
    // The shards are on every master.
    assert_eq!(cl.dbsizes().values().filter(|&&n| n > 0).count(), 3);
}

#[test]
fn rust_examples_run_and_the_readme_shows_them() {
    let s = Server::start();
    let u = url(&s, false);
    assert_eq!(
        quickstart_example::run(&u).unwrap(),
        [
            "vote again: false; top: alice=2",
            "kim #1 lee #2",
            "allowed: [true, true, false]",
            "token: Some(1), second owner: None",
        ]
    );
    assert_eq!(
        pipeline_example::run(&u).unwrap(),
        [
            "top: [PollEntry { candidate: \"alice\", votes: 1 }]",
            "allowed true remaining 4",
            "2 shares: OK 500 / OK 500",
            "left: Some(0); unknown packet: None",
            "reserved: Ok, available 7",
        ]
    );
    assert_eq!(
        runtime().block_on(async_example::run(&u)).unwrap(),
        [
            "alice=6 bob=4",
            "liked true count 1",
            "job mail:1 acked true",
            "spread likes 8 [2, 2, 2, 2]"
        ]
    );

    // Every Rust block of the README is in an example, verbatim, so the
    // README shows code that this test runs.
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("clients/rust");
    let readme = std::fs::read_to_string(dir.join("README.md")).unwrap();
    let examples: String = ["quickstart", "pipeline", "async"]
        .iter()
        .map(|e| std::fs::read_to_string(dir.join(format!("examples/{e}.rs"))).unwrap())
        .collect();
    let blocks: Vec<&str> = readme
        .split("```rust\n")
        .skip(1)
        .map(|b| b.split("```").next().unwrap())
        .collect();
    assert!(blocks.len() >= 3, "{blocks:?}");
    for b in blocks {
        assert!(examples.contains(b), "README block not in an example:\n{b}");
    }
    // So is every Rust block of docs/clients.md.
    let clients = std::fs::read_to_string(dir.join("../../docs/clients.md")).unwrap();
    let blocks: Vec<&str> = clients
        .split("```rust\n")
        .skip(1)
        .map(|b| b.split("```").next().unwrap())
        .collect();
    assert!(!blocks.is_empty());
    for b in blocks {
        assert!(
            examples.contains(b),
            "docs/clients.md block not in an example:\n{b}"
        );
    }
}

/// `SpreadStock::with_backend(Backend::Functions(…))` runs a spread SKU on
/// the Functions library alone (a server without the module): create,
/// reserve with refills from the pool, confirm, release, info and audit;
/// the module backend gets the server's unknown-command error there.
#[test]
fn rust_spread_stock_runs_on_the_functions_library() {
    let bare = Server::start_bare(&[]);
    let mut c = bare.conn();
    load_library(&mut c);
    let sku = SpreadStock::new("lsku", 3)
        .at(NOW)
        .with_chunk(1)
        .with_backend(Backend::Functions(LikeConfigs::default()));
    assert!(sku.create(&mut c, 5, None, Some(60_000), None).unwrap());
    let mut ok = 0;
    for u in 0..12 {
        let r = sku
            .reserve(&mut c, &format!("u{u}"), &format!("o{u}"), 1)
            .unwrap();
        if r.status == ReserveStatus::Ok {
            ok += 1;
        } else {
            assert_eq!((r.status, ok), (ReserveStatus::SoldOut, 5));
        }
    }
    assert_eq!(ok, 5);
    assert_eq!(sku.audit(&mut c).unwrap(), Vec::<String>::new());
    assert!(sku.confirm(&mut c, "u0", "o0").unwrap());
    assert!(sku.release(&mut c, "u1", "o1").unwrap());
    let info = sku.info(&mut c).unwrap();
    assert_eq!((info.reserved(), info.sold(), info.available()), (3, 1, 1));
    assert_eq!(sku.pool(&mut c).unwrap().free, 0, "{info:?}");
    let e = sku.with_backend(Backend::Module).info(&mut c).unwrap_err();
    assert!(fallback::is_unknown_command(&e), "{e}");
}
