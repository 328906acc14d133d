//! Measurements behind the fan-out decision of docs/spread.md: a
//! client-side fan-out (one request to each of 3 masters, sent together,
//! then the 3 replies read) against a module-side fan-out over the cluster
//! bus (the prototype in bench/busproto: one request to one master, which
//! asks the 2 others with RM_SendClusterMessage, blocks the client, and
//! replies when both answered). Same per-shard work in both.
//!
//! Ignored by default; `make cluster-bench` builds the prototype and runs
//! it: `cargo test --release --test integration cluster_ha::fanout_ -- --ignored --nocapture`.
//! (A module of tests/cluster_ha.rs, so that `make test` builds no extra
//! test binary for it.)

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::common::cluster::{Cluster, ClusterOpts};
use super::common::*;

fn proto_path() -> String {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/release/libhotpath_busproto.so");
    assert!(
        p.exists(),
        "{} is missing: cargo build --release -p hotpath-busproto",
        p.display()
    );
    p.display().to_string()
}

fn info_field(c: &mut Connection, section: &str, field: &str) -> f64 {
    let info = run(c, &["INFO", section]);
    info.lines()
        .find_map(|l| l.strip_prefix(&format!("{field}:")))
        .map(|v| v.trim().parse().unwrap())
        .unwrap_or_else(|| panic!("no {field} in INFO {section}"))
}

fn cpu_seconds(c: &mut Connection) -> f64 {
    info_field(c, "cpu", "used_cpu_user") + info_field(c, "cpu", "used_cpu_sys")
}

fn wchar(pid: u64) -> u64 {
    let io = std::fs::read_to_string(format!("/proc/{pid}/io")).unwrap_or_default();
    io.lines()
        .find_map(|l| l.strip_prefix("wchar: "))
        .map(|v| v.trim().parse().unwrap())
        .unwrap_or(0)
}

fn packed(args: &[&str]) -> Vec<u8> {
    let mut cmd = redis::cmd(args[0]);
    for a in &args[1..] {
        cmd.arg(*a);
    }
    cmd.get_packed_command()
}

/// One client-side fan-out: the request written to every master, then
/// every reply read. Returns the total or the first error.
fn client_fanout(conns: &mut [Connection], req: &[u8]) -> RedisResult<i64> {
    if conns.len() != 3 {
        return Err(redis::RedisError::from((
            redis::ErrorKind::ClusterDown,
            "not every master is reachable",
        )));
    }
    for c in conns.iter_mut() {
        c.send_packed_command(req)?;
    }
    let mut total = 0;
    let mut first_err = None;
    for c in conns.iter_mut() {
        match c.recv_response().and_then(|v| v.extract_error()) {
            Ok(Value::Int(n)) => total += n,
            Ok(other) => panic!("{other:?}"),
            Err(e) => {
                first_err.get_or_insert(e);
            }
        }
    }
    match first_err {
        Some(e) => Err(e),
        None => Ok(total),
    }
}

fn bus_fanout(c: &mut Connection, req: &[u8]) -> RedisResult<i64> {
    c.send_packed_command(req)?;
    match c.recv_response()?.extract_error()? {
        Value::Int(n) => Ok(n),
        other => panic!("{other:?}"),
    }
}

fn percentile(v: &mut [f64], p: f64) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[((v.len() - 1) as f64 * p).round() as usize]
}

#[test]
#[ignore]
fn fanout_client_side_vs_cluster_bus() {
    let proto = proto_path();
    let cl = Cluster::start_opts(ClusterOpts {
        extra: vec!["--loadmodule".into(), proto],
        ..ClusterOpts::default()
    });
    let masters = cl.masters();
    assert_eq!(masters.len(), 3);
    // Some keys on every master so that the answers are not all zero.
    let mut cc = cl.client();
    for i in 0..300 {
        let _: () = redis::cmd("SET")
            .arg(format!("k{i}"))
            .arg(i)
            .query(&mut cc)
            .unwrap();
    }
    let expected: i64 = masters
        .iter()
        .map(|&m| int(&mut cl.nodes[m].conn(), &["DBSIZE"]))
        .sum();
    let local = packed(&["BUSPROTO.LOCAL"]);
    let fan = packed(&["BUSPROTO.FANOUT", "1000"]);
    let conns = || -> Vec<Connection> { masters.iter().map(|&m| cl.nodes[m].conn()).collect() };

    // 1. Latency, one call at a time.
    let n = 5000;
    let lat = |f: &mut dyn FnMut() -> i64| -> (f64, f64) {
        let mut v = Vec::with_capacity(n);
        for _ in 0..n {
            let t = Instant::now();
            assert_eq!(f(), expected);
            v.push(t.elapsed().as_secs_f64() * 1e6);
        }
        (percentile(&mut v, 0.5), percentile(&mut v, 0.99))
    };
    let mut cs = conns();
    let single = {
        let mut c = cl.nodes[masters[0]].conn();
        let own = int(&mut c, &["DBSIZE"]);
        let mut v = Vec::new();
        for _ in 0..n {
            let t = Instant::now();
            assert_eq!(bus_fanout(&mut c, &local).unwrap(), own);
            v.push(t.elapsed().as_secs_f64() * 1e6);
        }
        (percentile(&mut v, 0.5), percentile(&mut v, 0.99))
    };
    let client = lat(&mut || client_fanout(&mut cs, &local).unwrap());
    let mut k = 0;
    let mut bs = conns();
    let bus = lat(&mut || {
        k += 1;
        bus_fanout(&mut bs[k % 3], &fan).unwrap()
    });
    println!("| latency, one call at a time (µs) | p50 | p99 |");
    println!("|---|---:|---:|");
    println!(
        "| one master, one command (floor) | {:.0} | {:.0} |",
        single.0, single.1
    );
    println!(
        "| client-side fan-out to 3 masters | {:.0} | {:.0} |",
        client.0, client.1
    );
    println!(
        "| cluster-bus fan-out (1 + 2 masters) | {:.0} | {:.0} |",
        bus.0, bus.1
    );

    // 2. Throughput with 8 client threads, and server CPU per call.
    let threads = 8;
    let secs = 3.0;
    let mut rows = Vec::new();
    for mode in ["client", "bus"] {
        let mut cpu_conns = conns();
        let cpu0: f64 = cpu_conns.iter_mut().map(cpu_seconds).sum();
        let calls = Arc::new(AtomicU64::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let (calls, stop) = (calls.clone(), stop.clone());
                let mut cs = conns();
                let (local, fan) = (local.clone(), fan.clone());
                std::thread::spawn(move || {
                    let mut k = t;
                    while !stop.load(Ordering::Relaxed) {
                        let total = if mode == "client" {
                            client_fanout(&mut cs, &local).unwrap()
                        } else {
                            k += 1;
                            bus_fanout(&mut cs[k % 3], &fan).unwrap()
                        };
                        assert_eq!(total, expected);
                        calls.fetch_add(1, Ordering::Relaxed);
                    }
                })
            })
            .collect();
        std::thread::sleep(Duration::from_secs_f64(secs));
        stop.store(true, Ordering::Relaxed);
        for h in handles {
            h.join().unwrap();
        }
        let cpu1: f64 = cpu_conns.iter_mut().map(cpu_seconds).sum();
        let n = calls.load(Ordering::Relaxed) as f64;
        rows.push((mode, n / secs, (cpu1 - cpu0) * 1e6 / n));
    }
    println!();
    println!("| {threads} client threads, {secs} s | fan-outs/s | server CPU µs per fan-out (3 masters) |");
    println!("|---|---:|---:|");
    for (mode, rate, cpu) in rows {
        println!("| {mode} | {rate:.0} | {cpu:.1} |");
    }

    // 3. Bytes a non-coordinating master writes per fan-out (its bus
    // answers, or its reply to the client), from /proc/<pid>/io.
    let coord = masters[0];
    let other = masters[1];
    let pid = info_field(&mut cl.nodes[other].conn(), "server", "process_id") as u64;
    let mut bytes = Vec::new();
    for mode in ["client", "bus"] {
        let mut cs = conns();
        let mut c0 = cl.nodes[coord].conn();
        let w0 = wchar(pid);
        let n = 2000;
        for _ in 0..n {
            if mode == "client" {
                client_fanout(&mut cs, &local).unwrap();
            } else {
                bus_fanout(&mut c0, &fan).unwrap();
            }
        }
        let w1 = wchar(pid);
        bytes.push((mode, (w1 - w0) as f64 / n as f64));
    }
    let cinfo = run(&mut cl.nodes[coord].conn(), &["CLUSTER", "INFO"]);
    let module_sent = cinfo
        .lines()
        .find_map(|l| l.strip_prefix("cluster_stats_messages_module_sent:"))
        .unwrap_or("0")
        .trim()
        .to_string();
    println!();
    println!("| bytes written by one answering master per fan-out | bytes |");
    println!("|---|---:|");
    for (mode, b) in bytes {
        println!("| {mode} | {b:.0} |");
    }
    println!("(coordinator's cluster_stats_messages_module_sent: {module_sent})");

    // 4. A master dies: what each design answers, and when it recovers.
    let victim = masters[2];
    let started = Instant::now();
    let mut c0 = cl.nodes[coord].conn();
    let failover = {
        let mut cs = conns();
        // Kill without waiting for the promotion here: both designs poll.
        let mut log_bus: Vec<(f64, String)> = Vec::new();
        let mut log_client: Vec<(f64, String)> = Vec::new();
        unsafe_kill(&cl, victim);
        let deadline = Instant::now() + Duration::from_secs(30);
        let mut bus_ok = None;
        let mut client_ok = None;
        while Instant::now() < deadline && (bus_ok.is_none() || client_ok.is_none()) {
            let t = started.elapsed().as_secs_f64();
            if bus_ok.is_none() {
                let t0 = Instant::now();
                let r = bus_fanout(&mut c0, &fan);
                let took = t0.elapsed().as_secs_f64() * 1e3;
                match r {
                    Ok(v) if v == expected => {
                        bus_ok = Some(t);
                        log_bus.push((t, format!("ok {v} in {took:.1} ms")));
                    }
                    Ok(v) => log_bus.push((
                        t,
                        format!("PARTIAL total {v} (expected {expected}) returned as complete in {took:.1} ms"),
                    )),
                    Err(e) => log_bus.push((t, format!("{} in {took:.1} ms", error_text(&e)))),
                }
            }
            if client_ok.is_none() {
                let t0 = Instant::now();
                let r = client_fanout(&mut cs, &local);
                let took = t0.elapsed().as_secs_f64() * 1e3;
                match r {
                    Ok(v) if v == expected => {
                        client_ok = Some(t);
                        log_client.push((t, format!("ok {v} in {took:.1} ms")));
                    }
                    Ok(v) => log_client.push((
                        t,
                        format!("PARTIAL total {v} (expected {expected}) in {took:.1} ms"),
                    )),
                    Err(e) => {
                        log_client.push((t, format!("{} in {took:.1} ms", error_text(&e))));
                        // A client re-reads the topology and reconnects to
                        // the masters it finds (the promoted replica).
                        cs = reconnect_masters(&cl);
                    }
                }
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        (log_bus, log_client)
    };
    let summarize = |log: &[(f64, String)]| {
        let mut out = Vec::new();
        let mut last = String::new();
        for (t, s) in log {
            let kind: String = s.split(" in ").next().unwrap().chars().take(60).collect();
            if kind != last {
                out.push(format!("t={t:.1}s {s}"));
                last = kind;
            }
        }
        out.join("; ")
    };
    println!();
    println!("master killed at t=0 (node timeout 3000 ms):");
    println!("- bus: {}", summarize(&failover.0));
    println!("- client: {}", summarize(&failover.1));
}

/// Stops a node without the harness's promotion wait.
fn unsafe_kill(cl: &Cluster, i: usize) {
    let pid = info_field(&mut cl.nodes[i].conn(), "server", "process_id") as i32;
    let _ = std::process::Command::new("kill")
        .arg("-9")
        .arg(pid.to_string())
        .status();
}

/// Connects to the masters of the current topology, read from any live
/// node (what a cluster client does after a connection error).
fn reconnect_masters(cl: &Cluster) -> Vec<Connection> {
    for n in &cl.nodes {
        let Some(mut c) = n.conn_opt() else { continue };
        let Ok(Value::Array(slots)) = cmd(&mut c, &["CLUSTER", "SLOTS"]) else {
            continue;
        };
        let mut ports: Vec<i64> = slots
            .iter()
            .filter_map(|r| match r {
                Value::Array(a) => match a.get(2) {
                    Some(Value::Array(m)) => match m.get(1) {
                        Some(Value::Int(p)) => Some(*p),
                        _ => None,
                    },
                    _ => None,
                },
                _ => None,
            })
            .collect();
        ports.sort_unstable();
        ports.dedup();
        let conns: Vec<Connection> = ports
            .iter()
            .filter_map(|&p| {
                redis::Client::open(format!("redis://127.0.0.1:{p}/"))
                    .ok()?
                    .get_connection_with_timeout(Duration::from_millis(200))
                    .ok()
            })
            .collect();
        if conns.len() == 3 {
            return conns;
        }
    }
    Vec::new()
}
