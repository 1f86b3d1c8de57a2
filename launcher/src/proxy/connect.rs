//! A srun-started proxy's way to the launcher: connect to the address on
//! its command line, prove it holds the secret from its environment (the
//! job's challenge–response handshake), name its node, and receive its
//! host's ranks.

use super::wire::{FromProxy, ProxySpec, ToProxy, MAX_FRAME, PROXY_SECRET_ENV};
use oneside::protocol::auth::{self, HandshakeError};
use oneside::protocol::env::hex_decode;
use oneside::protocol::wire::{encode_any, recv_any};
use std::io::Write;
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

/// How long the proxy tries to reach the launcher.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// Connects back to the launcher at `address`; returns the stream and the
/// ranks to start, or what went wrong.
pub fn connect(address: &str) -> Result<(TcpStream, ProxySpec), String> {
    let secret = std::env::var(PROXY_SECRET_ENV)
        .ok()
        .and_then(|hex| hex_decode(&hex))
        .ok_or_else(|| {
            format!("{PROXY_SECRET_ENV} is missing or not hex; rlaunch sets it for the proxies it starts")
        })?;
    // The ranks inherit this process's environment; the secret is not theirs.
    std::env::remove_var(PROXY_SECRET_ENV);
    let target: SocketAddr = address
        .parse()
        .map_err(|e| format!("'{address}' is not an ip:port: {e}"))?;
    let mut stream = TcpStream::connect_timeout(&target, CONNECT_TIMEOUT)
        .map_err(|e| format!("cannot reach the launcher at {target}: {e}"))?;
    let _ = stream.set_nodelay(true);
    let _ = oneside::protocol::liveness::watch(&stream);
    let failed = |e: std::io::Error| format!("the launcher at {target} hung up during the handshake: {e}");
    auth::connect_blocking(&mut stream, &secret).map_err(|e| match e {
        HandshakeError::Io(e) => failed(e),
        HandshakeError::Auth(e) => format!("the launcher at {target}: {}", e.describe()),
    })?;

    let hostname = oneside::protocol::host_addr::hostname();
    let node = std::env::var("SLURMD_NODENAME").unwrap_or_else(|_| hostname.clone());
    stream
        .write_all(&encode_any(&FromProxy::Hello { node, hostname }))
        .map_err(failed)?;
    match recv_any::<ToProxy>(&mut stream, MAX_FRAME) {
        Ok(ToProxy::Start(spec)) => Ok((stream, spec)),
        Ok(other) => Err(format!("expected a start message, got {other:?}")),
        Err(e) => Err(format!("no start message from the launcher: {e}")),
    }
}
