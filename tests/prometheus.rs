//! docs/prometheus/hotpath.lua through the real redis_exporter (Debian's
//! prometheus-redis-exporter, installed by scripts/deps.sh): every numeric
//! `hotpath_*` field of `INFO hotpath` becomes a Prometheus series, and a
//! counter moves with the writes (docs/operations.md, "Prometheus").

use crate::common;

use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::*;

struct Exporter(Child);

impl Drop for Exporter {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// One scrape of `/metrics` on `port`: the body, or None while the
/// exporter is not listening yet.
fn scrape(port: u16) -> Option<String> {
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(b"GET /metrics HTTP/1.0\r\nHost: localhost\r\n\r\n")
        .ok()?;
    let mut out = String::new();
    s.read_to_string(&mut out).ok()?;
    Some(out)
}

/// The value of `redis_script_values{key="<name>"}` in a scrape.
fn series(body: &str, name: &str) -> Option<String> {
    let prefix = format!("redis_script_values{{key=\"{name}\"}} ");
    body.lines()
        .find_map(|l| l.strip_prefix(&prefix).map(|v| v.trim().to_string()))
}

#[test]
fn the_exporter_script_turns_info_hotpath_into_series() {
    let srv = Server::start();
    let mut c = srv.conn();
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("docs/prometheus/hotpath.lua");
    let port = free_port();
    let child = Command::new("prometheus-redis-exporter")
        .arg("-redis.addr")
        .arg(format!("redis://127.0.0.1:{}", srv.port))
        .arg("-script")
        .arg(&script)
        .arg("-web.listen-address")
        .arg(format!("127.0.0.1:{port}"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("prometheus-redis-exporter (scripts/deps.sh installs it)");
    let _exporter = Exporter(child);
    let started = Instant::now();
    let first = loop {
        if let Some(b) = scrape(port) {
            break b;
        }
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "no exporter on {port}"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    // Every numeric field of INFO hotpath is a series; the release text
    // (2.0.0) is not a number and is left out.
    let info: String = redis::cmd("INFO").arg("hotpath").query(&mut c).unwrap();
    let fields: Vec<(&str, &str)> = info
        .lines()
        .filter_map(|l| l.split_once(':'))
        .filter(|(k, _)| k.starts_with("hotpath_"))
        .collect();
    assert!(fields.len() > 40, "{info}");
    for (k, v) in &fields {
        if v.parse::<f64>().is_ok() {
            assert_eq!(series(&first, k).as_deref(), Some(*v), "{k}");
        } else {
            assert_eq!(series(&first, k), None, "{k}");
        }
    }
    assert_eq!(series(&first, "hotpath_poll_votes").as_deref(), Some("0"));
    // A counter moves with the writes.
    run(&mut c, &["POLL.CREATE", "p", "CANDIDATES", "2", "a", "b"]);
    for u in ["u1", "u2", "u3"] {
        assert_eq!(run(&mut c, &["POLL.VOTE", "p", u, "a"]), "1");
    }
    let after = scrape(port).expect("a second scrape");
    assert_eq!(series(&after, "hotpath_poll_votes").as_deref(), Some("3"));
}
