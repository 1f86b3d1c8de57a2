//! How a rank ended, in words and as rlaunch's exit code.

use std::os::unix::process::ExitStatusExt;
use std::process::ExitStatus;

/// How a rank process ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Ending {
    Code(i32),
    Signal(i32),
}

impl Ending {
    pub fn from_status(status: ExitStatus) -> Ending {
        match (status.code(), status.signal()) {
            (Some(code), _) => Ending::Code(code),
            (None, Some(signal)) => Ending::Signal(signal),
            (None, None) => Ending::Code(255),
        }
    }

    /// Whether the rank died of a fault, which oneside's crash report
    /// describes (the rank then tells rlaunch its frame, `Msg::Crashed`).
    pub fn is_fault(self) -> bool {
        matches!(
            self,
            Ending::Signal(libc::SIGSEGV | libc::SIGBUS | libc::SIGFPE | libc::SIGILL | libc::SIGABRT)
        )
    }

    /// Waits a moment after a fault, so that the rank's `Crashed`, sent
    /// just before it died on another connection, is heard before its exit.
    pub fn let_the_crash_report_arrive(self) {
        if self.is_fault() {
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
    }

    pub fn success(self) -> bool {
        self == Ending::Code(0)
    }

    /// rlaunch's exit code for a job that ended this way: the code, or 128+signal.
    pub fn exit_code(self) -> u8 {
        match self {
            Ending::Code(code) => u8::try_from(code).unwrap_or(1),
            Ending::Signal(signal) => u8::try_from(128 + signal).unwrap_or(255),
        }
    }

    pub fn describe(self) -> String {
        match self {
            Ending::Code(code) => format!("exited with code {code}"),
            Ending::Signal(signal) => format!("was killed by signal {signal} ({})", signal_name(signal)),
        }
    }
}

fn signal_name(signal: i32) -> &'static str {
    match signal {
        libc::SIGHUP => "SIGHUP",
        libc::SIGINT => "SIGINT",
        libc::SIGQUIT => "SIGQUIT",
        libc::SIGILL => "SIGILL",
        libc::SIGABRT => "SIGABRT",
        libc::SIGBUS => "SIGBUS",
        libc::SIGFPE => "SIGFPE",
        libc::SIGKILL => "SIGKILL",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGPIPE => "SIGPIPE",
        libc::SIGALRM => "SIGALRM",
        libc::SIGTERM => "SIGTERM",
        _ => "signal",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_codes_follow_the_shell_convention() {
        assert_eq!(Ending::Code(3).exit_code(), 3);
        assert_eq!(Ending::Signal(9).exit_code(), 137);
        assert_eq!(Ending::Signal(15).describe(), "was killed by signal 15 (SIGTERM)");
        assert_eq!(Ending::from_status(ExitStatus::from_raw(3 << 8)), Ending::Code(3));
        assert_eq!(Ending::from_status(ExitStatus::from_raw(9)), Ending::Signal(9));
        assert!(!Ending::Code(1).success());
    }
}
