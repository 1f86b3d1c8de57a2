//! PMI-1's line format, spoken by a rank's wire client
//! (`bootstrap/pmi/wire/v1.rs`) and served by rlaunch to the program's own MPI
//! (`launcher/src/job/simple_pmi.rs`): `cmd=<name> key=value ...`, one
//! request or reply per line, fields separated by spaces.

/// The value of `name` in a PMI-1 line (`cmd=x a=1 b=2`).
pub fn field<'a>(line: &'a str, name: &str) -> Option<&'a str> {
    line.split_whitespace()
        .find_map(|kv| kv.strip_prefix(name)?.strip_prefix('='))
}

#[cfg(test)]
mod tests {
    #[test]
    fn fields_are_found_by_their_whole_name() {
        let line = "cmd=get_result rc=0 value=a=b";
        assert_eq!(super::field(line, "cmd"), Some("get_result"));
        assert_eq!(super::field(line, "value"), Some("a=b"));
        assert_eq!(super::field(line, "rc"), Some("0"));
        assert_eq!(super::field(line, "msg"), None);
    }
}
