//! The Docker image without a Docker engine: its command line
//! (docker/entrypoint.sh) and its health check (docker/healthcheck.sh) run
//! here against the built module, and the Dockerfile is checked for what
//! it promises (pinned images matching the tested server, a locked build,
//! a dependency layer, the health check).

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::*;

fn repo(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(path)
}

/// The entrypoint script running a server; killed on drop.
struct Entrypoint {
    child: Child,
    port: u16,
    dir: PathBuf,
}

impl Entrypoint {
    /// Runs docker/entrypoint.sh with `HOTPATH_ARGS=args` and the test
    /// server as `HOTPATH_SERVER`.
    fn spawn(args: &str) -> Entrypoint {
        let dir = Server::new_dir();
        let port = free_port();
        let child = Command::new("bash")
            .arg(repo("docker/entrypoint.sh"))
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
            .args(["--save", "", "--dir"])
            .arg(&dir)
            .arg("--logfile")
            .arg(dir.join("server.log"))
            .env("HOTPATH_ARGS", args)
            .env("HOTPATH_MODULE", module_path())
            .env("HOTPATH_SERVER", server_bin())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        Entrypoint { child, port, dir }
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("server.log")).unwrap_or_default()
    }

    /// Waits until the server answers PING; false when it exited.
    fn ready(&mut self) -> bool {
        let deadline = Instant::now() + Duration::from_secs(20);
        while Instant::now() < deadline {
            if self.child.try_wait().unwrap().is_some() {
                return false;
            }
            let url = format!("redis://127.0.0.1:{}/", self.port);
            if let Ok(mut c) = redis::Client::open(url).unwrap().get_connection() {
                // The script execs the server: same process id. (Another
                // test's server could have taken the port meanwhile.)
                let info: RedisResult<String> = redis::cmd("INFO").arg("server").query(&mut c);
                let pid = format!("process_id:{}\r\n", self.child.id());
                if info.map(|i| i.contains(&pid)).unwrap_or(false) {
                    return true;
                }
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!(
            "the entrypoint's server neither started nor exited: {}",
            self.log()
        );
    }

    fn conn(&self) -> Connection {
        redis::Client::open(format!("redis://127.0.0.1:{}/", self.port))
            .unwrap()
            .get_connection()
            .unwrap()
    }

    /// Runs docker/healthcheck.sh against this server; true when healthy.
    fn healthy(&self) -> bool {
        Command::new("bash")
            .arg(repo("docker/healthcheck.sh"))
            .env("HOTPATH_PORT", self.port.to_string())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .unwrap()
            .success()
    }
}

impl Drop for Entrypoint {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

#[test]
fn the_entrypoint_loads_the_module_with_the_arguments_from_hotpath_args() {
    let mut e = Entrypoint::spawn("like-recent 5  redpacket-max-count 50");
    assert!(e.ready(), "{}", e.log());
    let mut c = e.conn();
    assert_eq!(run(&mut c, &["PING"]), "PONG");
    let list = run(&mut c, &["MODULE", "LIST"]);
    assert!(list.contains("[name, hotpath, ver, "), "{list}");
    assert!(
        list.contains("args, [like-recent, 5, redpacket-max-count, 50]"),
        "{list}"
    );
    assert_eq!(
        run(&mut c, &["CONFIG", "GET", "hotpath.redpacket-max-count"]),
        "[hotpath.redpacket-max-count, 50]"
    );
    assert!(e.healthy(), "the health check fails on a healthy server");
    // Once the server is gone, the health check says so.
    let _ = e.child.kill();
    let _ = e.child.wait();
    assert!(!e.healthy(), "the health check passes with no server");
}

#[test]
fn the_entrypoint_runs_without_module_arguments() {
    let mut e = Entrypoint::spawn("");
    assert!(e.ready(), "{}", e.log());
    let mut c = e.conn();
    assert_eq!(
        run(&mut c, &["CONFIG", "GET", "hotpath.like-recent"]),
        "[hotpath.like-recent, 0]"
    );
    assert!(e.healthy());
}

#[test]
fn a_bad_hotpath_args_stops_the_container_with_a_log_line() {
    let mut e = Entrypoint::spawn("like-recent 2000");
    assert!(!e.ready(), "the server started with like-recent 2000");
    let st = e.child.wait().unwrap();
    assert!(!st.success());
    assert!(
        e.log()
            .contains("load argument 'like-recent 2000' is out of range"),
        "{}",
        e.log()
    );
}

/// Returns the version of `bin --version` (`v=7.0.15`).
fn server_version(bin: &str) -> String {
    let out = Command::new(bin).arg("--version").output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    text.split_whitespace()
        .find_map(|w| w.strip_prefix("v="))
        .unwrap_or_else(|| panic!("no version in {text:?}"))
        .to_string()
}

#[test]
fn the_dockerfile_pins_the_images_the_tests_run_on_and_builds_locked() {
    let df = std::fs::read_to_string(repo("docker/Dockerfile")).unwrap();
    let froms: Vec<&str> = df
        .lines()
        .filter_map(|l| l.strip_prefix("FROM "))
        .map(|l| l.split_whitespace().next().unwrap())
        .collect();
    assert_eq!(froms.len(), 2, "{froms:?}");
    // The builder: a full Rust release on bookworm, not older than
    // Cargo.toml's rust-version.
    let rust = froms[0]
        .strip_prefix("rust:")
        .and_then(|t| t.strip_suffix("-slim-bookworm"))
        .unwrap_or_else(|| panic!("builder {}", froms[0]));
    let parts: Vec<u32> = rust.split('.').map(|p| p.parse().unwrap()).collect();
    assert_eq!(parts.len(), 3, "unpinned builder {}", froms[0]);
    let toml = std::fs::read_to_string(repo("Cargo.toml")).unwrap();
    let min = toml
        .lines()
        .find_map(|l| l.strip_prefix("rust-version = \""))
        .and_then(|l| l.strip_suffix('"'))
        .unwrap();
    let min: Vec<u32> = min.split('.').map(|p| p.parse().unwrap()).collect();
    assert!(parts[..2] >= min[..2], "builder {rust} older than {min:?}");
    // The runtime: the Redis release the suite runs on.
    let redis = froms[1]
        .strip_prefix("redis:")
        .and_then(|t| t.strip_suffix("-bookworm"))
        .unwrap_or_else(|| panic!("runtime {}", froms[1]));
    assert_eq!(redis.split('.').count(), 3, "unpinned runtime {}", froms[1]);
    let bin = server_bin();
    if bin == "redis-server" {
        assert_eq!(
            redis,
            server_version(&bin),
            "the image runs another Redis than the tests"
        );
    }
    // A dependency layer, a locked build, the entrypoint and health check.
    let builds: Vec<&str> = df.lines().filter(|l| l.contains("cargo build")).collect();
    assert_eq!(builds.len(), 2, "{builds:?}");
    assert!(builds.iter().all(|l| l.contains("--locked")), "{builds:?}");
    assert!(df.contains("COPY Cargo.toml Cargo.lock ./"));
    assert!(df.contains("ENTRYPOINT [\"hotpath-entrypoint.sh\"]"));
    assert!(df.contains("COPY docker/entrypoint.sh /usr/local/bin/hotpath-entrypoint.sh"));
    assert!(df.contains("COPY docker/healthcheck.sh /usr/local/bin/hotpath-healthcheck.sh"));
    assert!(df.contains("CMD [\"hotpath-healthcheck.sh\"]"));
    assert!(df.contains("HEALTHCHECK "));
}

// ------------------------------------------------ the build stage, built ---

/// The Dockerfile's lines, continuations joined.
fn dockerfile_lines() -> Vec<String> {
    let df = std::fs::read_to_string(repo("docker/Dockerfile")).unwrap();
    let mut out = Vec::new();
    let mut cur = String::new();
    for line in df.lines() {
        let t = line.trim();
        if cur.is_empty() && (t.is_empty() || t.starts_with('#')) {
            continue;
        }
        if let Some(head) = t.strip_suffix('\\') {
            cur.push_str(head);
            cur.push(' ');
        } else {
            cur.push_str(t);
            out.push(std::mem::take(&mut cur));
        }
    }
    out
}

/// Copies `from` (a file, or a folder's contents) to `to`.
fn copy_into(from: &Path, to: &Path) {
    if from.is_dir() {
        std::fs::create_dir_all(to).unwrap();
        for e in std::fs::read_dir(from).unwrap() {
            let e = e.unwrap();
            copy_into(&e.path(), &to.join(e.file_name()));
        }
    } else {
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::copy(from, to).unwrap_or_else(|e| panic!("copy {}: {e}", from.display()));
    }
}

/// Builds the image's build stage the way `docker build` would, without a
/// Docker engine: in an empty folder that holds exactly what the stage's
/// `COPY` lines copy, running its `RUN` lines (all but the package
/// install, which this machine has done) in its `WORKDIR`; then loads the
/// file that the runtime stage copies out of it into a real server. The
/// build's output folder is kept under target/ between runs, so only the
/// first run builds the dependencies.
#[test]
fn the_build_stage_builds_from_what_the_dockerfile_copies() {
    let lines = dockerfile_lines();
    let froms: Vec<usize> = (0..lines.len())
        .filter(|&i| lines[i].starts_with("FROM "))
        .collect();
    assert!(froms.len() >= 2, "a build stage and a runtime stage");
    let root = Server::new_dir().join("context");
    let mut cwd = root.clone();
    std::fs::create_dir_all(&cwd).unwrap();
    let target = repo("target/docker-build-stage");
    std::fs::create_dir_all(&target).unwrap();
    let mut linked = false;
    for line in &lines[froms[0] + 1..froms[1]] {
        let (op, rest) = line.split_once(' ').unwrap_or((line, ""));
        match op {
            "WORKDIR" => {
                cwd = root.join(rest.trim().trim_start_matches('/'));
                std::fs::create_dir_all(&cwd).unwrap();
                if !linked {
                    std::os::unix::fs::symlink(&target, cwd.join("target")).unwrap();
                    linked = true;
                }
            }
            "COPY" => {
                let words: Vec<&str> = rest.split_whitespace().collect();
                assert!(!words[0].starts_with("--"), "{line}");
                let (dest, srcs) = words.split_last().unwrap();
                let dest_dir = dest.ends_with('/') || srcs.len() > 1;
                for src in srcs {
                    let from = repo(src);
                    let to = if dest_dir {
                        cwd.join(dest).join(Path::new(src).file_name().unwrap())
                    } else {
                        cwd.join(dest)
                    };
                    copy_into(&from, &to);
                }
            }
            "RUN" if rest.contains("apt-get") => {}
            "RUN" => {
                let out = Command::new("bash")
                    .args(["-ec", rest])
                    .current_dir(&cwd)
                    .output()
                    .unwrap();
                assert!(
                    out.status.success(),
                    "`RUN {rest}` failed:\n{}",
                    String::from_utf8_lossy(&out.stderr)
                );
            }
            "ENV" | "ARG" | "LABEL" => {}
            other => panic!("the build stage has a `{other}` line this test does not run"),
        }
    }
    // The runtime stage copies the module out of the build stage.
    let copy = lines[froms[1]..]
        .iter()
        .find(|l| l.starts_with("COPY --from=build "))
        .expect("the runtime stage copies the module from the build stage");
    let built = copy.split_whitespace().nth(2).unwrap();
    let so = root.join(built.trim_start_matches('/'));
    assert!(so.exists(), "the build stage left no {built}");
    let srv = Server::start_bare(&["--loadmodule", so.to_str().unwrap()]);
    let mut c = srv.conn();
    let reply: Value = redis::cmd("LIKE.TOGGLE")
        .arg("post:{1}")
        .arg(7)
        .query(&mut c)
        .unwrap();
    assert_eq!(reply, Value::Array(vec![Value::Int(1), Value::Int(1)]));
    let _ = std::fs::remove_dir_all(root.parent().unwrap());
}
