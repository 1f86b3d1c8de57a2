//! The one list of transports a job may ask for (`ONESIDE_TRANSPORT`,
//! `rlaunch --transport`, `oshrun`): each one's name, its help line, and
//! the library it opens at run time, which `--version`, `rlaunch --check`
//! and the launcher's parser all read from here.
//!
//! Adding a transport starts with a variant of [`TransportChoice`]: every
//! `match` on it is exhaustive, so the compiler lists the places that must
//! handle it (ARCHITECTURE.md, "Adding a transport").

use super::{ofi, verbs};
use crate::error::{Error, Result};
use crate::protocol::env::TRANSPORT;

/// The table: each variant with its name and help line. The macro writes
/// the enum, `ALL`, `name` and `help` from it, so no list can miss a variant.
macro_rules! transport_choices {
    ($($variant:ident => $name:literal, $help:literal;)+) => {
        /// Which transport the user asked for.
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub enum TransportChoice {
            $($variant,)+
        }

        impl TransportChoice {
            /// Every choice, in the order `--help` lists them.
            pub const ALL: &'static [TransportChoice] = &[$(TransportChoice::$variant,)+];

            /// The name written in `ONESIDE_TRANSPORT` and `--transport`.
            pub fn name(self) -> &'static str {
                match self {
                    $(TransportChoice::$variant => $name,)+
                }
            }

            /// One line for `--help`.
            pub fn help(self) -> &'static str {
                match self {
                    $(TransportChoice::$variant => $help,)+
                }
            }
        }
    };
}

transport_choices! {
    Auto => "auto", "shared memory on a host; between hosts verbs, a hardware libfabric provider, or TCP";
    Shm => "shm", "shared memory (every rank on one host)";
    Tcp => "tcp", "TCP to every peer but the rank itself";
    Verbs => "verbs", "RDMA through libibverbs";
    Ofi => "ofi", "libfabric (the provider from --ofi-provider, ONESIDE_OFI_PROVIDER or FI_PROVIDER)";
}

impl TransportChoice {
    /// Whether same-host ranks map each other's heaps: a rank then
    /// publishes its segment.
    pub fn maps_same_host_peers(self) -> bool {
        match self {
            TransportChoice::Auto | TransportChoice::Shm => true,
            TransportChoice::Tcp | TransportChoice::Verbs | TransportChoice::Ofi => false,
        }
    }

    /// Whether the job may register its heap with a NIC (verbs, ofi, or
    /// auto across hosts), which then registers each range the heap grows
    /// by: `init` sets aside the area where a growth's keys are exchanged.
    /// Decided from the job's shape alone, not from this host's devices:
    /// the areas, and so every heap offset, must be alike on every rank.
    pub fn may_register(self, (local_size, size): (usize, usize)) -> bool {
        match self {
            TransportChoice::Verbs | TransportChoice::Ofi => true,
            TransportChoice::Auto => local_size < size,
            TransportChoice::Shm | TransportChoice::Tcp => false,
        }
    }

    /// The library the transport opens at run time, if any.
    pub fn library(self) -> Option<&'static str> {
        match self {
            TransportChoice::Auto | TransportChoice::Shm | TransportChoice::Tcp => None,
            TransportChoice::Verbs => Some(verbs::library::SONAME),
            TransportChoice::Ofi => Some(ofi::library::SONAME),
        }
    }

    /// Whether the library opens here, and what was found (for `rlaunch
    /// --check`); `None` for a transport without one.
    pub fn probe(self) -> Option<std::result::Result<String, String>> {
        match self {
            TransportChoice::Auto | TransportChoice::Shm | TransportChoice::Tcp => None,
            TransportChoice::Verbs => Some(
                verbs::library::load()
                    .map(|_| "ok".to_string())
                    .map_err(|f| f.to_string()),
            ),
            TransportChoice::Ofi => Some(ofi::library::load().map_err(|f| f.to_string()).and_then(|lib| {
                let providers = ofi::providers().map_err(|fault| fault.to_string())?;
                let providers = if providers.is_empty() {
                    "none".to_string()
                } else {
                    providers.join(" ")
                };
                Ok(format!(
                    "{} with RMA and atomics: {providers}",
                    ofi::library::version_text(lib)
                ))
            })),
        }
    }

    /// The choice of that name.
    pub fn from_name(name: &str) -> Option<TransportChoice> {
        TransportChoice::ALL.iter().copied().find(|c| c.name() == name)
    }

    /// The names of every choice, for messages: `auto, shm, tcp, verbs, ofi`.
    pub fn names() -> String {
        let names: Vec<&str> = TransportChoice::ALL.iter().map(|c| c.name()).collect();
        names.join(", ")
    }

    /// The choice in `ONESIDE_TRANSPORT` (unset or empty: `auto`).
    pub fn from_env(rank: usize) -> Result<TransportChoice> {
        let requested = std::env::var(TRANSPORT).unwrap_or_default();
        match requested.as_str() {
            "" => Ok(TransportChoice::Auto),
            name => TransportChoice::from_name(name).ok_or_else(|| Error::TransportUnavailable {
                rank,
                detail: format!("expected one of {}", TransportChoice::names()),
                requested,
            }),
        }
    }
}

/// The transports every build of oneside has, for `--version` lines:
/// `shm, tcp, verbs (libibverbs.so.1, opened at run time), …`.
pub fn built_in() -> String {
    let named = TransportChoice::ALL
        .iter()
        .copied()
        .filter(|&c| c != TransportChoice::Auto);
    let words: Vec<String> = named
        .map(|c| match c.library() {
            Some(soname) => format!("{} ({soname}, opened at run time)", c.name()),
            None => c.name().to_string(),
        })
        .collect();
    words.join(", ")
}

/// The fabric libraries opened at run time, and whether each opens here:
/// its name, then what was found or why not (for `rlaunch --check`).
pub fn probe_libraries() -> Vec<(&'static str, std::result::Result<String, String>)> {
    TransportChoice::ALL
        .iter()
        .filter_map(|&c| Some((library_name(c.library()?), c.probe()?)))
        .collect()
}

/// `libibverbs` for `libibverbs.so.1`.
fn library_name(soname: &str) -> &str {
    soname.split('.').next().unwrap_or(soname)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_choice_is_found_by_its_name_and_listed() {
        for &c in TransportChoice::ALL {
            assert_eq!(TransportChoice::from_name(c.name()), Some(c));
        }
        assert_eq!(TransportChoice::names(), "auto, shm, tcp, verbs, ofi");
        assert_eq!(TransportChoice::from_name("rdma"), None);
        assert!(built_in().starts_with("shm, tcp, verbs (libibverbs.so.1, opened at run time), ofi (libfabric.so.1"));
        assert_eq!(library_name("libfabric.so.1"), "libfabric");
    }
}
