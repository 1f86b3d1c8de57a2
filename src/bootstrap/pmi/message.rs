//! The text of PMI-2 messages: replies parsed by Slurm's rules, and the
//! limits keys and values must keep to travel at all.

/// PMI2_MAX_VALLEN: longer values are refused by libpmi2 and MPICH.
pub(super) const MAX_VALUE: usize = 1024;
/// PMI2_MAX_KEYLEN.
pub(super) const MAX_KEY: usize = 64;

/// One PMI-2 reply: its `cmd` and the other `key=value` pairs in order.
#[derive(Debug)]
pub(crate) struct Reply {
    pub(super) cmd: String,
    pub(super) fields: Vec<(String, String)>,
}

impl Reply {
    /// The first value of `key` (Slurm's lookup rule for duplicate keys).
    pub(super) fn get(&self, key: &str) -> Option<&str> {
        self.fields.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
    }
}

/// Reads one reply frame (a 6-character decimal length, then the text)
/// from the server and parses it; the outer error is the link's, the inner
/// one a malformed reply. A frame is at most 999999 bytes by its form.
pub(crate) fn read_reply(src: &mut impl std::io::Read) -> std::io::Result<Result<Reply, String>> {
    let mut header = [0u8; 6];
    src.read_exact(&mut header)?;
    let len = std::str::from_utf8(&header)
        .ok()
        .and_then(|h| h.trim_matches(' ').parse::<usize>().ok());
    let Some(len) = len else {
        return Ok(Err(format!("bad length header {:?}", String::from_utf8_lossy(&header))));
    };
    let mut body = vec![0u8; len];
    src.read_exact(&mut body)?;
    Ok(parse_reply(&String::from_utf8_lossy(&body)))
}

/// Parses `cmd=<name>;key=value;...;` by Slurm's rules: a key runs to the
/// first `=`, a value to the next `;`, and every value must end in `;`.
pub(crate) fn parse_reply(text: &str) -> Result<Reply, String> {
    let mut fields = Vec::new();
    let mut rest = text;
    while !rest.is_empty() {
        let (key, after) = rest
            .split_once('=')
            .ok_or_else(|| format!("malformed reply {text:?}: {rest:?} has no '='"))?;
        let (value, next) = after
            .split_once(';')
            .ok_or_else(|| format!("malformed reply {text:?}: the value of {key} does not end in ';'"))?;
        if key.is_empty() || key.contains(';') {
            return Err(format!("malformed reply {text:?}: bad key {key:?}"));
        }
        fields.push((key.to_string(), value.to_string()));
        rest = next;
    }
    match fields.first() {
        Some((k, _)) if k == "cmd" => {
            let cmd = fields.remove(0).1;
            Ok(Reply { cmd, fields })
        }
        _ => Err(format!("malformed reply {text:?}: it does not start with cmd=")),
    }
}

pub(super) fn check_key(key: &str) -> Result<(), String> {
    let ok = !key.is_empty()
        && key.len() <= MAX_KEY
        && key.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    ok.then_some(())
        .ok_or_else(|| format!("key {key:?} is not 1 to {MAX_KEY} of [-_A-Za-z0-9]"))
}

pub(super) fn check_value(value: &str) -> Result<(), String> {
    if value.len() > MAX_VALUE {
        return Err(format!("{} characters is over PMI-2's {MAX_VALUE}", value.len()));
    }
    match value.bytes().find(|&b| b == b';' || !(b' '..=b'~').contains(&b)) {
        Some(b) => Err(format!("byte {b:#04x} cannot travel in a PMI-2 value")),
        None => Ok(()),
    }
}

/// Names of the PMI2 return codes Slurm uses (its `pmi.h`).
pub(super) fn rc_name(rc: &str) -> &'static str {
    match rc {
        "-1" => "PMI2_FAIL",
        "1" => "PMI2_ERR_INIT",
        "3" => "PMI2_ERR_INVALID_ARG",
        "10" => "PMI2_ERR_INVALID_ARGS",
        "14" => "PMI2_ERR_OTHER",
        _ => "unknown code",
    }
}

/// `msg` as a PMI value: no `;`, nothing but printable ASCII and spaces,
/// at most [`MAX_VALUE`] characters.
pub(super) fn printable(msg: &str) -> String {
    msg.chars()
        .map(|c| match (c.is_ascii_graphic() && c != ';') || c == ' ' {
            true => c,
            false => '_',
        })
        .take(MAX_VALUE)
        .collect()
}
