//! The contract between `rlaunch` and the ranks it starts: the environment
//! variables a rank reads ([`env`](mod@env)), the bootstrap messages and their framing
//! ([`wire`]), the secret-based handshake every bootstrap connection runs
//! ([`auth`]), how a host names itself and picks the address peers reach it
//! at ([`host_addr`]), the open-file limit every process raises
//! ([`limits`]), and listeners that thousands of peers dial at once
//! ([`listen`]), what a blocked rank reports for hang reports
//! ([`stall`]), and the files ranks keep in `/dev/shm` ([`shm_files`]).
//! `rlaunch` links this module and nothing else of the library's data
//! path.

pub mod auth;
pub mod env;
pub mod host_addr;
pub mod limits;
pub mod listen;
pub mod liveness;
pub mod pmi1;
pub mod shm_files;
pub mod stall;
pub mod wire;
