//! The environment contract between `rlaunch` and a rank.
//!
//! `rlaunch` sets these variables for every rank it starts; [`LaunchEnv::from_env`]
//! reads them back. A process with none of them set runs as a singleton.

/// A variable of the contract that this rank cannot use. The crate's
/// `Error` takes it as `Error::LaunchEnv`; the protocol stays a leaf that
/// both the runtime and rlaunch may use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadVar {
    pub var: &'static str,
    pub value: String,
    pub reason: String,
}

impl std::fmt::Display for BadVar {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}={:?}: {}", self.var, self.value, self.reason)
    }
}

impl std::error::Error for BadVar {}

type Result<T> = std::result::Result<T, BadVar>;

/// This rank's number, `0..size`.
pub const RANK: &str = "ONESIDE_RANK";
/// Number of ranks in the job.
pub const SIZE: &str = "ONESIDE_SIZE";
/// This rank's index among the ranks on its host.
pub const LOCAL_RANK: &str = "ONESIDE_LOCAL_RANK";
/// Number of ranks on this rank's host.
pub const LOCAL_SIZE: &str = "ONESIDE_LOCAL_SIZE";
/// The host name this rank was placed on, as written in the plan.
pub const HOST: &str = "ONESIDE_HOST";
/// `ip:port` of the launcher's bootstrap service.
pub const BOOTSTRAP_ADDR: &str = "ONESIDE_BOOTSTRAP_ADDR";
/// Per-job secret (hex), proven with HMAC and never sent on the wire.
pub const JOB_SECRET: &str = "ONESIDE_JOB_SECRET";
/// Per-job identifier (hex), used to name shared-memory files.
pub const JOB_ID: &str = "ONESIDE_JOB_ID";
/// Seconds every bootstrap stage may take.
pub const BOOTSTRAP_TIMEOUT: &str = "ONESIDE_BOOTSTRAP_TIMEOUT";
/// The symmetric heap's cap per rank, e.g. `64M`, `1G`, `4096`; without
/// it the heap grows as far as memory allows.
pub const HEAP_SIZE: &str = "ONESIDE_HEAP_SIZE";
/// Transport choice: `auto`, `shm`, `tcp` or `verbs`.
pub const TRANSPORT: &str = "ONESIDE_TRANSPORT";
/// Set to `1` when the launcher pinned this rank to CPUs of its own
/// (`rlaunch --bind-to core`), so its waits may spin on them.
pub const BOUND: &str = "ONESIDE_BOUND";
/// Set to `1` to say this rank shares its cores with others, whatever
/// the counts show (as Open MPI's `mpi_yield_when_idle`): its waits
/// never spin nor keep polling, they yield and then sleep. For hosts that
/// are one machine's namespaces or VMs sharing its cores.
pub const YIELD_WHEN_IDLE: &str = "ONESIDE_YIELD_WHEN_IDLE";

/// For tests: names a service thread (`ofi progress`, `TCP progress`,
/// `TCP flusher`, `watchdog`) that panics on its first step, to show that
/// such a panic ends the rank and the job with a message (`service`).
pub const TEST_PANIC: &str = "ONESIDE_TEST_PANIC";

/// Prefix of every shared-memory file a job creates in `/dev/shm`.
pub const SHM_PREFIX: &str = "oneside-";

/// Default bootstrap stage timeout in seconds.
pub const DEFAULT_BOOTSTRAP_TIMEOUT_SECS: u64 = 60;

/// A count from the environment variable `var`, or `default` when it is
/// unset or not a number (tuning knobs such as `ONESIDE_SHM_EAGER_PEERS`).
pub fn count_or(var: &str, default: usize) -> usize {
    std::env::var(var).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// Everything a launched rank learns from its environment.
#[derive(Debug, Clone)]
pub struct LaunchEnv {
    pub rank: usize,
    pub size: usize,
    pub local_rank: usize,
    pub local_size: usize,
    pub host: String,
    pub bootstrap_addr: String,
    pub secret: Vec<u8>,
    pub job_id: String,
    pub bootstrap_timeout_secs: u64,
}

impl LaunchEnv {
    /// Reads the launcher's variables. `Ok(None)` means "not launched": run as a singleton.
    pub fn from_env() -> Result<Option<LaunchEnv>> {
        if std::env::var_os(RANK).is_none() {
            return Ok(None);
        }
        let rank = number(RANK)?;
        let size = number(SIZE)?;
        if rank >= size {
            return Err(bad(RANK, &rank.to_string(), format!("must be below {SIZE}={size}")));
        }
        let local_rank = number(LOCAL_RANK)?;
        let local_size = number(LOCAL_SIZE)?;
        let secret_hex = text(JOB_SECRET)?;
        let secret = hex_decode(&secret_hex)
            .filter(|s| s.len() >= 16)
            .ok_or_else(|| bad(JOB_SECRET, "<hidden>", "must be at least 32 hex digits".into()))?;
        let job_id = text(JOB_ID)?;
        if job_id.is_empty() || !job_id.chars().all(|c| c.is_ascii_alphanumeric()) {
            return Err(bad(JOB_ID, &job_id, "must be non-empty and alphanumeric".into()));
        }
        let bootstrap_timeout_secs = match std::env::var(BOOTSTRAP_TIMEOUT) {
            Ok(_) => number(BOOTSTRAP_TIMEOUT)? as u64,
            Err(_) => DEFAULT_BOOTSTRAP_TIMEOUT_SECS,
        };
        Ok(Some(LaunchEnv {
            rank,
            size,
            local_rank,
            local_size,
            host: text(HOST)?,
            bootstrap_addr: text(BOOTSTRAP_ADDR)?,
            secret,
            job_id,
            bootstrap_timeout_secs,
        }))
    }
}

/// Reads the heap's cap, [`HEAP_SIZE`]; `None` when unset (no cap).
pub fn heap_cap_from_env() -> Result<Option<usize>> {
    match std::env::var(HEAP_SIZE) {
        Err(_) => Ok(None),
        Ok(v) => parse_size(&v)
            .filter(|&n| n > 0)
            .map(Some)
            .ok_or_else(|| bad(HEAP_SIZE, &v, "expected a size such as 65536, 64K, 64M or 1G".into())),
    }
}

/// Parses `4096`, `64K`, `64M`, `1G` (binary multiples; an optional trailing `B`/`iB`).
pub fn parse_size(text: &str) -> Option<usize> {
    let t = text.trim().trim_end_matches("iB").trim_end_matches(['B', 'b']);
    let (digits, shift) = match t.chars().last()? {
        'k' | 'K' => (&t[..t.len() - 1], 10),
        'm' | 'M' => (&t[..t.len() - 1], 20),
        'g' | 'G' => (&t[..t.len() - 1], 30),
        _ => (t, 0),
    };
    digits.trim().parse::<usize>().ok()?.checked_mul(1usize << shift)
}

/// Lower-case hex encoding.
pub fn hex_encode(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Decodes hex; `None` on odd length or a non-hex digit.
pub fn hex_decode(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(text.get(i..i + 2)?, 16).ok())
        .collect()
}

fn text(var: &'static str) -> Result<String> {
    std::env::var(var).map_err(|_| bad(var, "", "is missing or not UTF-8".into()))
}

fn number(var: &'static str) -> Result<usize> {
    let value = text(var)?;
    value
        .trim()
        .parse()
        .map_err(|_| bad(var, &value, "expected a non-negative integer".into()))
}

fn bad(var: &'static str, value: &str, reason: String) -> BadVar {
    BadVar {
        var,
        value: value.to_string(),
        reason,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_with_binary_suffixes() {
        assert_eq!(parse_size("4096"), Some(4096));
        assert_eq!(parse_size("64K"), Some(64 << 10));
        assert_eq!(parse_size("64M"), Some(64 << 20));
        assert_eq!(parse_size("1G"), Some(1 << 30));
        assert_eq!(parse_size("2MiB"), Some(2 << 20));
        assert_eq!(parse_size("12x"), None);
        assert_eq!(parse_size(""), None);
    }

    #[test]
    fn hex_round_trips_and_rejects_garbage() {
        let bytes = [0u8, 1, 0xab, 0xff];
        assert_eq!(hex_decode(&hex_encode(&bytes)).unwrap(), bytes);
        assert!(hex_decode("abc").is_none());
        assert!(hex_decode("zz").is_none());
    }
}
