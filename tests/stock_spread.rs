//! STOCK's spread form on one server (every shard on it; the shard keys
//! are in different slots, which a standalone server does not mind),
//! driven through the Rust client's `SpreadStock`: the transfer steps and
//! their replays, a crashed refill finished by another client, handbacks,
//! the dry mark, and many concurrent buyers with the cross-shard law
//! checked after every batch, every unit sold exactly once and SOLDOUT
//! only once nothing is left anywhere.

use crate::common;

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;

use common::*;
use hotpath_client::{ReserveStatus, SpreadStock};

const T0: i64 = 1_900_000_000_000;

/// `STOCK.INFO` of a shard key: (total, available, reserved, sold).
fn counts(c: &mut Connection, key: &str, n: u32) -> (i64, i64, i64, i64) {
    let v: Vec<redis::Value> = redis::cmd("STOCK.INFO")
        .arg(key)
        .arg("SPREAD")
        .arg(n)
        .query(c)
        .unwrap();
    let get = |name: &str| -> i64 {
        let i = v
            .iter()
            .position(|x| matches!(x, redis::Value::BulkString(b) if b == name.as_bytes()))
            .unwrap();
        match &v[i + 1] {
            redis::Value::Int(n) => *n,
            other => panic!("{other:?}"),
        }
    };
    (get("total"), get("available"), get("reserved"), get("sold"))
}

#[test]
fn transfer_steps_are_idempotent_and_keep_the_law() {
    let srv = Server::start();
    let mut c = srv.conn();
    let s = SpreadStock::new("sku:7", 3).at(T0).with_chunk(4);
    let k: Vec<String> = s.shards().keys().to_vec();
    assert!(s.create(&mut c, 10, Some(2), Some(60_000), None).unwrap());
    let pool = s.pool(&mut c).unwrap();
    assert_eq!(
        (pool.total, pool.free, pool.transit, pool.open),
        (10, 10, 0, 0)
    );
    for key in &k {
        assert_eq!(counts(&mut c, key, 3), (0, 0, 0, 0));
    }
    // A refill, each step run twice.
    assert_eq!(
        s.transfer(&mut c, "t1", 1, 4).unwrap(),
        ("OPEN".into(), 4, 6, 1)
    );
    assert_eq!(
        s.transfer(&mut c, "t1", 1, 4).unwrap(),
        ("OPEN".into(), 4, 6, 1)
    );
    assert!(s.audit(&mut c).unwrap().is_empty());
    let apply = |c: &mut Connection, id: &str, d: i64| {
        run(
            c,
            &["STOCK.APPLY", &k[1], id, &d.to_string(), "SPREAD", "3"],
        )
    };
    assert_eq!(apply(&mut c, "t1", 4), "[4, 4]");
    assert_eq!(apply(&mut c, "t1", 4), "[4, 4]");
    // Applied, not settled: in the pool's transit and in the shard at
    // once, and the law (by the ledgers) still exact.
    assert_eq!(s.pool(&mut c).unwrap().transit, 4);
    assert!(s.audit(&mut c).unwrap().is_empty(), "{:?}", s.audit(&mut c));
    assert_eq!(
        run(&mut c, &["STOCK.SETTLE", &k[0], "t1", "4", "SPREAD", "3"]),
        "1"
    );
    assert_eq!(
        run(&mut c, &["STOCK.SETTLE", &k[0], "t1", "4", "SPREAD", "3"]),
        "0"
    );
    assert_eq!(
        s.transfer(&mut c, "t1", 1, 4).unwrap(),
        ("CLOSED".into(), 4, 6, 0)
    );
    assert_eq!(counts(&mut c, &k[1], 3), (4, 4, 0, 0));
    // A client that crashed after step 1: another finishes it.
    s.transfer(&mut c, "t2", 2, 3).unwrap();
    assert_eq!(s.recover(&mut c).unwrap(), 1);
    assert_eq!(s.recover(&mut c).unwrap(), 0);
    assert_eq!(counts(&mut c, &k[2], 3), (3, 3, 0, 0));
    let p = s.pool(&mut c).unwrap();
    assert_eq!((p.free, p.transit, p.open), (3, 0, 0));
    // A handback crashed after step 2 (applied, not settled): the units
    // are in transit, the law holds, recovery settles them.
    let user1 = (0..)
        .map(|u| u.to_string())
        .find(|u| s.shard_of(u) == 1)
        .unwrap();
    let r = s.reserve(&mut c, &user1, "o1", 1).unwrap();
    assert_eq!((r.status, r.left), (ReserveStatus::Ok, 3));
    s.transfer(&mut c, "h1", 1, -5).unwrap();
    assert_eq!(apply(&mut c, "h1", -5), "[-3, 0]");
    assert_eq!(apply(&mut c, "h1", -5), "[-3, 0]");
    assert!(s.audit(&mut c).unwrap().is_empty());
    assert_eq!(s.recover(&mut c).unwrap(), 1);
    assert_eq!(counts(&mut c, &k[1], 3), (1, 0, 1, 0));
    let p = s.pool(&mut c).unwrap();
    assert_eq!((p.free, p.transit, p.open), (6, 0, 0));
    assert!(s.audit(&mut c).unwrap().is_empty());
    // A raw RESERVE on an empty shard that is not dry: REFILL.
    assert_eq!(
        run(
            &mut c,
            &["STOCK.RESERVE", &k[1], &user1, "o2", "1", "SPREAD", "3"]
        ),
        "[REFILL, 0, 0]"
    );
    // Another shard's user is refused, naming the right shard.
    let user0 = (0..)
        .map(|u| u.to_string())
        .find(|u| s.shard_of(u) == 0)
        .unwrap();
    let e = run(
        &mut c,
        &["STOCK.RESERVE", &k[1], &user0, "o3", "1", "SPREAD", "3"],
    );
    assert!(e.contains("wrong shard: user"), "{e}");
    // The base key of a spread stock is refused.
    let e = run(&mut c, &["STOCK.RESERVE", "sku:7", "u", "o", "1"]);
    assert!(e.contains("is spread over 3 shards"), "{e}");
    // Bad transfer steps write nothing.
    let before = run(&mut c, &["DEBUG", "DIGEST"]);
    for bad in [
        vec!["STOCK.SETTLE", &k[0], "t9", "2", "SPREAD", "3"],
        vec!["STOCK.APPLY", &k[1], "t1", "5", "SPREAD", "3"],
        vec!["STOCK.TRANSFER", &k[0], "t1", "2", "4", "SPREAD", "3"],
        vec!["STOCK.TRANSFER", &k[1], "t9", "2", "4", "SPREAD", "3"],
        vec!["STOCK.RESTOCK", &k[1], "5", "SPREAD", "3"],
    ] {
        assert!(run(&mut c, &bad).starts_with("ERR<"), "{bad:?}");
    }
    assert_eq!(run(&mut c, &["DEBUG", "DIGEST"]), before);
}

/// A shard's own calls read its mark (which shard of how many, dry) from
/// its record, not its meta: the checks the meta gave hold from there.
#[test]
fn a_shard_reads_its_mark_from_its_record() {
    let srv = Server::start();
    let mut c = srv.conn();
    let s = SpreadStock::new("sku:mark", 2).at(T0);
    s.create(&mut c, 3, None, Some(1_000), None).unwrap();
    let k = s.shards().keys().to_vec();
    let u = |i: u32| {
        (0..)
            .map(|u| u.to_string())
            .find(|u| s.shard_of(u) == i)
            .unwrap()
    };
    let (a, b) = (u(0), u(1));
    assert_eq!(run(&mut c, &["GET", &k[0]]), "0:0:0:0:0:1000:0:2:0:0");
    assert_eq!(run(&mut c, &["GET", &k[1]]), "0:0:0:0:0:1000:0:2:1:0");
    // Not dry: REFILL; marked dry (APPLY 0, once): SOLDOUT.
    let reserve = |c: &mut Connection, user: &str, n: &str| {
        run(c, &["STOCK.RESERVE", &k[1], user, "o1", "1", "SPREAD", n])
    };
    assert_eq!(reserve(&mut c, &b, "2"), "[REFILL, 0, 0]");
    assert_eq!(
        run(&mut c, &["STOCK.APPLY", &k[1], "d", "0", "SPREAD", "2"]),
        "[0, 0]"
    );
    assert_eq!(run(&mut c, &["GET", &k[1]]), "0:0:0:0:0:1000:0:2:1:1");
    let digest = run(&mut c, &["DEBUG", "DIGEST"]);
    assert_eq!(
        run(&mut c, &["STOCK.APPLY", &k[1], "d", "0", "SPREAD", "2"]),
        "[0, 0]"
    );
    assert_eq!(reserve(&mut c, &b, "2"), "[SOLDOUT, 0, 0]");
    // The sold-out answer keeps the routing and count checks.
    let e = reserve(&mut c, &a, "2");
    assert!(e.contains("wrong shard: user"), "{e}");
    let e = reserve(&mut c, &b, "3");
    assert!(e.contains("shard counts disagree"), "{e}");
    // A raw call (no SPREAD) on the shard key runs on the shard.
    assert_eq!(
        run(&mut c, &["STOCK.RESERVE", &k[1], &b, "o1", "1"]),
        "[SOLDOUT, 0, 0]"
    );
    assert_eq!(run(&mut c, &["DEBUG", "DIGEST"]), digest);
    // A shard's record copied to another key, or a shard's record without
    // its mark, is corrupt data; nothing is written.
    run(&mut c, &["COPY", &k[1], "copy{1}"]);
    let digest = run(&mut c, &["DEBUG", "DIGEST"]);
    let e = run(&mut c, &["STOCK.RESTOCK", "copy{1}", "0"]);
    assert!(e.contains("corrupt data in 'copy{1}'"), "{e}");
    let e = run(&mut c, &["STOCK.INFO", "copy{1}"]);
    assert!(e.contains("corrupt data in 'copy{1}'"), "{e}");
    run(&mut c, &["SET", &k[0], "0:0:0:0:0:1000:0"]);
    let digest2 = run(&mut c, &["DEBUG", "DIGEST"]);
    assert_ne!(digest, digest2);
    for call in [
        vec!["STOCK.RESERVE", &k[0], &a, "o2", "1", "SPREAD", "2"],
        vec!["STOCK.RESERVE", &k[0], &a, "o2", "1"],
        vec!["STOCK.INFO", &k[0], "SPREAD", "2"],
        vec!["STOCK.APPLY", &k[0], "d", "0", "SPREAD", "2"],
    ] {
        let e = run(&mut c, &call);
        assert!(
            e.contains(&format!("corrupt data in '{}'", k[0])),
            "{call:?}: {e}"
        );
    }
    assert_eq!(run(&mut c, &["DEBUG", "DIGEST"]), digest2);
}

#[test]
fn a_dry_shard_answers_soldout_and_a_refill_clears_it() {
    let srv = Server::start();
    let mut c = srv.conn();
    let s = SpreadStock::new("sku:dry", 2).at(T0).with_chunk(2);
    s.create(&mut c, 3, None, Some(1_000), None).unwrap();
    let u = |i: u32| {
        (0..)
            .map(|u| u.to_string())
            .find(|u| s.shard_of(u) == i)
            .unwrap()
    };
    let (a, b) = (u(0), u(1));
    // Shard 1 refills 2, shard 0 takes the last unit.
    assert_eq!(
        s.reserve(&mut c, &b, "b1", 1).unwrap().status,
        ReserveStatus::Ok
    );
    assert_eq!(
        s.reserve(&mut c, &a, "a1", 1).unwrap().status,
        ReserveStatus::Ok
    );
    // The pool is dry; shard 1 still has a unit: shard 0's buyer gets it
    // by a handback (the sweep), not SOLDOUT.
    let r = s.reserve(&mut c, &a, "a2", 1).unwrap();
    assert_eq!(r.status, ReserveStatus::Ok);
    let info = s.info(&mut c).unwrap();
    assert_eq!(info.reserved() + info.sold(), 3);
    // Nothing left anywhere: SOLDOUT, on both shards, and the marks stay.
    assert_eq!(
        s.reserve(&mut c, &a, "a3", 1).unwrap().status,
        ReserveStatus::SoldOut
    );
    assert_eq!(
        s.reserve(&mut c, &b, "b2", 1).unwrap().status,
        ReserveStatus::SoldOut
    );
    // The dry marks sit in the shards' records: `…:<n>:<i>:<dry>`.
    let k = s.shards().keys().to_vec();
    assert!(run(&mut c, &["GET", &k[0]]).ends_with(":2:0:1"));
    assert!(run(&mut c, &["GET", &k[1]]).ends_with(":2:1:1"));
    // The leases lapse: each returns to its own shard, whose buyers
    // reserve the units directly (shard 0 held a1 and a2).
    let later = s.at(T0 + 2_000);
    let r = later.reserve(&mut c, &a, "a4", 2).unwrap();
    assert_eq!((r.status, r.left), (ReserveStatus::Ok, 0));
    let r = later.reserve(&mut c, &b, "b3", 1).unwrap();
    assert_eq!((r.status, r.left), (ReserveStatus::Ok, 0));
    assert!(s.audit(&mut c).unwrap().is_empty());
    // Units back in the pool (a released order handed back from shard 0)
    // refill shard 1, and the refill clears its dry mark.
    assert!(later.release(&mut c, &a, "a4").unwrap());
    later.transfer(&mut c, "h", 0, -2).unwrap();
    assert_eq!(later.finish(&mut c, "h", 0, -2).unwrap(), -2);
    assert!(s.audit(&mut c).unwrap().is_empty());
    later.refill(&mut c, 1, 1).unwrap();
    assert!(run(&mut c, &["GET", &k[1]]).ends_with(":2:1:0"));
    assert_eq!(counts(&mut c, &k[1], 2).1, 2);
    assert_eq!(
        later.reserve(&mut c, &b, "b4", 1).unwrap().status,
        ReserveStatus::Ok
    );
    assert!(s.audit(&mut c).unwrap().is_empty());
    assert!(s.audit(&mut c).unwrap().is_empty());
}

/// A refill whose sweep hands units back from another shard moves them on
/// to its own shard at once (Rust client): none waits in the pool, where
/// a shard marked dry meanwhile by another client would never ask for it.
#[test]
fn a_sweep_moves_the_units_it_hands_back_to_its_shard() {
    let srv = Server::start();
    let mut c = srv.conn();
    let s = SpreadStock::new("sku:hand", 2).at(T0).with_chunk(1);
    s.create(&mut c, 4, None, Some(60_000), None).unwrap();
    // Every unit on shard 1, the pool dry.
    s.transfer(&mut c, "t", 1, 4).unwrap();
    assert_eq!(s.finish(&mut c, "t", 1, 4).unwrap(), 4);
    s.refill(&mut c, 0, 1).unwrap();
    let info = s.info(&mut c).unwrap();
    assert_eq!(
        (info.pool.free, info.pool.transit, info.pool.open),
        (0, 0, 0),
        "{info:?}"
    );
    let avail: Vec<i64> = info.shards.iter().map(|x| x.available).collect();
    assert_eq!(avail, vec![1, 3]);
    assert!(s.audit(&mut c).unwrap().is_empty());
}

/// 16 client threads, batches of buyers (1 or 2 units each, some
/// confirming, some releasing), the law checked after every batch; at the
/// end every unit is sold or reserved exactly once, no buyer was told
/// SOLDOUT while a unit was left, and a buyer after the sale hears
/// SOLDOUT.
#[test]
fn concurrent_buyers_sell_every_unit_once() {
    let srv = Server::start();
    let total = 600i64;
    let s = SpreadStock::new("sku:hot", 8).at(T0);
    s.create(&mut srv.conn(), total, Some(3), Some(600_000), None)
        .unwrap();
    let ok_units = Arc::new(AtomicI64::new(0));
    let soldout = Arc::new(AtomicI64::new(0));
    let released = Arc::new(AtomicI64::new(0));
    let mut buyer = 0u64;
    let mut first_soldout_batch = None;
    let mut released_before = 0;
    for batch in 0..12 {
        let mut handles = Vec::new();
        for t in 0..16u64 {
            let s = s.clone();
            let port = srv.port;
            let (ok_units, soldout, released) =
                (ok_units.clone(), soldout.clone(), released.clone());
            let start = buyer + t * 5;
            handles.push(std::thread::spawn(move || {
                let url = format!("redis://127.0.0.1:{port}/");
                let mut c = redis::Client::open(url).unwrap().get_connection().unwrap();
                for b in start..start + 5 {
                    let user = format!("u{b}");
                    let order = format!("o{b}");
                    let qty = 1 + (b % 2) as i64;
                    let r = loop {
                        match s.reserve(&mut c, &user, &order, qty) {
                            Ok(r) => break r,
                            Err(e) if e.kind() == redis::ErrorKind::TryAgain => continue,
                            Err(e) => panic!("{e}"),
                        }
                    };
                    match r.status {
                        ReserveStatus::Ok => {
                            if b % 7 == 0 {
                                assert!(s.release(&mut c, &user, &order).unwrap());
                                released.fetch_add(qty, Ordering::SeqCst);
                            } else {
                                if b % 3 == 0 {
                                    assert!(s.confirm(&mut c, &user, &order).unwrap());
                                }
                                ok_units.fetch_add(qty, Ordering::SeqCst);
                            }
                        }
                        ReserveStatus::SoldOut => {
                            soldout.fetch_add(1, Ordering::SeqCst);
                        }
                        ReserveStatus::Limit => panic!("one order per user"),
                    }
                }
            }));
        }
        buyer += 16 * 5;
        for h in handles {
            h.join().unwrap();
        }
        let mut c = srv.conn();
        assert!(s.audit(&mut c).unwrap().is_empty(), "batch {batch}");
        let info = s.info(&mut c).unwrap();
        let held = info.reserved() + info.sold();
        assert_eq!(held, ok_units.load(Ordering::SeqCst), "batch {batch}");
        assert!(held <= total);
        for (i, key) in s.shards().keys().iter().enumerate() {
            let r = run(
                &mut c,
                &["STOCK.AUDIT", key, "0", "COUNT", "500", "SPREAD", "8"],
            );
            assert!(r.starts_with("[0, "), "shard {i}: {r}");
            assert!(!r.contains(':'), "shard {i}: {r}");
        }
        let rel = released.load(Ordering::SeqCst);
        if soldout.load(Ordering::SeqCst) > 0 && first_soldout_batch.is_none() {
            first_soldout_batch = Some(batch);
            // SOLDOUT only when the whole SKU is out for that buyer: at
            // most 1 unit left (a buyer of 2 hears SOLDOUT beside it, as on
            // a single-slot stock), plus the units released in this batch
            // after a shard was marked dry (the documented undersell
            // bound: they return to their own shard), nothing in the pool
            // or in transit.
            assert!(
                total - held <= 1 + (rel - released_before),
                "batch {batch}: SOLDOUT with {} units left",
                total - held
            );
            assert_eq!(info.pool.open, 0);
        }
        released_before = rel;
    }
    let mut c = srv.conn();
    assert!(first_soldout_batch.is_some(), "the sale never ended");
    // The buyers after the first SOLDOUT took what came back: every unit
    // is held.
    assert_eq!(ok_units.load(Ordering::SeqCst), total);
    let r = s.reserve(&mut c, "late", "late", 1).unwrap();
    assert_eq!(r.status, ReserveStatus::SoldOut);
    // Every shard sold its share of the load: none idle.
    let info = s.info(&mut c).unwrap();
    for (i, sh) in info.shards.iter().enumerate() {
        assert!(sh.reserved + sh.sold > 0, "shard {i} sold nothing");
    }
}

// ---- the real cluster (3 masters, 1 replica each) ----

use std::collections::HashMap;
use std::sync::atomic::AtomicU64;
use std::time::{Duration, Instant};

use common::cluster::{Cluster, ClusterOpts};

/// A sale of `total` units to `buyers` buyers (one unit each, LIMIT 1)
/// from `threads` clients on a 16-shard SKU, every write durable (`WAIT
/// 1`): a quarter in, the master holding the pool (shard 0) is killed and
/// its replica promoted; half in, shard 1's slot is moved to another
/// master. Then: 0 oversell (the units held are the OK replies, and no
/// more than the total), 0 leaked (after recovery of the transfers a
/// failed client left open, the law holds and every unit is held), and
/// each master's share of the reservations.
fn sale_on_a_cluster(total: i64, buyers: u64, threads: u64) {
    let mut cl = Cluster::start_opts(ClusterOpts {
        node_timeout_ms: 2000,
        ..ClusterOpts::default()
    });
    let s = SpreadStock::new("sku:flash", 16).durable(1, 2000);
    s.create(&mut cl.client(), total, Some(1), Some(3_600_000), None)
        .unwrap();
    let progress = Arc::new(AtomicU64::new(0));
    let ok = Arc::new(AtomicI64::new(0));
    let soldout = Arc::new(AtomicI64::new(0));
    let retries = Arc::new(AtomicU64::new(0));
    let started = Instant::now();
    let mut handles = Vec::new();
    for t in 0..threads {
        let s = s.clone();
        let client = cl.client_builder().build().unwrap();
        let (progress, ok, soldout, retries) = (
            progress.clone(),
            ok.clone(),
            soldout.clone(),
            retries.clone(),
        );
        handles.push(std::thread::spawn(move || {
            let mut c = client.get_connection().unwrap();
            let mut b = t;
            while b < buyers {
                let (user, order) = (format!("u{b}"), format!("o{b}"));
                let deadline = Instant::now() + Duration::from_secs(120);
                let r = loop {
                    match s.reserve(&mut c, &user, &order, 1) {
                        Ok(r) => break r,
                        // A failover, a moved slot, a write not yet on a
                        // replica: the same order again (idempotent).
                        Err(e) => {
                            assert!(Instant::now() < deadline, "{user}: {e}");
                            retries.fetch_add(1, Ordering::Relaxed);
                            std::thread::sleep(Duration::from_millis(20));
                        }
                    }
                };
                match r.status {
                    ReserveStatus::Ok => ok.fetch_add(1, Ordering::SeqCst),
                    ReserveStatus::SoldOut => soldout.fetch_add(1, Ordering::SeqCst),
                    ReserveStatus::Limit => panic!("one order per user"),
                };
                progress.fetch_add(1, Ordering::SeqCst);
                b += threads;
            }
        }));
    }
    let wait = |n: u64| {
        let deadline = Instant::now() + Duration::from_secs(300);
        while progress.load(Ordering::SeqCst) < n {
            assert!(
                Instant::now() < deadline,
                "stalled at {}",
                progress.load(Ordering::SeqCst)
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    };
    let keys = s.shards().keys().to_vec();
    wait(buyers / 4);
    let victim = cl.owner_of_key(&keys[0]);
    let promoted = cl.kill_master(victim);
    cl.nodes[victim].restart(&[]);
    cl.wait_stable(Duration::from_secs(60));
    wait(buyers / 2);
    let slot = hotpath_client::routing::key_slot(keys[1].as_bytes());
    let from = cl.owner_of_slot(slot);
    let to = *cl.masters().iter().find(|&&m| m != from).unwrap();
    let moved = cl.move_slot(slot, to, 1, Duration::from_millis(50));
    for h in handles {
        h.join().unwrap();
    }
    let elapsed = started.elapsed();
    let mut c = cl.client();
    let recovered = s.recover(&mut c).unwrap();
    assert!(s.audit(&mut c).unwrap().is_empty(), "{:?}", s.audit(&mut c));
    let info = s.info(&mut c).unwrap();
    let held = info.reserved() + info.sold();
    let ok = ok.load(Ordering::SeqCst);
    // 0 oversell: every unit held is an OK reply, never more than the
    // total; 0 leaked: every unit is held (the buyers outnumber them).
    assert_eq!(held, ok, "units held vs OK replies");
    assert_eq!(held, total, "units left unsold");
    assert_eq!(info.pool.free + info.available(), 0);
    let per_master: HashMap<usize, u64> = cl.calls_per_node("stock.reserve");
    let all: u64 = per_master.values().sum();
    let shares: Vec<String> = cl
        .masters()
        .iter()
        .map(|m| {
            format!(
                "{:.2}",
                *per_master.get(m).unwrap_or(&0) as f64 / all.max(1) as f64
            )
        })
        .collect();
    eprintln!(
        "stock spread on a cluster: {total} units, {buyers} buyers by {threads} clients in {elapsed:.1?} ({:.0} buyers/s), {ok} OK, {} SOLDOUT, {} retries; killed master {victim} (replica {promoted} promoted), moved {moved} keys of '{}'; {recovered} open transfers finished after; RESERVE calls per master {shares:?}",
        buyers as f64 / elapsed.as_secs_f64(),
        soldout.load(Ordering::SeqCst),
        retries.load(Ordering::Relaxed),
        keys[1]
    );
}

#[test]
fn a_sale_on_a_cluster_with_a_failover_and_a_moved_slot() {
    sale_on_a_cluster(1_000, 4_000, 8);
}

/// `make stock-cluster`: 10,000 units, 100,000 buyers.
#[test]
#[ignore]
fn soak_stock_spread_on_a_cluster() {
    sale_on_a_cluster(10_000, 100_000, 32);
}

/// A node's CPU seconds so far (`used_cpu_user` + `used_cpu_sys`).
fn cpu_seconds(c: &mut Connection) -> f64 {
    let info: String = redis::cmd("INFO").arg("cpu").query(c).unwrap();
    info.lines()
        .filter_map(|l| {
            let (k, v) = l.trim().split_once(':')?;
            matches!(k, "used_cpu_user" | "used_cpu_sys").then(|| v.parse::<f64>().unwrap())
        })
        .sum()
}

/// Runs `buyers` buyers (one unit each) from `threads` clients through
/// `reserve` and returns each master's CPU seconds spent meanwhile, less
/// what it spends idle (its cron and the cluster bus, measured over a
/// second before), and the number of OK replies.
fn sale_cpu(
    cl: &Cluster,
    buyers: u64,
    threads: u64,
    reserve: impl Fn(&mut redis::cluster::ClusterConnection, u64) -> bool + Send + Sync + 'static,
) -> (HashMap<usize, f64>, i64) {
    let masters = cl.masters();
    let sample = || -> HashMap<usize, f64> {
        masters
            .iter()
            .map(|&m| (m, cpu_seconds(&mut cl.nodes[m].conn())))
            .collect()
    };
    let idle_from = (sample(), Instant::now());
    std::thread::sleep(Duration::from_secs(1));
    let before = sample();
    let idle_rate: HashMap<usize, f64> = masters
        .iter()
        .map(|m| {
            (
                *m,
                (before[m] - idle_from.0[m]) / idle_from.1.elapsed().as_secs_f64(),
            )
        })
        .collect();
    let started = Instant::now();
    let reserve = Arc::new(reserve);
    let ok = Arc::new(AtomicI64::new(0));
    let handles: Vec<_> = (0..threads)
        .map(|t| {
            let (reserve, ok) = (reserve.clone(), ok.clone());
            let client = cl.client_builder().build().unwrap();
            std::thread::spawn(move || {
                let mut c = client.get_connection().unwrap();
                let mut b = t;
                while b < buyers {
                    if reserve(&mut c, b) {
                        ok.fetch_add(1, Ordering::SeqCst);
                    }
                    b += threads;
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    let elapsed = started.elapsed().as_secs_f64();
    let after = sample();
    let spent = masters
        .iter()
        .map(|m| (*m, (after[m] - before[m] - idle_rate[m] * elapsed).max(0.0)))
        .collect();
    (spent, ok.load(Ordering::SeqCst))
}

/// Each master's µs inside STOCK commands since the stats were reset
/// (`INFO commandstats`): the commands' own time, without the event loop,
/// the network and replication around them.
fn stock_usec(cl: &Cluster) -> HashMap<usize, u64> {
    cl.masters()
        .into_iter()
        .map(|m| {
            let usec = cl
                .commandstats(m)
                .iter()
                .filter(|(name, _)| name.starts_with("stock."))
                .map(|(_, &(_, usec))| usec)
                .sum();
            (m, usec)
        })
        .collect()
}

/// `make stock-cluster`: the capacity of one master against three, by the
/// CPU the masters spend, since every node of the test cluster shares the
/// same 2 cores and a throughput cannot show a scaling. The same sale
/// (10,000 units, 100,000 buyers, 16 clients) runs twice on the 3+3
/// cluster: on a single-slot stock (one key, so one master does all the
/// work) and on a SKU spread over 16 shards (spread over the 3 masters).
/// A master saturates when its own CPU does, so the capacity of each
/// layout is the buyers per CPU second of its busiest master, and their
/// ratio is the scaling from one master to three. Both sales sell every
/// unit exactly once.
#[test]
#[ignore]
fn soak_capacity_from_one_master_to_three() {
    let cl = Cluster::start();
    let (total, buyers, threads) = (10_000i64, 100_000u64, 16u64);
    let mut c = cl.client();
    let _: Value = redis::cmd("STOCK.CREATE")
        .arg("{cap}sku")
        .arg(total)
        .arg("LIMIT")
        .arg(1)
        .arg("LEASE")
        .arg(3_600_000)
        .query(&mut c)
        .unwrap();
    let one = cl.owner_of_key("{cap}sku");
    cl.reset_stats();
    let (single, ok1) = sale_cpu(&cl, buyers, threads, |c, b| {
        let r: Vec<Value> = redis::cmd("STOCK.RESERVE")
            .arg("{cap}sku")
            .arg(format!("u{b}"))
            .arg(format!("o{b}"))
            .arg(1)
            .query(c)
            .unwrap();
        r[0] == Value::BulkString(b"OK".to_vec())
    });
    assert_eq!(ok1, total, "single-slot: every unit sold once");
    let single_usec = stock_usec(&cl)[&one];
    let s = SpreadStock::new("sku:cap", 16);
    s.create(&mut c, total, Some(1), Some(3_600_000), None)
        .unwrap();
    let s2 = s.clone();
    cl.reset_stats();
    let (spread, ok3) = sale_cpu(&cl, buyers, threads, move |c, b| {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            // A shard still refilling: the same order again (idempotent).
            match s2.reserve(c, &format!("u{b}"), &format!("o{b}"), 1) {
                Ok(r) => return matches!(r.status, ReserveStatus::Ok),
                Err(e) => assert!(Instant::now() < deadline, "u{b}: {e}"),
            }
            std::thread::sleep(Duration::from_millis(2));
        }
    });
    let info = s.info(&mut c).unwrap();
    assert_eq!(ok3, total, "spread: every unit sold once: {info:?}");
    assert_eq!(info.reserved() + info.sold(), total, "spread: units held");
    let per_master = cl.calls_per_node("stock.reserve");
    let spread_usec = stock_usec(&cl);
    let masters = cl.masters();
    for m in &masters {
        assert!(
            per_master.get(m).copied().unwrap_or(0) > buyers / 10,
            "master {m} served {:?} of the spread sale's reservations",
            per_master.get(m)
        );
    }
    let busiest = masters.iter().map(|m| spread[m]).fold(0.0, f64::max);
    let cap1 = buyers as f64 / single[&one];
    let cap3 = buyers as f64 / busiest;
    eprintln!(
        "capacity, one master to three: single-slot stock on master {one}: {:.3} CPU s ({:.1} µs a buyer, {:.1} of them inside STOCK commands; {:.0} buyers per CPU second); spread over 16 shards: CPU s per master {:?} (the busiest {:.3}, {:.1} µs a buyer over all masters, {:.1} inside STOCK commands, {:.0} buyers per CPU second of the busiest); RESERVE calls per master {:?}; scaling {:.2}x",
        single[&one],
        single[&one] * 1e6 / buyers as f64,
        single_usec as f64 / buyers as f64,
        cap1,
        masters.iter().map(|m| format!("{m}: {:.3}", spread[m])).collect::<Vec<_>>(),
        busiest,
        masters.iter().map(|m| spread[m]).sum::<f64>() * 1e6 / buyers as f64,
        spread_usec.values().sum::<u64>() as f64 / buyers as f64,
        cap3,
        masters.iter().map(|m| (m, per_master.get(m).copied().unwrap_or(0))).collect::<Vec<_>>(),
        cap3 / cap1
    );
}
