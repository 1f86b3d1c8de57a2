//! `rlaunch --check`: a doctor for the hosts of a hostfile. Every host is
//! checked in parallel by running `rlaunch --probe` there (over ssh, or
//! directly for this host); the probe reports what it finds, and the doctor
//! prints one row per host:
//!
//! * ssh: can rlaunch reach the host at all (ssh's own words if not)
//! * rlaunch / program: are they at the same path there
//! * back: can the host connect back to the launcher's address
//! * transports: shm and tcp always; verbs devices with their port state
//! * memlock: `ulimit -l`, which RDMA registration needs
//! * under the row, each fabric library oneside opens at run time
//!   (libibverbs): "ok", or "not found" and why

use crate::error::LaunchError;
use crate::hostfile::HostEntry;
use crate::plan::Agent;
use crate::plan::LaunchPlan;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::process::Stdio;
use std::time::Duration;

/// What one host's probe found, or why it could not run.
struct Row {
    host: String,
    ssh: String,
    fields: Vec<(String, String)>,
}

/// Runs the doctor; returns the exit status (0 when every host is fine).
pub fn run(plan: &LaunchPlan) -> Result<u8, LaunchError> {
    // A host whose name does not resolve gets its row (and the reason),
    // and the others are still checked.
    let unknown: Vec<Option<String>> = (plan.hosts.iter().zip(&plan.agents))
        .map(|(host, agent)| match agent.is_local() {
            true => None,
            false => crate::known_hosts::unresolved(&host.host)
                .map(|why| crate::known_hosts::unknown_host(host, &why, &plan.hosts)),
        })
        .collect();
    let skip: Vec<bool> = unknown.iter().map(Option::is_some).collect();
    let ip = crate::job::address::bootstrap_ip_skipping(plan, &skip)?;
    let listener = TcpListener::bind((ip, 0)).map_err(|source| LaunchError::BootstrapListen { source })?;
    let back = listener
        .local_addr()
        .map_err(|source| LaunchError::BootstrapListen { source })?;
    std::thread::spawn(move || {
        for mut conn in listener.incoming().flatten() {
            // Echo the host's token, proving the round trip.
            let mut token = [0u8; 16];
            if conn.set_read_timeout(Some(Duration::from_secs(5))).is_ok() && conn.read_exact(&mut token).is_ok() {
                let _ = conn.write_all(&token);
            }
        }
    });
    let rlaunch = std::env::current_exe().map_err(|source| LaunchError::SelfPath { source })?;
    let rlaunch = rlaunch.display().to_string();
    let rlaunch = rlaunch.as_str();
    let rows: Vec<Row> = std::thread::scope(|scope| {
        let probes: Vec<_> = plan
            .hosts
            .iter()
            .zip(&plan.agents)
            .zip(&unknown)
            .map(|((host, &agent), unknown)| {
                scope.spawn(move || match unknown {
                    Some(why) => Row {
                        host: host.login(),
                        ssh: why.clone(),
                        fields: Vec::new(),
                    },
                    None => probe_host(plan, host, agent, rlaunch, back),
                })
            })
            .collect();
        probes
            .into_iter()
            .map(|p| p.join().expect("probe threads do not panic"))
            .collect()
    });

    let columns = ["rlaunch", "program", "back", "transports", "memlock"];
    println!(
        "{:<24} {:<8} {:<8} {:<8} {:<8} {:<28} {}",
        "host", "ssh", columns[0], columns[1], columns[2], columns[3], columns[4]
    );
    let mut healthy = true;
    for row in &rows {
        let get = |key: &str| {
            row.fields
                .iter()
                .find(|(k, _)| k == key)
                .map_or("-", |(_, v)| v.as_str())
        };
        let ok = row.ssh == "ok"
            && ["rlaunch", "program", "back"]
                .iter()
                .all(|k| get(k) == "ok" || get(k) == "n/a");
        healthy &= ok;
        println!(
            "{:<24} {:<8} {:<8} {:<8} {:<8} {:<28} {}",
            row.host,
            if row.ssh == "ok" { "ok" } else { "FAILED" },
            get("rlaunch"),
            get("program"),
            get("back"),
            get("transports"),
            get("memlock")
        );
        if row.ssh != "ok" {
            println!("  {}: {}", row.host, row.ssh);
        }
        for (library, _) in oneside::probe_libraries() {
            if let Some((_, found)) = row.fields.iter().find(|(k, _)| k == library) {
                println!("  {}: {library}: {found}", row.host);
            }
        }
        for (key, value) in &row.fields {
            if let Some(what) = key.strip_suffix("_error") {
                println!("  {}: {what}: {value}", row.host);
            }
        }
    }
    Ok(if healthy { 0 } else { 1 })
}

fn probe_host(plan: &LaunchPlan, host: &HostEntry, agent: Agent, rlaunch: &str, back: SocketAddr) -> Row {
    let program = plan.program_text.clone().unwrap_or_default();
    let probe_args = vec!["--probe".to_string(), back.to_string(), host.host.clone(), program];
    let words = || {
        std::iter::once(rlaunch.to_string())
            .chain(probe_args.clone())
            .collect::<Vec<String>>()
    };
    let (command, args) = crate::job::agents::command_on(plan, host, agent, &words());
    let output = std::process::Command::new(&command)
        .args(&args)
        .stdin(Stdio::null())
        .output();
    let mut row = Row {
        host: host.login(),
        ssh: "ok".into(),
        fields: Vec::new(),
    };
    match output {
        Err(e) => row.ssh = format!("cannot run {command}: {e}"),
        Ok(out) => {
            let stderr = String::from_utf8_lossy(&out.stderr).trim().replace('\n', " | ");
            match out.status.code() {
                Some(255) => row.ssh = format!("ssh failed: {stderr}"),
                Some(126 | 127) => {
                    row.fields.push(("rlaunch".into(), "MISSING".into()));
                    row.fields.push(("rlaunch_error".into(), stderr));
                }
                _ => {
                    for line in BufReader::new(out.stdout.as_slice()).lines().map_while(Result::ok) {
                        if let Some((k, v)) = line.split_once('=') {
                            row.fields.push((k.to_string(), v.to_string()));
                        }
                    }
                }
            }
        }
    }
    row
}

/// `rlaunch --probe BACK HOST [PROGRAM]`: runs on the checked host and prints
/// `key=value` lines for the doctor.
pub fn probe(args: &[String]) -> u8 {
    let (back, program) = (
        args.first().cloned().unwrap_or_default(),
        args.get(2).cloned().unwrap_or_default(),
    );
    println!("rlaunch=ok");
    match program.as_str() {
        "" => println!("program=n/a"),
        p => match crate::plan::resolve_program(p) {
            Ok(_) => println!("program=ok"),
            Err(e) => println!("program=MISSING\nprogram_error={e}"),
        },
    }
    match connect_back(&back) {
        Ok(()) => println!("back=ok"),
        Err(e) => println!("back=FAILED\nback_error=cannot connect to the launcher at {back}: {e}"),
    }
    println!("transports={}", transports());
    for (library, found) in oneside::probe_libraries() {
        match found {
            Ok(what) => println!("{library}={what}"),
            Err(why) => println!("{library}={why}"),
        }
    }
    println!("memlock={}", memlock());
    0
}

fn connect_back(back: &str) -> std::io::Result<()> {
    let addr: SocketAddr = back
        .parse()
        .map_err(|_| std::io::Error::other("not an ip:port address"))?;
    let mut stream = TcpStream::connect_timeout(&addr, Duration::from_secs(5))?;
    stream.set_read_timeout(Some(Duration::from_secs(5)))?;
    let token = *b"oneside-check-v1";
    stream.write_all(&token)?;
    let mut echo = [0u8; 16];
    stream.read_exact(&mut echo)?;
    if echo == token {
        Ok(())
    } else {
        Err(std::io::Error::other("the echo did not match"))
    }
}

/// "shm,tcp" plus every verbs device port with its state, e.g. "verbs:rxe0/1=ACTIVE".
fn transports() -> String {
    let mut list = vec!["shm".to_string(), "tcp".to_string()];
    let mut ports = Vec::new();
    if let Ok(devices) = std::fs::read_dir("/sys/class/infiniband") {
        for device in devices.flatten() {
            let name = device.file_name().to_string_lossy().into_owned();
            for port in std::fs::read_dir(device.path().join("ports"))
                .into_iter()
                .flatten()
                .flatten()
            {
                let state = std::fs::read_to_string(port.path().join("state")).unwrap_or_default();
                let state = state.split(':').nth(1).unwrap_or("?").trim().to_string();
                ports.push(format!("{name}/{}={state}", port.file_name().to_string_lossy()));
            }
        }
    }
    list.push(match ports.is_empty() {
        true => "verbs:none".to_string(),
        false => format!("verbs:{}", ports.join("+")),
    });
    list.join(",")
}

/// `ulimit -l` in words.
fn memlock() -> String {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes into the struct we pass.
    if unsafe { libc::getrlimit(libc::RLIMIT_MEMLOCK, &mut limit) } != 0 {
        return "unknown".into();
    }
    match limit.rlim_cur {
        libc::RLIM_INFINITY => "unlimited".into(),
        bytes => format!("{}KiB", bytes / 1024),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn transports_always_include_shm_and_tcp() {
        let t = super::transports();
        assert!(t.starts_with("shm,tcp,verbs:"), "{t}");
        assert!(!super::memlock().is_empty());
    }
}
