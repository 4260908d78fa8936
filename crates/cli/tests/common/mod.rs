//! Helpers shared by the binary's end-to-end tests.

#![allow(dead_code)]

use std::path::PathBuf;
use std::process::{Command, Output};

/// Runs the `tailor` binary with `args`.
pub(crate) fn tailor(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_tailor"))
        .args(args)
        .output()
        .expect("the tailor binary runs")
}

pub(crate) fn stdout(out: &Output) -> String {
    String::from_utf8(out.stdout.clone()).unwrap()
}

pub(crate) fn stderr(out: &Output) -> String {
    String::from_utf8(out.stderr.clone()).unwrap()
}

/// Asserts that `out` failed with an error containing `needle`, and no panic; `what`
/// names the case in the failure message.
pub(crate) fn assert_refused(out: &Output, needle: &str, what: &str) {
    assert!(!out.status.success(), "{what} succeeded");
    let msg = stderr(out);
    assert!(msg.contains(needle), "{what}: {msg}");
    assert!(!msg.contains("panicked"), "{what}: {msg}");
}

/// A scratch directory unique to one test.
pub(crate) fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("tailor-cli-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// `tailor simulate` of exp:10 work, 4,000 Poisson requests, seed 7, on 4 cores at
/// 200 rps unless `extra` sets them; `extra` starts with the policy.
pub(crate) fn sim(extra: &[&str]) -> Output {
    let mut args = vec![
        "simulate",
        "--demand",
        "exp:10",
        "--arrivals",
        "poisson",
        "--requests",
        "4000",
        "--seed",
        "7",
        "--policy",
    ];
    args.extend(extra);
    for (flag, default) in [("--cores", "4"), ("--rps", "200")] {
        if !extra.contains(&flag) {
            args.extend([flag, default]);
        }
    }
    tailor(&args)
}

/// A child's stderr, line by line.
pub(crate) type StderrLines = std::io::Lines<std::io::BufReader<std::process::ChildStderr>>;

/// What a server started with a piped stderr printed up to the line that names its
/// address, and the rest of its stderr.
pub(crate) struct Listening {
    /// `HOST:PORT`, from the line with `http://HOST:PORT`.
    pub(crate) addr: String,
    /// The lines up to and including that one.
    pub(crate) seen: Vec<String>,
    /// The lines after it.
    pub(crate) rest: StderrLines,
}

/// Reads `server`'s stderr (piped) until it says where it listens.
pub(crate) fn listening(server: &mut std::process::Child) -> Listening {
    use std::io::{BufRead, BufReader};
    let mut rest = BufReader::new(server.stderr.take().expect("stderr is piped")).lines();
    let mut seen = Vec::new();
    loop {
        let line = rest
            .next()
            .expect("the server says where it listens")
            .unwrap();
        seen.push(line.clone());
        if let Some(at) = line.split("http://").nth(1) {
            let addr = at.split_whitespace().next().unwrap().to_string();
            return Listening { addr, seen, rest };
        }
    }
}

/// `GET path` on `addr` over a fresh connection; the whole answer, head and body.
pub(crate) fn http_get(addr: &str, path: &str) -> String {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(addr).unwrap();
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    answer
}
