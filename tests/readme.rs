//! The README's examples, run for real so that they cannot rot: every
//! `$ redis-cli …` line of its console blocks (through the real
//! `redis-cli`), the Python example (redis-py) and the Rust example (the
//! `redis` crate).

use crate::common;

#[path = "../examples/quickstart.rs"]
mod quickstart;

use std::process::Command;

use common::*;

fn readme() -> String {
    std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap()
}

/// Returns (command line, expected output) pairs of the console blocks.
fn console_steps(text: &str) -> Vec<(String, String)> {
    let mut steps: Vec<(String, String)> = Vec::new();
    let mut in_block = false;
    for line in text.lines() {
        if line.starts_with("```") {
            in_block = line == "```console";
            continue;
        }
        if !in_block {
            continue;
        }
        if let Some(cmd) = line.strip_prefix("$ redis-cli ") {
            steps.push((cmd.to_string(), String::new()));
        } else if let Some(last) = steps.last_mut() {
            last.1.push_str(line);
            last.1.push('\n');
        }
    }
    steps
}

#[test]
fn redis_cli_tour_prints_what_the_readme_shows() {
    let srv = Server::start();
    let steps = console_steps(&readme());
    assert!(steps.len() >= 10, "the tour is missing");
    for (cmd, want) in steps {
        let out = Command::new("redis-cli")
            .arg("-p")
            .arg(srv.port.to_string())
            .args(cmd.split_whitespace())
            .output()
            .expect("redis-cli");
        let got = String::from_utf8_lossy(&out.stdout).into_owned();
        assert_eq!(got.trim_end(), want.trim_end(), "redis-cli {cmd}");
    }
}

#[test]
fn python_example_runs() {
    let srv = Server::start();
    let src = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/examples/quickstart.py"
    ))
    .unwrap();
    // The README quotes the example; keep the two the same.
    for line in readme()
        .lines()
        .filter(|l| l.starts_with("r.execute_command(\"POLL.CREATE\""))
    {
        assert!(
            src.contains(line),
            "README line not in examples/quickstart.py: {line}"
        );
    }
    let out = Command::new(python_bin())
        .arg(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/examples/quickstart.py"
        ))
        .env("REDIS_URL", format!("redis://127.0.0.1:{}", srv.port))
        .output()
        .unwrap_or_else(|e| panic!("{}: {e}", python_bin()));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(stdout, "[[b'rust', 2], [b'zig', 1]]\n[1, 1]\n");
}

#[test]
fn rust_example_runs() {
    let srv = Server::start();
    let top = quickstart::tour(&format!("redis://127.0.0.1:{}/", srv.port)).unwrap();
    assert_eq!(top, vec![("rust".to_string(), 2), ("zig".to_string(), 1)]);
}

#[test]
fn links_point_at_files_inside_the_repo() {
    let text = readme();
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut n = 0;
    for part in text.split("](").skip(1) {
        let target = part.split(')').next().unwrap();
        if target.starts_with("http://")
            || target.starts_with("https://")
            || target.starts_with('#')
        {
            continue;
        }
        n += 1;
        let path = target.split('#').next().unwrap();
        assert!(
            !path.starts_with('/') && !path.split('/').any(|c| c == ".."),
            "README links outside the repository: {target}"
        );
        assert!(
            root.join(path).exists(),
            "README links a missing file: {target}"
        );
    }
    assert!(n >= 10, "found only {n} links");
}

/// The Configuration table's rows: (name, default, min, max).
fn config_rows(text: &str) -> Vec<(String, i64, i64, i64)> {
    let section = text
        .split("## Configuration")
        .nth(1)
        .expect("a Configuration section");
    section
        .lines()
        .take_while(|l| !l.starts_with("## "))
        .filter(|l| l.starts_with("| `"))
        .map(|l| {
            let cells: Vec<&str> = l.split('|').map(str::trim).collect();
            let num = |s: &str| -> i64 { s.split_whitespace().next().unwrap().parse().unwrap() };
            let (min, max) = cells[3].split_once(" … ").expect("a range");
            (
                cells[1].trim_matches('`').to_string(),
                num(cells[2]),
                num(min),
                num(max),
            )
        })
        .collect()
}

#[test]
fn the_configuration_table_matches_the_server() {
    let rows = config_rows(&readme());
    let srv = Server::start();
    let mut c = srv.conn();
    let all = run(&mut c, &["CONFIG", "GET", "hotpath.*"]);
    assert_eq!(
        all.matches("hotpath.").count(),
        rows.len(),
        "the table and CONFIG GET hotpath.* list different settings: {all}"
    );
    for (name, default, min, max) in rows {
        let key = format!("hotpath.{name}");
        let get = |c: &mut Connection| run(c, &["CONFIG", "GET", &key]);
        assert_eq!(get(&mut c), format!("[{key}, {default}]"));
        for ok in [min, max] {
            assert_eq!(run(&mut c, &["CONFIG", "SET", &key, &ok.to_string()]), "OK");
        }
        for bad in [min - 1, max + 1] {
            assert!(
                cmd(&mut c, &["CONFIG", "SET", &key, &bad.to_string()]).is_err(),
                "{key} accepted {bad}"
            );
        }
        run(&mut c, &["CONFIG", "SET", &key, &default.to_string()]);
    }
}
