//! Which MPI library is in the process, before or after `MPI_Init`: its
//! family (Open MPI, or MPICH and its derivatives: Intel MPI, MVAPICH, Cray
//! MPICH), its version in its own words (`MPI_Get_library_version`, which
//! MPI-3 lets a program call before `MPI_Init`), and the PMI roads it can
//! take to a launcher's job. Each family has its own: Open MPI joins a job
//! only through a PMIx server (Open MPI 4 also through Slurm's PMI-1/2
//! with its `s1`/`s2` components, and Flux's with `flux`); MPICH through a
//! PMI-1/2 socket (`PMI_FD`, `PMI_PORT`), and PMIx only when built with it.
//! An MPI that finds no road it can take runs as a singleton. An MPI this
//! file cannot name (no `MPI_Get_library_version`, as in a stub library;
//! another family, as HPE MPT) is not judged before `MPI_Init`: the
//! checks of its world once it is active still hold.

use super::in_mpi::symbol;
use std::ffi::{c_char, c_int, c_void, CStr};

/// An MPI family: how its world handle looks, and how it wires up.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Family {
    OpenMpi,
    Mpich,
}

/// The MPI library found in the process.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct MpiLibrary {
    pub(crate) family: Family,
    /// In its own words, shortened: `Open MPI v4.1.4`, `MPICH 4.0.2`.
    pub(crate) version: String,
    /// MPICH built with PMIx (its configure line says so, or libpmix is
    /// linked into the process).
    pub(crate) pmix: bool,
    /// Open MPI with Slurm's PMI-1/2 components (`mca_pmix_s1`, `s2`).
    pub(crate) slurm_pmi: bool,
    /// Open MPI with the Flux component (`mca_pmix_flux`).
    pub(crate) flux: bool,
}

/// MPICH's `MPI_MAX_LIBRARY_VERSION_STRING` (Open MPI's is 256).
const VERSION_BYTES: usize = 8192;

type LibraryVersion = unsafe extern "C" fn(*mut c_char, *mut c_int) -> c_int;

impl Family {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Family::OpenMpi => "Open MPI",
            Family::Mpich => "MPICH",
        }
    }
}

impl MpiLibrary {
    /// The MPI in the process, if there is one and its family is known
    /// (an MPI-3 library that says what it is; not a stub `MPI_Init`).
    pub(crate) fn found() -> Option<MpiLibrary> {
        if !super::in_mpi::linked() {
            return None;
        }
        let full = library_version()?;
        let family = family_of(!symbol(c"ompi_mpi_comm_world").is_null(), &full)?;
        let components = match family {
            Family::OpenMpi => open_mpi_components(),
            Family::Mpich => Vec::new(),
        };
        let has = |c: &str| components.iter().any(|x| x == c);
        Some(MpiLibrary {
            family,
            version: short_version(&full).unwrap_or_else(|| family.name().to_string()),
            pmix: family == Family::Mpich
                && (full.to_ascii_lowercase().contains("pmix") || !symbol(c"PMIx_Init").is_null()),
            slurm_pmi: has("s1") || has("s2"),
            flux: has("flux"),
        })
    }

    /// `Open MPI v4.1.4 (Open MPI family)`-style words for messages.
    pub(crate) fn describe(&self) -> String {
        match self.version.starts_with(self.family.name()) {
            true => self.version.clone(),
            false => format!("{} ({} family)", self.version, self.family.name()),
        }
    }
}

/// The family: Open MPI by its world object, MPICH and its derivatives by
/// their own words; `None` for an MPI not known here.
fn family_of(open_mpi_world: bool, version: &str) -> Option<Family> {
    if open_mpi_world {
        return Some(Family::OpenMpi);
    }
    let words = version.to_ascii_lowercase();
    ["mpich", "mvapich", "intel(r) mpi"]
        .iter()
        .any(|w| words.contains(w))
        .then_some(Family::Mpich)
}

/// `MPI_Get_library_version`'s text.
fn library_version() -> Option<String> {
    let f = symbol(c"MPI_Get_library_version");
    if f.is_null() {
        return None;
    }
    // SAFETY: `int MPI_Get_library_version(char *version, int *resultlen)`
    // in every MPI-3 library, callable before MPI_Init and after
    // MPI_Finalize; the buffer is as long as the longest MPI allows.
    let f: LibraryVersion = unsafe { std::mem::transmute::<*mut c_void, LibraryVersion>(f) };
    let mut buf = vec![0u8; VERSION_BYTES];
    let mut len: c_int = 0;
    // SAFETY: a buffer of VERSION_BYTES and a valid out-pointer.
    if unsafe { f(buf.as_mut_ptr().cast(), &mut len) } != 0 {
        return None;
    }
    let text = CStr::from_bytes_until_nul(&buf).ok()?;
    Some(text.to_string_lossy().into_owned())
}

/// The first line, shortened: Open MPI's up to its first comma, MPICH's
/// `Version:` label dropped, whitespace collapsed.
pub(crate) fn short_version(full: &str) -> Option<String> {
    let first = full.lines().find(|l| !l.trim().is_empty())?;
    let first = first.split(',').next().unwrap_or(first);
    let words: Vec<&str> = first
        .split_whitespace()
        .filter(|w| *w != "Version:" && *w != ":")
        .collect();
    let short = words.join(" ");
    (!short.is_empty()).then(|| short.chars().take(80).collect())
}

/// The PMI components of an Open MPI 4 (`mca_pmix_<name>`): built in, or
/// in its component directory beside `libmpi` (`openmpi/`; Debian's
/// `openmpi/lib/openmpi3/` beside the `libmpi` its loader finds), or under
/// `OPAL_PREFIX`.
fn open_mpi_components() -> Vec<String> {
    let mut found: Vec<String> = [
        ("s1", c"mca_pmix_s1_component"),
        ("s2", c"mca_pmix_s2_component"),
        ("flux", c"mca_pmix_flux_component"),
    ]
    .into_iter()
    .filter(|(_, sym)| !symbol(sym).is_null())
    .map(|(name, _)| name.to_string())
    .collect();
    let mut roots = library_dirs(symbol(c"MPI_Init"));
    if let Some(prefix) = std::env::var_os("OPAL_PREFIX") {
        roots.push(std::path::PathBuf::from(prefix).join("lib"));
    }
    for name in components_under(&roots) {
        if !found.contains(&name) {
            found.push(name);
        }
    }
    found
}

/// The PMI components found in the component directories under `roots`.
fn components_under(roots: &[std::path::PathBuf]) -> Vec<String> {
    let subs = ["openmpi", "openmpi3", "openmpi/lib/openmpi", "openmpi/lib/openmpi3"];
    ["s1", "s2", "flux"]
        .into_iter()
        .filter(|name| {
            let file = format!("mca_pmix_{name}.so");
            roots
                .iter()
                .any(|root| subs.iter().any(|sub| root.join(sub).join(&file).exists()))
        })
        .map(str::to_string)
        .collect()
}

/// The directory of the shared object that defines `address`, as loaded
/// and with its links resolved.
fn library_dirs(address: *mut c_void) -> Vec<std::path::PathBuf> {
    if address.is_null() {
        return Vec::new();
    }
    // SAFETY: dladdr fills `info` for an address in a loaded object.
    let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    if unsafe { libc::dladdr(address, &mut info) } == 0 || info.dli_fname.is_null() {
        return Vec::new();
    }
    // SAFETY: dladdr's file name is a C string owned by the loader.
    let Ok(file) = unsafe { CStr::from_ptr(info.dli_fname) }.to_str() else {
        return Vec::new();
    };
    let file = std::path::PathBuf::from(file);
    let mut dirs: Vec<std::path::PathBuf> = file.parent().map(|p| p.to_path_buf()).into_iter().collect();
    if let Some(real) = std::fs::canonicalize(&file)
        .ok()
        .and_then(|f| f.parent().map(|p| p.to_path_buf()))
    {
        if !dirs.contains(&real) {
            dirs.push(real);
        }
    }
    dirs
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_are_shortened_to_what_a_user_reads() {
        let ompi = "Open MPI v4.1.4, package: Debian OpenMPI, ident: 4.1.4, repo rev: v4.1.4, May 26, 2022";
        assert_eq!(short_version(ompi).as_deref(), Some("Open MPI v4.1.4"));
        let mpich = "MPICH Version:\t4.0.2\nMPICH Release date:\tThu Apr  7 12:34:45 CDT 2022\n";
        assert_eq!(short_version(mpich).as_deref(), Some("MPICH 4.0.2"));
        let intel = "Intel(R) MPI Library 2021.6 for Linux* OS\n";
        assert_eq!(
            short_version(intel).as_deref(),
            Some("Intel(R) MPI Library 2021.6 for Linux* OS")
        );
        assert_eq!(short_version("\n \n"), None);
    }

    #[test]
    fn the_family_is_known_or_left_alone() {
        assert_eq!(family_of(true, ""), Some(Family::OpenMpi));
        for text in [
            "MPICH Version:\t4.0.2",
            "Intel(R) MPI Library 2021.6 for Linux* OS",
            "MVAPICH2 Version      :\t2.3.7",
            "MPI VERSION    : CRAY MPICH version 8.1.25",
        ] {
            assert_eq!(family_of(false, text), Some(Family::Mpich), "{text}");
        }
        assert_eq!(family_of(false, "HPE MPT 2.26"), None);
        assert_eq!(family_of(false, ""), None, "a stub MPI says nothing");
    }

    #[test]
    fn components_are_found_where_open_mpi_and_debian_keep_them() {
        let root = std::env::temp_dir().join(format!("oneside-ompi-{}", std::process::id()));
        let debian = root.join("openmpi/lib/openmpi3");
        std::fs::create_dir_all(&debian).unwrap();
        std::fs::write(debian.join("mca_pmix_flux.so"), b"").unwrap();
        std::fs::create_dir_all(root.join("openmpi")).unwrap();
        std::fs::write(root.join("openmpi/mca_pmix_s2.so"), b"").unwrap();
        let found = components_under(std::slice::from_ref(&root));
        std::fs::remove_dir_all(&root).unwrap();
        assert_eq!(found, ["s2", "flux"]);
        assert!(components_under(&[]).is_empty());
    }

    #[test]
    fn a_derivative_names_its_family() {
        let intel = MpiLibrary {
            family: Family::Mpich,
            version: "Intel(R) MPI Library 2021.6".into(),
            pmix: false,
            slurm_pmi: false,
            flux: false,
        };
        assert_eq!(intel.describe(), "Intel(R) MPI Library 2021.6 (MPICH family)");
        let mpich = MpiLibrary {
            version: "MPICH 4.0.2".into(),
            ..intel
        };
        assert_eq!(mpich.describe(), "MPICH 4.0.2");
    }
}
