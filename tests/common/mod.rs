//! Helpers for the integration tests: find the built `rlaunch` and example
//! binaries, run them with a hard time limit, and inspect what they left.

#![allow(dead_code)]

pub mod capi;

use std::io::Read;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// No test may hang: anything still running after this is killed.
pub const HARD_LIMIT: Duration = Duration::from_secs(120);

/// [`HARD_LIMIT`], or `ONESIDE_TEST_HARD_LIMIT` seconds where everything
/// runs slower: the Soft-RoCE guest is emulated (QEMU TCG), and the full
/// `coll_check` at 3 ranks takes 107-125 s there.
pub fn hard_limit() -> Duration {
    std::env::var("ONESIDE_TEST_HARD_LIMIT")
        .ok()
        .and_then(|secs| secs.parse().ok())
        .map_or(HARD_LIMIT, Duration::from_secs)
}

/// `target/<profile>`, found from this test binary's own path.
pub fn target_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("test binary path");
    exe.parent()
        .and_then(|deps| deps.parent())
        .expect("target/<profile>/deps/<test>")
        .to_path_buf()
}

/// `cargo ARGS` on this workspace, in this test binary's target directory
/// and profile (so what it builds is what the tests use), stdin closed.
pub fn cargo(args: &[&str]) -> std::process::Command {
    let dir = target_dir();
    let profile = dir.file_name().unwrap().to_string_lossy().into_owned();
    let mut command = std::process::Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    command
        .args(args)
        .arg("--manifest-path")
        .arg(repo_file("Cargo.toml"))
        .arg("--target-dir")
        .arg(dir.parent().unwrap())
        .stdin(std::process::Stdio::null());
    if profile != "debug" {
        command.args(["--profile", &profile]);
    }
    command
}

pub fn rlaunch_path() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_rlaunch"))
}

/// A command running the launcher `program` (rlaunch or oshrun). The tests
/// run 4 and 8 ranks on 2-core machines on purpose, so they allow more
/// ranks than slots, as a user would with `--oversubscribe`
/// (`RLAUNCH_OVERSUBSCRIBE=1`); a test of that rule removes the variable.
pub fn launcher(program: impl AsRef<std::ffi::OsStr>) -> Command {
    let mut command = Command::new(program);
    command.env("RLAUNCH_OVERSUBSCRIBE", "1");
    command
}

/// A file of the repository, e.g. `hostfiles/localhost`.
pub fn repo_file(relative: &str) -> String {
    format!("{}/../{relative}", env!("CARGO_MANIFEST_DIR"))
}

/// An example binary: from `ONESIDE_TEST_EXAMPLES_DIR` if set (the VM suite
/// points it at the verbs build), else from this build.
pub fn example(name: &str) -> String {
    let dir = std::env::var_os("ONESIDE_TEST_EXAMPLES_DIR").map_or(target_dir().join("examples"), PathBuf::from);
    let path = dir.join(name);
    assert!(
        path.exists(),
        "{} is missing: `cargo test` builds the examples",
        path.display()
    );
    path.display().to_string()
}

/// `--transport` values to test, each with the path name the examples
/// report: `ONESIDE_TEST_TRANSPORTS=verbs` (the VM suite) or `ofi` (tests/ofi/run.sh,
/// with `ONESIDE_OFI_PROVIDER`), else shm and tcp.
pub fn transports() -> Vec<(&'static str, &'static str)> {
    match std::env::var("ONESIDE_TEST_TRANSPORTS").as_deref() {
        Ok("verbs") => vec![("verbs", "verbs")],
        Ok("tcp") => vec![("tcp", "tcp")],
        Ok("ofi") => vec![("ofi", "ofi")],
        _ => vec![("auto", "shm"), ("tcp", "tcp")],
    }
}

/// Whether a job over `transport` registers its heap with a NIC as the
/// heap grows, which then keeps its memory when freed: verbs, and ofi in
/// parts (`ONESIDE_OFI_REGISTER=parts`, or a provider that pins memory,
/// which none of this host's software providers does).
pub fn nic_keeps_heap(transport: &str) -> bool {
    let software = ["tcp", "shm", "udp", "sockets"];
    let provider = std::env::var("ONESIDE_OFI_PROVIDER").unwrap_or_default();
    let pins = !provider.is_empty() && !software.contains(&provider.split(';').next().unwrap_or(""));
    let asked = std::env::var("ONESIDE_OFI_REGISTER").ok();
    match transport {
        "verbs" => true,
        "ofi" => asked.as_deref() == Some("parts") || (pins && asked.as_deref() != Some("whole")),
        _ => false,
    }
}

/// Rank counts to test: `ONESIDE_TEST_SIZES=2,4`, else 1, 2, 4 and 8.
pub fn sizes() -> Vec<usize> {
    match std::env::var("ONESIDE_TEST_SIZES") {
        Ok(list) => list
            .split(',')
            .map(|n| n.trim().parse().expect("ONESIDE_TEST_SIZES holds numbers"))
            .collect(),
        Err(_) => vec![1, 2, 4, 8],
    }
}

/// What a finished command did.
#[derive(Debug)]
pub struct Outcome {
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

impl Outcome {
    pub fn lines(&self) -> Vec<&str> {
        self.stdout.lines().collect()
    }
}

/// Starts `command` with no input and piped output.
pub fn start_piped(mut command: Command) -> Child {
    command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the command starts")
}

/// Starts `rlaunch ARGS` with piped output.
pub fn spawn_rlaunch(args: &[&str]) -> Child {
    let mut command = launcher(rlaunch_path());
    command.args(args);
    start_piped(command)
}

/// Runs `rlaunch ARGS` to completion (or to [`hard_limit`]).
pub fn rlaunch(args: &[&str]) -> Outcome {
    finish(spawn_rlaunch(args))
}

/// Runs `rlaunch ARGS` as a user would, without [`launcher`]'s allowance:
/// more ranks than slots are refused unless ARGS say `--oversubscribe`.
pub fn rlaunch_within_slots(args: &[&str]) -> Outcome {
    let mut command = Command::new(rlaunch_path());
    command.args(args).env_remove("RLAUNCH_OVERSUBSCRIBE");
    finish(start_piped(command))
}

/// Runs `rlaunch ARGS` with the extra environment `vars`, to completion.
pub fn rlaunch_with_env(args: &[&str], vars: &[(&str, &str)]) -> Outcome {
    let mut command = launcher(rlaunch_path());
    command.args(args).envs(vars.iter().copied());
    finish(start_piped(command))
}

/// Waits for a child, collecting its output; kills it at [`hard_limit`].
pub fn finish(mut child: Child) -> Outcome {
    let out_reader = read_all(child.stdout.take());
    let err_reader = read_all(child.stderr.take());
    let limit = hard_limit();
    let deadline = Instant::now() + limit;
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            // What it printed until then says where it stood. A reader
            // still blocked (a process it left holds the pipe) is left.
            std::thread::sleep(Duration::from_secs(1));
            let printed = |reader: std::thread::JoinHandle<String>| match reader.is_finished() {
                true => reader.join().unwrap_or_default(),
                false => "(the pipe is still held open)".to_string(),
            };
            let (stdout, stderr) = (printed(out_reader), printed(err_reader));
            panic!("command did not finish within {limit:?}; it printed:\n{stdout}\nand on stderr:\n{stderr}");
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    Outcome {
        code: status.code(),
        stdout: out_reader.join().unwrap(),
        stderr: err_reader.join().unwrap(),
    }
}

/// Reads a pipe to the end on a thread (empty if already taken).
fn read_all(pipe: Option<impl Read + Send + 'static>) -> std::thread::JoinHandle<String> {
    std::thread::spawn(move || {
        let mut text = String::new();
        if let Some(mut pipe) = pipe {
            let _ = pipe.read_to_string(&mut text);
        }
        text
    })
}

/// Lines of a child's stdout, read on a thread.
pub struct Lines {
    rx: std::sync::mpsc::Receiver<String>,
}

impl Lines {
    /// The next line, waiting up to `within`; `None` at EOF or time-out.
    pub fn next_line(&self, within: Duration) -> Option<String> {
        self.rx.recv_timeout(within).ok()
    }

    /// Everything printed after the lines already taken, up to EOF.
    pub fn rest(self) -> String {
        self.rx.iter().map(|line| line + "\n").collect()
    }
}

/// Reads `child`'s stdout until `count` lines contain `marker`; returns them
/// and the stream's remainder.
pub fn wait_for_lines(child: &mut Child, marker: &str, count: usize) -> (Vec<String>, Lines) {
    use std::io::BufRead;
    let stdout = child.stdout.take().expect("piped stdout");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stdout).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                return;
            }
        }
    });
    let mut found = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(60);
    while found.len() < count {
        let left = deadline.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(line) if line.contains(marker) => found.push(line),
            Ok(_) => {}
            Err(_) => {
                let _ = child.kill();
                panic!("saw only {found:?} before timing out waiting for {count} '{marker}' lines");
            }
        }
    }
    (found, Lines { rx })
}

/// The value of `key=` in a line such as `ready pid=12 job=ab`.
pub fn field<'a>(line: &'a str, key: &str) -> &'a str {
    line.split_whitespace()
        .find_map(|w| w.strip_prefix(&format!("{key}=")))
        .unwrap_or_else(|| panic!("no {key}= in '{line}'"))
}

/// Whether a process is gone (or a zombie about to be reaped), polling up to `within`.
pub fn process_gone(pid: u32, within: Duration) -> bool {
    let deadline = Instant::now() + within;
    loop {
        let state = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok();
        let alive = state.is_some_and(|s| !s.rsplit(')').next().unwrap_or("").trim_start().starts_with('Z'));
        if !alive {
            return true;
        }
        if Instant::now() > deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Shared-memory files a job left in /dev/shm.
pub fn shm_files(job: &str) -> Vec<String> {
    std::fs::read_dir("/dev/shm")
        .map(|dir| {
            dir.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|name| name.starts_with(&format!("oneside-{job}-")))
                .collect()
        })
        .unwrap_or_default()
}

pub fn send_signal(child: &Child, signal: i32) {
    // SAFETY: kill(2) has no memory-safety preconditions.
    unsafe { libc::kill(child.id() as i32, signal) };
}

/// Starts `rlaunch ARGS` (a `faults sleep` job), waits for its `ranks`
/// ready lines, sends Ctrl-C, and checks rlaunch exits 130 leaving no rank
/// process and no shared-memory file behind.
pub fn ctrl_c_leaves_nothing(args: &[&str], ranks: usize) {
    let mut child = spawn_rlaunch(args);
    let (ready, _rest) = wait_for_lines(&mut child, "ready", ranks);
    send_signal(&child, libc::SIGINT);
    let out = finish(child);
    assert_eq!(out.code, Some(130), "{out:?}");
    for line in &ready {
        let pid: u32 = field(line, "pid").parse().unwrap();
        assert!(process_gone(pid, Duration::from_secs(5)), "rank pid {pid} survived");
        assert_eq!(shm_files(field(line, "job")), Vec::<String>::new());
    }
}

/// The N x N matrix `"key":[[..],..]` of a `profile.json`.
pub fn json_matrix(json: &str, key: &str) -> Vec<Vec<u64>> {
    let value: serde_json::Value = serde_json::from_str(json).unwrap_or_else(|e| panic!("not JSON ({e}): {json}"));
    serde_json::from_value(value[key].clone()).unwrap_or_else(|e| panic!("no {key} matrix ({e}) in {json}"))
}

/// The matrix of bytes `tests/c/profiled.c` and `examples/traffic.rs`
/// move: 64 bytes of puts to the right neighbour, 56 of fetch-adds to
/// rank 0, and with `get_from_left`, 16 bytes read from the left one.
pub fn known_traffic(n: usize, get_from_left: bool) -> Vec<Vec<u64>> {
    let mut m = vec![vec![0; n]; n];
    for (r, row) in m.iter_mut().enumerate() {
        row[(r + 1) % n] += 64;
        row[0] += 56;
        if get_from_left {
            row[(r + n - 1) % n] += 16;
        }
    }
    m
}

/// The line of `rank` in rlaunch's hang report.
pub fn report_line(out: &Outcome, rank: usize) -> String {
    let prefix = format!("rlaunch:   rank {rank} (");
    let line = out.stderr.lines().find(|l| l.starts_with(&prefix));
    line.unwrap_or_else(|| panic!("no report line for rank {rank}: {out:?}"))
        .to_string()
}

/// The user guide's chapters (`docs/src/*.md`, sorted), then README.
pub fn guide_pages() -> Vec<PathBuf> {
    let mut pages: Vec<PathBuf> = std::fs::read_dir(repo_file("docs/src"))
        .expect("docs/src exists")
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|e| e == "md"))
        .collect();
    pages.sort();
    pages.push(PathBuf::from(repo_file("README.md")));
    pages
}
