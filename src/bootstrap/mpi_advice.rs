//! What an MPI in the process needs of its launcher, and what to type when
//! the two do not match: [`cannot_join`] says why the program's MPI would
//! run as a singleton in the job a launcher started (each family wires up
//! its own way, [`super::mpi_library`]), [`what_to_do`] names the compiler
//! or launcher that fixes it, in the names this machine has (`mpicc.mpich`
//! and `mpirun.openmpi` on Debian, where a bare `mpicc` is Open MPI's).

use super::launcher::{Kind, Launcher};
use super::mpi_library::{Family, MpiLibrary};

/// Why `mpi` cannot join the job `launcher` started; `None` when it can
/// (or may: a launcher not known here).
pub(crate) fn cannot_join(mpi: &MpiLibrary, launcher: &Launcher) -> Option<String> {
    let (name, offers) = (launcher.name(), launcher.offers());
    match mpi.family {
        Family::OpenMpi => {
            let joins = launcher.pmix
                || (launcher.kind == Kind::Srun && launcher.wire.is_some() && mpi.slurm_pmi)
                || (launcher.kind == Kind::Flux && mpi.flux);
            let but = match launcher.kind {
                Kind::Rlaunch => "rlaunch serves none (it serves MPICH's PMI-1 on PMI_PORT)".to_string(),
                _ => format!("{name} offers {offers}"),
            };
            (!joins).then(|| format!("Open MPI joins a job only through a PMIx server, and {but}"))
        }
        Family::Mpich => {
            // Cray MPICH under PALS wires up through Cray PMI, not known here.
            let joins = launcher.wire.is_some() || (launcher.pmix && mpi.pmix) || launcher.kind == Kind::Pals;
            (!joins).then(|| {
                format!(
                    "MPICH joins a job only through a PMI-1/2 socket (PMI_FD or PMI_PORT), and {name} offers {offers}"
                )
            })
        }
    }
}

/// What to type: build with the launcher's MPI, or run with the MPI's
/// launcher, in the names this machine has (`mpicc.mpich` on Debian).
pub(crate) fn what_to_do(family: Family, launcher: &Launcher) -> String {
    what_to_do_with(family, launcher, on_path)
}

fn what_to_do_with(family: Family, launcher: &Launcher, has: impl Fn(&str) -> bool) -> String {
    let named = |specific: &str, owner: &str, generic: &str| match has(specific) {
        true => format!("`{specific}`"),
        false => format!("{owner}'s `{generic}`"),
    };
    let mpich_cc = named("mpicc.mpich", "MPICH", "mpicc");
    let ompi_cc = named("mpicc.openmpi", "Open MPI", "mpicc");
    let mpirun = named("mpirun.openmpi", "Open MPI", "mpirun");
    match (family, launcher.kind) {
        (Family::OpenMpi, Kind::Hydra) => {
            format!("build with {mpich_cc} for `mpiexec.hydra`, or run with {mpirun}")
        }
        (Family::OpenMpi, Kind::Rlaunch) => {
            format!("run with {mpirun}, or build with {mpich_cc}, whose MPI joins rlaunch's job")
        }
        (Family::OpenMpi, Kind::Srun) => "run with `srun --mpi=pmix`".into(),
        (Family::OpenMpi, Kind::Flux) => {
            format!("run with `flux run -o pmi=pmix` (the flux-pmix plugin), or build with {mpich_cc}")
        }
        (Family::OpenMpi, Kind::Pals) => "run with `mpiexec --pmi=pmix`".into(),
        (Family::Mpich, Kind::OpenMpi) => {
            format!("build with {ompi_cc} for {mpirun}, or run with `mpiexec.hydra`")
        }
        (Family::Mpich, Kind::Srun) => "run with `srun --mpi=pmi2`".into(),
        (Family::Mpich, Kind::Flux) => "run with `flux run -o pmi=simple`".into(),
        (Family::OpenMpi, _) => format!(
            "run with {mpirun}, or build with the MPI compiler of {}",
            launcher.name()
        ),
        (Family::Mpich, _) => format!(
            "run with `mpiexec.hydra` of the MPICH it was built with, or build with the MPI compiler of {}",
            launcher.name()
        ),
    }
}

/// True when `program` is an executable file in a `PATH` directory.
fn on_path(program: &str) -> bool {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path).any(|dir| dir.join(program).is_file())
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::bootstrap::launcher::tests::lookup;

    pub(crate) fn library(family: Family) -> MpiLibrary {
        let version = match family {
            Family::OpenMpi => "Open MPI v4.1.4",
            Family::Mpich => "MPICH 4.0.2",
        };
        MpiLibrary {
            family,
            version: version.into(),
            pmix: false,
            slurm_pmi: false,
            flux: false,
        }
    }

    pub(crate) fn launcher(vars: &[(&str, &str)]) -> Launcher {
        Launcher::from_vars(lookup(vars)).unwrap()
    }

    pub(crate) const HYDRA: &[(&str, &str)] = &[
        ("PMI_FD", "6"),
        ("PMI_RANK", "3"),
        ("PMI_SIZE", "4"),
        ("HYDI_CONTROL_FD", "7"),
    ];
    pub(crate) const MPIRUN: &[(&str, &str)] = &[
        ("OMPI_COMM_WORLD_SIZE", "4"),
        ("OMPI_COMM_WORLD_RANK", "3"),
        ("PMIX_RANK", "3"),
        ("PMIX_SERVER_URI41", "1.0;tcp4://127.0.0.1:9"),
    ];
    const SRUN_PMI2: &[(&str, &str)] = &[("SLURM_STEP_NUM_TASKS", "4"), ("SLURM_PROCID", "3"), ("PMI_FD", "9")];
    const SRUN_PMIX: &[(&str, &str)] = &[
        ("SLURM_STEP_NUM_TASKS", "4"),
        ("SLURM_PROCID", "3"),
        ("PMIX_RANK", "3"),
        ("PMIX_SERVER_URI41", "1.0;tcp4://127.0.0.1:9"),
    ];
    const RLAUNCH: &[(&str, &str)] = &[
        ("ONESIDE_RANK", "1"),
        ("ONESIDE_SIZE", "2"),
        ("PMI_PORT", "127.0.0.1:5"),
    ];
    const FLUX: &[(&str, &str)] = &[("FLUX_JOB_SIZE", "4"), ("FLUX_TASK_RANK", "3"), ("PMI_FD", "4")];

    #[test]
    fn each_family_joins_its_own_launchers_only() {
        let (ompi, mpich) = (library(Family::OpenMpi), library(Family::Mpich));
        for vars in [MPIRUN, SRUN_PMIX] {
            assert_eq!(cannot_join(&ompi, &launcher(vars)), None, "{vars:?}");
        }
        for vars in [HYDRA, SRUN_PMI2, RLAUNCH, FLUX] {
            let why = cannot_join(&ompi, &launcher(vars)).unwrap_or_default();
            assert!(
                why.starts_with("Open MPI joins a job only through a PMIx server"),
                "{vars:?}: {why}"
            );
        }
        for vars in [HYDRA, SRUN_PMI2, RLAUNCH, FLUX] {
            assert_eq!(cannot_join(&mpich, &launcher(vars)), None, "{vars:?}");
        }
        for vars in [MPIRUN, SRUN_PMIX] {
            let why = cannot_join(&mpich, &launcher(vars)).unwrap_or_default();
            assert!(
                why.contains("MPICH joins a job only through a PMI-1/2 socket"),
                "{vars:?}: {why}"
            );
        }
        let why = cannot_join(&ompi, &launcher(HYDRA)).unwrap();
        assert!(why.contains("mpiexec.hydra offers a PMI-1/2 socket on PMI_FD"), "{why}");
        let why = cannot_join(&ompi, &launcher(RLAUNCH)).unwrap();
        assert!(why.contains("rlaunch serves none"), "{why}");
    }

    #[test]
    fn components_and_builds_open_other_roads() {
        let ompi4 = MpiLibrary {
            slurm_pmi: true,
            flux: true,
            ..library(Family::OpenMpi)
        };
        assert_eq!(cannot_join(&ompi4, &launcher(SRUN_PMI2)), None);
        assert_eq!(cannot_join(&ompi4, &launcher(FLUX)), None);
        assert!(
            cannot_join(&ompi4, &launcher(HYDRA)).is_some(),
            "s1/s2 speak to Slurm only"
        );
        let mpich_pmix = MpiLibrary {
            pmix: true,
            ..library(Family::Mpich)
        };
        assert_eq!(cannot_join(&mpich_pmix, &launcher(MPIRUN)), None);
        assert_eq!(
            cannot_join(&library(Family::Mpich), &launcher(&[("PALS_RANKID", "1")])),
            None
        );
    }

    #[test]
    fn what_to_do_names_the_wrappers_this_machine_has() {
        let debian = |p: &str| ["mpicc.mpich", "mpicc.openmpi", "mpirun.openmpi"].contains(&p);
        assert_eq!(
            what_to_do_with(Family::OpenMpi, &launcher(HYDRA), debian),
            "build with `mpicc.mpich` for `mpiexec.hydra`, or run with `mpirun.openmpi`"
        );
        assert_eq!(
            what_to_do_with(Family::OpenMpi, &launcher(HYDRA), |_| false),
            "build with MPICH's `mpicc` for `mpiexec.hydra`, or run with Open MPI's `mpirun`"
        );
        assert_eq!(
            what_to_do_with(Family::Mpich, &launcher(MPIRUN), debian),
            "build with `mpicc.openmpi` for `mpirun.openmpi`, or run with `mpiexec.hydra`"
        );
        let rlaunch = what_to_do_with(Family::OpenMpi, &launcher(RLAUNCH), debian);
        assert!(
            rlaunch.starts_with("run with `mpirun.openmpi`, or build with `mpicc.mpich`"),
            "{rlaunch}"
        );
        assert_eq!(
            what_to_do_with(Family::OpenMpi, &launcher(SRUN_PMI2), debian),
            "run with `srun --mpi=pmix`"
        );
        assert_eq!(
            what_to_do_with(Family::Mpich, &launcher(SRUN_PMIX), debian),
            "run with `srun --mpi=pmi2`"
        );
    }
}
