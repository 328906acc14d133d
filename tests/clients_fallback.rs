//! The Python client on a server without the module (issue 14): its
//! default backend falls back to the Functions library
//! lua-compat/hotpath.lua, and every family's calls of the client's own
//! test suite (clients/python/tests/test_client.py, `Families`) give the
//! replies they give against the module, over RESP3 and RESP2
//! (clients/python/tests/test_fallback.py).

mod common;

use std::path::PathBuf;
use std::process::Command;

use common::Server;

#[test]
fn python_client_falls_back_to_the_functions_library() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let s = Server::start_bare(&[]);
    let url = format!("redis://127.0.0.1:{}/", s.port);
    let out = Command::new(common::python_bin())
        .env("PYTHONPATH", root.join("clients/python/src"))
        .env("HOTPATH_VECTORS", root.join("docs/spread-vectors.json"))
        .env("HOTPATH_LIBRARY", root.join("lua-compat/hotpath.lua"))
        .env("HOTPATH_FUNCTIONS_URL", &url)
        .args(["-m", "unittest", "discover", "-p", "test_fallback.py", "-s"])
        .arg(root.join("clients/python/tests"))
        .arg("-v")
        .output()
        .expect("python3");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "python tests failed:\n{err}");
    assert!(!err.contains("HOTPATH_FUNCTIONS_URL not set"), "{err}");
    assert!(err.contains("OnTheFunctionsLibrary"), "{err}");
    eprintln!("{}", err.lines().last().unwrap_or(""));
}
