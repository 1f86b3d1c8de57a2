//! Mutual challenge–response authentication with the per-job secret.
//!
//! Both ends prove they know the secret without sending it:
//!
//! ```text
//! acceptor                                  connector
//!    Challenge{na}            ──────────▶
//!                             ◀──────────   Response{nc, HMAC(k, "connect"‖na‖nc)}
//!    Confirm{HMAC(k, "accept"‖nc‖na)} ──▶
//! ```
//!
//! Fresh random nonces on both sides stop replay; the role labels stop
//! reflecting a proof back at its sender. Tags are compared in constant time.

use super::wire::{recv_blocking, send_blocking, Msg, Nonce, Tag, MAX_UNAUTHENTICATED_FRAME};
use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;
use std::io::{self, Read, Write};

type HmacSha256 = Hmac<Sha256>;

const CONNECT_LABEL: &[u8] = b"oneside/v1/connect";
const ACCEPT_LABEL: &[u8] = b"oneside/v1/accept";

/// Why authentication failed. Kept short: it ends up inside a larger error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AuthError {
    /// The peer sent a message other than the one the handshake expects.
    UnexpectedMessage,
    /// The peer's proof does not match the job secret.
    BadTag,
}

impl AuthError {
    pub fn describe(self) -> &'static str {
        match self {
            AuthError::UnexpectedMessage => "it sent a message out of handshake order",
            AuthError::BadTag => "its proof does not match this job's secret",
        }
    }
}

/// Fills a buffer from the OS random source.
pub fn random_bytes<const N: usize>() -> [u8; N] {
    let mut bytes = [0u8; N];
    getrandom::fill(&mut bytes).expect("the OS random number generator is unavailable");
    bytes
}

/// The acceptor's half: issue a challenge, check the response.
pub struct Acceptor {
    nonce: Nonce,
}

impl Acceptor {
    /// Starts a handshake; send the returned `Challenge` to the connector.
    pub fn start() -> (Acceptor, Msg) {
        let nonce = random_bytes();
        (Acceptor { nonce }, Msg::Challenge { nonce })
    }

    /// Starts a handshake on a non-blocking link: the challenge is already
    /// queued in the returned frame buffer.
    pub fn start_buffered() -> (Acceptor, super::wire::FrameBuf) {
        let (acceptor, challenge) = Acceptor::start();
        let mut buf = super::wire::FrameBuf::default();
        buf.push(&challenge);
        (acceptor, buf)
    }

    /// Checks the connector's `Response`; on success returns the `Confirm` to send back.
    pub fn finish(&self, secret: &[u8], response: &Msg) -> Result<Msg, AuthError> {
        let Msg::Response { nonce, tag } = response else {
            return Err(AuthError::UnexpectedMessage);
        };
        verify(secret, CONNECT_LABEL, &self.nonce, nonce, tag)?;
        Ok(Msg::Confirm {
            tag: sign(secret, ACCEPT_LABEL, nonce, &self.nonce),
        })
    }
}

/// The connector's half: answer a challenge, then check the acceptor's proof.
pub struct Connector {
    acceptor_nonce: Nonce,
    own_nonce: Nonce,
}

impl Connector {
    /// Answers a `Challenge`; send the returned `Response` to the acceptor.
    pub fn respond(secret: &[u8], challenge: &Msg) -> Result<(Connector, Msg), AuthError> {
        let Msg::Challenge { nonce: acceptor_nonce } = challenge else {
            return Err(AuthError::UnexpectedMessage);
        };
        let own_nonce = random_bytes();
        let tag = sign(secret, CONNECT_LABEL, acceptor_nonce, &own_nonce);
        let reply = Msg::Response { nonce: own_nonce, tag };
        Ok((
            Connector {
                acceptor_nonce: *acceptor_nonce,
                own_nonce,
            },
            reply,
        ))
    }

    /// Checks the acceptor's `Confirm`.
    pub fn finish(&self, secret: &[u8], confirm: &Msg) -> Result<(), AuthError> {
        let Msg::Confirm { tag } = confirm else {
            return Err(AuthError::UnexpectedMessage);
        };
        verify(secret, ACCEPT_LABEL, &self.own_nonce, &self.acceptor_nonce, tag)
    }
}

/// Why a handshake over a blocking stream failed.
#[derive(Debug)]
pub enum HandshakeError {
    /// The stream failed or closed (or its read timeout passed).
    Io(io::Error),
    /// The peer does not hold the secret, or broke the handshake's order.
    Auth(AuthError),
}

/// Runs the connector's half of the handshake on a blocking stream.
pub fn connect_blocking(stream: &mut (impl Read + Write), secret: &[u8]) -> Result<(), HandshakeError> {
    let challenge = recv_blocking(stream, MAX_UNAUTHENTICATED_FRAME).map_err(HandshakeError::Io)?;
    let (connector, response) = Connector::respond(secret, &challenge).map_err(HandshakeError::Auth)?;
    send_blocking(stream, &response).map_err(HandshakeError::Io)?;
    let confirm = recv_blocking(stream, MAX_UNAUTHENTICATED_FRAME).map_err(HandshakeError::Io)?;
    connector.finish(secret, &confirm).map_err(HandshakeError::Auth)
}

/// Runs the acceptor's half of the handshake on a blocking stream.
pub fn accept_blocking(stream: &mut (impl Read + Write), secret: &[u8]) -> Result<(), HandshakeError> {
    let (acceptor, challenge) = Acceptor::start();
    send_blocking(stream, &challenge).map_err(HandshakeError::Io)?;
    let response = recv_blocking(stream, MAX_UNAUTHENTICATED_FRAME).map_err(HandshakeError::Io)?;
    let confirm = acceptor.finish(secret, &response).map_err(HandshakeError::Auth)?;
    send_blocking(stream, &confirm).map_err(HandshakeError::Io)
}

fn mac(secret: &[u8], label: &[u8], first: &Nonce, second: &Nonce) -> HmacSha256 {
    let mut mac = HmacSha256::new_from_slice(secret).expect("HMAC accepts keys of any length");
    mac.update(label);
    mac.update(first);
    mac.update(second);
    mac
}

fn sign(secret: &[u8], label: &[u8], first: &Nonce, second: &Nonce) -> Tag {
    mac(secret, label, first, second).finalize().into_bytes().into()
}

fn verify(secret: &[u8], label: &[u8], first: &Nonce, second: &Nonce, tag: &Tag) -> Result<(), AuthError> {
    mac(secret, label, first, second)
        .verify_slice(tag)
        .map_err(|_| AuthError::BadTag)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_sides_accept_each_other_with_the_same_secret() {
        let secret = random_bytes::<32>();
        let (acceptor, challenge) = Acceptor::start();
        let (connector, response) = Connector::respond(&secret, &challenge).unwrap();
        let confirm = acceptor.finish(&secret, &response).unwrap();
        connector.finish(&secret, &confirm).unwrap();
    }

    #[test]
    fn a_wrong_secret_fails_on_either_side() {
        let (acceptor, challenge) = Acceptor::start();
        let (_, response) = Connector::respond(b"wrong secret", &challenge).unwrap();
        assert_eq!(acceptor.finish(b"job secret", &response), Err(AuthError::BadTag));

        let (acceptor, challenge) = Acceptor::start();
        let (connector, response) = Connector::respond(b"job secret", &challenge).unwrap();
        acceptor.finish(b"job secret", &response).unwrap();
        let forged = Msg::Confirm { tag: [0; 32] };
        assert_eq!(connector.finish(b"job secret", &forged), Err(AuthError::BadTag));
    }

    #[test]
    fn a_reflected_proof_or_replay_is_refused() {
        let secret = b"job secret";
        let (acceptor, challenge) = Acceptor::start();
        let (_, response) = Connector::respond(secret, &challenge).unwrap();
        // Replaying a valid response against a fresh challenge fails.
        let (fresh, _) = Acceptor::start();
        assert_eq!(fresh.finish(secret, &response), Err(AuthError::BadTag));
        // Sending a Challenge where a Response belongs is out of order.
        assert_eq!(acceptor.finish(secret, &challenge), Err(AuthError::UnexpectedMessage));
    }
}
